"""An aggregate's final ``$out`` or ``$merge`` run through mongos on a sharded collection.

Inputs: the results of the rest of the pipeline (merged by the router) and the writing stage.
Outputs: the results written where mongos writes them: ``$out`` on the target database's
primary shard (mongod refuses a sharded ``$out`` target: 28769), ``$merge`` on the shard
owning each result when the target is sharded, else on the target database's primary shard.
Each shard writes with its own ``$out``/``$merge`` over the results handed to it as
``$documents``, so the stages' own rules (replacing the target, ``on``, ``whenMatched``,
``whenNotMatched``, their errors) stay the shards'.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mongo_sansio.testing.engine import CommandError
from mongo_sansio.testing.server.context import Context

if TYPE_CHECKING:
    from mongo_sansio.testing.sharded.router import Router

__all__ = ["WRITING_STAGES", "write_results"]

WRITING_STAGES = ("$out", "$merge")
# The aggregate's fields a shard's writing stage also reads.
_PASSED_ON = ("bypassDocumentValidation", "let", "writeConcern", "comment", "lsid", "txnNumber", "autocommit",
              "startTransaction")


def write_results(router: Router, ctx: Context, body: Mapping[str, Any], stage: Mapping[str, Any],
                  documents: list[Any]) -> None:
    name, spec = next(iter(stage.items()))
    database, collection = _target(ctx.db, name, spec)
    catalog = router.cluster.catalog
    target = f"{database}.{collection}"
    if name == "$out" and catalog.sharded(target) is not None:
        raise CommandError(28769, "Location28769", f"{target} cannot be sharded")
    groups: dict[str, list[Any]] = {}
    if name == "$merge" and catalog.sharded(target) is not None:
        for document in documents:
            groups.setdefault(catalog.shard_for_document(target, document), []).append(document)
    else:
        groups[catalog.primary_shard(database)] = documents
    for shard, group in groups.items():
        command: dict[str, Any] = {"aggregate": 1, "pipeline": [{"$documents": group}, dict(stage)], "cursor": {}}
        command.update({field: body[field] for field in _PASSED_ON if field in body})
        reply = router.send(ctx, shard, command)
        if reply.get("ok") != 1.0:
            code = reply.get("code")
            raise CommandError(int(code) if isinstance(code, int) else 8, str(reply.get("codeName", "UnknownError")),
                               str(reply.get("errmsg", "")))


def _target(db: str, name: str, spec: Any) -> tuple[str, str]:
    """The (database, collection) a writing stage names (its own checks are the shard's)."""
    if name == "$merge" and isinstance(spec, Mapping):
        spec = spec.get("into")
    if isinstance(spec, str):
        return db, spec
    if isinstance(spec, Mapping):
        database = spec.get("db", db)
        return (database if isinstance(database, str) and database else db), str(spec.get("coll", ""))
    return db, ""
