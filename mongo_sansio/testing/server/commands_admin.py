"""Administrative commands: ping, buildInfo, serverStatus, create, drop, dropDatabase,
renameCollection, createIndexes, listIndexes, dropIndexes, listCollections (listDatabases
and dbStats are :mod:`.db_stats`'s),
endSessions, killAllSessions, killSessions, replSetStepDown, replSetFreeze, replSetGetStatus,
configureFailPoint, and authenticate / createUser / updateUser (checked, then refused).
Views are :mod:`.views`' (the dispatcher hands it the commands that create or name one);
listCollections lists them after the collections.  The
replSet commands answer NoReplicationEnabled (76) on a standalone server.

Inputs: a :class:`~.context.Context`.  Outputs: mongod's reply documents; catalogue changes
are logged to the oplog as "c" entries (create, drop, dropDatabase, renameCollection,
createIndexes, dropIndexes).  Failures are raised as CommandError.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mongo_sansio.bson import Int64
from mongo_sansio.testing.engine import Collection, CommandError
from mongo_sansio.testing.engine.collation import parse_collation
from mongo_sansio.testing.engine.validation import validation_options
from mongo_sansio.testing.server.collection_kinds import (
    clustered_options,
    listed_collection,
    listed_indexes,
    timeseries_index,
    timeseries_options,
)
from mongo_sansio.testing.server.commands_crud import collection_name
from mongo_sansio.testing.server.context import CommandSpec, Context, Outcome
from mongo_sansio.testing.server.handshake import member_position, op_time
from mongo_sansio.testing.server.oplog import wall_datetime
from mongo_sansio.testing.server.replset import PRIMARY, SECONDARY
from mongo_sansio.testing.server.sessions import session_key
from mongo_sansio.testing.server.tailable import capped_options
from mongo_sansio.testing.server.views import listed_views

__all__ = ["ADMIN_COMMANDS", "VERSIONS"]

VERSIONS = {21: ("7.0.12", [7, 0, 12, 0]), 25: ("8.0.3", [8, 0, 3, 0])}


def _ns_not_found(message: str = "ns not found") -> CommandError:
    return CommandError(26, "NamespaceNotFound", message)


def _admin_only(ctx: Context) -> None:
    if ctx.db != "admin":
        raise CommandError(13, "Unauthorized", f"{ctx.request.name} may only be run against the admin database.")


def ping(ctx: Context) -> Outcome:
    return {"ok": 1.0}


def build_info(ctx: Context) -> Outcome:
    version, array = VERSIONS[ctx.cluster.max_wire_version]
    return {
        "version": version, "gitVersion": "0" * 40, "versionArray": array, "bits": 64,
        "maxBsonObjectSize": 16 * 1024 * 1024, "storageEngines": ["wiredTiger"],
        "modules": [], "javascriptEngine": "none", "debug": False, "ok": 1.0,
    }


def create(ctx: Context) -> Outcome:
    name = collection_name(ctx)
    # (create's parser knows a collation's fields, so it names them under create.collation)
    given = ctx.body.get("collation")
    collation = parse_collation(given, "create.collation", "create.collation") if given is not None else None
    validation = validation_options(ctx.body, "create", ctx.db)
    if validation is not None and "timeseries" in ctx.body:
        raise CommandError(72, "InvalidOptions", "Document validators are not supported on time-series collections")
    existing = ctx.collection(ctx.db, name)
    if existing is not None:
        # mongod 7.0 and later (SERVER-60064): the same options again are a success with
        # nothing done, as mongos always answered; other options are NamespaceExists
        asked = listed_collection(name, capped_options(ctx.body), clustered_options(ctx.body),
                                  timeseries_options(ctx.body), collation.document() if collation else None,
                                  validation=validation.listed() if validation is not None else None)
        found = _listed(ctx, name, existing)
        if asked["type"] == found["type"] and asked["options"] == found["options"]:
            return {"ok": 1.0}
        raise CommandError(48, "NamespaceExists", f"Collection {ctx.db}.{name} already exists.")
    if ctx.txn is not None:  # created at commit, with the transaction's writes
        made = ctx.collection(ctx.db, name, create=True)
        if made is not None:
            made.set_collation(collation)
            made.validation = validation
        return {"ok": 1.0}
    from mongo_sansio.testing.server.coll_mod import set_images

    set_images(ctx, name, ctx.body.get("changeStreamPreAndPostImages"))
    capped = capped_options(ctx.body)
    clustered = clustered_options(ctx.body)
    timeseries = timeseries_options(ctx.body)
    created = ctx.cluster.collection(ctx.db, name, create=True)
    if created is not None:
        created.set_collation(collation)
        created.validation = validation
    if timeseries is not None and created is not None:
        ctx.cluster.timeseries[f"{ctx.db}.{name}"] = timeseries
        created.allow_duplicate_ids()
        default_index = timeseries_index(timeseries)
        if default_index is not None:
            created.create_indexes([default_index])
    if capped is not None:
        ctx.cluster.capped[f"{ctx.db}.{name}"] = capped
    if clustered is not None:
        ctx.cluster.clustered[f"{ctx.db}.{name}"] = clustered
    return {"ok": 1.0}


def drop(ctx: Context) -> Outcome:
    name = collection_name(ctx)
    collections = ctx.cluster.databases.get(ctx.db, {})
    if name not in collections:
        # mongod 7.0 answers ok for a missing collection (since 7.0, no NamespaceNotFound).
        return {"ok": 1.0}
    found = collections.pop(name)
    ctx.cluster.image_namespaces.discard(f"{ctx.db}.{name}")
    ctx.cluster.capped.pop(f"{ctx.db}.{name}", None)
    ctx.cluster.clustered.pop(f"{ctx.db}.{name}", None)
    ctx.cluster.timeseries.pop(f"{ctx.db}.{name}", None)
    ctx.cluster.log("c", "drop", f"{ctx.db}.$cmd", command={"drop": name}, ui=found.uuid)
    if not collections:
        ctx.cluster.databases.pop(ctx.db, None)
    return {"nIndexesWas": len(found.list_indexes()), "ns": found.namespace, "ok": 1.0}


def drop_database(ctx: Context) -> Outcome:
    collections = ctx.cluster.databases.pop(ctx.db, None)
    if collections:
        for name, found in list(collections.items()):
            ctx.cluster.image_namespaces.discard(f"{ctx.db}.{name}")
            ctx.cluster.capped.pop(f"{ctx.db}.{name}", None)
            ctx.cluster.clustered.pop(f"{ctx.db}.{name}", None)
            ctx.cluster.timeseries.pop(f"{ctx.db}.{name}", None)
            ctx.cluster.log("c", "drop", f"{ctx.db}.$cmd", command={"drop": name}, ui=found.uuid)
        ctx.cluster.log("c", "dropDatabase", f"{ctx.db}.$cmd", command={"dropDatabase": 1})
    return {"dropped": ctx.db, "ok": 1.0}


def _split_ns(value: Any, field: str) -> tuple[str, str]:
    if not isinstance(value, str) or "." not in value:
        raise CommandError(73, "InvalidNamespace", f"Invalid namespace specified '{value}'")
    database, name = value.split(".", 1)
    if not database or not name:
        raise CommandError(73, "InvalidNamespace", f"Invalid {field} namespace: {value}")
    return database, name


def rename_collection(ctx: Context) -> Outcome:
    _admin_only(ctx)
    source_db, source = _split_ns(ctx.body.get("renameCollection"), "source")
    target_db, target = _split_ns(ctx.body.get("to"), "target")
    cluster = ctx.cluster
    found = cluster.collection(source_db, source)
    if found is None:
        raise _ns_not_found("Source collection " + f"{source_db}.{source} does not exist")
    if (source_db, source) == (target_db, target):
        raise CommandError(20, "IllegalOperation", "Can't rename a collection to itself")
    command: dict[str, Any] = {"renameCollection": f"{source_db}.{source}", "to": f"{target_db}.{target}"}
    replaced = cluster.collection(target_db, target)
    if replaced is not None:
        if not ctx.body.get("dropTarget"):
            raise CommandError(48, "NamespaceExists", "target namespace exists")
        cluster.databases[target_db].pop(target)
        cluster.log("c", "drop", f"{target_db}.$cmd", command={"drop": target}, ui=replaced.uuid)
        # (mongod's rename entry names the collection it replaced by UUID; change streams
        # with expanded events show it in the rename's operationDescription)
        command["dropTarget"] = replaced.uuid
    cluster.databases[source_db].pop(source)
    if not cluster.databases[source_db]:
        cluster.databases.pop(source_db)
    moved = found.clone(database=target_db, name=target)
    if source_db != target_db:
        # (across databases mongod copies the documents into a new collection and drops the
        # source: the copy has a UUID of its own; within one database the UUID is kept)
        moved.uuid = None
    cluster.adopt(moved)
    if f"{source_db}.{source}" in cluster.image_namespaces:  # the option moves with the collection
        cluster.image_namespaces.discard(f"{source_db}.{source}")
        cluster.image_namespaces.add(f"{target_db}.{target}")
    if f"{source_db}.{source}" in cluster.capped:
        cluster.capped[f"{target_db}.{target}"] = cluster.capped.pop(f"{source_db}.{source}")
    if f"{source_db}.{source}" in cluster.timeseries:
        cluster.timeseries[f"{target_db}.{target}"] = cluster.timeseries.pop(f"{source_db}.{source}")
    if f"{source_db}.{source}" in cluster.clustered:
        cluster.clustered[f"{target_db}.{target}"] = cluster.clustered.pop(f"{source_db}.{source}")
    cluster.log("c", "renameCollection", f"{source_db}.$cmd", command=command, ui=found.uuid)
    return {"ok": 1.0}


def create_indexes(ctx: Context) -> Outcome:
    name = collection_name(ctx)
    specs = ctx.body.get("indexes")
    if not isinstance(specs, list) or not specs:
        raise CommandError(2, "BadValue", "Must specify at least one index to create")
    created = ctx.collection(ctx.db, name) is None
    if ctx.txn is not None and not created and (ctx.db, name) not in ctx.txn.view.created:
        raise CommandError(263, "OperationNotSupportedInTransaction",
                           f"Cannot create new indexes on existing collection {ctx.db}.{name} in a multi-document transaction.")
    collection = ctx.collection(ctx.db, name, create=True)
    assert collection is not None
    reply = dict(collection.create_indexes(specs, created_collection=created))
    if ctx.txn is not None:  # built at commit, when the collection is created
        reply["ok"] = 1.0
        return reply
    ctx.cluster.log("c", "createIndexes", f"{ctx.db}.$cmd", command={"createIndexes": name, "indexes": list(specs)},
                    ui=collection.uuid)
    reply["ok"] = 1.0
    return reply


def list_indexes(ctx: Context) -> Outcome:
    name = collection_name(ctx)
    collection = ctx.cluster.collection(ctx.db, name)
    if collection is None:
        raise _ns_not_found(f"ns does not exist: {ctx.db}.{name}")
    specs = listed_indexes(collection.list_indexes(), ctx.cluster.clustered.get(f"{ctx.db}.{name}"))
    return ctx.member.cursors.open(f"{ctx.db}.{name}", specs, batch_size=_cursor_batch(ctx))


def drop_indexes(ctx: Context) -> Outcome:
    name = collection_name(ctx)
    collection = ctx.cluster.collection(ctx.db, name)
    if collection is None:
        raise _ns_not_found(f"ns not found {ctx.db}.{name}")
    reply = dict(collection.drop_indexes(ctx.body.get("index")))
    ctx.cluster.log("c", "dropIndexes", f"{ctx.db}.$cmd", command={"dropIndexes": name, "index": ctx.body.get("index")},
                    ui=collection.uuid)
    reply["ok"] = 1.0
    return reply


def _cursor_batch(ctx: Context) -> int | None:
    options = ctx.body.get("cursor")
    if isinstance(options, Mapping) and isinstance(options.get("batchSize"), int):
        return int(options["batchSize"])
    return None


def _matches(document: dict[str, Any], filter_: Any) -> bool:
    if not filter_:
        return True
    from mongo_sansio.testing.engine import matches

    return bool(matches(document, filter_))


def _listed(ctx: Context, name: str, found: Collection) -> dict[str, Any]:
    """The listCollections entry of the command database's collection ``name`` (``found``)."""
    ns = f"{ctx.db}.{name}"
    collation = found.collation
    validation = found.validation.listed() if found.validation is not None else None
    return listed_collection(name, ctx.cluster.capped.get(ns), ctx.cluster.clustered.get(ns),
                             ctx.cluster.timeseries.get(ns), collation.document() if collation else None,
                             found.uuid, validation=validation)


