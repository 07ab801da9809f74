"""The sharding commands a mongos answers, and the ``config`` database it serves.

Inputs: enableSharding, shardCollection (``key``: ascending fields and at most one
``"hashed"``; ``unique``), split (``middle``), moveChunk (``find`` and ``to``), addShard,
listShards, balancer and router-cache commands; reads of the ``config`` database;
listDatabases.  Outputs: their replies; the catalog changed; documents moved between shards
when their chunk moves (as a migration does: no change events, the document keeps its _id).

``config`` reads see the catalog: before each one the config server's ``shards``,
``databases``, ``collections`` and ``chunks`` collections are rewritten from it.
A collection being sharded is created on every shard with the same UUID (as mongod's shards
share it) and the shard-key index; documents already in it move to the shards owning them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mongo_sansio.testing.engine import CommandError
from mongo_sansio.testing.engine.order import hashable_key
from mongo_sansio.testing.server.context import Context
from mongo_sansio.testing.server.oplog import wall_datetime
from mongo_sansio.testing.sharded import reports

if TYPE_CHECKING:
    from mongo_sansio.testing.sharded.router import Router

__all__ = ["ROUTER_COMMANDS", "create_indexes", "rename_collection", "run"]

ROUTER_COMMANDS = frozenset({
    "enableSharding", "enablesharding", "shardCollection", "shardcollection", "split", "moveChunk", "movechunk",
    "addShard", "addshard", "listShards", "listshards", "flushRouterConfig", "balancerStatus", "balancerStart",
    "balancerStop", "isdbgrid", "checkMetadataConsistency", "collStats", "collstats",
})


def run(router: Router, ctx: Context) -> dict[str, Any]:
    name = ctx.request.name
    handler = _HANDLERS.get(name.lower())
    if handler is not None:
        reply: dict[str, Any] = handler(router, ctx)
        return reply
    if name == "listDatabases":
        return _list_databases(router, ctx)
    if ctx.db == "config":
        return _config_read(router, ctx)
    raise CommandError(59, "CommandNotFound", f"no such command: '{name}'")


def _admin_only(ctx: Context) -> None:
    if ctx.db != "admin":
        raise CommandError(13, "Unauthorized", f"{ctx.request.name} may only be run against the admin database.")


def _namespace(ctx: Context) -> str:
    ns = ctx.body.get(ctx.request.name)
    if not isinstance(ns, str) or "." not in ns:
        raise CommandError(73, "InvalidNamespace", f"Invalid namespace specified '{ns}'")
    return ns


def _enable_sharding(router: Router, ctx: Context) -> dict[str, Any]:
    _admin_only(ctx)
    database = ctx.body.get(ctx.request.name)
    if not isinstance(database, str) or not database:
        raise CommandError(73, "InvalidNamespace", "invalid db name specified")
    primary = ctx.body.get("primaryShard")
    if isinstance(primary, str) and primary in router.cluster.catalog.shards:
        router.cluster.catalog.databases.setdefault(database, primary)
    router.cluster.catalog.primary_shard(database)
    router.cluster.catalog.version += 1
    return {"ok": 1.0}


def _shard_collection(router: Router, ctx: Context) -> dict[str, Any]:
    _admin_only(ctx)
    ns = _namespace(ctx)
    key = ctx.body.get("key")
    if not isinstance(key, Mapping):
        raise CommandError(2, "BadValue", "shardCollection requires a 'key' document")
    catalog = router.cluster.catalog
    existing = catalog.sharded(ns)
    if existing is not None:
        if dict(existing.key) == dict(key):
            return {"collectionsharded": ns, "ok": 1.0}
        raise CommandError(23, "AlreadyInitialized", f"sharding already enabled for collection {ns} with options {existing.key}")
    database, _, name = ns.partition(".")
    primary = catalog.primary_shard(database)
    shard = router.cluster.shards[primary]
    _check_shardable(shard, database, name)
    collection = shard.collection(database, name)
    if collection is None:
        reply = router.cluster.call(shard, database, {"create": name}, ctx.now, user=ctx.state.user)
        if reply.get("ok") != 1.0 and reply.get("code") != 48:
            return reply
        collection = shard.collection(database, name)
    assert collection is not None
    if list(key) != ["_id"] or key.get("_id") == "hashed":
        index_name = "_".join(f"{field}_{value}" for field, value in key.items())
        if not any(_starts_with_key(spec.get("key"), key) for spec in collection.list_indexes()):
            if len(collection):  # (mongod builds the key's index on an empty collection only)
                raise CommandError(72, "InvalidOptions", "Please create an index that starts with the proposed shard key "
                                                         "before sharding the collection")
            reply = router.cluster.call(shard, database, {"createIndexes": name, "indexes": [{"key": dict(key), "name": index_name}]},
                                        ctx.now, user=ctx.state.user)
            if reply.get("ok") != 1.0:
                return reply
    cluster = router.cluster
    config = cluster.config
    sharded = catalog.shard_collection(
        ns, key, unique=bool(ctx.body.get("unique", False)), uuid=collection.uuid, epoch=config.new_object_id(),
        wall=config.wall(ctx.now), at=cluster.clock.next(config.wall(ctx.now)), new_id=config.new_object_id,
    )
    # the primary shard logs it (a change stream with showExpandedEvents reports it)
    shard.begin_write(ctx.now)
    shard.log("c", "shardCollection", f"{database}.$cmd", ui=collection.uuid, command={
        "shardCollection": name, "shardKey": dict(key), "unique": bool(ctx.body.get("unique", False)),
        "presplitHashedZones": False})
    shard.wake_waiters(ctx.now)
    indexes = [spec for spec in collection.list_indexes() if spec.get("name") != "_id_"]
    for other_name, other in cluster.shards.items():
        if other_name == primary or other.collection(database, name) is not None:
            continue
        copy = collection.clone()
        for document in list(copy):
            copy.put_raw(hashable_key(document["_id"]), None)
        other.adopt(copy)
        installed = other.collection(database, name)
        if installed is not None and indexes:
            installed.create_indexes(indexes)
    rebalance(router, ns)
    return {"collectionsharded": ns, "collectionUUID": sharded.uuid, "ok": 1.0}


def rebalance(router: Router, ns: str) -> None:
    """Move every document of ``ns`` to the shard its chunk is on (silently, as migrations)."""
    database, _, name = ns.partition(".")
    catalog = router.cluster.catalog
    for shard_name, shard in router.cluster.shards.items():
        source = shard.collection(database, name)
        if source is None:
            continue
        for document in list(source):
            owner = catalog.shard_for_document(ns, document)
            if owner == shard_name:
                continue
            target = router.cluster.shards[owner].collection(database, name)
            if target is None:
                continue
            key = hashable_key(document["_id"])
            target.put_raw(key, document)
            source.put_raw(key, None)


def _split(router: Router, ctx: Context) -> dict[str, Any]:
    _admin_only(ctx)
    ns = _namespace(ctx)
    middle = ctx.body.get("middle")
    if not isinstance(middle, Mapping):
        raise CommandError(2, "BadValue", "split needs 'middle' (the simulated mongos does not pick split points)")
    router.cluster.catalog.split(ns, middle, router.cluster.config.new_object_id)
    return {"ok": 1.0}


def _move_chunk(router: Router, ctx: Context) -> dict[str, Any]:
    _admin_only(ctx)
    ns = _namespace(ctx)
    to = ctx.body.get("to")
    catalog = router.cluster.catalog
    collection = catalog.sharded(ns)
    if collection is None:
        raise CommandError(118, "NamespaceNotSharded", f"{ns} is not sharded")
    if isinstance(ctx.body.get("find"), Mapping):
        point = collection.chunk_point(ctx.body["find"])
    elif isinstance(ctx.body.get("bounds"), list) and ctx.body["bounds"]:
        point = dict(ctx.body["bounds"][0])
    else:
        raise CommandError(2, "BadValue", "moveChunk needs 'find' or 'bounds'")
    if not isinstance(to, str):
        raise CommandError(2, "BadValue", "moveChunk needs 'to'")
    catalog.move_chunk(ns, point, to)
    rebalance(router, ns)
    return {"millis": 0, "ok": 1.0}


def _add_shard(router: Router, ctx: Context) -> dict[str, Any]:
    _admin_only(ctx)
    seed = ctx.body.get(ctx.request.name)
    if not isinstance(seed, str) or not seed:
        raise CommandError(2, "BadValue", "addShard needs a connection string")
    name = ctx.body.get("name")
    added = router.cluster.add_shard(seed, ctx.now, name=name if isinstance(name, str) else None)
    return {"shardAdded": added, "ok": 1.0}


def _list_shards(router: Router, ctx: Context) -> dict[str, Any]:
    _admin_only(ctx)
    return {"shards": router.cluster.catalog.config_documents(wall_datetime)["shards"], "ok": 1.0}


def _ok(router: Router, ctx: Context) -> dict[str, Any]:
    return {"ok": 1.0}


def _balancer_status(router: Router, ctx: Context) -> dict[str, Any]:
    return {"mode": "off", "inBalancerRound": False, "numBalancerRounds": 0, "ok": 1.0}


def _check_metadata_consistency(router: Router, ctx: Context) -> dict[str, Any]:
    """mongos 7.0's consistency check: a cursor over the inconsistencies (none here)."""
    return router.open_cursor(ctx, f"{ctx.db}.$cmd.checkMetadataConsistency", [])


