"""Entity operations: the format's operation names turned into calls of the client's
PyMongo-shaped API.

Input: the entity (client, database, collection, session, cursor or change stream), the
operation's name and its arguments (``session`` already resolved, concerns converted), and
``nested``, which runs a callback's operations (withTransaction).  Output: the result as the format sees it (model objects as documents, iterables fully
iterated unless the operation says otherwise).  An operation or option the runner or the client
under test does not have raises :class:`~.matching.UnsupportedInTest` naming it.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from .entities import ClientEntity, call_api, call_class, snake
from .matching import UnsupportedInTest

if TYPE_CHECKING:
    from .driver import Driver

__all__ = ["entity_kind", "execute", "snake", "to_document"]

#: runs a list of operations (withTransaction's callback) with their expectations
Nested = Callable[[list[Mapping[str, Any]]], None]

RESULT_FIELDS = (
    ("inserted_id", "insertedId"), ("inserted_ids", "insertedIds"),
    ("inserted_count", "insertedCount"), ("matched_count", "matchedCount"),
    ("modified_count", "modifiedCount"), ("deleted_count", "deletedCount"),
    ("upserted_count", "upsertedCount"), ("upserted_id", "upsertedId"),
    ("upserted_ids", "upsertedIds"), ("insert_results", "insertResults"),
    ("update_results", "updateResults"), ("delete_results", "deleteResults"),
)


def entity_kind(entity: Any) -> str:
    """What an entity is, from its class (never the instance: PyMongo's Database and
    Collection answer any attribute with a sub-collection)."""
    if isinstance(entity, ClientEntity):
        return "client"
    cls = type(entity)
    if hasattr(cls, "insert_one"):
        return "collection"
    if hasattr(cls, "get_collection") and hasattr(cls, "command"):
        return "database"
    if hasattr(cls, "end_session") or hasattr(cls, "start_transaction"):
        return "session"
    if hasattr(cls, "upload_from_stream") or hasattr(cls, "open_download_stream"):
        return "bucket"
    if hasattr(cls, "__next__") or hasattr(cls, "try_next"):
        return "cursor"
    return cls.__name__


def _client_bulk_entry(result: Any) -> Any:
    """One op's result in MongoClient.bulkWrite's verbose results: the format's update result
    there has no upsertedCount, and its upsertedId is absent unless the op upserted (an _id
    of null is still an upsert: a library that says whether it upserted is asked)."""
    document = to_document(result)
    if not isinstance(document, dict) or "matchedCount" not in document:
        return document
    document.pop("upsertedCount", None)
    upserted = getattr(result, "did_upsert", None)
    if upserted is None:
        upserted = document.get("upsertedId") is not None
    if not upserted:
        document.pop("upsertedId", None)
    return document


def to_document(result: Any) -> Any:
    """Model objects as documents; everything else as it is."""
    if result is None or isinstance(result, (Mapping, list, str, int, float, bytes)):
        return result
    if getattr(result, "acknowledged", True) is False:
        return {"acknowledged": False}
    document: dict[str, Any] = {}
    for attr, key in RESULT_FIELDS:
        try:
            value = getattr(result, attr)
        except (AttributeError, Exception):  # noqa: BLE001 -- PyMongo raises on unavailable fields
            continue
        if key == "insertedIds" and isinstance(value, list):
            value = dict(enumerate(value))
        if key in ("insertResults", "updateResults", "deleteResults") and isinstance(value, Mapping):
            value = {str(k): _client_bulk_entry(v) for k, v in value.items()}
        elif isinstance(value, Mapping):
            value = {str(k): to_document(v) for k, v in value.items()}
        document[key] = value
    if hasattr(result, "upserted_ids") and "upsertedIds" in document and document["upsertedIds"] is None:
        document["upsertedIds"] = {}
    if "upsertedId" in document and "upsertedCount" not in document:
        # an UpdateResult tells its upserted _id only; the format also wants the count
        document["upsertedCount"] = 0 if document["upsertedId"] is None else 1
    return document if document else result


def _options(driver: Driver, arguments: Mapping[str, Any], skip: tuple[str, ...] = ()) -> dict[str, Any]:
    options: dict[str, Any] = {}
    for key, value in arguments.items():
        if key in skip:
            continue
        if key == "timeoutMode" and driver.name == "pymongo":
            raise UnsupportedInTest("timeoutMode (PyMongo's API has none to mirror)")
        if key == "returnDocument":
            if value not in ("Before", "After"):
                raise ValueError(f"returnDocument must be Before or After, not {value!r}")
            value = value == "After"
        options[key] = value
    return options


WATCH_OPTIONS = ("fullDocument", "fullDocumentBeforeChange", "resumeAfter", "startAfter",
                 "startAtOperationTime", "maxAwaitTimeMS", "batchSize", "collation", "comment",
                 "showExpandedEvents", "session")


def _watch(driver: Driver, target: Any, arguments: Mapping[str, Any]) -> Any:
    unknown = set(arguments) - set(WATCH_OPTIONS) - {"pipeline"}
    if unknown:
        raise UnsupportedInTest(f"createChangeStream option(s) {sorted(unknown)} not supported by this runner")
    return call_api(target, "watch", list(arguments.get("pipeline", [])), **_options(driver, arguments, ("pipeline",)))


def _bulk_models(driver: Driver, requests: list[Mapping[str, Any]], client_level: bool) -> list[Any]:
    module = driver.write_models
    if module is None:
        raise UnsupportedInTest("the client under test has no bulk write models")
    models = []
    for request in requests:
        ((kind, fields),) = request.items()
        cls = getattr(module, kind[:1].upper() + kind[1:], None)
        if cls is None:
            raise UnsupportedInTest(f"the client under test has no {kind} write model")
        options = _options(driver, fields)
        if not client_level:
            options.pop("namespace", None)
        models.append(call_class(cls, options))
    return models


def _parameters(function: Any) -> Mapping[str, Any]:
    try:
        return inspect.signature(function).parameters
    except (TypeError, ValueError):
        return {}


def _run_command(driver: Driver, database: Any, arguments: Mapping[str, Any]) -> Any:
    command = arguments["command"]
    options = _options(driver, arguments, ("command", "commandName"))
    return call_api(database, "command", command, **options)


def _index_keys(keys: Mapping[str, Any]) -> list[tuple[str, Any]]:
    return list(keys.items())


SEARCH_INDEX_OPERATIONS = frozenset(
    {"createSearchIndex", "createSearchIndexes", "dropSearchIndex", "listSearchIndexes", "updateSearchIndex"}
)


def _search_index_model(driver: Driver, model: Mapping[str, Any]) -> Any:
    if driver.search_index_model is None:
        raise UnsupportedInTest("the client under test has no SearchIndexModel (search index helpers)")
    return call_class(driver.search_index_model, _options(driver, model))


def _search_index(driver: Driver, collection: Any, name: str, args: dict[str, Any]) -> Any:
    """The Atlas Search index helpers, on PyMongo's API."""
    if name == "createSearchIndex":
        model = _search_index_model(driver, args.pop("model"))
        return call_api(collection, "create_search_index", model, **_options(driver, args))
    if name == "createSearchIndexes":
        models = [_search_index_model(driver, m) for m in args.pop("models")]
        return call_api(collection, "create_search_indexes", models, **_options(driver, args))
    if name == "dropSearchIndex":
        return call_api(collection, "drop_search_index", args.pop("name"), **_options(driver, args))
    if name == "updateSearchIndex":
        index, definition = args.pop("name"), args.pop("definition")
        return call_api(collection, "update_search_index", index, definition, **_options(driver, args))
    aggregation = _options(driver, args.pop("aggregationOptions", {}))
    index_name = args.pop("name", None)
    return list(
        call_api(collection, "list_search_indexes", index_name, **_options(driver, args), **aggregation)
    )


