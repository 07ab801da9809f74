"""The cursor machine and its flows, driven by scripted replies (tests/unit/flow_script.py)."""

from __future__ import annotations

from typing import Any

import pytest
from flow_script import (
    ABSENT,
    ScriptError,
    command,
    cursor_reply,
    error_reply,
    mark_unknown,
    network_error,
    run_flow,
    select,
)
from hypothesis import given
from hypothesis import strategies as st

from mongo_sansio.bson import Int64
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
from mongo_sansio.errors import (
    CursorNotFound,
    InvalidOperation,
    MongoError,
    NetworkError,
    RemoteProtocolError,
    ServerError,
)
from mongo_sansio.flow import ServerInfo

SERVER = ServerInfo(("a", 27017), max_wire_version=21)
OLD_SERVER = ServerInfo(("old", 27017), max_wire_version=8)


def docs(*numbers: int) -> list[dict[str, int]]:
    return [{"_id": n} for n in numbers]


def make(batch: list[Any], cursor_id: int = 7, ns: str = "db.coll", **options: Any) -> Cursor:
    return Cursor.from_reply(cursor_reply(batch, cursor_id=cursor_id, ns=ns), SERVER, **options)


def more(batch: list[Any], cursor_id: int = 7, ns: str = "db.coll") -> dict[str, Any]:
    return cursor_reply(batch, cursor_id=cursor_id, ns=ns, first=False)


# --- Namespace -------------------------------------------------------------------------------


def test_namespace_splits_at_the_first_dot() -> None:
    assert Namespace.parse("db.a.b") == Namespace("db", "a.b")
    assert str(Namespace.parse("db.$cmd.aggregate")) == "db.$cmd.aggregate"


@pytest.mark.parametrize("bad", ["nodot", ".coll", "db.", "", 5])
def test_namespace_refuses_malformed_strings(bad: Any) -> None:
    with pytest.raises(InvalidNamespace):
        Namespace.parse(bad)


# --- the machine -----------------------------------------------------------------------------


def test_from_reply_reads_id_namespace_and_first_batch() -> None:
    cursor = make(docs(1, 2), cursor_id=42, ns="other.$cmd.aggregate")
    assert cursor.cursor_id == 42 and cursor.alive
    assert cursor.namespace == Namespace("other", "$cmd.aggregate")
    assert cursor.server is SERVER
    assert [cursor.next_buffered(), cursor.next_buffered(), cursor.next_buffered()] == [
        {"_id": 1},
        {"_id": 2},
        None,
    ]


def test_get_more_goes_to_the_namespace_the_server_returned() -> None:
    cursor = make([], cursor_id=42, ns="other.$cmd.aggregate")
    db, body = cursor.get_more_command()
    assert db == "other"
    assert body == {"getMore": 42, "collection": "$cmd.aggregate"}
    assert type(body["getMore"]) is Int64


def test_get_more_carries_batch_size_max_await_time_and_comment() -> None:
    cursor = make([], batch_size=3, max_await_time_ms=500, comment={"k": 1})
    assert cursor.get_more_command()[1] == {
        "getMore": 7,
        "collection": "coll",
        "batchSize": 3,
        "maxTimeMS": 500,
        "comment": {"k": 1},
    }


def test_comment_is_not_sent_on_get_more_before_wire_version_9() -> None:
    reply = cursor_reply([], cursor_id=7)
    cursor = Cursor.from_reply(reply, OLD_SERVER, comment="hello")
    assert "comment" not in cursor.get_more_command()[1]


def test_batch_size_zero_is_not_sent_on_get_more() -> None:
    assert "batchSize" not in make([], batch_size=0).get_more_command()[1]


def test_handle_get_more_reply_appends_the_next_batch_and_follows_the_id() -> None:
    cursor = make([])
    cursor.handle_get_more_reply(more(docs(1)))
    assert cursor.alive and cursor.next_buffered() == {"_id": 1}
    cursor.handle_get_more_reply(more(docs(2), cursor_id=0))
    assert not cursor.alive and not cursor.exhausted
    assert cursor.next_buffered() == {"_id": 2}
    assert cursor.exhausted and cursor.kill_cursors_command() is None


def test_a_get_more_reply_for_another_cursor_is_refused() -> None:
    with pytest.raises(RemoteProtocolError):
        make([]).handle_get_more_reply(more([], cursor_id=8))


