"""Initial DNS seedlist discovery for ``mongodb+srv://`` URIs, as a pure machine.

Theory of operation
-------------------
A ``mongodb+srv://{hostname}`` URI names no servers: the seeds come from the SRV records of
``_{srvServiceName}._tcp.{hostname}`` and default options from the one TXT record of
``{hostname}``.  This module decides everything about that lookup and does none of it:

* **Inputs**: the host name from the URI (exactly one, no port), ``srvServiceName``,
  ``srvMaxHosts``, the URI's own ``loadBalanced`` / ``replicaSet`` / ``directConnection`` (they
  override the TXT record and take part in the post-merge checks), an injected ``randbelow(n)``
  (a uniform integer in ``[0, n)``) for the srvMaxHosts draw, an optional ``warn`` callable
  for ignored TXT values, and then the DNS answers (:class:`SrvAnswer`, :class:`TxtAnswer` or
  :class:`DnsFailure`), in any order.
* **Outputs**: :meth:`SeedlistDiscovery.questions` -- the :class:`DnsQuestion` s still to ask;
  :meth:`SeedlistDiscovery.result` -- a :class:`Seedlist` (seed addresses, the TXT options, the
  records' minimum TTL for SRV polling), or a :class:`SeedlistError` (a
  :class:`~mongo_sansio.errors.ConfigurationError`) that says why the URI found no hosts.

With a parsed :class:`~mongo_sansio.uri.connection_string.ConnectionString`,
:func:`discovery_for` builds the machine and :func:`apply_seedlist` turns its result into the
resolved connection string (``with_seedlist``: the URI's options win over the TXT record's).
The TXT text itself is read by :func:`~mongo_sansio.uri.options.parse_options` with
``origin="txt"``, so TXT options follow exactly the connection-string rules.

What it must not know: sockets, resolvers, clocks and the global random source.  Resolvers in
``mongo_sansio.transports.dns*`` answer the questions; they decide nothing.

The machine is one-shot and its error is sticky: once an answer fails a rule the machine is
FAILED and re-raises the same error for any further input.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Literal

import attrs

from mongo_sansio.errors import ConfigurationError, LocalProtocolError
from mongo_sansio.uri.options import UriOptions, Warn, parse_options

if TYPE_CHECKING:
    from mongo_sansio.uri.connection_string import ConnectionString

__all__ = [
    "Address",
    "DnsQuestion",
    "SrvRecord",
    "SrvAnswer",
    "TxtAnswer",
    "DnsFailureKind",
    "DnsFailure",
    "DnsAnswer",
    "Seedlist",
    "SeedlistError",
    "SeedlistState",
    "SeedlistDiscovery",
    "DEFAULT_SRV_SERVICE_NAME",
    "srv_domain",
    "check_srv_hostname",
    "check_srv_service_name",
    "srv_question",
    "verify_srv_target",
    "discovery_for",
    "apply_seedlist",
    "fisher_yates_shuffle",
    "choose_hosts",
]

Address = tuple[str, int]
"""``(host, port)``; the host lower-cased, without the root's trailing dot."""

DEFAULT_SRV_SERVICE_NAME = "mongodb"
MAX_LABEL_LENGTH = 63
MAX_NAME_LENGTH = 253

# ---------------------------------------------------------------------------------------------
# The vocabulary shared with SRV polling and the resolvers in transports/
# ---------------------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class DnsQuestion:
    """One DNS query to make: ``name`` is absolute, written without the trailing dot."""

    name: str
    rdtype: Literal["SRV", "TXT"]


@attrs.frozen(kw_only=True)
class SrvRecord:
    """One SRV record; priority and weight are ignored by the specification, so not kept."""

    target: str = attrs.field(validator=attrs.validators.instance_of(str))
    port: int = attrs.field(validator=attrs.validators.instance_of(int))
    ttl: float | None = None  # seconds; None when the resolver cannot tell


@attrs.frozen(kw_only=True)
class SrvAnswer:
    question: DnsQuestion
    records: tuple[SrvRecord, ...]


@attrs.frozen(kw_only=True)
class TxtAnswer:
    """TXT records as received: each record is its character-strings, in order, as bytes."""

    question: DnsQuestion
    records: tuple[tuple[bytes, ...], ...]


