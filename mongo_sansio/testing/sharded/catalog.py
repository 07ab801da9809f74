"""The sharding catalog: which shard owns what, as the config server knows it.

Inputs: ``enableSharding`` / ``shardCollection`` / ``split`` / ``addShard`` decisions (from
:mod:`.router`), documents and filters to place.  Outputs: the owning shard of a document
(:meth:`Catalog.shard_for_document`), the shards a filter may touch
(:meth:`Catalog.shards_for_filter`), the shard-key fields of a namespace (a document key's
first fields), and the ``config`` database's documents (``config.shards``,
``config.databases``, ``config.collections``, ``config.chunks``) as mongod 7.0 shapes them
(chunks are keyed by the collection's ``uuid``, not its namespace, since 5.0).

Hashed keys are placed by the value's hashed-index key
(:func:`mongo_sansio.pipeline.hashing.hashed_index_key`, mongod's ``BSONElementHasher`` as its
documentation describes it, also what ``$toHashedIndexKey`` gives here); whether every value
hashes to exactly mongod's number is not checked against a mongod.  A new hashed collection gets one
chunk per shard over equal slices of the 64-bit range; a ranged one a single chunk
``[MinKey, MaxKey)`` on the database's primary shard, which ``split`` cuts.  A document
without a shard-key field is placed by null there (as mongod 4.4 and later).

Pure: ids and times are arguments.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from mongo_sansio.bson import Binary, Int64, MaxKey, MinKey, ObjectId, Timestamp
from mongo_sansio.pipeline.hashing import hashed_index_key
from mongo_sansio.testing.engine import MISSING, CommandError, compare
from mongo_sansio.testing.engine.paths import get_path

__all__ = ["Catalog", "Chunk", "check_unique_indexes", "ShardedCollection", "hash_value", "shard_key_value"]

_INT64_MIN = -(1 << 63)
_INT64_SPAN = 1 << 64


def hash_value(value: Any) -> int:
    """The hashed-index key of ``value`` (a signed 64-bit integer): the one ``$toHashedIndexKey``
    gives, as mongod places hashed keys and answers that expression with the same hasher (a
    query on ``{$toHashedIndexKey: "$field"}`` then finds exactly a chunk's documents)."""
    return hashed_index_key(value)


def shard_key_value(key: Mapping[str, Any], document: Mapping[str, Any]) -> dict[str, Any]:
    """The shard-key fields of ``document`` (null for a missing one), by their dotted names."""
    out: dict[str, Any] = {}
    for field in key:
        value = get_path(document, field.split("."))
        out[field] = None if value is MISSING else value
    return out


@attrs.define
class Chunk:
    min: dict[str, Any]
    max: dict[str, Any]
    shard: str
    id: ObjectId
    lastmod: Timestamp


@attrs.define
class ShardedCollection:
    ns: str
    key: dict[str, Any]
    unique: bool
    uuid: Binary
    epoch: ObjectId
    created: float  # wall seconds
    timestamp: Timestamp
    chunks: list[Chunk] = attrs.Factory(list)

    @property
    def hashed(self) -> bool:
        return any(value == "hashed" for value in self.key.values())

    def chunk_point(self, document: Mapping[str, Any]) -> dict[str, Any]:
        """The point of the key space ``document`` sits at (hashed fields hashed)."""
        values = shard_key_value(self.key, document)
        return {field: Int64(hash_value(values[field])) if self.key[field] == "hashed" else values[field]
                for field in self.key}

    def chunk_for(self, point: Mapping[str, Any]) -> Chunk:
        for chunk in self.chunks:
            if _compare_points(chunk.min, point) <= 0 and _compare_points(point, chunk.max) < 0:
                return chunk
        return self.chunks[-1]

    @property
    def shards(self) -> list[str]:
        seen: list[str] = []
        for chunk in self.chunks:
            if chunk.shard not in seen:
                seen.append(chunk.shard)
        return seen


def check_unique_indexes(collection: ShardedCollection, specs: Any) -> None:
    """A unique index on a sharded collection must start with _id or with the shard key's
    fields (mongod's rule: no shard could check uniqueness across the others otherwise)."""
    for spec in specs if isinstance(specs, list) else []:
        if not isinstance(spec, Mapping) or not spec.get("unique") or not isinstance(spec.get("key"), Mapping):
            continue
        fields = list(spec["key"])
        if fields[:1] == ["_id"] or fields[:len(collection.key)] == list(collection.key):
            continue
        raise CommandError(67, "CannotCreateIndex", f"cannot create unique index over {dict(spec['key'])} with shard key "
                                                    f"pattern {collection.key}")


def _compare_points(left: Mapping[str, Any], right: Mapping[str, Any]) -> int:
    for a, b in zip(left.values(), right.values(), strict=False):
        result = compare(a, b)
        if result:
            return result
    return 0


class Catalog:
    """The config server's view: shards, databases and their primary shards, collections."""

    def __init__(self, shards: Sequence[tuple[str, str]]) -> None:
        #: shard name -> its connection string ("rs/host1,host2")
        self.shards: dict[str, str] = dict(shards)
        self.shard_added: dict[str, Timestamp] = {}
        self.databases: dict[str, str] = {}  # name -> primary shard
        self.collections: dict[str, ShardedCollection] = {}
        self.version = 0  # moves on every change (router caches compare it)

    # --- decisions ---------------------------------------------------------------------------

    def add_shard(self, name: str, host: str, at: Timestamp) -> None:
        self.shards[name] = host
        self.shard_added[name] = at
        self.version += 1

    def primary_shard(self, database: str) -> str:
        """The database's primary shard (the first shard for a database not seen before)."""
        found = self.databases.get(database)
        if found is None:
            found = next(iter(self.shards))
            if database not in ("admin", "config", "local"):
                self.databases[database] = found
        return found

    def shard_collection(self, ns: str, key: Mapping[str, Any], *, unique: bool, uuid: Binary, epoch: ObjectId,
                         wall: float, at: Timestamp, new_id: Any) -> ShardedCollection:
        if not key or not isinstance(key, Mapping):
            raise CommandError(2, "BadValue", "shard key must be a non-empty document")
        hashed = [field for field, value in key.items() if value == "hashed"]
        for field, value in key.items():
            if value not in (1, 1.0, "hashed"):
                raise CommandError(2, "BadValue", f"Unsupported shard key pattern {dict(key)}. Pattern must either be a single "
                                   f"hashed field, or a list of ascending fields followed by at most one hashed field.")
            if field.startswith("$"):
                raise CommandError(2, "BadValue", f"shard key field {field} may not start with $")
        if len(hashed) > 1:
            raise CommandError(2, "BadValue", "Only one hashed field is allowed in the shard key")
        if unique and hashed:
            raise CommandError(2, "BadValue", "hashed shard keys cannot be declared unique.")
        database = ns.partition(".")[0]
        collection = ShardedCollection(ns, dict(key), unique, uuid, epoch, wall, at)
        names = list(self.shards)
        if hashed:
            # one chunk per shard over equal slices of the hashed field's 64-bit range (the
            # other fields of a compound key at MinKey inside, MinKey/MaxKey at the ends)
            count = len(names)
            cuts = [Int64(_INT64_MIN + (_INT64_SPAN * i) // count) for i in range(1, count)]
            points: list[dict[str, Any]] = [{f: (cut if v == "hashed" else MinKey()) for f, v in key.items()}
                                             for cut in cuts]
            lows: list[dict[str, Any]] = [{f: MinKey() for f in key}, *points]
            highs: list[dict[str, Any]] = [*points, {f: MaxKey() for f in key}]
            for i, shard in enumerate(names):
                collection.chunks.append(Chunk(lows[i], highs[i], shard, new_id(), Timestamp(1, i)))
        else:
            collection.chunks.append(Chunk({f: MinKey() for f in key}, {f: MaxKey() for f in key},
                                           self.primary_shard(database), new_id(), Timestamp(1, 0)))
        self.collections[ns] = collection
        self.version += 1
        return collection

    def split(self, ns: str, middle: Mapping[str, Any], new_id: Any) -> None:
        """Cut the chunk holding ``middle`` there (both halves stay on its shard)."""
        collection = self._sharded(ns)
        point = dict(middle)
        if list(point) != list(collection.key):
            raise CommandError(2, "BadValue", f"split point {point} does not match the shard key {collection.key}")
        chunk = collection.chunk_for(point)
        if _compare_points(chunk.min, point) == 0:
            raise CommandError(2, "BadValue", "cannot split on the lower bound of a chunk")
        index = collection.chunks.index(chunk)
        major = max(c.lastmod.time for c in collection.chunks)
        upper = Chunk(point, chunk.max, chunk.shard, new_id(), Timestamp(major, index + 2))
        chunk.max = point
        chunk.lastmod = Timestamp(major, index + 1)
        collection.chunks.insert(index + 1, upper)
        self.version += 1

    def move_chunk(self, ns: str, point: Mapping[str, Any], to: str) -> Chunk:
        collection = self._sharded(ns)
        if to not in self.shards:
            raise CommandError(133, "ShardNotFound", f"Shard {to} not found")
        chunk = collection.chunk_for(point)
        major = max(c.lastmod.time for c in collection.chunks) + 1
        chunk.shard = to
        chunk.lastmod = Timestamp(major, 0)
        self.version += 1
        return chunk

    def drop_collection(self, ns: str) -> None:
        if self.collections.pop(ns, None) is not None:
            self.version += 1

    def rename_collection(self, ns: str, to: str) -> None:
        """A sharded collection renamed keeps its key, chunks and UUID (mongod 5.0 and later)."""
        collection = self.collections.pop(ns, None)
        if collection is not None:
            collection.ns = to
            self.collections[to] = collection
            self.version += 1

    def drop_database(self, database: str) -> None:
        for ns in [ns for ns in self.collections if ns.partition(".")[0] == database]:
            del self.collections[ns]
        self.databases.pop(database, None)
        self.version += 1

    def _sharded(self, ns: str) -> ShardedCollection:
        found = self.collections.get(ns)
        if found is None:
            raise CommandError(118, "NamespaceNotSharded", f"{ns} is not sharded")
        return found

    # --- placement ---------------------------------------------------------------------------

    def sharded(self, ns: str) -> ShardedCollection | None:
        return self.collections.get(ns)

    def shard_for_document(self, ns: str, document: Mapping[str, Any]) -> str:
        collection = self.collections.get(ns)
        if collection is None:
            return self.primary_shard(ns.partition(".")[0])
        return collection.chunk_for(collection.chunk_point(document)).shard

    def shards_for_filter(self, ns: str, query: Any) -> list[str]:
        """One shard when ``query`` pins every shard-key field by equality, else every shard
        owning a chunk of the collection (the primary shard for an unsharded one)."""
        collection = self.collections.get(ns)
        if collection is None:
            return [self.primary_shard(ns.partition(".")[0])]
        point = equality_point(collection.key, query)
        if point is None:
            return collection.shards
        return [collection.chunk_for(collection.chunk_point(point)).shard]

    def key_fields(self, ns: str) -> list[str]:
        collection = self.collections.get(ns)
        return list(collection.key) if collection is not None else []

    # --- the config database -----------------------------------------------------------------

    def config_documents(self, wall_datetime: Any) -> dict[str, list[dict[str, Any]]]:
        """The documents of ``config.shards``, ``config.databases``, ``config.collections``
        and ``config.chunks``."""
        shards = [{"_id": name, "host": host, "state": 1, "topologyTime": self.shard_added.get(name, Timestamp(0, 0))}
                  for name, host in self.shards.items()]
        databases = [{"_id": name, "primary": shard, "partitioned": False,
                      "version": {"uuid": Binary(hashlib.md5(name.encode(), usedforsecurity=False).digest(), 4),
                                  "timestamp": Timestamp(1, 0), "lastMod": 1}}
                     for name, shard in self.databases.items()]
        collections: list[dict[str, Any]] = []
        chunks: list[dict[str, Any]] = []
        for collection in self.collections.values():
            collections.append({
                "_id": collection.ns, "lastmodEpoch": collection.epoch, "lastmod": wall_datetime(collection.created),
                "timestamp": collection.timestamp, "uuid": collection.uuid, "key": dict(collection.key),
                "unique": collection.unique, "noBalance": False,
            })
            for chunk in collection.chunks:
                chunks.append({
                    "_id": chunk.id, "uuid": collection.uuid, "min": dict(chunk.min), "max": dict(chunk.max),
                    "shard": chunk.shard, "lastmod": chunk.lastmod,
                    "onCurrentShardSince": collection.timestamp,
                    "history": [{"validAfter": collection.timestamp, "shard": chunk.shard}],
                })
        return {"shards": shards, "databases": databases, "collections": collections, "chunks": chunks}


def equality_point(key: Mapping[str, Any], query: Any) -> dict[str, Any] | None:
    """The shard-key values ``query`` fixes by equality (``{f: v}``, ``{f: {$eq: v}}``, or
    inside a top-level ``$and``), or None when it leaves one open."""
    if not isinstance(query, Mapping):
        return None
    found: dict[str, Any] = {}
    _collect_equalities(query, found)
    if not all(field in found for field in key):
        return None
    document: dict[str, Any] = {}
    for field in key:
        _set_path(document, field, found[field])
    return document


def _collect_equalities(query: Mapping[str, Any], found: dict[str, Any]) -> None:
    for field, condition in query.items():
        if field == "$and" and isinstance(condition, list):
            for part in condition:
                if isinstance(part, Mapping):
                    _collect_equalities(part, found)
            continue
        if field.startswith("$"):
            continue
        if isinstance(condition, Mapping) and condition and all(str(k).startswith("$") for k in condition):
            if list(condition) == ["$eq"] and not isinstance(condition["$eq"], Mapping | list):
                found[field] = condition["$eq"]
            continue
        if isinstance(condition, list) or (isinstance(condition, Mapping)):
            continue  # (an array or a document equality may match many key values)
        found[field] = condition


def _set_path(document: dict[str, Any], path: str, value: Any) -> None:
    parts = path.split(".")
    target = document
    for part in parts[:-1]:
        target = target.setdefault(part, {})
    target[parts[-1]] = value