_TAKEN = object()  # StartedCursor: its first result has been handed out
_NO_DOCUMENT = object()  # StartedCursor: the first iteration ended without a document


class StartedCursor:
    """A find cursor the runner has iterated once (createFindCursor).

    The unified format asks that createFindCursor run the find, and that a runner for a driver
    whose find waits for the first iteration (both clients' do) iterate the cursor once and
    give that result to the test's first iteration.  Everything else goes to the cursor."""

    def __init__(self, cursor: Any) -> None:
        self._cursor = cursor
        self._first: Any = _NO_DOCUMENT
        if hasattr(cursor, "try_next"):
            document = cursor.try_next()  # one round: the find, and a document if it had one
            self._first = _NO_DOCUMENT if document is None else document
        else:
            try:
                self._first = next(cursor)
            except StopIteration:
                pass

    def _take_first(self) -> Any:
        first, self._first = self._first, _TAKEN
        return first

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cursor, name)

    def __iter__(self) -> StartedCursor:
        return self

    def __next__(self) -> Any:
        if self._first is _TAKEN:
            return next(self._cursor)
        first = self._take_first()
        if first is _NO_DOCUMENT:
            raise StopIteration
        return first

    @property
    def try_next(self) -> Callable[[], Any]:
        inner = self._cursor.try_next  # (AttributeError, as hasattr expects, without one)

        def try_next() -> Any:
            if self._first is _TAKEN:
                return inner()
            first = self._take_first()
            return None if first is _NO_DOCUMENT else first

        return try_next


