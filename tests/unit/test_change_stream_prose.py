"""The prose tests of the change streams test README (source/change-streams/tests/README.md),
as unit tests of the machine and its flows, driven by scripted server replies.

Every prose test that is still in the README is here (5, 10, 15 and 16 are marked "Removed";
none of the others needs a sharded cluster).  Where a test's subject is something only a live
server shows (which errors a real server sends, how it splits a large event), the docstring says
what the scripted version shows instead: the driver-side behaviour given those replies.  Server
versions map to wire versions: 4.0 = 7, 4.2 = 8, 4.4 = 9; ``postBatchResumeToken`` (4.0.7+) is
shown by its presence in a reply.
"""

from __future__ import annotations

from typing import Any

import pytest
from flow_script import (
    ABSENT,
    Step,
    command,
    cursor_reply,
    error_reply,
    mark_unknown,
    network_error,
    run_flow,
    select,
)

from mongo_sansio.bson import Timestamp
from mongo_sansio.cursors.change_stream import ChangeStream, ChangeStreamOptions, ChangeStreamTarget
from mongo_sansio.cursors.change_stream_flow import (
    change_stream_next,
    change_stream_open,
    change_stream_try_next,
)
from mongo_sansio.cursors.errors import ChangeStreamClosed, MissingResumeToken
from mongo_sansio.errors import NetworkError, NotPrimaryError, ServerError
from mongo_sansio.flow import RunCommand, ServerInfo
from mongo_sansio.selection.read_preference import Mode, ReadPreference

SERVER = ServerInfo(("a", 27017), max_wire_version=21)
OTHER = ServerInfo(("b", 27017), max_wire_version=21)
WIRE7 = ServerInfo(("v40", 27017), max_wire_version=7)
COLL = ChangeStreamTarget("db", "coll")
T0 = Timestamp(1_700_000_000, 3)


def tok(n: int) -> dict[str, str]:
    return {"_data": f"{n:04d}"}


def ev(n: int, op: str = "insert") -> dict[str, Any]:
    return {"_id": tok(n), "operationType": op, "ns": {"db": "db", "coll": "coll"}}


def agg(batch: list[Any] | None = None, cursor_id: int = 5, **kwargs: Any) -> dict[str, Any]:
    return cursor_reply(batch or [], cursor_id=cursor_id, **kwargs)


def gm(batch: list[Any] | None = None, cursor_id: int = 5, **kwargs: Any) -> dict[str, Any]:
    return cursor_reply(batch or [], cursor_id=cursor_id, first=False, **kwargs)


def watch(
    reply: dict[str, Any],
    server: ServerInfo = SERVER,
    pipeline: list[dict[str, Any]] | None = None,
    read_preference: ReadPreference | None = None,
    **options: Any,
) -> ChangeStream:
    cs = ChangeStream(COLL, pipeline or [], ChangeStreamOptions(**options))
    if read_preference is not None:
        cs.read_preference = read_preference
    run_flow(
        change_stream_open(cs), select(server, cs.read_preference), command("aggregate", reply)
    )
    return cs


def resume(
    aggregate_reply: dict[str, Any],
    stage: dict[str, Any] | None = None,
    server: ServerInfo = SERVER,
    kill: Step | None = None,
) -> list[Step]:
    """The steps of a resume: selection, killCursors on the old cursor, the new aggregate."""
    kill_step = kill if kill is not None else command("killCursors")
    body = {"pipeline": [{"$changeStream": stage}]} if stage is not None else None
    return [select(server), kill_step, command("aggregate", aggregate_reply, body=body)]


def get_more_network_error() -> list[Step]:
    return [network_error("getMore"), mark_unknown()]


def test_prose_01_tracks_the_last_seen_resume_token() -> None:
    """01. ChangeStream must continuously track the last seen resumeToken."""
    cs = watch(agg())
    assert cs.resume_token is None
    run_flow(change_stream_try_next(cs), command("getMore", gm([ev(1), ev(2), ev(3)])))
    assert cs.resume_token == tok(1)
    run_flow(change_stream_next(cs))
    assert cs.resume_token == tok(2)
    run_flow(change_stream_next(cs))
    assert cs.resume_token == tok(3)
    event = run_flow(
        change_stream_next(cs),
        *get_more_network_error(),
        *resume(agg([ev(4)], cursor_id=6), {"resumeAfter": tok(3)}),
    )
    assert event == ev(4) and cs.resume_token == tok(4)


