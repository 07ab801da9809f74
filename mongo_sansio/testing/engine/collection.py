"""An in-memory collection: documents in insertion order keyed by _id, with secondary indexes.

Everything here is pure: new ``_id`` values come from the injected ``id_factory`` (the server
passes one that makes ObjectIds from its own seeded source) and ``$currentDate`` reads the
``now`` it is given.  Reads return copies, so callers may keep or change what they get.  Unique
indexes (the _id index included) are enforced on insert and update with mongod's E11000 error
(code 11000, ``keyPattern`` and ``keyValue`` beside the message); other index kinds are kept as
metadata only, since the engine scans rather than using indexes to answer queries (index
specs and keys: :mod:`.indexes`).  Every document stored is first held to mongod's limits
(16 MiB, 180 levels: :mod:`.limits`), with the error of its path (insert, update/replace,
upsert); a refused write changes nothing.

A collection may have document validation (:attr:`Collection.validation`, from ``create`` or
``collMod``: :mod:`.validation`): every document an insert, update, replacement, upsert or
findAndModify stores is checked first, unless the write passes ``bypass_validation``
(the command's ``bypassDocumentValidation``).  collMod's index changes (hidden,
expireAfterSeconds, prepareUnique, then unique) go through :meth:`Collection.modify_index`.

A collection may have a default :class:`~.collation.Collation` (:meth:`Collection.set_collation`,
from ``create``): its _id index and new indexes take it, and the reads and writes that name no
collation of their own (``collation=MISSING``) compare strings under it; an operation's own
collation, ``None`` for the simple one, overrides it, as in mongod.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import attrs

from mongo_sansio.bson import Int64, Regex, Undefined
from mongo_sansio.testing.engine.aggregate import sort_documents
from mongo_sansio.testing.engine.collation import Collation
from mongo_sansio.testing.engine.errors import CommandError, bad_value, failed_to_parse
from mongo_sansio.testing.engine.indexes import (
    ID_INDEX,
    Index,
    conflicting,
    duplicate_groups,
    find_index,
    index_name,
    plan_index_modification,
    resolve_index,
    validate_index_spec,
)
from mongo_sansio.testing.engine.limits import check_storable
from mongo_sansio.testing.engine.order import (
    MISSING,
    Missing,
    copy_value,
    hashable_key,
    numeric_value,
    render,
)
from mongo_sansio.testing.engine.paths import lookup_leaves, split_path
from mongo_sansio.testing.engine.plan import chosen_index
from mongo_sansio.testing.engine.projection import Projection
from mongo_sansio.testing.engine.query import compile_filter, is_operator_document
from mongo_sansio.testing.engine.text import (
    TextIndex,
    find_text_clause,
    scored,
    strip_scores,
    text_query,
)
from mongo_sansio.testing.engine.update import Update, upsert_seed
from mongo_sansio.testing.engine.validation import Validation

__all__ = ["Collection", "UpdateOutcome", "WriteEvent", "index_name"]

#: An operation's collation: a Collation, None (the simple one), or MISSING (the collection's).
OperationCollation = Collation | None | Missing


@attrs.frozen
class WriteEvent:
    """One document write, for the replication layer's oplog and change streams.

    ``kind`` is "insert", "update", "replace" or "delete"; ``before`` is None for an insert and
    ``after`` None for a delete.  Both are the collection's own copies taken at the write: a
    listener may keep them but must not change them.
    """

    kind: str
    before: dict[str, Any] | None
    after: dict[str, Any] | None


@attrs.frozen
class UpdateOutcome:
    """What an update did: documents matched, documents changed, and an upserted _id."""

    matched: int
    modified: int
    upserted_id: Any = MISSING

    @property
    def upserted(self) -> bool:
        return self.upserted_id is not MISSING


class Collection:
    """Documents of one namespace, in insertion order, with their indexes."""

    def __init__(
        self,
        database: str,
        name: str,
        *,
        id_factory: Callable[[], Any],
        on_write: Callable[[WriteEvent], None] | None = None,
    ) -> None:
        self.database = database
        self.name = name
        self.id_factory = id_factory
        self.on_write = on_write
        # The catalogue's identity, set by the server (clones keep it); the engine never reads it.
        self.uuid: Any = None
        # Called with the key of each document about to be written, before anything changes;
        # it may raise to refuse the write (the server's transactions use it for write
        # conflicts and for writes that must wait for a transaction to end).
        self.guard: Callable[[Any], None] | None = None
        self._documents: dict[Any, dict[str, Any]] = {}
        self._indexes: dict[str, Index] = {"_id_": Index(dict(ID_INDEX))}
        self.collation: Collation | None = None
        # the validator and its level and action (None: no validation)
        self.validation: Validation | None = None
        # mongod's RecordId of each document (showRecordId): given at insert from a counter
        # that never goes back, kept through updates
        self._record_ids: dict[Any, int] = {}
        self._last_record_id = 0
        self._unique_ids = True

    def set_collation(self, collation: Collation | None) -> None:
        """Give the (new, empty) collection a default collation; its _id index takes it."""
        self.collation = collation
        if "_id_" in self._indexes:
            spec = {**ID_INDEX, "collation": collation.document()} if collation is not None else dict(ID_INDEX)
            self._indexes["_id_"] = Index(spec)

    def _effective(self, collation: OperationCollation) -> Collation | None:
        return self.collation if isinstance(collation, Missing) else collation

    def allow_duplicate_ids(self) -> None:
        """A time series collection's way: no _id index, documents keyed by RecordId."""
        self._indexes.pop("_id_", None)
        self._unique_ids = False

    @property
    def namespace(self) -> str:
        return f"{self.database}.{self.name}"

    def __len__(self) -> int:
        return len(self._documents)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        """Copies of the documents, in natural order."""
        return (copy_value(d) for d in list(self._documents.values()))

    def clone(self, *, database: str | None = None, name: str | None = None) -> Collection:
        """An independent copy (documents and indexes), e.g. for a replication snapshot.
        The copy has no ``on_write`` listener; its new owner sets one."""
        other = Collection(database or self.database, name or self.name, id_factory=self.id_factory)
        other.uuid = self.uuid
        other._documents = {k: copy_value(d) for k, d in self._documents.items()}
        other._record_ids = dict(self._record_ids)
        other._last_record_id = self._last_record_id
        other._unique_ids = self._unique_ids
        other.collation = self.collation
        other.validation = self.validation
        other._indexes = {}
        for index_name_, index in self._indexes.items():
            copied = Index(copy_value(index.spec))
            copied.owners = dict(index.owners)
            other._indexes[index_name_] = copied
        return other

    snapshot = clone

    # --- writes ----------------------------------------------------------------------------

    def _prepare_new(self, document: Mapping[str, Any]) -> dict[str, Any]:
        if not isinstance(document, Mapping):
            raise bad_value("a document to insert must be an object")
        new: dict[str, Any] = copy_value(dict(document))
        if "_id" not in new:
            new = {"_id": self.id_factory(), **new}
        _check_id(new["_id"])
        return new

    def insert_one(self, document: Mapping[str, Any], *, bypass_validation: bool = False) -> Any:
        """Store a copy of ``document`` (an _id is made when absent); returns the _id."""
        new = self._prepare_new(document)
        check_storable(new, "insert")
        self._store(None, new, "insert", bypass_validation)
        return new["_id"]

    def insert_many(
        self, documents: Sequence[Mapping[str, Any]], *, ordered: bool = True, bypass_validation: bool = False,
    ) -> tuple[list[Any], list[tuple[int, CommandError]]]:
        """Insert each document; returns the inserted _ids and (position, error) pairs.
        Ordered inserts stop at the first error, as mongod's do."""
        inserted: list[Any] = []
        errors: list[tuple[int, CommandError]] = []
        for position, document in enumerate(documents):
            try:
                inserted.append(self.insert_one(document, bypass_validation=bypass_validation))
            except CommandError as error:
                errors.append((position, error))
                if ordered:
                    break
        return inserted, errors

    def _store(self, old_key: Any, new: dict[str, Any], kind: str, bypass_validation: bool = False) -> None:
        """Put ``new`` in place of the document under ``old_key`` (None: a new document),
        after checking the validator and every unique (or prepareUnique) index; nothing
        changes if one refuses it."""
        if self._unique_ids:
            new_key = hashable_key(new["_id"])
        else:  # (the key a new document's RecordId will be)
            new_key = old_key if old_key is not None else ("$recordId", self._last_record_id + 1)
        self._check_guard([old_key if old_key is not None else new_key])
        old = self._documents.get(old_key) if old_key is not None else None
        if self.validation is not None and not bypass_validation:
            self.validation.check(old, new)
        planned: list[tuple[Index, list[Any], list[Any]]] = []
        for index in self._indexes.values():
            new_entries = index.keys(new)
            old_entries = [k for k, _ in index.keys(old)] if old is not None else []
            if index.prepare_unique:
                for key, key_value in new_entries:
                    if key not in old_entries and self._other_holder(index, key, old_key):
                        raise self._duplicate(index, key_value)
            if index.unique:
                for key, key_value in new_entries:
                    owner = index.owners.get(key, MISSING)
                    if owner is not MISSING and owner != old_key:
                        raise self._duplicate(index, key_value)
            planned.append((index, old_entries, [k for k, _ in new_entries]))
        for index, old_entries, new_entries in planned:
            if not index.unique:
                continue
            for key in old_entries:
                if index.owners.get(key) == old_key:
                    del index.owners[key]
            for key in new_entries:
                index.owners[key] = new_key
        if self.on_write is not None:
            self.on_write(WriteEvent(kind, copy_value(old) if old is not None else None, copy_value(new)))
        if old_key is None:
            self._documents[new_key] = new
            self._new_record_id(new_key)
        elif old_key == new_key:
            self._documents[old_key] = new
        else:  # pragma: no cover - updates never change _id (ImmutableField)
            del self._documents[old_key]
            self._documents[new_key] = new

    def _other_holder(self, index: Index, key: Any, old_key: Any) -> bool:
        """Whether a document other than the one under ``old_key`` has ``key`` in ``index``
        (a prepareUnique index keeps no owners: it may hold duplicates from before)."""
        return any(
            stored_key != old_key and any(entry == key for entry, _ in index.keys(document))
            for stored_key, document in self._documents.items()
        )

    def _new_record_id(self, key: Any) -> None:
        self._last_record_id += 1
        self._record_ids[key] = self._last_record_id

    def _duplicate(self, index: Index, key_value: dict[str, Any]) -> CommandError:
        return CommandError(
            11000, "DuplicateKey",
            f"E11000 duplicate key error collection: {self.namespace} index: "
            f"{index.spec['name']} dup key: {render(key_value)}",
            keyPattern=copy_value(index.spec["key"]),
            keyValue=copy_value(key_value),
        )

    def _check_guard(self, keys: Sequence[Any]) -> None:
        if self.guard is not None:
            for key in keys:
                self.guard(key)

    def put_raw(self, key: Any, document: dict[str, Any] | None) -> None:
        """Set the document stored under ``key`` (None: remove it) with no guard, no
        ``on_write`` and no uniqueness check, keeping the unique indexes' owners in step: how
        a transaction's writes are applied at commit and how a snapshot undoes later writes."""
        old = self._documents.get(key)
        for index in self._indexes.values():
            if not index.unique:
                continue
            if old is not None:
                for entry, _ in index.keys(old):
                    if index.owners.get(entry) == key:
                        del index.owners[entry]
            if document is not None:
                for entry, _ in index.keys(document):
                    index.owners[entry] = key
        if document is None:
            self._documents.pop(key, None)
            self._record_ids.pop(key, None)
        else:  # in place: a replaced document keeps its natural order
            self._documents[key] = copy_value(document)
            if key not in self._record_ids:
                self._new_record_id(key)

    def _remove(self, key: Any) -> None:
        self._check_guard([key])
        old = self._documents.pop(key)
        self._record_ids.pop(key, None)
        if self.on_write is not None:
            self.on_write(WriteEvent("delete", copy_value(old), None))
        for index in self._indexes.values():
            if index.unique:
                for entry, _ in index.keys(old):
                    if index.owners.get(entry) == key:
                        del index.owners[entry]

    # --- reads -----------------------------------------------------------------------------

    def _matching(
        self, filter: Mapping[str, Any] | None, sort: Any = None, collation: Collation | None = None  # noqa: A002
    ) -> list[tuple[Any, dict[str, Any]]]:
        text = self.text_index()
        predicate = compile_filter(filter, collation, text=text)
        # (documents are stored by their _id's simple key: a collation may match other _ids)
        wanted = _id_equality(filter) if self._unique_ids and collation is None else MISSING
        if wanted is not MISSING:
            # the common "by _id" filter: a dictionary lookup instead of a scan
            key = hashable_key(wanted)
            found = self._documents.get(key)
            rows = [(key, found)] if found is not None and predicate(found) else []
        else:
            rows = [(k, d) for k, d in self._documents.items() if predicate(d)]
        if sort and list(sort) == ["$natural"]:
            if numeric_value(sort["$natural"]) == -1:
                rows.reverse()
        elif sort:
            order = sort_documents([d for _, d in rows], sort, collation)
            position = {id(d): i for i, d in enumerate(order)}
            rows.sort(key=lambda row: position[id(row[1])])
        return rows

    def find(
        self,
        filter: Mapping[str, Any] | None = None,  # noqa: A002
        projection: Mapping[str, Any] | None = None,
        *,
        sort: Mapping[str, Any] | None = None,
        skip: int = 0,
        limit: int = 0,
        hint: Any = None,
        return_key: bool = False,
        show_record_id: bool = False,
        collation: OperationCollation = MISSING,
    ) -> list[dict[str, Any]]:
        """Matching documents (copies), sorted, skipped, limited (0: no limit) and projected.
        ``return_key``: the keys of the index the plan scans instead (:mod:`.plan`; ``{}``
        for a collection scan, and the projection unused); ``show_record_id``: each result
        ends with ``$recordId``, the document's RecordId (an int64)."""
        if skip < 0:
            raise bad_value("skip value must be non-negative")
        effective = self._effective(collation)
        compiled = Projection(projection, collation=effective) if projection else None  # parsed even if unused
        clause = find_text_clause(filter)
        if clause is not MISSING:  # the documents carry their scores for the sort and projection
            by = (lambda docs: sort_documents(docs, sort, effective)) if sort else None
            rows = scored(self._matching(filter, None, effective), text_query(clause, self.text_index()), by)[skip:]
        else:
            rows = self._matching(filter, sort, effective)[skip:]
        if limit:
            rows = rows[: abs(limit)]
        if return_key:
            spec = chosen_index(self.planner_indexes(), filter, sort, hint)
            index = self._indexes[spec["name"]] if spec is not None else None
            results = [self._index_key(index, d) for _, d in rows]
        elif compiled is None:  # (returnKey keeps only the index keys)
            results = [copy_value(d) for _, d in rows]
        else:
            results = [compiled.apply(d, filter=filter) for _, d in rows]
        strip_scores(results)
        if show_record_id and not return_key:
            for (key, _), result in zip(rows, results, strict=True):
                result["$recordId"] = Int64(self._record_ids.get(key, 0))
        return results

    def text_index(self) -> TextIndex | None:
        """The collection's text index (it has at most one), which ``$text`` needs."""
        for index in self._indexes.values():
            if "_fts" in index.spec["key"]:
                return TextIndex(index.spec)
        return None

    @staticmethod
    def _index_key(index: Index | None, document: dict[str, Any]) -> dict[str, Any]:
        # a multikey document's first entry: mongod's scan returns each document once
        entries = index.keys(document) if index is not None else []
        return copy_value(entries[0][1]) if entries else {}

    def find_one(
        self, filter: Mapping[str, Any] | None = None, projection: Mapping[str, Any] | None = None  # noqa: A002
    ) -> dict[str, Any] | None:
        found = self.find(filter, projection, limit=1)
        return found[0] if found else None

    def count(
        self, filter: Mapping[str, Any] | None = None, *, skip: int = 0, limit: int = 0,  # noqa: A002
        collation: OperationCollation = MISSING,
    ) -> int:
        n = max(len(self._matching(filter, collation=self._effective(collation))) - max(skip, 0), 0)
        return min(n, abs(limit)) if limit else n

    def distinct(
        self, key: str, filter: Mapping[str, Any] | None = None, *, collation: OperationCollation = MISSING  # noqa: A002
    ) -> list[Any]:
        """The distinct values at ``key`` (array elements counted one by one; values equal
        under the collation count once, as the first one met)."""
        if not isinstance(key, str) or not key:
            raise failed_to_parse("distinct key must be a non-empty string")
        parts = split_path(key)
        effective = self._effective(collation)
        seen: dict[Any, Any] = {}
        for _, document in self._matching(filter, collation=effective):
            for leaf in lookup_leaves(document, parts):
                for value in leaf if isinstance(leaf, list) else [leaf]:
                    seen.setdefault(hashable_key(value, effective), copy_value(value))
        return list(seen.values())

    # --- updates and deletes ---------------------------------------------------------------

    def update(
        self,
        filter: Mapping[str, Any] | None,  # noqa: A002
        update: Any,
        *,
        multi: bool = False,
        upsert: bool = False,
        now: datetime.datetime | None = None,
        sort: Mapping[str, Any] | None = None,
        array_filters: list[Any] | None = None,
        collation: OperationCollation = MISSING,
        bypass_validation: bool = False,
    ) -> UpdateOutcome:
        """update one (or every, with ``multi``) matching document, or upsert one."""
        effective = self._effective(collation)
        parsed = Update(update, array_filters=array_filters, collation=effective)
        if multi and parsed.is_replacement:
            raise failed_to_parse("multi update is not supported for replacement-style update")
        rows = self._matching(filter, sort, effective)
        if not multi:
            rows = rows[:1]
        self._check_guard([key for key, _ in rows])
        if not rows:
            if not upsert:
                return UpdateOutcome(0, 0)
            return UpdateOutcome(0, 0, self._upsert(filter, parsed, now, bypass_validation))
        modified = 0
        for key, document in rows:
            candidate = copy_value(document)
            if parsed.apply(candidate, now=now, filter=filter):
                check_storable(candidate, "update")
                self._store(key, candidate, _kind(parsed), bypass_validation)
                modified += 1
        return UpdateOutcome(len(rows), modified)

    def _upsert(
        self, filter: Mapping[str, Any] | None, parsed: Update, now: datetime.datetime | None,  # noqa: A002
        bypass_validation: bool = False,
    ) -> Any:
        seed = upsert_seed(filter)
        if parsed.replacement is not None:
            document = copy_value(parsed.replacement)
            if "_id" in seed:
                if "_id" in document and hashable_key(document["_id"]) != hashable_key(seed["_id"]):
                    raise CommandError(
                        66, "ImmutableField",
                        "After applying the update, the (immutable) field '_id' was found to have "
                        f"been altered to _id: {render(document['_id'])}",
                    )
                document = {"_id": seed["_id"], **{k: v for k, v in document.items() if k != "_id"}}
        else:
            document = seed
            parsed.apply(document, now=now, inserting=True, filter=filter)
        if "_id" in document:
            document = {"_id": document["_id"], **{k: v for k, v in document.items() if k != "_id"}}
        new = self._prepare_new(document)
        check_storable(new, "upsert")
        self._store(None, new, "insert", bypass_validation)
        return new["_id"]

    def delete(
        self, filter: Mapping[str, Any] | None, *, limit: int = 0, collation: OperationCollation = MISSING  # noqa: A002
    ) -> int:
        """Delete matching documents (``limit=1``: only the first); returns how many."""
        rows = self._matching(filter, collation=self._effective(collation))
        if limit:
            rows = rows[:1]
        self._check_guard([key for key, _ in rows])
        for key, _ in rows:
            self._remove(key)
        return len(rows)

    def find_and_modify(
        self,
        query: Mapping[str, Any] | None = None,
        *,
        sort: Mapping[str, Any] | None = None,
        update: Any = None,
        remove: bool = False,
        new: bool = False,
        upsert: bool = False,
        fields: Mapping[str, Any] | None = None,
        now: datetime.datetime | None = None,
        array_filters: list[Any] | None = None,
        collation: OperationCollation = MISSING,
        bypass_validation: bool = False,
    ) -> tuple[dict[str, Any] | None, dict[str, Any]]:
        """findAndModify: returns (the document, or None; lastErrorObject)."""
        if remove and update is not None:
            raise failed_to_parse("Cannot specify both an update and remove=true")
        if not remove and update is None:
            raise failed_to_parse("Either an update or remove=true must be specified")
        if remove and new:
            raise failed_to_parse(
                "Cannot specify both new=true and remove=true; 'remove' always returns the deleted document"
            )
        if remove and upsert:
            raise failed_to_parse("Cannot specify both upsert=true and remove=true ")
        effective = self._effective(collation)
        projection = Projection(fields, collation=effective) if fields else None

        def shape(document: dict[str, Any] | None) -> dict[str, Any] | None:
            if document is None:
                return None
            return projection.apply(document, filter=query) if projection else copy_value(document)

        parsed = Update(update, array_filters=array_filters, collation=effective) if update is not None else None
        rows = self._matching(query, sort, effective)[:1]
        if remove:
            if not rows:
                return None, {"n": 0}
            key, document = rows[0]
            self._remove(key)
            return shape(document), {"n": 1}
        assert parsed is not None
        if not rows:
            if not upsert:
                return None, {"n": 0, "updatedExisting": False}
            upserted_id = self._upsert(query, parsed, now, bypass_validation)
            stored = self._documents[hashable_key(upserted_id)]
            return (shape(stored) if new else None), {
                "n": 1, "updatedExisting": False, "upserted": upserted_id,
            }
        key, document = rows[0]
        candidate = copy_value(document)
        if parsed.apply(candidate, now=now, filter=query):
            check_storable(candidate, "update")
            self._store(key, candidate, _kind(parsed), bypass_validation)
        return shape(candidate if new else document), {"n": 1, "updatedExisting": True}

    # --- indexes ---------------------------------------------------------------------------

    def list_indexes(self) -> list[dict[str, Any]]:
        """The index specs as listIndexes returns them."""
        return [copy_value(index.spec) for index in self._indexes.values()]

    def planner_indexes(self) -> list[dict[str, Any]]:
        """The specs of the indexes the planner may scan or a hint may name (a hidden
        index is not one of them)."""
        return [spec for spec in self.list_indexes() if not spec.get("hidden")]

    def create_indexes(self, specs: Sequence[Mapping[str, Any]], *, created_collection: bool = False) -> dict[str, Any]:
        """createIndexes: validate, build (checking uniqueness over existing data), reply."""
        if not isinstance(specs, list | tuple) or not specs:
            raise bad_value("Must specify at least one index to create")
        before = len(self._indexes)
        added: list[Index] = []
        for raw in specs:
            spec = validate_index_spec(raw, self.collation)
            if conflicting(self._indexes, spec):
                continue
            index = Index(spec)
            for key, document in self._documents.items():
                for entry, key_value in index.keys(document):
                    if index.unique and index.owners.get(entry, key) != key:
                        raise self._duplicate(index, key_value)
                    if index.unique:
                        index.owners[entry] = key
            added.append(index)
        for index in added:
            self._indexes[index.spec["name"]] = index
        reply: dict[str, Any] = {
            "numIndexesBefore": before,
            "numIndexesAfter": len(self._indexes),
            "createdCollectionAutomatically": created_collection,
        }
        if not added:
            reply["note"] = "all indexes already exist"
        reply["ok"] = 1.0
        return reply

    def drop_indexes(self, index: Any) -> dict[str, Any]:
        """dropIndexes with "*", a name, a key pattern or a list of names."""
        was = len(self._indexes)
        if index == "*":
            for name in [n for n in self._indexes if n != "_id_"]:
                del self._indexes[name]
            return {"nIndexesWas": was, "ok": 1.0}
        names = index if isinstance(index, list) else [index]
        resolved = [resolve_index(self._indexes, n) for n in names]
        for name in resolved:
            del self._indexes[name]
        return {"nIndexesWas": was, "ok": 1.0}

    def modify_index(self, request: Mapping[str, Any], *, dry_run: bool = False) -> dict[str, Any]:
        """collMod's ``index`` (checked by :func:`.indexes.parse_index_modification`): change
        the index it names; returns the reply's ``*_old``/``*_new`` fields.  A conversion to
        unique (or a ``dry_run`` of one) fails with CannotConvertIndexToUnique (359) and its
        ``violations`` while documents share a key."""
        index = find_index(self._indexes, request, self.namespace)
        spec, reply, count = plan_index_modification(index, request)
        if dry_run and count > 1:
            raise CommandError(72, "InvalidOptions", "unique: true cannot be combined with any other modification in dry run mode.")
        if "prepareUnique_new" in reply and count > 1:
            raise CommandError(72, "InvalidOptions", "prepareUnique cannot be combined with any other modification.")
        if request.get("unique") and not index.unique:
            violations = duplicate_groups(index, self._documents)
            if violations:
                raise CommandError(
                    359, "CannotConvertIndexToUnique",
                    "Cannot convert the index to unique. Please resolve conflicting documents before running collMod again.",
                    violations=violations,
                )
        if dry_run:
            return {}
        changed = Index(spec)
        if changed.unique:
            for key, document in self._documents.items():
                for entry, _ in changed.keys(document):
                    changed.owners[entry] = key
        self._indexes[spec["name"]] = changed
        return reply


