"""The fast path of mongo_sansio.cursors.buffered: a buffered document handed out without a
flow exactly when the flow would have handed it out without sending anything, with the same
bookkeeping (returned count, resume token); None in every other case, changing nothing."""

from __future__ import annotations

from typing import Any

import pytest
from flow_script import cursor_reply

from mongo_sansio.cursors import Cursor, Namespace
from mongo_sansio.cursors.buffered import change_stream_next_buffered, cursor_next_buffered
from mongo_sansio.cursors.change_stream import (
    ChangeStream,
    ChangeStreamOptions,
    ChangeStreamTarget,
)
from mongo_sansio.flow import ServerInfo

SERVER = ServerInfo(("a", 27017), max_wire_version=21)
NS = Namespace("db", "coll")


def docs(n: int) -> list[dict[str, int]]:
    return [{"_id": i} for i in range(n)]


def test_buffered_documents_come_out_in_order_and_are_counted() -> None:
    cursor = Cursor(5, NS, SERVER, docs(3))
    assert [cursor_next_buffered(cursor) for _ in range(4)] == [*docs(3), None]
    assert cursor.returned == 3 and cursor.alive  # the getMore is the flow's business


@pytest.mark.parametrize("cursor_id", [5, 0])
def test_the_limit_th_document_is_left_to_the_flow_while_the_server_holds_the_cursor(
    cursor_id: int,
) -> None:
    cursor = Cursor(cursor_id, NS, SERVER, docs(3), limit=2)
    assert cursor_next_buffered(cursor) == {"_id": 0}
    second = cursor_next_buffered(cursor)
    if cursor_id:  # the flow hands it out and kills the server cursor
        assert second is None and cursor.returned == 1 and cursor.buffered == 2
    else:  # nothing to kill: no command follows it
        assert second == {"_id": 1}
    assert cursor_next_buffered(cursor) is None


def test_an_interrupted_cursor_is_left_to_the_flow() -> None:
    cursor = Cursor(5, NS, SERVER, docs(2))
    cursor.interrupted = True
    assert cursor_next_buffered(cursor) is None and cursor.buffered == 2


def event(n: int, op: str = "insert") -> dict[str, Any]:
    return {"_id": {"_data": f"{n:04d}"}, "operationType": op}


def stream(batch: list[Any], cursor_id: int = 5, **options: Any) -> ChangeStream:
    cs = ChangeStream(ChangeStreamTarget("db", "coll"), [], ChangeStreamOptions(**options))
    cs.aggregate_command(SERVER)
    reply = cursor_reply(batch, cursor_id=cursor_id, post_batch_resume_token={"_data": "9999"})
    cs.handle_aggregate_reply(reply, SERVER)
    return cs


def test_events_and_resume_tokens_are_those_of_next_event() -> None:
    batch = [event(i) for i in range(3)]
    fast, slow = stream(batch), stream(batch)
    for _ in range(3):
        assert change_stream_next_buffered(fast) == slow.next_event()
        assert fast.resume_token == slow.resume_token
    assert fast.resume_token == {"_data": "9999"}  # the batch's postBatchResumeToken at its end
    assert change_stream_next_buffered(fast) is None and slow.next_event() is None


@pytest.mark.parametrize(
    ("batch", "cursor_id", "options"),
    [
        ([event(1, "invalidate")], 5, {}),  # the flow closes the stream after it
        ([event(1)], 0, {}),  # the server closed the cursor: the flow closes the stream
        ([{"operationType": "insert"}], 5, {}),  # no _id: the flow raises and closes
        ([event(1)], 5, {"split_large_events": True}),  # fragments are the flow's business
        ([], 5, {}),  # nothing buffered: a getMore
    ],
    ids=["invalidate", "dead-cursor", "no-id", "split", "empty"],
)
def test_events_that_need_the_flow_are_left_to_it(
    batch: list[Any], cursor_id: int, options: dict[str, Any]
) -> None:
    cs = stream(batch, cursor_id, **options)
    token, buffered = cs.resume_token, cs.cursor.buffered if cs.cursor else 0
    assert change_stream_next_buffered(cs) is None
    assert cs.resume_token == token and cs.state == "open"
    assert (cs.cursor.buffered if cs.cursor else 0) == buffered
