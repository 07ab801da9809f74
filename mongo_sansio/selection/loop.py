"""The server selection loop, as a pure machine and as a flow (server-selection.md,
"Multi-threaded or asynchronous server selection").

Theory of operation
-------------------
A :class:`ServerSelection` is created for one operation with ``now``; its deadline is
``now + serverSelectionTimeoutMS``.  Each time the adapter has a topology description (the
current one at first, then each new one) it calls :meth:`ServerSelection.attempt`:

* a suitable server -> :class:`Selected` (state SELECTED; the adapter increments that server's
  operationCount and decrements it when the operation ends -- counts are the adapter's, passed
  in here as a mapping);
* none, before the deadline -> :class:`RequestCheckAndWait`: request an immediate check of every
  server, then wait until the topology changes or ``deadline`` passes, whichever is first, and
  call ``attempt`` again (state WAITING);
* none at or after the deadline -> :class:`ServerSelectionTimeoutError` describing the topology
  (state FAILED).  A call made after the deadline fails without looking for a server, so the
  loop never hands out a server after its deadline.

An incompatible topology raises :class:`IncompatibleTopologyError` at once, and an invalid
maxStalenessSeconds raises :class:`ConfigurationError` (both FAILED).  A finished machine
(SELECTED or FAILED) refuses further input with :class:`LocalProtocolError`.

Inputs: :meth:`attempt` (topology description, ``now``, random draw, operation counts) and
:meth:`handle_timeout` (``now``), at or after :meth:`next_deadline`.
Outputs: :class:`Selected`, :class:`RequestCheckAndWait`, or the errors above.

:func:`select_server_flow` wraps the machine as a generator for adapters that interpret flows:
it yields :class:`RequestCheckAndWait` and is sent a :class:`TopologyChanged` (the new topology
and ``now``, or the same topology when the deadline woke it), and returns the chosen
:class:`ServerDescription`.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Generator, Mapping
from types import MappingProxyType
from typing import Final

import attrs

from mongo_sansio.errors import LocalProtocolError
from mongo_sansio.sdam.description import Address, ServerDescription, format_address
from mongo_sansio.sdam.topology import TopologyDescription, TopologySettings
from mongo_sansio.selection.errors import ServerSelectionTimeoutError
from mongo_sansio.selection.rules import RandomDraw, SelectionCriteria, select_server

__all__ = [
    "SelectionState",
    "Selected",
    "RequestCheckAndWait",
    "TopologyChanged",
    "ServerSelection",
    "select_server_flow",
    "describe_topology",
    "TRANSITIONS",
]


class SelectionState(enum.Enum):
    SELECTING = "selecting"  # created, no attempt yet
    WAITING = "waiting"  # an attempt found nothing; waiting for a topology change or deadline
    SELECTED = "selected"  # done: a server was chosen
    FAILED = "failed"  # done: timeout, incompatible topology or invalid read preference


@attrs.frozen
class Selected:
    """The chosen server."""

    server: ServerDescription


@attrs.frozen
class RequestCheckAndWait:
    """Action: request an immediate check of the topology, then wait until the topology
    description changes or ``deadline`` (monotonic seconds) passes, and attempt again."""

    deadline: float


@attrs.frozen
class TopologyChanged:
    """What a flow is sent after waiting: the topology now, and ``now``."""

    topology: TopologyDescription
    now: float


_S = SelectionState
TRANSITIONS: Final[Mapping[tuple[SelectionState, str], tuple[SelectionState, ...]]] = (
    MappingProxyType({
        (_S.SELECTING, "attempt"): (_S.SELECTED, _S.WAITING, _S.FAILED),
        (_S.WAITING, "attempt"): (_S.SELECTED, _S.WAITING, _S.FAILED),
        (_S.SELECTING, "timeout"): (_S.SELECTING, _S.FAILED),
        (_S.WAITING, "timeout"): (_S.WAITING, _S.FAILED),
    })
)  # fmt: skip
"""(state, input) -> the states it may lead to; pairs not listed are misuse."""


class ServerSelection:
    """One operation's server selection; see the module docstring."""

    def __init__(
        self,
        criteria: SelectionCriteria,
        settings: TopologySettings,
        now: float,
        *,
        timeout: float | None = None,
    ) -> None:
        """``timeout`` (seconds) overrides ``settings.server_selection_timeout`` (e.g. the
        remaining client-side operation timeout)."""
        if timeout is None:
            timeout = settings.server_selection_timeout
        if not isinstance(now, int | float) or not math.isfinite(now):
            raise LocalProtocolError(f"now must be a finite number, got {now!r}")
        if not timeout >= 0:
            raise LocalProtocolError(f"the selection timeout must be >= 0, got {timeout!r}")
        self.criteria = criteria
        self.settings = settings
        self.started = float(now)
        self.timeout = float(timeout)
        self.deadline = self.started + self.timeout
        self.state = SelectionState.SELECTING
        self.attempts = 0
        self.last_topology: TopologyDescription | None = None
        self.selected: ServerDescription | None = None

    def _enter(self, event: str, state: SelectionState) -> None:
        allowed = TRANSITIONS.get((self.state, event))
        if allowed is None or state not in allowed:
            raise LocalProtocolError(f"{event!r} is not allowed in state {self.state.value}")
        self.state = state

    def _check_input(self, event: str, now: float) -> None:
        if (self.state, event) not in TRANSITIONS:
            raise LocalProtocolError(
                f"server selection is {self.state.value}; {event!r} is not allowed"
            )
        if not isinstance(now, int | float) or math.isnan(now):
            raise LocalProtocolError(f"now must be a number, got {now!r}")

    def attempt(
        self,
        topology: TopologyDescription,
        now: float,
        draw: RandomDraw,
        operation_counts: Mapping[Address, int] | None = None,
    ) -> Selected | RequestCheckAndWait:
        """Try to select from ``topology`` at ``now``; see the module docstring."""
        self._check_input("attempt", now)
        self.last_topology = topology
        if now > self.deadline:
            self._fail("attempt")
        self.attempts += 1
        try:
            server = select_server(
                topology,
                self.criteria,
                heartbeat_frequency=self.settings.heartbeat_frequency,
                local_threshold=self.settings.local_threshold,
                draw=draw,
                operation_counts=operation_counts,
            )
        except LocalProtocolError as exc:
            if exc.__class__ is LocalProtocolError:
                raise  # the caller's misuse (a bad random source): the machine is unchanged
            self._enter("attempt", SelectionState.FAILED)
            raise
        except Exception:
            self._enter("attempt", SelectionState.FAILED)
            raise
        if server is not None:
            self._enter("attempt", SelectionState.SELECTED)
            self.selected = server
            return Selected(server)
        if now >= self.deadline:
            self._fail("attempt")
        self._enter("attempt", SelectionState.WAITING)
        return RequestCheckAndWait(self.deadline)

    def next_deadline(self) -> float | None:
        """When :meth:`handle_timeout` must be called; None once finished."""
        if self.state in (SelectionState.SELECTED, SelectionState.FAILED):
            return None
        return self.deadline

    def handle_timeout(self, now: float) -> None:
        """At or after the deadline: raise :class:`ServerSelectionTimeoutError` (state FAILED).
        Earlier: nothing happens."""
        self._check_input("timeout", now)
        if now >= self.deadline:
            self._fail("timeout")

    @property
    def done(self) -> bool:
        return self.state in (SelectionState.SELECTED, SelectionState.FAILED)

    def _fail(self, event: str) -> None:
        self._enter(event, SelectionState.FAILED)
        topology = self.last_topology
        where = describe_topology(topology) if topology is not None else "no topology seen"
        raise ServerSelectionTimeoutError(
            f"Server selection timed out after {self.timeout:g} s: no server suitable for "
            f"{self.criteria}; {where}"
        )


