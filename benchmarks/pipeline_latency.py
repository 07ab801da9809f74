"""The lag of a running CDC stream, measured (``pipeline_bench.py --latency RATES``).

A writer inserts at a steady rate into the simulator while two streaming queries run side by
side in one Spark session, from the same start token: ours (the ``mongo_sansio`` data source)
and the PyMongo-based reference source of ``pipeline_bench.py``, each into its own Parquet
folder through Spark's own file sink (as ``mongo-sansio pipeline`` writes).  That sink commits a
micro-batch by writing its entry in ``_spark_metadata``: an event's lag is that entry's
modification time (the batch's commit) minus the event's ``wallTime`` (the server's time of the
write), both read back from the folder after the run.

The simulator and the writer run in processes of their own (``serve`` and ``write`` below), so
the driver's Python process holds only Spark's driver side and the sinks, and its memory can be
sampled alone: every ``--sample-seconds`` the resident set of the driver's Python, the JVM, the
Python processes Spark starts (streaming runners, which hold each source's driver side, and
workers), the simulator and the writer are read from ``/proc``.

Events written in the first ``--warmup-seconds`` are the warm-up (Spark compiling its code
paths, starting its Python workers: the first micro-batches are slow); the steady state is the
rest.  Lags are kept in 1 ms bins, not one by one, so that the measurement itself does not grow
with the run.

The reference source reads the full events in ``latestOffset`` until a getMore comes back
empty, which never happens while the writer writes: it would never end a micro-batch.  In this
mode only, it stops at the first event written after ``latestOffset`` was called (the present),
and after ``--reference-cap`` events (default: ten triggers' worth at the asked rate).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from array import array
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
BIN_SECONDS = 0.001  # lag histogram resolution
BINS = 120_000  # 1 ms bins up to 120 s; longer lags are kept one by one

# -- the children: the simulator and the writer, each in a process of its own ----------------


def serve(oplog_entries: int) -> None:
    """Serve a simulated replica set, print its URI, and stop when stdin closes."""
    from mongo_sansio.adapters.sim import SimulatedReplicaSet

    with SimulatedReplicaSet(members=3, oplog_entries=oplog_entries) as rs:
        print(rs.uri, flush=True)
        sys.stdin.read()


def write(uri: str, rate: int, seconds: float) -> None:
    """Insert ``rate`` documents a second in 10 ms ticks for ``seconds``; print a JSON line when
    starting and one with the count when done."""
    from mongo_sansio.adapters.blocking import MongoClient

    with MongoClient(uri) as client:
        collection = client.bench.latency
        collection.find_one()  # connect before the clock starts (no event: the queries count)
        print(json.dumps({"started": time.time()}), flush=True)
        started = time.monotonic()
        done = 0
        behind = 0.0  # the most the writer ever was behind its schedule, in seconds
        while (elapsed := time.monotonic() - started) < seconds:
            due = int(rate * elapsed) - done
            behind = max(behind, due / rate - 0.01)
            while due > 0:
                chunk = min(due, 1000)
                now = time.time()
                collection.insert_many(
                    [{"n": done + i, "at": now, "payload": "x" * 64} for i in range(chunk)]
                )
                done, due = done + chunk, due - chunk
            next_tick = started + (int(elapsed * 100) + 1) / 100
            time.sleep(max(0.0, next_tick - time.monotonic()))
        elapsed = time.monotonic() - started
        print(json.dumps({"written": done, "seconds": elapsed, "ended": time.time(),
                          "behind": behind}), flush=True)


# -- the measurement -------------------------------------------------------------------------


class Lags:
    """Lags in 1 ms bins (and the longer ones one by one): percentiles without keeping every
    value."""

    def __init__(self) -> None:
        self.bins = array("q", bytes(8 * BINS))
        self.long: list[float] = []
        self.count = 0
        self.worst = 0.0

    def add(self, lag: float) -> None:
        lag = max(lag, 0.0)
        self.count += 1
        self.worst = max(self.worst, lag)
        index = int(lag / BIN_SECONDS)
        if index < BINS:
            self.bins[index] += 1
        else:
            self.long.append(lag)

    def percentile(self, fraction: float) -> float:
        if not self.count:
            return math.nan
        rank = min(self.count - 1, int(fraction * self.count))
        seen = 0
        for index, n in enumerate(self.bins):
            seen += n
            if seen > rank:
                return (index + 0.5) * BIN_SECONDS
        return sorted(self.long)[rank - seen]

    def summary(self) -> dict[str, float]:
        return {"events": self.count, "p50": self.percentile(0.50), "p95": self.percentile(0.95), "p99": self.percentile(0.99),
                "max": self.worst}


class Sink:
    """A query's Parquet file sink (Spark's own, as ``mongo-sansio pipeline`` writes) and what
    it committed.  The file sink commits a batch by writing its entry in ``_spark_metadata``
    (a file named for the batch, ``N`` or every tenth ``N.compact``, written whole and renamed
    into place): that file's modification time is the batch's commit time, and the Parquet files
    it adds first are that batch's rows.  While the query runs, the rows committed are counted
    from the query's progress reports."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self.progress: dict[int, dict[str, Any]] = {}  # batch id -> rows and durations (ms)

    @property
    def out(self) -> Path:
        return Path(self.folder) / "out"

    @property
    def committed(self) -> int:
        return sum(batch["rows"] for batch in list(self.progress.values()))

    def poll(self, query: Any) -> None:
        for report in query.recentProgress:
            if report.batchId not in self.progress:
                self.progress[report.batchId] = {"rows": report.numInputRows,
                                                 **dict(report.durationMs)}

    def batches(self) -> list[tuple[int, float, list[str]]]:
        """(batch id, commit time, the Parquet files it added) of every committed batch."""
        log = self.out / "_spark_metadata"
        entries = sorted((int(path.name.split(".")[0]), path) for path in log.iterdir()
                         if path.name.split(".")[0].isdigit())
        seen: set[str] = set()
        batches = []
        for batch_id, path in entries:
            lines = path.read_text(encoding="utf-8").splitlines()[1:]  # after the version line
            files = [json.loads(line)["path"] for line in lines if line.strip()]
            added = [name for name in files if name not in seen]
            seen.update(added)
            batches.append((batch_id, path.stat().st_mtime, added))
        return batches

    def lags(self, steady_from: float) -> tuple[Lags, Lags, list[dict[str, Any]]]:
        """The warm-up's and the steady state's lags, and each batch's events and worst lag."""
        import pyarrow.parquet as pq  # type: ignore[import-untyped]

        warmup, steady = Lags(), Lags()
        timeline = []
        for batch_id, committed, files in self.batches():
            walls: list[float] = []
            for name in files:
                column = pq.read_table(name.removeprefix("file:"), columns=["wallTime"]).column(0)
                walls.extend(value.timestamp() for value in column.to_pylist() if value is not None)
            for wall in walls:
                (warmup if wall < steady_from else steady).add(committed - wall)
            timeline.append({"batch": batch_id, "events": len(walls), "committed": committed,
                             "worst lag": max((committed - w for w in walls), default=0.0),
                             **{k: v for k, v in self.progress.get(batch_id, {}).items() if k != "rows"}})
        return warmup, steady, timeline


