"""Server cursors: results kept between ``find``/``aggregate`` and ``getMore``, per member.

Inputs: the documents a command produced (or a ``source`` callable that yields new ones, for
tailable cursors such as change streams), batch sizes and limits, ``getMore``/``killCursors``.
Outputs: the cursor reply documents ``{cursor: {id: Int64, ns, firstBatch|nextBatch}, ok: 1}``.

Batches follow mongod: the first batch holds ``batchSize`` documents (101 by default) and a
getMore batch ``batchSize`` (unlimited by default), both cut at 16 MiB of BSON; a cursor whose
documents (or limit) are exhausted is closed and answers id 0.  Cursors belong to the member
that opened them; a getMore on another member answers CursorNotFound (43).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import attrs

from mongo_sansio.bson import Int64, RawDocument, encode
from mongo_sansio.testing.engine import CommandError

__all__ = ["Cursor", "CursorRegistry", "MAX_BATCH_BYTES", "cursor_reply"]

MAX_BATCH_BYTES = 16 * 1024 * 1024
DEFAULT_FIRST_BATCH = 101

# A cursor's documents: dicts, or RawDocuments already encoded (a change stream encodes each
# event once, to check its size, and the reply copies those bytes instead of encoding again).
Document = Mapping[str, Any]
# A tailable cursor's source: called at each getMore to fetch what arrived since; the argument
# is the wall-clock seconds of the call.  Extra reply fields come back in ``Cursor.extra``.
Source = Callable[[float], Iterable[Document]]
# Called with each batch just taken (before the cursor decides whether it is exhausted); gives
# extra cursor fields for that reply (a change stream's postBatchResumeToken) and may end a
# tailable cursor by clearing ``tailable`` (a change stream after an invalidate).
OnBatch = Callable[["Cursor", list[Document]], dict[str, Any]]


@attrs.define
class Cursor:
    id: int
    ns: str
    pending: list[Document]
    limit: int = 0  # 0: no limit; counts every document handed out
    returned: int = 0
    tailable: bool = False
    await_data: bool = False
    source: Source | None = None
    lsid: bytes | None = None
    extra: dict[str, Any] = attrs.Factory(dict)  # fixed extra cursor fields of every reply
    on_batch: OnBatch | None = None
    # The Stable API parameters of the command that opened the cursor (an ApiParameters, set
    # by the dispatcher): its getMores must declare the same.
    api: Any = None

    def fields(self, batch: list[Document]) -> dict[str, Any]:
        """The extra cursor fields of the reply carrying ``batch``."""
        if self.on_batch is None:
            return self.extra
        return {**self.extra, **self.on_batch(self, batch)}

    def take(self, batch_size: int | None) -> list[Document]:
        """The next batch (``None``: no count limit), cut at 16 MiB."""
        wanted = len(self.pending) if batch_size is None or batch_size <= 0 else batch_size
        if self.limit:
            wanted = min(wanted, self.limit - self.returned)
        pending = self.pending
        count = 0
        size = 0
        while count < len(pending) and count < wanted:
            document = pending[count]
            document_size = len(document.raw) if type(document) is RawDocument else len(encode(document))
            if count and size + document_size > MAX_BATCH_BYTES:
                break
            count += 1
            size += document_size
        # (cut once: popping documents off the front one by one costs the length of what is
        # left each time, 0.7 s for a getMore of 100,000 documents)
        batch = pending[:count]
        del pending[:count]
        self.returned += count
        return batch

    @property
    def exhausted(self) -> bool:
        if self.limit and self.returned >= self.limit:
            return True
        return not self.pending and not self.tailable


def cursor_reply(cursor_id: int, ns: str, key: str, batch: list[Document], **extra: Any) -> dict[str, Any]:
    return {"cursor": {key: batch, "id": Int64(cursor_id), "ns": ns, **extra}, "ok": 1.0}


class CursorRegistry:
    """The open cursors of one member; ids come from the cluster's id source."""

    def __init__(self, new_id: Callable[[], int]) -> None:
        self._new_id = new_id
        self.cursors: dict[int, Cursor] = {}

    def open(
        self,
        ns: str,
        documents: Iterable[Document],
        *,
        batch_size: int | None,
        limit: int = 0,
        single_batch: bool = False,
        tailable: bool = False,
        await_data: bool = False,
        source: Source | None = None,
        lsid: bytes | None = None,
        extra: dict[str, Any] | None = None,
        on_batch: OnBatch | None = None,
    ) -> dict[str, Any]:
        """Make a cursor over ``documents`` and answer its first batch (id 0 when done)."""
        cursor = Cursor(0, ns, list(documents), limit=limit, tailable=tailable, await_data=await_data,
                        source=source, lsid=lsid, extra=dict(extra or {}), on_batch=on_batch)
        # batchSize 0 returns nothing now and keeps every document for the getMores.
        batch = [] if batch_size == 0 else cursor.take(DEFAULT_FIRST_BATCH if batch_size is None else batch_size)
        fields = cursor.fields(batch)
        if single_batch or cursor.exhausted:
            return cursor_reply(0, ns, "firstBatch", batch, **fields)
        cursor.id = self._new_id()
        self.cursors[cursor.id] = cursor
        return cursor_reply(cursor.id, ns, "firstBatch", batch, **fields)

    def lookup(self, cursor_id: int, ns: str) -> Cursor:
        cursor = self.cursors.get(cursor_id)
        if cursor is None:
            raise CommandError(43, "CursorNotFound", f"cursor id {cursor_id} not found")
        if cursor.ns != ns:
            raise CommandError(
                13, "Unauthorized",
                f"Requested getMore on namespace '{ns}', but cursor belongs to a different namespace {cursor.ns}",
            )
        return cursor

    def next_batch(self, cursor: Cursor, batch_size: int | None, wall: float) -> dict[str, Any]:
        """Answer a getMore (the caller decided whether to wait first)."""
        if cursor.source is not None and not cursor.pending:
            cursor.pending.extend(cursor.source(wall))
        batch = cursor.take(batch_size)
        fields = cursor.fields(batch)
        if cursor.exhausted:
            self.cursors.pop(cursor.id, None)
            return cursor_reply(0, cursor.ns, "nextBatch", batch, **fields)
        return cursor_reply(cursor.id, cursor.ns, "nextBatch", batch, **fields)

    def kill(self, ns: str, ids: list[Any]) -> dict[str, Any]:
        killed: list[Int64] = []
        missing: list[Int64] = []
        for raw in ids:
            cursor_id = int(raw) if isinstance(raw, int) and not isinstance(raw, bool) else None
            if cursor_id is None:
                raise CommandError(14, "TypeMismatch", "Field 'cursors' contains an element that is not of type long")
            cursor = self.cursors.get(cursor_id)
            if cursor is not None and cursor.ns == ns:
                del self.cursors[cursor_id]
                killed.append(Int64(cursor_id))
            else:
                missing.append(Int64(cursor_id))
        return {"cursorsKilled": killed, "cursorsNotFound": missing, "cursorsAlive": [], "cursorsUnknown": [], "ok": 1.0}

    def kill_for_sessions(self, keys: set[bytes] | None) -> None:
        """killAllSessions (``None``: every session's cursors)."""
        for cursor_id, cursor in list(self.cursors.items()):
            if cursor.lsid is not None and (keys is None or cursor.lsid in keys):
                del self.cursors[cursor_id]

    def clear(self) -> None:
        self.cursors.clear()