def _kind(parsed: Update) -> str:
    return "replace" if parsed.is_replacement else "update"


def _id_equality(filter: Mapping[str, Any] | None) -> Any:  # noqa: A002
    """The _id value a filter of the form {_id: v} or {_id: {$eq: v}} asks for, else MISSING."""
    if not isinstance(filter, Mapping) or list(filter) != ["_id"]:
        return MISSING
    value = filter["_id"]
    if isinstance(value, Mapping) and list(value) == ["$eq"]:
        value = value["$eq"]
    elif is_operator_document(value):
        return MISSING
    if isinstance(value, list | Regex | re.Pattern) or value is None:
        return MISSING  # arrays, regexes and null match more than one key shape
    return value


def _check_id(value: Any) -> None:
    if isinstance(value, list):
        raise CommandError(53, "InvalidIdField", "The '_id' value cannot be of type array")
    if isinstance(value, Regex | re.Pattern):
        raise CommandError(53, "InvalidIdField", "The '_id' value cannot be of type regex")
    if isinstance(value, Undefined):
        raise CommandError(53, "InvalidIdField", "The '_id' value cannot be of type undefined")
    if isinstance(value, Mapping):
        refused = _dollar_prefixed_name(value)
        if refused is not None:
            # an _id is stored as the key of its index, where a $-name could pass for an
            # operator; mongod refuses it at any depth inside the _id
            raise CommandError(
                52, "DollarPrefixedFieldName",
                f"_id fields may not contain '$'-prefixed fields: {refused} is not valid for storage.",
            )


def _dollar_prefixed_name(value: Any) -> str | None:
    """The first $-prefixed field name in ``value``'s documents (depth first), else None; a
    document opening as a DBRef ($ref: string, $id, optional $db: string) keeps those three,
    unlooked into, as mongod's storage check does."""
    if isinstance(value, list):
        items: list[tuple[str, Any]] = [("", v) for v in value]
    elif isinstance(value, Mapping):
        items = list(value.items())
        if len(items) >= 2 and items[0][0] == "$ref" and isinstance(items[0][1], str) and items[1][0] == "$id":
            dbref = 3 if len(items) > 2 and items[2][0] == "$db" and isinstance(items[2][1], str) else 2
            items = items[dbref:]
    else:
        return None
    for name, inner in items:
        if name.startswith("$"):
            return name
        refused = _dollar_prefixed_name(inner)
        if refused is not None:
            return refused
    return None
