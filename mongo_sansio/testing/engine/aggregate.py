"""The aggregation pipeline over an iterable of documents.

:func:`run_pipeline` parses every stage first (a bad stage fails before any document is read,
as mongod does) and then runs them in order.  ``$lookup`` reads the foreign collection through
the ``lookup`` callable it is given (collection name -> documents), which keeps this module
pure and unaware of databases.  ``$changeStream`` is not handled here: the server's handler
owns change streams and passes the rest of such a pipeline to this runner.  A pipeline run with
a :class:`~.collation.Collation` compares strings under it wherever mongod's does: $match,
$sort, $group keys and the $min, $max and $addToSet accumulators, expressions, $lookup.
"""

from __future__ import annotations

import datetime
import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from mongo_sansio.bson import Decimal128
from mongo_sansio.testing.engine.errors import CommandError, bad_value, location
from mongo_sansio.testing.engine.expressions import (
    COLLATION_VARIABLE,
    Compiled,
    collation_variables,
    compile_expression,
)
from mongo_sansio.testing.engine.numbers import binary_arithmetic
from mongo_sansio.testing.engine.order import (
    MISSING,
    array_sort_value,
    compare,
    compare_by_spec,
    copy_value,
    hashable_key,
    is_number,
    numeric_value,
    render,
    whole_number,
)
from mongo_sansio.testing.engine.paths import get_path, lookup_leaves, set_path, split_path
from mongo_sansio.testing.engine.projection import Projection
from mongo_sansio.testing.engine.query import compile_filter
from mongo_sansio.testing.engine.stages_bucket import BUCKET_STAGES
from mongo_sansio.testing.engine.stages_lookup import LOOKUP_STAGES
from mongo_sansio.testing.engine.stages_spark import SPARK_STAGES
from mongo_sansio.testing.engine.text import (
    TEXT_SCORE,
    TextIndex,
    find_text_clause,
    strip_scores,
    text_query,
    with_scores,
)

if TYPE_CHECKING:
    from mongo_sansio.testing.engine.collation import Collation

__all__ = [
    "run_pipeline", "compile_pipeline", "sort_documents", "parse_sort", "check_update_pipeline",
    "lite_parse_pipeline", "group_stage",
]

#: where the variables hold the source collection's text index (no $$name reaches it)
_TEXT_INDEX_VARIABLE = "$textIndex"

Documents = list[dict[str, Any]]
Stage = Callable[[Documents], Documents]
Resolver = Callable[[str], Iterable[Mapping[str, Any]]]

_UPDATE_STAGES = ("$addFields", "$set", "$project", "$unset", "$replaceRoot", "$replaceWith")


def run_pipeline(
    documents: Iterable[Mapping[str, Any]],
    pipeline: Sequence[Any],
    *,
    lookup: Resolver | None = None,
    now: datetime.datetime | None = None,
    collation: Collation | None = None,
    text_index: TextIndex | None = None,
) -> Documents:
    """Run ``pipeline`` over (copies of) ``documents`` and return the results.  ``text_index``:
    the text index of the collection the documents are, for a first ``$match`` with ``$text``."""
    stages = compile_pipeline(pipeline, lookup=lookup, now=now, collation=collation, text_index=text_index)
    results = [copy_value(dict(d)) for d in documents]
    for stage in stages:
        results = stage(results)
    return strip_scores(results)


def check_update_pipeline(pipeline: Sequence[Any]) -> None:
    """An update pipeline may only reshape documents; anything else is refused.  mongod
    parses the whole pipeline first, so a stage it does not know (40324) or a bad argument
    is reported before a known stage that updates may not use (72, InvalidOptions)."""
    compile_pipeline(pipeline)
    for spec in pipeline:
        name = _stage_name(spec)
        if name not in _UPDATE_STAGES:
            raise CommandError(72, "InvalidOptions", f"{name} is not allowed to be used within an update")


def lite_parse_pipeline(pipeline: Sequence[Any]) -> None:
    """The shallow parse mongod makes of a pipeline without building its stages: each stage
    is a one-field document naming a known stage (40323, 40324); arguments are not read."""
    for spec in pipeline:
        name = _stage_name(spec)
        if name not in _BUILDERS and name != "$changeStream":
            raise location(40324, f"Unrecognized pipeline stage name: '{name}'")


def _stage_name(spec: Any) -> str:
    if not isinstance(spec, Mapping) or len(spec) != 1:
        raise location(40323, "A pipeline stage specification object must contain exactly one field.")
    return str(next(iter(spec)))


