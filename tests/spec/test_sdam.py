"""The SDAM spec suite (specifications/source/server-discovery-and-monitoring/tests).

Each file is one test: a fresh :class:`Topology` built from the file's URI, then for every
phase its hello responses (``{}`` is a network error) and application errors are fed in, and
the phase's outcome is compared with the topology description (or, in ``monitoring/``, with
the SDAM events published since the previous phase).  ``unified/`` is in the unified test
format: ``test_sdam_unified.py`` runs it against the simulated deployment, so its files are
reported as skipped here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
from _specs import suite_cases

from mongo_sansio.backpressure import label_establishment_error
from mongo_sansio.bson import extjson
from mongo_sansio.errors import NetworkError, NetworkTimeout
from mongo_sansio.sdam import (
    ApplicationError,
    ErrorKind,
    ErrorPhase,
    ServerClosedEvent,
    ServerDescription,
    ServerDescriptionChangedEvent,
    ServerOpeningEvent,
    Topology,
    TopologyClosedEvent,
    TopologyDescription,
    TopologyDescriptionChangedEvent,
    TopologyOpeningEvent,
    TopologySettings,
    TopologyVersion,
    format_address,
    parse_address,
)

SUITE = "server-discovery-and-monitoring/tests"
UNIFIED_REASON = (
    "a unified-format test: tests/spec/test_sdam_unified.py runs it against the simulated "
    "deployment (this module runs the machine-level tests)"
)


def _expand(path: Path, data: Any) -> Iterable[tuple[str, Any]]:
    # extended JSON ($oid, $numberLong) becomes ObjectId / Int64, as a decoded hello reply would
    yield data.get("description", path.stem), extjson.loads(json.dumps(data))


def _cases(folder: str) -> list[Any]:
    return suite_cases(f"{SUITE}/{folder}", _expand)


# -- building the topology ---------------------------------------------------------------------


def _settings(uri: str) -> TopologySettings:
    assert uri.startswith("mongodb://"), uri
    rest = uri[len("mongodb://") :]
    hosts, _, query = rest.partition("/")
    options: dict[str, str] = {}
    for pair in query.lstrip("?").split("&"):
        if pair:
            name, _, value = pair.partition("=")
            options[name.lower()] = unquote(value)

    def flag(name: str) -> bool | None:
        value = options.get(name.lower())
        return None if value is None else value == "true"

    return TopologySettings(
        seeds=hosts.split(","),
        set_name=options.get("replicaset"),
        direct_connection=flag("directConnection"),
        load_balanced=bool(flag("loadBalanced")),
    )


class _Runner:
    def __init__(self, case: dict[str, Any]) -> None:
        self.topology = Topology(_settings(case["uri"]), topology_id="42")
        self.outputs: list[Any] = list(self.topology.open())
        self.now = 0.0

    def respond(self, address: str, reply: dict[str, Any]) -> None:
        self.now += 1.0
        where = parse_address(address)
        if reply:
            out = self.topology.heartbeat_succeeded(where, reply, duration=0.01, now=self.now)
        else:
            out = self.topology.heartbeat_failed(
                where, "network error", duration=0.01, now=self.now
            )
        self.outputs.extend(out)

    def application_error(self, spec: dict[str, Any]) -> None:
        self.now += 1.0
        connecting = spec["when"] == "beforeHandshakeCompletes"
        error = ApplicationError(
            address=parse_address(spec["address"]),
            kind=ErrorKind(spec["type"]),
            phase=ErrorPhase.CONNECTING if connecting else ErrorPhase.ESTABLISHED,
            generation=spec.get("generation"),
            max_wire_version=spec.get("maxWireVersion"),
            reply=spec.get("response"),
            error_labels=_pool_labels(spec["type"]) if connecting else (),
        )
        self.outputs.extend(self.topology.application_error(error, now=self.now))

    def run_phase(self, phase: dict[str, Any]) -> None:
        for address, reply in phase.get("responses", []):
            self.respond(address, reply)
        for error in phase.get("applicationErrors", []):
            self.application_error(error)


def _pool_labels(kind: str) -> tuple[str, ...]:
    """The labels the client's pool gives an error of ``kind`` met during a new connection's
    handshake (CMAP, backpressure: network errors and timeouts become possible overloads),
    by the client's own rule."""
    if kind == "command":
        return ()
    error = NetworkTimeout("mock") if kind == "timeout" else NetworkError("mock")
    label_establishment_error(error, authenticating=False)
    return tuple(error.error_labels)


def _run(case: dict[str, Any] | None, *, monitoring: bool = False) -> None:
    assert case is not None
    runner = _Runner(case)
    for number, phase in enumerate(case["phases"]):
        runner.run_phase(phase)
        where = f"phase {number} ({phase.get('description', '')})"
        if monitoring:
            _check_events(runner.outputs, phase["outcome"]["events"], where)
            runner.outputs.clear()
        else:
            _check_outcome(runner.topology, phase["outcome"], where)


# -- comparing outcomes --------------------------------------------------------------------------


