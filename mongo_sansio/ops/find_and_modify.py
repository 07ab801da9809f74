"""``find_one_and_update``, ``find_one_and_replace`` and ``find_one_and_delete``: the
findAndModify command.

The command (crud.md, "Find And Modify"): ``{findAndModify: <collection>, query: <filter>,
new: <return the document after the change>, update | remove: true, fields: <projection>,
sort, upsert, arrayFilters, hint, collation, let, comment, writeConcern}``; further keyword
arguments are command fields given in the server's spelling (``maxTimeMS=...``,
``bypassDocumentValidation=True``), as PyMongo passes them on.  Arguments are checked before
any flow runs (TypeError / ValueError as PyMongo).  The flow runs the command on a writable
server and returns the reply's ``value`` (the document before or after the change, None when
nothing matched), decoded with the collection's codec options; a ``writeConcernError`` in the
reply raises :class:`~mongo_sansio.errors.WriteConcernError`.

Inputs: the caller's arguments and the collection's settings.  Outputs: ``Flow[document |
None]``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from mongo_sansio.bson.codec_options import DEFAULT_CODEC_OPTIONS, CodecOptions
from mongo_sansio.errors import ConfigurationError
from mongo_sansio.flow import Flow
from mongo_sansio.ops import crud
from mongo_sansio.ops.crud_commands import (
    ArgumentTypeError,
    check_mapping,
    check_replacement,
    check_update,
    hint_value,
    projection_document,
    sort_document,
)
from mongo_sansio.ops.decoding import apply_codec_options
from mongo_sansio.ops.retryable import operation_context
from mongo_sansio.ops.write_concern import WriteConcern
from mongo_sansio.ops.write_errors import write_concern_error_from_document

__all__ = ["ReturnDocument", "find_and_modify_command", "find_and_modify", "FindAndModifyOps"]


class ReturnDocument:
    """Which document ``find_one_and_update``/``find_one_and_replace`` return: the one
    ``BEFORE`` the change (the default) or the one ``AFTER`` it (PyMongo's values: False and
    True)."""

    BEFORE: Final = False
    AFTER: Final = True


def find_and_modify_command(
    collection: str,
    filter: Any,
    *,
    update: Any = None,
    replacement: Any = None,
    remove: bool = False,
    projection: Any = None,
    sort: Any = None,
    upsert: bool | None = None,
    return_document: bool = ReturnDocument.BEFORE,
    array_filters: Any = None,
    hint: Any = None,
    collation: Any = None,
    let: Any = None,
    comment: Any = None,
    write_concern: WriteConcern | None = None,
    fields: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The findAndModify body; exactly one of ``update``, ``replacement``, ``remove``."""
    check_mapping(filter, "filter")
    if not isinstance(return_document, bool):
        raise ArgumentTypeError(
            "return_document must be ReturnDocument.BEFORE or ReturnDocument.AFTER, "
            f"not {type(return_document).__name__}"
        )
    if upsert is not None and not isinstance(upsert, bool):
        raise ArgumentTypeError(f"upsert must be True or False, was: upsert={upsert!r}")
    body: dict[str, Any] = {"findAndModify": collection, "query": filter}
    if remove:
        body["remove"] = True
    else:
        body["new"] = return_document
        body["update"] = check_replacement(replacement) if update is None else check_update(update)
    if let is not None:
        body["let"] = check_mapping(let, "let")
    if fields:
        body.update(fields)
    projection = projection_document(projection)
    if projection is not None:
        body["fields"] = projection
    if sort is not None:
        body["sort"] = sort_document(sort)
    if upsert is not None:
        body["upsert"] = upsert
    acknowledged = write_concern is None or write_concern.acknowledged
    if array_filters is not None:
        if not isinstance(array_filters, list | tuple):
            raise ArgumentTypeError("array_filters must be a list of documents")
        if not acknowledged:
            raise ConfigurationError("arrayFilters is unsupported for unacknowledged writes.")
        body["arrayFilters"] = [
            check_mapping(f, f"array_filters[{i}]") for i, f in enumerate(array_filters)
        ]
    if hint is not None:
        body["hint"] = hint_value(hint)
    if collation is not None:
        body["collation"] = check_mapping(collation, "collation")
    if comment is not None:
        body["comment"] = comment
    if write_concern is not None and not write_concern.is_server_default:
        body.setdefault("writeConcern", write_concern.to_document())
    return body