def list_collections(ctx: Context) -> Outcome:
    collections = ctx.cluster.databases.get(ctx.db, {})
    rows = []
    for name, found in sorted(collections.items()):
        row = _listed(ctx, name, found)
        if _matches(row, ctx.body.get("filter")):
            rows.append({"name": name, "type": "collection"} if ctx.body.get("nameOnly") else row)
    for row in listed_views(ctx):  # (mongod lists the views after the collections)
        if _matches(row, ctx.body.get("filter")):
            rows.append({"name": row["name"], "type": "view"} if ctx.body.get("nameOnly") else row)
    return ctx.member.cursors.open(f"{ctx.db}.$cmd.listCollections", rows, batch_size=_cursor_batch(ctx))


def end_sessions(ctx: Context) -> Outcome:
    lsids = ctx.body.get(ctx.request.name)
    ctx.cluster.sessions.end(lsids)
    ctx.cluster.transactions.end_sessions(_session_keys(lsids))
    return {"ok": 1.0}


def _session_keys(lsids: Any) -> set[bytes]:
    return {k for k in (session_key(x) for x in (lsids if isinstance(lsids, list) else [])) if k is not None}


def kill_all_sessions(ctx: Context) -> Outcome:
    ctx.cluster.sessions.kill_all()
    ctx.cluster.transactions.end_sessions(None)
    for member in ctx.cluster.members.values():
        member.cursors.kill_for_sessions(None)
    return {"ok": 1.0}


