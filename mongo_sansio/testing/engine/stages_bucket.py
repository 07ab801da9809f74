"""The ``$bucket`` and ``$sortByCount`` stages, built on $group as mongod desugars them.

``$bucket: {groupBy, boundaries, default, output}`` puts each document in the bucket
``[boundaries[i], boundaries[i+1])`` its ``groupBy`` value falls in (compared in BSON order,
under the collation, as the ``$switch`` of ``$gte``/``$lt`` mongod turns it into), or in the
``default`` bucket; a value in no bucket without a ``default`` fails the aggregation with the
``$switch``'s 40066.  The buckets come out sorted by ``_id`` (the lower boundary, or the
default value), each with ``output``'s accumulators (``{count: {$sum: 1}}`` when there is no
``output``).  ``$sortByCount: <expression>`` is ``$group: {_id: <expression>, count: {$sum:
1}}`` then ``$sort: {count: -1}``.  The parse errors are mongod's codes (40191-40202 for
$bucket, 40147-40149 for $sortByCount; messages from memory).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from mongo_sansio.testing.engine.errors import location
from mongo_sansio.testing.engine.expressions import COLLATION_VARIABLE, compile_expression
from mongo_sansio.testing.engine.order import MISSING, canonical_rank, compare, render, type_name

__all__ = ["BUCKET_STAGES"]

Documents = list[dict[str, Any]]
Stage = Callable[[Documents], Documents]
Resolver = Callable[[str], Iterable[Mapping[str, Any]]]

_BUCKET_FIELDS = ("groupBy", "boundaries", "default", "output")


def _is_expression(value: Any) -> bool:
    """A $-prefixed path or an operator expression object (what groupBy must be)."""
    if isinstance(value, str):
        return value.startswith("$")
    return isinstance(value, Mapping) and len(value) == 1 and str(next(iter(value))).startswith("$")


def _constant(value: Any) -> tuple[bool, Any]:
    """(whether ``value`` is a constant expression, its value)."""
    if isinstance(value, str) and value.startswith("$"):
        return False, None
    try:
        result = compile_expression(value)({}, {})
    except Exception:  # noqa: BLE001 - an expression that needs a document is not constant
        return False, None
    return result is not MISSING, result


def _boundaries(raw: Any) -> list[Any]:
    if not isinstance(raw, list):
        raise location(40200, f"The $bucket 'boundaries' field must be an array, but found type: {type_name(raw)}.")
    if len(raw) < 2:
        raise location(40192, f"The $bucket 'boundaries' field must have at least 2 values, but found {len(raw)} value(s).")
    values = []
    for item in raw:
        constant, value = _constant(item)
        if not constant:
            raise location(40191, f"The $bucket 'boundaries' field must be an array of constant values, but found value: {render(item)}.")
        values.append(value)
    for i in range(1, len(values)):
        before, after = values[i - 1], values[i]
        if canonical_rank(before) != canonical_rank(after):
            raise location(40193, "All values in the the 'boundaries' option to $bucket must have the same type. "
                                  f"Found conflicting types {type_name(before)} and {type_name(after)}.")
        if compare(before, after) >= 0:
            raise location(40194, "The 'boundaries' option to $bucket must be sorted in ascending order, but "
                                  f"elements {i - 1} and {i} are not in ascending order ({render(before)} is not "
                                  f"less than {render(after)}).")
    return values


def _bucket(argument: Any, lookup: Resolver | None, variables: dict[str, Any]) -> Stage:
    from mongo_sansio.testing.engine.aggregate import (  # (it imports this module)
        group_stage,
        sort_documents,
    )

    if not isinstance(argument, Mapping):
        raise location(40201, f"Argument to $bucket stage must be an object, but found type: {type_name(argument)}.")
    for key in argument:
        if key not in _BUCKET_FIELDS:
            raise location(40197, f"Unrecognized option to $bucket: {key}.")
    if "groupBy" not in argument or "boundaries" not in argument:
        raise location(40198, "$bucket requires 'groupBy' and 'boundaries' to be specified.")
    if not _is_expression(argument["groupBy"]):
        raise location(40202, "The $bucket 'groupBy' field must be defined as a $-prefixed path or an expression, "
                              f"but found: {render(argument['groupBy'])}.")
    group_by = compile_expression(argument["groupBy"])
    boundaries = _boundaries(argument["boundaries"])
    has_default = "default" in argument
    default: Any = None
    if has_default:
        constant, default = _constant(argument["default"])
        if not constant:
            raise location(40195, "The $bucket 'default' field must be a constant expression, but found: "
                                  f"{render(argument['default'])}.")
        if canonical_rank(default) == canonical_rank(boundaries[0]) and not (
            compare(default, boundaries[0]) < 0 or compare(default, boundaries[-1]) >= 0
        ):
            raise location(40199, "The $bucket 'default' field must be less than the lowest boundary or greater "
                                  "than or equal to the highest boundary.")
    output = argument.get("output", {"count": {"$sum": 1}})
    if not isinstance(output, Mapping):
        raise location(40196, f"The $bucket 'output' field must be an object, but found type: {type_name(output)}.")
    collation = variables.get(COLLATION_VARIABLE)

    def bucket_of(root: Any, scope: Mapping[str, Any]) -> Any:
        value = group_by(root, scope)
        if value is not MISSING:
            for lower, upper in zip(boundaries, boundaries[1:], strict=False):
                if compare(value, lower, collation) >= 0 and compare(value, upper, collation) < 0:
                    return lower
        if not has_default:
            raise location(40066, "$switch could not find a matching branch for an input, and no default was specified.")
        return default

    grouped = group_stage(bucket_of, output, variables)
    return lambda docs: sort_documents(grouped(docs), {"_id": 1}, collation)


def _sort_by_count(argument: Any, lookup: Resolver | None, variables: dict[str, Any]) -> Stage:
    from mongo_sansio.testing.engine.aggregate import (  # (it imports this module)
        group_stage,
        sort_documents,
    )

    if isinstance(argument, Mapping):
        if not _is_expression(argument):
            raise location(40147, "the sortByCount field must be defined as a $-prefixed path or an expression")
    elif isinstance(argument, str):
        if not argument.startswith("$"):
            raise location(40148, "the sortByCount field must be defined as a $-prefixed path or an expression")
    else:
        raise location(40149, "the sortByCount field must be specified as a string or as an object")
    grouped = group_stage(compile_expression(argument), {"count": {"$sum": 1}}, variables)
    return lambda docs: sort_documents(grouped(docs), {"count": -1})


BUCKET_STAGES: dict[str, Callable[[Any, Resolver | None, dict[str, Any]], Stage]] = {
    "$bucket": _bucket,
    "$sortByCount": _sort_by_count,
}
