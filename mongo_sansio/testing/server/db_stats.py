"""``dbStats`` and ``listDatabases``: what a database holds, and which databases exist.

Inputs: the command (``scale``; ``filter``, ``nameOnly``, ``authorizedDatabases``), the
collections as the command sees them.  Outputs: mongod 7.0's replies.

Sizes come from :func:`.coll_stats.storage_figures`: ``dataSize`` is the documents' BSON
bytes, as mongod counts them; storage and index sizes are the simulator's model of
WiredTiger's files (whole 4 KiB blocks), as for ``$collStats``.  A replica set member (and a
standalone mongod once it has started) always has the ``admin``, ``config`` and ``local``
databases (``admin.system.version``, ``config.system.sessions``, ``local.oplog.rs`` ...): the
simulator keeps no documents there, so listDatabases lists them with the model's size of one
collection and one index (8 KiB) plus whatever a client stored in them.  The file system
figures (``fsUsedSize``, ``fsTotalSize``) are a fixed 100 GiB disk, a quarter used.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mongo_sansio.bson import Int64
from mongo_sansio.testing.engine import CommandError, matches
from mongo_sansio.testing.server.coll_stats import storage_figures
from mongo_sansio.testing.server.context import CommandSpec, Context, Outcome
from mongo_sansio.testing.server.views import SYSTEM_VIEWS, listed_views

__all__ = ["DB_STATS_COMMANDS", "SYSTEM_DATABASES"]

#: the databases every mongod has, whether or not a client stored anything there
SYSTEM_DATABASES = ("admin", "config", "local")
_SYSTEM_DATABASE_BYTES = 8192  # one collection file and one index file of the model
_FS_TOTAL = 100 * 1024**3
_FS_USED = _FS_TOTAL // 4


def _scale(ctx: Context) -> int:
    scale = ctx.body.get("scale", 1)
    if isinstance(scale, bool) or not isinstance(scale, int | float):
        raise CommandError(14, "TypeMismatch", "BSON field 'dbStats.scale' is the wrong type, expected a number")
    if scale < 1:  # (a fraction above 1 counts by its integer part, as mongod's)
        raise CommandError(51024, "Location51024", f"BSON field 'scale' value must be >= 1, actual value '{int(scale)}'")
    return int(scale)


def _database_figures(ctx: Context, database: str) -> tuple[int, int, int, int, int, int]:
    """(collections, documents, data size, storage size, indexes, index size)."""
    collections = objects = data = storage = indexes = index_size = 0
    for name in ctx.collection_names(database):
        collection = ctx.collection(database, name)
        if collection is None:
            continue
        count, size, stored, index_sizes = storage_figures(collection)
        collections += 1
        objects += count
        data += size
        storage += stored
        indexes += len(index_sizes)
        index_size += sum(index_sizes.values())
    return collections, objects, data, storage, indexes, index_size


def db_stats(ctx: Context) -> Outcome:
    scale = _scale(ctx)
    collections, objects, data, storage, indexes, index_size = _database_figures(ctx, ctx.db)
    exists = collections > 0 or ctx.db in SYSTEM_DATABASES
    views = len(listed_views(ctx)) if ctx.collection(ctx.db, SYSTEM_VIEWS) is not None else 0
    total = storage + index_size
    return {
        "db": ctx.db,
        "collections": Int64(collections),
        "views": Int64(views),
        "objects": Int64(objects),
        # the mean is never scaled (mongod's documentation); 0 for an empty database
        "avgObjSize": data / objects if objects else 0.0,
        "dataSize": float(data // scale),
        "storageSize": float(storage // scale),
        "indexes": Int64(indexes),
        "indexSize": float(index_size // scale),
        "totalSize": float(total // scale),
        "scaleFactor": Int64(scale),
        # a database that does not exist has no files, and mongod reports no file system
        "fsUsedSize": float((_FS_USED + total) // scale) if exists else 0.0,
        "fsTotalSize": float(_FS_TOTAL // scale) if exists else 0.0,
        "ok": 1.0,
    }


def _size_on_disk(ctx: Context, database: str) -> int:
    _, _, _, storage, _, index_size = _database_figures(ctx, database)
    extra = _SYSTEM_DATABASE_BYTES if database in SYSTEM_DATABASES else 0
    return storage + index_size + extra


def list_databases(ctx: Context) -> Outcome:
    if ctx.db != "admin":
        raise CommandError(13, "Unauthorized", "listDatabases may only be run against the admin database.")
    filter_ = ctx.body.get("filter")
    if filter_ is not None and not isinstance(filter_, Mapping):
        raise CommandError(14, "TypeMismatch", "BSON field 'listDatabases.filter' is the wrong type, expected type 'object'")
    names = {name for name, collections in ctx.cluster.databases.items() if collections}
    rows = []
    for name in sorted(names | set(SYSTEM_DATABASES)):
        row: dict[str, Any] = {"name": name, "sizeOnDisk": Int64(_size_on_disk(ctx, name)), "empty": False}
        if filter_ and not matches(row, filter_):
            continue
        rows.append(row)
    if ctx.body.get("nameOnly"):
        return {"databases": [{"name": row["name"]} for row in rows], "ok": 1.0}
    total = sum(int(row["sizeOnDisk"]) for row in rows)
    return {"databases": rows, "totalSize": Int64(total), "totalSizeMb": Int64(total // (1024 * 1024)), "ok": 1.0}


DB_STATS_COMMANDS = [
    CommandSpec("dbStats", db_stats, access="read"),
    CommandSpec("dbstats", db_stats, access="read"),
    CommandSpec("listDatabases", list_databases, access="read"),
]
