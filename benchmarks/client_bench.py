"""The blocking client end to end against PyMongo (with its C extension), the server in another
process: the driver benchmarking spec's single- and multi-document workloads, plus change-event
tailing, each as client-process CPU time and wall time, ours / PyMongo's.

    python benchmarks/client_bench.py                    # both servers, 7 trials
    python benchmarks/client_bench.py --quick            # smaller counts, 3 trials (< 60 s)
    python benchmarks/client_bench.py --server canned    # only the canned-reply server

Two servers, each a subprocess: ``mongo-sansio sim`` (a one-member simulated replica set; its
own speed shows in the wall figures only) and ``benchmarks/canned_server.py`` (replies encoded
ahead of time, so wall time is close to the client's own cost).  Both present a replica-set
primary with sessions, so both clients attach ``lsid`` and ``$clusterTime`` to every command
and retry writes, as against a real deployment.

CPU is ``time.process_time()`` of this process (every thread of both clients' monitors
included), measured around the workload only; setup (dropping, preparing documents, opening a
change stream and filling it) is outside.  The two clients take turns within every trial and
each workload runs once untimed per client first (so shape caches are warm, as in a long-lived
application).  Ratios are medians over trials; lower is better for us.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

from canned_server import load_data_set  # noqa: E402


@contextmanager
def server(kind: str, batch: int) -> Iterator[str]:
    """Start a server subprocess of ``kind`` ("sim" or "canned"; the canned one answers with
    batches of ``batch`` documents); yield its URI."""
    if kind == "sim":
        command = [sys.executable, "-m", "mongo_sansio.adapters.cli", "sim", "--members", "1",
                   "--port", "0"]
    else:
        command = [sys.executable, str(REPO / "benchmarks" / "canned_server.py"),
                   "--batch", str(batch)]
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        uri = process.stdout.readline().strip()
        if not uri.startswith("mongodb://"):
            raise RuntimeError(f"the {kind} server did not start")
        yield uri
    finally:
        process.terminate()
        process.wait()


class Side:
    """One client under test: its name, client, database, and how it spells raw documents."""

    def __init__(self, name: str, client: Any, raw_codec_options: Any, small: Any, large: Any,
                 tweet: Any) -> None:
        self.name, self.client = name, client
        self.db = client.bench
        self.raw_codec_options = raw_codec_options
        self.small, self.large, self.tweet = small, large, tweet

    def raw(self, collection: Any) -> Any:
        return collection.with_options(codec_options=self.raw_codec_options)


def ours(uri: str) -> Side:
    from mongo_sansio.adapters.blocking import MongoClient
    from mongo_sansio.bson import CodecOptions, RawDocument

    # our own value classes, as a program without PyMongo gets them: this process imports
    # PyMongo's bson for the other side, which would otherwise switch ours to PyMongo's
    return Side("ours", MongoClient(uri, pymongo_types=False), CodecOptions(document_class=RawDocument),
                load_data_set("small_doc"), load_data_set("large_doc"), load_data_set("tweet"))


def pymongo_side(uri: str) -> Side:
    import pymongo
    from bson import json_util
    from bson.codec_options import CodecOptions
    from bson.raw_bson import RawBSONDocument
    from canned_server import data_dir

    def load(name: str) -> Any:
        return json_util.loads((data_dir() / f"{name}.json").read_text(encoding="utf-8"))

    return Side("pymongo", pymongo.MongoClient(uri), CodecOptions(document_class=RawBSONDocument),
                load("small_doc"), load("large_doc"), load("tweet"))


#: a workload: (side, counts, server kind) -> (run, teardown); the setup runs when it is built
Workload = Callable[[Side, dict[str, int], str], tuple[Callable[[], Any], Callable[[], Any]]]


def _nothing() -> None:
    pass


def find_one_by_id(side: Side, counts: dict[str, int], kind: str) -> tuple[Any, Any]:
    collection = side.db.one
    n = counts["single"]

    def run() -> None:
        for i in range(n):
            collection.find_one({"_id": i})

    return run, _nothing


def _insert_one(template_name: str, count_name: str) -> Workload:
    def workload(side: Side, counts: dict[str, int], kind: str) -> tuple[Any, Any]:
        collection = side.db[f"insert_{side.name}"]
        collection.drop()
        template = getattr(side, template_name)
        documents = [dict(template) for _ in range(counts[count_name])]

        def run() -> None:
            for document in documents:
                collection.insert_one(document)

        return run, _nothing

    return workload


def insert_many(side: Side, counts: dict[str, int], kind: str) -> tuple[Any, Any]:
    collection = side.db[f"insert_{side.name}"]
    collection.drop()
    documents = [dict(side.small) for _ in range(counts["many"])]
    return (lambda: collection.insert_many(documents)), _nothing


def _find_many(raw: bool) -> Workload:
    def workload(side: Side, counts: dict[str, int], kind: str) -> tuple[Any, Any]:
        collection = side.raw(side.db.many) if raw else side.db.many
        first, second = list(side.small)[:2]

        def run() -> None:
            if raw:
                for document in collection.find({}, batch_size=counts["batch"]):
                    document[first], document[second]
            else:
                for _document in collection.find({}, batch_size=counts["batch"]):
                    pass

        return run, _nothing

    return workload


def _tail(raw: bool) -> Workload:
    def workload(side: Side, counts: dict[str, int], kind: str) -> tuple[Any, Any]:
        collection = side.db.events
        watched = side.raw(collection) if raw else collection
        stream = watched.watch(batch_size=counts["batch"], max_await_time_ms=1000)
        n = counts["many"]
        if kind == "sim":
            collection.insert_many([dict(side.small) for _ in range(n)])

        def run() -> None:
            for _ in range(n):
                event = stream.next()
                if raw:
                    event["operationType"], event["documentKey"]

        return run, stream.close

    return workload


WORKLOADS: dict[str, tuple[Workload, str, float]] = {
    # name: (workload, unit, target ratio of client CPU)
    "find_one by _id": (find_one_by_id, "single", 1.0),
    "insert_one small": (_insert_one("small", "single"), "single", 1.0),
    "insert_one large": (_insert_one("large", "large"), "large", 1.0),
    "insert_many small": (insert_many, "1", 1.5),
    "find many, dicts": (_find_many(False), "1", 2.0),
    "find many, raw, 2 fields": (_find_many(True), "1", 1.0),
    "tail events, dicts": (_tail(False), "1", 2.0),
    "tail events, raw": (_tail(True), "1", 1.0),
}


def prepare(uri: str, kind: str, counts: dict[str, int]) -> None:
    """Fill the simulator's collections the find workloads read (the canned server needs
    nothing)."""
    if kind != "sim":
        return

    side = pymongo_side(uri)
    with side.client:
        side.db.one.drop()
        side.db.one.insert_many([{**side.tweet, "_id": i} for i in range(counts["single"])])
        side.db.many.drop()
        side.db.many.insert_many([{**side.small, "_id": i} for i in range(counts["many"])])
        side.db.events.drop()
        side.db.create_collection("events")


def measure(kind: str, counts: dict[str, int], trials: int, only: list[str]) -> dict[str, Any]:
    """Per workload: lists of (cpu, wall) seconds per trial for each side."""
    results: dict[str, Any] = {}
    with server(kind, counts["batch"]) as uri:
        prepare(uri, kind, counts)
        sides = [ours(uri), pymongo_side(uri)]
        try:
            for name, (workload, _unit, _target) in WORKLOADS.items():
                if only and not any(word in name for word in only):
                    continue
                figures: dict[str, list[tuple[float, float]]] = {s.name: [] for s in sides}
                for trial in range(trials + 1):
                    order = sides if trial % 2 else sides[::-1]
                    for side in order:
                        run, teardown = workload(side, counts, kind)
                        gc.collect()
                        cpu, wall = time.process_time(), time.perf_counter()
                        run()
                        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
                        teardown()
                        if trial:  # the first round warms up
                            figures[side.name].append((cpu, wall))
                results[name] = figures
        finally:
            for side in sides:
                side.client.close()
    return results


def report(kind: str, results: dict[str, Any], counts: dict[str, int]) -> None:
    print(f"\n== server: {kind} ==  (per operation; CPU = this process, both clients' threads)")
    print(f"{'workload':<26} {'ours CPU':>10} {'PyMongo CPU':>12} {'CPU ratio':>9} "
          f"{'wall ratio':>10} {'target':>7}")
    for name, figures in results.items():
        _workload, unit, target = WORKLOADS[name]
        per = 1 if unit == "1" else counts[unit]
        ours_cpu = statistics.median(c for c, _ in figures["ours"]) / per
        theirs_cpu = statistics.median(c for c, _ in figures["pymongo"]) / per
        cpu_ratio = statistics.median(
            a[0] / max(b[0], 1e-9) for a, b in zip(figures["ours"], figures["pymongo"], strict=True)
        )
        wall_ratio = statistics.median(
            a[1] / max(b[1], 1e-9) for a, b in zip(figures["ours"], figures["pymongo"], strict=True)
        )
        verdict = "ok" if cpu_ratio <= target else "MISS"
        print(f"{name:<26} {ours_cpu * 1e6:>8.0f}us {theirs_cpu * 1e6:>10.0f}us "
              f"{cpu_ratio:>9.2f} {wall_ratio:>10.2f} {target:>5.1f} {verdict}")


def resident_kib() -> int:
    """This process's resident set size now, in KiB (Linux: /proc/self/statm)."""
    import os

    with open("/proc/self/statm", encoding="ascii") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def memory(events: int, checkpoints: int = 10) -> None:
    """Tail ``events`` change events from the canned server with each client, printing the
    resident size at evenly spaced checkpoints (a flat column is the goal)."""
    print(f"\n== memory: tailing {events} events (canned server), resident KiB ==")
    with server("canned", 1000) as uri:
        for make in (ours, pymongo_side):
            side = make(uri)
            step = max(1, events // checkpoints)
            sizes = []
            started = time.perf_counter()
            with side.db.events.watch(batch_size=1000) as stream:
                for count in range(1, events + 1):
                    stream.next()
                    if count % step == 0:
                        gc.collect()
                        sizes.append(resident_kib())
            seconds = time.perf_counter() - started
            side.client.close()
            print(f"{side.name:<8} {' '.join(f'{size:>7}' for size in sizes)}  "
                  f"(growth {sizes[-1] - sizes[0]:+d} KiB after the first checkpoint; "
                  f"{events / seconds:,.0f} events/s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small counts, 3 trials (< 60 s)")
    parser.add_argument("--server", choices=("sim", "canned", "both"), default="both")
    parser.add_argument("--trials", type=int, default=None)
    parser.add_argument("--single", type=int, default=None, help="find_one / insert_one calls")
    parser.add_argument("--many", type=int, default=None, help="documents of the multi-doc cases")
    parser.add_argument("--large", type=int, default=None, help="large insert_one calls")
    parser.add_argument("--memory", type=int, default=0, metavar="EVENTS",
                        help="instead: tail EVENTS events and print the resident size")
    parser.add_argument("--only", action="append", default=[], help="workloads whose name has this")
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

    print(f"PyMongo {pymongo.version}, C extension: {pymongo.has_c() and bson.has_c()}; "
          f"{trials} trials; counts {counts}")
    if args.memory:
        memory(args.memory)
        return
    kinds = ("canned", "sim") if args.server == "both" else (args.server,)
    for kind in kinds:
        results = measure(kind, counts, trials, args.only)
        report(kind, results, counts)


if __name__ == "__main__":
    main()
