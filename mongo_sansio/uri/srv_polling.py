"""SRV polling for mongos discovery, as a pure machine.

Theory of operation
-------------------
A topology seeded from a ``mongodb+srv://`` URI rescans the SRV records of
``_{srvServiceName}._tcp.{hostname}`` while the topology is Sharded or Unknown, and adds or
removes mongos hosts to match.  This machine decides when to ask and what the answer changes;
an adapter keeps one timer for it and a resolver (``mongo_sansio.transports.dns*``) asks.

* **Inputs**: at construction, the URI's host, ``srvServiceName``, ``srvMaxHosts``,
  ``heartbeatFrequencyMS`` (as seconds), the seeds of the initial discovery and its minimum
  TTL, ``now`` at the end of that discovery, an injected ``randbelow(n)`` and whether the
  client is load balanced; then :meth:`SrvPoller.handle_timeout` ``(now)``,
  :meth:`SrvPoller.receive_answer` ``(answer, now)`` and
  :meth:`SrvPoller.topology_type_changed` ``(type)``, :meth:`SrvPoller.close`.
* **Outputs**: :meth:`SrvPoller.next_deadline` (monotonic seconds, or None while a query is
  out or polling has stopped); the :class:`~mongo_sansio.uri.seedlist.DnsQuestion` that
  ``handle_timeout`` returns when a rescan is due; a :class:`SrvPollResult` per answer with
  the hosts added and removed (the adapter adds them to the topology as Unknown / removes
  them), the targets rejected (to log) and, when nothing changed, why.

Rules (Polling SRV Records for mongos Discovery):

* The interval is the lowest TTL of the latest answer's records, but at least 60 seconds
  (60 seconds when the resolver gives no TTLs), counted from the end of the previous scan.
* A target outside the URI host's domain is left out, never an error.  When no verified host
  remains, or the lookup failed, the topology is left unchanged and the interval falls back to
  heartbeatFrequencyMS until a scan yields a verified host again.
* Hosts no longer returned are removed; unchanged hosts are left alone; new hosts are added --
  all of them when srvMaxHosts is 0 or at least the number of verified hosts, else a random
  choice (the same shuffle as initial discovery) until the topology holds srvMaxHosts hosts.
* No polling for load-balanced clients or once the topology is Single or a replica set.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType

import attrs

from mongo_sansio.errors import ConfigurationError, LocalProtocolError
from mongo_sansio.sdam.description import TopologyType
from mongo_sansio.uri.seedlist import (
    DEFAULT_SRV_SERVICE_NAME,
    Address,
    DnsAnswer,
    DnsFailure,
    DnsQuestion,
    SrvAnswer,
    check_srv_hostname,
    check_srv_service_name,
    fisher_yates_shuffle,
    srv_question,
    verify_srv_target,
)

__all__ = [
    "MIN_RESCAN_INTERVAL",
    "PollerState",
    "PollerInput",
    "TRANSITIONS",
    "SrvPollResult",
    "SrvPoller",
    "rescan_interval",
]

MIN_RESCAN_INTERVAL = 60.0
"""Seconds; the specification's floor for rescanSRVIntervalMS."""

_POLLED_TOPOLOGY_TYPES = frozenset({TopologyType.SHARDED, TopologyType.UNKNOWN})


class PollerState(enum.Enum):
    WAITING = "waiting"  # a rescan is scheduled at the deadline
    QUERYING = "querying"  # the SRV question is out; the adapter owes an answer
    STOPPED = "stopped"  # not a sharded/unknown topology, load balanced, or closed


class PollerInput(enum.Enum):
    TIMEOUT = "rescan due"
    ANSWER = "answer"
    STOP = "stop"