class DnsFailureKind(enum.Enum):
    NO_SUCH_NAME = "no such name"  # NXDOMAIN
    NO_ANSWER = "no records of that type"  # the name exists, the answer section is empty
    TIMEOUT = "timed out"
    ERROR = "DNS error"  # SERVFAIL, REFUSED, no usable name server, a malformed reply


@attrs.frozen(kw_only=True)
class DnsFailure:
    """The resolver could not answer ``question``; ``reason`` is its own words, for the user."""

    question: DnsQuestion
    kind: DnsFailureKind
    reason: str = ""


DnsAnswer = SrvAnswer | TxtAnswer | DnsFailure


class SeedlistError(ConfigurationError):
    """A ``mongodb+srv`` URI could not be turned into a seed list; the message says why."""


@attrs.frozen(kw_only=True)
class Seedlist:
    """What SRV and TXT records made of a ``mongodb+srv`` URI.

    ``hosts`` are the seeds (after the srvMaxHosts draw), ``all_hosts`` every verified SRV
    host.  ``txt_text`` is the TXT record's concatenated text (None without a record) and
    ``txt_options`` its options as validated by ``parse_options(text, origin="txt")`` (only
    authSource, replicaSet and loadBalanced), None without a record.  ``min_ttl`` is the
    lowest SRV record TTL, the input of the SRV polling interval (None when the resolver gave
    no TTLs).
    """

    hosts: tuple[Address, ...]
    all_hosts: tuple[Address, ...]
    txt_text: str | None
    txt_options: UriOptions | None = attrs.field(eq=False)
    min_ttl: float | None

    @property
    def options(self) -> dict[str, object]:
        return dict(self.txt_options) if self.txt_options is not None else {}


# ---------------------------------------------------------------------------------------------
# Rules, as pure functions (SRV polling reuses them)
# ---------------------------------------------------------------------------------------------


def check_srv_hostname(hostname: str) -> str:
    """Validate the host of a ``mongodb+srv`` URI before any DNS query; return it lower-cased.

    Since the 2024-09 revision of the specification a host of one or two labels is allowed
    (``localhost``, ``mongo.local``); such hosts get the stricter target rule instead.
    """
    if not isinstance(hostname, str) or not hostname:
        raise SeedlistError("a mongodb+srv URI needs exactly one host name")
    if "," in hostname:
        raise SeedlistError(f"a mongodb+srv URI must have exactly one host name, got {hostname!r}")
    if hostname.startswith("[") or ":" in hostname:
        raise SeedlistError(
            f"a mongodb+srv URI must not include a port or an IP literal, got {hostname!r}"
        )
    if "/" in hostname or "%" in hostname:
        raise SeedlistError(f"a mongodb+srv host must be a DNS name, got {hostname!r}")
    name = hostname.lower()
    if len(name) > MAX_NAME_LENGTH:
        raise SeedlistError(f"host name {hostname!r} is longer than {MAX_NAME_LENGTH} characters")
    for label in name.split("."):
        if not label:
            raise SeedlistError(f"host name {hostname!r} has an empty label")
        if len(label) > MAX_LABEL_LENGTH:
            raise SeedlistError(
                f"host name {hostname!r} has a label over {MAX_LABEL_LENGTH} characters"
            )
        if any(ch.isspace() for ch in label):
            raise SeedlistError(f"host name {hostname!r} contains white space")
    return name


def check_srv_service_name(name: str) -> str:
    """An RFC 6335 service name, except that it may exceed 15 characters (but not one label)."""
    ok = (
        isinstance(name, str)
        and 0 < len(name) < MAX_LABEL_LENGTH  # the underscore makes the 63rd character
        and all(ch.isascii() and (ch.isalnum() or ch == "-") for ch in name)
        and any(ch.isalpha() for ch in name)
        and not name.startswith("-")
        and not name.endswith("-")
        and "--" not in name
    )
    if not ok:
        raise ConfigurationError(f"srvServiceName {name!r} is not a valid SRV service name")
    return name


def srv_domain(hostname: str) -> str:
    """The ``{domainname}`` targets must end with: all but the first label of a host with three
    or more labels, else the whole host."""
    labels = hostname.split(".")
    return ".".join(labels[1:]) if len(labels) >= 3 else hostname


