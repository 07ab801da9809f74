"""Reading write replies: counts, write errors and write concern errors, over one or many batches.

Inputs: the ``ok: 1`` replies of insert/update/delete commands (``{n, nModified?, upserted?,
writeErrors?, writeConcernError?, errorLabels?}``), each with the position of its batch in the
caller's list.  Outputs: a :class:`WriteSummary` (the merged counts, with every index mapped
back to the caller's list) and the typed error it amounts to:

* a single-document operation (insert_one, update_*, replace_one, delete_*): its write error
  becomes :class:`~mongo_sansio.errors.DuplicateKeyError` (codes 11000, 11001, 12582) or
  :class:`~mongo_sansio.errors.WriteError`, with the write error document as ``details``
  (``index``, ``code``, ``errmsg``, ``keyPattern``, ``keyValue``...); otherwise a
  ``writeConcernError`` becomes :class:`~mongo_sansio.errors.WriteConcernError`;
* a multi-document operation (insert_many): any of them becomes :class:`BulkWriteError`, whose
  ``details`` hold every ``writeErrors`` entry (index in the caller's list), every
  ``writeConcernErrors`` entry and the counts (``nInserted``, ``nUpserted``, ``nMatched``,
  ``nModified``, ``nRemoved``, ``upserted``).

:class:`BulkWriteError` lives here rather than in :mod:`mongo_sansio.errors` because it is the
write flows' own aggregate; it derives from :class:`~mongo_sansio.errors.ServerError`.  A
reply whose fields have the wrong types raises
:class:`~mongo_sansio.errors.RemoteProtocolError`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from mongo_sansio._numbers import whole_number
from mongo_sansio.errors import (
    DUPLICATE_KEY_CODES,
    BulkWriteError,
    DuplicateKeyError,
    RemoteProtocolError,
    ServerError,
    WriteConcernError,
    WriteError,
    write_concern_error_class,
)
from mongo_sansio.ops.results import reply_count

__all__ = [
    "BulkWriteError",
    "WriteSummary",
    "write_error_from_document",
    "write_concern_error_from_document",
    "reply_write_concern_error",
]


def _code(document: Mapping[str, Any], what: str) -> int | None:
    code = document.get("code")
    if code is None:
        return None
    number = whole_number(code)
    if number is None:
        raise RemoteProtocolError(f"write reply: {what}.code must be an integer, got {code!r}")
    return number


def _text(document: Mapping[str, Any], field: str, default: str) -> str:
    value = document.get(field)
    return value if isinstance(value, str) else default


def _labels(*documents: Mapping[str, Any]) -> list[str]:
    labels: list[str] = []
    for document in documents:
        found = document.get("errorLabels")
        if isinstance(found, list | tuple):
            labels += [label for label in found if isinstance(label, str) and label not in labels]
    return labels


def write_error_from_document(document: Mapping[str, Any]) -> ServerError:
    """The typed error for one ``writeErrors`` entry: DuplicateKeyError or WriteError."""
    code = _code(document, "writeErrors[]")
    errmsg = _text(document, "errmsg", "write error")
    kind = DuplicateKeyError if code in DUPLICATE_KEY_CODES else WriteError
    code_name = document.get("codeName")
    return kind(
        errmsg,
        code=code,
        code_name=code_name if isinstance(code_name, str) else None,
        details=document,
    )


def write_concern_error_from_document(
    document: Mapping[str, Any], reply: Mapping[str, Any] | None = None
) -> WriteConcernError:
    """The error for a ``writeConcernError``; its labels are the union of the reply's
    (4.4+ servers put them there) and the document's own (mongos of some versions)."""
    code = _code(document, "writeConcernError")
    errmsg = _text(document, "errmsg", "write concern error")
    labels = _labels(document, reply) if reply is not None else _labels(document)
    code_name = document.get("codeName")
    return write_concern_error_class(document)(
        errmsg,
        code=code,
        code_name=code_name if isinstance(code_name, str) else None,
        error_labels=labels,
        details=document,
    )


def reply_write_concern_error(reply: Mapping[str, Any]) -> WriteConcernError | None:
    """An ``ok: 1`` command reply's ``writeConcernError`` as an error whose ``details`` is the
    whole reply (labels from the reply: a retry or a transaction's end decides on them), or
    None when the reply has none."""
    concern = reply.get("writeConcernError")
    if concern is None or not isinstance(concern, Mapping):  # (None: no ABC check, the usual)
        return None
    code = concern.get("code")
    code_name = concern.get("codeName")
    return WriteConcernError(
        _text(concern, "errmsg", "write concern error"),
        code=code if isinstance(code, int) and not isinstance(code, bool) else None,
        code_name=code_name if isinstance(code_name, str) else None,
        error_labels=_labels(reply),
        details=reply,
    )