# (state, input) -> next state.  Inputs missing for a state are handled before the lookup:
# a timeout while querying or stopped is a no-op, an answer while stopped is dropped (the
# query was in flight when polling stopped), an answer while waiting is the caller's mistake.
TRANSITIONS: Mapping[tuple[PollerState, PollerInput], PollerState] = MappingProxyType(
    {
        (PollerState.WAITING, PollerInput.TIMEOUT): PollerState.QUERYING,
        (PollerState.QUERYING, PollerInput.ANSWER): PollerState.WAITING,
        (PollerState.WAITING, PollerInput.STOP): PollerState.STOPPED,
        (PollerState.QUERYING, PollerInput.STOP): PollerState.STOPPED,
        (PollerState.STOPPED, PollerInput.STOP): PollerState.STOPPED,
    }
)


def rescan_interval(ttls: Iterable[float | None], floor: float = MIN_RESCAN_INTERVAL) -> float:
    """The lowest TTL, but never under ``floor`` (rescanSRVIntervalMS, 60 s by default);
    ``floor`` when no TTL is known."""
    known = [ttl for ttl in ttls if ttl is not None]
    return max(floor, min(known)) if known else floor


@attrs.frozen(kw_only=True)
class SrvPollResult:
    """What one rescan changed.  ``hosts`` is the poller's host list afterwards."""

    added: tuple[Address, ...] = ()
    removed: tuple[Address, ...] = ()
    hosts: tuple[Address, ...] = ()
    rejected: tuple[str, ...] = ()  # why targets were left out, for the log
    failure: str | None = None  # why the topology was left unchanged, for the log
    next_rescan: float | None = None

    @property
    def changed(self) -> bool:
        return bool(self.added or self.removed)


