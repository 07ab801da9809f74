"""Index specs and index keys for :class:`~.collection.Collection`.

:func:`validate_index_spec` checks one createIndexes entry and gives the spec listIndexes shows
(``v: 2`` first, then ``key`` and ``name``, the options as given, and a non-simple ``collation``
last, in mongod's full form).  An index gives a collation of its own, or inherits the
collection's default (a version 1 index does not); ``{locale: "simple"}`` overrides a default
and is not listed.  :func:`conflicting` and :func:`resolve_index` answer createIndexes' and
dropIndexes' questions about the indexes a collection has.

:class:`Index` turns a document into its index keys.  The engine scans rather than using
indexes to answer queries, so keys matter only to unique indexes (the _id index among them),
which compare strings under the index's collation: a unique index with a case-insensitive
collation refuses "a" beside "A", as mongod's does.  An index with ``prepareUnique`` refuses
new duplicate keys while keeping those it already has (the collection checks it by scanning).  A partial index's filter uses it too.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

from mongo_sansio.bson import Int64
from mongo_sansio.testing.engine.collation import Collation, parse_collation
from mongo_sansio.testing.engine.errors import CommandError, bad_value
from mongo_sansio.testing.engine.order import (
    copy_value,
    hashable_key,
    is_number,
    numeric_value,
    render,
    type_name,
    whole_number,
)
from mongo_sansio.testing.engine.paths import lookup_leaves, split_path
from mongo_sansio.testing.engine.query import Predicate, compile_filter
from mongo_sansio.testing.engine.text import text_index_spec

__all__ = [
    "ID_INDEX", "Index", "conflicting", "duplicate_groups", "find_index", "index_name",
    "parse_index_modification", "plan_index_modification", "resolve_index", "validate_index_spec",
]

ID_INDEX = {"v": 2, "key": {"_id": 1}, "name": "_id_"}

# Index kinds that compare no strings and so refuse a non-simple collation.
_NO_COLLATION = ("text", "2d", "geoHaystack")


def index_name(key: Mapping[str, Any]) -> str:
    """The name mongod and drivers give an index by default: ``a_1_b_-1``."""
    return "_".join(f"{field}_{_direction_text(direction)}" for field, direction in key.items())


def _direction_text(direction: Any) -> str:
    if is_number(direction):
        whole = whole_number(direction)
        return str(whole) if whole is not None else str(numeric_value(direction))
    return str(direction)


class Index:
    """One index's spec and, when unique, its key -> owner map."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        self.fields = [(split_path(f), f) for f in spec["key"]]
        self.unique = bool(spec.get("unique")) or spec["name"] == "_id_"
        # collMod's first step to unique: new duplicate keys are refused, existing ones stay
        self.prepare_unique = bool(spec.get("prepareUnique")) and not self.unique
        self.sparse = bool(spec.get("sparse"))
        # (a listed collation is mongod's full form, which parses back to itself)
        self.collation = parse_collation(spec["collation"]) if "collation" in spec else None
        partial = spec.get("partialFilterExpression")
        self.partial: Predicate | None = compile_filter(partial, self.collation) if partial is not None else None
        self.owners: dict[Any, Any] = {}

    def keys(self, document: Mapping[str, Any]) -> list[tuple[Any, dict[str, Any]]]:
        """(hashable key, keyValue document) for every entry the document makes (multikey)."""
        if self.partial is not None and not self.partial(document):
            return []
        per_field = []
        present = False
        for parts, _name in self.fields:
            values: list[Any] = []
            for leaf in lookup_leaves(document, parts):
                present = True
                if isinstance(leaf, list) and leaf:
                    values.extend(leaf)
                else:
                    values.append(leaf)
            per_field.append(values or [None])
        if self.sparse and not present:
            return []
        entries = []
        for combo in itertools.product(*per_field):
            key = tuple(hashable_key(v, self.collation) for v in combo)
            entries.append((key, {name: v for (_p, name), v in zip(self.fields, combo, strict=True)}))
        return entries