def test_prose_02_missing_resume_token_raises() -> None:
    """02. ChangeStream will throw an exception if the server response is missing the resume
    token (if wire version is < 8, this is a driver-side error; for 8+, this is a server-side
    error).

    The driver-side half is shown in full.  For the server-side half, the scripted getMore
    fails as a 4.2+ server fails it (ChangeStreamFatalError, 280, without the resumable label):
    the error is raised, not resumed.
    """
    cs = watch(agg(), WIRE7, pipeline=[{"$project": {"_id": 0}}])
    with pytest.raises(MissingResumeToken, match="resume token is missing"):
        run_flow(
            change_stream_next(cs),
            command("getMore", gm([{"operationType": "insert"}])),
            command("killCursors"),
        )
    assert cs.closed

    cs = watch(agg(), SERVER, pipeline=[{"$project": {"_id": 0}}])
    fatal = error_reply(
        280,
        errmsg="Encountered an event whose _id field, which contains the resume token, was modified",
    )
    with pytest.raises(ServerError) as raised:
        run_flow(change_stream_next(cs), command("getMore", fatal), command("killCursors"))
    assert raised.value.code == 280 and cs.closed


def test_prose_03_resumes_once_with_the_initial_pipeline_and_options() -> None:
    """03. After receiving a resumeToken, ChangeStream will automatically resume one time on a
    resumable error with the initial pipeline and options, except for the addition/update of a
    resumeToken."""
    pipeline = [{"$match": {"operationType": "insert"}}]
    options: dict[str, Any] = {
        "full_document": "updateLookup",
        "batch_size": 2,
        "collation": {"locale": "en"},
        "comment": "c",
    }
    cs = watch(agg([ev(1)]), pipeline=pipeline, **options)
    _, first = ChangeStream(COLL, pipeline, ChangeStreamOptions(**options)).aggregate_command(
        SERVER
    )
    assert run_flow(change_stream_next(cs)) == ev(1)

    not_primary = error_reply(10107, "ResumableChangeStreamError", errmsg="not primary")
    aggregate = command("aggregate", agg(cursor_id=6))
    # One time: the getMore after that resume fails too, and that error is raised.
    with pytest.raises(NotPrimaryError):
        run_flow(
            change_stream_next(cs),
            command("getMore", not_primary),
            mark_unknown(),  # NotWritablePrimary is a state-change error
            select(SERVER),
            command("killCursors"),
            aggregate,
            command("getMore", not_primary, body={"getMore": 6}),
            mark_unknown(),
        )
    assert isinstance(aggregate.seen, RunCommand)
    resumed = aggregate.seen.body
    expected = {
        **first,
        "pipeline": [
            {"$changeStream": {**first["pipeline"][0]["$changeStream"], "resumeAfter": tok(1)}},
            *pipeline,
        ],
    }
    assert resumed == expected


@pytest.mark.parametrize(
    "failure",
    [
        [network_error("aggregate"), mark_unknown()],
        [command("aggregate", error_reply(43))],
        [command("aggregate", error_reply(280, "ResumableChangeStreamError"))],
    ],
)
def test_prose_04_no_resume_on_aggregate_errors(failure: list[Step]) -> None:
    """04. ChangeStream will not attempt to resume on any error encountered while executing an
    aggregate command.

    (Retryable reads are not part of these flows: the aggregate is sent once.)
    """
    cs = ChangeStream(COLL)
    with pytest.raises((NetworkError, ServerError)):
        run_flow(change_stream_open(cs), select(SERVER), *failure)
    assert cs.closed


def test_prose_06_server_selection_before_resume_uses_initial_read_preference() -> None:
    """06. ChangeStream will perform server selection before attempting to resume, using initial
    readPreference."""
    preference = ReadPreference(mode=Mode.SECONDARY_PREFERRED, tag_sets=[{"dc": "east"}])
    cs = watch(agg([ev(1)]), read_preference=preference)
    run_flow(change_stream_next(cs))
    run_flow(
        change_stream_next(cs),
        network_error("getMore", address=SERVER.address),
        mark_unknown(SERVER.address),
        select(OTHER, read_preference=preference),
        command("killCursors", address=SERVER.address),  # the old cursor, on its own server
        command("aggregate", agg(cursor_id=9), address=OTHER.address),
        command("getMore", gm([ev(2)], cursor_id=9), address=OTHER.address),
    )
    assert cs.cursor is not None and cs.cursor.server is OTHER


