"""Projections, for find and for the $project/$unset aggregation stages.

A projection is either an inclusion (list the fields to keep; ``_id`` stays unless excluded)
or an exclusion (list the fields to drop); mixing the two is an error, with ``_id`` the one
field allowed either way.  Computed fields (expressions), ``$elemMatch`` and the positional
``a.$`` count as inclusion; ``$slice`` fits either mode and alone keeps every field.  A field
that the document does not have is never invented by an inclusion.

mongod 7.0's errors for mixing are 31254 ("Cannot do exclusion on field b in inclusion
projection") and 31253 ("Cannot do inclusion on field a in exclusion projection"), reported as
codeName ``Location<code>``; path collisions are 31249 and 31250.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mongo_sansio.testing.engine.errors import bad_value, location
from mongo_sansio.testing.engine.expressions import Compiled, compile_expression
from mongo_sansio.testing.engine.order import (
    MISSING,
    copy_value,
    is_number,
    numeric_value,
    truncated_int,
)
from mongo_sansio.testing.engine.paths import split_path
from mongo_sansio.testing.engine.query import (
    compile_filter,
    compile_value_condition,
    first_matching_index,
    is_operator_document,
)
from mongo_sansio.testing.engine.text import TEXT_SCORE, compile_meta

if TYPE_CHECKING:
    from mongo_sansio.testing.engine.collation import Collation

__all__ = ["Projection", "project"]

_Tree = dict[str, Any]  # field -> True (the whole value) or a subtree


def project(
    document: Mapping[str, Any],
    spec: Mapping[str, Any] | None,
    *,
    filter: Mapping[str, Any] | None = None,  # noqa: A002
) -> dict[str, Any]:
    """Apply the projection ``spec`` to one document (``filter`` feeds the positional $)."""
    return Projection(spec).apply(document, filter=filter)


class Projection:
    """A parsed projection; :meth:`apply` runs it on documents.  ``collation``: the find's,
    which its $elemMatch and positional $ compare strings under."""

    def __init__(
        self, spec: Mapping[str, Any] | None, *, aggregation: bool = False, collation: Collation | None = None
    ) -> None:
        self.collation = collation
        self.mode: str | None = None  # "include", "exclude" or None (only $slice / _id rules)
        self.include_id = True
        self.tree: _Tree = {}
        self.computed: list[tuple[list[str], Compiled]] = []
        self.slices: list[tuple[list[str], int, int | None]] = []
        self.elem_matches: list[tuple[str, Any]] = []
        self.positional: list[str] | None = None
        self.metas: list[tuple[list[str], Compiled]] = []
        self._seen: list[list[str]] = []
        self._id_asked_for = False
        if spec is None:
            return
        if not isinstance(spec, Mapping):
            raise bad_value("projection must be an object")
        for key, value in _flatten(spec):
            self._add(key, value, aggregation)
        if self.mode is None and self._id_asked_for:
            self.mode = "include"  # {_id: 1} or {_id: <expression>} alone keeps only _id
        if self.mode == "include":
            for parts, _skip, _limit in self.slices:
                _tree_add(self.tree, parts)  # a sliced field is part of an inclusion's output

    # --- parsing ---------------------------------------------------------------------------

    def _set_mode(self, mode: str, path: str) -> None:
        if self.mode is None or self.mode == mode:
            self.mode = mode
            return
        if mode == "exclude":
            raise location(31254, f"Cannot do exclusion on field {path} in inclusion projection")
        raise location(31253, f"Cannot do inclusion on field {path} in exclusion projection")

    def _claim(self, parts: list[str]) -> None:
        for seen in self._seen:
            shorter, longer = (seen, parts) if len(seen) <= len(parts) else (parts, seen)
            if longer[: len(shorter)] == shorter:
                if len(seen) == len(parts):
                    raise location(31250, f"Path collision at {'.'.join(parts)}")
                rest = ".".join(longer[len(shorter):])
                raise location(31249, f"Path collision at {'.'.join(longer)} remaining portion {rest}")
        self._seen.append(parts)

    def _add(self, key: str, value: Any, aggregation: bool) -> None:
        if key.endswith(".$"):
            if aggregation:
                raise location(31324, "Cannot use positional projection in aggregation projection")
            if self.positional is not None:
                raise location(31276, "Cannot specify more than one positional projection per query.")
            parts = split_path(key[:-2])
            self._claim(parts)
            self._set_mode("include", key)
            self.positional = parts
            _tree_add(self.tree, parts)
            return
        parts = split_path(key)
        if "" in parts or any(p.startswith("$") for p in parts):
            raise location(16410, f"FieldPath field names may not start with '$'. Given: {key}")
        if isinstance(value, bool) or is_number(value):
            include = bool(numeric_value(value))
            if key == "_id":
                self.include_id = include
                self._id_asked_for = include
                self._claim(parts)
                return
            self._claim(parts)
            self._set_mode("include" if include else "exclude", key)
            _tree_add(self.tree, parts)
            return
        if isinstance(value, Mapping) and len(value) == 1 and "$slice" in value and not aggregation:
            self._claim(parts)
            skip, limit = _parse_slice(value["$slice"])
            self.slices.append((parts, skip, limit))
            return
        if isinstance(value, Mapping) and len(value) == 1 and "$elemMatch" in value and not aggregation:
            if len(parts) > 1:
                raise bad_value("Cannot use $elemMatch projection on a nested field.")
            self._claim(parts)
            self._set_mode("include", key)
            condition = value["$elemMatch"]
            if not isinstance(condition, Mapping):
                raise bad_value("elemMatch: Invalid argument, object required.")
            self.elem_matches.append((key, _element_test(condition, self.collation)))
            _tree_add(self.tree, parts)
            return
        if isinstance(value, Mapping) and len(value) == 1 and "$meta" in value:
            # metadata ({$meta: "textScore"}) decides neither inclusion nor exclusion: alone,
            # the document keeps every field; the kinds the simulator has nothing for are left out
            self._claim(parts)
            self.metas.append((parts, compile_meta(value["$meta"])))
            return
        # any other value is an expression computing the field (find since 4.4, and $project)
        if key == "_id":
            self.include_id = False  # replaced by the computed value
            self._id_asked_for = True
        self._claim(parts)
        if key != "_id":
            self._set_mode("include", key)
        self.computed.append((parts, compile_expression(value)))

    # --- applying --------------------------------------------------------------------------

    def apply(
        self,
        document: Mapping[str, Any],
        *,
        filter: Mapping[str, Any] | None = None,  # noqa: A002
        variables: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        positional_index: int | None = None
        if self.positional is not None:
            positional_index = first_matching_index(document, filter, self.positional, self.collation)
            if positional_index is None:
                # mongod reports this as BadValue (2) from the executor; the exact prefix of the
                # message varies by version
                raise bad_value(
                    "Executor error during find command :: caused by :: positional operator "
                    "'.$' couldn't find a matching element in the array"
                )
        out: dict[str, Any]
        if self.mode == "include":
            out = _include(document, self.tree)
            if not self.include_id:
                out.pop("_id", None)
            elif "_id" in document and "_id" not in out:
                out = {"_id": copy_value(document["_id"]), **out}
        else:
            out = _exclude(document, self.tree) if self.tree else copy_value(dict(document))
            if not self.include_id:
                out.pop("_id", None)
        for key, test in self.elem_matches:
            array = document.get(key, MISSING)
            found = [e for e in array if test(e)][:1] if isinstance(array, list) else []
            if found:
                out[key] = copy_value(found)
            else:
                out.pop(key, None)
        if self.positional is not None and positional_index is not None:
            _replace_array(out, self.positional, lambda a: a[positional_index : positional_index + 1])
        for parts, skip, limit in self.slices:
            _replace_array(out, parts, lambda a, s=skip, n=limit: _slice(a, s, n))
        for parts, compiled in [*self.computed, *self.metas]:
            value = compiled(document, variables or {})
            if value is MISSING:
                continue
            if parts == ["_id"]:
                out = {"_id": value, **{k: v for k, v in out.items() if k != "_id"}}
            else:
                _set_computed(out, parts, value)
        if TEXT_SCORE in document:  # the score rides on to the later stages
            out[TEXT_SCORE] = document[TEXT_SCORE]
        return out


def _flatten(spec: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """Nested projection objects ({a: {b: 1}}) are the dotted form ({"a.b": 1})."""
    out: list[tuple[str, Any]] = []
    for key, value in spec.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping) and value and not is_operator_document(value):
            out.extend(_flatten(value, path + "."))
        else:
            if isinstance(value, Mapping) and not value:
                raise location(51270, "An empty sub-projection is not a valid value. Found empty object at path")
            out.append((path, value))
    return out


def _tree_add(tree: _Tree, parts: list[str]) -> None:
    node = tree
    for part in parts[:-1]:
        child = node.setdefault(part, {})
        if child is True:
            return
        node = child
    node[parts[-1]] = True


def _include(value: Any, tree: _Tree) -> Any:
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if key not in tree:
                continue
            sub = tree[key]
            if sub is True:
                out[key] = copy_value(item)
            else:
                projected = _include(item, sub)
                if projected is not MISSING:
                    out[key] = projected
        return out
    if isinstance(value, list):
        # a dotted inclusion keeps the documents (and nested arrays) of an array, not its scalars
        kept = [_include(e, tree) for e in value if isinstance(e, Mapping | list)]
        return kept
    return MISSING


def _exclude(value: Any, tree: _Tree) -> Any:
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            sub = tree.get(key)
            if sub is True:
                continue
            out[key] = _exclude(item, sub) if sub else copy_value(item)
        return out
    if isinstance(value, list):
        return [_exclude(e, tree) for e in value]
    return copy_value(value)


def _parse_slice(argument: Any) -> tuple[int, int | None]:
    if is_number(argument):
        count = truncated_int(argument)
        if count is None:
            raise bad_value("$slice needs a finite number")
        return (count, None) if count < 0 else (0, count)
    if isinstance(argument, list) and len(argument) == 2 and all(is_number(a) for a in argument):
        skip_or_none, limit_or_none = (truncated_int(a) for a in argument)
        if skip_or_none is None or limit_or_none is None:
            raise bad_value("$slice needs finite numbers")
        skip, limit = skip_or_none, limit_or_none
        if limit <= 0:
            raise bad_value("$slice limit must be positive")
        return skip, limit
    raise location(28667, "Invalid $slice syntax. The given syntax did not match the find() syntax")


def _slice(array: list[Any], skip: int, limit: int | None) -> list[Any]:
    if limit is None:  # {$slice: -n}: the last n
        return array[skip:] if skip else []
    if skip < 0:
        skip = max(len(array) + skip, 0)
    return array[skip : skip + limit]


def _replace_array(document: Any, parts: list[str], change: Any) -> None:
    """Apply ``change`` to the array(s) at the path; arrays of documents on the way fan out."""
    if isinstance(document, list):
        for element in document:
            _replace_array(element, parts, change)
        return
    if not isinstance(document, dict) or parts[0] not in document:
        return
    if len(parts) == 1:
        if isinstance(document[parts[0]], list):
            document[parts[0]] = change(document[parts[0]])
        return
    _replace_array(document[parts[0]], parts[1:], change)


def _set_computed(out: dict[str, Any], parts: list[str], value: Any) -> None:
    node = out
    for part in parts[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = {}
            node[part] = child
        node = child
    node[parts[-1]] = value


def _element_test(condition: Mapping[str, Any], collation: Collation | None) -> Any:
    if is_operator_document(condition):
        values_test = compile_value_condition(condition, collation)
        return lambda element: values_test([element])
    document_test = compile_filter(condition, collation)
    return lambda element: isinstance(element, Mapping) and document_test(element)
