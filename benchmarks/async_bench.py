"""Our asyncio client against PyMongo's ``AsyncMongoClient`` (with its C extension), the server
in another process: client_bench.py's workloads (find_one by ``_id``, small and large
insert_one, insert_many, a find emptied as dicts and as raw documents reading two fields,
change events tailed as dicts and as raw documents), each as client-process CPU time and wall
time per operation, ours / PyMongo's, against the same targets.

    python benchmarks/async_bench.py                    # both servers, 7 trials
    python benchmarks/async_bench.py --quick            # smaller counts, 3 trials (< 60 s)
    python benchmarks/async_bench.py --server canned    # only the canned-reply server

The servers are client_bench.py's (a subprocess each): ``mongo-sansio sim`` (a one-member
simulated replica set; its own speed shows in the wall figures only) and
``benchmarks/canned_server.py`` (replies encoded ahead of time, so wall time is close to the
clients' own cost).  Both clients run on one asyncio event loop in this process and take
turns within every trial; each workload runs once untimed per client first (warm caches).
CPU is ``time.process_time()`` of this process around the workload only (setup -- dropping the
collection, copying the documents to insert -- is outside).  Ratios are medians over trials
of ours / PyMongo's; lower is better for us.  ``--loop uvloop`` runs both on uvloop.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

from canned_server import data_dir, load_data_set  # noqa: E402
from client_bench import WORKLOADS as TARGETS  # noqa: E402  (name -> (_, _, target))
from client_bench import prepare, server  # noqa: E402


class AsyncSide:
    """One async client under test: its name, client, database, how it spells raw documents,
    and the small and large documents."""

    def __init__(self, name: str, client: Any, raw_codec_options: Any, small: Any, large: Any) -> None:
        self.name, self.client, self.small, self.large = name, client, small, large
        self.raw_codec_options = raw_codec_options
        self.db = client.bench
        self.kind = "canned"  # the server's kind, set by measure_sides

    def raw(self, collection: Any) -> Any:
        return collection.with_options(codec_options=self.raw_codec_options)


def ours(uri: str) -> AsyncSide:
    from mongo_sansio.bson import CodecOptions, RawDocument

    # (imported by name: mongo_sansio.adapters is the repository's adapters/ once installed)
    client_module = importlib.import_module("mongo_sansio.adapters.asyncio")
    # (our value classes, as without PyMongo: see client_bench.ours)
    client = client_module.AsyncMongoClient(uri, pymongo_types=False)
    return AsyncSide("ours", client, CodecOptions(document_class=RawDocument),
                     load_data_set("small_doc"), load_data_set("large_doc"))


def pymongo_side(uri: str) -> AsyncSide:
    import pymongo
    from bson import json_util
    from bson.codec_options import CodecOptions
    from bson.raw_bson import RawBSONDocument

    def load(name: str) -> Any:
        return json_util.loads((data_dir() / f"{name}.json").read_text(encoding="utf-8"))

    return AsyncSide("pymongo", pymongo.AsyncMongoClient(uri),
                     CodecOptions(document_class=RawBSONDocument), load("small_doc"), load("large_doc"))


Run = Callable[[], Awaitable[Any]]
#: a workload: (side, counts) -> run; the setup runs when it is awaited
Workload = Callable[[AsyncSide, dict[str, int]], Awaitable[Run]]


async def find_one_by_id(side: AsyncSide, counts: dict[str, int]) -> Run:
    collection = side.db.one
    n = counts["single"]

    async def run() -> None:
        for i in range(n):
            await collection.find_one({"_id": i})

    return run


def _insert_one(template_name: str, count_name: str) -> Workload:
    async def workload(side: AsyncSide, counts: dict[str, int]) -> Run:
        collection = side.db[f"insert_{side.name}"]
        await collection.drop()
        template = getattr(side, template_name)
        documents = [dict(template) for _ in range(counts[count_name])]

        async def run() -> None:
            for document in documents:
                await collection.insert_one(document)

        return run

    return workload


async def insert_many(side: AsyncSide, counts: dict[str, int]) -> Run:
    collection = side.db[f"insert_{side.name}"]
    await collection.drop()
    documents = [dict(side.small) for _ in range(counts["many"])]

    async def run() -> None:
        await collection.insert_many(documents)

    return run


def _find_many(raw: bool) -> Workload:
    async def workload(side: AsyncSide, counts: dict[str, int]) -> Run:
        collection = side.raw(side.db.many) if raw else side.db.many
        first, second = list(side.small)[:2]

        async def run() -> None:
            if raw:
                async for document in collection.find({}, batch_size=counts["batch"]):
                    document[first], document[second]
            else:
                async for _document in collection.find({}, batch_size=counts["batch"]):
                    pass

        return run

    return workload


def _tail(raw: bool) -> Workload:
    """Change events of a stream opened in the setup (the canned server has them ready; on
    the simulator they are inserted first).  The stream stays open after the run: its
    cursor is closed with the client."""

    async def workload(side: AsyncSide, counts: dict[str, int]) -> Run:
        collection = side.db.events
        watched = side.raw(collection) if raw else collection
        stream = await watched.watch(batch_size=counts["batch"], max_await_time_ms=1000)
        streams.append(stream)
        n = counts["many"]
        if side.kind == "sim":
            await collection.insert_many([dict(side.small) for _ in range(n)])

        async def run() -> None:
            for _ in range(n):
                event = await stream.next()
                if raw:
                    event["operationType"], event["documentKey"]

        return run

    return workload


streams: list[Any] = []  # the tailing workloads' streams, closed after each timed run


WORKLOADS: dict[str, tuple[Workload, str]] = {
    # name: (workload, the count its time is divided by: "1" is one operation); the targets
    # are client_bench.py's
    "find_one by _id": (find_one_by_id, "single"),
    "insert_one small": (_insert_one("small", "single"), "single"),
    "insert_one large": (_insert_one("large", "large"), "large"),
    "insert_many small": (insert_many, "1"),
    "find many, dicts": (_find_many(False), "1"),
    "find many, raw, 2 fields": (_find_many(True), "1"),
    "tail events, dicts": (_tail(False), "1"),
    "tail events, raw": (_tail(True), "1"),
}


async def measure_sides(
    uri: str, kind: str, counts: dict[str, int], trials: int, only: list[str]
) -> dict[str, Any]:
    """Per workload: lists of (cpu, wall) seconds per trial for each side."""
    sides = [ours(uri), pymongo_side(uri)]
    for side in sides:
        side.kind = kind
    results: dict[str, Any] = {}
    try:
        for name, (workload, _unit) in WORKLOADS.items():
            if only and not any(word in name for word in only):
                continue
            figures: dict[str, list[tuple[float, float]]] = {s.name: [] for s in sides}
            for trial in range(trials + 1):
                order = sides if trial % 2 else sides[::-1]
                for side in order:
                    run = await workload(side, counts)
                    gc.collect()
                    cpu, wall = time.process_time(), time.perf_counter()
                    await run()
                    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
                    while streams:
                        await streams.pop().close()
                    if trial:  # the first round warms up
                        figures[side.name].append((cpu, wall))
            results[name] = figures
    finally:
        for side in sides:
            await side.client.close()
    return results


def report(kind: str, results: dict[str, Any], counts: dict[str, int]) -> None:
    print(f"\n== server: {kind} ==  (per operation; CPU = this process)")
    print(f"{'workload':<26} {'ours CPU':>10} {'PyMongo CPU':>12} {'CPU ratio':>9} "
          f"{'wall ratio':>10} {'target':>7}")
    for name, figures in results.items():
        _workload, unit = WORKLOADS[name]
        per = 1 if unit == "1" else counts[unit]
        ours_cpu = statistics.median(c for c, _ in figures["ours"]) / per
        theirs_cpu = statistics.median(c for c, _ in figures["pymongo"]) / per
        pairs = list(zip(figures["ours"], figures["pymongo"], strict=True))
        cpu_ratio = statistics.median(a[0] / max(b[0], 1e-9) for a, b in pairs)
        wall_ratio = statistics.median(a[1] / max(b[1], 1e-9) for a, b in pairs)
        target = TARGETS[name][2]
        verdict = "ok" if cpu_ratio <= target else "MISS"
        print(f"{name:<26} {ours_cpu * 1e6:>8.0f}us {theirs_cpu * 1e6:>10.0f}us "
              f"{cpu_ratio:>9.2f} {wall_ratio:>10.2f} {target:>5.1f} {verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small counts, 3 trials (< 60 s)")
    parser.add_argument("--server", choices=("sim", "canned", "both"), default="both")
    parser.add_argument("--trials", type=int, default=None)
    parser.add_argument("--single", type=int, default=None, help="find_one / insert_one calls")
    parser.add_argument("--many", type=int, default=None, help="documents of the multi-doc cases")
    parser.add_argument("--large", type=int, default=None, help="large insert_one calls")
    parser.add_argument("--only", action="append", default=[], help="workloads whose name has this")
    parser.add_argument("--loop", choices=("asyncio", "uvloop"), default="asyncio")
    args = parser.parse_args()
    trials = args.trials or (3 if args.quick else 7)
    counts = {
        "single": args.single or (100 if args.quick else 300),
        "large": args.large or (3 if args.quick else 10),
        "many": args.many or 2000,
        "batch": 1000,
    }
    if counts["many"] < counts["batch"]:
        counts["batch"] = max(1, counts["many"] // 2)
    import bson
    import pymongo

    loop_factory: Any = None
    if args.loop == "uvloop":
        import uvloop

        loop_factory = uvloop.new_event_loop
    print(f"PyMongo {pymongo.version}, C extension: {pymongo.has_c() and bson.has_c()}; "
          f"{args.loop}; {trials} trials; counts {counts}")
    kinds = ("canned", "sim") if args.server == "both" else (args.server,)
    for kind in kinds:
        with server(kind, counts["batch"]) as uri:
            prepare(uri, kind, {**counts, "many": counts["many"]})
            with asyncio.Runner(loop_factory=loop_factory) as runner:
                results = runner.run(measure_sides(uri, kind, counts, trials, args.only))
        report(kind, results, counts)


if __name__ == "__main__":
    main()