def test_prose_07_empty_initial_batch_is_not_closed() -> None:
    """07. Ensure that a cursor returned from an aggregate command with a cursor id and an initial
    empty batch is not closed on the driver side."""
    cs = watch(agg([], cursor_id=77))
    assert cs.alive and cs.cursor is not None and cs.cursor.alive
    assert (
        run_flow(
            change_stream_try_next(cs), command("getMore", gm(cursor_id=77), body={"getMore": 77})
        )
        is None
    )
    assert cs.alive


@pytest.mark.parametrize(
    "kill",
    [
        [command("killCursors", error_reply(8, errmsg="unknown error"))],
        [network_error("killCursors"), mark_unknown()],
    ],
)
def test_prose_08_kill_cursors_during_resume_must_not_throw(kill: list[Step]) -> None:
    """08. The killCursors command sent during the "Resume Process" must not be allowed to throw
    an exception."""
    cs = watch(agg([ev(1)]))
    run_flow(change_stream_next(cs))
    event = run_flow(
        change_stream_next(cs),
        *get_more_network_error(),
        select(SERVER),
        *kill,
        command("aggregate", agg([ev(2)], cursor_id=6)),
    )
    assert event == ev(2)


def test_prose_09_start_at_operation_time_when_resuming_without_results() -> None:
    """09. $changeStream stage for ChangeStream against a server >=4.0 and <4.0.7 that has not
    received any results yet MUST include a startAtOperationTime option when resuming a change
    stream."""
    cs = watch(agg(operation_time=T0), WIRE7)  # no results, no postBatchResumeToken
    run_flow(
        change_stream_try_next(cs),
        command("getMore", error_reply(91, errmsg="shutting down")),
        mark_unknown(),
        *resume(
            agg(cursor_id=6),
            {"startAtOperationTime": T0, "resumeAfter": ABSENT, "startAfter": ABSENT},
            WIRE7,
        ),
    )
    # Consecutive resumes keep working without a change in between (the saved time is kept).
    run_flow(
        change_stream_try_next(cs),
        command("getMore", gm(cursor_id=6)),
    )
    run_flow(
        change_stream_try_next(cs),
        *get_more_network_error(),
        *resume(agg(cursor_id=7), {"startAtOperationTime": T0}, WIRE7),
    )


def test_prose_11_resume_token_is_the_post_batch_resume_token() -> None:
    """11. For a ChangeStream running against a server >=4.0.7 whose batch is empty or has been
    iterated to the last document, getResumeToken must return the postBatchResumeToken from the
    current command response."""
    cs = watch(agg(post_batch_resume_token=tok(10)))
    assert cs.resume_token == tok(10)  # empty aggregate batch
    run_flow(change_stream_try_next(cs), command("getMore", gm(post_batch_resume_token=tok(11))))
    assert cs.resume_token == tok(11)  # empty getMore batch
    run_flow(
        change_stream_try_next(cs),
        command("getMore", gm([ev(12), ev(13)], post_batch_resume_token=tok(14))),
    )
    run_flow(change_stream_try_next(cs))
    assert cs.resume_token == tok(14)  # iterated to the last document

    cs = watch(agg([ev(1)], post_batch_resume_token=tok(2)))
    run_flow(change_stream_next(cs))
    assert cs.resume_token == tok(2)  # the aggregate's batch, iterated to its last document


def test_prose_12_resume_token_without_post_batch_resume_token() -> None:
    """12. For a ChangeStream running against a server <4.0.7 whose batch is empty or has been
    iterated to the last document: getResumeToken must return the _id of the last document
    returned if one exists, resumeAfter from the initial aggregate if the option was specified,
    and be empty otherwise."""
    cs = watch(agg([ev(1), ev(2)]), WIRE7)
    run_flow(change_stream_next(cs))
    run_flow(change_stream_next(cs))
    assert cs.resume_token == tok(2)
    run_flow(change_stream_try_next(cs), command("getMore", gm()))
    assert cs.resume_token == tok(2)

    cs = watch(agg(), WIRE7, resume_after=tok(7))
    run_flow(change_stream_try_next(cs), command("getMore", gm()))
    assert cs.resume_token == tok(7)

    cs = watch(agg(), WIRE7)
    run_flow(change_stream_try_next(cs), command("getMore", gm()))
    assert cs.resume_token is None


