"""Draw the core's state machines as Mermaid diagrams, from their transition tables.

Usage::

    .venv/bin/python scripts/state_diagrams.py           # rewrite docs/state-diagrams.md
    .venv/bin/python scripts/state_diagrams.py --check   # exit 1 if the file is out of date

The diagrams are read from the tables the machines themselves consult, so a changed table
changes its drawing; ``tests/unit/test_state_diagrams.py`` fails when the committed file is
stale.  Which tables are drawn is the explicit list :data:`MACHINES`: adding a machine is one
entry naming its table (``"module:NAME"``).  A table maps ``(state, input)`` to the next state
or to a collection of possible next states; states are enum members, inputs enum members or
strings.  A table of another shape gets its own reader (see :func:`topology_type_edges`).
"""

from __future__ import annotations

import argparse
import enum
import importlib
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUTPUT = ROOT / "docs" / "state-diagrams.md"

Edge = tuple[enum.Enum, enum.Enum, str]  # (from, to, label)


@dataclass(frozen=True)
class Machine:
    title: str
    table: str  # "package.module:NAME"
    about: str
    initial: tuple[str, ...] = ()  # names of the states a new machine starts in
    final: tuple[str, ...] = ()  # names of the states it never leaves
    reader: Callable[[Any], list[Edge]] | None = None  # for tables of another shape


def _label(value: object) -> str:
    text = str(value.value) if isinstance(value, enum.Enum) else str(value)
    return text.replace(";", ",").replace("#", "")


def table_edges(table: Mapping[tuple[Any, Any], Any]) -> list[Edge]:
    """``(state, input) -> state`` or ``-> collection of states``."""
    edges: list[Edge] = []
    for (state, event), target in table.items():
        targets = [target] if isinstance(target, enum.Enum) else list(target)
        for next_state in targets:
            edges.append((state, next_state, _label(event)))
    return edges


# What each step of SDAM's TopologyType table may do to the topology type, read from the step
# functions in mongo_sansio/sdam/topology.py (the table names steps, not next types).
# tests/unit/test_machine_pairs.py checks every transition the machine makes against them.
_WP, _NP = "REPLICA_SET_WITH_PRIMARY", "REPLICA_SET_NO_PRIMARY"
TOPOLOGY_STEP_OUTCOMES: Mapping[str, tuple[str, ...] | None] = {
    "remove": None,  # None: the type is unchanged
    "update_rs_without_primary": None,
    "check_if_has_primary": (_WP, _NP),
    "set_sharded": ("SHARDED",),
    "set_rs_no_primary": (_NP,),
    "set_rs_with_primary": (_WP,),
    "update_unknown_with_standalone": ("SINGLE", "<unchanged>"),  # one seed, or removed
    "update_rs_with_primary_from_member": ("<unchanged>", _WP, _NP),
    "update_rs_from_primary": (_WP, _NP),
}


def topology_type_outcomes(start: enum.Enum, steps: Iterable[str]) -> set[enum.Enum]:
    """The topology types that running ``steps`` from ``start`` may end in."""
    kind = type(start)
    current = {start}
    for step in steps:
        outcome = TOPOLOGY_STEP_OUTCOMES[step]
        if outcome is None:
            continue
        current = {
            state if name == "<unchanged>" else kind[name] for state in current for name in outcome
        }
    return current


def topology_type_edges(table: Mapping[tuple[Any, Any], tuple[str, ...]]) -> list[Edge]:
    """``(TopologyType, ServerType) -> steps``: an edge per type the steps may lead to,
    labelled with the server type of the description that was applied."""
    return [
        (topology_type, target, _label(server_type))
        for (topology_type, server_type), steps in table.items()
        for target in sorted(topology_type_outcomes(topology_type, steps), key=lambda s: s.name)
    ]