def kill_sessions(ctx: Context) -> Outcome:
    keys = _session_keys(ctx.body.get("killSessions"))
    ctx.cluster.transactions.end_sessions(keys)
    for member in ctx.cluster.members.values():
        member.cursors.kill_for_sessions(keys)
    return {"ok": 1.0}


def _replica_set_only(ctx: Context) -> None:
    if ctx.cluster.standalone:
        raise CommandError(76, "NoReplicationEnabled", "not running with --replSet")


def repl_set_step_down(ctx: Context) -> Outcome:
    _admin_only(ctx)
    _replica_set_only(ctx)
    if ctx.member.state != PRIMARY:
        raise CommandError(10107, "NotWritablePrimary", "not primary so can't step down")
    seconds = ctx.body.get("replSetStepDown")
    if not isinstance(seconds, int | float) or isinstance(seconds, bool):
        raise CommandError(14, "TypeMismatch", "replSetStepDown takes a numeric argument")
    ctx.cluster.step_down(ctx.now)
    return {"ok": 1.0}


def repl_set_freeze(ctx: Context) -> Outcome:
    """Accepted as mongod does (a secondary only); the simulator's elections ignore it."""
    _admin_only(ctx)
    _replica_set_only(ctx)
    seconds = ctx.body.get("replSetFreeze")
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        raise CommandError(14, "TypeMismatch", "replSetFreeze takes a numeric argument")
    if ctx.member.state == PRIMARY:
        raise CommandError(95, "NotSecondary", "cannot freeze node when primary or running for election. state: Primary")
    if seconds == 0:
        return {"info": "unfreezing", "ok": 1.0}
    if seconds == 1:
        return {"warning": "you really want to freeze for only 1 second?", "ok": 1.0}
    return {"ok": 1.0}


