"""Documents already buffered, handed out without running a flow.

Theory of operation
-------------------
Reading a cursor or a change stream goes through a flow (:func:`~.cursor.cursor_next`,
:func:`~.change_stream_flow.change_stream_next`) that an adapter runs on its engine: an
operation context, a generator, the interpreter's loop.  For the document after the first
of a batch that is nearly always wasted: the document is in memory and handing it out needs
no command.  The functions here give that document directly, exactly when the flow would
have given it without yielding a request, and None in every other case (the caller then runs
the flow, which does what it always did).

* :func:`cursor_next_buffered` -- None when the cursor was interrupted (the flow closes it and
  raises), its buffer is empty (a getMore or the end), or this document is the limit-th
  while the server still holds the cursor (the flow kills it).
* :func:`change_stream_next_buffered` -- None unless the stream is open with a live server
  cursor and a buffered document that is a plain event: not an ``invalidate`` (the flow
  closes the stream after it), not a fragment of a split event, not one without ``_id``
  (the flow raises and closes).  The resume token moves on as the flow would move it.

Inputs: a :class:`~.cursor.Cursor` or :class:`~.change_stream.ChangeStream`.  Outputs: a
document or None.  Nothing here sends, waits, or publishes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mongo_sansio.cursors.change_stream import ChangeStream
from mongo_sansio.cursors.cursor import Cursor

__all__ = ["cursor_next_buffered", "change_stream_next_buffered"]


def cursor_next_buffered(cursor: Cursor) -> Any | None:
    """The next buffered document of ``cursor`` when :func:`~.cursor.cursor_next` would
    return it without sending anything; None otherwise (run the flow)."""
    return cursor.next_without_io()


def change_stream_next_buffered(stream: ChangeStream) -> Mapping[str, Any] | None:
    """The next buffered event of ``stream`` when
    :func:`~.change_stream_flow.change_stream_next` would return it without sending
    anything; None otherwise (run the flow)."""
    return stream.next_buffered_event()
