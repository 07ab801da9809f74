"""DNS resolution for trio through dnspython's async resolver with its trio backend.

dnspython ships a trio backend (``dns.asyncbackend.get_backend("trio")``), so the questions are
asked natively on trio's sockets -- no worker thread.  Needs the ``srv`` and ``trio`` extras.
The answers are the same values as :mod:`mongo_sansio.transports.dns` gives.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence

from mongo_sansio.errors import ConfigurationError

from .dns import DEFAULT_LIFETIME
from .dns_asyncio import AsyncDnsResolver, resolve_seedlist_async

__all__ = ["TrioResolver", "resolve_seedlist_trio"]


class TrioResolver(AsyncDnsResolver):
    """Asks real DNS from trio code (dnspython's trio backend)."""

    backend_name = "trio"

    def __init__(
        self,
        *,
        nameservers: Sequence[str] | None = None,
        port: int = 53,
        lifetime: float = DEFAULT_LIFETIME,
    ) -> None:
        if importlib.util.find_spec("trio") is None:
            raise ConfigurationError("the trio resolver needs trio: install mongo-sansio[trio]")
        super().__init__(nameservers=nameservers, port=port, lifetime=lifetime)


resolve_seedlist_trio = resolve_seedlist_async
"""The driving loop is runtime-neutral: it only awaits the resolver."""
