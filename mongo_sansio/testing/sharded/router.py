"""One mongos's command routing: a decoded request in, a reply out.

Inputs: a :class:`~mongo_sansio.testing.server.context.Context` whose cluster is the router's
own front (a one-member standalone replica set that holds the router's connections, cursors,
failpoints and users) and the :class:`~.cluster.ShardedCluster` it routes into.  Outputs: a
reply document, or a :class:`~mongo_sansio.testing.server.context.Waiting` (a getMore on a
router cursor, a failpoint's block).

The steps, as mongos takes them: commands mongos answers itself (hello, authentication, ping,
buildInfo, failpoints, getMore/killCursors of its own cursors, session commands, which it also
sends to every shard) run on the front; everything else is routed: authentication and
failCommand are checked on the router first, then

* a command on an unsharded collection goes whole to its database's primary shard;
* on a sharded one, writes go to the shard owning each document or statement (by the shard
  key's equality in the filter, or to every shard; a single-document update or delete without
  the shard key first finds the shard holding a match, as mongod 7.0's two-phase write does);
  reads go to the shards the filter may touch and are merged here (sort merged, then skip,
  limit and the projection; an aggregate's document-wise leading stages run on the shards,
  the rest here);
* cursors are the router's: a shard's results are read whole and served from a router cursor
  (so getMore goes to the mongos that opened it, as with mongod);
* sharding commands (enableSharding, shardCollection, split, moveChunk, addShard, listShards)
  change the catalog, and ``config`` reads see the catalog;
* transactions and change streams: :mod:`.transactions`, :mod:`.streams`.

An ordered write goes as mongos sends it, one run of statements with the same shards after the
other, and stops after a run with a write error; an unordered one sends each shard its
statements at once.  A retryable write names its statements to the shards (``stmtIds``, their
indexes in the client's command), so a retry through any router is answered from each shard's
record of that run (:mod:`~mongo_sansio.testing.server.sessions`).

Knowing differences from mongod: a single-document write without the shard key is placed by a
read, then a write (mongod does the same in one internal transaction); a tailable cursor gives
what its capped collection holds when opened, then ends (mongos keeps tailing the shard).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mongo_sansio.bson import Int64, ObjectId
from mongo_sansio.testing.engine import CommandError, Projection, run_pipeline, sort_documents
from mongo_sansio.testing.engine.collation import parse_collation
from mongo_sansio.testing.engine.order import hashable_key
from mongo_sansio.testing.server.commands_crud import lsid_key
from mongo_sansio.testing.server.context import Close, Context, Outcome, Request, Waiting
from mongo_sansio.testing.server.dispatch import (
    COMMANDS,
    _held_back,
    _with_labels,
    code_name,
    error_reply,
    execute,
    failpoint_target,
    finish,
)
from mongo_sansio.testing.sharded import (
    admin,
    pipelines,
    reports,
    shards,
    streams,
    transactions,
    views,
    writing_stages,
)
from mongo_sansio.testing.sharded.catalog import check_unique_indexes, equality_point

if TYPE_CHECKING:
    from mongo_sansio.testing.sharded.cluster import ShardedCluster

__all__ = ["Router", "LOCAL_COMMANDS"]

LOCAL_COMMANDS = frozenset({
    "hello", "isMaster", "ismaster", "saslStart", "saslContinue", "authenticate", "logout", "ping", "buildInfo",
    "buildinfo", "configureFailPoint", "getParameter", "setParameter", "connectionStatus", "serverStatus", "getMore",
    "killCursors", "replSetGetStatus", "replSetStepDown", "replSetFreeze", "createUser", "updateUser",
})
SESSION_COMMANDS = frozenset({"endSessions", "killSessions", "killAllSessions"})
_TXN_FIELDS = ("txnNumber", "autocommit", "startTransaction")
# Fields the router keeps to itself (it sends its own read preference and cluster time).
_ROUTER_FIELDS = frozenset({"$db", "$clusterTime", "$readPreference", "recoveryToken", "lsid$"})
# A write command's statements (a command of one statement may wait for a lock and be sent
# again whole; see Router._wait_for_lock).
_STATEMENTS = {"insert": "documents", "update": "updates", "delete": "deletes"}
_WRITES = frozenset({"insert", "update", "delete", "findAndModify", "findandmodify"})


class Router:
    """See the module documentation."""

    def __init__(self, cluster: ShardedCluster, address: str) -> None:
        self.cluster = cluster
        self.address = address
        self.transactions = transactions.RouterTransactions(self)
        self._wrote = False  # a shard applied part of the command being routed

    # --- the pipeline --------------------------------------------------------------------------

    def execute(self, ctx: Context) -> Outcome:
        name = ctx.request.name
        self.cluster.tick(ctx.now)
        if name in LOCAL_COMMANDS or name in SESSION_COMMANDS:
            return self._local(ctx)
        return finish(ctx, self._routed(ctx))

    def _routed(self, ctx: Context) -> Outcome:
        name = ctx.request.name
        spec = COMMANDS.get(name)
        if spec is None and name not in admin.ROUTER_COMMANDS:
            return error_reply(CommandError(59, "CommandNotFound", f"no such command: '{name}'"))
        if ctx.cluster.auth_enabled and ctx.state.user is None and (spec is None or spec.requires_auth):
            return error_reply(CommandError(13, "Unauthorized", f"Command {name} requires authentication"))
        action = ctx.member.failpoints.fail_command(failpoint_target(ctx))
        if action is not None:
            if action.block_ms > 0:
                blocked = action
                return _held_back(ctx, spec, action.block_ms,
                                  lambda: finish(ctx, self._failpoint_or_route(ctx, blocked)))
            return self._failpoint_or_route(ctx, action)
        return self._concern_error(ctx, self._route_safely(ctx))

    def _failpoint_or_route(self, ctx: Context, action: Any) -> Outcome:
        spec = COMMANDS.get(ctx.request.name)
        if action.close_connection:
            return Close(f"failCommand failpoint closed the connection on {ctx.request.name}")
        if action.error_code is not None:
            reply: dict[str, Any] = {"ok": 0.0, "errmsg": "Failing command via 'failCommand' failpoint",
                                     "code": action.error_code, "codeName": code_name(action.error_code)}
            if action.error_extra_info is not None:
                reply.update(action.error_extra_info)
            if action.error_labels is not None:
                reply["errorLabels"] = list(action.error_labels)
            return _with_labels(ctx, spec, reply, action.error_code, change_stream=False)
        return self._concern_error(ctx, self._route_safely(ctx))

    def _concern_error(self, ctx: Context, outcome: Outcome) -> Outcome:
        """failCommand's writeConcernError, checked after the write as mongos does."""
        spec = COMMANDS.get(ctx.request.name)
        if not isinstance(outcome, dict) or outcome.get("ok") != 1.0 or spec is None or spec.access != "write":
            return outcome
        found = ctx.member.failpoints.write_concern_error(failpoint_target(ctx))
        if found is None:
            return outcome
        wce, labels = found
        outcome["writeConcernError"] = wce
        if labels is not None:
            outcome["errorLabels"] = list(labels)
        if ctx.body.get("autocommit") is False and ctx.request.name not in (transactions.COMMIT, transactions.ABORT):
            return outcome
        code = wce.get("code")
        return _with_labels(ctx, spec, outcome, code if isinstance(code, int) else None)

    def _route_safely(self, ctx: Context) -> Outcome:
        self._wrote = False
        try:
            return self.route(ctx)
        except shards.Blocked:
            return self._wait_for_lock(ctx)
        except CommandError as error:
            reply = error_reply(error)
            self.transactions.failed(ctx, reply)
            return _with_labels(ctx, COMMANDS.get(ctx.request.name), reply, error.code)
        except Exception as bug:  # noqa: BLE001 -- a routing bug must answer, not kill the connection
            return error_reply(CommandError(1, "InternalError", f"simulated mongos error in {ctx.request.name}: "
                                                                f"{type(bug).__name__}: {bug}"))

    def _wait_for_lock(self, ctx: Context) -> Waiting:
        """A write a shard holds back behind another session's transaction (see
        :func:`.shards.wait_for_lock`): routed again once the shard would take it."""

        def answer(outcome: Outcome | CommandError) -> Outcome:
            if isinstance(outcome, CommandError):
                outcome = _with_labels(ctx, COMMANDS.get(ctx.request.name), error_reply(outcome), outcome.code)
            return finish(ctx, self._concern_error(ctx, outcome))

        return shards.wait_for_lock(ctx, lambda: self._route_safely(ctx), answer)

    def _local(self, ctx: Context) -> Outcome:
        body = {k: v for k, v in ctx.body.items() if k not in _TXN_FIELDS}
        request = Request(ctx.request.name, ctx.request.db, body, ctx.request.sequences, ctx.request.request_id,
                          legacy=ctx.request.legacy, secondary_ok=True, exhaust_allowed=ctx.request.exhaust_allowed,
                          more_to_come=ctx.request.more_to_come, compressor_id=ctx.request.compressor_id)
        local = Context(ctx.cluster, ctx.member, ctx.state, request, ctx.now)
        if ctx.request.name in SESSION_COMMANDS:
            for shard in self.cluster.shards.values():
                try:
                    self.cluster.call(shard, "admin", {ctx.request.name: ctx.body[ctx.request.name]}, ctx.now)
                except CommandError:
                    pass
        return execute(local)

    # --- routing -------------------------------------------------------------------------------

    def route(self, ctx: Context) -> dict[str, Any]:
        name = ctx.request.name
        if name in admin.ROUTER_COMMANDS or ctx.db == "config" or name in ("listDatabases",):
            return admin.run(self, ctx)
        if name in (transactions.COMMIT, transactions.ABORT):
            return self.transactions.finish(ctx)
        if name == "renameCollection":
            return admin.rename_collection(self, ctx, self.body(ctx))
        txn = self.transactions.enter(ctx)
        body = self.body(ctx)
        if name == "aggregate" and streams.is_change_stream(body.get("pipeline")):
            return streams.open_merged(self, ctx, body)
        target = body.get(name)
        ns = f"{ctx.db}.{target}" if isinstance(target, str) else ""
        if name == "dropDatabase":
            reply = self.broadcast(ctx, body)
            self.cluster.catalog.drop_database(ctx.db)
            return reply
        if name in ("dbStats", "dbstats"):
            return reports.db_stats(self, ctx, body)
        if name == "explain" and isinstance(body.get("explain"), Mapping) and body["explain"]:
            inner = body["explain"]
            inner_target = inner.get(next(iter(inner)))
            inner_ns = f"{ctx.db}.{inner_target}" if isinstance(inner_target, str) else ""
            if inner_ns and self.cluster.catalog.sharded(inner_ns) is not None:
                return reports.explain(self, ctx, body, inner_ns)
        if name == "aggregate" and body.get("explain") is True and ns and self.cluster.catalog.sharded(ns) is not None:
            return reports.explain_aggregate(self, ctx, body, ns)
        snapshot = _snapshot_time(self, body) if txn is None else None
        result = self._route_collection(ctx, body, ns)
        if txn is not None:
            transactions.stamp(txn, result)
        if snapshot is not None and result.get("ok") == 1.0 and name in ("find", "aggregate", "distinct"):
            cursor = result.get("cursor")
            (cursor if isinstance(cursor, dict) else result)["atClusterTime"] = snapshot
        return result

    def _route_collection(self, ctx: Context, body: dict[str, Any], ns: str) -> dict[str, Any]:
        name = ctx.request.name
        sharded = self.cluster.catalog.sharded(ns) if ns else None
        if sharded is None and name in views.READS and isinstance(body.get(name), str):
            resolved = views.sharded_source(self, ctx.db, body[name])
            if resolved is not None:
                return views.read_sharded_view(self, ctx, body, body[name], *resolved)
        if sharded is None and name == "aggregate" and pipelines.reads_sharded(self, ctx.db, body.get("pipeline")):
            return _aggregate(self, ctx, body, ns)  # (the other collection is read through the router)
        if name == "createIndexes":
            if sharded is not None:
                check_unique_indexes(sharded, body.get("indexes"))
            return admin.create_indexes(self, ctx, body, self._holding(ns) if sharded is not None
                                        else self.cluster.catalog.shards_for_filter(ns, None))
        if sharded is None:
            shard = self.cluster.catalog.primary_shard(ctx.db)
            return self.cursor_reply(ctx, self.send(ctx, shard, body))
        handler = _SHARDED.get(name)
        if handler is None:
            # (the catalogue's commands reach every shard holding the collection, chunks or not,
            # as mongod's copies of a dropped or indexed collection go or change everywhere)
            catalogue = name in ("drop", "dropIndexes", "collMod")
            reply = self.broadcast(ctx, body, self._holding(ns) if catalogue else self.cluster.catalog.shards_for_filter(ns, None))
            if name == "drop":
                self.cluster.catalog.drop_collection(ns)
            return self.cursor_reply(ctx, reply)
        result: dict[str, Any] = handler(self, ctx, body, ns)
        return result

    def _holding(self, ns: str) -> list[str]:
        """The shards holding a copy of the sharded collection ``ns`` (every shard it was
        created on, whether or not it owns a chunk)."""
        database, _, name = ns.partition(".")
        return [shard for shard, rs in self.cluster.shards.items() if rs.collection(database, name) is not None]

    def body(self, ctx: Context) -> dict[str, Any]:
        """The command as the router sends it on: document sequences folded in, the router's
        own fields left out."""
        body = {k: v for k, v in ctx.body.items() if k not in _ROUTER_FIELDS}
        for field, items in ctx.request.sequences.items():
            body[field] = list(items)
        return body

    def send(self, ctx: Context, shard: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """``body`` run on ``shard`` (inside the client's transaction when there is one)."""
        body = self.transactions.for_shard(ctx, shard, body)
        name = next(iter(body), "")
        single = len(body.get(_STATEMENTS.get(name, ""), ())) <= 1
        reply = self.cluster.call(self.cluster.shards[shard], ctx.db, body, ctx.now, user=ctx.state.user,
                                  may_block=not self._wrote and single and body.get("autocommit") is not False)
        self.transactions.after_shard(ctx, shard, reply)
        self._wrote = self._wrote or (name in _WRITES and reply.get("ok") == 1.0)
        return reply

    def broadcast(self, ctx: Context, body: Mapping[str, Any], shards: list[str] | None = None) -> dict[str, Any]:
        """``body`` on every shard (or ``shards``); the first failure, else the first reply."""
        first: dict[str, Any] | None = None
        for shard in shards if shards is not None else list(self.cluster.shards):
            reply = self.send(ctx, shard, body)
            if reply.get("ok") != 1.0 and reply.get("code") not in (26,):
                return reply
            if first is None or first.get("ok") != 1.0:
                first = reply
        return first if first is not None else {"ok": 1.0}

    def drain(self, ctx: Context, shard: str, body: Mapping[str, Any]) -> list[Any]:
        """Every document of the cursor ``body`` opens on ``shard``."""
        reply = self.send(ctx, shard, body)
        if reply.get("ok") != 1.0:
            raise _reply_error(reply)
        return self.rest_of(ctx, shard, reply)

    def rest_of(self, ctx: Context, shard: str, reply: Mapping[str, Any]) -> list[Any]:
        cursor = reply.get("cursor")
        if not isinstance(cursor, Mapping):
            return []
        documents = list(cursor.get("firstBatch", []))
        cursor_id = int(cursor.get("id", 0))
        collection = str(cursor.get("ns", ".")).partition(".")[2]
        while cursor_id:
            more: dict[str, Any] = {"getMore": Int64(cursor_id), "collection": collection}
            if "lsid" in ctx.body:
                more["lsid"] = ctx.body["lsid"]
            for field in ("txnNumber", "autocommit"):
                if field in ctx.body:
                    more[field] = ctx.body[field]
            following = self.cluster.call(self.cluster.shards[shard], ctx.db, more, ctx.now, user=ctx.state.user)
            if following.get("ok") != 1.0:
                raise _reply_error(following)
            batch = following["cursor"]
            documents.extend(batch.get("nextBatch", []))
            cursor_id = int(batch.get("id", 0))
            if cursor_id and not batch.get("nextBatch"):
                # a tailable cursor at the end of its capped collection: it would never end
                # (this router reads a cursor whole, it does not tail; see the module docs)
                self.cluster.call(self.cluster.shards[shard], ctx.db,
                                  {"killCursors": collection, "cursors": [Int64(cursor_id)]}, ctx.now,
                                  user=ctx.state.user)
                break
        return documents

    def cursor_reply(self, ctx: Context, reply: dict[str, Any], shard: str | None = None) -> dict[str, Any]:
        """A shard's reply with its cursor (if still open) read whole into a router cursor."""
        cursor = reply.get("cursor")
        if reply.get("ok") != 1.0 or not isinstance(cursor, Mapping) or not int(cursor.get("id", 0)):
            return reply
        if shard is None:
            shard = self.cluster.catalog.primary_shard(ctx.db)
        documents = self.rest_of(ctx, shard, reply)
        return self.open_cursor(ctx, str(cursor.get("ns")), documents)

    def open_cursor(self, ctx: Context, ns: str, documents: list[Any]) -> dict[str, Any]:
        """A router cursor over ``documents``, its first batch as the client asked (a find's
        negative limit or singleBatch: one batch, the cursor closed)."""
        limit = ctx.body.get("limit")
        single = ctx.body.get("singleBatch") is True or (isinstance(limit, int) and not isinstance(limit, bool) and limit < 0)
        return ctx.member.cursors.open(ns, documents, batch_size=_batch_size(ctx.body), single_batch=single,
                                       lsid=lsid_key(ctx))

    def transactions_open(self, ns: str) -> bool:
        """Whether a shard holds an open transaction (its writes are not placed yet)."""
        return any(txn.open for shard in self.cluster.shards.values() for txn in shard.transactions.by_session.values())

    def documents(self, ctx: Context, ns: str, query: Any = None) -> list[Any]:
        """Every document of ``ns`` matching ``query`` (a $lookup's source), from its shards."""
        database, _, name = ns.partition(".")
        out: list[Any] = []
        for shard in self.cluster.catalog.shards_for_filter(ns, query):
            out.extend(self.drain(ctx, shard, {"find": name, "filter": query or {}}))
        return out


def _snapshot_time(router: Router, body: dict[str, Any]) -> Any:
    """A snapshot read outside a transaction reads every shard at one cluster time: the one
    it names, else the router's (which its reply then names, as mongos's)."""
    concern = body.get("readConcern")
    if not isinstance(concern, Mapping) or concern.get("level") != "snapshot":
        return None
    at = concern.get("atClusterTime") or router.cluster.clock.last
    body["readConcern"] = {**concern, "atClusterTime": at}
    return at


def _batch_size(body: Mapping[str, Any]) -> int | None:
    cursor = body.get("cursor")
    value = cursor.get("batchSize") if isinstance(cursor, Mapping) else body.get("batchSize")
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else None


def _reply_error(reply: Mapping[str, Any]) -> CommandError:
    code = reply.get("code")
    code = int(code) if isinstance(code, int) else 8
    error = CommandError(code, str(reply.get("codeName", code_name(code))), str(reply.get("errmsg", "")))
    return error


# --- sharded collections ------------------------------------------------------------------------


def _find(router: Router, ctx: Context, body: dict[str, Any], ns: str) -> dict[str, Any]:
    query = body.get("filter") or {}
    sort = body.get("sort")
    skip = int(body.get("skip") or 0)
    limit = abs(int(body.get("limit") or 0))
    projection = body.get("projection")
    shard_body = {k: v for k, v in body.items() if k not in ("skip", "limit", "batchSize", "singleBatch", "projection")}
    if limit:
        shard_body["limit"] = limit + skip
    if projection is not None and not sort:
        shard_body["projection"] = projection
    documents: list[Any] = []
    for shard in router.cluster.catalog.shards_for_filter(ns, query):
        documents.extend(router.drain(ctx, shard, shard_body))
    if sort:
        # (the find's collation, else the collection's default, which every shard shares)
        collation = parse_collation(body["collation"]) if "collation" in body else _default_collation(router, ns)
        documents = sort_documents(documents, sort, collation)
    documents = documents[skip:]
    if limit:
        documents = documents[:limit]
    if projection is not None and sort:
        compiled = Projection(projection)
        documents = [compiled.apply(d, filter=query) for d in documents]
    return router.open_cursor(ctx, ns, documents)


def _default_collation(router: Router, ns: str) -> Any:
    database, _, name = ns.partition(".")
    collection = router.cluster.shards[router.cluster.catalog.primary_shard(database)].collection(database, name)
    return collection.collation if collection is not None else None


def _aggregate(router: Router, ctx: Context, body: dict[str, Any], ns: str) -> dict[str, Any]:
    pipeline = list(body.get("pipeline") or [])
    writer = pipeline[-1] if pipeline and isinstance(pipeline[-1], Mapping) \
        and next(iter(pipeline[-1]), "") in writing_stages.WRITING_STAGES else None
    documents = merged_results(router, ctx, body, ns, pipeline[:-1] if writer is not None else pipeline)
    if writer is not None:
        writing_stages.write_results(router, ctx, body, writer, documents)
        documents = []
    return router.open_cursor(ctx, ns, documents)


def merged_results(router: Router, ctx: Context, body: dict[str, Any], ns: str, pipeline: list[Any]) -> list[Any]:
    """A pipeline's results: its leading document-wise stages run on the shards, the rest here."""
    split, per_shard = pipelines.split_pipeline(pipeline)
    shard_body = {k: v for k, v in body.items() if k not in ("cursor", "explain")}
    shard_body["pipeline"] = pipeline[:split]
    shard_body["cursor"] = {}
    query = pipeline[0].get("$match") if split and "$match" in pipeline[0] else None
    documents: list[Any] = []
    for shard in router.cluster.catalog.shards_for_filter(ns, query):
        found = router.drain(ctx, shard, shard_body)
        documents.extend({**d, "shard": shard} for d in found) if per_shard else documents.extend(found)
    database = ns.partition(".")[0]
    if split < len(pipeline):
        documents = run_pipeline(documents, pipeline[split:], lookup=lambda other: router.documents(ctx, f"{database}.{other}"),
                                 now=router.cluster.shards[router.cluster.catalog.primary_shard(database)].write_datetime())
    return documents


def _count(router: Router, ctx: Context, body: dict[str, Any], ns: str) -> dict[str, Any]:
    query = body.get("query") or {}
    skip = int(body.get("skip") or 0)
    limit = abs(int(body.get("limit") or 0))
    shard_body = {k: v for k, v in body.items() if k not in ("skip", "limit")}
    total = 0
    for shard in router.cluster.catalog.shards_for_filter(ns, query):
        reply = router.send(ctx, shard, shard_body)
        if reply.get("ok") != 1.0:
            return reply
        total += int(reply.get("n", 0))
    total = max(0, total - skip)
    if limit:
        total = min(total, limit)
    return {"n": total, "ok": 1.0}


def _distinct(router: Router, ctx: Context, body: dict[str, Any], ns: str) -> dict[str, Any]:
    seen: dict[Any, Any] = {}
    for shard in router.cluster.catalog.shards_for_filter(ns, body.get("query")):
        reply = router.send(ctx, shard, body)
        if reply.get("ok") != 1.0:
            return reply
        for value in reply.get("values", []):
            seen.setdefault(hashable_key(value), value)
    ordered = sort_documents([{"v": v} for v in seen.values()], {"v": 1})
    return {"values": [document["v"] for document in ordered], "ok": 1.0}


def _locate(router: Router, ctx: Context, ns: str, query: Any, collation: Any, upsert_seed: Any,
            sort: Any = None) -> list[str]:
    """The shard a single-document write goes to: the one its shard key names, else the
    one holding the first match (by ``sort``, a findAndModify's, compared across the shards'
    first matches as mongod's two-phase write does), else (an upsert) the one the new
    document would live on."""
    catalog = router.cluster.catalog
    targets = catalog.shards_for_filter(ns, query)
    if len(targets) == 1:
        return targets
    name = ns.partition(".")[2]
    firsts: list[dict[str, Any]] = []
    for shard in targets:
        find: dict[str, Any] = {"find": name, "filter": query or {}, "limit": 1}
        if sort:
            find["sort"] = sort
        else:
            find["projection"] = {"_id": 1}
        if collation is not None:
            find["collation"] = collation
        found = router.drain(ctx, shard, find)
        if found and not sort:
            return [shard]
        firsts.extend({"shard": shard, "document": document} for document in found)
    if firsts:
        ordering = {f"document.{field}": direction for field, direction in sort.items()}
        chosen = sort_documents(firsts, ordering, parse_collation(collation) if collation is not None else None)
        return [str(chosen[0]["shard"])]
    if upsert_seed is not None:
        return [catalog.shard_for_document(ns, upsert_seed)]
    return targets[:1]


def _statement_shards(router: Router, ctx: Context, ns: str, query: Any, many: bool, collation: Any, upsert: bool,
                      sort: Any = None) -> list[str]:
    if many:
        return router.cluster.catalog.shards_for_filter(ns, query)
    key = router.cluster.catalog.sharded(ns)
    seed = (equality_point(key.key, query) or {}) if key is not None and upsert else None
    plain = isinstance(sort, Mapping) and sort and all(not str(f).startswith("$") and v in (1, -1) for f, v in sort.items())
    return _locate(router, ctx, ns, query, collation, seed if upsert else None, sort if plain else None)


def _insert(router: Router, ctx: Context, body: dict[str, Any], ns: str) -> dict[str, Any]:
    groups: dict[str, list[tuple[int, Any]]] = {}
    for index, document in enumerate(body.get("documents") or []):
        if isinstance(document, Mapping) and "_id" not in document:
            document = {"_id": ObjectId.from_parts(int(ctx.cluster.wall(ctx.now)), ctx.cluster.random_bytes(5),
                                                   int.from_bytes(ctx.cluster.random_bytes(3), "big")), **document}
        shard = router.cluster.catalog.shard_for_document(ns, document if isinstance(document, Mapping) else {})
        groups.setdefault(shard, []).append((index, document))
    return _merge_writes(router, ctx, body, "documents", groups)


def _update(router: Router, ctx: Context, body: dict[str, Any], ns: str) -> dict[str, Any]:
    groups: dict[str, list[tuple[int, Any]]] = {}
    unplaced: dict[int, dict[str, Any]] = {}
    moves_key = False
    key = router.cluster.catalog.sharded(ns)
    for index, statement in enumerate(body.get("updates") or []):
        if not isinstance(statement, Mapping):
            raise CommandError(14, "TypeMismatch", "an update statement must be an object")
        if statement.get("multi") and statement.get("upsert") and key is not None \
                and equality_point(key.key, statement.get("q")) is None:
            # (mongod 7.0's two-phase write places a single upsert; a multi one it cannot target)
            unplaced[index] = {"index": index, "code": 61, "errmsg": "Failed to target upsert by query :: could not "
                                                                     "extract exact shard key"}
            continue
        for shard in _statement_shards(router, ctx, ns, statement.get("q"), bool(statement.get("multi")),
                                       statement.get("collation"), bool(statement.get("upsert"))):
            groups.setdefault(shard, []).append((index, statement))
        moves_key = moves_key or _may_change_key(router, ns, statement.get("u"))
    reply = _merge_writes(router, ctx, body, "updates", groups, unplaced)
    if moves_key:
        _place(router, ns)
    return reply


def _may_change_key(router: Router, ns: str, update: Any) -> bool:
    """Whether an update (or findAndModify's) may change a document's shard key."""
    fields = router.cluster.catalog.key_fields(ns)
    if not isinstance(update, Mapping) or not all(str(k).startswith("$") for k in update):
        return True  # a replacement or a pipeline
    for argument in update.values():
        if isinstance(argument, Mapping):
            for path in argument:
                if any(path == f or path.startswith(f + ".") or f.startswith(path + ".") for f in fields):
                    return True
    return False


def _place(router: Router, ns: str) -> None:
    """A document whose shard key changed moves to the shard owning its new key (mongod 7.0
    does it inside the write, WouldChangeOwningShard; outside a transaction here, once the
    write is done)."""
    if router.transactions_open(ns):
        return
    admin.rebalance(router, ns)


def _delete(router: Router, ctx: Context, body: dict[str, Any], ns: str) -> dict[str, Any]:
    groups: dict[str, list[tuple[int, Any]]] = {}
    for index, statement in enumerate(body.get("deletes") or []):
        if not isinstance(statement, Mapping):
            raise CommandError(14, "TypeMismatch", "a delete statement must be an object")
        for shard in _statement_shards(router, ctx, ns, statement.get("q"), statement.get("limit") in (0, None),
                                       statement.get("collation"), False):
            groups.setdefault(shard, []).append((index, statement))
    return _merge_writes(router, ctx, body, "deletes", groups)


def _merge_writes(router: Router, ctx: Context, body: dict[str, Any], field: str,
                  groups: dict[str, list[tuple[int, Any]]], unplaced: Mapping[int, dict[str, Any]] | None = None,
                  ) -> dict[str, Any]:
    """The statements sent on, the counts summed and the statement indexes mapped back.  An
    ordered write goes as mongos sends it, one run of statements with the same shards after
    the other, and stops after a run with a write error or before a statement it could not
    target (``unplaced``: their write errors); a retryable one names its statements
    (``stmtIds``), which keys each shard's record of the run (see the module documentation)."""
    unplaced = unplaced or {}
    ordered = body.get("ordered", True) is not False
    merged: dict[str, Any] = {"n": 0}
    if field == "updates":
        merged["nModified"] = 0
    errors: list[dict[str, Any]] = []
    upserted: list[dict[str, Any]] = []
    concern_error: Any = None
    labels: list[str] = []
    retryable = ctx.request.txn_number is not None and ctx.body.get("autocommit") is not False
    rounds = _runs(groups) if ordered else [groups]
    for batch in rounds:
        if errors or (ordered and unplaced and min(unplaced) < min(i for items in batch.values() for i, _ in items)):
            break
        for shard, items in batch.items():
            shard_body = dict(body)
            shard_body[field] = [item for _, item in items]
            if retryable:
                shard_body["stmtIds"] = [index for index, _ in items]
            reply = router.send(ctx, shard, shard_body)
            if reply.get("ok") != 1.0:
                return reply
            merged["n"] += int(reply.get("n", 0))
            if field == "updates":
                merged["nModified"] += int(reply.get("nModified", 0))
            for error in reply.get("writeErrors", []):
                errors.append({**error, "index": items[int(error["index"])][0]})
            for entry in reply.get("upserted", []):
                upserted.append({**entry, "index": items[int(entry["index"])][0]})
            if "writeConcernError" in reply and concern_error is None:
                concern_error = reply["writeConcernError"]
            labels.extend(label for label in reply.get("errorLabels", []) if label not in labels)
    if not ordered:
        errors.extend(unplaced.values())
    elif unplaced and not errors:  # (an ordered write stopped at it)
        errors.append(unplaced[min(unplaced)])
    if upserted:
        merged["upserted"] = sorted(upserted, key=lambda entry: int(entry["index"]))
    if errors:
        merged["writeErrors"] = sorted(errors, key=lambda entry: int(entry["index"]))
    if concern_error is not None:
        merged["writeConcernError"] = concern_error
    if labels:
        merged["errorLabels"] = labels
    merged["ok"] = 1.0
    return merged


def _runs(groups: dict[str, list[tuple[int, Any]]]) -> list[dict[str, list[tuple[int, Any]]]]:
    """The statements of ``groups`` in their order, cut into runs of consecutive statements
    sent to the same shards: each run a {shard: statements} of its own."""
    targets: dict[int, tuple[Any, list[str]]] = {}
    for shard, items in groups.items():
        for index, item in items:
            targets.setdefault(index, (item, []))[1].append(shard)
    runs: list[dict[str, list[tuple[int, Any]]]] = []
    last: list[str] | None = None
    for index in sorted(targets):
        item, shards = targets[index]
        if shards != last:
            runs.append({})
            last = shards
        for shard in shards:
            runs[-1].setdefault(shard, []).append((index, item))
    return runs


def _find_and_modify(router: Router, ctx: Context, body: dict[str, Any], ns: str) -> dict[str, Any]:
    shards = _statement_shards(router, ctx, ns, body.get("query"), False, body.get("collation"), bool(body.get("upsert")),
                               body.get("sort"))
    reply = router.send(ctx, shards[0], body)
    if _may_change_key(router, ns, body.get("update")):
        _place(router, ns)
    return reply


_SHARDED: dict[str, Any] = {
    "find": _find, "aggregate": _aggregate, "count": _count, "distinct": _distinct, "insert": _insert,
    "update": _update, "delete": _delete, "findAndModify": _find_and_modify, "findandmodify": _find_and_modify,
}