def _isdbgrid(router: Router, ctx: Context) -> dict[str, Any]:
    return {"isdbgrid": 1, "hostname": router.address, "ok": 1.0}


_HANDLERS: dict[str, Any] = {
    "enablesharding": _enable_sharding, "shardcollection": _shard_collection, "split": _split,
    "movechunk": _move_chunk, "addshard": _add_shard, "listshards": _list_shards, "flushrouterconfig": _ok,
    "balancerstatus": _balancer_status, "balancerstart": _ok, "balancerstop": _ok, "isdbgrid": _isdbgrid,
    "checkmetadataconsistency": _check_metadata_consistency, "collstats": reports.coll_stats,
}


def refresh_config(router: Router, now: float) -> None:
    """Rewrite the config server's catalogue collections from the catalog (when it moved)."""
    cluster = router.cluster
    if cluster.config_version == cluster.catalog.version:
        return
    cluster.config_version = cluster.catalog.version
    config = cluster.config
    documents = cluster.catalog.config_documents(wall_datetime)
    for name, docs in documents.items():
        collection = config.collection("config", name, create=True)
        assert collection is not None
        for old in list(collection):
            collection.put_raw(hashable_key(old["_id"]), None)
        for document in docs:
            collection.put_raw(hashable_key(document["_id"]), document)


