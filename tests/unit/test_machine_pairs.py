"""Every (state, input) pair of every machine: a valid next state or the library's own
LocalProtocolError, never a crash.

For each machine, a *driver* builds a fresh machine in each of its states (through its public
inputs only) and an *input* applies one kind of input with arguments hypothesis draws: the
valid ones the adapter would pass, and garbage (wrong types, NaN, ids never issued, stale
ids, odd replies).  The outcome must be:

* a normal return, with the new state one the machine's transition table allows for the pair
  (or the state unchanged for inputs the table does not govern, such as a check-out); or
* a :class:`~mongo_sansio.errors.LocalProtocolError` (including the pool's PoolMisuseError),
  with nothing changed.

Any other exception (KeyError, AssertionError, TypeError...) fails the test.
"""

from __future__ import annotations

import importlib.util
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mongo_sansio.bson import Int64, ObjectId
from mongo_sansio.cmap import (
    TRANSITIONS as POOL_TRANSITIONS,
)
from mongo_sansio.cmap import (
    CheckoutPurpose,
    GiveConnection,
    OpenConnection,
    Pool,
    PooledConnection,
    PoolInput,
    PoolOptions,
    PoolState,
)
from mongo_sansio.errors import LocalProtocolError
from mongo_sansio.sdam import (
    MONITOR_TRANSITIONS,
    RTT_TRANSITIONS,
    ApplicationError,
    ErrorKind,
    ErrorPhase,
    Monitor,
    MonitorInput,
    MonitorSettings,
    MonitorState,
    RttInput,
    RttState,
    ServerType,
    Topology,
    TopologySettings,
    TopologyType,
)

PAIRS = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

# -- argument strategies ------------------------------------------------------------------------

GARBAGE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**65), 2**65),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=5),
    st.lists(st.integers(), max_size=2),
    st.just(object()),
)
TIMES = st.one_of(st.floats(0, 1e6), st.integers(0, 10**6))
BAD_TIMES = st.one_of(GARBAGE, st.sampled_from([math.nan, math.inf, -math.inf]))
PROCESS = ObjectId("00000000000000000000000a")
HELLO_VALUES = st.one_of(
    GARBAGE,
    st.dictionaries(st.text(max_size=4), GARBAGE, max_size=2),
    st.just({"processId": PROCESS, "counter": Int64(3)}),
    st.builds(ObjectId),
)
HELLO_FIELDS = [
    "ok", "isWritablePrimary", "ismaster", "secondary", "arbiterOnly", "msg", "setName",
    "hosts", "me", "topologyVersion", "maxWireVersion", "minWireVersion", "setVersion",
    "electionId", "primary", "helloOk", "serviceId", "lastWrite", "tags", "isreplicaset",
]  # fmt: skip


def _server_reply(server_type: ServerType, *, streamable: bool) -> dict[str, Any]:
    reply: dict[str, Any] = {"ok": 1, "maxWireVersion": 21, "minWireVersion": 0}
    rs = {"setName": "rs", "hosts": ["a:27017", "b:27017"]}
    reply.update(
        {
            ServerType.UNKNOWN: {"ok": 0, "errmsg": "no"},
            ServerType.POSSIBLE_PRIMARY: {"ok": 0},
            ServerType.STANDALONE: {"isWritablePrimary": True},
            ServerType.MONGOS: {"isWritablePrimary": True, "msg": "isdbgrid"},
            ServerType.RS_PRIMARY: {"isWritablePrimary": True, **rs},
            ServerType.RS_SECONDARY: {"secondary": True, **rs},
            ServerType.RS_ARBITER: {"arbiterOnly": True, **rs},
            ServerType.RS_OTHER: {"hidden": True, **rs},
            ServerType.RS_GHOST: {"isreplicaset": True},
            ServerType.LOAD_BALANCER: {"isWritablePrimary": True, "serviceId": PROCESS},
        }[server_type]
    )
    if streamable:
        reply["topologyVersion"] = {"processId": PROCESS, "counter": Int64(1)}
    return reply


VALID_REPLIES = st.builds(
    _server_reply, st.sampled_from(list(ServerType)), streamable=st.booleans()
)
REPLIES = st.one_of(
    VALID_REPLIES,
    st.builds(
        lambda base, extra: {**base, **extra},
        VALID_REPLIES,
        st.dictionaries(st.sampled_from(HELLO_FIELDS), HELLO_VALUES, max_size=3),
    ),
    GARBAGE,
)