def srv_question(hostname: str, srv_service_name: str = DEFAULT_SRV_SERVICE_NAME) -> DnsQuestion:
    return DnsQuestion(name=f"_{srv_service_name}._tcp.{hostname}", rdtype="SRV")


def _normalise_target(target: str) -> str:
    name = target.lower()
    return name[:-1] if name.endswith(".") else name


def verify_srv_target(hostname: str, record: SrvRecord) -> str | None:
    """Why ``record`` may not be used for ``hostname`` (None when it may).

    The target must end with ``.{domainname}``: for a host of three or more labels that is the
    parent domain; for one or two labels it is the host itself, so the target must also have
    at least one label more (``mongo.local`` may not resolve to ``mongo.local``).
    """
    target = _normalise_target(record.target)
    domain = srv_domain(hostname)
    if not target or any(not label for label in target.split(".")):
        return f"SRV target {record.target!r} is not a host name"
    if target == domain:
        return f"SRV target {target!r} is the domain of {hostname!r} itself, not a host in it"
    if not target.endswith("." + domain):
        return f"SRV target {target!r} is not in the domain {domain!r} of {hostname!r}"
    if not 0 < record.port < 65536:
        return f"SRV record for {target!r} has an invalid port {record.port!r}"
    return None


def fisher_yates_shuffle(
    items: Sequence[Address], randbelow: Callable[[int], int]
) -> list[Address]:
    """A shuffled copy (the modern Fisher-Yates the specification recommends).

    ``randbelow(n)`` must return an integer in ``[0, n)``; adapters pass
    ``random.SystemRandom().randrange`` or similar.
    """
    out = list(items)
    for i in range(len(out) - 1, 0, -1):
        j = randbelow(i + 1)
        if not isinstance(j, int) or not 0 <= j <= i:
            raise LocalProtocolError(f"randbelow({i + 1}) returned {j!r}, outside [0, {i + 1})")
        out[i], out[j] = out[j], out[i]
    return out


def choose_hosts(
    hosts: Sequence[Address], srv_max_hosts: int, randbelow: Callable[[int], int] | None
) -> tuple[Address, ...]:
    """All hosts when srvMaxHosts is 0 or covers them; else the first srvMaxHosts of a shuffle."""
    if srv_max_hosts == 0 or srv_max_hosts >= len(hosts):
        return tuple(hosts)
    if randbelow is None:
        raise LocalProtocolError("srvMaxHosts needs a random source (randbelow)")
    return tuple(fisher_yates_shuffle(hosts, randbelow)[:srv_max_hosts])


def _dedupe(addresses: Iterable[Address]) -> list[Address]:
    return list(dict.fromkeys(addresses))


# ---------------------------------------------------------------------------------------------
# The machine
# ---------------------------------------------------------------------------------------------


class SeedlistState(enum.Enum):
    AWAITING_BOTH = "awaiting SRV and TXT"
    AWAITING_SRV = "awaiting SRV"
    AWAITING_TXT = "awaiting TXT"
    COMPLETE = "complete"
    FAILED = "failed"


# (state, the record type answered) -> next state.  A pair missing here is a caller's mistake
# (an answer to a question already answered, or input after the machine finished).
TRANSITIONS: Mapping[tuple[SeedlistState, str], SeedlistState] = MappingProxyType(
    {
        (SeedlistState.AWAITING_BOTH, "SRV"): SeedlistState.AWAITING_TXT,
        (SeedlistState.AWAITING_BOTH, "TXT"): SeedlistState.AWAITING_SRV,
        (SeedlistState.AWAITING_SRV, "SRV"): SeedlistState.COMPLETE,
        (SeedlistState.AWAITING_TXT, "TXT"): SeedlistState.COMPLETE,
    }
)

_OUTSTANDING: Mapping[SeedlistState, tuple[str, ...]] = MappingProxyType(
    {
        SeedlistState.AWAITING_BOTH: ("SRV", "TXT"),
        SeedlistState.AWAITING_SRV: ("SRV",),
        SeedlistState.AWAITING_TXT: ("TXT",),
        SeedlistState.COMPLETE: (),
        SeedlistState.FAILED: (),
    }
)