class SrvPoller:
    def __init__(
        self,
        hostname: str,
        *,
        hosts: Iterable[Address],
        now: float,
        min_ttl: float | None = None,
        srv_service_name: str = DEFAULT_SRV_SERVICE_NAME,
        srv_max_hosts: int = 0,
        heartbeat_frequency: float = 10.0,
        randbelow: Callable[[int], int] | None = None,
        load_balanced: bool = False,
        rescan_floor: float = MIN_RESCAN_INTERVAL,
    ) -> None:
        self.hostname = check_srv_hostname(hostname)
        self.srv_service_name = check_srv_service_name(srv_service_name)
        if (
            isinstance(srv_max_hosts, bool)
            or not isinstance(srv_max_hosts, int)
            or srv_max_hosts < 0
        ):
            raise ConfigurationError(
                f"srvMaxHosts must be a non-negative integer, got {srv_max_hosts!r}"
            )
        if not heartbeat_frequency > 0:
            raise ConfigurationError(
                f"heartbeatFrequencyMS must be positive, got {heartbeat_frequency!r}"
            )
        if srv_max_hosts > 0 and randbelow is None:
            raise LocalProtocolError("srvMaxHosts > 0 needs a random source: pass randbelow")
        self.srv_max_hosts = srv_max_hosts
        self.heartbeat_frequency = float(heartbeat_frequency)
        self._randbelow = randbelow
        self._question = srv_question(self.hostname, self.srv_service_name)
        self._hosts: list[Address] = list(dict.fromkeys(hosts))
        if not rescan_floor > 0:
            raise ConfigurationError(
                f"rescanSRVIntervalMS must be positive, got {rescan_floor * 1000!r}"
            )
        self.rescan_floor = float(rescan_floor)
        self.interval = rescan_interval([min_ttl], self.rescan_floor)
        self._deadline: float | None = now + self.interval
        self.state = PollerState.STOPPED if load_balanced else PollerState.WAITING

    @property
    def hosts(self) -> tuple[Address, ...]:
        return tuple(self._hosts)

    @property
    def question(self) -> DnsQuestion:
        return self._question

    def next_deadline(self) -> float | None:
        """When :meth:`handle_timeout` wants to be called; None when it does not."""
        return self._deadline if self.state is PollerState.WAITING else None

    def handle_timeout(self, now: float) -> DnsQuestion | None:
        """The SRV question to ask when a rescan is due, else None."""
        if self.state is not PollerState.WAITING or self._deadline is None or now < self._deadline:
            return None
        self.state = TRANSITIONS[(self.state, PollerInput.TIMEOUT)]
        self._deadline = None
        return self._question

    def topology_type_changed(self, topology_type: TopologyType | str) -> None:
        """Polling continues only while the topology is Sharded or Unknown."""
        try:
            kind = TopologyType(topology_type)
        except ValueError:
            raise LocalProtocolError(f"{topology_type!r} is not a topology type") from None
        if kind not in _POLLED_TOPOLOGY_TYPES:
            self._stop()

    def close(self) -> None:
        self._stop()

    def _stop(self) -> None:
        self.state = TRANSITIONS[(self.state, PollerInput.STOP)]
        self._deadline = None

    def receive_answer(
        self, answer: DnsAnswer, now: float, *, current_hosts: Iterable[Address] | None = None
    ) -> SrvPollResult:
        """Apply a rescan's answer.  ``current_hosts``, when given, is the topology's host list
        right now (it replaces the poller's own view before the comparison)."""
        if self.state is PollerState.STOPPED:
            return SrvPollResult(hosts=self.hosts, failure="SRV polling has stopped")
        if answer.question != self._question:
            raise LocalProtocolError(f"{answer.question!r} is not the question this poller asked")
        next_state = TRANSITIONS.get((self.state, PollerInput.ANSWER))
        if next_state is None:
            raise LocalProtocolError(
                f"an SRV answer arrived while {self.state.value}: none was asked"
            )
        if current_hosts is not None:
            self._hosts = list(dict.fromkeys(current_hosts))
        self.state = next_state
        if isinstance(answer, DnsFailure):
            reason = f"SRV lookup of {self._question.name!r} failed ({answer.kind.value}"
            reason += f": {answer.reason})" if answer.reason else ")"
            return self._unchanged(now, reason, ())
        if not isinstance(answer, SrvAnswer):
            raise LocalProtocolError(f"expected an SRV answer, got {type(answer).__name__}")
        return self._apply(answer, now)

    def _unchanged(self, now: float, reason: str, rejected: tuple[str, ...]) -> SrvPollResult:
        self.interval = self.heartbeat_frequency
        self._deadline = now + self.interval
        return SrvPollResult(
            hosts=self.hosts, rejected=rejected, failure=reason, next_rescan=self._deadline
        )

    def _apply(self, answer: SrvAnswer, now: float) -> SrvPollResult:
        verified: list[Address] = []
        rejected: list[str] = []
        ttls: list[float | None] = []
        for record in answer.records:
            target = record.target.lower().removesuffix(".")
            if not target:  # RFC 2782's "." target: no service here
                continue
            problem = verify_srv_target(self.hostname, record)
            if problem is not None:
                rejected.append(problem)
                continue
            verified.append((target, record.port))
            ttls.append(record.ttl)
        verified = list(dict.fromkeys(verified))
        if not verified:
            why = (
                "the SRV answer had no records" if not answer.records else "no SRV target was valid"
            )
            return self._unchanged(now, why, tuple(rejected))

        valid = set(verified)
        kept = [host for host in self._hosts if host in valid]
        removed = tuple(host for host in self._hosts if host not in valid)
        known = set(kept)
        new = [host for host in verified if host not in known]
        if self.srv_max_hosts == 0 or self.srv_max_hosts >= len(verified):
            added = tuple(new)
        else:
            room = max(0, self.srv_max_hosts - len(kept))
            added = tuple(self._shuffle(new)[:room]) if room else ()
        self._hosts = kept + list(added)
        self.interval = rescan_interval(ttls, self.rescan_floor)
        self._deadline = now + self.interval
        return SrvPollResult(
            added=added,
            removed=removed,
            hosts=self.hosts,
            rejected=tuple(rejected),
            next_rescan=self._deadline,
        )

    def _shuffle(self, hosts: list[Address]) -> list[Address]:
        if self._randbelow is None:  # guarded in __init__; kept for the type checker
            raise LocalProtocolError("srvMaxHosts needs a random source (randbelow)")
        return fisher_yates_shuffle(hosts, self._randbelow)
