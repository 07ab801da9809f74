"""Reassembling change events that the server split with ``$changeStreamSplitLargeEvent``.

Theory of operation
-------------------
A change event larger than 16 MiB cannot travel as one BSON document.  With the
``$changeStreamSplitLargeEvent`` stage last in the pipeline (MongoDB 6.0.9+ / 7.0+) the server
sends it as fragments: each fragment is a document holding some of the event's top-level fields,
its own resume token in ``_id`` and ``splitEvent: {fragment: n, of: total}``, numbered from 1,
in order, consecutively.

:class:`FragmentAssembler` takes fragments one at a time and gives back the whole event once the
last one arrived: the fields of every fragment in order, without ``splitEvent``, with the last
fragment's ``_id`` (the token that resumes *after* the whole event).  The event is a ``dict``
holding the fragments' values as they came (RawDocuments stay lazy).

Inputs: fragments (mappings).  Outputs: None while fragments are missing, then the merged event.
A fragment out of order, a repeated number, a changed total, a ``splitEvent`` that is not
``{fragment, of}`` with ``1 <= fragment <= of``, or a field that two fragments both carry raise
:class:`~mongo_sansio.cursors.errors.SplitEventError` (the peer's fault: a
:class:`~mongo_sansio.errors.RemoteProtocolError`).
After an error the assembler holds nothing; :meth:`FragmentAssembler.reset` drops a partial
event (a change stream does that when it resumes, because the resume token it uses is the one
before the split event, so every fragment comes again).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mongo_sansio.cursors.errors import SplitEventError

__all__ = ["SplitEventError", "FragmentAssembler", "is_fragment", "fragment_position"]


def is_fragment(document: Mapping[str, Any]) -> bool:
    """Whether ``document`` is a fragment of a split event (it carries ``splitEvent``)."""
    return "splitEvent" in document


def fragment_position(document: Mapping[str, Any]) -> tuple[int, int]:
    """``(fragment, of)`` of a fragment, checked: integers with ``1 <= fragment <= of``."""
    split = document.get("splitEvent")
    if not isinstance(split, Mapping):
        raise SplitEventError(f"splitEvent must be a document, got {split!r}")
    number, total = split.get("fragment"), split.get("of")
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (number, total)):
        raise SplitEventError(f"splitEvent must hold integer 'fragment' and 'of', got {split!r}")
    assert isinstance(number, int) and isinstance(total, int)
    if not 1 <= number <= total:
        raise SplitEventError(f"splitEvent fragment {number} of {total} is out of range")
    return number, total


class FragmentAssembler:
    """Collects the fragments of one split event at a time."""

    def __init__(self) -> None:
        self._parts: list[Mapping[str, Any]] = []
        self._total = 0

    @property
    def pending(self) -> bool:
        """Some fragments of an event arrived, not all of them."""
        return bool(self._parts)

    @property
    def received(self) -> int:
        return len(self._parts)

    def reset(self) -> None:
        """Drop a partial event."""
        self._parts = []
        self._total = 0

    def add(self, fragment: Mapping[str, Any]) -> dict[str, Any] | None:
        """Take the next fragment; the merged event when it was the last one, else None."""
        try:
            if "_id" not in fragment:
                raise SplitEventError("a fragment of a split event has no _id (resume token)")
            number, total = fragment_position(fragment)
            expected = len(self._parts) + 1
            if self._parts and total != self._total:
                raise SplitEventError(
                    f"fragment {number} says the event has {total} fragments, "
                    f"earlier ones said {self._total}"
                )
            if number != expected:
                raise SplitEventError(
                    f"expected fragment {expected} of {total}, got fragment {number}"
                )
        except SplitEventError:
            self.reset()
            raise
        self._parts.append(fragment)
        self._total = total
        if number < total:
            return None
        parts = self._parts
        self.reset()
        return _merge(parts)


def _merge(parts: list[Mapping[str, Any]]) -> dict[str, Any]:
    event: dict[str, Any] = {}
    for part in parts:
        for name, value in part.items():
            if name in ("_id", "splitEvent"):
                continue
            if name in event:
                raise SplitEventError(f"two fragments of one split event both carry {name!r}")
            event[name] = value
    # The last fragment's token resumes after the whole event; put it first, as in an event.
    return {"_id": parts[-1]["_id"], **event}