def validate_index_spec(raw: Any, default: Collation | None = None) -> dict[str, Any]:
    """One createIndexes entry, checked, as the spec the index keeps; ``default``: the
    collection's default collation."""
    if not isinstance(raw, Mapping):
        raise CommandError(14, "TypeMismatch", "index specification must be an object")
    key = raw.get("key")
    if not isinstance(key, Mapping) or not key:
        raise CommandError(67, "CannotCreateIndex", "Index keys cannot be empty.")
    for field, direction in key.items():
        if not field:
            raise CommandError(67, "CannotCreateIndex", "Index keys cannot be an empty field.")
        if is_number(direction) and numeric_value(direction) == 0:
            raise CommandError(67, "CannotCreateIndex", f"Values in the index key pattern can't be all zero: {render(dict(key))}")
        if not is_number(direction) and not isinstance(direction, str):
            raise CommandError(67, "CannotCreateIndex", f"Values in index key pattern must be numbers or strings: {render(dict(key))}")
    name = raw.get("name", index_name(key))
    if not isinstance(name, str) or not name:
        raise CommandError(67, "CannotCreateIndex", "The index name must be a non-empty string")
    spec: dict[str, Any] = {"v": 2, "key": copy_value(dict(key)), "name": name}
    for option, value in raw.items():
        if option not in ("key", "name", "v", "ns", "collation"):
            spec[option] = copy_value(value)
    collation = _index_collation(raw, default)
    if collation is not None:
        kinds = [direction for direction in key.values() if direction in _NO_COLLATION]
        if kinds:
            raise CommandError(67, "CannotCreateIndex",
                               f"Index type '{kinds[0]}' does not support collation: {render(collation.document())}")
        spec["collation"] = collation.document()
    if "text" in key.values():
        spec = text_index_spec(spec)
    return spec


def _index_collation(raw: Mapping[str, Any], default: Collation | None) -> Collation | None:
    if "collation" not in raw:
        return default if raw.get("v", 2) != 1 else None
    given = raw["collation"]
    if not isinstance(given, Mapping):
        raise CommandError(14, "TypeMismatch", f"The field 'collation' must be an object, but got {type_name(given)}")
    if not given:
        raise bad_value("The field 'collation' cannot be an empty object.")
    return parse_collation(given)


def conflicting(indexes: Mapping[str, Index], spec: dict[str, Any]) -> bool:
    """True when an identical index exists; raises mongod's conflict errors otherwise."""
    if "_fts" in spec["key"]:  # a collection has one text index (their keys are all the same)
        for other in indexes.values():
            if "_fts" in other.spec["key"] and other.spec["name"] != spec["name"]:
                raise CommandError(
                    85, "IndexOptionsConflict",
                    "An equivalent index already exists with a different name and options. Requested index: "
                    f"{render(spec)}, existing index: {render(other.spec)}",
                )
    same_name = indexes.get(spec["name"])
    if same_name is not None:
        if _spec_key(same_name.spec) != _spec_key(spec):
            raise CommandError(
                86, "IndexKeySpecsConflict",
                "An existing index has the same name as the requested index. When index names "
                "are not specified, they are auto generated and can cause conflicts. Please "
                f"refer to our documentation. Requested index: {render(spec)}, existing index: "
                f"{render(same_name.spec)}",
            )
        if _options(same_name.spec) != _options(spec) and spec["name"] != "_id_":
            raise CommandError(
                85, "IndexOptionsConflict",
                f"An equivalent index already exists with the same name but different options. "
                f"Requested index: {render(spec)}, existing index: {render(same_name.spec)}",
            )
        return True
    for other in indexes.values():
        if _spec_key(other.spec) == _spec_key(spec) and _options(other.spec) == _options(spec):
            raise CommandError(
                85, "IndexOptionsConflict",
                f"Index already exists with a different name: {other.spec['name']}",
            )
    return False


