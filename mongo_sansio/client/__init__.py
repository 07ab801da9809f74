"""The runtime-independent client: what the blocking, gevent, asyncio and trio clients share.

* :mod:`.settings` -- :class:`ClientSettings` read from a connection string (topology, pool,
  handshake, credential, TLS, timeouts, read preference, write concern), :class:`TlsSettings`.
* :mod:`.runtime` -- the runtime seam: the primitives every flow is made of (open a stream,
  send, receive, wait for a signal, the clock) and :class:`Signal`.
* :mod:`.core` -- :class:`ClientCore`: the SDAM topology, a monitor and a CMAP pool per
  server, server selection that waits for the topology, the upkeep of pools and cursors.
* :mod:`.monitors` -- one server's monitor (heartbeat machine) and its background tasks.
* :mod:`.link` -- one established connection and the flows that open it and exchange on it.
* :mod:`.execute` -- :func:`drive`: running an operation flow on the core, with its deadline.
* :mod:`.events` -- command monitoring events (the public classes are in
  :mod:`mongo_sansio.monitoring`).
"""

from mongo_sansio.client.core import ClientCore, KillCursor
from mongo_sansio.client.events import (
    CommandFailedEvent,
    CommandStartedEvent,
    CommandSucceededEvent,
)
from mongo_sansio.client.execute import drive, operation_deadline
from mongo_sansio.client.settings import (
    DRIVER_NAME,
    UNIX_PORT,
    ClientSettings,
    Seeds,
    TlsSettings,
    is_unix_address,
    unix_stand_in,
)

__all__ = [
    "DRIVER_NAME",
    "UNIX_PORT",
    "ClientCore",
    "ClientSettings",
    "CommandFailedEvent",
    "CommandStartedEvent",
    "CommandSucceededEvent",
    "KillCursor",
    "Seeds",
    "TlsSettings",
    "drive",
    "is_unix_address",
    "operation_deadline",
    "unix_stand_in",
]