def test_prose_13_resume_token_in_the_middle_of_a_batch() -> None:
    """13. For a ChangeStream whose batch is not empty and has been iterated up to but not
    including the last element, getResumeToken must return the _id of the previous document
    returned."""
    cs = watch(agg([ev(1), ev(2), ev(3)], post_batch_resume_token=tok(4)))
    run_flow(change_stream_next(cs))
    run_flow(change_stream_next(cs))
    assert cs.resume_token == tok(2)


@pytest.mark.parametrize(
    ("options", "expected"),
    [({"start_after": tok(8)}, tok(8)), ({"resume_after": tok(9)}, tok(9)), ({}, None)],
)
def test_prose_14_resume_token_before_iterating(options: dict[str, Any], expected: Any) -> None:
    """14. For a ChangeStream whose batch is not empty, has not been iterated at all, and only
    the initial aggregate has been executed: getResumeToken must return startAfter, or
    resumeAfter, from the initial aggregate if the option was specified, and be empty
    otherwise."""
    cs = watch(agg([ev(20), ev(21)], post_batch_resume_token=tok(22)), **options)
    assert cs.resume_token == expected


def test_prose_17_start_after_is_used_to_resume_before_any_result() -> None:
    """17. $changeStream stage for ChangeStream started with startAfter against a server
    >=4.1.1 that has not received any results yet MUST include a startAfter option and MUST NOT
    include a resumeAfter option when resuming a change stream."""
    cs = watch(agg(), start_after=tok(30))
    run_flow(
        change_stream_try_next(cs),
        *get_more_network_error(),
        *resume(agg(cursor_id=6), {"startAfter": tok(30), "resumeAfter": ABSENT}),
    )
    # Still no result, but a postBatchResumeToken moved the token on: startAfter follows it.
    run_flow(
        change_stream_try_next(cs),
        command("getMore", gm(cursor_id=6, post_batch_resume_token=tok(31))),
    )
    run_flow(
        change_stream_try_next(cs),
        *get_more_network_error(),
        *resume(agg(cursor_id=7), {"startAfter": tok(31), "resumeAfter": ABSENT}),
    )


def test_prose_18_resume_after_is_used_once_a_result_was_received() -> None:
    """18. $changeStream stage for ChangeStream started with startAfter against a server
    >=4.1.1 that has received at least one result MUST include a resumeAfter option and MUST NOT
    include a startAfter option when resuming a change stream."""
    cs = watch(agg([ev(31), ev(32)]), start_after=tok(30))
    run_flow(change_stream_next(cs))
    run_flow(change_stream_next(cs))
    run_flow(
        change_stream_try_next(cs),
        command("getMore", error_reply(43, errmsg="cursor not found")),
        select(SERVER),  # no killCursors: the server has no such cursor any more
        command(
            "aggregate",
            agg(cursor_id=6),
            body={"pipeline": [{"$changeStream": {"resumeAfter": tok(32), "startAfter": ABSENT}}]},
        ),
    )


