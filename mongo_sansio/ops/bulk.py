"""``bulk_write``: many write models sent as few insert/update/delete commands as possible.

Theory of operation.  The requests are checked and turned into statements at once
(:func:`plan_bulk`), before anything is sent: a request that is not a write model, or a model
whose document, update or replacement is invalid, raises (TypeError / ValueError as PyMongo)
and nothing is written.  The statements are then grouped by command:

* ordered (the default): consecutive requests of the same kind form one group, and groups run
  in the caller's order; the first write error stops everything after it;
* unordered: one group per kind -- inserts, then updates, then deletes -- and every group runs
  whatever errors the others met.

Each group is one :func:`~mongo_sansio.ops.crud.execute_write` (which splits it into batches by
the server's limits).  The groups' outcomes are merged into one result document whose indexes
(``writeErrors[].index``, ``upserted[].index``) are positions in the caller's list; each write
error also carries the statement that failed as ``op``, as PyMongo's do.  Any write error or
write concern error raises :class:`~mongo_sansio.errors.BulkWriteError` with that document as
``details``; otherwise the flow returns a :class:`~mongo_sansio.ops.results.BulkWriteResult`.
An unacknowledged bulk write (``w: 0``) returns ``BulkWriteResult({}, acknowledged=False)``.
Any other error that ends it (a network error, a command error) is raised as it is, with
``partial_result``: the result of what the server acknowledged before it.

Inputs: write models (:mod:`mongo_sansio.ops.models`) and the collection's settings.
Outputs: a ``Flow[BulkWriteResult]``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from mongo_sansio.bson.codec_options import CodecOptions
from mongo_sansio.errors import BulkWriteError, InvalidOperation, MongoError
from mongo_sansio.flow import Flow
from mongo_sansio.ops import crud
from mongo_sansio.ops.crud_commands import ArgumentTypeError, write_command
from mongo_sansio.ops.decoding import reply_values
from mongo_sansio.ops.models import WriteModel
from mongo_sansio.ops.results import BulkWriteResult
from mongo_sansio.ops.write_concern import WriteConcern
from mongo_sansio.ops.write_errors import WriteSummary

__all__ = ["BulkGroup", "BulkOutcome", "plan_bulk", "bulk_write", "BulkOps"]

#: the order in which an unordered bulk write sends its kinds (as PyMongo does)
_KIND_ORDER = ("insert", "update", "delete")


@attrs.define
class BulkGroup:
    """One command's worth of statements: ``indexes[i]`` is the caller's position of
    ``statements[i]``."""

    kind: str
    indexes: list[int] = attrs.field(factory=list)
    statements: list[Mapping[str, Any]] = attrs.field(factory=list)


def plan_bulk(requests: Any, ordered: bool, id_factory: Callable[[], Any]) -> list[BulkGroup]:
    """Check ``requests`` (a non-empty list of write models) and group their statements (see
    the module docstring).  Inserted documents without ``_id`` get one, as in ``insert_one``."""
    if not isinstance(requests, list):
        raise ArgumentTypeError(f"requests must be a list, not {type(requests).__name__}")
    if not isinstance(ordered, bool):
        raise ArgumentTypeError(f"ordered must be True or False, not {type(ordered).__name__}")
    for request in requests:
        if not isinstance(request, WriteModel):
            raise ArgumentTypeError(f"{request!r} is not a valid request")
    if not requests:
        raise InvalidOperation("No operations to execute")
    statements = [(request.kind, request.statement(id_factory)[0]) for request in requests]
    groups: list[BulkGroup] = []
    if ordered:
        for index, (kind, statement) in enumerate(statements):
            if not groups or groups[-1].kind != kind:
                groups.append(BulkGroup(kind))
            groups[-1].indexes.append(index)
            groups[-1].statements.append(statement)
        return groups
    by_kind = {kind: BulkGroup(kind) for kind in _KIND_ORDER}
    for index, (kind, statement) in enumerate(statements):
        by_kind[kind].indexes.append(index)
        by_kind[kind].statements.append(statement)
    return [group for group in by_kind.values() if group.statements]


@attrs.define
class BulkOutcome:
    """The merged outcome of the groups that ran (mutable while the flow runs)."""

    inserted: int = 0
    matched: int = 0
    modified: int = 0
    removed: int = 0
    upserted: list[dict[str, Any]] = attrs.field(factory=list)
    write_errors: list[dict[str, Any]] = attrs.field(factory=list)
    write_concern_errors: list[Mapping[str, Any]] = attrs.field(factory=list)
    error_labels: list[str] = attrs.field(factory=list)

    def add(self, group: BulkGroup, summary: WriteSummary) -> None:
        """Merge one group's summary, its indexes mapped to the caller's list."""
        upserted = [{**u, "index": group.indexes[int(u["index"])]} for u in summary.upserted]
        if group.kind == "insert":
            self.inserted += summary.n
        elif group.kind == "update":
            self.matched += max(summary.n - len(upserted), 0)
            self.modified += summary.n_modified
        else:
            self.removed += summary.n
        self.upserted += upserted
        for error in summary.write_errors:
            position = int(error["index"])
            self.write_errors.append(
                {**error, "index": group.indexes[position], "op": group.statements[position]}
            )
        self.write_concern_errors += summary.write_concern_errors
        labels = list(summary.error_labels)
        for concern in summary.write_concern_errors:
            found = concern.get("errorLabels")
            if isinstance(found, list | tuple):
                labels += [label for label in found if isinstance(label, str)]
        self.error_labels += [label for label in labels if label not in self.error_labels]

    def document(self) -> dict[str, Any]:
        """The bulk write result document (PyMongo's ``bulk_api_result`` and
        ``BulkWriteError.details``)."""
        return {
            "writeErrors": sorted(self.write_errors, key=lambda error: int(error["index"])),
            "writeConcernErrors": list(self.write_concern_errors),
            "nInserted": self.inserted,
            "nUpserted": len(self.upserted),
            "nMatched": self.matched,
            "nModified": self.modified,
            "nRemoved": self.removed,
            "upserted": sorted(self.upserted, key=lambda entry: int(entry["index"])),
        }

    def error(self) -> BulkWriteError | None:
        if not self.write_errors and not self.write_concern_errors:
            return None
        return BulkWriteError(self.document(), error_labels=self.error_labels)


def bulk_write(
    db: str,
    collection: str,
    groups: Sequence[BulkGroup],
    *,
    ordered: bool = True,
    write_concern: WriteConcern | None = None,
    bypass_document_validation: bool | None = None,
    comment: Any = None,
    let: Mapping[str, Any] | None = None,
    codec_options: CodecOptions | None = None,
    raw_data: bool | None = None,
) -> Flow[BulkWriteResult]:
    """Run the planned ``groups`` (:func:`plan_bulk`) in order; see the module docstring.
    ``let`` goes on update and delete commands, ``bypass_document_validation`` on insert and
    update commands, ``comment`` and ``raw_data`` (``rawData``) on all."""
    outcome = BulkOutcome()
    in_transaction = False
    for group in groups:
        command = write_command(
            group.kind,
            collection,
            ordered=ordered,
            write_concern=write_concern,
            bypass_document_validation=None
            if group.kind == "delete"
            else bypass_document_validation,
            comment=comment,
            let=None if group.kind == "insert" else let,
            raw_data=raw_data,
        )
        progress: list[WriteSummary] = []
        try:
            summary = yield from crud.execute_write(
                db,
                command,
                group.statements,
                ordered=ordered,
                codec_options=codec_options,
                progress=progress,
            )
        except MongoError as ended:
            # what the server acknowledged before the error: earlier groups, and this
            # group's batches that got through
            if progress:
                outcome.add(group, progress[0])
            ended.partial_result = BulkWriteResult(outcome.document())
            raise
        outcome.add(group, summary)
        in_transaction = summary.in_transaction
        if ordered and summary.write_errors:
            break
    # a transaction's writes are acknowledged whatever the collection's write concern says
    if write_concern is not None and not write_concern.acknowledged and not in_transaction:
        return BulkWriteResult({}, acknowledged=False)
    error = outcome.error()
    if error is not None:
        raise error
    return BulkWriteResult(reply_values(outcome.document(), codec_options))


class BulkOps:
    """``CollectionOps.bulk_write`` (a mixin: the collection's attributes are declared here)."""

    __slots__ = ()
    database: str
    name: str
    write_concern: WriteConcern
    codec_options: CodecOptions
    id_factory: Callable[[], Any]

    def bulk_write(
        self,
        requests: Sequence[WriteModel],
        ordered: bool = True,
        *,
        bypass_document_validation: bool | None = None,
        comment: Any = None,
        let: Mapping[str, Any] | None = None,
        raw_data: bool | None = None,
    ) -> Flow[BulkWriteResult]:
        """Send ``requests`` (InsertOne, UpdateOne, UpdateMany, ReplaceOne, DeleteOne,
        DeleteMany) in as few commands as their order allows; see :mod:`mongo_sansio.ops.bulk`."""
        groups = plan_bulk(requests, ordered, self.id_factory)
        # checked now, so that a bad value raises before anything is sent
        write_command(
            "insert",
            self.name,
            let=let,
            comment=comment,
            bypass_document_validation=bypass_document_validation,
            raw_data=raw_data,
        )
        return bulk_write(
            self.database,
            self.name,
            groups,
            ordered=ordered,
            write_concern=self.write_concern,
            bypass_document_validation=bypass_document_validation,
            comment=comment,
            let=let,
            codec_options=self.codec_options,
            raw_data=raw_data,
        )