def resolve_index(indexes: Mapping[str, Index], index: Any) -> str:
    """The name of the index dropIndexes names by name or by key pattern."""
    if isinstance(index, Mapping):
        for name, existing in indexes.items():
            if _spec_key(existing.spec) == _spec_key({"key": index}):
                if name == "_id_":
                    raise CommandError(72, "InvalidOptions", "cannot drop _id index")
                return name
        raise CommandError(27, "IndexNotFound", f"can't find index with key: {render(dict(index))}")
    if not isinstance(index, str):
        raise CommandError(14, "TypeMismatch", "dropIndexes 'index' must be a string, an object or an array")
    if index == "_id_":
        raise CommandError(72, "InvalidOptions", "cannot drop _id index")
    if index not in indexes:
        raise CommandError(27, "IndexNotFound", f"index not found with name [{index}]")
    return index


def _spec_key(spec: Mapping[str, Any]) -> Any:
    return tuple((field, hashable_key(direction)) for field, direction in spec["key"].items())


def _options(spec: Mapping[str, Any]) -> Any:
    return hashable_key({k: v for k, v in spec.items() if k not in ("v", "key", "name")})


# --- collMod's index modifications ------------------------------------------------------------

_INDEX_MOD_FIELDS = {"keyPattern": "object", "name": "string", "hidden": "bool", "expireAfterSeconds": "long",
                     "prepareUnique": "bool", "unique": "bool", "forceNonUnique": "bool"}


def _invalid_options(message: str) -> CommandError:
    return CommandError(72, "InvalidOptions", message)


def parse_index_modification(raw: Any) -> dict[str, Any]:
    """collMod's ``index`` field, its fields' types checked as mongod's parser checks them."""
    if not isinstance(raw, Mapping):
        raise CommandError(14, "TypeMismatch", f"BSON field 'collMod.index' is the wrong type '{type_name(raw)}', "
                           "expected type 'object'")
    for field, value in raw.items():
        wanted = _INDEX_MOD_FIELDS.get(field)
        if wanted is None:
            raise CommandError(40415, "Location40415", f"BSON field 'collMod.index.{field}' is an unknown field.")
        ok = {"object": isinstance(value, Mapping), "string": isinstance(value, str),
              "bool": isinstance(value, bool), "long": is_number(value)}[wanted]
        if not ok:
            raise CommandError(14, "TypeMismatch", f"BSON field 'collMod.index.{field}' is the wrong type "
                               f"'{type_name(value)}', expected type '{wanted}'")
    if "name" in raw and "keyPattern" in raw:
        raise _invalid_options("Cannot specify both key pattern and name.")
    if "name" not in raw and "keyPattern" not in raw:
        raise _invalid_options("Must specify either index name or key pattern.")
    if not any(field in raw for field in ("expireAfterSeconds", "hidden", "unique", "prepareUnique", "forceNonUnique")):
        raise _invalid_options("no expireAfterSeconds, hidden, unique, or prepareUnique field")
    if "unique" in raw and "forceNonUnique" in raw:
        raise _invalid_options("collMod does not support 'unique' and 'forceNonUnique' options at the same time")
    if "forceNonUnique" in raw:  # (mongod's way back from unique; not simulated)
        raise _invalid_options("the simulated server does not support collMod 'forceNonUnique'")
    if "expireAfterSeconds" in raw:
        seconds = numeric_value(raw["expireAfterSeconds"])
        if seconds < 0 or seconds > 2**31 - 1:
            raise _invalid_options(f"TTL index 'expireAfterSeconds' option must be within an acceptable range, "
                                   f"try a lower number. Value: {render(raw['expireAfterSeconds'])}")
    return dict(raw)