def describe_topology(topology: TopologyDescription) -> str:
    """One line for error messages: type, set name, and each server's type, RTT and error."""
    parts = []
    for sd in topology.servers.values():
        text = f"{format_address(sd.address)} {sd.type.value}"
        if sd.round_trip_time is not None:
            text += f" rtt={sd.round_trip_time * 1000:.1f}ms"
        if sd.tags:
            text += f" tags={dict(sd.tags)!r}"
        if sd.error:
            text += f" error={sd.error!r}"
        parts.append(text)
    set_name = f", setName={topology.set_name!r}" if topology.set_name else ""
    servers = "; ".join(parts) if parts else "none"
    return f"topology type {topology.type.value}{set_name}, servers: [{servers}]"


def select_server_flow(
    criteria: SelectionCriteria,
    settings: TopologySettings,
    topology: TopologyDescription,
    now: float,
    draw: RandomDraw,
    operation_counts: Mapping[Address, int] | None = None,
    *,
    timeout: float | None = None,
) -> Generator[RequestCheckAndWait, TopologyChanged, ServerDescription]:
    """The selection loop as a flow: yields :class:`RequestCheckAndWait`, is sent
    :class:`TopologyChanged`, returns the server or raises the selection errors.
    ``operation_counts`` is read at every attempt, so a live mapping stays current."""
    selection = ServerSelection(criteria, settings, now, timeout=timeout)
    while True:
        outcome = selection.attempt(topology, now, draw, operation_counts)
        if isinstance(outcome, Selected):
            return outcome.server
        changed = yield outcome
        if not isinstance(changed, TopologyChanged):
            raise LocalProtocolError(
                f"the selection flow must be sent a TopologyChanged, got {changed!r}"
            )
        topology, now = changed.topology, changed.now
