"""Chunks: cutting an upload's bytes into numbered chunk documents, and checking a download's
chunks against its files document.

* :class:`ChunkWriter` -- bytes in any pieces in; chunk documents (``files_id``, ``n``,
  ``data``) out, each exactly ``chunk_size`` bytes but the last, numbered from 0, gathered into
  insert batches of about :data:`BATCH_BYTES`.  An empty file has no chunk at all.
* :class:`ChunkReader` -- chunk documents in ``n`` order in; their data out, after the spec's
  checks: the chunk numbered as expected (else a chunk is missing), of the expected size (every
  chunk ``chunkSize`` bytes, the last the remainder), no chunk with data past the last.  Any
  failure is :class:`~.errors.CorruptGridFile`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .errors import CorruptGridFile

__all__ = ["BATCH_BYTES", "ChunkReader", "ChunkWriter", "chunk_count"]

#: chunk data sent per insert command at most (well under a message's 48 MB; the wire layer
#: splits further by the server's limits)
BATCH_BYTES = 16 * 1024 * 1024


def chunk_count(length: int, chunk_size: int) -> int:
    """How many chunks a file of ``length`` bytes has."""
    return -(-length // chunk_size)


class ChunkWriter:
    """Cuts an upload into chunk documents (see the module docstring)."""

    def __init__(self, files_id: Any, chunk_size: int) -> None:
        self.files_id = files_id
        self.chunk_size = chunk_size
        self.length = 0
        self._partial = bytearray()
        self._pending: list[dict[str, Any]] = []
        self._pending_bytes = 0
        self._next_n = 0

    def _cut(self, data: bytes) -> None:
        self._pending.append({"files_id": self.files_id, "n": self._next_n, "data": data})
        self._pending_bytes += len(data)
        self._next_n += 1

    def write(self, data: bytes | bytearray | memoryview) -> list[dict[str, Any]]:
        """Take ``data``; a batch of chunk documents to insert now once the whole chunks
        waiting reach :data:`BATCH_BYTES` (else an empty list)."""
        view = memoryview(data).cast("B")
        self.length += len(view)
        size = self.chunk_size
        start = 0
        if self._partial:
            start = min(size - len(self._partial), len(view))
            self._partial += view[:start]
            if len(self._partial) == size:
                self._cut(bytes(self._partial))
                self._partial = bytearray()
        while len(view) - start >= size:
            self._cut(bytes(view[start : start + size]))
            start += size
        self._partial += view[start:]
        if self._pending_bytes >= BATCH_BYTES:
            return self._take()
        return []

    def finish(self) -> list[dict[str, Any]]:
        """The chunk documents still to insert, the short last one included."""
        if self._partial:
            self._cut(bytes(self._partial))
            self._partial = bytearray()
        return self._take()

    def _take(self) -> list[dict[str, Any]]:
        batch, self._pending, self._pending_bytes = self._pending, [], 0
        return batch


class ChunkReader:
    """Checks a download's chunks, given in ``n`` order (see the module docstring).

    ``length`` and ``chunk_size`` come from the files document; a document whose values are
    not usable numbers is corrupt.  ``start`` is the first chunk wanted (a seek)."""

    def __init__(self, length: Any, chunk_size: Any, start: int = 0) -> None:
        if not _is_int(length) or length < 0:
            raise CorruptGridFile(f"the files document's length is not a size: {length!r}")
        if not _is_int(chunk_size) or chunk_size <= 0:
            if length == 0:
                chunk_size = 1  # an empty file reads no chunk: its chunkSize is never used
            else:
                raise CorruptGridFile(f"the files document's chunkSize is invalid: {chunk_size!r}")
        self.length = int(length)
        self.chunk_size = int(chunk_size)
        self.expected = chunk_count(self.length, self.chunk_size)
        self.next_n = start

    @property
    def done(self) -> bool:
        """Whether every expected chunk has been read."""
        return self.next_n >= self.expected

    def expected_size(self, n: int) -> int:
        """The size of chunk ``n``: ``chunkSize`` but for the last."""
        if n < self.expected - 1:
            return self.chunk_size
        return self.length - self.chunk_size * (self.expected - 1)

    def accept(self, chunk: Mapping[str, Any]) -> bytes:
        """The data of the next chunk, ``chunk`` (CorruptGridFile when it is not what the
        files document says comes next)."""
        n = chunk.get("n")
        data = chunk.get("data")
        if not _is_int(n):
            raise CorruptGridFile(f"a chunk's n is not a number: {n!r}")
        if not isinstance(data, bytes | bytearray):
            raise CorruptGridFile(f"chunk #{n}'s data is not binary: {type(data).__name__}")
        if self.done:
            if data:
                raise CorruptGridFile(
                    f"extra chunk: expected {self.expected} chunks, found chunk #{n} with data"
                )
            return b""  # an empty chunk past the end (an empty file's, written by old drivers)
        if n != self.next_n:
            raise CorruptGridFile(f"missing chunk: expected chunk #{self.next_n}, found #{n}")
        size = self.expected_size(int(n))
        if len(data) != size:
            raise CorruptGridFile(
                f"chunk #{n} has the wrong size: expected {size} bytes, found {len(data)}"
            )
        self.next_n += 1
        return bytes(data)

    def end(self) -> None:
        """The chunks ran out: CorruptGridFile when some expected chunk never came."""
        if not self.done:
            raise CorruptGridFile(f"missing chunk: expected chunk #{self.next_n}, found none")


def _is_int(value: Any) -> bool:
    # a numeric document field may come as a double from other drivers (length: 10.0)
    if isinstance(value, bool):
        return False
    if isinstance(value, float):
        return value.is_integer()
    return isinstance(value, int)