def find_and_modify(
    db: str, body: Mapping[str, Any], *, codec_options: CodecOptions = DEFAULT_CODEC_OPTIONS
) -> Flow[Any]:
    """Run ``body`` on a writable server (a retryable write); the reply's ``value`` (None
    when absent, and for an unacknowledged write, ``w: 0``, whose outcome is not known)."""
    context = yield from operation_context()
    reply = yield from crud.retryable_write_command(db, body)
    concern_document = body.get("writeConcern")
    unacknowledged = isinstance(concern_document, Mapping) and concern_document.get("w") == 0
    if unacknowledged and not context.in_transaction:  # a transaction's writes are acknowledged
        return None
    concern = reply.get("writeConcernError")
    if isinstance(concern, Mapping):
        raise write_concern_error_from_document(concern, reply)
    value = reply.get("value")
    if value is None:
        return None
    return apply_codec_options(value, codec_options)


class FindAndModifyOps:
    """The ``find_one_and_*`` methods of ``CollectionOps`` (a mixin: the collection's
    attributes are declared here)."""

    __slots__ = ()
    database: str
    name: str
    write_concern: WriteConcern
    codec_options: CodecOptions

    def _find_and_modify(self, filter: Any, **arguments: Any) -> Flow[Any]:
        fields = dict(arguments.pop("fields"))
        collation = fields.pop("collation", None)
        if "bypass_document_validation" in fields:  # our spelling of the command field
            bypass = fields.pop("bypass_document_validation")
            if bypass is not None:
                fields["bypassDocumentValidation"] = bypass
        body = find_and_modify_command(
            self.name,
            filter,
            write_concern=self.write_concern,
            collation=collation,
            fields=fields,
            **arguments,
        )
        return find_and_modify(self.database, body, codec_options=self.codec_options)

    def find_one_and_delete(
        self,
        filter: Mapping[str, Any],
        projection: Any = None,
        sort: Any = None,
        hint: Any = None,
        *,
        let: Mapping[str, Any] | None = None,
        comment: Any = None,
        **kwargs: Any,
    ) -> Flow[Any]:
        """Delete the first document matching ``filter`` (in ``sort`` order) and return it."""
        return self._find_and_modify(
            filter,
            remove=True,
            projection=projection,
            sort=sort,
            hint=hint,
            let=let,
            comment=comment,
            fields=kwargs,
        )

    def find_one_and_replace(
        self,
        filter: Mapping[str, Any],
        replacement: Mapping[str, Any],
        projection: Any = None,
        sort: Any = None,
        upsert: bool = False,
        return_document: bool = ReturnDocument.BEFORE,
        hint: Any = None,
        *,
        let: Mapping[str, Any] | None = None,
        comment: Any = None,
        **kwargs: Any,
    ) -> Flow[Any]:
        """Replace the first document matching ``filter``; return it as it was before (or
        after, with ``return_document=ReturnDocument.AFTER``)."""
        return self._find_and_modify(
            filter,
            replacement=replacement,
            projection=projection,
            sort=sort,
            upsert=upsert,
            return_document=return_document,
            hint=hint,
            let=let,
            comment=comment,
            fields=kwargs,
        )

    def find_one_and_update(
        self,
        filter: Mapping[str, Any],
        update: Mapping[str, Any] | list[Mapping[str, Any]],
        projection: Any = None,
        sort: Any = None,
        upsert: bool = False,
        return_document: bool = ReturnDocument.BEFORE,
        array_filters: list[Mapping[str, Any]] | None = None,
        hint: Any = None,
        *,
        let: Mapping[str, Any] | None = None,
        comment: Any = None,
        **kwargs: Any,
    ) -> Flow[Any]:
        """Update the first document matching ``filter`` (operators or a pipeline); return it
        as it was before (or after, with ``return_document=ReturnDocument.AFTER``)."""
        return self._find_and_modify(
            filter,
            update=update,
            projection=projection,
            sort=sort,
            upsert=upsert,
            return_document=return_document,
            array_filters=array_filters,
            hint=hint,
            let=let,
            comment=comment,
            fields=kwargs,
        )