def _proc_table() -> dict[int, tuple[int, str, int, int]]:
    """pid -> (parent pid, command line, resident KiB, CPU ticks) of every process we can read."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8") as file:
                fields = file.read().rsplit(")", 1)[1].split()
            parent, ticks = int(fields[1]), int(fields[11]) + int(fields[12])
            with open(f"/proc/{entry}/cmdline", "rb") as file:
                command = file.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{entry}/status", encoding="utf-8") as file:
                rss = next((int(line.split()[1]) for line in file if line.startswith("VmRSS:")), 0)
        except (OSError, IndexError, ValueError):
            continue
        table[int(entry)] = (parent, command, rss, ticks)
    return table


def machine_ticks() -> int:
    """The CPU ticks every core of the machine spent busy (not idle, not waiting on I/O)."""
    with open("/proc/stat", encoding="utf-8") as file:
        fields = [int(value) for value in file.readline().split()[1:]]
    return sum(fields) - fields[3] - fields[4]


def rss_groups(children: dict[str, int]) -> dict[str, float]:
    """MiB resident: the driver's Python, the JVM, Spark's Python processes (the sum and the
    largest one), and each named child process; and the CPU ticks of all of them ("our ticks",
    processes that ended are missed) and of the whole machine ("machine ticks")."""
    table = _proc_table()
    me = os.getpid()
    below: dict[int, list[int]] = {}
    for pid, (parent, *_rest) in table.items():
        below.setdefault(parent, []).append(pid)
    spark_side, stack = [], list(below.get(me, []))
    skip = set(children.values())
    while stack:
        pid = stack.pop()
        if pid in skip:
            continue
        spark_side.append(pid)
        stack.extend(below.get(pid, []))
    jvm = [pid for pid in spark_side if "java" in table[pid][1].split(" ", 1)[0]]
    python = [pid for pid in spark_side if "python" in table[pid][1].split(" ", 1)[0]]
    groups = {
        "driver python": table.get(me, (0, "", 0))[2] / 1024,
        "JVM": sum(table[pid][2] for pid in jvm) / 1024,
        "spark python": sum(table[pid][2] for pid in python) / 1024,
        "largest spark python": max((table[pid][2] for pid in python), default=0) / 1024,
        "spark python processes": len(python),
    }
    for name, pid in children.items():
        groups[name] = table.get(pid, (0, "", 0))[2] / 1024
    for pid in python:  # each of Spark's Python processes, named by its pid and its module
        groups[f"{pid} {table[pid][1].split()[-1].rsplit('.', 1)[-1]}"] = table[pid][2] / 1024
    ours = [me, *spark_side, *children.values()]
    groups["our ticks"] = sum(table[pid][3] for pid in ours if pid in table)
    groups["machine ticks"] = machine_ticks()
    return groups


class Sampler(threading.Thread):
    """Every ``period`` seconds: the queries' progress into their sinks, :func:`rss_groups` and
    the sinks' committed counts."""

    def __init__(self, period: float, children: dict[str, int], sinks: dict[str, Sink],
                 queries: dict[str, Any]) -> None:
        super().__init__(daemon=True)
        self.period, self.children, self.sinks, self.queries = period, children, sinks, queries
        self.samples: list[dict[str, float]] = []
        self.stopping = threading.Event()

    def run(self) -> None:
        while not self.stopping.is_set():
            sample = {"t": time.time(), **rss_groups(self.children)}
            for name, sink in self.sinks.items():
                sink.poll(self.queries[name])
                sample[f"committed {name}"] = sink.committed
            self.samples.append(sample)
            self.stopping.wait(self.period)


