"""What ``MongoClient.bulk_write`` learned, merged over its commands into one result or one error.

Inputs: each ``bulkWrite`` reply (``{nErrors, nInserted, nUpserted, nMatched, nModified,
nDeleted, writeConcernError?, errorLabels?, cursor}``) with the position of its batch in the
caller's list of models, and each entry of the reply's results cursor (``{ok: 1, idx, n,
nModified?, upserted?: {_id}}`` or ``{ok: 0, idx, code, errmsg, errInfo?, ...}``, ``idx`` a
position in the batch).  Outputs: a :class:`~mongo_sansio.ops.results.ClientBulkWriteResult`,
or a :class:`~mongo_sansio.errors.ClientBulkWriteException` when a write, a write concern or
the whole bulk write (a top-level error) failed.

The rules (the bulk write specification, "Handling the bulkWrite Server Response"):

* the summary counts are the server's, summed over the commands; the verbose results are built
  from the cursor's ``ok: 1`` entries, by the model's kind, which only the caller's list tells
  (an insert's ``inserted_id`` is the ``_id`` the model carried or was given, reported only
  once the server said the insert succeeded);
* ``anySuccessful`` -- whether an error may carry a partial result -- is set once a reply shows
  that a write succeeded: ``nErrors`` 0, or fewer errors than the batch's models (unordered), or
  an ordered batch's write error at an ``idx`` above 0, or any ``ok: 1`` entry;
* a write error in an ordered bulk write ends it (:meth:`ClientBulkOutcome.add_entry` says so);
  write concern errors never end it but are raised at the end;
* a reply whose fields have the wrong types raises
  :class:`~mongo_sansio.errors.RemoteProtocolError` when it is read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import attrs

from mongo_sansio._numbers import is_int
from mongo_sansio.errors import (
    ClientBulkWriteException,
    MongoError,
    RemoteProtocolError,
    command_succeeded,
)
from mongo_sansio.ops.results import (
    ClientBulkWriteResult,
    DeleteResult,
    InsertOneResult,
    UpdateResult,
    reply_count,
)

__all__ = ["SUMMARY_FIELDS", "ClientBulkOutcome"]

#: the summary counts of a bulkWrite reply, summed over the commands
SUMMARY_FIELDS: Final = ("nInserted", "nUpserted", "nMatched", "nModified", "nDeleted")


def _labels(document: Mapping[str, Any]) -> list[str]:
    found = document.get("errorLabels")
    if not isinstance(found, list | tuple):
        return []
    return [label for label in found if isinstance(label, str)]


@attrs.define
class ClientBulkOutcome:
    """The merged outcome of the commands sent so far (mutable while the flow runs).

    ``kinds[i]`` and ``inserted_ids[i]`` describe the caller's model ``i`` ("insert", "update"
    or "delete"; the ``_id`` of an insert, None for the others)."""

    kinds: Sequence[str]
    inserted_ids: Sequence[Any]
    ordered: bool = True
    verbose: bool = False
    counts: dict[str, int] = attrs.field(factory=lambda: dict.fromkeys(SUMMARY_FIELDS, 0))
    insert_results: dict[int, InsertOneResult] = attrs.field(factory=dict)
    update_results: dict[int, UpdateResult] = attrs.field(factory=dict)
    delete_results: dict[int, DeleteResult] = attrs.field(factory=dict)
    write_errors: list[dict[str, Any]] = attrs.field(factory=list)
    write_concern_errors: list[Mapping[str, Any]] = attrs.field(factory=list)
    error_labels: list[str] = attrs.field(factory=list)
    any_successful: bool = False

    def add_reply(self, reply: Mapping[str, Any], count: int) -> None:
        """Merge one command's summary (``count``: how many models its batch sent)."""
        counts = {field: reply_count(reply, field) for field in SUMMARY_FIELDS}
        errors = reply_count(reply, "nErrors")
        concern = reply.get("writeConcernError")
        if concern is not None and not isinstance(concern, Mapping):
            raise RemoteProtocolError("bulkWrite reply: 'writeConcernError' must be a document")
        for field, value in counts.items():
            self.counts[field] += value
        if errors == 0 or (not self.ordered and errors < count):
            self.any_successful = True
        if concern is not None:
            self.write_concern_errors.append(concern)
            for label in _labels(reply) + _labels(concern):
                if label not in self.error_labels:
                    self.error_labels.append(label)

    def add_entry(self, entry: Any, start: int, count: int) -> bool:
        """Merge one entry of the results cursor of the batch whose first model is the
        caller's ``start`` and which sent ``count`` models.  Returns True when the bulk write
        must stop here: a write error of an ordered bulk write."""
        if not isinstance(entry, Mapping):
            raise RemoteProtocolError(
                f"bulkWrite results: an entry must be a document, got {entry!r}"
            )
        idx = entry.get("idx")
        if not is_int(idx) or not 0 <= idx < count:
            raise RemoteProtocolError(
                f"bulkWrite results: 'idx' must be an index into the {count} ops sent, got {idx!r}"
            )
        index = start + int(idx)
        if not command_succeeded(entry):
            code = entry.get("code")
            if not is_int(code):
                raise RemoteProtocolError(
                    f"bulkWrite results: error entry without a code: {entry!r}"
                )
            self.write_errors.append({**entry, "idx": index})
            if self.ordered and idx > 0:
                self.any_successful = True  # the ops before it in this batch were written
            return self.ordered
        self.any_successful = True
        if self.verbose:
            self._verbose_result(index, entry)
        return False

    def _verbose_result(self, index: int, entry: Mapping[str, Any]) -> None:
        kind = self.kinds[index]
        n = reply_count(entry, "n")
        if kind == "insert":
            self.insert_results[index] = InsertOneResult(self.inserted_ids[index])
        elif kind == "update":
            upserted = entry.get("upserted")
            if upserted is not None and not (isinstance(upserted, Mapping) and "_id" in upserted):
                raise RemoteProtocolError(
                    f"bulkWrite results: 'upserted' must be {{_id}}, got {upserted!r}"
                )
            self.update_results[index] = UpdateResult(
                entry,
                True,
                n,  # the server's n counts an upsert (the spec's matchedCount is n)
                reply_count(entry, "nModified"),
                upserted is not None,
                None if upserted is None else upserted["_id"],
            )
        else:
            self.delete_results[index] = DeleteResult(entry, True, n)

    @property
    def failed(self) -> bool:
        return bool(self.write_errors or self.write_concern_errors)

    def document(self, error: MongoError | None = None) -> dict[str, Any]:
        """The merged result document (``bulk_api_result``, the exception's ``details``)."""
        return {
            **self.counts,
            "insertResults": dict(self.insert_results) if self.verbose else {},
            "updateResults": dict(self.update_results) if self.verbose else {},
            "deleteResults": dict(self.delete_results) if self.verbose else {},
            "writeErrors": sorted(self.write_errors, key=lambda entry: int(entry["idx"])),
            "writeConcernErrors": list(self.write_concern_errors),
            "anySuccessful": self.any_successful,
            "error": error,
        }

    def result(self) -> ClientBulkWriteResult:
        return ClientBulkWriteResult(self.document(), True, self.verbose)

    def exception(self, error: MongoError | None = None) -> ClientBulkWriteException | None:
        """The exception to raise: with ``error`` (a top-level error) always, else when a
        write or a write concern failed; None when everything succeeded."""
        if error is None and not self.failed:
            return None
        return ClientBulkWriteException(
            self.document(error), self.verbose, error_labels=self.error_labels
        )