class SeedlistDiscovery:
    """Ask :meth:`questions`, feed each answer to :meth:`receive_answer`, then take
    :meth:`result`.  Errors raise :class:`SeedlistError` as soon as an answer breaks a rule."""

    def __init__(
        self,
        hostname: str,
        *,
        srv_service_name: str = DEFAULT_SRV_SERVICE_NAME,
        srv_max_hosts: int = 0,
        load_balanced: bool | None = None,
        replica_set: str | None = None,
        direct_connection: bool | None = None,
        randbelow: Callable[[int], int] | None = None,
        warn: Warn | None = None,
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
        if direct_connection:
            raise ConfigurationError("directConnection=true cannot be used with a mongodb+srv URI")
        if srv_max_hosts > 0 and randbelow is None:
            raise LocalProtocolError("srvMaxHosts > 0 needs a random source: pass randbelow")
        self.srv_max_hosts = srv_max_hosts
        self._uri_load_balanced = load_balanced
        self._uri_replica_set = replica_set
        self._randbelow = randbelow
        self._warn = warn
        self._srv_question = srv_question(self.hostname, self.srv_service_name)
        self._txt_question = DnsQuestion(name=self.hostname, rdtype="TXT")
        self.state = SeedlistState.AWAITING_BOTH
        self._error: SeedlistError | None = None
        self._hosts: list[Address] = []
        self._min_ttl: float | None = None
        self._txt_text: str | None = None
        self._txt_options: UriOptions | None = None
        self._result: Seedlist | None = None

    def questions(self) -> tuple[DnsQuestion, ...]:
        """The questions not answered yet (both at first; they may be asked in parallel)."""
        wanted = _OUTSTANDING[self.state]
        return tuple(q for q in (self._srv_question, self._txt_question) if q.rdtype in wanted)

    def receive_answer(self, answer: DnsAnswer) -> None:
        if self._error is not None:
            raise self._error
        question = answer.question
        if question not in (self._srv_question, self._txt_question):
            raise LocalProtocolError(f"{question!r} is not a question this machine asked")
        next_state = TRANSITIONS.get((self.state, question.rdtype))
        if next_state is None:
            raise LocalProtocolError(
                f"{question.rdtype} answer received in state {self.state.value}"
            )
        try:
            if question.rdtype == "SRV":
                self._take_srv(answer)
            else:
                self._take_txt(answer)
            self.state = next_state
            if self.state is SeedlistState.COMPLETE:
                self._check_merged_options()
        except SeedlistError as exc:
            self.state = SeedlistState.FAILED
            self._error = exc
            raise

    def result(self) -> Seedlist:
        if self._error is not None:
            raise self._error
        if self.state is not SeedlistState.COMPLETE:
            raise LocalProtocolError(f"no seed list yet: {self.state.value}")
        if self._result is None:  # draw once: asking twice must not change the seeds
            self._result = Seedlist(
                hosts=choose_hosts(self._hosts, self.srv_max_hosts, self._randbelow),
                all_hosts=tuple(self._hosts),
                txt_text=self._txt_text,
                txt_options=self._txt_options,
                min_ttl=self._min_ttl,
            )
        return self._result

    # -- answers ---------------------------------------------------------------------------

    def _take_srv(self, answer: DnsAnswer) -> None:
        name = self._srv_question.name
        if isinstance(answer, DnsFailure):
            raise SeedlistError(
                f"no SRV records found for {name!r} ({answer.kind.value}"
                + (f": {answer.reason})" if answer.reason else ")")
            )
        if not isinstance(answer, SrvAnswer):
            raise LocalProtocolError(
                f"expected an SRV answer for {name!r}, got {type(answer).__name__}"
            )
        # RFC 2782: a lone "." target means the service is decidedly not available here.
        records = [r for r in answer.records if _normalise_target(r.target)]
        if not records:
            raise SeedlistError(f"no SRV records found for {name!r} (the answer was empty)")
        hosts: list[Address] = []
        for record in records:
            problem = verify_srv_target(self.hostname, record)
            if problem is not None:
                raise SeedlistError(problem)
            hosts.append((_normalise_target(record.target), record.port))
        self._hosts = _dedupe(hosts)
        ttls = [r.ttl for r in records if r.ttl is not None]
        self._min_ttl = min(ttls) if ttls else None

    def _take_txt(self, answer: DnsAnswer) -> None:
        name = self._txt_question.name
        if isinstance(answer, DnsFailure):
            # No TXT record means no default options; any other failure could hide a
            # replicaSet or authSource the administrator meant, so it is an error.
            if answer.kind in (DnsFailureKind.NO_SUCH_NAME, DnsFailureKind.NO_ANSWER):
                return
            raise SeedlistError(
                f"TXT lookup for {name!r} failed ({answer.kind.value}"
                + (f": {answer.reason})" if answer.reason else ")")
            )
        if not isinstance(answer, TxtAnswer):
            raise LocalProtocolError(
                f"expected a TXT answer for {name!r}, got {type(answer).__name__}"
            )
        if not answer.records:
            return
        if len(answer.records) > 1:
            raise SeedlistError(
                f"{name!r} has {len(answer.records)} TXT records; only one is allowed"
            )
        try:
            text = b"".join(answer.records[0]).decode("utf-8")
        except UnicodeDecodeError:
            raise SeedlistError(f"the TXT record of {name!r} is not UTF-8 text") from None
        self._txt_text = text
        try:
            # Unknown keys and bad values are handled as in a connection string (the
            # specification says so); keys other than the three allowed are errors.
            self._txt_options = parse_options(text, origin="txt", warn=self._warn)
        except ConfigurationError as exc:
            raise SeedlistError(f"the TXT record of {name!r} is invalid: {exc}") from exc

    def _check_merged_options(self) -> None:
        """The specification's checks, made after the lookup on the merged options (the URI's
        values win over the TXT record's)."""
        txt = dict(self._txt_options) if self._txt_options is not None else {}
        load_balanced = self._uri_load_balanced
        if load_balanced is None:
            load_balanced = txt.get("loadBalanced") is True
        replica_set = self._uri_replica_set
        if replica_set is None:
            txt_replica_set = txt.get("replicaSet")
            replica_set = txt_replica_set if isinstance(txt_replica_set, str) else None
        if self.srv_max_hosts > 0 and replica_set is not None:
            raise SeedlistError("srvMaxHosts cannot be used together with replicaSet")
        if self.srv_max_hosts > 0 and load_balanced:
            raise SeedlistError("srvMaxHosts cannot be used together with loadBalanced=true")
        if load_balanced and replica_set is not None:
            raise SeedlistError("loadBalanced=true cannot be used together with replicaSet")
        if load_balanced and len(self._hosts) > 1:
            raise SeedlistError(
                f"loadBalanced=true needs exactly one host, but the SRV records of"
                f" {self._srv_question.name!r} name {len(self._hosts)}"
            )


# ---------------------------------------------------------------------------------------------
# With a parsed connection string
# ---------------------------------------------------------------------------------------------


def discovery_for(
    connection_string: ConnectionString,
    *,
    randbelow: Callable[[int], int] | None = None,
    warn: Warn | None = None,
) -> SeedlistDiscovery:
    """The seedlist machine for a parsed, unresolved ``mongodb+srv`` connection string."""
    host = connection_string.srv_host
    if host is None:
        raise LocalProtocolError(
            "only an unresolved mongodb+srv connection string needs a seedlist"
        )
    options = connection_string.options
    load_balanced = options.get("loadBalanced")
    return SeedlistDiscovery(
        host,
        srv_service_name=connection_string.srv_service_name,
        srv_max_hosts=connection_string.srv_max_hosts,
        load_balanced=load_balanced if isinstance(load_balanced, bool) else None,
        replica_set=connection_string.replica_set,
        direct_connection=connection_string.direct_connection,
        randbelow=randbelow,
        warn=warn,
    )


def apply_seedlist(connection_string: ConnectionString, seedlist: Seedlist) -> ConnectionString:
    """The connection string as if its hosts and the TXT options had been written in it (the
    URI's own options win; the merge is validated again)."""
    return connection_string.with_seedlist(seedlist.hosts, seedlist.txt_options)