def _config_read(router: Router, ctx: Context) -> dict[str, Any]:
    refresh_config(router, ctx.now)
    body = router.body(ctx)
    for field in ("lsid", "txnNumber", "autocommit", "startTransaction"):
        body.pop(field, None)
    reply = router.cluster.call(router.cluster.config, "config", body, ctx.now, user=ctx.state.user)
    cursor = reply.get("cursor")
    if reply.get("ok") != 1.0 or not isinstance(cursor, Mapping):
        return reply
    documents = list(cursor.get("firstBatch", []))
    cursor_id = int(cursor.get("id", 0))
    collection = str(cursor.get("ns", ".")).partition(".")[2]
    while cursor_id:
        more = router.cluster.call(router.cluster.config, "config", {"getMore": cursor_id, "collection": collection},
                                   ctx.now, user=ctx.state.user)
        documents.extend(more["cursor"].get("nextBatch", []))
        cursor_id = int(more["cursor"].get("id", 0))
    return router.open_cursor(ctx, str(cursor.get("ns")), documents)


def rename_collection(router: Router, ctx: Context, body: dict[str, Any]) -> dict[str, Any]:
    """renameCollection as mongos runs it: an unsharded collection on its database's primary
    shard; a sharded one (mongod 5.0 and later) on every shard, within its database only,
    keeping its key and chunks under the new name.  A sharded target replaced (dropTarget)
    leaves every shard and the catalog."""
    source, target = body.get("renameCollection"), body.get("to")
    if not isinstance(source, str) or not isinstance(target, str):
        return router.send(ctx, router.cluster.catalog.primary_shard("admin"), body)
    catalog = router.cluster.catalog
    sharded = catalog.sharded(source) is not None
    if sharded and source.partition(".")[0] != target.partition(".")[0]:
        raise CommandError(125, "CommandFailed", f"Source and destination collections must be on the same database "
                                                 f"because {source} is sharded.")
    primary = catalog.primary_shard(source.partition(".")[0])
    target_db, _, target_name = target.partition(".")
    exists = catalog.sharded(target) is not None or router.cluster.shards[primary].collection(target_db, target_name) is not None
    if sharded and exists and not body.get("dropTarget"):  # (checked before any shard renames)
        raise CommandError(48, "NamespaceExists", f"a collection '{target}' already exists")
    replaced = catalog.sharded(target) is not None and bool(body.get("dropTarget"))
    if replaced and not sharded:
        for shard in catalog.shards_for_filter(target, None):
            if shard != primary:
                router.cluster.call(router.cluster.shards[shard], target_db, {"drop": target_name}, ctx.now,
                                    user=ctx.state.user)
    reply = router.broadcast(ctx, body, catalog.shards_for_filter(source, None)) if sharded \
        else router.send(ctx, primary, body)
    if reply.get("ok") != 1.0:
        return reply
    if replaced:
        catalog.drop_collection(target)
    catalog.rename_collection(source, target)
    return reply


