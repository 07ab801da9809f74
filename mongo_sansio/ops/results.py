"""The results of write operations, with PyMongo's attribute names.

Inputs: what the write flows learned (the ids they assigned, the server's reply documents,
whether the write was acknowledged).  Outputs: frozen result values.  The counts of an
unacknowledged write (``w: 0``) are unknown: reading them raises
:class:`~mongo_sansio.errors.InvalidOperation`, as PyMongo does; the ids of inserted documents
are known locally and stay readable.  A reply whose counts are not integers raises
:class:`~mongo_sansio.errors.RemoteProtocolError` when the result is built, never later.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import attrs

from mongo_sansio._numbers import whole_number
from mongo_sansio.errors import InvalidOperation, RemoteProtocolError

__all__ = [
    "InsertOneResult",
    "InsertManyResult",
    "UpdateResult",
    "DeleteResult",
    "BulkWriteResult",
    "ClientBulkWriteResult",
    "reply_count",
]


def reply_count(reply: Mapping[str, Any], field: str, default: int = 0) -> int:
    """The integer ``reply[field]`` (``default`` when absent); a non-integer is a protocol error."""
    value = reply.get(field, default)
    number = whole_number(value)
    if number is None or number < 0:
        raise RemoteProtocolError(
            f"write reply: {field!r} must be a non-negative integer, got {value!r}"
        )
    return number


def _unacknowledged(what: str) -> InvalidOperation:
    return InvalidOperation(
        f"{what} is unknown for an unacknowledged write (w=0); use an acknowledged write "
        "concern to learn it"
    )


@attrs.frozen
class InsertOneResult:
    """``inserted_id``: the document's ``_id`` (the one the caller gave, or the one added)."""

    inserted_id: Any
    acknowledged: bool = True


@attrs.frozen
class InsertManyResult:
    """``inserted_ids``: the documents' ``_id`` values, in the caller's order."""

    inserted_ids: list[Any]
    acknowledged: bool = True


def _upserted_id(reply: Mapping[str, Any]) -> tuple[bool, Any]:
    upserted = reply.get("upserted")
    if upserted is None:
        return False, None
    if (
        not isinstance(upserted, Sequence)
        or isinstance(upserted, str | bytes)
        or not upserted
        or not isinstance(upserted[0], Mapping)
        or "_id" not in upserted[0]
    ):
        raise RemoteProtocolError(
            f"write reply: 'upserted' must be [{{index, _id}}], got {upserted!r}"
        )
    return True, upserted[0]["_id"]


@attrs.frozen
class UpdateResult:
    """The outcome of update_one / update_many / replace_one.

    ``raw_result`` is the server's reply as PyMongo gives it (with ``updatedExisting``, and
    ``upserted`` the upserted ``_id``; None for an unacknowledged write).  Build one with
    :meth:`from_reply`.
    """

    raw_result: Mapping[str, Any] | None
    acknowledged: bool = True
    _matched_count: int = 0
    _modified_count: int = 0
    _did_upsert: bool = False
    _upserted_id: Any = None

    @classmethod
    def from_reply(cls, reply: Mapping[str, Any] | None, acknowledged: bool = True) -> UpdateResult:
        """Read ``{n, nModified, upserted: [{index, _id}]}``; ``n`` counts an upsert, which
        matched nothing, so it is taken out of ``matched_count``."""
        if not acknowledged or reply is None:
            return cls(None, False)
        n = reply_count(reply, "n")
        modified = reply_count(reply, "nModified")
        did_upsert, upserted_id = _upserted_id(reply)
        raw = _as_pymongo_gives_it(reply, did_upsert, upserted_id)
        return cls(raw, True, max(n - int(did_upsert), 0), modified, did_upsert, upserted_id)

    @property
    def matched_count(self) -> int:
        if not self.acknowledged:
            raise _unacknowledged("matched_count")
        return self._matched_count

    @property
    def modified_count(self) -> int:
        if not self.acknowledged:
            raise _unacknowledged("modified_count")
        return self._modified_count

    @property
    def upserted_id(self) -> Any:
        """The ``_id`` of the document an upsert inserted, or None when none was."""
        if not self.acknowledged:
            raise _unacknowledged("upserted_id")
        return self._upserted_id

    @property
    def did_upsert(self) -> bool:
        if not self.acknowledged:
            raise _unacknowledged("did_upsert")
        return self._did_upsert


def _as_pymongo_gives_it(
    reply: Mapping[str, Any], did_upsert: bool, upserted_id: Any
) -> dict[str, Any]:
    """An update's ``raw_result`` as PyMongo builds it from the reply (a copy: the reply as
    received is what monitoring published): ``updatedExisting`` added (a document matched and
    none was upserted), ``upserted`` the upserted ``_id`` itself rather than ``[{index, _id}]``."""
    raw = dict(reply)
    if raw.get("n") and "upserted" not in raw:
        raw["updatedExisting"] = True
    else:
        raw["updatedExisting"] = False
        if did_upsert:
            raw["upserted"] = upserted_id
    return raw


