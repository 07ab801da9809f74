"""Running one command inside a flow: the single place where replies and failures are read.

Input (sent into the flow): the reply document of a :class:`~mongo_sansio.flow.RunCommand`, or a
:class:`~mongo_sansio.errors.NetworkError` thrown in by the adapter.  Output: the reply when its
``ok`` is true; otherwise the typed :class:`~mongo_sansio.errors.ServerError` is raised.  Before a
network error or a state-change error (NotWritablePrimary, NodeIsRecovering and kin) leaves the
flow, a :class:`~mongo_sansio.flow.MarkServerUnknown` is yielded so the client's topology stops
trusting that server (the SDAM spec's rule for errors seen by operations).

Every operation flow sends its commands through :func:`run_command` (or
:func:`run_command_quietly` for best-effort commands such as killCursors), so these rules live
once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mongo_sansio.errors import MongoError, NetworkError, NotPrimaryError, check_reply
from mongo_sansio.flow import Flow, MarkServerUnknown, RunCommand, ServerInfo, TxnSlot

__all__ = ["run_command", "run_command_quietly"]


def run_command(
    server: ServerInfo,
    db: str,
    body: Mapping[str, Any],
    *,
    sequences: Mapping[str, Sequence[Any]] | None = None,
    timeout: float | None = None,
    session: Any = None,
    txn: TxnSlot | None = None,
) -> Flow[Mapping[str, Any]]:
    """Run ``body`` on ``server``; return the ``ok: 1`` reply or raise the typed error.
    ``session`` overrides the operation's (a cursor's own session); ``txn`` marks a retryable
    write (:class:`~mongo_sansio.flow.TxnSlot`)."""
    try:
        reply = yield RunCommand(server, db, body, sequences, timeout, session, txn)
    except NetworkError as error:
        yield MarkServerUnknown(server.address, error)
        raise
    try:
        return check_reply(reply)
    except NotPrimaryError as error:
        yield MarkServerUnknown(server.address, error)
        raise


def run_command_quietly(
    server: ServerInfo, db: str, body: Mapping[str, Any], *, session: Any = None
) -> Flow[None]:
    """Run a best-effort command (killCursors, endSessions): every library error is swallowed,
    after the topology has been told about it as :func:`run_command` does."""
    try:
        yield from run_command(server, db, body, session=session)
    except MongoError:
        pass
