"""explain: the plan mongod would report for find, aggregate, count, distinct, update, delete
and findAndModify.

Inputs: ``{explain: {<command>}, verbosity}`` (queryPlanner, executionStats or
allPlansExecution), or ``aggregate`` with ``explain: true``.  Outputs: mongod's explain shape
(``explainVersion``, ``queryPlanner`` with ``namespace``, ``parsedQuery`` and a
``winningPlan``, ``command``, ``serverInfo``, ``serverParameters``, and with executionStats the
counts of a real run).  Nothing is written: a write command is explained by the documents its
filter matches.

The simulator scans instead of using indexes, so every plan is a COLLSCAN, except an
equality on ``_id`` alone (IDHACK), which mongod answers from the _id index too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mongo_sansio.testing.engine import Collection, CommandError, run_pipeline
from mongo_sansio.testing.engine.collation import parse_collation
from mongo_sansio.testing.server.commands_admin import VERSIONS
from mongo_sansio.testing.server.context import CommandSpec, Context, Outcome

__all__ = ["EXPLAIN_COMMANDS", "explain_reply"]

VERBOSITIES = ("queryPlanner", "executionStats", "allPlansExecution")
# The command explained -> (the field naming its filter, how its matches are counted).
EXPLAINABLE = {
    "find": "filter", "count": "query", "distinct": "query", "aggregate": None,
    "update": None, "delete": None, "findAndModify": "query", "findandmodify": "query",
}


def _filter_of(name: str, inner: Mapping[str, Any]) -> Any:
    if name in ("update", "delete"):
        statements = inner.get("updates" if name == "update" else "deletes")
        first = statements[0] if isinstance(statements, list) and statements else {}
        return first.get("q", {}) if isinstance(first, Mapping) else {}
    field = EXPLAINABLE.get(name)
    if name == "aggregate":
        pipeline = inner.get("pipeline")
        first = pipeline[0] if isinstance(pipeline, list) and pipeline else None
        return first.get("$match", {}) if isinstance(first, Mapping) else {}
    value = inner.get(field) if field else None
    return value if isinstance(value, Mapping) else {}


def _plan(filter_: Mapping[str, Any]) -> dict[str, Any]:
    if list(filter_) == ["_id"] and not isinstance(filter_["_id"], Mapping | list):
        return {"stage": "IDHACK"}
    plan: dict[str, Any] = {"stage": "COLLSCAN"}
    if filter_:
        plan["filter"] = dict(filter_)
    plan["direction"] = "forward"
    return plan


def _returned(ctx: Context, name: str, inner: Mapping[str, Any], collection: Collection | None,
              filter_: Mapping[str, Any]) -> int:
    """How many documents the explained command returns (or would write)."""
    if collection is None:
        return 0
    # the explained command's collation, else the collection's default
    collation = parse_collation(inner["collation"], f"{name}.collation") if "collation" in inner else collection.collation
    if name == "aggregate":
        pipeline = inner.get("pipeline")
        steps = [s for s in pipeline if not (isinstance(s, Mapping) and ("$out" in s or "$merge" in s))] \
            if isinstance(pipeline, list) else []
        return len(run_pipeline(list(collection), steps, now=ctx.cluster.write_datetime(), collation=collation))
    if name == "distinct":
        key = inner.get("key")
        return len(collection.distinct(key, filter_, collation=collation)) if isinstance(key, str) else 0
    limit = inner.get("limit") if name == "find" else None
    found = collection.find(filter_, None, limit=int(limit) if isinstance(limit, int) and limit > 0 else 0,
                            collation=collation)
    return len(found)


def explain_reply(ctx: Context, inner: Mapping[str, Any], verbosity: Any) -> dict[str, Any]:
    if not inner:
        raise CommandError(2, "BadValue", "explain command requires a nested object")
    name = next(iter(inner))
    if name not in EXPLAINABLE:
        raise CommandError(59, "CommandNotFound", f"Explain failed due to unknown command: {name}")
    if verbosity not in VERBOSITIES:
        raise CommandError(2, "BadValue", f"verbosity string must be one of {{'queryPlanner', 'executionStats', "
                           f"'allPlansExecution'}}, got {verbosity}")
    target = inner.get(name)
    if not isinstance(target, str) or not target:
        raise CommandError(73, "InvalidNamespace", f"Invalid collection name for explain of {name}")
    filter_ = _filter_of(name, inner)
    collection = ctx.collection(ctx.db, target)
    plan = _plan(filter_)
    host, _, port = ctx.member.address.rpartition(":")
    version, _array = VERSIONS[ctx.cluster.max_wire_version]
    reply: dict[str, Any] = {
        "explainVersion": "1",
        "queryPlanner": {
            "namespace": f"{ctx.db}.{target}", "indexFilterSet": False, "parsedQuery": dict(filter_),
            "maxIndexedOrSolutionsReached": False, "maxIndexedAndSolutionsReached": False,
            "maxScansToExplodeReached": False, "winningPlan": plan, "rejectedPlans": [],
        },
    }
    if verbosity != "queryPlanner":
        returned = _returned(ctx, name, inner, collection, filter_)
        examined = len(collection) if collection is not None and plan["stage"] == "COLLSCAN" else min(returned, 1)
        reply["executionStats"] = {
            "executionSuccess": True, "nReturned": returned, "executionTimeMillis": 0,
            "totalKeysExamined": 0 if plan["stage"] == "COLLSCAN" else examined, "totalDocsExamined": examined,
            "executionStages": {**plan, "nReturned": returned, "executionTimeMillisEstimate": 0,
                                "docsExamined": examined},
        }
        if verbosity == "allPlansExecution":
            reply["executionStats"]["allPlansExecution"] = []
    reply["command"] = {**dict(inner), "$db": ctx.db}
    reply["serverInfo"] = {"host": host, "port": int(port) if port.isdigit() else 0, "version": version,
                           "gitVersion": "0" * 40}
    reply["serverParameters"] = {"internalQueryFacetBufferSizeBytes": 104857600,
                                 "internalQueryMaxBlockingSortMemoryUsageBytes": 104857600,
                                 "internalDocumentSourceGroupMaxMemoryBytes": 104857600}
    reply["ok"] = 1.0
    return reply


def explain(ctx: Context) -> Outcome:
    inner = ctx.body.get("explain")
    if not isinstance(inner, Mapping):
        raise CommandError(14, "TypeMismatch", "BSON field 'explain.explain' is the wrong type, expected type 'object'")
    return explain_reply(ctx, inner, ctx.body.get("verbosity", "allPlansExecution"))


EXPLAIN_COMMANDS = [CommandSpec("explain", explain, access="read")]