def _documents(reply: Mapping[str, Any], field: str) -> list[Mapping[str, Any]]:
    value = reply.get(field)
    if value is None:
        return []
    if (
        not isinstance(value, Sequence)
        or isinstance(value, str | bytes)
        or not all(isinstance(item, Mapping) for item in value)
    ):
        raise RemoteProtocolError(f"write reply: {field!r} must be an array of documents")
    return list(value)


def _shifted(document: Mapping[str, Any], offset: int, field: str) -> dict[str, Any]:
    index = document.get("index")
    if not isinstance(index, int) or isinstance(index, bool) or index < 0:
        raise RemoteProtocolError(f"write reply: {field}[].index must be an integer, got {index!r}")
    return {**document, "index": index + offset}


@attrs.define
class WriteSummary:
    """The merged outcome of a write's batches (mutable while the flow runs).

    ``command`` is ``"insert"``, ``"update"`` or ``"delete"``; ``replies`` are the raw replies in
    order; ``write_errors`` and ``upserted`` carry indexes in the caller's list.
    """

    command: str
    replies: list[Mapping[str, Any]] = attrs.field(factory=list)
    n: int = 0
    n_modified: int = 0
    upserted: list[dict[str, Any]] = attrs.field(factory=list)
    write_errors: list[dict[str, Any]] = attrs.field(factory=list)
    write_concern_errors: list[Mapping[str, Any]] = attrs.field(factory=list)
    error_labels: list[str] = attrs.field(factory=list)
    #: sent in a transaction: acknowledged whatever the collection's write concern says (the
    #: transaction's own applies at commit), so its counts and errors are known
    in_transaction: bool = False

    def add(self, reply: Mapping[str, Any], offset: int = 0) -> None:
        """Merge one batch's reply; ``offset`` is the index of the batch's first document in
        the caller's list."""
        n = reply_count(reply, "n")
        modified = reply_count(reply, "nModified") if self.command == "update" else 0
        get = reply.get
        if (
            get("writeErrors") is None
            and get("upserted") is None
            and get("writeConcernError") is None
            and get("errorLabels") is None
        ):  # the usual reply: counts only
            self.replies.append(reply)
            self.n += n
            self.n_modified += modified
            return
        upserted = [_shifted(d, offset, "upserted") for d in _documents(reply, "upserted")]
        errors = [_shifted(d, offset, "writeErrors") for d in _documents(reply, "writeErrors")]
        concern = reply.get("writeConcernError")
        if concern is not None and not isinstance(concern, Mapping):
            raise RemoteProtocolError("write reply: 'writeConcernError' must be a document")
        # Checked now, so that building the typed errors later cannot fail.
        for error in errors:
            _code(error, "writeErrors[]")
        if concern is not None:
            _code(concern, "writeConcernError")
        self.replies.append(reply)
        self.n += n
        self.n_modified += modified
        self.upserted += upserted
        self.write_errors += errors
        if concern is not None:
            self.write_concern_errors.append(concern)
        for label in _labels(reply):
            if label not in self.error_labels:
                self.error_labels.append(label)

    @property
    def failed(self) -> bool:
        return bool(self.write_errors or self.write_concern_errors)

    @property
    def last_reply(self) -> Mapping[str, Any] | None:
        return self.replies[-1] if self.replies else None

    def single_error(self) -> ServerError | None:
        """The error of a one-document operation: its write error first, else the write
        concern error; None when it succeeded."""
        if self.write_errors:
            return write_error_from_document(self.write_errors[0])
        if self.write_concern_errors:
            return write_concern_error_from_document(
                self.write_concern_errors[0], {"errorLabels": self.error_labels}
            )
        return None

    def details(self) -> dict[str, Any]:
        """The bulk write result document (PyMongo's ``BulkWriteError.details`` shape)."""
        n_upserted = len(self.upserted)
        return {
            "writeErrors": sorted(self.write_errors, key=lambda error: int(error["index"])),
            "writeConcernErrors": list(self.write_concern_errors),
            "nInserted": self.n if self.command == "insert" else 0,
            "nUpserted": n_upserted,
            "nMatched": max(self.n - n_upserted, 0) if self.command == "update" else 0,
            "nModified": self.n_modified,
            "nRemoved": self.n if self.command == "delete" else 0,
            "upserted": list(self.upserted),
        }

    def bulk_error(self) -> BulkWriteError | None:
        """The :class:`BulkWriteError` of a many-document operation; None when it succeeded."""
        if not self.failed:
            return None
        labels = list(self.error_labels)
        for concern in self.write_concern_errors:
            labels += [label for label in _labels(concern) if label not in labels]
        return BulkWriteError(self.details(), error_labels=labels)
