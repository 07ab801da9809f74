"""The ``$lookup`` stage: a left outer join with another collection (or view).

Three forms, as mongod 5.0+ takes them:

* **equality**: ``{from, localField, foreignField, as}`` -- the foreign documents whose
  ``foreignField`` equals one of the values ``localField`` reaches (array elements one by one;
  a missing field matches null and missing);
* **pipeline**: ``{from, let, pipeline, as}`` -- the sub-pipeline runs over the foreign
  collection once per input document, with the ``let`` variables (evaluated against that
  document) visible as ``$$name`` in its expressions (``$match: {$expr: ...}`` and the
  like); ``from`` may be left out when the pipeline opens with ``$documents``;
* **concise**: ``{from, localField, foreignField, let, pipeline, as}`` -- the equality match
  first, then the sub-pipeline over the matched documents.

The foreign documents come from the ``lookup`` resolver the pipeline runner was given
(collection name -> documents), so this module knows nothing of databases.  A variable is
bound into the sub-pipeline by :func:`.variables.bind_expression` (as a command's ``let``
is), so the sub-pipeline is compiled again for each input document whose variables differ.
Error codes and messages follow mongod's parser as far as known here (flagged: from memory).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from mongo_sansio.testing.engine.errors import CommandError, bad_value, location
from mongo_sansio.testing.engine.expressions import COLLATION_VARIABLE, compile_expression
from mongo_sansio.testing.engine.order import MISSING, copy_value, hashable_key, type_name
from mongo_sansio.testing.engine.paths import lookup_leaves, set_path, split_path
from mongo_sansio.testing.engine.query import compile_filter
from mongo_sansio.testing.engine.variables import bind_expression

__all__ = ["LOOKUP_STAGES"]

Documents = list[dict[str, Any]]
Stage = Callable[[Documents], Documents]
Resolver = Callable[[str], Iterable[Mapping[str, Any]]]

_FIELDS = ("from", "localField", "foreignField", "let", "pipeline", "as")
# Stages a sub-pipeline may not hold (they write, or must open a top-level pipeline).
_NOT_IN_LOOKUP = ("$out", "$merge", "$changeStream")


def _failed_to_parse(message: str) -> CommandError:
    return CommandError(9, "FailedToParse", message)


def _string_field(argument: Mapping[str, Any], field: str) -> str:
    value = argument[field]
    if not isinstance(value, str):
        raise location(4572, f"$lookup requires '{field}' to be a string")
    return value


def _parse(argument: Any) -> dict[str, Any]:
    if not isinstance(argument, Mapping):
        raise location(40319, "the $lookup specification must be an Object")
    for field in argument:
        if field not in _FIELDS:  # code and message from memory
            raise _failed_to_parse(f"unknown argument to $lookup: {field}")
    if "as" not in argument:
        raise _failed_to_parse("must specify 'as' field for a $lookup")
    spec: dict[str, Any] = {"as": split_path(_string_field(argument, "as"))}
    has_local, has_foreign = "localField" in argument, "foreignField" in argument
    if has_local != has_foreign:
        raise _failed_to_parse("$lookup requires both or neither of 'localField' and 'foreignField' to be specified")
    pipeline = argument.get("pipeline")
    if not has_local and pipeline is None:
        raise _failed_to_parse("$lookup requires either 'pipeline' or both 'localField' and 'foreignField' to be specified")
    if has_local:
        spec["local"] = split_path(_string_field(argument, "localField"))
        spec["foreign"] = _string_field(argument, "foreignField")
    let = argument.get("let", {})
    if not isinstance(let, Mapping):
        raise _failed_to_parse(f"$lookup argument 'let' must be an object, is type {type_name(let)}")
    if let and pipeline is None:  # code from memory
        raise _failed_to_parse("$lookup with 'let' requires a 'pipeline'")
    spec["let"] = {name: compile_expression(expression) for name, expression in let.items()}
    for name in let:
        if not isinstance(name, str) or not name or not (name[0].islower() or not name[0].isascii()):
            raise location(16867, f"'{name}' starts with an invalid character for a user variable name")
    if pipeline is not None:
        if not isinstance(pipeline, list):
            raise _failed_to_parse(f"$lookup argument 'pipeline' must be an array, is type {type_name(pipeline)}")
        for stage in pipeline:
            name = next(iter(stage), "") if isinstance(stage, Mapping) else ""
            if name in _NOT_IN_LOOKUP:  # code from memory
                raise location(51047, f"{name} is not allowed within a $lookup's sub-pipeline")
    spec["pipeline"] = pipeline
    opens_with_documents = isinstance(pipeline, list) and bool(pipeline) and isinstance(pipeline[0], Mapping) \
        and "$documents" in pipeline[0]
    if "from" in argument:
        spec["from"] = _string_field(argument, "from")
    elif not opens_with_documents:
        raise _failed_to_parse("must specify 'from' field for a $lookup")  # message from memory
    return spec


def _lookup(argument: Any, lookup: Resolver | None, variables: dict[str, Any]) -> Stage:
    spec = _parse(argument)
    collation = variables.get(COLLATION_VARIABLE)
    pipeline: list[Any] | None = spec["pipeline"]
    from mongo_sansio.testing.engine.aggregate import (
        compile_pipeline,  # (aggregate imports this module)
    )

    if pipeline is not None:
        # parsed once up front, as mongod does, so a bad sub-pipeline fails before any document
        compile_pipeline(_without_documents(pipeline), lookup=lookup, now=variables.get("NOW"), collation=collation)
    compiled_cache: dict[Any, list[Stage]] = {}

    def sub_pipeline(values: dict[str, Any]) -> list[Stage]:
        assert pipeline is not None
        key = hashable_key(values)
        stages = compiled_cache.get(key)
        if stages is None:
            bound = bind_expression(_without_documents(pipeline), values)
            stages = compile_pipeline(bound, lookup=lookup, now=variables.get("NOW"), collation=collation)
            compiled_cache[key] = stages
        return stages

    def run(docs: Documents) -> Documents:
        if "from" in spec:
            if lookup is None:
                raise bad_value("$lookup needs a way to read the foreign collection")
            foreign = [dict(d) for d in lookup(spec["from"])]
        else:
            foreign = [dict(d) for d in pipeline[0]["$documents"]] if pipeline else []
        out = []
        for doc in docs:
            joined = foreign
            if "local" in spec:
                locals_: list[Any] = []
                for leaf in lookup_leaves(doc, spec["local"]):
                    locals_.extend(leaf if isinstance(leaf, list) else [leaf])
                predicate = compile_filter({spec["foreign"]: {"$in": locals_ or [None]}}, collation)
                joined = [f for f in foreign if predicate(f)]
            results = [copy_value(f) for f in joined]
            if pipeline is not None:
                values = {}
                for name, expression in spec["let"].items():
                    value = expression(doc, variables)
                    values[name] = None if value is MISSING else value
                for stage in sub_pipeline(values):
                    results = stage(results)
            new = copy_value(doc)
            set_path(new, spec["as"], results)
            out.append(new)
        return out

    return run


def _without_documents(pipeline: list[Any]) -> list[Any]:
    """The sub-pipeline after a leading ``$documents`` (whose documents are the source)."""
    if pipeline and isinstance(pipeline[0], Mapping) and "$documents" in pipeline[0]:
        given = pipeline[0]["$documents"]
        if not isinstance(given, list) or not all(isinstance(d, Mapping) for d in given):
            raise location(5858203, "an array is expected")
        return pipeline[1:]
    return pipeline


LOOKUP_STAGES: dict[str, Callable[[Any, Resolver | None, dict[str, Any]], Stage]] = {"$lookup": _lookup}