def _find(driver: Driver, collection: Any, name: str, args: dict[str, Any]) -> Any:
    """find, createFindCursor and findOne: the options PyMongo sets on the cursor rather than
    as find's keywords (cursorType as the library's constant, maxAwaitTimeMS by method)."""
    if "cursorType" in args:
        kind = args.pop("cursorType")
        if kind not in driver.cursor_types:
            raise UnsupportedInTest(f"the client under test has no cursor type {kind!r}")
        args["cursorType"] = driver.cursor_types[kind]
    max_await = args.pop("maxAwaitTimeMS", None)
    filter_ = args.pop("filter", {})
    if name == "findOne":
        return call_api(collection, "find_one", filter_, **_options(driver, args))
    cursor = call_api(collection, "find", filter_, **_options(driver, args))
    if max_await is not None:
        cursor = call_api(cursor, "max_await_time_ms", max_await)
    return StartedCursor(cursor) if name == "createFindCursor" else list(cursor)


def _collection(driver: Driver, collection: Any, name: str, arguments: dict[str, Any]) -> Any:
    args = dict(arguments)
    if name in ("insertOne",):
        return to_document(call_api(collection, "insert_one", args.pop("document"), **_options(driver, args)))
    if name == "insertMany":
        return to_document(call_api(collection, "insert_many", args.pop("documents"), **_options(driver, args)))
    if name in ("updateOne", "updateMany"):
        method = "update_one" if name == "updateOne" else "update_many"
        return to_document(call_api(collection, method, args.pop("filter"), args.pop("update"), **_options(driver, args)))
    if name == "replaceOne":
        return to_document(
            call_api(collection, "replace_one", args.pop("filter"), args.pop("replacement"), **_options(driver, args))
        )
    if name in ("deleteOne", "deleteMany"):
        method = "delete_one" if name == "deleteOne" else "delete_many"
        return to_document(call_api(collection, method, args.pop("filter"), **_options(driver, args)))
    if name in ("find", "createFindCursor", "findOne"):
        if "filter" not in args and name != "findOne":
            raise ValueError(f"{name} needs a filter")
        return _find(driver, collection, name, args)
    if name == "listIndexNames":
        return list(call_api(collection, "index_information", **_options(driver, args)))
    if name == "dropIndexes":
        return call_api(collection, "drop_indexes", **_options(driver, args))
    if name == "count":
        raise UnsupportedInTest("the count helper (PyMongo 4 has no Collection.count; countDocuments replaces it)")
    if name == "aggregate":
        return list(call_api(collection, "aggregate", list(args.pop("pipeline")), **_options(driver, args)))
    if name == "countDocuments":
        return call_api(collection, "count_documents", args.pop("filter"), **_options(driver, args))
    if name == "estimatedDocumentCount":
        return call_api(collection, "estimated_document_count", **_options(driver, args))
    if name == "distinct":
        return call_api(collection, "distinct", args.pop("fieldName"), args.pop("filter", None), **_options(driver, args))
    if name in ("findOneAndUpdate", "findOneAndReplace", "findOneAndDelete"):
        method = snake(name)
        positional = [args.pop("filter")]
        if name != "findOneAndDelete":
            positional.append(args.pop("update" if name == "findOneAndUpdate" else "replacement"))
        return call_api(collection, method, *positional, **_options(driver, args))
    if name == "bulkWrite":
        models = _bulk_models(driver, args.pop("requests"), client_level=False)
        return to_document(call_api(collection, "bulk_write", models, **_options(driver, args)))
    if name == "createChangeStream":
        return _watch(driver, collection, args)
    if name == "createIndex":
        keys = _index_keys(args.pop("keys"))
        if hasattr(type(collection), "create_index"):
            return call_api(collection, "create_index", keys, **_options(driver, args))
        index = {"key": dict(keys), **args}
        return collection.database.command({"createIndexes": collection.name, "indexes": [index]})
    if name == "dropIndex":
        if hasattr(type(collection), "drop_index"):
            return call_api(collection, "drop_index", args.pop("name"), **_options(driver, args))
        return collection.database.command({"dropIndexes": collection.name, "index": args["name"]})
    if name in SEARCH_INDEX_OPERATIONS:
        return _search_index(driver, collection, name, args)
    if name == "listIndexes":
        return list(call_api(collection, "list_indexes", **_options(driver, args)))
    if name == "drop":
        return call_api(collection, "drop", **_options(driver, args))
    if name == "rename":
        if hasattr(type(collection), "rename"):
            to = args.pop("to")
            return call_api(collection, "rename", to, **{k: v for k, v in args.items()})
        command: dict[str, Any] = {
            "renameCollection": collection.full_name,
            "to": f"{collection.database.name}.{args['to']}",
        }
        if "dropTarget" in args:
            command["dropTarget"] = args["dropTarget"]
        return collection.database.client.admin.command(command)
    raise UnsupportedInTest(f"collection operation {name!r} is not implemented by this runner")