MACHINES: list[Machine] = [
    Machine(
        "Server monitor: the check channel",
        "mongo_sansio.sdam.heartbeat_states:MONITOR_TRANSITIONS",
        "One server's monitor (`mongo_sansio/sdam/heartbeat.py`): polling and streaming checks. "
        "Results for connections the monitor already closed are ignored before the table is "
        "consulted.",
        initial=("IDLE",),
        final=("CLOSED",),
    ),
    Machine(
        "Server monitor: the RTT channel",
        "mongo_sansio.sdam.heartbeat_states:RTT_TRANSITIONS",
        "The monitor's dedicated round-trip-time connection, running only while streaming.",
        initial=("STOPPED",),
    ),
    Machine(
        "CMAP connection pool",
        "mongo_sansio.cmap.states:TRANSITIONS",
        "The pool's states (`mongo_sansio/cmap/pool.py`); check-outs, check-ins and connection "
        "results never change them (`CHECK_OUT_REFUSALS` says what a check-out meets).",
        initial=("PAUSED",),
        final=("CLOSED",),
    ),
    Machine(
        "Connection",
        "mongo_sansio.connection.conn:TRANSITIONS",
        "One connection (`mongo_sansio/connection/conn.py`): a command sent waits for its reply; "
        "an exhaust reply with moreToCome keeps it waiting; end of stream or bad bytes close it.",
        initial=("IDLE",),
        final=("CLOSED",),
    ),
    Machine(
        "SDAM TopologyType",
        "mongo_sansio.sdam.topology:TRANSITIONS",
        "How applying a server description of each ServerType changes the TopologyType "
        "(`apply_server_description`); Single and LoadBalanced never change. The table names "
        "steps, so the next types come from `TOPOLOGY_STEP_OUTCOMES` in this script.",
        initial=("UNKNOWN", "SINGLE", "REPLICA_SET_NO_PRIMARY", "LOAD_BALANCED"),
        reader=topology_type_edges,
    ),
]


def load_table(spec: str) -> Any:
    module_name, _, attribute = spec.partition(":")
    return getattr(importlib.import_module(module_name), attribute)


def mermaid(machine: Machine) -> str:
    table = load_table(machine.table)
    edges = (machine.reader or table_edges)(table)
    kind = type(edges[0][0])
    order = {state: index for index, state in enumerate(kind)}
    edges.sort(key=lambda edge: (order[edge[0]], order[edge[1]]))
    used = {state for source, target, _ in edges for state in (source, target)}
    used.update(kind[name] for name in (*machine.initial, *machine.final))
    labels: dict[tuple[str, str], list[str]] = {}
    for source, target, label in edges:
        found = labels.setdefault((source.name, target.name), [])
        if label not in found:
            found.append(label)
    lines = ["```mermaid", "stateDiagram-v2"]
    lines.extend(f'    state "{_label(state)}" as {state.name}' for state in kind if state in used)
    lines.extend(f"    [*] --> {name}" for name in machine.initial)
    for (source_name, target_name), names in labels.items():
        lines.append(f"    {source_name} --> {target_name} : {', '.join(names)}")
    lines.extend(f"    {name} --> [*]" for name in machine.final)
    lines.append("```")
    return "\n".join(lines)


def render() -> str:
    parts = [
        "# State diagrams",
        "",
        "<!-- Generated by scripts/state_diagrams.py from the machines' transition tables.",
        "     Do not edit: run `.venv/bin/python scripts/state_diagrams.py` to regenerate. -->",
        "",
        "Generated from the transition tables the machines consult (do not edit by hand; "
        "regenerate with `.venv/bin/python scripts/state_diagrams.py`, and "
        "`tests/unit/test_state_diagrams.py` fails while this file is stale). "
        "An edge is labelled with the inputs that take it; pairs missing from a table are "
        "refused with `LocalProtocolError`.",
    ]
    for machine in MACHINES:
        parts += ["", f"## {machine.title}", "", f"Table: `{machine.table}`. {machine.about}", ""]
        parts.append(mermaid(machine))
    return "\n".join(parts) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="fail if the file is out of date")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = OUTPUT.read_text(encoding="utf-8") if OUTPUT.exists() else ""
        if current != text:
            print(f"{OUTPUT.relative_to(ROOT)} is out of date; run {Path(__file__).name}")
            return 1
        return 0
    OUTPUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUTPUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
