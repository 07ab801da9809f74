"""Cursors and change streams: the machines and the flows that drive them.

* :mod:`mongo_sansio.cursors.cursor` -- :class:`Cursor` (find/aggregate/listX results: batches,
  getMore, killCursors, limit) and its flows.
* :mod:`mongo_sansio.cursors.change_stream` -- :class:`ChangeStream`, the change stream machine
  (commands, resume token, resume-or-raise).
* :mod:`mongo_sansio.cursors.change_stream_flow` -- the flows that open, iterate, resume and
  close a change stream.
* :mod:`mongo_sansio.cursors.split_events` -- reassembly of ``$changeStreamSplitLargeEvent``
  fragments.
* :mod:`mongo_sansio.cursors.errors` -- their errors.
"""

from mongo_sansio.cursors.change_stream import (
    ChangeStream,
    ChangeStreamOptions,
    ChangeStreamTarget,
    ResumeDecision,
    choose_resume_point,
    is_resumable_error,
)
from mongo_sansio.cursors.change_stream_flow import (
    change_stream_close,
    change_stream_next,
    change_stream_open,
    change_stream_try_next,
)
from mongo_sansio.cursors.cursor import (
    Cursor,
    InvalidNamespace,
    Namespace,
    cursor_close,
    cursor_next,
    cursor_next_batch,
    cursor_try_next,
    open_cursor,
)
from mongo_sansio.cursors.errors import (
    ChangeStreamClosed,
    ChangeStreamError,
    MissingResumeToken,
    SplitEventError,
)
from mongo_sansio.cursors.split_events import FragmentAssembler

__all__ = [
    "ChangeStream",
    "ChangeStreamOptions",
    "ChangeStreamTarget",
    "ResumeDecision",
    "choose_resume_point",
    "is_resumable_error",
    "change_stream_open",
    "change_stream_next",
    "change_stream_try_next",
    "change_stream_close",
    "Cursor",
    "Namespace",
    "InvalidNamespace",
    "cursor_next",
    "cursor_try_next",
    "cursor_next_batch",
    "cursor_close",
    "open_cursor",
    "ChangeStreamError",
    "ChangeStreamClosed",
    "MissingResumeToken",
    "SplitEventError",
    "FragmentAssembler",
]