def test_prose_19_large_events_are_split() -> None:
    """19. Validate that large ChangeStream events are split when using
    $changeStreamSplitLargeEvent.

    Only a live server (6.0.9+ or 7.0+) splits a 10 MB update with a pre-image; here the
    fragments come from scripted replies.  Shown: the watch sends the user's pipeline stage and
    ``fullDocumentBeforeChange: required``; the two fragments are returned as they come, with
    ``splitEvent`` {fragment: 1, of: 2} then {fragment: 2, of: 2}.  Also shown: with the opt-in
    ``split_large_events`` the same fragments come back as one event.
    """
    fragments = [
        {
            "_id": tok(40),
            "splitEvent": {"fragment": 1, "of": 2},
            "operationType": "update",
            "fullDocumentBeforeChange": {"value": "q"},
        },
        {
            "_id": tok(41),
            "splitEvent": {"fragment": 2, "of": 2},
            "updateDescription": {"updatedFields": {"value": "z"}},
        },
    ]
    stage: list[dict[str, Any]] = [{"$changeStreamSplitLargeEvent": {}}]
    cs = ChangeStream(COLL, stage, ChangeStreamOptions(full_document_before_change="required"))
    run_flow(
        change_stream_open(cs),
        select(SERVER),
        command(
            "aggregate",
            agg(),
            body={
                "pipeline": [{"$changeStream": {"fullDocumentBeforeChange": "required"}}, *stage]
            },
        ),
    )
    first = run_flow(change_stream_next(cs), command("getMore", gm(fragments[:1])))
    second = run_flow(change_stream_next(cs), command("getMore", gm(fragments[1:])))
    assert [first["splitEvent"], second["splitEvent"]] == [
        {"fragment": 1, "of": 2},
        {"fragment": 2, "of": 2},
    ]

    cs = ChangeStream(
        COLL,
        [],
        ChangeStreamOptions(full_document_before_change="required", split_large_events=True),
    )
    run_flow(
        change_stream_open(cs),
        select(SERVER),
        command(
            "aggregate",
            agg(),
            body={
                "pipeline": [{"$changeStream": {"fullDocumentBeforeChange": "required"}}, *stage]
            },
        ),
    )
    whole = run_flow(
        change_stream_next(cs),
        command("getMore", gm(fragments[:1])),
        command("getMore", gm(fragments[1:])),
    )
    assert whole == {
        "_id": tok(41),
        "operationType": "update",
        "fullDocumentBeforeChange": {"value": "q"},
        "updateDescription": {"updatedFields": {"value": "z"}},
    }
    assert cs.resume_token == tok(41)


# --- beyond the README ---------------------------------------------------------------------


def test_an_error_of_the_resume_aggregate_is_raised_and_closes() -> None:
    """The aggregate of a resume is not resumed in turn: its error is raised."""
    cs = watch(agg([ev(1)]))
    run_flow(change_stream_next(cs))
    with pytest.raises(ServerError) as raised:
        run_flow(
            change_stream_next(cs),
            *get_more_network_error(),
            select(SERVER),
            command("killCursors"),
            command(
                "aggregate", error_reply(286, "ResumableChangeStreamError", errmsg="history lost")
            ),
        )
    assert raised.value.code == 286 and cs.closed
    with pytest.raises(ChangeStreamClosed):
        run_flow(change_stream_next(cs))


def test_two_consecutive_failures_the_second_raises() -> None:
    """One resume per error: a getMore that fails again right after a resume raises."""
    cs = watch(agg())
    with pytest.raises(NetworkError):
        run_flow(
            change_stream_next(cs),
            *get_more_network_error(),
            *resume(agg(cursor_id=6)),
            *get_more_network_error(),
        )


def test_consecutive_resumes_with_results_in_between() -> None:
    """The unified test "Test consecutive resume": a resume whose aggregate returns an event
    counts as progress, so the next failure resumes again."""
    cs = watch(agg(), batch_size=1)
    first = run_flow(
        change_stream_next(cs), *get_more_network_error(), *resume(agg([ev(1)], cursor_id=6))
    )
    second = run_flow(
        change_stream_next(cs),
        *get_more_network_error(),
        *resume(agg([ev(2)], cursor_id=7), {"resumeAfter": tok(1)}),
    )
    third = run_flow(
        change_stream_next(cs), command("getMore", gm([ev(3)], cursor_id=7), body={"batchSize": 1})
    )
    assert [first, second, third] == [ev(1), ev(2), ev(3)]


def test_start_after_an_invalidate() -> None:
    """An invalidate ends a stream; a new one started after its token goes on (startAfter), and
    resumes with startAfter until it returns an event."""
    cs = watch(agg())
    invalidate = run_flow(
        change_stream_next(cs),
        command("getMore", gm([ev(50, "rename"), ev(51, "invalidate")], cursor_id=0)),
    )
    assert invalidate == ev(50, "rename")
    assert run_flow(change_stream_next(cs))["operationType"] == "invalidate"
    with pytest.raises(ChangeStreamClosed):
        run_flow(change_stream_next(cs))

    after = ChangeStream(COLL, [], ChangeStreamOptions(start_after=cs.resume_token))
    run_flow(
        change_stream_open(after),
        select(SERVER),
        command(
            "aggregate", agg(), body={"pipeline": [{"$changeStream": {"startAfter": tok(51)}}]}
        ),
    )
    event = run_flow(
        change_stream_next(after),
        *get_more_network_error(),
        *resume(agg([ev(52)], cursor_id=6), {"startAfter": tok(51), "resumeAfter": ABSENT}),
    )
    assert event == ev(52)