def find_index(indexes: Mapping[str, Index], request: Mapping[str, Any], ns: str) -> Index:
    """The index a collMod ``index`` names by name or by key pattern (IndexNotFound 27)."""
    if "name" in request:
        found = indexes.get(request["name"])
        if found is None:
            raise CommandError(27, "IndexNotFound", f"cannot find index {request['name']} for ns {ns}")
        return found
    wanted = _spec_key({"key": request["keyPattern"]})
    matching = [index for index in indexes.values() if _spec_key(index.spec) == wanted]
    if len(matching) > 1:
        raise CommandError(
            181, "AmbiguousIndexKeyPattern",
            f"index keyPattern {render(dict(request['keyPattern']))} matches {len(matching)} indexes, must use index "
            f"name. Conflicting indexes:{render(matching[0].spec)}, {render(matching[1].spec)}",
        )
    if not matching:
        raise CommandError(27, "IndexNotFound", f"cannot find index {render(dict(request['keyPattern']))} for ns {ns}")
    return matching[0]


def plan_index_modification(index: Index, request: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any], int]:
    """What a collMod ``index`` request changes in ``index``: (the new spec, the reply's
    ``*_old``/``*_new`` fields, the number of modifications asked), refusing what mongod
    refuses; the caller checks for duplicates before a conversion to unique."""
    spec = copy_value(index.spec)
    reply: dict[str, Any] = {}
    count = 0
    is_id = spec["name"] == "_id_"
    if "expireAfterSeconds" in request:
        count += 1
        old = spec.get("expireAfterSeconds")
        if old is None:
            if is_id:
                raise _invalid_options("the _id field does not support TTL indexes")
            if len(spec["key"]) != 1:
                raise _invalid_options("TTL indexes are single-field indexes, compound indexes do not support TTL")
        elif not is_number(old):
            raise _invalid_options("existing expireAfterSeconds field is not a number")
        new = int(numeric_value(request["expireAfterSeconds"]))
        if old is not None:
            reply["expireAfterSeconds_old"] = Int64(int(numeric_value(old)))
        reply["expireAfterSeconds_new"] = Int64(new)
        spec["expireAfterSeconds"] = new
    if "unique" in request:
        count += 1
        if not request["unique"]:
            raise CommandError(2, "BadValue", "Cannot make index non-unique")
        if not index.unique:
            if not index.prepare_unique:
                raise _invalid_options("Cannot make index unique with 'prepareUnique=false'. Run collMod to set it first.")
            spec.pop("prepareUnique", None)  # (mongod resets it once the index is unique)
            spec["unique"] = True
            reply["unique_new"] = True
    if "hidden" in request:
        count += 1
        if is_id:
            raise CommandError(2, "BadValue", "can't hide _id index")
        old_hidden = bool(spec.get("hidden", False))
        if old_hidden != request["hidden"]:
            reply["hidden_old"], reply["hidden_new"] = old_hidden, request["hidden"]
            if request["hidden"]:
                spec["hidden"] = True
            else:
                spec.pop("hidden", None)
    if "prepareUnique" in request:
        count += 1
        if index.prepare_unique != request["prepareUnique"] and not index.unique:
            reply["prepareUnique_old"], reply["prepareUnique_new"] = index.prepare_unique, request["prepareUnique"]
            if request["prepareUnique"]:
                spec["prepareUnique"] = True
            else:
                spec.pop("prepareUnique", None)
    return spec, reply, count


def duplicate_groups(index: Index, documents: Mapping[Any, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """mongod's ``violations`` for converting ``index`` to unique: for each key more than one
    document has, ``{ids: [their _ids]}``."""
    holders: dict[Any, list[Any]] = {}
    for document in documents.values():
        for key, _ in index.keys(document):
            ids = holders.setdefault(key, [])
            if not any(hashable_key(known) == hashable_key(document.get("_id")) for known in ids):
                ids.append(copy_value(document.get("_id")))
    return [{"ids": ids} for ids in holders.values() if len(ids) > 1]
