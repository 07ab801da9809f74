"""collMod on a collection: document validation, an index's options, pre- and post-images.

Inputs: a :class:`~.context.Context` whose command is ``collMod`` (a view's collMod is
:mod:`.views`').  Outputs: mongod 7.0's reply -- ``{ok: 1}``, with the index fields
``expireAfterSeconds_old/new``, ``hidden_old/new``, ``prepareUnique_old/new`` and
``unique_new`` when an index changed -- and a "c" oplog entry naming the options, which a
change stream with ``showExpandedEvents`` reports as a modify event.  Failures are
CommandErrors with mongod's codes (InvalidOptions 72, IndexNotFound 27,
CannotConvertIndexToUnique 359 with its ``violations``, NamespaceNotFound 26).

What it changes: ``validator`` / ``validationLevel`` / ``validationAction`` (the engine's
:mod:`~mongo_sansio.testing.engine.validation`), ``index: {keyPattern | name, hidden,
expireAfterSeconds, prepareUnique, unique}`` with ``dryRun`` for a conversion to unique (the
engine's :meth:`~mongo_sansio.testing.engine.collection.Collection.modify_index`), and
``changeStreamPreAndPostImages: {enabled}``.  Other options (cappedSize, expireAfterSeconds of
a clustered collection, timeseries) are accepted and have no effect.  The whole command is
checked before anything changes, so a refused collMod changes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mongo_sansio.testing.engine import CommandError
from mongo_sansio.testing.engine.indexes import parse_index_modification
from mongo_sansio.testing.engine.validation import validation_options
from mongo_sansio.testing.server.context import CommandSpec, Context, Outcome

__all__ = ["COLL_MOD_COMMANDS", "coll_mod", "set_images"]

# Fields of a collMod that are not about the collection (the generic command arguments).
_GENERIC = frozenset({"collMod", "lsid", "$db", "$clusterTime", "$readPreference", "writeConcern", "txnNumber",
                      "comment", "maxTimeMS", "apiVersion", "apiStrict", "apiDeprecationErrors"})
# The modifications mongod counts (prepareUnique may not be combined with another).
_MODIFICATIONS = ("validator", "validationLevel", "validationAction", "changeStreamPreAndPostImages",
                  "expireAfterSeconds", "cappedSize", "cappedMax", "timeseries")


def _invalid_options(message: str) -> CommandError:
    return CommandError(72, "InvalidOptions", message)


def coll_mod(ctx: Context) -> Outcome:
    """collMod: check every option, then apply them."""
    name = ctx.body.get("collMod")
    if not isinstance(name, str) or not name:
        raise CommandError(73, "InvalidNamespace", "collection name has invalid type")
    body = ctx.body
    dry_run = bool(body.get("dryRun", False))
    request = parse_index_modification(body["index"]) if "index" in body else None
    if dry_run:
        if request is None:
            raise _invalid_options("dry run mode requires an valid index modification.")
        if not request.get("unique"):
            raise _invalid_options("dry run mode requires an index modification with unique: true.")
    found = ctx.cluster.collection(ctx.db, name)
    if found is None:
        if request is not None and request.get("unique") and not dry_run:
            raise CommandError(26, "NamespaceNotFound", f"ns does not exist for unique index conversion: {ctx.db}.{name}")
        raise CommandError(26, "NamespaceNotFound", f"ns does not exist: {ctx.db}.{name}")
    ns = f"{ctx.db}.{name}"
    if ns in ctx.cluster.timeseries:
        for field in ("validator", "validationLevel", "validationAction"):
            if field in body:
                raise _invalid_options(f"option not supported on a time-series collection: {field}")
    validation = validation_options(body, "collMod", ctx.db, found.validation)
    if request is not None and request.get("prepareUnique") is not None:
        others = [field for field in _MODIFICATIONS if field in body]
        if others and not dry_run:
            _refuse_prepare_unique_with_others(found.list_indexes(), request)
    # (everything is checked: from here on the changes are made)
    reply: dict[str, Any] = {}
    if request is not None:
        reply.update(found.modify_index(request, dry_run=dry_run))
    if dry_run:
        return {"ok": 1.0}
    found.validation = validation
    set_images(ctx, name, body.get("changeStreamPreAndPostImages"))
    options = {k: v for k, v in body.items() if k not in _GENERIC and k != "dryRun"}
    ctx.cluster.log("c", "collMod", f"{ctx.db}.$cmd", command={"collMod": name, **options}, ui=found.uuid)
    reply["ok"] = 1.0
    return reply


def _refuse_prepare_unique_with_others(indexes: list[dict[str, Any]], request: Mapping[str, Any]) -> None:
    """mongod refuses a prepareUnique change beside any other modification of the collection."""
    for spec in indexes:
        named = request.get("name") == spec["name"] or request.get("keyPattern") == spec["key"]
        changes = bool(spec.get("prepareUnique", False)) != request["prepareUnique"] and not spec.get("unique")
        if named and changes:
            raise _invalid_options("prepareUnique cannot be combined with any other modification.")


def set_images(ctx: Context, name: str, option: Any) -> None:
    """Apply a ``changeStreamPreAndPostImages`` option (create or collMod) to ``db.name``."""
    if option is None:
        return
    if not isinstance(option, Mapping) or not isinstance(option.get("enabled"), bool):
        raise CommandError(40414, "Location40414",
                           "BSON field 'changeStreamPreAndPostImages.enabled' is missing but a required field")
    ns = f"{ctx.db}.{name}"
    if option["enabled"]:
        ctx.cluster.image_namespaces.add(ns)
    else:
        ctx.cluster.image_namespaces.discard(ns)


COLL_MOD_COMMANDS = [CommandSpec("collMod", coll_mod, access="write")]
