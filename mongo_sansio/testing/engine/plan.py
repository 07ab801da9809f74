"""Which index mongod's planner would scan for a find: what ``returnKey`` reports.

The engine answers every query by scanning its documents; only ``returnKey`` (the index keys
of the index the plan used, ``{}`` when it scanned the collection) lets a client see the plan.
This module stands in for the planner's choice with mongod's rules where they are plain, and a
fixed order where mongod would race candidate plans (the multi-planner):

* a ``hint`` names the index (``{$natural: ...}``: the collection scan);
* an index whose first field the filter constrains is a candidate (mongod builds an index
  scan for every such index and never falls back to a collection scan when one exists); the
  ``_id`` index wins an equality on ``_id`` (mongod's IDHACK plan); otherwise the candidate
  constraining the most leading fields, then the one giving the sort, then the first created;
* with no candidate, an index whose key pattern starts with the sort (or its reverse);
* else the collection scan.

Pure: index specs and the command's filter, sort and hint in, an index spec (or None) out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mongo_sansio.testing.engine.order import is_number, numeric_value

__all__ = ["chosen_index", "hint_names_an_index"]

# predicates no index bounds can serve (the planner leaves them to the fetch)
_UNINDEXABLE = frozenset({"$size", "$where", "$expr", "$text"})


def chosen_index(
    indexes: Sequence[Mapping[str, Any]],
    filter: Mapping[str, Any] | None,  # noqa: A002
    sort: Mapping[str, Any] | None,
    hint: Any = None,
) -> Mapping[str, Any] | None:
    """The spec of the index the planner would scan, or None for a collection scan."""
    if not _no_hint(hint):
        return _hinted(indexes, hint)
    fields = _constrained_fields(filter or {})
    candidates = [spec for spec in indexes if _key_fields(spec)[0] in fields]
    if candidates:
        if _id_equality(filter or {}):
            for spec in candidates:
                if _key_fields(spec) == ["_id"]:
                    return spec
        return max(
            candidates,
            key=lambda spec: (_leading_constrained(spec, fields), _gives_sort(spec, sort),
                              -indexes.index(spec)),
        )
    for spec in indexes:
        if sort and _gives_sort(spec, sort):
            return spec
    return None


def hint_names_an_index(indexes: Sequence[Mapping[str, Any]], hint: Any) -> bool:
    """Whether ``hint`` may be used: none, the collection scan (``{$natural: ...}``), or the
    name or key pattern of one of ``indexes`` (mongod refuses any other with BadValue)."""
    return _no_hint(hint) or _natural(hint) or _hinted(indexes, hint) is not None


def _no_hint(hint: Any) -> bool:
    return hint is None or hint == {} or hint == ""


def _natural(hint: Any) -> bool:
    """A hint for the collection scan (``{$natural: 1}`` or ``-1``)."""
    return isinstance(hint, Mapping) and "$natural" in hint


def _hinted(indexes: Sequence[Mapping[str, Any]], hint: Any) -> Mapping[str, Any] | None:
    if _natural(hint):
        return None
    for spec in indexes:
        if spec.get("name") == hint or (isinstance(hint, Mapping) and _same_key(spec["key"], hint)):
            return spec
    return None


def _same_key(key: Mapping[str, Any], other: Mapping[str, Any]) -> bool:
    return list(key) == list(other) and all(
        _direction(key[f]) == _direction(other[f]) for f in key
    )


def _direction(value: Any) -> Any:
    return numeric_value(value) if is_number(value) else value


def _key_fields(spec: Mapping[str, Any]) -> list[str]:
    return list(spec["key"])


def _constrained_fields(filter: Mapping[str, Any]) -> set[str]:  # noqa: A002
    """The paths the filter constrains in a way index bounds can serve (under $and too; an
    $or needs every branch indexed, which this stand-in does not try)."""
    fields: set[str] = set()
    for key, value in filter.items():
        if key == "$and" and isinstance(value, list):
            for clause in value:
                if isinstance(clause, Mapping):
                    fields |= _constrained_fields(clause)
        elif not key.startswith("$"):
            operators = set(value) if _is_operator_document(value) else set()
            if not operators & _UNINDEXABLE:
                fields.add(key)
    return fields


def _is_operator_document(value: Any) -> bool:
    return isinstance(value, Mapping) and bool(value) and str(next(iter(value))).startswith("$")


def _id_equality(filter: Mapping[str, Any]) -> bool:  # noqa: A002
    if list(filter) != ["_id"]:
        return False
    value = filter["_id"]
    return not _is_operator_document(value) or list(value) == ["$eq"]


def _leading_constrained(spec: Mapping[str, Any], fields: set[str]) -> int:
    count = 0
    for field in _key_fields(spec):
        if field not in fields:
            break
        count += 1
    return count


def _gives_sort(spec: Mapping[str, Any], sort: Mapping[str, Any] | None) -> bool:
    """The index scanned forwards or backwards yields ``sort``'s order."""
    if not sort:
        return False
    key = list(spec["key"].items())
    wanted = list(sort.items())
    if len(wanted) > len(key) or any(k[0] != w[0] for k, w in zip(key, wanted, strict=False)):
        return False
    if not all(is_number(k[1]) and is_number(w[1]) for k, w in zip(key, wanted, strict=False)):
        return False
    signs = {
        (numeric_value(k[1]) > 0) == (numeric_value(w[1]) > 0)
        for k, w in zip(key, wanted, strict=False)
    }
    return len(signs) == 1