def _outcome(call: Callable[[], Any], snapshot: Callable[[], Any]) -> bool:
    """Run ``call``; True if it returned, False if it raised LocalProtocolError (and then
    nothing may have changed).  Anything else propagates and fails the test."""
    before = snapshot()
    try:
        call()
    except LocalProtocolError:
        assert snapshot() == before, "a refused input changed the machine"
        return False
    return True


class Args:
    """Draws one input's arguments: only what a correct adapter would pass when ``valid``,
    anything (garbage included) otherwise."""

    def __init__(self, data: st.DataObject, valid: bool) -> None:
        self.data, self.valid = data, valid

    def __call__(self, good: st.SearchStrategy[Any], bad: st.SearchStrategy[Any] = GARBAGE) -> Any:
        return self.data.draw(good if self.valid else st.one_of(good, bad))

    def now(self) -> Any:
        return self(TIMES, BAD_TIMES)


# -- the monitor --------------------------------------------------------------------------------

A = ("a", 27017)


def _monitor(**options: Any) -> Monitor:
    return Monitor(A, MonitorSettings(heartbeat_frequency=1.0, **options))


def _polling() -> Monitor:
    m = _monitor()
    m.start(0.0)
    m.connected(1, _server_reply(ServerType.STANDALONE, streamable=False), now=0.1)
    return m


def _streaming() -> Monitor:
    m = _monitor()
    m.start(0.0)
    m.connected(1, _server_reply(ServerType.STANDALONE, streamable=True), now=0.1)
    return m


def _drive_monitor(state: MonitorState, variant: int) -> Monitor:
    if state is MonitorState.IDLE:
        return _monitor()
    if state is MonitorState.CONNECTING:
        m = _monitor()
        m.start(0.0)
        if variant:  # a reconnect after a failed streaming check
            m = _streaming()
            m.failed(1, OSError(), now=0.2)
        return m
    if state is MonitorState.CHECKING:
        m = _polling()
        m.handle_timeout(2.0)
        return m
    if state is MonitorState.STREAMING:
        m = _streaming()
        if variant:  # reading moreToCome replies
            m.reply(
                1, _server_reply(ServerType.STANDALONE, streamable=True), now=0.3, more_to_come=True
            )
        return m
    if state is MonitorState.WAITING:
        if variant:  # after a failure: no check connection
            m = _monitor()
            m.start(0.0)
            m.failed(1, OSError(), now=0.1)
            return m
        return _polling()
    m = _streaming()
    m.close(0.5)
    return m


def _monitor_snapshot(m: Monitor) -> Any:
    return (
        m.state,
        m.rtt_state,
        m.connection_id,
        m.rtt_connection_id,
        m.next_deadline(),
        m.round_trip_times,
    )


def _ids(current: int | None) -> st.SearchStrategy[Any]:
    """The channel's open connection (else the first one issued), then other ids."""
    return st.just(current if current is not None else 1)


MonitorCall = Callable[[Monitor, Args], Callable[[], Any]]
MONITOR_INPUTS: dict[MonitorInput, MonitorCall] = {
    MonitorInput.START: lambda m, a: lambda: m.start(a.now()),
    MonitorInput.CONNECTED: lambda m, a: (
        lambda: m.connected(
            a(_ids(m.connection_id), st.integers(-1, 9)),
            a(VALID_REPLIES, REPLIES),
            now=a.now(),
            round_trip_time=a(st.one_of(st.none(), TIMES), BAD_TIMES),
        )
    ),
    MonitorInput.REPLY: lambda m, a: (
        lambda: m.reply(
            a(_ids(m.connection_id), st.integers(-1, 9)),
            a(VALID_REPLIES, REPLIES),
            now=a.now(),
            more_to_come=a(st.booleans()),
        )
    ),
    MonitorInput.FAILED: lambda m, a: (
        lambda: m.failed(
            a(_ids(m.connection_id), st.integers(-1, 9)),
            a(st.builds(OSError)),
            now=a.now(),
            timeout=a(st.booleans()),
        )
    ),
    MonitorInput.REQUEST_CHECK: lambda m, a: lambda: m.request_check(a.now()),
    MonitorInput.CANCEL_CHECK: lambda m, a: lambda: m.cancel_check(a.now()),
    MonitorInput.TIMEOUT: lambda m, a: lambda: m.handle_timeout(a.now()),
    MonitorInput.CLOSE: lambda m, a: lambda: m.close(a.now()),
}
_RESULTS = {MonitorInput.CONNECTED, MonitorInput.REPLY, MonitorInput.FAILED}


