"""Instructions per operation, ours and PyMongo's, counted by valgrind (callgrind): a figure
that does not move with the machine's load, for comparing two versions of a change.

    python benchmarks/count_instructions.py                       # find_one and insert_one
    python benchmarks/count_instructions.py --only find_one --ops 2000 --side ours

Each figure is (instructions of a run doing ``--ops`` operations of a workload of
``client_bench.py`` against the canned server, minus those of the same run doing none) divided
by ``--ops``: start-up, the warm-up and the client's set-up cancel out.  User-space
instructions of the client process only (the server is another process, the kernel is not
counted), every thread included.  A count is not a time -- cache misses and system calls are
not in it -- but on these workloads the ratio of the counts follows the benchmark's CPU ratio
(the eighth round: find_one 642k / 543k = 1.18 against 1.18-1.25 measured), and two runs of
the same code agree to 0.1% (the hash seed is fixed; with random seeds they vary by 1%).  Needs ``valgrind``; a run of 2000 operations takes about 30 s.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WORKLOADS = {"find_one": "find_one by _id", "insert_one": "insert_one small"}


def _child(workload: str, operations: int, side_name: str) -> None:
    sys.path.insert(0, str(REPO / "benchmarks"))
    import client_bench as bench

    counts = {"single": 300, "large": 3, "many": 2000, "batch": 1000}
    with bench.server("canned", 1000) as uri:
        side = bench.ours(uri) if side_name == "ours" else bench.pymongo_side(uri)
        run_workload = bench.WORKLOADS[workload][0]
        run, teardown = run_workload(side, counts, "canned")  # the warm-up
        run()
        teardown()
        if operations:
            run, teardown = run_workload(side, {**counts, "single": operations}, "canned")
            run()
            teardown()
        side.client.close()


def _instructions(workload: str, operations: int, side: str) -> int:
    command = [
        "valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
        sys.executable, __file__, "--child", workload, str(operations), side,
    ]  # fmt: skip
    # one hash seed for every run: string hashes move dict probes, which moves the counts
    environment = {**os.environ, "PYTHONHASHSEED": "0"}
    done = subprocess.run(command, capture_output=True, text=True, check=True, env=environment)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise RuntimeError(f"no instruction count in valgrind's output:\n{done.stderr[-2000:]}")
    return int(found.group(1))


def per_operation(workload: str, operations: int, side: str) -> int:
    with ThreadPoolExecutor(2) as pool:  # the two runs at once: counts do not depend on load
        base = pool.submit(_instructions, workload, 0, side)
        full = pool.submit(_instructions, workload, operations, side)
        return (full.result() - base.result()) // operations


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=sorted(WORKLOADS), action="append")
    parser.add_argument("--side", choices=("ours", "pymongo", "both"), default="both")
    parser.add_argument("--ops", type=int, default=2000)
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child[0], int(args.child[1]), args.child[2])
        return
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not installed: it counts the instructions")
    sides = ("ours", "pymongo") if args.side == "both" else (args.side,)
    print(f"instructions per operation ({args.ops} operations, canned server)")
    for name in args.only or sorted(WORKLOADS):
        figures = {side: per_operation(WORKLOADS[name], args.ops, side) for side in sides}
        line = "  ".join(f"{side} {count:>9,}" for side, count in figures.items())
        ratio = f"  ratio {figures['ours'] / figures['pymongo']:.3f}" if len(figures) == 2 else ""
        print(f"{name:<12} {line}{ratio}")


if __name__ == "__main__":
    main()
