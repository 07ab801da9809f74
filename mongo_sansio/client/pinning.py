"""Connections pinned in load-balanced mode (load-balancers.md, "Connection Pinning").

Theory of operation
-------------------
Behind a load balancer every new connection may reach another service, so the commands that
belong together go over the one connection that began them:

* a cursor's ``getMore`` and ``killCursors`` go over the connection of the command that opened
  it (a reply with a non-zero cursor id pins that connection to the cursor);
* every command of a transaction -- the ones that carry ``autocommit: false`` -- goes over the
  connection of its first command (the session's pin), and a cursor opened inside the
  transaction shares it.

:func:`pinned_link` is asked before a command is sent: which pinned connection it must use
(None: check one out).  :func:`settle` is asked after the reply or the failure: whether the
connection stays checked out (pinned) or goes back to the pool.  The release rules:

* a cursor's connection goes back when a ``getMore`` answers cursor id 0 or when its
  ``killCursors`` has run (whatever the outcome); an error on ``getMore`` leaves it pinned
  until the cursor is closed, and after a network error the close sends no ``killCursors``
  (:func:`pinned_link` answers :data:`SKIP_KILL_CURSORS`);
* a session's connection goes back after ``abortTransaction`` (whatever the outcome), after a
  failure that ends the transaction on this connection (a network error, a
  ``TransientTransactionError`` or ``UnknownTransactionCommitResult`` label), when the
  session starts another transaction, runs a command outside a transaction, or ends
  (:meth:`Pin.release`, which the session calls).  A successful commit keeps it, so that the
  commit can be run again on it; a commit or abort retried on a fresh connection (its pin
  was released by the error) does not pin that one.

A pinned connection is checked out once and checked in once: one ConnectionCheckedOutEvent
and one ConnectionCheckedInEvent for all the commands it carries.  Multi-threaded callers
must not iterate and close one cursor at the same time (the cursor's own rule).

Inputs: the client core (its load-balanced flag and check-in), the session, the command as
sent, its reply or error.  Outputs: the link to use; links checked back in.  Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from mongo_sansio.cmap.states import CheckoutPurpose
from mongo_sansio.errors import MongoError, NetworkError

if TYPE_CHECKING:
    from mongo_sansio.client.core import ClientCore
    from mongo_sansio.client.link import Link
    from mongo_sansio.sessions import Session

__all__ = ["Pin", "CursorPins", "pinned_link", "settle", "SKIP_KILL_CURSORS"]

_TRANSACTION_ENDS: Final = ("commitTransaction", "abortTransaction")
#: labels that end a transaction's use of its connection
_UNPIN_LABELS: Final = ("TransientTransactionError", "UnknownTransactionCommitResult")


class _Skip:
    def __repr__(self) -> str:
        return "SKIP_KILL_CURSORS"


#: :func:`pinned_link`'s answer for a ``killCursors`` whose pinned connection broke: send
#: nothing, the connection has gone back to its pool
SKIP_KILL_CURSORS: Final = _Skip()


class Pin:
    """One connection held checked out for a session's transaction or a cursor (its pool
    counts it under ``purpose``)."""

    __slots__ = ("core", "link", "released")

    def __init__(self, core: ClientCore, link: Link, purpose: CheckoutPurpose) -> None:
        self.core = core
        self.link = link
        self.released = False
        pool = core.pool(link.address)
        if pool is not None and link.pooled is not None:
            pool.pin(link.pooled, purpose)

    def release(self) -> None:
        """Check the connection back in (idempotent)."""
        if not self.released:
            self.released = True
            self.core.check_in(self.link)


class CursorPins:
    """The client's cursor pins, by cursor id."""

    def __init__(self) -> None:
        self._pins: dict[int, Pin] = {}

    def get(self, cursor_id: int) -> Pin | None:
        return self._pins.get(cursor_id)

    def add(self, cursor_id: int, pin: Pin) -> None:
        self._pins[cursor_id] = pin

    def release(self, cursor_id: int) -> None:
        pin = self._pins.pop(cursor_id, None)
        if pin is not None:
            pin.release()

    def release_all(self) -> None:
        for cursor_id in list(self._pins):
            self.release(cursor_id)


