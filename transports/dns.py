"""Blocking DNS resolution through dnspython (the ``srv`` extra); also used under gevent.

A resolver answers the seedlist and SRV polling machines' questions
(:class:`~mongo_sansio.uri.seedlist.DnsQuestion`) with their answer types
(:class:`~mongo_sansio.uri.seedlist.SrvAnswer`, ``TxtAnswer``, or a ``DnsFailure`` naming what
went wrong).  It decides nothing: domain checks, TXT rules and srvMaxHosts live in the core.
DNS trouble comes back as a ``DnsFailure`` value, never as a dnspython exception; only a
missing dnspython or an unusable configuration raises (``ConfigurationError``).

``nameservers``/``port`` point the resolver somewhere other than the system configuration
(the tests use a DNS server on loopback).  The helpers below (:func:`make_resolver`,
:func:`to_answer`, :func:`to_failure`) are shared with ``dns_asyncio`` and ``dns_trio``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from mongo_sansio.errors import ConfigurationError
from mongo_sansio.uri.seedlist import (
    DnsAnswer,
    DnsFailure,
    DnsFailureKind,
    DnsQuestion,
    Seedlist,
    SeedlistDiscovery,
    SrvAnswer,
    SrvRecord,
    TxtAnswer,
)

try:
    import dns.exception
    import dns.name
    import dns.resolver
except ImportError:  # pragma: no cover - exercised only without the extra
    HAVE_DNSPYTHON = False
else:
    HAVE_DNSPYTHON = True

__all__ = [
    "DEFAULT_LIFETIME",
    "HAVE_DNSPYTHON",
    "Resolver",
    "BlockingResolver",
    "make_resolver",
    "to_answer",
    "to_failure",
    "resolve_seedlist",
]

DEFAULT_LIFETIME = 10.0
"""Seconds one question may take in all (dnspython's ``lifetime``)."""

MISSING_EXTRA = "mongodb+srv URIs need dnspython: install mongo-sansio[srv]"


class Resolver(Protocol):
    """What the seedlist driver needs from a blocking resolver."""

    def ask(self, question: DnsQuestion) -> DnsAnswer: ...


def require_dnspython() -> None:
    if not HAVE_DNSPYTHON:
        raise ConfigurationError(MISSING_EXTRA)


def make_resolver(
    factory: Callable[..., Any],
    nameservers: Sequence[str] | None,
    port: int,
    lifetime: float,
) -> Any:
    """A dnspython resolver (sync or async ``factory``): the system's name servers unless
    ``nameservers`` is given; ``port`` applies to the given name servers."""
    require_dnspython()
    if not lifetime > 0:
        raise ConfigurationError(f"DNS lifetime must be positive, got {lifetime!r}")
    if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
        raise ConfigurationError(f"DNS port must be an integer in 1..65535, got {port!r}")
    try:
        if nameservers is None:
            resolver = factory()
        else:
            resolver = factory(configure=False)
            resolver.nameservers = list(nameservers)
            resolver.port = port
    except dns.resolver.NoResolverConfiguration as exc:
        raise ConfigurationError(f"no DNS resolver configuration on this system: {exc}") from exc
    except ValueError as exc:  # an unparsable name server address
        raise ConfigurationError(f"bad DNS name server in {nameservers!r}: {exc}") from exc
    resolver.lifetime = lifetime
    resolver.timeout = lifetime
    return resolver


def to_failure(question: DnsQuestion, exc: BaseException) -> DnsFailure:
    """A dnspython (or socket) exception as the core's value."""
    if isinstance(exc, dns.resolver.NXDOMAIN):
        kind = DnsFailureKind.NO_SUCH_NAME
    elif isinstance(exc, dns.resolver.NoAnswer):
        kind = DnsFailureKind.NO_ANSWER
    elif isinstance(exc, dns.exception.Timeout):  # LifetimeTimeout derives from it
        kind = DnsFailureKind.TIMEOUT
    else:
        kind = DnsFailureKind.ERROR
    return DnsFailure(question=question, kind=kind, reason=str(exc) or type(exc).__name__)


def to_answer(question: DnsQuestion, answer: Any) -> DnsAnswer:
    """A dnspython ``Answer`` as the core's SRV or TXT answer."""
    rrset = answer.rrset
    if rrset is None or len(rrset) == 0:
        return DnsFailure(question=question, kind=DnsFailureKind.NO_ANSWER, reason="empty answer")
    ttl = float(rrset.ttl)
    if question.rdtype == "SRV":
        return SrvAnswer(
            question=question,
            records=tuple(
                SrvRecord(
                    target=rdata.target.to_text(omit_final_dot=True), port=int(rdata.port), ttl=ttl
                )
                for rdata in rrset
            ),
        )
    return TxtAnswer(question=question, records=tuple(tuple(rdata.strings) for rdata in rrset))


def query_name(question: DnsQuestion) -> Any:
    """The absolute name to ask, so that no search domain is ever appended."""
    return dns.name.from_text(question.name, origin=dns.name.root)


class BlockingResolver:
    """Asks real DNS with dnspython's blocking resolver (cooperative under gevent's patches)."""

    def __init__(
        self,
        *,
        nameservers: Sequence[str] | None = None,
        port: int = 53,
        lifetime: float = DEFAULT_LIFETIME,
    ) -> None:
        require_dnspython()
        self._resolver = make_resolver(dns.resolver.Resolver, nameservers, port, lifetime)

    def ask(self, question: DnsQuestion) -> DnsAnswer:
        try:
            name = query_name(question)
            answer = self._resolver.resolve(name, question.rdtype, search=False)
        except (dns.exception.DNSException, OSError) as exc:
            return to_failure(question, exc)
        return to_answer(question, answer)


def resolve_seedlist(discovery: SeedlistDiscovery, resolver: Resolver) -> Seedlist:
    """Drive ``discovery`` to its result: ask each question, feed each answer back.

    Raises what the machine raises (``SeedlistError`` for a URI that finds no usable hosts).
    """
    for question in discovery.questions():
        discovery.receive_answer(resolver.ask(question))
    return discovery.result()