def server_status(ctx: Context) -> Outcome:
    """The few serverStatus fields tests read: host, version, uptime, connections."""
    cluster = ctx.cluster
    current = len(ctx.member.connections)
    version, _array = VERSIONS[cluster.max_wire_version]
    uptime = max(0.0, ctx.now - cluster.started)
    return {
        "host": ctx.member.address, "version": version, "process": "mongod", "pid": Int64(1),
        "uptime": float(int(uptime)), "uptimeMillis": Int64(int(uptime * 1000)),
        "uptimeEstimate": Int64(int(uptime)), "localTime": wall_datetime(cluster.wall(ctx.now)),
        "connections": {"current": current, "available": 838_860 - current,
                        "totalCreated": cluster.connections_created, "active": 1},
        "ok": 1.0,
    }


def authenticate(ctx: Context) -> Outcome:
    """The legacy authenticate command (MONGODB-X509): the simulator has no X.509 users."""
    mechanism = ctx.body.get("mechanism")
    if mechanism != "MONGODB-X509":
        raise CommandError(
            2, "BadValue", f"Unsupported mechanism '{mechanism}' on authenticate command",
        )
    raise CommandError(18, "AuthenticationFailed", "Authentication failed.")


def _user_command(ctx: Context) -> Outcome:
    """createUser / updateUser: checked as mongod checks them, then refused (no user management)."""
    name = ctx.request.name
    if not isinstance(ctx.body.get(name), str):
        raise CommandError(14, "TypeMismatch", f"BSON field '{name}.{name}' is the wrong type, expected type 'string'")
    if "pwd" in ctx.body and not isinstance(ctx.body["pwd"], str):
        raise CommandError(14, "TypeMismatch", f"BSON field '{name}.pwd' is the wrong type, expected type 'string'")
    raise CommandError(115, "CommandNotSupported", f"{name} is not supported by the simulator (users are set at start)")


