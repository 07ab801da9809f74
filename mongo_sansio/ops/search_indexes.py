"""Atlas Search index helpers (index-management spec): SearchIndexModel and the commands.

Inputs: PyMongo's arguments (``create_search_index(model)``, ``create_search_indexes(models)``,
``drop_search_index(name)``, ``update_search_index(name, definition)``,
``list_search_indexes(name=None, **aggregate options)``).  Outputs: flows running
``createSearchIndexes``, ``dropSearchIndex``, ``updateSearchIndex`` and the ``$listSearchIndexes``
aggregation on the primary.  As the spec says, these commands carry neither the collection's
write concern nor its read concern.  A server without Atlas Search answers them with an error
(mongod: SearchNotEnabled), raised as the typed ServerError; ``drop_search_index`` of a
collection that does not exist is success, as PyMongo has it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mongo_sansio.cursors.cursor import Cursor
from mongo_sansio.errors import ServerError
from mongo_sansio.flow import Flow
from mongo_sansio.ops import crud
from mongo_sansio.ops.crud_commands import ArgumentTypeError, aggregate_command, check_mapping

__all__ = ["SearchIndexModel", "SearchIndexOps"]


class SearchIndexModel:
    """One search index to create: its ``definition``, and optionally its ``name`` and
    ``type`` ("search", "vectorSearch"); further keyword arguments go into the index
    document as they are.  :attr:`document` is what ``createSearchIndexes`` sends."""

    __slots__ = ("_document",)

    def __init__(
        self,
        definition: Mapping[str, Any],
        name: str | None = None,
        type: str | None = None,
        **kwargs: Any,
    ) -> None:
        document: dict[str, Any] = {}
        if name is not None:
            if not isinstance(name, str):
                raise ArgumentTypeError(f"name must be a string, not {type_name(name)}")
            document["name"] = name
        document["definition"] = check_mapping(definition, "definition")
        if type is not None:
            if not isinstance(type, str):
                raise ArgumentTypeError(f"type must be a string, not {type_name(type)}")
            document["type"] = type
        document.update(kwargs)
        self._document = document

    @property
    def document(self) -> dict[str, Any]:
        return self._document

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SearchIndexModel):
            return NotImplemented
        return self._document == other._document

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        fields = ", ".join(f"{key}={value!r}" for key, value in self._document.items())
        return f"SearchIndexModel({fields})"


def type_name(value: object) -> str:
    return type(value).__name__


def _index_document(model: Any) -> Mapping[str, Any]:
    if isinstance(model, SearchIndexModel):
        return model.document
    if isinstance(model, Mapping):  # PyMongo takes a plain document too
        return model
    raise ArgumentTypeError(
        f"a search index must be a SearchIndexModel or a document, not {type_name(model)}"
    )


def _with_comment(body: dict[str, Any], comment: Any, kwargs: Mapping[str, Any]) -> dict[str, Any]:
    body.update(kwargs)
    if comment is not None:
        body["comment"] = comment
    return body


def _created_names(db: str, body: Mapping[str, Any]) -> Flow[list[str]]:
    reply = yield from crud.write_command(db, body)
    created = reply.get("indexesCreated") or []
    return [str(index.get("name")) for index in created if isinstance(index, Mapping)]


def _dropped(db: str, body: Mapping[str, Any]) -> Flow[None]:
    try:
        yield from crud.write_command(db, body)
    except ServerError as error:
        if error.code != crud.NAMESPACE_NOT_FOUND:
            raise


def _run(db: str, body: Mapping[str, Any]) -> Flow[None]:
    yield from crud.write_command(db, body)


class SearchIndexOps:
    """The search index methods of ``CollectionOps`` (a mixin: the collection's attributes
    are declared here)."""

    __slots__ = ()
    database: str
    name: str

    def create_search_indexes(
        self, models: Sequence[Any], *, comment: Any = None, **kwargs: Any
    ) -> Flow[list[str]]:
        """Create search indexes (SearchIndexModel values or documents) in one command; the
        names the server gives them."""
        if isinstance(models, Mapping | str | bytes) or not isinstance(models, Sequence):
            raise ArgumentTypeError(f"models must be a list, not {type_name(models)}")
        body = {"createSearchIndexes": self.name, "indexes": [_index_document(m) for m in models]}
        return _created_names(self.database, _with_comment(body, comment, kwargs))

    def create_search_index(self, model: Any, *, comment: Any = None, **kwargs: Any) -> Flow[str]:
        """Create one search index; its name."""
        names = yield from self.create_search_indexes([model], comment=comment, **kwargs)
        return names[0] if names else str(_index_document(model).get("name", "default"))

    def drop_search_index(self, name: str, *, comment: Any = None, **kwargs: Any) -> Flow[None]:
        if not isinstance(name, str):
            raise ArgumentTypeError(f"name must be a string, not {type_name(name)}")
        body = {"dropSearchIndex": self.name, "name": name}
        return _dropped(self.database, _with_comment(body, comment, kwargs))

    def update_search_index(
        self, name: str, definition: Mapping[str, Any], *, comment: Any = None, **kwargs: Any
    ) -> Flow[None]:
        if not isinstance(name, str):
            raise ArgumentTypeError(f"name must be a string, not {type_name(name)}")
        body = {
            "updateSearchIndex": self.name,
            "name": name,
            "definition": check_mapping(definition, "definition"),
        }
        return _run(self.database, _with_comment(body, comment, kwargs))

    def list_search_indexes(
        self,
        name: str | None = None,
        *,
        batch_size: int | None = None,
        comment: Any = None,
        max_time_ms: int | None = None,
    ) -> Flow[Cursor]:
        """The ``$listSearchIndexes`` aggregation (of the index ``name``, or all), on the
        primary and without the collection's read concern."""
        if name is not None and not isinstance(name, str):
            raise ArgumentTypeError(f"name must be a string or None, not {type_name(name)}")
        stage = {"$listSearchIndexes": {} if name is None else {"name": name}}
        body = aggregate_command(
            self.name, [stage], batch_size=batch_size, comment=comment, max_time_ms=max_time_ms
        )
        return crud.read_cursor(self.database, body, batch_size=batch_size or None, comment=comment)