def compile_pipeline(
    pipeline: Sequence[Any], *, lookup: Resolver | None = None, now: datetime.datetime | None = None,
    collation: Collation | None = None, text_index: TextIndex | None = None,
) -> list[Stage]:
    if not isinstance(pipeline, list | tuple):
        raise CommandError(14, "TypeMismatch", "'pipeline' option must be specified as an array")
    # the stages read the collation from the variables, as their expressions do
    variables: dict[str, Any] = collation_variables(collation)
    if now is not None:
        variables["NOW"] = now
    if text_index is not None:
        variables[_TEXT_INDEX_VARIABLE] = text_index
    stages: list[Stage] = []
    for position, spec in enumerate(pipeline):
        name = _stage_name(spec)
        argument = spec[name]
        if name == "$match" and position > 0 and find_text_clause(argument) is not MISSING:
            raise location(17313, "$match with $text is only allowed as the first pipeline stage")
        builder = _BUILDERS.get(name)
        if builder is None:
            if name == "$changeStream":
                raise location(40602, "$changeStream is only valid as the first stage in a pipeline.")
            raise location(40324, f"Unrecognized pipeline stage name: '{name}'")
        stages.append(builder(argument, lookup, variables))
    return stages


# --- sorting -------------------------------------------------------------------------------


def parse_sort(spec: Any) -> list[tuple[list[str], int]]:
    """A sort specification as (path parts, 1 or -1) pairs; a ``{$meta: "textScore"}`` key
    sorts by the text score, highest first, and the other {$meta} keys are ignored."""
    if not isinstance(spec, Mapping):
        raise location(15973, "the $sort key specification must be an object")
    if not spec:
        raise location(15976, "$sort stage must have at least one sort key")
    keys = []
    for field, direction in spec.items():
        if isinstance(direction, Mapping) and "$meta" in direction:
            if direction["$meta"] == "textScore":
                keys.append(([TEXT_SCORE], -1))
            continue
        if not is_number(direction) or numeric_value(direction) not in (1, -1):
            raise location(15975, "$sort key ordering must be 1 (for ascending) or -1 (for descending)")
        keys.append((split_path(field), int(numeric_value(direction))))
    return keys


def _collation_of(variables: Mapping[str, Any]) -> Collation | None:
    found: Collation | None = variables.get(COLLATION_VARIABLE)
    return found


def _sort_value(document: Mapping[str, Any], parts: list[str], direction: int, collation: Collation | None) -> Any:
    leaves = lookup_leaves(document, parts)
    if not leaves:
        return None
    candidates: list[Any] = []
    for leaf in leaves:
        if isinstance(leaf, list):
            if leaf:
                candidates.extend(leaf)
            else:
                candidates.append([])
        else:
            candidates.append(leaf)
    non_empty = [c for c in candidates if not (isinstance(c, list) and not c)]
    if not non_empty:
        return array_sort_value([], descending=direction < 0)
    if len(non_empty) == 1:
        return non_empty[0]
    return array_sort_value(non_empty, descending=direction < 0, collation=collation)


def sort_documents(documents: Iterable[Mapping[str, Any]], spec: Any, collation: Collation | None = None) -> list[Any]:
    """Documents in mongod's sort order for ``spec`` (stable for ties)."""
    keys = parse_sort(spec)
    directions = [d for _, d in keys]
    rows: list[tuple[list[Any], Any]] = [
        ([_sort_value(doc, parts, d, collation) for parts, d in keys], doc) for doc in documents
    ]

    def by_values(left: tuple[list[Any], Any], right: tuple[list[Any], Any]) -> int:
        return compare_by_spec(left[0], right[0], directions, collation)

    rows.sort(key=functools.cmp_to_key(by_values))
    return [doc for _, doc in rows]


# --- stages --------------------------------------------------------------------------------


def _match(argument: Any, lookup: Resolver | None, variables: dict[str, Any]) -> Stage:
    if not isinstance(argument, Mapping):
        raise location(15959, "the match filter must be an expression in an object")
    text: TextIndex | None = variables.get(_TEXT_INDEX_VARIABLE)
    predicate = compile_filter(
        argument,
        _collation_of(variables),
        where_refused="$where is not allowed inside of a $match aggregation expression",
        text=text,
    )
    clause = find_text_clause(argument)
    if clause is not MISSING:
        query = text_query(clause, text)
        return lambda docs: with_scores([d for d in docs if predicate(d)], query)
    return lambda docs: [d for d in docs if predicate(d)]


