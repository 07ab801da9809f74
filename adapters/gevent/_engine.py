"""The gevent engine: the blocking engine (the client core run by the synchronous interpreter)
on :class:`~._runtime.GeventRuntime`, for the gevent ``MongoClient``'s settings."""

from __future__ import annotations

from typing import TYPE_CHECKING

import gevent.ssl

from .._sync import SyncRuntime
from ..blocking._engine import Engine
from ._runtime import GeventRuntime

if TYPE_CHECKING:
    from transports.blocking import make_ssl_context
else:
    from mongo_sansio.transports.blocking import make_ssl_context

__all__ = ["GeventEngine"]


class GeventEngine(Engine):
    """See the module docstring."""

    def new_runtime(self) -> SyncRuntime:
        """Greenlets and gevent's sockets; TLS through gevent's context, whose sockets wait
        cooperatively."""
        tls = self.settings.tls
        context = make_ssl_context(tls, gevent.ssl.SSLContext) if tls.enabled else None
        return GeventRuntime(context, self.resolver)