def _check_outcome(topology: Topology, outcome: dict[str, Any], where: str) -> None:
    td = topology.description
    assert td.type.value == outcome["topologyType"], where
    assert td.set_name == outcome.get("setName"), where
    for key, actual in [
        ("logicalSessionTimeoutMinutes", td.logical_session_timeout_minutes),
        ("maxSetVersion", td.max_set_version),
        ("maxElectionId", td.max_election_id),
        ("compatible", td.compatible),
    ]:
        if key in outcome:
            assert actual == outcome[key], f"{where}: {key}"
    expected_servers = outcome["servers"]
    actual_servers = {format_address(a): sd for a, sd in td.servers.items()}
    assert set(actual_servers) == set(expected_servers), where
    for address, expected in expected_servers.items():
        sd = actual_servers[address]
        _check_server(sd, expected, f"{where}: {address}")
        if "pool" in expected:
            generation = topology.pool_generation(parse_address(address))
            assert generation == expected["pool"]["generation"], f"{where}: {address} pool"


def _check_server(sd: ServerDescription, expected: dict[str, Any], where: str) -> None:
    assert sd.type.value == expected["type"], where
    simple = {
        "setName": sd.set_name,
        "setVersion": sd.set_version,
        "electionId": sd.election_id,
        "logicalSessionTimeoutMinutes": sd.logical_session_timeout_minutes,
        "primary": None if sd.primary is None else format_address(sd.primary),
    }
    for key, actual in simple.items():
        if key in expected:
            assert actual == expected[key], f"{where}: {key}"
    # The load-balancers spec's "unset" wire versions are the SDAM spec's defaults (0).
    for key, actual in [
        ("minWireVersion", sd.min_wire_version),
        ("maxWireVersion", sd.max_wire_version),
    ]:
        if key in expected:
            assert actual == (expected[key] if expected[key] is not None else 0), f"{where}: {key}"
    if "topologyVersion" in expected:
        tv = expected["topologyVersion"]
        assert sd.topology_version == (None if tv is None else TopologyVersion.from_document(tv)), (
            f"{where}: topologyVersion"
        )
    if "error" in expected:
        assert sd.error is not None and expected["error"] in sd.error, f"{where}: {sd.error!r}"
    for key, actual_set in [
        ("hosts", sd.hosts),
        ("passives", sd.passives),
        ("arbiters", sd.arbiters),
    ]:
        if key in expected:
            assert {format_address(a) for a in actual_set} == set(expected[key]), f"{where}: {key}"


def _check_topology(td: TopologyDescription, expected: dict[str, Any], where: str) -> None:
    assert td.type.value == expected["topologyType"], where
    if "setName" in expected:
        assert td.set_name == expected["setName"], where
    servers = {format_address(a): sd for a, sd in td.servers.items()}
    wanted = {s["address"]: s for s in expected["servers"]}
    assert set(servers) == set(wanted), where
    for address, server in wanted.items():
        _check_server(servers[address], server, f"{where}: {address}")


_EVENT_NAMES = {
    TopologyOpeningEvent: "topology_opening_event",
    TopologyClosedEvent: "topology_closed_event",
    TopologyDescriptionChangedEvent: "topology_description_changed_event",
    ServerOpeningEvent: "server_opening_event",
    ServerClosedEvent: "server_closed_event",
    ServerDescriptionChangedEvent: "server_description_changed_event",
}


def _check_events(outputs: list[Any], expected: list[dict[str, Any]], where: str) -> None:
    events = [o for o in outputs if type(o) in _EVENT_NAMES]
    names = [_EVENT_NAMES[type(e)] for e in events]
    assert names == [next(iter(e)) for e in expected], where
    for number, (event, wanted) in enumerate(zip(events, expected, strict=True)):
        (body,) = wanted.values()
        at = f"{where}: event {number}"
        if "address" in body:
            assert format_address(event.address) == body["address"], at
        if isinstance(event, ServerDescriptionChangedEvent):
            _check_server(event.previous_description, body["previousDescription"], at)
            _check_server(event.new_description, body["newDescription"], at)
        elif isinstance(event, TopologyDescriptionChangedEvent):
            _check_topology(event.previous_description, body["previousDescription"], at)
            _check_topology(event.new_description, body["newDescription"], at)


# -- the tests -----------------------------------------------------------------------------------


@pytest.mark.spec
@pytest.mark.parametrize("case", _cases("single"))
def test_single(case: dict[str, Any] | None) -> None:
    _run(case)


@pytest.mark.spec
@pytest.mark.parametrize("case", _cases("rs"))
def test_rs(case: dict[str, Any] | None) -> None:
    _run(case)


@pytest.mark.spec
@pytest.mark.parametrize("case", _cases("sharded"))
def test_sharded(case: dict[str, Any] | None) -> None:
    _run(case)


@pytest.mark.spec
@pytest.mark.parametrize("case", _cases("load-balanced"))
def test_load_balanced(case: dict[str, Any] | None) -> None:
    _run(case)


@pytest.mark.spec
@pytest.mark.parametrize("case", _cases("errors"))
def test_errors(case: dict[str, Any] | None) -> None:
    _run(case)


@pytest.mark.spec
@pytest.mark.parametrize("case", _cases("monitoring"))
def test_monitoring(case: dict[str, Any] | None) -> None:
    _run(case, monitoring=True)


@pytest.mark.spec
@pytest.mark.parametrize("case", _cases("unified"))
def test_unified(case: dict[str, Any] | None) -> None:
    pytest.skip(UNIFIED_REASON)