def _database(driver: Driver, database: Any, name: str, arguments: dict[str, Any]) -> Any:
    args = dict(arguments)
    if name == "runCommand":
        return _run_command(driver, database, args)
    if name == "createCollection":
        collection = args.pop("collection")
        session = args.pop("session", None)
        extra = {"session": session} if session is not None else {}
        if "check_exists" in _parameters(database.create_collection):
            extra["check_exists"] = False  # the test expects create alone, no listCollections
        return call_api(database, "create_collection", collection, **extra, **args)
    if name == "dropCollection":
        return call_api(database, "drop_collection", args.pop("collection"), **_options(driver, args))
    if name == "modifyCollection":
        # PyMongo (and so our client) has no helper: the collMod command, as its users run it
        session = args.pop("session", None)
        command = {"collMod": args.pop("collection"), **args}
        extra = {"session": session} if session is not None else {}
        return call_api(database, "command", command, **extra)
    if name == "listCollections":
        if "batchSize" in args:  # a listCollections field inside its cursor document
            args = {**args, "cursor": {"batchSize": args["batchSize"]}}
            del args["batchSize"]
        return list(call_api(database, "list_collections", **_options(driver, args)))
    if name == "listCollectionNames":
        return call_api(database, "list_collection_names", **_options(driver, args))
    if name == "aggregate":
        return list(call_api(database, "aggregate", list(args.pop("pipeline")), **_options(driver, args)))
    if name == "createChangeStream":
        return _watch(driver, database, args)
    if name == "drop":
        return call_api(database, "drop", **_options(driver, args))
    if name in ("runCursorCommand", "createCommandCursor"):
        command = args.pop("command")
        args.pop("commandName", None)
        args.pop("cursorType", None)  # the command itself says tailable/awaitData
        batch_size = args.pop("batchSize", None)  # the getMores' batch size, set on the cursor
        if "maxTimeMS" in args:  # the getMores' maxTimeMS: PyMongo's max_await_time_ms
            args["maxAwaitTimeMS"] = args.pop("maxTimeMS")
        unknown = set(args) - {"session", "comment", "maxAwaitTimeMS", "readPreference"}
        if unknown:  # cursor_command takes **kwargs into the command: never pass unknown options
            raise UnsupportedInTest(f"{name} option(s) {sorted(unknown)} not supported by this runner")
        cursor = call_api(database, "cursor_command", command, **_options(driver, args))
        if batch_size is not None:
            cursor = call_api(cursor, "batch_size", batch_size)
        return list(cursor) if name == "runCursorCommand" else cursor
    raise UnsupportedInTest(f"database operation {name!r} is not implemented by this runner")