def _check_shardable(shard: Any, database: str, name: str) -> None:
    """What mongod refuses to shard: system namespaces, the config and admin databases'
    collections (but config.system.sessions), views and capped collections."""
    ns = f"{database}.{name}"
    if database in ("admin", "config", "local") and ns != "config.system.sessions":
        raise CommandError(20, "IllegalOperation", f"can't shard {ns}: only special collections in the {database} "
                                                   "database may be sharded")
    if name.startswith("system.") and ns != "config.system.sessions":
        raise CommandError(20, "IllegalOperation", "can't shard system namespaces")
    views = shard.collection(database, "system.views")
    if views is not None and views.find({"_id": ns}, None, limit=1):
        raise CommandError(166, "CommandNotSupportedOnView", f"Namespace {ns} is a view, not a collection")
    if ns in shard.capped:
        raise CommandError(72, "InvalidOptions", "can't shard a capped collection")


def _starts_with_key(index: Any, key: Mapping[str, Any]) -> bool:
    """Whether an index's key pattern can serve a shard key: its fields first, hashed where
    the shard key is hashed, ascending elsewhere."""
    if not isinstance(index, Mapping) or list(index)[:len(key)] != list(key):
        return False
    return all(index[field] == "hashed" if value == "hashed" else index[field] == 1 for field, value in key.items())


def create_indexes(router: Router, ctx: Context, body: dict[str, Any], shards: list[str]) -> dict[str, Any]:
    """createIndexes through mongos: on every shard owning the collection (its primary shard
    when unsharded), each shard's reply under ``raw`` by its connection string, as mongos
    answers; the first failure as it is."""
    raw: dict[str, Any] = {}
    for shard in shards:
        reply = router.send(ctx, shard, body)
        if reply.get("ok") != 1.0:
            return reply
        raw[router.cluster.catalog.shards[shard]] = {k: v for k, v in reply.items()
                                                     if k not in ("$clusterTime", "operationTime")}
    return {"raw": raw, "ok": 1.0}


def _list_databases(router: Router, ctx: Context) -> dict[str, Any]:
    _admin_only(ctx)
    body = router.body(ctx)
    for field in ("lsid", "txnNumber", "autocommit", "startTransaction"):
        body.pop(field, None)
    merged: dict[str, dict[str, Any]] = {}
    for shard_name, shard in router.cluster.shards.items():
        reply = router.cluster.call(shard, "admin", body, ctx.now, user=ctx.state.user)
        if reply.get("ok") != 1.0:
            return reply
        for entry in reply.get("databases", []):
            if entry.get("name") == "local":
                continue
            found = merged.setdefault(entry["name"], {**entry, "shards": {}})
            if found is not entry and "sizeOnDisk" in entry:
                found["sizeOnDisk"] = found.get("sizeOnDisk", 0) + entry["sizeOnDisk"]
            if "sizeOnDisk" in entry:
                found["shards"][shard_name] = entry["sizeOnDisk"]
    databases = []
    for entry in merged.values():
        if body.get("nameOnly") is True:
            databases.append({"name": entry["name"]})
        else:
            databases.append(entry)
    reply = {"databases": databases, "ok": 1.0}
    if body.get("nameOnly") is not True:
        reply["totalSize"] = sum(int(entry.get("sizeOnDisk", 0)) for entry in merged.values())
        reply["totalSizeMb"] = reply["totalSize"] // (1024 * 1024)
    return reply