def _child(*arguments: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, str(Path(__file__)), *arguments], text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)


def _cores_busy(samples: list[dict[str, float]], start: float, end: float) -> dict[str, float]:
    """How many of the machine's cores were busy on average while the writer wrote: in all, and
    with this benchmark's processes (the rest is other work on the machine)."""
    inside = [s for s in samples if start <= s["t"] <= end]
    if len(inside) < 2:
        return {}
    first, last = inside[0], inside[-1]
    seconds, hertz = last["t"] - first["t"], os.sysconf("SC_CLK_TCK")
    return {"machine": (last["machine ticks"] - first["machine ticks"]) / hertz / seconds,
            "this benchmark": (last["our ticks"] - first["our ticks"]) / hertz / seconds,
            "cores": float(os.cpu_count() or 0)}


def _median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2] if values else math.nan


def run(spark: Any, rate: int, seconds: float, trigger: float, *, warmup: float = 15.0,
        sources: tuple[str, ...] = ("mongo_sansio", "PyMongo source"), sample_every: float = 2.0,
        reference_cap: int | None = None, drain_seconds: float | None = None) -> dict[str, Any]:
    """One run at ``rate`` events/s for ``seconds``: each source's lags (warm-up and steady),
    throughput and backlog, its batches, and the memory samples."""
    from mongo_sansio.adapters.spark.options import parse_options
    from mongo_sansio.adapters.spark.stream import fix_initial_offset

    # the file sink's log must keep every batch's entry until the run is read back
    spark.conf.set("spark.sql.streaming.fileSink.log.deletion", "false")
    expected = int(rate * seconds)
    simulator = _child("serve", str(int(expected * 1.2) + 100_000))
    assert simulator.stdout is not None and simulator.stdin is not None
    uri = simulator.stdout.readline().strip()
    children = {"simulator": simulator.pid}
    cap = reference_cap or max(1000, int(10 * rate * trigger))
    base = {"uri": uri, "database": "bench", "collection": "latency"}
    token = fix_initial_offset(parse_options({**base, "startAt": "latest"})).token or ""
    kinds = {
        "mongo_sansio": ("mongo_sansio", {**base, "startAt": token}),
        "PyMongo source": ("pymongo_events", {**base, "start": token, "readUntilNow": "true",
                                              "maxEvents": str(cap)}),
    }
    sinks: dict[str, Sink] = {}
    queries: dict[str, Any] = {}
    try:
        for name in sources:
            source, options = kinds[name]
            sink = sinks[name] = Sink(tempfile.mkdtemp(prefix="pipeline-latency-"))
            reader = spark.readStream.format(source)
            for key, value in options.items():
                reader = reader.option(key, value)
            queries[name] = (
                reader.load().writeStream.format("parquet").option("path", str(sink.out))
                .option("checkpointLocation", f"{sink.folder}/checkpoint")
                .trigger(processingTime=f"{int(trigger * 1000)} milliseconds").start()
            )
        time.sleep(max(3.0, 3 * trigger))  # the queries started and polling, no data yet
        sampler = Sampler(sample_every, children, sinks, queries)
        sampler.start()
        load_before = os.getloadavg()
        writer = _child("write", uri, str(rate), str(seconds))
        children["writer"] = writer.pid
        assert writer.stdout is not None
        started = json.loads(writer.stdout.readline())["started"]
        done = json.loads(writer.stdout.readline())
        writer.wait()
        load_during = os.getloadavg()
        written, ended = done["written"], done["ended"]
        for name, sink in sinks.items():
            sink.poll(queries[name])
        at_end = {name: sink.committed for name, sink in sinks.items()}
        deadline = time.time() + (drain_seconds if drain_seconds is not None else max(60.0, seconds))
        while time.time() < deadline and any(s.committed < written for s in sinks.values()):
            if not all(q.isActive for q in queries.values()):
                break
            time.sleep(0.25)
            for name, sink in sinks.items():
                sink.poll(queries[name])
        sampler.stopping.set()
        sampler.join()
    finally:
        for query in queries.values():
            query.stop()
        simulator.stdin.close()
        simulator.wait(timeout=60)
    figures: dict[str, Any] = {
        "rate": rate, "seconds": seconds, "trigger": trigger, "warmup seconds": warmup,
        "written": written, "rate reached": written / done["seconds"],
        "writer behind at most": done["behind"], "load before": load_before,
        "load at writer end": load_during, "reference cap": cap, "memory": sampler.samples,
        "cores busy": _cores_busy(sampler.samples, started, ended),
        "sources": {},
    }
    steady_from = started + warmup
    for name, sink in sinks.items():
        warm, steady, timeline = sink.lags(steady_from)
        shutil.rmtree(sink.folder, ignore_errors=True)  # the output and checkpoint, read back
        committed = warm.count + steady.count
        commits = [b["committed"] for b in timeline if b["events"]]
        # throughput: the events of the batches committed after the warm-up, over the time
        # from the commit before them (or the warm-up's end) to the last one
        after = [b for b in timeline if b["committed"] >= steady_from and b["events"]]
        before = [b["committed"] for b in timeline if b["committed"] < steady_from] or [steady_from]
        span = after[-1]["committed"] - before[-1] if after else math.nan
        figures["sources"][name] = {
            "committed": committed, "drained": committed >= written,
            "backlog at writer end": written - at_end[name],
            "drain seconds": commits[-1] - ended if commits and committed >= written else None,
            "warm-up": warm.summary(), "steady": steady.summary(),
            "steady events/s": sum(b["events"] for b in after) / span if span else math.nan,
            "batches": len(commits),
            "median seconds between commits": _median(
                [b - a for a, b in zip(commits, commits[1:], strict=False)]),
            # Spark's own account of a steady batch (ms): the whole trigger, the source's
            # latestOffset, and addBatch (the read and the Parquet write)
            "steady batch ms": {key: _median([b[key] for b in after if key in b])
                                for key in ("triggerExecution", "latestOffset", "addBatch")},
            "timeline": [{**b, "committed": b["committed"] - started} for b in timeline],
        }
    return figures