def _client(driver: Driver, entity: ClientEntity, name: str, arguments: dict[str, Any]) -> Any:
    client = entity.client
    args = dict(arguments)
    if name == "close":
        entity.close()
        return None
    if name == "listDatabases":
        return list(call_api(client, "list_databases", **_options(driver, args)))
    if name == "listDatabaseNames":
        return call_api(client, "list_database_names", **_options(driver, args))
    if name == "createChangeStream":
        return _watch(driver, client, args)
    if name == "clientBulkWrite":
        models = _bulk_models(driver, args.pop("models"), client_level=True)
        return to_document(call_api(client, "bulk_write", models, **_options(driver, args)))
    raise UnsupportedInTest(f"client operation {name!r} is not implemented by this runner")


def _cursor(cursor: Any, name: str, wait_seconds: float) -> Any:
    if name == "iterateUntilDocumentOrError":
        # next() would wait for ever on a change stream that gets nothing; try_next() is one
        # round of next()'s loop (a getMore when the batch is empty), bounded here. A cursor
        # without try_next (PyMongo's Cursor) ends next() at a tailable cursor's empty getMore
        # while the cursor stays alive: "until a document or an error" calls it again.
        deadline = time.monotonic() + wait_seconds
        while time.monotonic() < deadline:
            if hasattr(cursor, "try_next"):
                document = cursor.try_next()
            else:
                try:
                    return next(cursor)
                except StopIteration:
                    document = None
            if document is not None:
                return document
            if not getattr(cursor, "alive", True):
                raise StopIteration
        raise AssertionError(f"iterateUntilDocumentOrError: no document and no error in {wait_seconds} s")
    if name == "iterateOnce":
        if hasattr(cursor, "try_next"):
            return cursor.try_next()
        try:
            return next(cursor)
        except StopIteration:
            return None
    if name == "close":
        try:
            cursor.close()
        except Exception:  # noqa: BLE001 -- the format says errors of close are suppressed
            pass
        return None
    raise UnsupportedInTest(f"cursor operation {name!r} is not implemented by this runner")


def _session(
    driver: Driver, session: Any, name: str, arguments: dict[str, Any], nested: Nested
) -> Any:
    if name == "withTransaction":
        args = dict(arguments)
        operations = args.pop("callback")
        return call_api(session, "with_transaction", lambda _session: nested(operations), **_options(driver, args))
    if name == "getSnapshotTime":
        if not hasattr(type(session), "snapshot_time"):
            raise UnsupportedInTest("the client under test's session does not tell its snapshot time")
        return session.snapshot_time
    if name == "startTransaction":
        return call_api(session, "start_transaction", **_options(driver, arguments))
    if name in ("commitTransaction", "abortTransaction", "endSession"):
        return call_api(session, snake(name))
    raise UnsupportedInTest(f"session operation {name!r} is not implemented by this runner")


def execute(
    driver: Driver,
    entity: Any,
    name: str,
    arguments: dict[str, Any],
    nested: Nested,
    wait_seconds: float = 10.0,
) -> Any:
    """Run operation ``name`` on ``entity`` (see the module docstring); iterating a change
    stream until a document comes gives up after ``wait_seconds``."""
    kind = entity_kind(entity)
    if kind == "collection":
        return _collection(driver, entity, name, arguments)
    if kind == "database":
        return _database(driver, entity, name, arguments)
    if kind == "client":
        return _client(driver, entity, name, arguments)
    if kind == "cursor":
        return _cursor(entity, name, wait_seconds)
    if kind == "session":
        return _session(driver, entity, name, arguments, nested)
    if kind == "bucket":
        from .gridfs_ops import bucket_operation

        return bucket_operation(entity, name, arguments)
    raise UnsupportedInTest(f"operation {name!r} on a {kind} entity is not implemented by this runner")