@pytest.mark.parametrize("variant", [0, 1])
@pytest.mark.parametrize("event", list(MonitorInput), ids=lambda e: e.value)
@pytest.mark.parametrize("state", list(MonitorState), ids=lambda s: s.value)
@PAIRS
@given(data=st.data(), valid=st.booleans())
def test_monitor_pairs(
    state: MonitorState, event: MonitorInput, variant: int, data: st.DataObject, valid: bool
) -> None:
    m = _drive_monitor(state, variant)
    assert m.state is state
    current = m.connection_id
    allowed = MONITOR_TRANSITIONS.get((state, event))
    accepted = _outcome(MONITOR_INPUTS[event](m, Args(data, valid)), lambda: _monitor_snapshot(m))
    if valid and allowed is not None:
        assert accepted, f"valid {event.value} refused in {state.value}"
    if not accepted:
        return
    if event in _RESULTS and m.state is state and m.connection_id == current:
        return  # a result for a connection that is not open (any more) is ignored
    assert allowed is not None, f"{event.value} was accepted in {state.value}"
    assert m.state in allowed


def _drive_rtt(state: RttState) -> Monitor:
    if state is RttState.STOPPED:
        return _polling()
    m = _streaming()  # the RTT connection (2) is being opened
    if state is RttState.CONNECTING:
        return m
    m.rtt_connected(2, now=0.2)
    if state is RttState.PINGING:
        m.handle_timeout(1.2)
    return m


RTT_INPUTS: dict[str, MonitorCall] = {
    "rtt_connected": lambda m, a: (
        lambda: m.rtt_connected(
            a(_ids(m.rtt_connection_id), st.integers(-1, 9)),
            now=a.now(),
            round_trip_time=a(st.one_of(st.none(), TIMES), BAD_TIMES),
        )
    ),
    "rtt_reply": lambda m, a: (
        lambda: m.rtt_reply(
            a(_ids(m.rtt_connection_id), st.integers(-1, 9)), a(VALID_REPLIES, REPLIES), now=a.now()
        )
    ),
    "rtt_failed": lambda m, a: (
        lambda: m.rtt_failed(
            a(_ids(m.rtt_connection_id), st.integers(-1, 9)), a(st.builds(OSError)), now=a.now()
        )
    ),
    "handle_timeout": lambda m, a: lambda: m.handle_timeout(a.now()),
}
_RTT_TABLE_INPUTS = {
    "rtt_connected": RttInput.CONNECTED,
    "rtt_reply": RttInput.REPLY,
    "rtt_failed": RttInput.FAILED,
    "handle_timeout": RttInput.TIMEOUT,
}


@pytest.mark.parametrize("event", list(RTT_INPUTS))
@pytest.mark.parametrize("state", list(RttState), ids=lambda s: s.value)
@PAIRS
@given(data=st.data(), valid=st.booleans())
def test_monitor_rtt_pairs(state: RttState, event: str, data: st.DataObject, valid: bool) -> None:
    m = _drive_rtt(state)
    assert m.rtt_state is state
    current = m.rtt_connection_id
    allowed = RTT_TRANSITIONS.get((state, _RTT_TABLE_INPUTS[event]))
    accepted = _outcome(RTT_INPUTS[event](m, Args(data, valid)), lambda: _monitor_snapshot(m))
    if valid and allowed is not None:
        assert accepted, f"valid {event} refused in {state.value}"
    if not accepted or (m.rtt_state is state and m.rtt_connection_id == current):
        return  # refused, or a result for a connection that is not open, ignored
    assert allowed is not None, f"{event} was accepted in {state.value}"
    # handle_timeout may also start a check, which can start or stop the RTT channel
    assert m.rtt_state in allowed or event == "handle_timeout"


# -- the CMAP pool ------------------------------------------------------------------------------

SERVICE = ObjectId("0000000000000000000000ff")


class PoolFixture:
    """A pool in a given state with something of everything: a checked-out connection, a
    connection being opened for a waiter, a queued waiter."""

    def __init__(self, state: PoolState, load_balanced: bool) -> None:
        self.pool = Pool("a:27017", PoolOptions(max_pool_size=2, load_balanced=load_balanced))
        self.handles: list[PooledConnection] = []
        self.waiters: list[int] = []
        self.pending: list[int] = []
        pool = self.pool
        pool.ready(0.0)
        self.waiters.append(pool.check_out(0.0))
        self._absorb()
        service = SERVICE if load_balanced else None
        pool.connection_established(self.pending.pop(), 0.1, service_id=service)
        self._absorb()
        self.waiters.append(pool.check_out(0.2, timeout=5.0))
        self.waiters.append(pool.check_out(0.3, timeout=5.0))
        self._absorb()
        if state is PoolState.PAUSED:
            if load_balanced:  # a load-balanced pool is never paused after ready
                raise ValueError("unreachable")
            pool.clear(0.4)
        elif state is PoolState.CLOSED:
            pool.close(0.4)
        self._absorb()
        assert pool.state is state

    def _absorb(self) -> None:
        for output in self.pool.drain_outputs():
            if isinstance(output, OpenConnection):
                self.pending.append(output.connection_id)
            elif isinstance(output, GiveConnection):
                self.handles.append(output.connection)

    def snapshot(self) -> Any:
        p = self.pool
        return (
            p.state,
            p.generation,
            p.total_connection_count,
            p.available_connection_count,
            p.pending_connection_count,
            p.in_use_connection_count,
            p.wait_queue_length,
            p.next_output(),  # a refused input must not have queued anything
        )