def memory_summary(samples: list[dict[str, float]], committed_key: str) -> dict[str, Any]:
    """Each group's resident MiB at the first sample after a tenth of the events, the middle,
    the last, the highest, and its slope in MiB per million events between the first and the
    last (least squares over the samples in between)."""
    useful = [s for s in samples if s.get(committed_key, 0) > 0]
    if len(useful) < 3:
        return {}
    total = useful[-1][committed_key]
    body = [s for s in useful if s[committed_key] >= total / 10] or useful
    out: dict[str, Any] = {}
    # and each of Spark's Python processes that lived through the whole body of the run
    lasting = [key for key in body[0] if key.split(" ", 1)[0].isdigit() and key in body[-1]]
    for group in ("driver python", "JVM", "spark python", "largest spark python", "simulator", *lasting):
        xs = [s[committed_key] / 1e6 for s in body if group in s]
        ys = [s[group] for s in body if group in s]
        mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
        spread = sum((x - mean_x) ** 2 for x in xs)
        slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / spread if spread else 0.0
        out[group] = {"first": ys[0], "middle": ys[len(ys) // 2], "last": ys[-1], "max": max(ys),
                      "MiB per million events": slope}
    return out


def print_figures(figures: dict[str, Any]) -> None:
    trigger = figures["trigger"]
    print(f"Lag at {figures['rate']} events/s for {figures['seconds']:g} s, trigger {trigger:g} s "
          f"(wallTime to the Parquet sink's commit), {' and '.join(figures['sources'])}: written "
          f"{figures['written']} ({figures['rate reached']:.0f}/s reached, writer at most "
          f"{figures['writer behind at most']:.2f} s behind), load {figures['load before'][0]:.1f} "
          f"before, {figures['load at writer end'][0]:.1f} at the writer's end")
    busy = figures["cores busy"]
    if busy:
        print(f"  cores busy while writing: {busy['machine']:.2f} of {busy['cores']:.0f}, "
              f"{busy['this benchmark']:.2f} of them this benchmark's processes")
    for name, row in figures["sources"].items():
        warm, steady = row["warm-up"], row["steady"]
        drained = (f"drained {row['drain seconds']:.1f} s after the writer" if row["drained"]
                   else f"NOT drained: {row['committed']} of {figures['written']} (lags are lower bounds)")
        print(f"  {name}: {row['batches']} batches, median {row['median seconds between commits']:.2f} s "
              f"between commits, backlog {row['backlog at writer end']} at the writer's end, {drained}")
        print(f"    warm-up ({figures['warmup seconds']:g} s, {warm['events']} events): p50 {warm['p50']:.2f} s  "
              f"p99 {warm['p99']:.2f} s  max {warm['max']:.2f} s")
        print(f"    steady ({steady['events']} events, {row['steady events/s']:.0f}/s): p50 {steady['p50']:.2f} s  "
              f"p99 {steady['p99']:.2f} s ({steady['p99'] / trigger:.1f} triggers)  max {steady['max']:.2f} s")
        firsts = ", ".join(f"{b['events']} events {b.get('triggerExecution', math.nan) / 1000:.1f} s"
                           for b in row["timeline"][:4])
        ms = row["steady batch ms"]
        print(f"    steady batch, median ms: trigger {ms['triggerExecution']:.0f}, latestOffset "
              f"{ms['latestOffset']:.0f}, addBatch {ms['addBatch']:.0f}; first batches: {firsts}")
    first = next(iter(figures["sources"]), None)
    memory = memory_summary(figures["memory"], f"committed {first}") if first else {}
    if memory:
        print(f"  memory, MiB resident (from a tenth of {first}'s events, middle, last, max; "
              "slope per million events):")
        for group, m in memory.items():
            print(f"    {group:<34} {m['first']:7.0f} {m['middle']:7.0f} {m['last']:7.0f} "
                  f"{m['max']:7.0f}  {m['MiB per million events']:+8.1f}")


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(int(sys.argv[2]))
    elif sys.argv[1] == "write":
        write(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]))
    else:
        raise SystemExit("pipeline_latency.py serve OPLOG | write URI RATE SECONDS (pipeline_bench.py runs it)")
