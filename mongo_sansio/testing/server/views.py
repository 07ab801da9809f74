"""Read-only views, as mongod 7.0/8.0 keeps them: defined by ``create`` with ``viewOn`` and
``pipeline``, read through their pipeline, refused to every write.

Inputs: a :class:`~.context.Context` for a command that names a view, or that creates,
modifies or drops one.  Outputs: the reply documents mongod gives (see :func:`intercept`),
the documents of a view (:func:`read`), its listCollections entries (:func:`listed_views`),
and the change event an oplog entry on ``system.views`` stands for (:func:`view_event`).
Failures are raised as CommandError.

Storage is mongod's: a database's views are the documents of its ``system.views`` collection,
``{_id: "<db>.<view>", viewOn: <collection or view name>, pipeline: [...]}`` (and ``collation``
when one was given), a collection created with the first view and kept after the last one is
dropped.  Writing the definitions there logs what mongod logs (an insert, a replacement or a
delete on ``<db>.system.views``), so change streams with ``showExpandedEvents`` report the
create, modify and drop of a view from those entries, and a transaction or a snapshot read
sees the definitions of its snapshot.

A view resolves through at most 20 views (165 ViewDepthLimitExceeded beyond), the pipelines
concatenated from the innermost one, over the collection at the end of the chain (a missing
collection reads as empty: a view may be created on one).  Reads run what mongod runs for a
view: ``aggregate`` reads the view's documents, then the request's own stages (the cursor names
the view's namespace); ``find`` becomes that aggregate ($match, $sort, $skip, $limit, $project;
the options aggregation lacks are 168 InvalidPipelineOperator); ``count`` is $match, $skip,
$limit and $count; ``distinct`` is $match, an $unwind of every prefix of the key and $group
with $addToSet.  ``$lookup`` may read a view too.  A view's ``collation`` is its default, not
its collection's: its pipeline and the operations on it run with it, another one asked for is
167, and the views of a chain must agree on it.  Writes, indexes and change streams on a view
are 166 CommandNotSupportedOnView; a view is created once (48 NamespaceExists unless the same
definition is asked again, which mongod answers ok), cannot be renamed, is changed with
``collMod`` (``viewOn``, ``pipeline``) and removed with ``drop``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from mongo_sansio.testing.engine import CommandError, run_pipeline
from mongo_sansio.testing.engine.aggregate import compile_pipeline
from mongo_sansio.testing.engine.collation import Collation, parse_collation
from mongo_sansio.testing.engine.errors import failed_to_parse
from mongo_sansio.testing.server.context import Context, Outcome
from mongo_sansio.testing.server.oplog import OplogEntry

__all__ = ["SYSTEM_VIEWS", "definition", "intercept", "listed_views", "read", "view_event", "view_write_error"]

SYSTEM_VIEWS = "system.views"
MAX_DEPTH = 20  # mongod's ViewGraph::kMaxViewDepth
_NOT_ON_VIEW = 166  # CommandNotSupportedOnView
_NOT_IN_AGGREGATION = 168  # InvalidPipelineOperator
# Stages a view's pipeline may not hold: they write, they open a change stream, or they read
# no collection at all.
_WRITING_STAGES = ("$out", "$merge")
_COLLECTIONLESS_STAGES = ("$documents",)
# Fields of a command that are the command's framing, not options of the view it changes.
_GENERIC_FIELDS = frozenset({
    "lsid", "txnNumber", "autocommit", "startTransaction", "$db", "$clusterTime", "$readPreference",
    "writeConcern", "readConcern", "comment", "maxTimeMS", "apiVersion", "apiStrict", "apiDeprecationErrors",
})


def _not_on_view(message: str) -> CommandError:
    return CommandError(_NOT_ON_VIEW, "CommandNotSupportedOnView", message)


def view_write_error(db: str, name: str) -> CommandError:
    """The error of a write statement on a view (bulkWrite's ops get it too)."""
    return _not_on_view(f"Namespace {db}.{name} is a view, not a collection")


def _exists(message: str) -> CommandError:
    return CommandError(48, "NamespaceExists", message)


def _invalid_options(message: str) -> CommandError:
    return CommandError(72, "InvalidOptions", message)


def _type_error(message: str) -> CommandError:
    return CommandError(14, "TypeMismatch", message)


# --- definitions -----------------------------------------------------------------------------


@attrs.frozen
class View:
    """One definition of ``system.views``: the view's name, what it reads, its stages."""

    name: str
    view_on: str
    pipeline: list[Any]
    collation: Mapping[str, Any] | None = None  # its default, in the full form mongod lists

    def collator(self) -> Collation | None:
        """The view's default collation (None: simple); operations on it use it."""
        return parse_collation(self.collation) if self.collation is not None else None

    def document(self, db: str) -> dict[str, Any]:
        """The ``system.views`` document (mongod's field order)."""
        document: dict[str, Any] = {"_id": f"{db}.{self.name}", "viewOn": self.view_on, "pipeline": list(self.pipeline)}
        if self.collation is not None:
            document["collation"] = dict(self.collation)
        return document

    def options(self) -> dict[str, Any]:
        """The options listCollections shows."""
        return {k: v for k, v in self.document("").items() if k != "_id"}


def _parse(db: str, document: Mapping[str, Any]) -> View | None:
    """A definition, or None for a document that is not one (mongod refuses those writes to
    ``system.views``; the simulator passes them over)."""
    ns, view_on, pipeline = document.get("_id"), document.get("viewOn"), document.get("pipeline")
    prefix = f"{db}."
    if not (isinstance(ns, str) and ns.startswith(prefix) and isinstance(view_on, str) and isinstance(pipeline, list)):
        return None
    collation = document.get("collation")
    return View(ns[len(prefix):], view_on, list(pipeline), collation if isinstance(collation, Mapping) else None)


def definition(ctx: Context, db: str, name: Any) -> View | None:
    """The view ``db.name`` as the command sees the catalogue, or None (not a view, or not a
    name)."""
    views = ctx.collection(db, SYSTEM_VIEWS)
    if views is None or not isinstance(name, str):
        return None
    found = views.find({"_id": f"{db}.{name}"}, None, limit=1)
    return _parse(db, found[0]) if found else None


def _definitions(ctx: Context, db: str) -> list[View]:
    views = ctx.collection(db, SYSTEM_VIEWS)
    parsed = [_parse(db, document) for document in views] if views is not None else []
    return [view for view in parsed if view is not None]


def listed_views(ctx: Context) -> list[dict[str, Any]]:
    """The listCollections entries of the command's database's views, by name."""
    return [
        {"name": view.name, "type": "view", "options": view.options(), "info": {"readOnly": True}}
        for view in sorted(_definitions(ctx, ctx.db), key=lambda v: v.name)
    ]


# --- reading through a view ------------------------------------------------------------------


def resolve(ctx: Context, db: str, name: str) -> tuple[str, list[Any], Collation | None] | None:
    """(the collection at the end of the chain, the stages to run over it, the collation they
    run with), or None when ``name`` is not a view.  mongod follows at most 20 views; the
    views of a chain share one collation (a conflict is refused when a view is defined), the
    collection's own default is not used."""
    current, pipeline = name, list[Any]()
    collation: Collation | None = None
    for depth in range(MAX_DEPTH):
        view = definition(ctx, db, current)
        if view is None:
            return (current, pipeline, collation) if depth else None
        if not depth:
            collation = view.collator()
        current, pipeline = view.view_on, [*view.pipeline, *pipeline]
    raise CommandError(165, "ViewDepthLimitExceeded",
                       f"View depth too deep or view cycle detected; maximum depth is {MAX_DEPTH}")


def read(ctx: Context, name: str, depth: int = 0) -> list[dict[str, Any]]:
    """The documents of the collection or view ``name`` of the command's database (a missing
    one reads as empty).  ``depth`` counts the ``$lookup`` reads this one is nested in: a view
    whose pipeline looks itself up (which mongod refuses to create) ends at mongod's depth
    limit instead of recursing for ever."""
    resolved = resolve(ctx, ctx.db, name)
    source = resolved[0] if resolved is not None else name
    found = ctx.collection(ctx.db, source)
    documents = list(found) if found is not None else []
    if resolved is None or not resolved[1]:
        return documents
    if depth > MAX_DEPTH:
        raise CommandError(165, "ViewDepthLimitExceeded",
                           f"View depth too deep or view cycle detected; maximum depth is {MAX_DEPTH}")
    return run_pipeline(documents, resolved[1], lookup=lambda other: read(ctx, other, depth + 1),
                        now=ctx.cluster.write_datetime(), collation=resolved[2])


def _run_over_view(ctx: Context, view: View, stages: list[Any]) -> list[dict[str, Any]]:
    return run_pipeline(read(ctx, view.name), stages, lookup=lambda other: read(ctx, other, 1),
                        now=ctx.cluster.write_datetime(), collation=_operation_collation(ctx, view))


def _operation_collation(ctx: Context, view: View) -> Collation | None:
    """An operation on a view runs with the view's collation; asking for another one is
    refused (167)."""
    own = view.collator()
    if "collation" in ctx.body:
        if parse_collation(ctx.body["collation"], f"{ctx.request.name}.collation") != own:
            raise CommandError(167, "OptionNotSupportedOnView", "Cannot override a view's default collation")
    return own


def _as_aggregate(ctx: Context, body: dict[str, Any]) -> Outcome:
    """Answer ``body``, an aggregate on a view, with the aggregate handler."""
    from mongo_sansio.testing.server.commands_crud import aggregate  # (it imports this module)

    return aggregate(attrs.evolve(ctx, request=attrs.evolve(ctx.request, name="aggregate", body=body)))


def _number(ctx: Context, field: str) -> int:
    value = ctx.body.get(field, 0)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _type_error(f"Field '{field}' should be a number")
    return int(value)


def _document(ctx: Context, field: str) -> Mapping[str, Any]:
    value = ctx.body.get(field)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise _type_error(f"BSON field '{ctx.request.name}.{field}' is the wrong type, expected type 'object'")
    return value


# find options aggregation has no stage for (mongod's asAggregationCommand refuses them).
_FIND_ONLY_OPTIONS = ("min", "max", "returnKey", "showRecordId", "tailable", "noCursorTimeout",
                      "allowPartialResults", "readOnce", "allowSpeculativeMajorityRead",
                      "requestResumeToken", "resumeAfter")


def _find(ctx: Context, view: View) -> Outcome:
    """find on a view: the aggregate mongod turns it into, answered with the view's ns."""
    for option in _FIND_ONLY_OPTIONS:
        if ctx.body.get(option):
            message = ("Tailable cursors are not supported in aggregation." if option == "tailable"
                       else f"Option {option} not supported in aggregation.")
            raise CommandError(_NOT_IN_AGGREGATION, "InvalidPipelineOperator", message)
    limit, skip = _number(ctx, "limit"), _number(ctx, "skip")
    if limit < 0:
        raise CommandError(51024, "Location51024", f"LIMIT value must be non-negative, but received: {limit}")
    if skip < 0:
        raise CommandError(51024, "Location51024", f"SKIP value must be non-negative, but received: {skip}")
    sort = _document(ctx, "sort")
    if "$natural" in sort:
        raise CommandError(_NOT_IN_AGGREGATION, "InvalidPipelineOperator", "Sort option $natural not supported in aggregation.")
    if ctx.body.get("singleBatch") and limit != 1:  # (findOne's limit 1 is the exception)
        raise CommandError(_NOT_IN_AGGREGATION, "InvalidPipelineOperator", "Option singleBatch not supported in aggregation.")
    _operation_collation(ctx, view)
    pipeline: list[Any] = []
    query, projection = _document(ctx, "filter"), _document(ctx, "projection")
    for stage, argument in (("$match", query), ("$sort", sort), ("$skip", skip), ("$limit", limit),
                            ("$project", projection)):
        if argument:
            pipeline.append({stage: argument})
    body: dict[str, Any] = {"aggregate": view.name, "pipeline": pipeline, "cursor": {}}
    if "batchSize" in ctx.body:
        body["cursor"] = {"batchSize": ctx.body["batchSize"]}
    for option in ("let", "hint", "maxTimeMS", "readConcern", "comment"):
        if option in ctx.body:
            body[option] = ctx.body[option]
    if view.collation is not None:
        body["collation"] = dict(view.collation)
    return _as_aggregate(ctx, body)


def _count(ctx: Context, view: View) -> Outcome:
    skip, limit = _number(ctx, "skip"), abs(_number(ctx, "limit"))
    if skip < 0:
        raise CommandError(51024, "Location51024", "skip value is negative in count query")
    stages: list[Any] = []
    for stage, argument in (("$match", _document(ctx, "query")), ("$skip", skip), ("$limit", limit)):
        if argument:
            stages.append({stage: argument})
    counted = _run_over_view(ctx, view, [*stages, {"$count": "count"}])
    return {"n": counted[0]["count"] if counted else 0, "ok": 1.0}


def _distinct(ctx: Context, view: View) -> Outcome:
    key = ctx.body.get("key")
    if not isinstance(key, str):
        raise _type_error("BSON field 'distinct.key' is the wrong type, expected type 'string'")
    if not key:
        raise failed_to_parse("distinct key must be a non-empty string")
    stages: list[Any] = []
    query = _document(ctx, "query")
    if query:
        stages.append({"$match": query})
    parts = key.split(".")
    # Every prefix is unwound (a.b: $a, then $a.b), so array elements count one by one at
    # each level, as a distinct on a collection counts them.
    for end in range(1, len(parts) + 1):
        stages.append({"$unwind": {"path": "$" + ".".join(parts[:end]), "preserveNullAndEmptyArrays": True}})
    stages.append({"$group": {"_id": None, "distinct": {"$addToSet": "$" + key}}})
    grouped = _run_over_view(ctx, view, stages)
    return {"values": grouped[0]["distinct"] if grouped else [], "ok": 1.0}


def _aggregate(ctx: Context, view: View) -> Outcome | None:
    """Refuse what a view cannot answer; the aggregate handler reads the rest through
    :func:`read`, with the view's collation."""
    pipeline = ctx.body.get("pipeline")
    first = pipeline[0] if isinstance(pipeline, list) and pipeline else None
    if isinstance(first, Mapping) and any(name in first for name in ("$changeStream", "$collStats", "$indexStats")):
        # ($collStats and $indexStats describe a collection's storage; the simulator refuses
        # them on a view with the code of the other collection-only operations)
        raise view_write_error(ctx.db, view.name)
    _operation_collation(ctx, view)
    if view.collation is None or "collation" in ctx.body:
        return None
    return _as_aggregate(ctx, {**ctx.body, "collation": dict(view.collation)})


# --- writes, indexes, renames: refused --------------------------------------------------------


_STATEMENTS = {"insert": "documents", "update": "updates", "delete": "deletes"}


def _write(ctx: Context, view: View) -> Outcome:
    """mongod fails each statement on a view with a write error (an ordered command, or one in
    a transaction, stops at the first)."""
    field = _STATEMENTS[ctx.request.name]
    given = ctx.request.sequences.get(field, ctx.body.get(field))
    count = len(given) if isinstance(given, list) else 1
    ordered = ctx.body.get("ordered", True) is not False or ctx.txn is not None
    error = view_write_error(ctx.db, view.name)
    reply: dict[str, Any] = {"n": 0}
    if ctx.request.name == "update":
        reply["nModified"] = 0
    reply["writeErrors"] = [{"index": i, "code": error.code, "errmsg": error.errmsg}
                            for i in range(1 if ordered else count)]
    reply["ok"] = 1.0
    return reply


def _refuse(message: Callable[[str, str], str]) -> Callable[[Context, View], Outcome]:
    def handler(ctx: Context, view: View) -> Outcome:
        raise _not_on_view(message(ctx.db, view.name))

    return handler


def _rename(ctx: Context) -> Outcome | None:
    """mongod looks at the source first (a view: 166), then at the target (a view: 48)."""
    source, target = ctx.body.get("renameCollection"), ctx.body.get("to")
    if ctx.db != "admin" or not (isinstance(source, str) and isinstance(target, str)):
        return None  # (the handler refuses these)
    source_db, _, source_name = source.partition(".")
    if definition(ctx, source_db, source_name) is not None:
        raise _not_on_view(f"cannot rename view: {source}")
    target_db, _, target_name = target.partition(".")
    if ctx.collection(source_db, source_name) is not None and definition(ctx, target_db, target_name) is not None:
        raise _exists(f"a view already exists with that name: {target}")
    return None


# --- create, collMod, drop -------------------------------------------------------------------


def _check_pipeline(db: str, name: str, pipeline: list[Any]) -> None:
    """mongod parses a view's pipeline when the view is defined: unknown stages and bad
    arguments fail as in an aggregate; stages that write, open a change stream or read no
    collection are refused."""
    special = (*_WRITING_STAGES, "$changeStream", *_COLLECTIONLESS_STAGES)
    compile_pipeline([s for s in pipeline if not (isinstance(s, Mapping) and len(s) == 1 and next(iter(s)) in special)])
    for index, stage in enumerate(pipeline):
        stage_name = next(iter(stage))
        if stage_name in _WRITING_STAGES:
            raise CommandError(167, "OptionNotSupportedOnView",
                               f"The aggregation stage {stage_name} in location {index} of the pipeline cannot be used "
                               f"in the view definition of {db}.{name} because it writes to disk")
        if stage_name == "$changeStream":
            raise CommandError(167, "OptionNotSupportedOnView", "$changeStream cannot be used in a view definition")
        if stage_name in _COLLECTIONLESS_STAGES:
            raise CommandError(73, "InvalidNamespace", f"'{stage_name}' cannot be used in a view definition")


def _references(view: View) -> list[str]:
    """The namespaces a view reads: what it is on, and its $lookup sources."""
    refs = [view.view_on]
    for stage in view.pipeline:
        spec = stage.get("$lookup") if isinstance(stage, Mapping) else None
        if isinstance(spec, Mapping) and isinstance(spec.get("from"), str):
            refs.append(spec["from"])
    return refs


def _check_graph(ctx: Context, db: str, new: View) -> None:
    """mongod's view graph checks for the definition ``new``: no cycle through it (5
    GraphContainsCycle, naming the cycle), and no chain of views longer than 20 through it
    (165 ViewDepthLimitExceeded)."""
    views = {view.name: view for view in _definitions(ctx, db)}
    views[new.name] = new

    def below(name: str, path: list[str]) -> int:
        """The views on the longest chain down from ``name`` (itself included)."""
        if len(path) > MAX_DEPTH:
            raise CommandError(165, "ViewDepthLimitExceeded", f"View depth limit exceeded; maximum depth is {MAX_DEPTH}")
        heights = [0]
        for ref in _references(views[name]):
            if ref == new.name:
                cycle = " => ".join(f"{db}.{n}" for n in [*path, name, ref])
                raise CommandError(5, "GraphContainsCycle", f"View cycle detected: {cycle}")
            if ref in views:
                heights.append(below(ref, [*path, name]))
        return 1 + max(heights)

    def above(name: str, depth: int) -> int:
        if depth > MAX_DEPTH:
            raise CommandError(165, "ViewDepthLimitExceeded", f"View depth limit exceeded; maximum depth is {MAX_DEPTH}")
        parents = [v.name for v in views.values() if name in _references(v) and v.name != name]
        return 1 + max((above(p, depth + 1) for p in parents), default=0)

    if below(new.name, []) + above(new.name, 0) - 1 > MAX_DEPTH:
        raise CommandError(165, "ViewDepthLimitExceeded", f"View depth limit exceeded; maximum depth is {MAX_DEPTH}")
    for ref in _references(new):
        if ref in views and views[ref].collation != new.collation:
            raise CommandError(167, "OptionNotSupportedOnView",
                               f"View {db}.{new.name} has conflicting collation with view {db}.{ref}")


def _view_options(ctx: Context) -> tuple[str, list[Any]]:
    body = ctx.body
    view_on, pipeline = body.get("viewOn"), body.get("pipeline", [])
    if "viewOn" in body and not isinstance(view_on, str):
        raise _type_error("BSON field 'create.viewOn' is the wrong type, expected type 'string'")
    if not isinstance(pipeline, list):
        raise _type_error("BSON field 'create.pipeline' is the wrong type, expected type 'array'")
    for index, stage in enumerate(pipeline):
        if not isinstance(stage, Mapping):
            raise _type_error(f"BSON field 'create.pipeline.{index}' is the wrong type, expected type 'object'")
    if view_on is None:
        raise _invalid_options("'pipeline' requires 'viewOn' to also be specified")
    if not view_on:
        raise CommandError(2, "BadValue", "'viewOn' cannot be empty")
    if "timeseries" in body:
        raise _invalid_options(f"{ctx.db}.{body['create']}: 'timeseries' is not allowed with 'viewOn'")
    return view_on, list(pipeline)


def _create(ctx: Context) -> Outcome | None:
    name = ctx.body.get("create")
    if not isinstance(name, str) or not name:
        return None  # (the handler reports the bad name)
    if "viewOn" not in ctx.body and "pipeline" not in ctx.body:
        existing = definition(ctx, ctx.db, name)
        if existing is None:
            return None
        if ctx.txn is not None:
            raise _exists(f"A view already exists. NS: {ctx.db}.{name}")
        # (mongod compares the options asked with the view's: no viewOn is not the view's)
        raise _exists(f"namespace {ctx.db}.{name} already exists, but is a view on "
                      f"{ctx.db}.{existing.view_on} rather than {ctx.db}")
    view_on, pipeline = _view_options(ctx)
    if ctx.txn is not None:
        raise CommandError(263, "OperationNotSupportedInTransaction", "Cannot create a view in a multi-document transaction.")
    if "clusteredIndex" in ctx.body:
        raise CommandError(6026500, "Location6026500", "The 'clusteredIndex' option is not supported with views")
    if name == SYSTEM_VIEWS:
        raise CommandError(73, "InvalidNamespace", f"Cannot create a view called '{name}': this is a reserved system namespace")
    # (create's parser knows a collation's fields, so it names them under create.collation)
    given = ctx.body.get("collation")
    collation = parse_collation(given, "create.collation", "create.collation") if given is not None else None
    wanted = View(name, view_on, pipeline, collation.document() if collation is not None else None)
    if ctx.collection(ctx.db, name) is not None:
        # (mongod's message goes on with the collection's stored options, its uuid among them)
        raise _exists(f"namespace {ctx.db}.{name} already exists, but with different options")
    existing = definition(ctx, ctx.db, name)
    if existing is not None:
        _same_view(ctx.db, existing, wanted)
        return {"ok": 1.0}  # mongod 7.0 answers a create of the same view again with ok
    images = ctx.body.get("changeStreamPreAndPostImages")
    if isinstance(images, Mapping) and images.get("enabled"):
        raise _invalid_options("option not supported on a view: changeStreamPreAndPostImages")
    if "$" in view_on or view_on.startswith("."):
        raise CommandError(73, "InvalidNamespace", f"invalid name for 'viewOn': {view_on}")
    _check_pipeline(ctx.db, name, pipeline)
    _check_graph(ctx, ctx.db, wanted)
    views = ctx.cluster.collection(ctx.db, SYSTEM_VIEWS, create=True)
    assert views is not None
    views.insert_one(wanted.document(ctx.db))
    return {"ok": 1.0}


def _same_view(db: str, existing: View, wanted: View) -> None:
    if existing.view_on != wanted.view_on:
        raise _exists(f"namespace {db}.{existing.name} already exists, but is a view on {db}.{existing.view_on} "
                      f"rather than {db}.{wanted.view_on}")
    if existing.pipeline != wanted.pipeline:
        raise _exists(f"namespace {db}.{existing.name} already exists, but with pipeline {existing.pipeline} "
                      f"rather than {wanted.pipeline}")
    if existing.collation != wanted.collation:
        raise _exists(f"namespace {db}.{existing.name} already exists, but with collation: "
                      f"{existing.collation or {}} rather than {wanted.collation or {}}")


def _coll_mod(ctx: Context, view: View) -> Outcome:
    """collMod of a view changes what it is on and its stages, nothing else."""
    for field in ctx.body:
        if field not in ("collMod", "viewOn", "pipeline") and field not in _GENERIC_FIELDS:
            raise _invalid_options(f"option not supported on a view: {field}")
    view_on = ctx.body.get("viewOn", view.view_on)
    pipeline = ctx.body.get("pipeline", view.pipeline)
    if not isinstance(view_on, str):
        raise _type_error("BSON field 'collMod.viewOn' is the wrong type, expected type 'string'")
    if not isinstance(pipeline, list) or not all(isinstance(stage, Mapping) for stage in pipeline):
        raise _type_error("BSON field 'collMod.pipeline' is the wrong type, expected type 'array'")
    if not view_on:
        raise CommandError(2, "BadValue", "'viewOn' cannot be empty")
    if "$" in view_on or view_on.startswith("."):
        raise CommandError(73, "InvalidNamespace", f"invalid name for 'viewOn': {view_on}")
    changed = attrs.evolve(view, view_on=view_on, pipeline=list(pipeline))
    _check_pipeline(ctx.db, view.name, changed.pipeline)
    _check_graph(ctx, ctx.db, changed)
    views = ctx.cluster.collection(ctx.db, SYSTEM_VIEWS)
    assert views is not None
    # (a replacement, as mongod logs it: a change stream reads the new definition from it)
    views.update({"_id": f"{ctx.db}.{view.name}"}, {k: v for k, v in changed.document(ctx.db).items() if k != "_id"})
    return {"ok": 1.0}


def _drop(ctx: Context, view: View) -> Outcome:
    views = ctx.cluster.collection(ctx.db, SYSTEM_VIEWS)
    assert views is not None
    views.delete({"_id": f"{ctx.db}.{view.name}"}, limit=1)
    return {"ns": f"{ctx.db}.{view.name}", "ok": 1.0}


# --- the dispatcher's hook --------------------------------------------------------------------


_ON_VIEW: dict[str, Callable[[Context, View], Outcome | None]] = {
    "find": _find,
    "aggregate": _aggregate,
    "count": _count,
    "distinct": _distinct,
    "insert": _write,
    "update": _write,
    "delete": _write,
    "findAndModify": _refuse(lambda db, name: f"Namespace {db}.{name} is a view, not a collection"),
    "findandmodify": _refuse(lambda db, name: f"Namespace {db}.{name} is a view, not a collection"),
    "createIndexes": _refuse(lambda db, name: "Cannot create indexes on a view"),
    "listIndexes": _refuse(lambda db, name: f"Namespace {db}.{name} is a view, not a collection"),
    "dropIndexes": _refuse(lambda db, name: f"Cannot drop indexes on view {db}.{name}"),
    "collMod": _coll_mod,
    "drop": _drop,
}


def intercept(ctx: Context) -> Outcome | None:
    """The answer to a command about a view (None: not one; the command's own handler runs).
    ``create`` with ``viewOn`` defines one; ``renameCollection`` of or onto one is refused;
    the commands of ``_ON_VIEW`` act on the view they name."""
    name = ctx.request.name
    if name == "create":
        return _create(ctx)
    if name == "renameCollection":
        return _rename(ctx)
    handler = _ON_VIEW.get(name)
    if handler is None:
        return None
    view = definition(ctx, ctx.db, ctx.body.get(name))
    return handler(ctx, view) if view is not None else None


# --- change streams ---------------------------------------------------------------------------


def view_event(entry: OplogEntry) -> tuple[str, str, str, dict[str, Any] | None] | None:
    """What mongod's change streams report for a write to ``<db>.system.views`` (with
    ``showExpandedEvents``, on a database or the cluster): (operationType, db, view name,
    operationDescription) -- an insert is the view's create, a replacement its modify, a
    delete its drop; None for an entry that is none of those."""
    kinds = {"insert": "create", "delete": "drop", "replace": "modify", "update": "modify"}
    kind = kinds.get(entry.kind)
    document = entry.before if kind == "drop" else entry.after
    if kind is None or document is None or not isinstance(document.get("_id"), str):
        return None
    ns = document["_id"]
    db, _, name = ns.partition(".")
    description = None if kind == "drop" else {k: v for k, v in document.items() if k != "_id"}
    return kind, db, name, description
