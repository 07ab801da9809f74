"""Server sessions and their pool (Driver Sessions spec, "Server Session Pool").

A :class:`ServerSession` is the server-side half of a session: an ``lsid`` (a UUID the client
draws), the last time it was used, the transaction number of its latest retryable write or
transaction, and whether a network error made it ``dirty`` (the server may still hold state for
it, so it is never reused).

:class:`ServerSessionPool` keeps ended sessions for reuse, newest first (LIFO: the session used
last is the one the server is least likely to have expired):

* :meth:`~ServerSessionPool.acquire` -- the newest pooled session that is not about to expire
  (less than one minute left of the server's ``logicalSessionTimeoutMinutes``), discarding the
  stale ones it meets; a new session when none is left.
* :meth:`~ServerSessionPool.release` -- back to the pool unless dirty or about to expire (the
  stale ones at the old end are pruned at the same time).
* :meth:`~ServerSessionPool.drain` -- every pooled ``lsid``, in batches of at most 10,000, for the
  ``endSessions`` commands a client sends when it closes.

Inputs: the current time (seconds, monotonic) and the deployment's session timeout (minutes),
randomness as 16 bytes for each new ``lsid``.  Outputs: sessions, ``endSessions`` batches.
The pool is pure: no clock, no randomness of its own, no locks (the client's lock guards it).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from typing import Any, Final

from mongo_sansio.bson import Binary

__all__ = ["ServerSession", "ServerSessionPool", "END_SESSIONS_BATCH", "new_session_id"]

#: at most this many lsids in one endSessions command (the spec's limit)
END_SESSIONS_BATCH: Final = 10_000

#: a pooled session with less than this many seconds left before the server would expire it is
#: not handed out again (the spec's one minute)
_EXPIRY_MARGIN: Final = 60.0

_UUID_SUBTYPE: Final = 4


def new_session_id(random16: bytes) -> dict[str, Any]:
    """An ``lsid`` document ``{"id": UUID}`` from 16 random bytes (made a version 4 UUID)."""
    if len(random16) < 16:
        raise ValueError("a session id needs 16 random bytes")
    raw = bytearray(random16[:16])
    raw[6] = (raw[6] & 0x0F) | 0x40  # version 4
    raw[8] = (raw[8] & 0x3F) | 0x80  # RFC 4122 variant
    return {"id": Binary(bytes(raw), _UUID_SUBTYPE)}


class ServerSession:
    """One server session (see the module docstring)."""

    __slots__ = ("session_id", "last_use", "txn_number", "dirty")

    def __init__(self, session_id: dict[str, Any], now: float) -> None:
        self.session_id = session_id
        self.last_use = now
        self.txn_number = 0
        self.dirty = False

    def advance_txn_number(self) -> int:
        """The next transaction number (for a retryable write or a transaction)."""
        self.txn_number += 1
        return self.txn_number

    def timed_out(self, now: float, timeout_minutes: int | None) -> bool:
        """Whether the server may expire this session within the next minute."""
        if timeout_minutes is None:
            return False
        return now - self.last_use > timeout_minutes * 60.0 - _EXPIRY_MARGIN

    def __repr__(self) -> str:
        return f"ServerSession(txn_number={self.txn_number}, dirty={self.dirty})"


class ServerSessionPool:
    """Ended server sessions kept for reuse, newest first (see the module docstring)."""

    def __init__(self, random16: Callable[[], bytes]) -> None:
        self._random16 = random16
        self._sessions: deque[ServerSession] = deque()  # newest at the left
        self.generation = 0

    def __len__(self) -> int:
        return len(self._sessions)

    def __iter__(self) -> Iterator[ServerSession]:
        return iter(self._sessions)

    def acquire(self, now: float, timeout_minutes: int | None) -> ServerSession:
        """The newest pooled session still fresh enough, else a new one."""
        while self._sessions:
            session = self._sessions.popleft()
            if not session.timed_out(now, timeout_minutes):
                return session
        return ServerSession(new_session_id(self._random16()), now)

    def release(self, session: ServerSession, now: float, timeout_minutes: int | None) -> None:
        """Return ``session`` after use: pooled (newest) unless dirty or about to expire.
        ``last_use`` is not touched: the server counts from the last command sent with the
        session (the client stamps it then), not from the moment it is given back."""
        while self._sessions and self._sessions[-1].timed_out(now, timeout_minutes):
            self._sessions.pop()
        if session.dirty or session.timed_out(now, timeout_minutes):
            return
        self._sessions.appendleft(session)

    def drain(self) -> list[list[dict[str, Any]]]:
        """Empty the pool; its lsids in batches for ``endSessions``."""
        ids = [session.session_id for session in self._sessions]
        self._sessions.clear()
        self.generation += 1
        return [ids[i : i + END_SESSIONS_BATCH] for i in range(0, len(ids), END_SESSIONS_BATCH)]