def _project(argument: Any, lookup: Resolver | None, variables: dict[str, Any]) -> Stage:
    if not isinstance(argument, Mapping):
        raise location(15969, "$project specification must be an object")
    if not argument:
        raise location(51272, "Invalid $project :: caused by :: projection specification must have at least one field")
    projection = Projection(argument, aggregation=True)
    return lambda docs: [projection.apply(d, variables=variables) for d in docs]


def _unset(argument: Any, lookup: Resolver | None, variables: dict[str, Any]) -> Stage:
    fields = [argument] if isinstance(argument, str) else argument
    if not isinstance(fields, list) or not fields or not all(isinstance(f, str) for f in fields):
        raise location(31002, "$unset specification must be a string or an array containing only string values")
    projection = Projection({f: 0 for f in fields}, aggregation=True)
    return lambda docs: [projection.apply(d) for d in docs]


def _add_fields(argument: Any, lookup: Resolver | None, variables: dict[str, Any]) -> Stage:
    if not isinstance(argument, Mapping):
        raise location(40272, "$addFields specification stage must be an object")
    compiled = _compile_field_tree(argument)

    def run(docs: Documents) -> Documents:
        out = []
        for doc in docs:
            new = copy_value(doc)
            _apply_field_tree(new, doc, compiled, variables)
            out.append(new)
        return out

    return run


def _compile_field_tree(spec: Mapping[str, Any]) -> list[tuple[list[str], Any]]:
    """Fields to add: (path, compiled expression or a nested list for embedded objects)."""
    tree: list[tuple[list[str], Any]] = []
    for key, value in spec.items():
        parts = split_path(key)
        if key.startswith("$") or "" in parts:
            raise location(16410, f"FieldPath field names may not start with '$'. Given: {key}")
        first = next(iter(value), "") if isinstance(value, Mapping) else ""
        if isinstance(value, Mapping) and value and not str(first).startswith("$"):
            tree.append((parts, _compile_field_tree(value)))
        else:
            tree.append((parts, compile_expression(value)))
    return tree


def _apply_field_tree(target: dict[str, Any], root: Any, tree: list[tuple[list[str], Any]], variables: Mapping[str, Any]) -> None:
    for parts, item in tree:
        if isinstance(item, list):
            existing = get_path(target, parts)
            if not isinstance(existing, dict):
                existing = {}
                _set_replacing(target, parts, existing)
            _apply_field_tree(existing, root, item, variables)
            continue
        value = item(root, variables)
        if value is MISSING:
            _remove(target, parts)  # $$REMOVE in $addFields drops the field
        else:
            _set_replacing(target, parts, value)