@attrs.frozen
class DeleteResult:
    """The outcome of delete_one / delete_many; ``raw_result`` is the server's reply (None for
    an unacknowledged write).  Build one with :meth:`from_reply`."""

    raw_result: Mapping[str, Any] | None
    acknowledged: bool = True
    _deleted_count: int = 0

    @classmethod
    def from_reply(cls, reply: Mapping[str, Any] | None, acknowledged: bool = True) -> DeleteResult:
        if not acknowledged or reply is None:
            return cls(None, False)
        return cls(reply, True, reply_count(reply, "n"))

    @property
    def deleted_count(self) -> int:
        if not self.acknowledged:
            raise _unacknowledged("deleted_count")
        return self._deleted_count


class _Counts:
    """The counts of a bulk write's merged result document (``bulk_api_result``), which raise
    InvalidOperation for an unacknowledged write; ``_DELETED`` names the deleted count's field
    (``nRemoved`` for a collection's bulk write, ``nDeleted`` for the client's)."""

    __slots__ = ()
    _DELETED: ClassVar[str]
    bulk_api_result: Mapping[str, Any]
    acknowledged: bool

    def _count(self, field: str, what: str) -> int:
        if not self.acknowledged:
            raise _unacknowledged(what)
        return reply_count(self.bulk_api_result, field)

    @property
    def inserted_count(self) -> int:
        return self._count("nInserted", "inserted_count")

    @property
    def matched_count(self) -> int:
        return self._count("nMatched", "matched_count")

    @property
    def modified_count(self) -> int:
        return self._count("nModified", "modified_count")

    @property
    def deleted_count(self) -> int:
        return self._count(self._DELETED, "deleted_count")

    @property
    def upserted_count(self) -> int:
        return self._count("nUpserted", "upserted_count")


@attrs.frozen
class BulkWriteResult(_Counts):
    """The outcome of ``bulk_write``: ``bulk_api_result`` is the merged result document
    (``nInserted``, ``nUpserted``, ``nMatched``, ``nModified``, ``nRemoved``, ``upserted``,
    ``writeErrors``, ``writeConcernErrors``), ``{}`` for an unacknowledged write.  Indexes are
    positions in the caller's list of requests."""

    _DELETED: ClassVar[str] = "nRemoved"
    bulk_api_result: Mapping[str, Any]
    acknowledged: bool = True

    @property
    def upserted_ids(self) -> dict[int, Any]:
        """``{index of the request: _id of the document it upserted}``."""
        if not self.acknowledged:
            raise _unacknowledged("upserted_ids")
        upserted = self.bulk_api_result.get("upserted") or []
        return {int(entry["index"]): entry["_id"] for entry in upserted}


def _not_verbose(what: str) -> InvalidOperation:
    return InvalidOperation(
        f"{what} is only known when MongoClient.bulk_write ran with verbose_results=True "
        "(check has_verbose_results)"
    )


@attrs.frozen
class ClientBulkWriteResult(_Counts):
    """The outcome of ``MongoClient.bulk_write`` (the bulk write specification's
    ``BulkWriteResult``, PyMongo's ``ClientBulkWriteResult``).

    ``bulk_api_result`` is the merged result document: the server's summary counts
    (``nInserted``, ``nUpserted``, ``nMatched``, ``nModified``, ``nDeleted``) and, with verbose
    results, ``insertResults`` / ``updateResults`` / ``deleteResults``: each successful
    model's :class:`InsertOneResult` / :class:`UpdateResult` / :class:`DeleteResult` by its
    index in the caller's list (an update's ``matched_count`` is the server's ``n``, which
    counts an upsert).  Every count and map raises
    :class:`~mongo_sansio.errors.InvalidOperation` when ``acknowledged`` is False (``w: 0``),
    and the three maps also when ``has_verbose_results`` is False, as in PyMongo.
    """

    _DELETED: ClassVar[str] = "nDeleted"
    bulk_api_result: Mapping[str, Any]
    acknowledged: bool = True
    has_verbose_results: bool = False

    def _verbose(self, field: str, what: str) -> Mapping[int, Any]:
        if not self.acknowledged:
            raise _unacknowledged(what)
        if not self.has_verbose_results:
            raise _not_verbose(what)
        found = self.bulk_api_result.get(field)
        return found if isinstance(found, Mapping) else {}

    @property
    def insert_results(self) -> Mapping[int, InsertOneResult]:
        """``{index of the model: InsertOneResult}`` of the inserts that succeeded."""
        return self._verbose("insertResults", "insert_results")

    @property
    def update_results(self) -> Mapping[int, UpdateResult]:
        """``{index of the model: UpdateResult}`` of the updates and replaces that succeeded."""
        return self._verbose("updateResults", "update_results")

    @property
    def delete_results(self) -> Mapping[int, DeleteResult]:
        """``{index of the model: DeleteResult}`` of the deletes that succeeded."""
        return self._verbose("deleteResults", "delete_results")
