"""The clients the source opens, and the executors' clients kept across tasks.

A client is never pickled: the planning side and the driver open their own from the options'
URI (:func:`open_client`).  An executor's read or write task used to open one too and close it
when the task ended, so every partition of every micro-batch paid for discovering the
deployment (a hello to each member, a pool connection's handshake) and for closing it again:
60-150 ms of a one-second trigger on a busy two-core machine, against 15-30 ms for a change
stream on a client already connected.

Spark keeps its Python workers between tasks (``spark.python.worker.reuse``, on by default), so
:func:`reused_client` keeps the client of the last few option sets per worker process and hands
it to the next task with the same URI and client options.  Kept clients are bounded
(:data:`KEPT_CLIENTS` per process) and a client no task has used for :data:`IDLE_SECONDS` is
closed when the next task comes; a client made in another process (inherited across a fork) is
never used.  A worker that Spark stops takes its clients with it.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import attrs

from .options import SourceOptions

__all__ = ["IDLE_SECONDS", "KEPT_CLIENTS", "close_kept_clients", "open_client", "open_collection", "reused_client"]

#: how many clients a worker process keeps between tasks (one per URI and client options)
KEPT_CLIENTS = 2
#: a kept client unused this long is closed when the next task comes
IDLE_SECONDS = 60.0


def open_client(options: SourceOptions) -> Any:
    """A client for the source's ``uri`` with its client-wide options (``readPreference``)."""
    from ..blocking import MongoClient

    # our value classes, whatever else the process imported (the schema and Arrow conversions
    # know ours)
    return MongoClient(options.uri, pymongo_types=False, **options.client_options())


@attrs.define
class _Kept:
    client: Any
    pid: int
    users: int = 0
    last_used: float = 0.0


_lock = threading.Lock()
_kept: dict[tuple[Any, ...], _Kept] = {}


def _key(options: SourceOptions) -> tuple[Any, ...]:
    return (options.uri, tuple(sorted(options.client_options().items())))


@contextmanager
def reused_client(options: SourceOptions) -> Iterator[Any]:
    """The worker's client for these options (made if there is none), for one task."""
    key, pid = _key(options), os.getpid()
    with _lock:
        now = time.monotonic()
        kept = _kept.get(key)
        if kept is None or kept.pid != pid:
            kept = _kept[key] = _Kept(open_client(options), pid)
        kept.users += 1
        retired = _retire(now, keep=key, pid=pid)
    _close(retired)
    try:
        yield kept.client
    finally:
        with _lock:
            kept.users -= 1
            kept.last_used = time.monotonic()


def _retire(now: float, keep: tuple[Any, ...], pid: int) -> list[Any]:
    """Take out of the table what is idle too long, inherited, or beyond the bound (oldest
    first); the caller closes the clients of this process outside the lock."""
    retired: list[Any] = []
    for key, kept in list(_kept.items()):
        if kept.pid != pid:
            del _kept[key]  # another process's sockets: dropped, never used or closed here
        elif key != keep and kept.users == 0 and now - kept.last_used > IDLE_SECONDS:
            retired.append(_kept.pop(key).client)
    idle = sorted((kept.last_used, key) for key, kept in _kept.items() if key != keep and kept.users == 0)
    while len(_kept) > KEPT_CLIENTS and idle:
        retired.append(_kept.pop(idle.pop(0)[1]).client)
    return retired


def _close(clients: list[Any]) -> None:
    for client in clients:
        try:
            client.close()
        except Exception:  # noqa: BLE001 - closing a client we are done with must not fail a task
            pass


def close_kept_clients() -> None:
    """Close every kept client of this process that no task is using (tests, shutdown)."""
    with _lock:
        pid = os.getpid()
        idle = [_kept.pop(key) for key, kept in list(_kept.items()) if kept.users == 0]
        retired = [kept.client for kept in idle if kept.pid == pid]  # (another process's: dropped)
    _close(retired)


@contextmanager
def open_collection(options: SourceOptions) -> Iterator[Any]:
    """The source's collection on the worker's kept client (:func:`reused_client`), with the
    options' write concern."""
    from mongo_sansio.ops.write_concern import WriteConcern

    options.single_collection("batch reads and writes")
    with reused_client(options) as client:
        collection = client[options.database][options.collection]
        concern = options.write_concern_document()
        if concern is not None:
            collection = collection.with_options(write_concern=WriteConcern(**concern))
        yield collection