def _pool_inputs(f: PoolFixture, a: Args, load_balanced: bool) -> dict[str, Callable[[], Any]]:
    p = f.pool
    service = st.just(SERVICE if load_balanced else None)
    bad_service = st.one_of(st.none(), st.just(SERVICE), st.builds(ObjectId), GARBAGE)
    ids = st.sampled_from([*f.pending, 1, 2, 3])
    return {
        "ready": lambda: p.ready(a.now()),
        "clear": lambda: p.clear(
            a.now(),
            service_id=a(service, bad_service),
            interrupt_in_use_connections=a(st.booleans()),
            cause=a(st.one_of(st.none(), st.builds(OSError))),
        ),
        "close": lambda: p.close(a.now()),
        "check_out": lambda: p.check_out(
            a.now(),
            timeout=a(st.one_of(st.none(), TIMES), BAD_TIMES),
            purpose=a(st.sampled_from(list(CheckoutPurpose))),
        ),
        "cancel": lambda: p.cancel(a(st.sampled_from(f.waiters), st.integers(-1, 50)), a.now()),
        "connection_established": lambda: p.connection_established(
            a(ids, st.integers(-1, 50)), a.now(), service_id=a(service, bad_service)
        ),
        "connection_failed": lambda: p.connection_failed(
            a(ids, st.integers(-1, 50)), a.now(), a(st.builds(OSError))
        ),
        "check_in": lambda: p.check_in(
            a(st.sampled_from(f.handles)),
            a.now(),
            error=a(st.one_of(st.none(), st.builds(OSError))),
        ),
        "handle_timeout": lambda: p.handle_timeout(a.now()),
    }


_POOL_TABLE_INPUTS = {"ready": PoolInput.READY, "close": PoolInput.CLOSE}
_POOL_INPUT_NAMES = [
    "ready", "clear", "close", "check_out", "cancel", "connection_established",
    "connection_failed", "check_in", "handle_timeout",
]  # fmt: skip
_POOL_STATES = [
    (PoolState.PAUSED, False),
    (PoolState.READY, False),
    (PoolState.CLOSED, False),
    (PoolState.READY, True),
    (PoolState.CLOSED, True),
]


@pytest.mark.parametrize("event", _POOL_INPUT_NAMES)
@pytest.mark.parametrize(
    ("state", "load_balanced"),
    _POOL_STATES,
    ids=[f"{s.value}{'-lb' if lb else ''}" for s, lb in _POOL_STATES],
)
@PAIRS
@given(data=st.data(), valid=st.booleans())
def test_pool_pairs(
    state: PoolState, load_balanced: bool, event: str, data: st.DataObject, valid: bool
) -> None:
    f = PoolFixture(state, load_balanced)
    table_input = _POOL_TABLE_INPUTS.get(event)
    if event == "clear":
        table_input = PoolInput.CLEAR_SERVICE if load_balanced else PoolInput.CLEAR
    accepted = _outcome(_pool_inputs(f, Args(data, valid), load_balanced)[event], f.snapshot)
    if valid and table_input is not None:
        assert accepted, f"valid {event} refused in {state.value}"
    if not accepted:
        return
    if table_input is not None:
        assert f.pool.state is POOL_TRANSITIONS[(state, table_input)]
    else:
        assert f.pool.state is state  # only ready/clear/close move the pool


# -- the SDAM topology --------------------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[2]


