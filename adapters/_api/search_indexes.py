"""A collection's Atlas Search index methods, written once for every flavour (PyMongo's names
and arguments): ``create_search_index``, ``create_search_indexes``, ``drop_search_index``,
``update_search_index`` and ``list_search_indexes``.  The commands are built by
:mod:`mongo_sansio.ops.search_indexes`; a server without Atlas Search refuses them with a
typed ServerError, as mongod does."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from mongo_sansio.flow import Flow
from mongo_sansio.ops.collection import CollectionOps

from .program import Program, Run, operation

__all__ = ["SearchIndexMethods"]

CommandCursorT = TypeVar("CommandCursorT")

# the aggregate options list_search_indexes takes, in PyMongo's and the server's spellings
_AGGREGATE_OPTIONS = {
    "batch_size": "batch_size",
    "batchSize": "batch_size",
    "max_time_ms": "max_time_ms",
    "maxTimeMS": "max_time_ms",
    "comment": "comment",
}


class SearchIndexMethods(Generic[CommandCursorT]):
    """Mixed into the collection classes (which define what is declared here)."""

    _ops: CollectionOps
    _command_cursor_class: Callable[..., CommandCursorT]

    if TYPE_CHECKING:

        def _op(self, flow: Flow[Any], session: Any = None) -> Run: ...

    @operation
    def create_search_index(
        self, /, model: Any, session: Any = None, comment: Any = None, **kwargs: Any
    ) -> Program[str]:
        """Create one search index (a SearchIndexModel or a document); its name."""
        flow = self._ops.create_search_index(model, comment=comment, **kwargs)
        name: str = yield self._op(flow, session)
        return name

    @operation
    def create_search_indexes(
        self, /, models: Sequence[Any], session: Any = None, comment: Any = None, **kwargs: Any
    ) -> Program[list[str]]:
        """Create search indexes in one command; their names."""
        flow = self._ops.create_search_indexes(models, comment=comment, **kwargs)
        names: list[str] = yield self._op(flow, session)
        return names

    @operation
    def drop_search_index(
        self, /, name: str, session: Any = None, comment: Any = None, **kwargs: Any
    ) -> Program[None]:
        yield self._op(self._ops.drop_search_index(name, comment=comment, **kwargs), session)

    @operation
    def update_search_index(
        self,
        /,
        name: str,
        definition: Mapping[str, Any],
        session: Any = None,
        comment: Any = None,
        **kwargs: Any,
    ) -> Program[None]:
        flow = self._ops.update_search_index(name, definition, comment=comment, **kwargs)
        yield self._op(flow, session)

    @operation
    def list_search_indexes(
        self, /, name: str | None = None, session: Any = None, **kwargs: Any
    ) -> Program[CommandCursorT]:
        """A cursor over the search indexes (the one named ``name``, or all); ``kwargs`` are
        aggregate options (``batchSize``, ``maxTimeMS``, ``comment``)."""
        options: dict[str, Any] = {}
        for key, value in kwargs.items():
            spelled = _AGGREGATE_OPTIONS.get(key)
            if spelled is None:
                raise TypeError(f"list_search_indexes() got an unexpected option {key!r}")
            options[spelled] = value
        opened = yield self._op(self._ops.list_search_indexes(name, **options), session)
        return self._command_cursor_class(self, opened, session=session)
