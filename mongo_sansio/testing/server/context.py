"""What a command handler is given and what it may give back.

Inputs to a handler: a :class:`Context` -- the cluster, the member the connection is on, the
connection's own state (:class:`ConnectionState`), the decoded :class:`Request` and ``now``.
Outputs: a reply document (``ok`` included; :mod:`.dispatch` adds ``$clusterTime`` and
``operationTime``), a :class:`Waiting` when the answer depends on time or on the cluster
(blocked by a failpoint, an awaitable hello, an awaitData getMore), or a :class:`Close` when
the connection must drop without a reply.  Failures are raised as the engine's
:class:`~mongo_sansio.testing.engine.CommandError`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from mongo_sansio.testing.engine import Collection
from mongo_sansio.testing.server.auth import SaslConversation
from mongo_sansio.testing.server.replset import Member, ReplicaSet

if TYPE_CHECKING:
    from mongo_sansio.testing.server.api_version import ApiParameters
    from mongo_sansio.testing.server.transactions import SnapshotView, Transaction

__all__ = ["Close", "CommandSpec", "ConnectionState", "Context", "Outcome", "Request", "Waiting", "NO_REPLY"]


@attrs.frozen
class Request:
    name: str  # the command name as sent (the body's first key)
    db: str
    body: Mapping[str, Any]
    sequences: Mapping[str, list[Any]]
    request_id: int
    legacy: bool = False  # OP_QUERY, answered with OP_REPLY
    secondary_ok: bool = False
    exhaust_allowed: bool = False
    more_to_come: bool = False  # the client wants no reply (unacknowledged write)
    compressor_id: int | None = None

    @property
    def lsid(self) -> Any:
        return self.body.get("lsid")

    @property
    def txn_number(self) -> int | None:
        value = self.body.get("txnNumber")
        return int(value) if isinstance(value, int) and not isinstance(value, bool) else None


@attrs.define
class ConnectionState:
    connection_id: int
    compression: list[str] = attrs.Factory(list)
    handshake_done: bool = False
    app_name: str | None = None
    user: str | None = None  # the authenticated user
    conversation: SaslConversation | None = None
    conversation_done: bool = False  # a SCRAM conversation waiting for the empty last step
    skip_empty_exchange: bool = False
    auth_expires: float | None = None  # wall-clock end of an OIDC authentication (token exp)
    user_db: str | None = None  # the authenticated user's database ($external for OIDC)
    conversation_db: str | None = None  # the database of the conversation in progress
    via_load_balancer: bool = False  # came in through the load balancer front (.load_balancer)
    close_after_reply: str | None = None  # why to close the connection once this reply is sent
    service_id: Any = None  # the load balancer's router this connection reached (ObjectId)


@attrs.define
class Waiting:
    """An answer that is not ready: ``poll(now, timed_out)`` gives it (or None: not yet).
    ``deadline``: when to poll with ``timed_out=True``.  ``interruptible``: a stepdown of
    the member fails it with InterruptedDueToReplStateChange."""

    deadline: float | None
    poll: Callable[[float, bool], Outcome | None]
    interruptible: bool = True


@attrs.frozen
class Close:
    reason: str


class _NoReply:
    def __repr__(self) -> str:
        return "NO_REPLY"


NO_REPLY = _NoReply()

Outcome = dict[str, Any] | Waiting | Close | _NoReply


@attrs.define
class Context:
    cluster: ReplicaSet
    member: Member
    state: ConnectionState
    request: Request
    now: float
    # The transaction this command runs in (set by the dispatcher), or None.
    txn: Transaction | None = None
    # A read at an earlier cluster time (readConcern snapshot with atClusterTime), or None.
    snapshot: SnapshotView | None = None
    # The Stable API parameters the command declared (set by the dispatcher once checked).
    api: ApiParameters | None = None
    # What a retry of this retryable write is answered from, when that is not the reply
    # itself (bulkWrite keeps every result: its reply's cursor may hold only some of them).
    retry_record: dict[str, Any] | None = None

    @property
    def body(self) -> Mapping[str, Any]:
        return self.request.body

    @property
    def db(self) -> str:
        return self.request.db

    @property
    def view(self) -> SnapshotView | None:
        """The data as this command sees it when that is not the latest committed state."""
        return self.txn.view if self.txn is not None else self.snapshot

    def collection(self, database: str, name: str, *, create: bool = False) -> Collection | None:
        """A collection as this command sees it: its transaction's (own writes, snapshot of the
        others'), a snapshot read's, or the committed one."""
        view = self.view
        if view is not None:
            return view.collection(database, name, create=create)
        return self.cluster.collection(database, name, create=create)

    def collection_names(self, database: str) -> list[str]:
        view = self.view
        if view is not None:
            return view.names(database)
        return list(self.cluster.databases.get(database, {}))


Handler = Callable[[Context], Outcome]


@attrs.frozen
class CommandSpec:
    name: str
    handler: Handler
    access: str = "any"  # "read": a secondary needs secondaryOk; "write": primary only
    requires_auth: bool = True
    retryable_write: bool = False
    # The lowest maxWireVersion the simulator answers the command at (below: CommandNotFound,
    # as an older mongod that does not have it).
    min_wire_version: int = 0
    # Turns the record of an executed retryable write (the reply, or ``retry_record``) into the
    # answer to its retry; None: the record is the answer.
    replay: Callable[[Context, dict[str, Any]], dict[str, Any]] | None = None