def test_limit_truncates_batches_and_caps_get_more_batch_size() -> None:
    cursor = make(docs(1, 2, 3), limit=5, batch_size=3)
    assert cursor.take_buffered() == docs(1, 2, 3)
    assert cursor.get_more_command()[1]["batchSize"] == 2  # two left, not three
    cursor.handle_get_more_reply(more(docs(4, 5, 6)))  # a server that sent too many
    assert cursor.take_buffered() == docs(4, 5)
    assert cursor.limit_reached and cursor.exhausted
    with pytest.raises(InvalidOperation):
        cursor.get_more_command()


def test_limit_without_batch_size_asks_for_the_remaining_documents() -> None:
    cursor = make(docs(1), limit=4)
    cursor.next_buffered()
    assert cursor.get_more_command()[1]["batchSize"] == 3


def test_closed_cursor_refuses_get_more() -> None:
    cursor = make(docs(1))
    assert cursor.close() == ("db", {"killCursors": "coll", "cursors": [7]})
    assert cursor.next_buffered() is None
    assert cursor.close() is None
    with pytest.raises(InvalidOperation):
        cursor.get_more_command()
    with pytest.raises(InvalidOperation):
        cursor.handle_get_more_reply(more([]))


@pytest.mark.parametrize(
    "reply",
    [
        {"ok": 1},
        {"cursor": []},
        {"cursor": {"id": "7", "ns": "db.c", "firstBatch": []}},
        {"cursor": {"id": True, "ns": "db.c", "firstBatch": []}},
        {"cursor": {"id": 7, "ns": "db.c", "firstBatch": "abc"}},
        {"cursor": {"id": 7, "ns": "db.c"}},
        {"cursor": {"id": 7, "ns": "nodot", "firstBatch": []}},
        {"cursor": {"id": 7, "ns": 3, "firstBatch": []}},
        {"cursor": {"id": 7, "firstBatch": []}},
        {"cursor": {"id": 7, "ns": "db.c", "firstBatch": [], "postBatchResumeToken": 1}},
    ],
)
def test_malformed_replies_raise_remote_protocol_error(reply: Any) -> None:
    with pytest.raises(RemoteProtocolError):
        Cursor.from_reply(reply, SERVER)


def test_a_dead_cursor_without_namespace_is_accepted() -> None:
    cursor = Cursor.from_reply({"cursor": {"id": 0, "firstBatch": [1]}}, SERVER)
    assert cursor.next_buffered() == 1 and cursor.exhausted


_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=10,
)
_cursor_sections = st.fixed_dictionaries(
    {},
    optional={
        "id": st.integers() | _values,
        "ns": st.sampled_from(["db.c", "db", "", ".x"]) | _values,
        "firstBatch": st.lists(_values, max_size=3) | _values,
        "nextBatch": st.lists(_values, max_size=3) | _values,
        "postBatchResumeToken": st.dictionaries(st.text(max_size=3), _values, max_size=2) | _values,
    },
)


@given(section=_cursor_sections | _values)
def test_any_reply_gives_a_cursor_or_our_error(section: Any) -> None:
    try:
        cursor = Cursor.from_reply({"cursor": section, "ok": 1}, SERVER)
    except MongoError:
        return
    cursor.take_buffered()
    try:
        cursor.handle_get_more_reply({"cursor": section, "ok": 1})
    except MongoError:
        pass


# --- the flows -------------------------------------------------------------------------------


def test_open_cursor_runs_the_command_and_builds_the_cursor() -> None:
    body = {"find": "coll", "filter": {}}
    cursor = run_flow(
        open_cursor(SERVER, "db", body, batch_size=2),
        command("find", cursor_reply(docs(1), cursor_id=9), db="db", body=body),
    )
    assert cursor.cursor_id == 9 and cursor.batch_size == 2


def test_open_cursor_raises_the_server_error() -> None:
    with pytest.raises(ServerError) as raised:
        run_flow(
            open_cursor(SERVER, "db", {"aggregate": "coll", "pipeline": []}),
            command("aggregate", error_reply(40324, errmsg="Unrecognized pipeline stage")),
        )
    assert raised.value.code == 40324


def test_cursor_next_walks_batches_until_exhausted() -> None:
    cursor = make(docs(1))
    assert run_flow(cursor_next(cursor)) == {"_id": 1}
    got = run_flow(
        cursor_next(cursor),
        command("getMore", more([]), db="db", body={"getMore": 7, "collection": "coll"}),
        command("getMore", more(docs(2))),
    )
    assert got == {"_id": 2}
    assert run_flow(cursor_next(cursor), command("getMore", more([], cursor_id=0))) is None
    assert run_flow(cursor_next(cursor)) is None  # no getMore, no killCursors on a dead cursor


