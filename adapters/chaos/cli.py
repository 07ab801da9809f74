"""``mongo-sansio chaos``: run simulated worlds from seeds and print what broke.

::

    mongo-sansio chaos --seed 7 [--steps 12] [--workload mixed] [--faults partition,crash]
                       [--world sharded]
    mongo-sansio chaos --seeds 0..499            # a sweep: one line per seed

Each world prints one line: ``seed N: ok, trace <hash>``, or ``seed N: BROKEN <invariant>;
shortest fault schedule (k of n): <faults>`` (the schedule shrunk to the fewest faults that
still break it).  The exit status is 1 when any seed broke, 2 for bad arguments.  A sweep ends
with a summary on standard error (seeds per second).
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from .faults import KINDS
from .workloads import WORKLOADS
from .world import DEPLOYMENTS, Outcome, run_world, shrink

__all__ = ["add_chaos_parser", "report_line"]


def add_chaos_parser(commands: Any) -> None:
    """Register ``chaos`` on the CLI's subcommand parser."""
    chaos = commands.add_parser(
        "chaos", help="deterministic simulation: client and replica set in virtual time, with faults"
    )
    which = chaos.add_mutually_exclusive_group(required=True)
    which.add_argument("--seed", type=int, help="run the world of this seed")
    which.add_argument("--seeds", type=_seed_range, metavar="A..B", help="sweep seeds A to B (inclusive)")
    chaos.add_argument("--steps", type=_positive, default=12, help="operations per workload task (12)")
    chaos.add_argument("--workload", default="mixed", choices=sorted(WORKLOADS), help="what the client does (mixed)")
    chaos.add_argument(
        "--faults", type=_kinds, default=KINDS, metavar="LIST",
        help=f"comma-separated fault kinds to draw from: {','.join(KINDS)}; all (the default) or none",
    )
    chaos.add_argument(
        "--world", default="replica-set", choices=DEPLOYMENTS,
        help="the deployment: a three-member replica set (the default), or two mongos over two shards",
    )
    chaos.add_argument("--no-shrink", action="store_true", help="report a broken schedule as drawn")
    chaos.set_defaults(run=_chaos)


def report_line(outcome: Outcome, drawn: int) -> str:
    if outcome.ok:
        return outcome.line()
    faults = "; ".join(fault.describe() for fault in outcome.schedule) or "none"
    return (
        f"seed {outcome.seed}: BROKEN {outcome.violation}; shortest fault schedule "
        f"({len(outcome.schedule)} of {drawn}): {faults}"
    )


def _chaos(args: argparse.Namespace) -> int:
    seeds = [args.seed] if args.seed is not None else args.seeds
    broken = 0
    began = time.perf_counter()
    for seed in seeds:
        outcome = run_world(seed, steps=args.steps, workload=args.workload, kinds=args.faults, deployment=args.world)
        drawn = len(outcome.schedule)
        if not outcome.ok:
            broken += 1
            if not args.no_shrink:
                outcome = shrink(outcome, steps=args.steps, workload=args.workload, deployment=args.world)
        print(report_line(outcome, drawn), flush=True)
    if len(seeds) > 1:
        took = time.perf_counter() - began
        print(
            f"{len(seeds)} seeds: {len(seeds) - broken} ok, {broken} broken, "
            f"{took:.1f}s ({len(seeds) / took:.1f} seeds/s)",
            file=sys.stderr,
        )
    return 1 if broken else 0


def _seed_range(text: str) -> list[int]:
    first, sep, last = text.partition("..")
    try:
        low, high = int(first), int(last)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a range A..B of seeds") from None
    if not sep or high < low:
        raise argparse.ArgumentTypeError(f"{text!r} is not a range A..B with A <= B")
    return list(range(low, high + 1))


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("--steps must be at least 1")
    return value


#: other names the fault kinds go by
_ALIASES = {
    "partitions": "partition", "cuts": "cut", "delay": "stall", "delays": "stall",
    "stalls": "stall", "stepdowns": "stepdown", "election": "stepdown", "elections": "stepdown",
    "crashes": "crash", "restart": "crash", "restarts": "crash", "failpoints": "failpoint",
    "failcommand": "failpoint", "isolation": "isolate", "isolations": "isolate",
    "member-partition": "isolate", "member-partitions": "isolate", "rollbacks": "rollback",
    "clocks": "clock", "clock-jump": "clock", "clock-jumps": "clock", "truncation": "truncate",
    "oplog-truncation": "truncate", "history-lost": "truncate",
}


def _kinds(text: str) -> tuple[str, ...]:
    if text.strip().lower() == "none":
        return ()
    if text.strip().lower() == "all":
        return KINDS
    named = [part.strip() for part in text.split(",") if part.strip()]
    kinds = tuple(dict.fromkeys(_ALIASES.get(kind.lower(), kind.lower()) for kind in named))
    unknown = [kind for kind in kinds if kind not in KINDS]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown fault kinds {unknown}: choose from {','.join(KINDS)}")
    return tuple(kind for kind in KINDS if kind in kinds)  # (a set of kinds: one world)
