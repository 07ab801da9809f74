"""The runtime-independent client: what the blocking, gevent, asyncio and trio clients share.

* :mod:`.settings` -- :class:`ClientSettings` read from a connection string (topology, handshake,
  credential, TLS, timeouts, read preference, write concern), :class:`TlsSettings`.
* :mod:`.core` -- :class:`ClientCore`: the SDAM topology, server selection with inline scans
  (a flow), the connections per server, the answers to ``MarkServerUnknown``.
* :mod:`.requests` -- the client-internal requests its flows yield (:class:`OpenConnection`,
  :class:`CheckConnection`) and their answers (:class:`Opened`, :class:`CheckReply`).
* :mod:`.connections` -- :class:`ConnectionSets`, the idle/in-use bookkeeping per server.
* :mod:`.events` -- command monitoring events adapters publish.
"""

from mongo_sansio.client.connections import ConnectionRecord, ConnectionSets
from mongo_sansio.client.core import COOLDOWN, ClientCore
from mongo_sansio.client.events import (
    CommandFailedEvent,
    CommandListener,
    CommandStartedEvent,
    CommandSucceededEvent,
)
from mongo_sansio.client.requests import (
    CheckConnection,
    CheckReply,
    ClientRequest,
    OpenConnection,
    Opened,
)
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
    "COOLDOWN",
    "DRIVER_NAME",
    "UNIX_PORT",
    "CheckConnection",
    "CheckReply",
    "ClientCore",
    "ClientRequest",
    "ClientSettings",
    "CommandFailedEvent",
    "CommandListener",
    "CommandStartedEvent",
    "CommandSucceededEvent",
    "ConnectionRecord",
    "ConnectionSets",
    "OpenConnection",
    "Opened",
    "Seeds",
    "TlsSettings",
    "is_unix_address",
    "unix_stand_in",
]
