"""Our asyncio client against PyMongo's ``AsyncMongoClient`` (with its C extension), the server
in another process: find_one by ``_id``, insert_one, insert_many and a find emptied as dicts,
each as client-process CPU time and wall time per operation, ours / PyMongo's.

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
from client_bench import prepare, server  # noqa: E402


class AsyncSide:
    """One async client under test: its name, client, database and the small document."""

    def __init__(self, name: str, client: Any, small: Any) -> None:
        self.name, self.client, self.small = name, client, small
        self.db = client.bench


def ours(uri: str) -> AsyncSide:
    # (imported by name: mongo_sansio.adapters is the repository's adapters/ once installed)
    client_module = importlib.import_module("mongo_sansio.adapters.asyncio")
    return AsyncSide("ours", client_module.AsyncMongoClient(uri), load_data_set("small_doc"))


def pymongo_side(uri: str) -> AsyncSide:
    import pymongo
    from bson import json_util

    small = json_util.loads((data_dir() / "small_doc.json").read_text(encoding="utf-8"))
    return AsyncSide("pymongo", pymongo.AsyncMongoClient(uri), small)


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


async def insert_one(side: AsyncSide, counts: dict[str, int]) -> Run:
    collection = side.db[f"insert_{side.name}"]
    await collection.drop()
    documents = [dict(side.small) for _ in range(counts["single"])]

    async def run() -> None:
        for document in documents:
            await collection.insert_one(document)

    return run


async def insert_many(side: AsyncSide, counts: dict[str, int]) -> Run:
    collection = side.db[f"insert_{side.name}"]
    await collection.drop()
    documents = [dict(side.small) for _ in range(counts["many"])]

    async def run() -> None:
        await collection.insert_many(documents)

    return run


async def find_many(side: AsyncSide, counts: dict[str, int]) -> Run:
    collection = side.db.many

    async def run() -> None:
        async for _document in collection.find({}, batch_size=counts["batch"]):
            pass

    return run


WORKLOADS: dict[str, tuple[Workload, str]] = {
    # name: (workload, the count its time is divided by: "1" is one operation)
    "find_one by _id": (find_one_by_id, "single"),
    "insert_one small": (insert_one, "single"),
    "insert_many small": (insert_many, "1"),
    "find many, dicts": (find_many, "1"),
}


async def measure_sides(uri: str, counts: dict[str, int], trials: int) -> dict[str, Any]:
    """Per workload: lists of (cpu, wall) seconds per trial for each side."""
    sides = [ours(uri), pymongo_side(uri)]
    results: dict[str, Any] = {}
    try:
        for name, (workload, _unit) in WORKLOADS.items():
            figures: dict[str, list[tuple[float, float]]] = {s.name: [] for s in sides}
            for trial in range(trials + 1):
                order = sides if trial % 2 else sides[::-1]
                for side in order:
                    run = await workload(side, counts)
                    gc.collect()
                    cpu, wall = time.process_time(), time.perf_counter()
                    await run()
                    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
                    if trial:  # the first round warms up
                        figures[side.name].append((cpu, wall))
            results[name] = figures
    finally:
        for side in sides:
            await side.client.close()
    return results


def report(kind: str, results: dict[str, Any], counts: dict[str, int]) -> None:
    print(f"\n== server: {kind} ==  (per operation; CPU = this process)")
    print(f"{'workload':<20} {'ours CPU':>10} {'PyMongo CPU':>12} {'CPU ratio':>9} {'wall ratio':>10}")
    for name, figures in results.items():
        _workload, unit = WORKLOADS[name]
        per = 1 if unit == "1" else counts[unit]
        ours_cpu = statistics.median(c for c, _ in figures["ours"]) / per
        theirs_cpu = statistics.median(c for c, _ in figures["pymongo"]) / per
        pairs = list(zip(figures["ours"], figures["pymongo"], strict=True))
        cpu_ratio = statistics.median(a[0] / max(b[0], 1e-9) for a, b in pairs)
        wall_ratio = statistics.median(a[1] / max(b[1], 1e-9) for a, b in pairs)
        print(f"{name:<20} {ours_cpu * 1e6:>8.0f}us {theirs_cpu * 1e6:>10.0f}us "
              f"{cpu_ratio:>9.2f} {wall_ratio:>10.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small counts, 3 trials (< 60 s)")
    parser.add_argument("--server", choices=("sim", "canned", "both"), default="both")
    parser.add_argument("--trials", type=int, default=None)
    parser.add_argument("--single", type=int, default=None, help="find_one / insert_one calls")
    parser.add_argument("--many", type=int, default=None, help="documents of the multi-doc cases")
    parser.add_argument("--loop", choices=("asyncio", "uvloop"), default="asyncio")
    args = parser.parse_args()
    trials = args.trials or (3 if args.quick else 7)
    counts = {
        "single": args.single or (100 if args.quick else 300),
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
                results = runner.run(measure_sides(uri, counts, trials))
        report(kind, results, counts)


if __name__ == "__main__":
    main()
