"""Watching a blocking ``MongoClient``'s core from a test: every event it publishes, and what its
pools hold.

:class:`Tap` puts itself in front of the core's ``publish`` hook (``client._engine.core``; the
hook the engine injected, None when nobody listens, is still called after it) under the
runtime's lock, so it sees CMAP, SDAM and command events in the order the core emits them.  It
keeps, per server, how many connections are checked out and how many exist, and the highest
each reached.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from mongo_sansio.cmap.events import (
    ConnectionCheckedIn,
    ConnectionCheckedOut,
    ConnectionClosed,
    ConnectionCreated,
)

__all__ = ["Tap", "mongo_sansio_threads", "wait_for"]


class Tap:
    """The events a client's core publishes (see the module docstring)."""

    def __init__(self, client: Any) -> None:
        engine = client._engine
        self.core = engine.core
        self.events: list[object] = []
        self.checked_out: Counter[str] = Counter()
        self.connections: Counter[str] = Counter()
        self.max_checked_out: Counter[str] = Counter()
        self.max_connections: Counter[str] = Counter()
        self._lock = threading.Lock()
        with engine.runtime.lock:
            self._next: Callable[[object], None] | None = self.core.publish
            self.core.publish = self

    def __call__(self, event: object) -> None:
        with self._lock:
            self.events.append(event)
            address = getattr(event, "address", None)
            if isinstance(event, ConnectionCheckedOut):
                self.checked_out[address] += 1
            elif isinstance(event, ConnectionCheckedIn):
                self.checked_out[address] -= 1
            elif isinstance(event, ConnectionCreated):
                self.connections[address] += 1
            elif isinstance(event, ConnectionClosed):
                self.connections[address] -= 1
            for key, value in self.checked_out.items():
                self.max_checked_out[key] = max(self.max_checked_out[key], value)
            for key, value in self.connections.items():
                self.max_connections[key] = max(self.max_connections[key], value)
        if self._next is not None:
            self._next(event)

    def of(self, kind: type) -> list[Any]:
        with self._lock:
            return [e for e in self.events if isinstance(e, kind)]

    def commands(self, name: str) -> list[Any]:
        from mongo_sansio.client.events import CommandStartedEvent

        return [e for e in self.of(CommandStartedEvent) if e.command_name == name]


def mongo_sansio_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("mongo-sansio")]


def wait_for(predicate: Callable[[], object], timeout: float, interval: float = 0.01) -> float:
    """Poll ``predicate`` until true; returns the seconds it took (AssertionError on timeout)."""
    start = time.monotonic()
    while not predicate():
        elapsed = time.monotonic() - start
        if elapsed > timeout:
            raise AssertionError(f"not true after {timeout} s")
        time.sleep(interval)
    return time.monotonic() - start
