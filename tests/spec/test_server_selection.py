"""The server selection spec suite (specifications/source/server-selection/tests).

* ``server_selection/<TopologyType>/<read|write>/`` -- build the topology description and the
  read preference, then compare ``suitable_servers`` and ``in_latency_window`` (by address) with
  the case, and check that a selection picks a server of the window.
* ``rtt/`` -- the moving average, through :class:`RoundTripTimes` from SDAM's monitor.
* ``in_window/`` -- operationCount-based choice: ``iterations`` selections with a seeded random
  source, each server's frequency judged by the case's tolerance (exact for 0 and 1).
* ``logging/`` -- unified-format tests of log messages: they need a running server.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from _selection_data import addresses, criteria, settings, topology
from _specs import suite_cases, suite_dir

from mongo_sansio.bson import extjson
from mongo_sansio.sdam import RoundTripTimes, format_address, parse_address
from mongo_sansio.selection import (
    Mode,
    ReadPreference,
    SelectionCriteria,
    in_latency_window,
    select_server,
    suitable_servers,
)

SUITE = "server-selection/tests"
LIVE_SERVER_REASON = (
    "a unified-format logging test: tests/spec/test_server_selection_logging.py runs it "
    "against the simulated deployment"
)
SEED = 20240601


def _expand(path: Path, data: Any) -> Iterable[tuple[str, Any]]:
    folder = _kind(path)
    if folder == "logging":
        for test in data.get("tests", []):
            yield test.get("description", path.stem), {"kind": folder}
        return
    yield (
        data.get("description", path.stem),
        {"kind": folder, "data": extjson.loads(json.dumps(data))},
    )


def _kind(path: Path) -> str:
    """The suite's part a file belongs to: its first folder below the suite folder."""
    return path.relative_to(suite_dir(SUITE)).parts[0]


CASES = suite_cases(SUITE, _expand)


@pytest.mark.spec
@pytest.mark.parametrize("case", CASES)
def test_server_selection_suite(case: dict[str, Any]) -> None:
    kind = case["kind"]
    if kind == "logging":
        pytest.skip(LIVE_SERVER_REASON)
    runners = {"server_selection": _run_selection, "rtt": _run_rtt, "in_window": _run_in_window}
    assert kind in runners, f"unknown part of the suite: {kind}"
    runners[kind](case["data"])


def _run_selection(case: dict[str, Any]) -> None:
    description = topology(case["topology_description"])
    options = settings(case, description)
    wanted = criteria(case)
    suitable = suitable_servers(description, wanted, options.heartbeat_frequency)
    assert {sd.address for sd in suitable} == addresses(case["suitable_servers"])
    window = in_latency_window(suitable, options.local_threshold)
    expected_window = addresses(case["in_latency_window"])
    assert {sd.address for sd in window} == expected_window
    chosen = select_server(
        description,
        wanted,
        heartbeat_frequency=options.heartbeat_frequency,
        local_threshold=options.local_threshold,
        draw=random.Random(SEED).randrange,
    )
    if expected_window:
        assert chosen is not None and chosen.address in expected_window
    else:
        assert chosen is None


def _run_rtt(case: dict[str, Any]) -> None:
    rtts = RoundTripTimes()
    if case["avg_rtt_ms"] != "NULL":
        rtts = rtts.add(case["avg_rtt_ms"] / 1000.0)
    rtts = rtts.add(case["new_rtt_ms"] / 1000.0)
    assert rtts.average is not None
    assert rtts.average * 1000.0 == pytest.approx(case["new_avg_rtt"], abs=1e-9)


def _run_in_window(case: dict[str, Any]) -> None:
    description = topology(case["topology_description"])
    options = settings(case, description)
    counts = {
        parse_address(s["address"]): int(s["operation_count"])
        for s in case["mocked_topology_state"]
    }
    wanted = SelectionCriteria.for_read(ReadPreference(mode=Mode.NEAREST))
    draw = random.Random(SEED).randrange
    iterations = int(case["iterations"])
    picks: Counter[str] = Counter()
    for _ in range(iterations):
        chosen = select_server(
            description,
            wanted,
            heartbeat_frequency=options.heartbeat_frequency,
            local_threshold=options.local_threshold,
            draw=draw,
            operation_counts=counts,
        )
        assert chosen is not None
        picks[format_address(chosen.address)] += 1
    outcome = case["outcome"]
    tolerance = float(outcome["tolerance"])
    for address, expected in outcome["expected_frequencies"].items():
        observed = picks[format_address(parse_address(address))] / iterations
        if expected in (0, 1):
            assert observed == expected, (address, observed, expected)
        else:
            assert abs(observed - expected) <= tolerance, (address, observed, expected)