def _set_replacing(target: dict[str, Any], parts: list[str], value: Any) -> None:
    node = target
    for part in parts[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = {}
            node[part] = child
        node = child
    node[parts[-1]] = value


def _remove(target: dict[str, Any], parts: list[str]) -> None:
    node: Any = target
    for part in parts[:-1]:
        node = node.get(part) if isinstance(node, dict) else None
    if isinstance(node, dict):
        node.pop(parts[-1], None)


def _replace_root(argument: Any, lookup: Resolver | None, variables: dict[str, Any]) -> Stage:
    if not isinstance(argument, Mapping) or "newRoot" not in argument:
        raise location(40231, "no newRoot specified for the $replaceRoot stage")
    return _replace_with(argument["newRoot"], lookup, variables)


def _replace_with(argument: Any, lookup: Resolver | None, variables: dict[str, Any]) -> Stage:
    expression = compile_expression(argument)

    def run(docs: Documents) -> Documents:
        out = []
        for doc in docs:
            value = expression(doc, variables)
            if not isinstance(value, dict):
                shown = "missing" if value is MISSING else render(value)
                raise location(
                    40228,
                    f"'newRoot' expression must evaluate to an object, but resulting value was: {shown}",
                )
            out.append(value)
        return out

    return run


def _sort(argument: Any, lookup: Resolver | None, variables: dict[str, Any]) -> Stage:
    parse_sort(argument)
    collation = _collation_of(variables)
    return lambda docs: sort_documents(docs, argument, collation)


def _positive_int(argument: Any, code: int, message: str, allow_zero: bool) -> int:
    value = whole_number(argument)
    if value is None:
        raise location(code, message)
    if value < 0 or (value == 0 and not allow_zero):
        raise location(code, message)
    return value


def _limit(argument: Any, lookup: Resolver | None, variables: dict[str, Any]) -> Stage:
    n = _positive_int(argument, 15958, "the limit must be positive", allow_zero=False)
    return lambda docs: docs[:n]


def _skip(argument: Any, lookup: Resolver | None, variables: dict[str, Any]) -> Stage:
    n = _positive_int(argument, 15956, "invalid argument to $skip stage: Expected a non-negative number", allow_zero=True)
    return lambda docs: docs[n:]


def _count(argument: Any, lookup: Resolver | None, variables: dict[str, Any]) -> Stage:
    if not isinstance(argument, str):
        raise location(40156, "the count field must be a non-empty string")
    if not argument:
        raise location(40157, "the count field must be a non-empty string")
    if argument.startswith("$"):
        raise location(40158, "the count field cannot be a $-prefixed path")
    if "." in argument:
        raise location(40160, "the count field cannot contain '.'")
    return lambda docs: [{argument: len(docs)}] if docs else []


# --- $group --------------------------------------------------------------------------------

_ACCUMULATORS = ("$sum", "$avg", "$min", "$max", "$first", "$last", "$push", "$addToSet", "$count")


def _group(argument: Any, lookup: Resolver | None, variables: dict[str, Any]) -> Stage:
    if not isinstance(argument, Mapping):
        raise location(15947, "a group's fields must be specified in an object")
    if "_id" not in argument:
        raise location(15955, "a group specification must include an _id")
    return group_stage(compile_expression(argument["_id"]), {k: v for k, v in argument.items() if k != "_id"},
                       variables)


def group_stage(key_expression: Compiled, fields: Mapping[str, Any], variables: dict[str, Any]) -> Stage:
    """A $group by the key ``key_expression`` computes, with the accumulator ``fields``
    (checked here); $bucket and $sortByCount are built on it, as mongod desugars them."""
    accumulators: list[tuple[str, str, Compiled]] = []
    for field, spec in fields.items():
        if "." in field:
            raise location(40235, f"The field name '{field}' cannot contain '.'")
        if not isinstance(spec, Mapping) or len(spec) != 1:
            raise location(40234, f"The field '{field}' must be an accumulator object")
        name, operand = next(iter(spec.items()))
        if name not in _ACCUMULATORS:
            raise location(15952, f"unknown group operator '{name}'")
        if name == "$count":
            if operand != {}:
                raise location(9, "$count takes no arguments, i.e. $count:{}")
            name, operand = "$sum", 1
        accumulators.append((field, name, compile_expression(operand)))

    collation = _collation_of(variables)

    def run(docs: Documents) -> Documents:
        groups: dict[Any, tuple[Any, list[list[Any]]]] = {}
        for doc in docs:
            key = key_expression(doc, variables)
            key = None if key is MISSING else key
            # keys equal under the collation make one group, with the first one seen as _id
            entry = groups.setdefault(hashable_key(key, collation), (key, [[] for _ in accumulators]))
            for i, (_field, _name, operand) in enumerate(accumulators):
                entry[1][i].append(operand(doc, variables))
        out = []
        for key, collected in groups.values():
            row: dict[str, Any] = {"_id": key}
            for (field, name, _), values in zip(accumulators, collected, strict=True):
                try:
                    row[field] = _accumulate(name, values, collation)
                except (ArithmeticError, ValueError) as exc:  # decimal overflow and the like
                    raise bad_value(f"{name} failed: {exc}") from None
            out.append(row)
        return out

    return run


def _accumulate(name: str, values: list[Any], collation: Collation | None = None) -> Any:
    present = [v for v in values if v is not MISSING]
    if name in ("$sum", "$avg"):
        numbers = [v for v in present if is_number(v)]
        total: Any = 0
        for n in numbers:
            total = binary_arithmetic(total, n, lambda a, b: a + b)
        if name == "$sum":
            return total
        if not numbers:
            return None
        if isinstance(total, Decimal128):
            return binary_arithmetic(total, len(numbers), lambda a, b: a / b)
        return float(numeric_value(total)) / len(numbers)  # $avg of non-decimals is a double
    if name in ("$min", "$max"):
        candidates = [v for v in present if v is not None]
        if not candidates:
            return None
        best = candidates[0]
        for v in candidates[1:]:
            order = compare(v, best, collation)
            if (order < 0) if name == "$min" else (order > 0):
                best = v
        return best
    if name == "$first":
        return None if not values or values[0] is MISSING else values[0]
    if name == "$last":
        return None if not values or values[-1] is MISSING else values[-1]
    if name == "$push":
        return present
    unique: dict[Any, Any] = {}
    for v in present:
        unique.setdefault(hashable_key(v, collation), v)
    return list(unique.values())


# --- $unwind --------------------------------------------------------------------------


def _unwind(argument: Any, lookup: Resolver | None, variables: dict[str, Any]) -> Stage:
    options = {"path": argument} if isinstance(argument, str) else argument
    if not isinstance(options, Mapping) or "path" not in options:
        raise location(15981, "expected either a string or an object as specification for $unwind stage")
    path = options["path"]
    if not isinstance(path, str) or not path.startswith("$"):
        raise location(28818, f"path option to $unwind stage should be prefixed with a '$': {path}")
    parts = split_path(path[1:])
    index_field = options.get("includeArrayIndex")
    if index_field is not None and (not isinstance(index_field, str) or index_field.startswith("$")):
        raise location(28822, "includeArrayIndex option to $unwind stage should not be prefixed with a '$'")
    preserve = bool(options.get("preserveNullAndEmptyArrays", False))

    def run(docs: Documents) -> Documents:
        out = []
        for doc in docs:
            value = get_path(doc, parts)
            if isinstance(value, list) and value:
                for i, element in enumerate(value):
                    new = copy_value(doc)
                    set_path(new, parts, copy_value(element))
                    if index_field:
                        set_path(new, split_path(index_field), i)
                    out.append(new)
            elif isinstance(value, list) or value is None or value is MISSING:
                if preserve:
                    new = copy_value(doc)
                    if isinstance(value, list):
                        _remove(new, parts)  # an empty array leaves no field behind
                    if index_field:
                        set_path(new, split_path(index_field), None)
                    out.append(new)
            else:
                new = copy_value(doc)
                if index_field:
                    set_path(new, split_path(index_field), None)
                out.append(new)
        return out

    return run


# Stages mongod refuses inside $facet (they write, or must come first, or nest facets).
_NOT_IN_FACET = frozenset({"$facet", "$out", "$merge", "$changeStream", "$collStats", "$indexStats",
                           "$geoNear", "$documents", "$listSessions", "$listLocalSessions"})


def _facet(argument: Any, lookup: Resolver | None, variables: dict[str, Any]) -> Stage:
    """$facet: every sub-pipeline over the same input; one output document of arrays."""
    if not isinstance(argument, Mapping) or not argument:
        raise location(15947, "a facet's fields must be specified as an object")
    compiled: dict[str, list[Stage]] = {}
    for name, pipeline in argument.items():
        if not isinstance(pipeline, list) or not pipeline:
            raise location(40170, f"arguments to $facet must be arrays, {name} is type {type(pipeline).__name__}")
        for spec in pipeline:
            stage = _stage_name(spec)
            if stage in _NOT_IN_FACET:
                raise location(40600, f"{stage} is not allowed to be used within a $facet stage")
        compiled[name] = compile_pipeline(pipeline, lookup=lookup, now=variables.get("NOW"),
                                          collation=_collation_of(variables))

    def run(docs: Documents) -> Documents:
        out: dict[str, Any] = {}
        for name, stages in compiled.items():
            results = [copy_value(d) for d in docs]
            for stage in stages:
                results = stage(results)
            out[name] = strip_scores(results)
        return [out]

    return run


_BUILDERS: dict[str, Callable[[Any, Resolver | None, dict[str, Any]], Stage]] = {
    "$facet": _facet,
    "$match": _match,
    "$project": _project,
    "$addFields": _add_fields,
    "$set": _add_fields,
    "$unset": _unset,
    "$replaceRoot": _replace_root,
    "$replaceWith": _replace_with,
    "$sort": _sort,
    "$limit": _limit,
    "$skip": _skip,
    "$count": _count,
    "$group": _group,
    "$unwind": _unwind,
    **BUCKET_STAGES,  # $bucket, $sortByCount (stages_bucket.py)
    **LOOKUP_STAGES,  # $lookup in its three forms (stages_lookup.py)
    **SPARK_STAGES,  # $sample, $bucketAuto, $collStats (stages_spark.py)
}