def test_cursor_try_next_sends_at_most_one_get_more() -> None:
    cursor = make([])
    assert run_flow(cursor_try_next(cursor), command("getMore", more([]))) is None
    assert run_flow(cursor_try_next(cursor), command("getMore", more(docs(3)))) == {"_id": 3}
    assert run_flow(cursor_try_next(cursor), command("getMore", more([], cursor_id=0))) is None
    assert run_flow(cursor_try_next(cursor)) is None


def test_cursor_next_batch_returns_whole_batches() -> None:
    cursor = make(docs(1, 2))
    assert run_flow(cursor_next_batch(cursor)) == docs(1, 2)
    assert run_flow(
        cursor_next_batch(cursor),
        command("getMore", more([])),
        command("getMore", more(docs(3), cursor_id=0)),
    ) == docs(3)
    assert run_flow(cursor_next_batch(cursor)) == []


def test_limit_reached_kills_the_server_cursor() -> None:
    cursor = make(docs(1), limit=2, batch_size=5)
    assert run_flow(cursor_next(cursor)) == {"_id": 1}
    got = run_flow(
        cursor_next(cursor),
        command("getMore", more(docs(2, 3)), body={"batchSize": 1}),
        command("killCursors", db="db", body={"killCursors": "coll", "cursors": [7]}),
    )
    assert got == {"_id": 2}
    assert run_flow(cursor_next(cursor)) is None


def test_negative_limit_means_a_single_batch() -> None:
    cursor = make(docs(1, 2, 3), limit=-2)
    assert run_flow(cursor_next(cursor)) == {"_id": 1}
    assert run_flow(cursor_next(cursor), command("killCursors")) == {"_id": 2}
    assert run_flow(cursor_next(cursor)) is None


def test_single_batch_ends_without_get_more() -> None:
    cursor = make(docs(1), limit=-5)
    assert run_flow(cursor_next(cursor)) == {"_id": 1}
    assert run_flow(cursor_next(cursor), command("killCursors")) is None


def test_close_kills_a_live_cursor_and_swallows_its_errors() -> None:
    cursor = make(docs(1))
    run_flow(cursor_close(cursor), command("killCursors", error_reply(8000, errmsg="nope")))
    assert not cursor.alive
    run_flow(cursor_close(cursor))  # nothing more to send

    cursor = make([])
    run_flow(cursor_close(cursor), network_error("killCursors"), mark_unknown(SERVER.address))
    assert not cursor.alive


def test_a_failed_get_more_closes_the_cursor() -> None:
    cursor = make([])
    with pytest.raises(ServerError):
        run_flow(
            cursor_next(cursor),
            command("getMore", error_reply(2, errmsg="bad value")),
            command("killCursors", body={"cursors": [7]}),
        )
    with pytest.raises(InvalidOperation):
        cursor.get_more_command()


def test_cursor_not_found_is_not_killed_again() -> None:
    cursor = make([])
    with pytest.raises(CursorNotFound):
        run_flow(cursor_next(cursor), command("getMore", error_reply(43, errmsg="no cursor")))
    assert not cursor.alive


def test_a_network_error_on_get_more_marks_the_server_and_kills_quietly() -> None:
    cursor = make([])
    with pytest.raises(NetworkError):
        run_flow(
            cursor_next(cursor),
            network_error("getMore"),
            mark_unknown(SERVER.address),
            network_error("killCursors"),
            mark_unknown(SERVER.address),
        )


# --- the script interpreter itself ---------------------------------------------------------


def test_script_fails_on_an_unexpected_request() -> None:
    with pytest.raises(ScriptError, match="unexpected request"):
        run_flow(cursor_next(make([])))


def test_script_fails_on_a_mismatched_command() -> None:
    with pytest.raises(ScriptError, match="command"):
        run_flow(cursor_next(make([])), command("find"))
    with pytest.raises(ScriptError, match="batchSize"):
        run_flow(
            cursor_next(make([], batch_size=2)), command("getMore", body={"batchSize": ABSENT})
        )
    with pytest.raises(ScriptError, match="missing"):
        run_flow(cursor_next(make([])), command("getMore", body={"batchSize": 2}))


def test_script_fails_on_leftover_steps() -> None:
    with pytest.raises(ScriptError, match="unused"):
        run_flow(cursor_next(make(docs(1))), command("getMore"))


def test_script_fails_on_a_wrong_request_type() -> None:
    with pytest.raises(ScriptError, match="SelectServer"):
        run_flow(cursor_next(make([])), select(SERVER))