def repl_set_get_status(ctx: Context) -> Outcome:
    _admin_only(ctx)
    _replica_set_only(ctx)
    cluster = ctx.cluster
    rows = []
    for index, member in enumerate(cluster.members.values()):
        entry = member_position(cluster, member, ctx.now) if member.state != "STOPPED" else None
        state_code = {PRIMARY: 1, SECONDARY: 2}.get(member.state, 8)
        rows.append({
            "_id": index, "name": member.address, "health": 0.0 if member.state == "STOPPED" else 1.0,
            "state": state_code, "stateStr": member.state if state_code != 8 else "(not reachable/healthy)",
            "optime": op_time(cluster, entry),
            "optimeDate": wall_datetime(entry.wall) if entry is not None else wall_datetime(cluster.wall(ctx.now)),
            "self": member is ctx.member,
        })
    return {
        "set": cluster.set_name, "date": wall_datetime(cluster.wall(ctx.now)),
        "myState": {PRIMARY: 1, SECONDARY: 2}.get(ctx.member.state, 8), "term": Int64(cluster.term),
        "members": rows, "ok": 1.0,
    }


def configure_fail_point(ctx: Context) -> Outcome:
    _admin_only(ctx)
    reply = ctx.member.failpoints.configure(ctx.body)
    reply["ok"] = 1.0
    return reply


ADMIN_COMMANDS = [
    CommandSpec("ping", ping, requires_auth=False),
    CommandSpec("buildInfo", build_info, requires_auth=False),
    CommandSpec("buildinfo", build_info, requires_auth=False),
    CommandSpec("create", create, access="write"),
    CommandSpec("drop", drop, access="write"),
    CommandSpec("dropDatabase", drop_database, access="write"),
    CommandSpec("renameCollection", rename_collection, access="write"),
    CommandSpec("createIndexes", create_indexes, access="write"),
    CommandSpec("listIndexes", list_indexes, access="read"),
    CommandSpec("dropIndexes", drop_indexes, access="write"),
    CommandSpec("listCollections", list_collections, access="read"),
    CommandSpec("endSessions", end_sessions),
    CommandSpec("killAllSessions", kill_all_sessions),
    CommandSpec("killSessions", kill_sessions),
    CommandSpec("replSetStepDown", repl_set_step_down),
    CommandSpec("replSetGetStatus", repl_set_get_status),
    CommandSpec("replSetFreeze", repl_set_freeze),
    CommandSpec("serverStatus", server_status),
    CommandSpec("authenticate", authenticate, requires_auth=False),
    CommandSpec("createUser", _user_command),
    CommandSpec("updateUser", _user_command),
    CommandSpec("configureFailPoint", configure_fail_point),
]
