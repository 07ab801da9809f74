"""DNS resolution for asyncio through dnspython's ``dns.asyncresolver`` (the ``srv`` extra).

The same answers as :mod:`mongo_sansio.transports.dns`, asked without blocking the event
loop; dnspython's asyncio backend does the I/O.  No protocol decisions here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from mongo_sansio.uri.seedlist import DnsAnswer, DnsQuestion, Seedlist, SeedlistDiscovery

from .dns import (
    DEFAULT_LIFETIME,
    HAVE_DNSPYTHON,
    make_resolver,
    query_name,
    require_dnspython,
    to_answer,
    to_failure,
)

if HAVE_DNSPYTHON:
    import dns.asyncbackend
    import dns.asyncresolver
    import dns.exception

__all__ = ["AsyncResolver", "AsyncDnsResolver", "AsyncioResolver", "resolve_seedlist_async"]


class AsyncResolver(Protocol):
    async def ask(self, question: DnsQuestion) -> DnsAnswer: ...


class AsyncDnsResolver:
    """dnspython's async resolver bound to one of its backends (``backend_name``)."""

    backend_name = "asyncio"

    def __init__(
        self,
        *,
        nameservers: Sequence[str] | None = None,
        port: int = 53,
        lifetime: float = DEFAULT_LIFETIME,
    ) -> None:
        require_dnspython()
        self._resolver = make_resolver(dns.asyncresolver.Resolver, nameservers, port, lifetime)

    async def ask(self, question: DnsQuestion) -> DnsAnswer:
        try:
            backend = dns.asyncbackend.get_backend(self.backend_name)
            answer = await self._resolver.resolve(
                query_name(question), question.rdtype, search=False, backend=backend
            )
        except (dns.exception.DNSException, OSError) as exc:
            return to_failure(question, exc)
        return to_answer(question, answer)


class AsyncioResolver(AsyncDnsResolver):
    """Asks real DNS from asyncio code."""

    backend_name = "asyncio"


async def resolve_seedlist_async(discovery: SeedlistDiscovery, resolver: AsyncResolver) -> Seedlist:
    """Drive ``discovery`` to its result, one question at a time (see ``dns.resolve_seedlist``)."""
    for question in discovery.questions():
        discovery.receive_answer(await resolver.ask(question))
    return discovery.result()
