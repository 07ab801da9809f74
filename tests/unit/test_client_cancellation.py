"""Cutting the client's flows at every yield point leaves the pool and the topology consistent.

A runtime cancels a task where it waits: at a primitive (a trio/asyncio cancellation, a killed
greenlet, KeyboardInterrupt in a thread).  These tests run an operation (``drive`` of a
``run_command`` flow) and a bare ``ClientCore.check_out`` on a scripted server
(:mod:`client_harness`), and for every k close the flow -- or throw a BaseException into it --
when it yields its k-th primitive.  Afterwards, once the background tasks ran on:

* no connection is checked out (``in_use_connection_count`` 0) and nobody waits
  (``wait_queue_length`` 0, no waiter left in the core);
* the pool's ledger adds up (available + in use + pending = total, within maxPoolSize);
* no link that stays in the pool is in the middle of an exchange: a link whose exchange was cut
  mid-message was closed, never reused;
* the topology did not change (a cancellation is not a server's failure: no pool clear, the
  server stays what it was);
* the next operation works, on the same pool.

The scenarios vary what the cut flow meets: a cold pool (the connection is opened by a
background task while the flow waits), a warm one, a contended one (maxPoolSize=1 and another
task holding the connection), replies split in small chunks or delayed, command monitoring on
or off.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import attrs
import pytest
from client_harness import NOT_FINISHED, FakeServer, Later, Loop, make_core
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mongo_sansio.client import ClientCore
from mongo_sansio.client.execute import drive
from mongo_sansio.cmap.events import PoolCleared
from mongo_sansio.command import run_command
from mongo_sansio.flow import SelectServer, Sleep
from mongo_sansio.sdam.description import ServerType

A = ("a", 27017)


class Interrupt(BaseException):
    """Stands for KeyboardInterrupt (a real one would disturb the test runner)."""


@attrs.frozen
class Scenario:
    warm: bool = True  # an idle connection is in the pool before the cut flow starts
    contended: bool = False  # maxPoolSize=1, and another task holds the connection a while
    chunk: int | None = None  # bytes per Receive
    delay: float = 0.0  # the server's answer to ping comes this late
    monitored: bool = True  # command monitoring (publish) on
    select: bool = True  # the operation selects its server (else it is given)
    seed: int | None = None  # shuffles the tasks' steps (client_harness.Loop's order_seed)


class World:
    """One core on one scripted standalone, set up as ``scenario`` says."""

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self.server = FakeServer(A)
        self.loop = Loop(self.server, order_seed=scenario.seed)
        self.events: list[Any] = []
        options = "&maxPoolSize=1" if scenario.contended else ""
        self.core: ClientCore = make_core(
            self.loop,
            f"mongodb://a/?directConnection=true{options}",
            publish=self.events.append if scenario.monitored else None,
        )
        self.info = self.loop.run(self.core.select_server(SelectServer()))
        if scenario.warm or scenario.contended:
            self.loop.run(drive(self.core, self.ping(given=True)))
        if scenario.delay:
            self.server.handlers["ping"] = lambda body: Later(scenario.delay, {"ok": 1.0})
        self.server.chunk = scenario.chunk
        if scenario.contended:
            self.loop.spawn(self.holder(), "holder")
            self.loop.settle()
            assert self.pool.in_use_connection_count == 1

    @property
    def pool(self) -> Any:
        return self.core.pool(A)

    def ping(self, given: bool = False) -> Generator[Any, Any, Any]:
        server = self.info if given or not self.scenario.select else (yield SelectServer())
        return (yield from run_command(server, "admin", {"ping": 1}))

    def holder(self) -> Generator[Any, Any, None]:
        link = yield from self.core.check_out(A)
        self.holding = 1
        yield Sleep(0.5)
        self.core.check_in(link)
        self.holding = 0

    holding = 0

    def assert_released_at_once(self) -> None:
        """Right after the cut, before anything else runs: the cut flow holds nothing and
        waits for nothing."""
        assert self.pool.in_use_connection_count == self.holding
        assert self.pool.wait_queue_length == 0
        assert self.core._servers[A].waiters == {}

    def operation(self) -> Generator[Any, Any, Any]:
        return drive(self.core, self.ping())

    def check_out(self) -> Generator[Any, Any, Any]:
        def flow() -> Generator[Any, Any, Any]:
            link = yield from self.core.check_out(A)
            self.core.check_in(link)
            return link

        return flow()

    def assert_consistent(self) -> None:
        loop, pool, core = self.loop, self.pool, self.core
        loop.run_for(3.0)  # open tasks finish, the holder checks in
        assert loop.background_failures == []
        assert pool.in_use_connection_count == 0
        assert pool.wait_queue_length == 0
        server = core._servers[A]
        assert server.waiters == {}
        assert (
            pool.available_connection_count
            + pool.in_use_connection_count
            + pool.pending_connection_count
            == pool.total_connection_count
        )
        assert pool.total_connection_count <= (1 if self.scenario.contended else 100)
        for link in server.links.values():
            if not link.broken:
                assert link.machine.awaiting_response_to is None, f"{link} is mid-exchange"
        assert not any(isinstance(e, PoolCleared) for e in self.events)
        assert core.description.servers[A].type is ServerType.STANDALONE
        # the next operation works on the same pool (a reused half-read link would fail it)
        requests = len(self.server.commands("ping"))
        assert loop.run(self.operation())["ok"] == 1
        assert len(self.server.commands("ping")) == requests + 1
        assert pool.in_use_connection_count == 0


def primitives_of(scenario: Scenario, which: str) -> int:
    """How many primitives the uncut flow yields in ``scenario``."""
    world = World(scenario)
    flow = world.operation() if which == "operation" else world.check_out()
    counting = _Counting(flow)
    world.loop.run(counting)
    return counting.count


class _Counting:
    """A generator wrapper counting the primitives its flow yields."""

    def __init__(self, flow: Generator[Any, Any, Any]) -> None:
        self.flow = flow
        self.count = 0

    def __iter__(self) -> _Counting:
        return self

    def __next__(self) -> Any:
        return self.send(None)

    def send(self, value: Any) -> Any:
        request = self.flow.send(value)
        self.count += 1
        return request

    def throw(self, error: BaseException, *args: Any) -> Any:
        request = self.flow.throw(error)
        self.count += 1
        return request

    def close(self) -> None:
        self.flow.close()


def cut(scenario: Scenario, which: str, k: int, throw: bool) -> World:
    world = World(scenario)
    flow = world.operation() if which == "operation" else world.check_out()
    result = world.loop.run(flow, cut_after=k, throw=Interrupt() if throw else None)
    assert result is NOT_FINISHED
    world.assert_released_at_once()
    return world


SCENARIOS = [
    Scenario(),
    Scenario(warm=False),
    Scenario(contended=True),
    Scenario(chunk=5, delay=0.2),
    Scenario(warm=False, chunk=3, monitored=False),
    Scenario(contended=True, delay=0.1, select=False),
]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=repr)
@pytest.mark.parametrize("which", ["operation", "check_out"])
def test_cut_at_every_primitive(scenario: Scenario, which: str) -> None:
    total = primitives_of(scenario, which)
    assert total >= 1
    for k in range(1, total + 1):
        for throw in (False, True):
            world = cut(scenario, which, k, throw)
            try:
                world.assert_consistent()
            except AssertionError as exc:
                raise AssertionError(f"cut after {k} of {total} (throw={throw}): {exc}") from exc


scenarios = st.builds(
    Scenario,
    warm=st.booleans(),
    contended=st.booleans(),
    chunk=st.sampled_from([None, 1, 4, 16]),
    delay=st.sampled_from([0.0, 0.05, 0.7]),
    monitored=st.booleans(),
    select=st.booleans(),
    seed=st.one_of(st.none(), st.integers(0, 2**32 - 1)),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenario=scenarios, which=st.sampled_from(["operation", "check_out"]), data=st.data())
def test_cut_anywhere_property(scenario: Scenario, which: str, data: st.DataObject) -> None:
    total = primitives_of(scenario, which)
    k = data.draw(st.integers(1, total), label="k")
    throw = data.draw(st.booleans(), label="throw")
    cut(scenario, which, k, throw).assert_consistent()


def test_a_cut_mid_reply_closes_the_link() -> None:
    """The case the property exists for, spelled out: the reply is half read when the flow is
    cut; that link is closed, and the next operation gets a fresh connection."""
    scenario = Scenario(chunk=4)
    world = World(scenario)
    before = world.pool.total_connection_count
    flow = world.operation()
    counting = _Counting(flow)
    # run until the first Receive answered with part of the reply, then one more primitive
    log: list[str] = []

    def watch() -> Generator[Any, Any, Any]:
        request = next(counting)
        while True:
            log.append(type(request).__name__)
            if log.count("Receive") == 3:
                return
            request = counting.send((yield request))

    world.loop.run(watch())
    counting.close()
    link = next(iter(world.core._servers[A].links.values()), None)
    assert link is None or link.broken or link.machine.awaiting_response_to is None
    assert world.pool.total_connection_count == before - 1
    world.assert_consistent()
