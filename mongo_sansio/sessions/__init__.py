"""Sessions, cluster time and transactions: the pure state behind ``ClientSession``.

* :mod:`.server_session` -- server sessions and their LIFO pool;
* :mod:`.cluster_time` -- ``$clusterTime`` gossip;
* :mod:`.transaction` -- the transaction state table and ``TransactionOptions``;
* :mod:`.session` -- :class:`Session`, the client side of one session;
* :mod:`.commands` -- the fields a session adds to each command.
"""

from mongo_sansio.sessions.cluster_time import ClusterClock
from mongo_sansio.sessions.commands import with_session_fields
from mongo_sansio.sessions.server_session import ServerSession, ServerSessionPool
from mongo_sansio.sessions.session import Session, SessionOptions
from mongo_sansio.sessions.transaction import TransactionOptions, TransactionState

__all__ = [
    "ClusterClock",
    "ServerSession",
    "ServerSessionPool",
    "Session",
    "SessionOptions",
    "TransactionOptions",
    "TransactionState",
    "with_session_fields",
]
