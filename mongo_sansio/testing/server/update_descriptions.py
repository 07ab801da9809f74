"""A change event's ``updateDescription``, worked out from the pre- and post-image of an update.

Inputs: the document before and after an update (the oplog entry's ``before`` and ``after``)
and whether to disambiguate paths (a stream opened with ``showExpandedEvents``).  Output:
``{updatedFields, removedFields, truncatedArrays[, disambiguatedPaths]}`` as mongod 7.0
reports it (:func:`update_description`).  Comparisons are BSON equality, not Python's.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any

from mongo_sansio.bson import encode

__all__ = ["bson_equal", "update_description"]


_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_DOUBLE = struct.Struct("<d")


def bson_equal(a: Any, b: Any) -> bool:
    """BSON equality: types and field order matter (1 and 1.0 differ), unlike Python's ==.

    Plain strings, ints and floats are compared by their element type and payload without
    encoding them (encoding each field of an update's pre- and post-image twice was most of
    the cost of its event); anything else, or a value the encoder refuses (a lone
    surrogate, an int past int64), goes through the encoder, which raises as it did."""
    plain_a = _plain(a)
    if plain_a is not None:
        plain_b = _plain(b)
        if plain_b is not None:
            return plain_a == plain_b
    return encode({"v": a}) == encode({"v": b})


def _plain(value: Any) -> tuple[int, Any] | None:
    """The BSON element type and payload of a plain str, int or float, as the encoder writes
    them (UTF-8; int32 or int64 by size; the 8 bytes of a double, so 0.0 and -0.0 differ),
    or None for any other value."""
    kind = type(value)
    if kind is str:
        try:
            return 0x02, value.encode()
        except UnicodeEncodeError:
            return None
    if kind is int:
        if _INT32_MIN <= value <= _INT32_MAX:
            return 0x10, value
        return (0x12, value) if _INT64_MIN <= value <= _INT64_MAX else None
    if kind is float:
        return 0x01, _DOUBLE.pack(value)
    return None


def update_description(
    before: Mapping[str, Any], after: Mapping[str, Any], *, disambiguate: bool = False
) -> dict[str, Any]:
    """The ``updateDescription`` of an update from the pre- and post-image.

    Sub-documents are compared field by field (dotted paths, as a ``$set`` of ``a.b`` reports);
    an array that only grew or shrank reports its changed elements and ``truncatedArrays``;
    any other array change replaces the whole array.  With ``disambiguate`` (a stream opened
    with ``showExpandedEvents``, mongod 6.1+) ``disambiguatedPaths`` maps each reported path
    that a reader could not split unaided -- one with a field name that is numeric or contains
    a dot -- to its components: field names as strings, array indexes as ints.
    """
    diff = _Diff()
    diff.document(before, after, ())
    description: dict[str, Any] = {
        "updatedFields": diff.updated, "removedFields": diff.removed, "truncatedArrays": diff.truncated,
    }
    if disambiguate:
        description["disambiguatedPaths"] = diff.ambiguous
    return description


Component = str | int


def _dotted(components: tuple[Component, ...]) -> str:
    return ".".join(str(c) for c in components)


class _Diff:
    """The differences of two documents, collected as dotted paths."""

    def __init__(self) -> None:
        self.updated: dict[str, Any] = {}
        self.removed: list[str] = []
        self.truncated: list[dict[str, Any]] = []
        self.ambiguous: dict[str, list[Component]] = {}

    def _path(self, components: tuple[Component, ...]) -> str:
        path = _dotted(components)
        if any(isinstance(c, str) and (c.isdigit() or "." in c) for c in components):
            self.ambiguous[path] = list(components)
        return path

    def document(self, before: Mapping[str, Any], after: Mapping[str, Any],
                 prefix: tuple[Component, ...]) -> None:
        for name in before:
            if name not in after:
                self.removed.append(self._path((*prefix, name)))
        for name, value in after.items():
            components = (*prefix, name)
            if name not in before:
                self.updated[self._path(components)] = value
                continue
            old = before[name]
            if bson_equal(old, value):
                continue
            if _compatible(old, value):
                self.document(old, value, components)
            elif isinstance(old, list) and isinstance(value, list):
                self.array(old, value, components)
            else:
                self.updated[self._path(components)] = value

    def array(self, old: list[Any], new: list[Any], components: tuple[Component, ...]) -> None:
        if len(new) < len(old):
            self.truncated.append({"field": self._path(components), "newSize": len(new)})
        for index, value in enumerate(new):
            if index < len(old) and bson_equal(old[index], value):
                continue
            if index < len(old) and _compatible(old[index], value):
                # mongod's oplog diffs reach into an element document ($set of "a.0.b").
                self.document(old[index], value, (*components, index))
            else:
                self.updated[self._path((*components, index))] = value


def _compatible(old: Any, new: Any) -> bool:
    """Whether ``new`` is ``old`` changed field by field (its surviving fields keep their order)."""
    return isinstance(old, Mapping) and isinstance(new, Mapping) and list(old)[: len(new)] == [
        k for k in new if k in old
    ]