def _diagram_script() -> Any:
    spec = importlib.util.spec_from_file_location(
        "state_diagrams", ROOT / "scripts/state_diagrams.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


_SCRIPT = _diagram_script()
_TOPOLOGY_EDGES = {
    (source, target)
    for machine in _SCRIPT.MACHINES
    if machine.table == "mongo_sansio.sdam.topology:TRANSITIONS"
    for source, target, _ in _SCRIPT.topology_type_edges(_SCRIPT.load_table(machine.table))
}
_LIFECYCLE = ["new", "closed"]
_TOPOLOGY_STATES = _LIFECYCLE + [t.value for t in TopologyType]
B = ("b", 27017)


def _drive_topology(state: str) -> Topology:
    seeds = ["a:27017", "b:27017"]
    options: dict[str, Any] = {}
    if state == TopologyType.SINGLE.value:
        seeds, options = ["a:27017"], {"direct_connection": True}
    elif state == TopologyType.LOAD_BALANCED.value:
        seeds, options = ["a:27017"], {"load_balanced": True}
    elif state == TopologyType.REPLICA_SET_NO_PRIMARY.value:
        options = {"set_name": "rs"}
    t = Topology(TopologySettings(seeds=seeds, **options), topology_id="t")
    if state == "new":
        return t
    t.open()
    if state == TopologyType.SHARDED.value:
        t.heartbeat_succeeded(
            A, _server_reply(ServerType.MONGOS, streamable=False), duration=0.1, now=1.0
        )
    elif state == TopologyType.REPLICA_SET_WITH_PRIMARY.value:
        t.heartbeat_succeeded(
            A, _server_reply(ServerType.RS_PRIMARY, streamable=True), duration=0.1, now=1.0
        )
    elif state == "closed":
        t.close()
    assert t.closed or state == "new" or t.description.type.value == state
    return t


def _topology_inputs(t: Topology, a: Args) -> dict[str, Callable[[], Any]]:
    address = lambda: a(st.sampled_from([A, B]), st.sampled_from([("c", 1), ("a",)]))  # noqa: E731
    error = st.builds(
        ApplicationError,
        address=st.sampled_from([A, B]),
        kind=st.sampled_from(list(ErrorKind)),
        phase=st.sampled_from(list(ErrorPhase)),
        generation=st.one_of(st.none(), st.integers(0, 3)),
        max_wire_version=st.one_of(st.none(), st.integers(0, 25)),
        reply=st.one_of(
            st.none(),
            st.fixed_dictionaries(
                {"ok": st.just(0), "code": st.sampled_from([91, 10107, 11600, 2, 189])}
            ),
        ),
    )
    return {
        "open": lambda: t.open(),
        "heartbeat_started": lambda: t.heartbeat_started(address(), awaited=a(st.booleans())),
        "heartbeat_succeeded": lambda: t.heartbeat_succeeded(
            address(),
            a(VALID_REPLIES, REPLIES),
            duration=a.now(),
            now=a.now(),
            awaited=a(st.booleans()),
        ),
        "heartbeat_failed": lambda: t.heartbeat_failed(
            address(),
            a(st.builds(OSError)),
            duration=a.now(),
            now=a.now(),
            timeout=a(st.booleans()),
        ),
        "rtt_sample": lambda: t.rtt_sample(address(), a.now()),
        "handshake_succeeded": lambda: t.handshake_succeeded(
            address(), a(VALID_REPLIES, REPLIES), round_trip_time=a.now(), now=a.now()
        ),
        "application_error": lambda: t.application_error(a(error), now=a.now()),
        "close": lambda: t.close(),
    }


_TOPOLOGY_INPUT_NAMES = [
    "open", "heartbeat_started", "heartbeat_succeeded", "heartbeat_failed", "rtt_sample",
    "handshake_succeeded", "application_error", "close",
]  # fmt: skip


_MONITOR_INPUTS = {"heartbeat_started", "heartbeat_succeeded", "heartbeat_failed", "rtt_sample"}


@pytest.mark.parametrize("event", _TOPOLOGY_INPUT_NAMES)
@pytest.mark.parametrize("state", _TOPOLOGY_STATES)
@PAIRS
@given(data=st.data(), valid=st.booleans())
def test_topology_pairs(state: str, event: str, data: st.DataObject, valid: bool) -> None:
    t = _drive_topology(state)
    before = t.description.type

    def snapshot() -> Any:
        return (t.closed, t.description, t.pool_generation(A), t.pool_generation(B))

    accepted = _outcome(_topology_inputs(t, Args(data, valid))[event], snapshot)
    if valid and state not in _LIFECYCLE and event != "open":
        # load-balanced topologies have no monitors, so monitor inputs are misuse there
        misuse = state == TopologyType.LOAD_BALANCED.value and event in _MONITOR_INPUTS
        assert accepted is not misuse, f"valid {event} in {state}"
    if not accepted or event == "close" or state in _LIFECYCLE:
        return  # open/close change the lifecycle, not the TopologyType table's state
    # every change of TopologyType is an edge of the table (as drawn in docs/state-diagrams.md)
    assert t.description.type is before or (before, t.description.type) in _TOPOLOGY_EDGES