def _cursor_id(body: Mapping[str, Any]) -> int | None:
    """The cursor a ``getMore`` or ``killCursors`` is about (None for other commands)."""
    name = next(iter(body), "")
    if name == "getMore":
        value = body.get("getMore")
    elif name == "killCursors":
        cursors = body.get("cursors")
        value = cursors[0] if isinstance(cursors, list) and len(cursors) == 1 else None
    else:
        return None
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else None


def _transactional(body: Mapping[str, Any]) -> bool:
    return body.get("autocommit") is False


def _session_pin(session: Session | None) -> Pin | None:
    pin: Pin | None = getattr(session, "pinned_connection", None)
    return pin


def unpin_session(session: Session | None) -> None:
    """Release ``session``'s connection (idempotent)."""
    if session is not None:
        session.unpin()


def pinned_link(
    core: ClientCore, session: Session | None, body: Mapping[str, Any]
) -> Link | _Skip | None:
    """The pinned connection ``body`` must go over (see the module docstring); None: check
    one out.  A session pinned by a finished transaction is released here when ``body`` runs
    outside a transaction."""
    cursor_id = _cursor_id(body)
    if cursor_id is not None:
        pin = core.cursor_pins.get(cursor_id)
        if pin is not None:
            if pin.link.broken and next(iter(body)) == "killCursors":
                core.cursor_pins.release(cursor_id)
                return SKIP_KILL_CURSORS
            return pin.link
    pin = _session_pin(session)
    if pin is None:
        return None
    if session is not None and (
        session.in_transaction or _transactional(body) or next(iter(body), "") in _TRANSACTION_ENDS
    ):
        return pin.link
    unpin_session(session)
    return None


def settle(
    core: ClientCore,
    session: Session | None,
    body: Mapping[str, Any],
    link: Link,
    reply: Mapping[str, Any] | None,
    error: BaseException | None,
) -> bool:
    """After ``body`` ran over ``link``: True when ``link`` stays checked out (pinned), False
    when the caller checks it in."""
    name = next(iter(body), "")
    cursor_id = _cursor_id(body)
    cursor_pin = None if cursor_id is None else core.cursor_pins.get(cursor_id)
    if cursor_pin is not None and cursor_pin.link is link:
        if name == "killCursors" or (error is None and _reply_cursor_id(reply) == 0):
            core.cursor_pins.release(cursor_id)  # type: ignore[arg-type]
        return True  # (held by the pin, or just checked in by its release)
    session_pin = _session_pin(session)
    if _transactional(body) and session is not None:
        if name in _TRANSACTION_ENDS and (session_pin is None or session_pin.link is not link):
            return False  # a retried commit or abort, on a fresh connection: not pinned
        if session_pin is None or session_pin.link is not link:
            session_pin = Pin(core, link, CheckoutPurpose.TRANSACTION)
            session.pinned_connection = session_pin
        if name == "abortTransaction" or _ends_transaction(error) or _ends_transaction_reply(reply):
            unpin_session(session)
        return True
    if session_pin is not None and session_pin.link is link:
        return True  # (a killCursors of a transaction's cursor, on the transaction's link)
    if error is None and reply is not None:
        opened = _reply_cursor_id(reply)
        if opened:
            core.cursor_pins.add(opened, Pin(core, link, CheckoutPurpose.CURSOR))
            return True
    return False


def _ends_transaction(error: BaseException | None) -> bool:
    if error is None:
        return False
    if isinstance(error, NetworkError):
        return True
    if isinstance(error, MongoError):
        return any(label in error.error_labels for label in _UNPIN_LABELS)
    return True


def _ends_transaction_reply(reply: Mapping[str, Any] | None) -> bool:
    """An ``ok: 0`` reply (or a write concern error) labelled as ending the transaction here."""
    if reply is None:
        return False
    labels = reply.get("errorLabels")
    concern = reply.get("writeConcernError")
    if isinstance(concern, Mapping) and isinstance(concern.get("errorLabels"), list):
        labels = [*(labels if isinstance(labels, list) else ()), *concern["errorLabels"]]
    return isinstance(labels, list) and any(label in labels for label in _UNPIN_LABELS)


def _reply_cursor_id(reply: Mapping[str, Any] | None) -> int | None:
    if reply is None or reply.get("ok") != 1:
        return None
    cursor = reply.get("cursor")
    if not isinstance(cursor, Mapping):
        return None
    value = cursor.get("id")
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else None
