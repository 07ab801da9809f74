"""The simulator's ``$where`` (mongo_sansio.testing.engine.where): the JavaScript subset a
query predicate is written in, its errors, and sleep() holding back only its own reply."""

from __future__ import annotations

from typing import Any

import pytest
from sim_wire_client import Client, make_cluster

from mongo_sansio.bson import Code, Int64
from mongo_sansio.testing.engine import CommandError, compile_filter
from mongo_sansio.testing.engine.where import compile_where, js_clock

DOC = {"_id": 1, "a": 5, "n": Int64(7), "s": "abc", "t": [1, 2, 3], "d": {"x": "y"}, "z": None}


def where(source: Any, document: Any = None) -> bool:
    return compile_where(source)(DOC if document is None else document)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("this.a > 4", True),
        ("this.a > 5", False),
        ("obj.a === 5 && this.n == 7", True),  # BSON numbers are JavaScript numbers
        ("this.a == '5'", True),  # loose equality converts
        ("this.a === '5'", False),
        ("this.s + this.a === 'abc5'", True),  # + joins strings
        ("this.a * 2 - 1 === 9 && this.a % 2 === 1 && this.a / 2 === 2.5", True),
        ("this.t.length === 3 && this.t[1] === 2 && this.s.length == 3", True),
        ("this['d'].x === 'y' && this.d['x'] == 'y'", True),
        ("this.missing === undefined && this.missing == null && this.z == undefined", True),
        ("this.z === undefined", False),
        ("!this.missing && !!this.d && !this.t == false", True),
        ("(this.a > 1 || this.b) && !(this.a < 0)", True),
        ("this.s < 'abd' && 'b' > 'a'", True),
        ("this.missing > 1 || this.missing < 1", False),  # NaN compares false
        ("function() { return this.a == 5; }", True),
        ("function isFive() { return obj.a == 5 }", True),
        ("this.a == 5;", True),
        ("0 || '' || null", False),
    ],
)
def test_expressions_follow_javascript(source: str, expected: bool) -> None:
    assert where(source) is expected


def test_or_and_give_an_operand_and_only_truthiness_decides() -> None:
    assert where("this.missing || this.s") is True
    assert where("this.s && 0") is False
    assert where("this.s && 'x'") is True


def test_code_scope_variables_are_globals() -> None:
    assert where(Code("this.a > limit", {"limit": 4})) is True
    assert where(Code("this.a > limit", {"limit": 5})) is False


@pytest.mark.parametrize(
    "source",
    ["var x = 1; x", "this.a = 1", "Math.max(1, 2) > 1", "print(1)", "this.a >", "'open", "this.a @ 1"],
)
def test_unsupported_javascript_is_a_js_interpreter_failure(source: str) -> None:
    with pytest.raises(CommandError) as caught:
        compile_where(source)
    assert caught.value.code == 139


def test_member_of_null_fails_when_a_document_is_tested() -> None:
    predicate = compile_where("this.z.x == 1")
    with pytest.raises(CommandError) as caught:
        predicate(DOC)
    assert caught.value.code == 139 and "null" in str(caught.value)


def test_a_where_of_another_type_is_bad_value() -> None:
    with pytest.raises(CommandError) as caught:
        compile_filter({"$where": 5})
    assert caught.value.code == 2


def test_where_is_refused_in_elem_match() -> None:
    with pytest.raises(CommandError, match=r"\$elemMatch cannot contain \$where"):
        compile_filter({"t": {"$elemMatch": {"$where": "true"}}})


def test_sleep_adds_to_the_clock_it_runs_under() -> None:
    predicate = compile_where("sleep(250) || this.a == 5")
    with js_clock() as clock:
        assert predicate(DOC) and predicate(DOC)
    assert clock.slept_ms == 500
    assert predicate(DOC)  # outside a clock: nothing to add to, and no error


# -- through the simulated server ----------------------------------------------------------


def test_find_count_and_delete_filter_with_where() -> None:
    client = Client(make_cluster())
    client.command({"insert": "c", "documents": [{"_id": i, "v": i} for i in range(5)]})
    found = client.command({"find": "c", "filter": {"$where": "this.v % 2 == 0"}})
    assert [d["_id"] for d in found["cursor"]["firstBatch"]] == [0, 2, 4]
    assert client.command({"count": "c", "query": {"$or": [{"$where": "this.v > 3"}, {"v": 0}]}})["n"] == 2
    assert client.command({"delete": "c", "deletes": [{"q": {"$where": "this.v < 2"}, "limit": 0}]})["n"] == 2


def test_aggregate_match_refuses_where() -> None:
    client = Client(make_cluster())
    reply = client.command(
        {"aggregate": "c", "pipeline": [{"$match": {"$where": "true"}}], "cursor": {}}
    )
    assert reply["ok"] == 0 and reply["code"] == 2
    assert "$where is not allowed inside of a $match" in reply["errmsg"]


def test_sleep_holds_back_only_its_own_reply() -> None:
    cluster = make_cluster()
    sleeper, other = Client(cluster), Client(cluster)
    other.command({"insert": "c", "documents": [{"_id": 1}]})
    sleeper.send({"find": "c", "filter": {"$where": "sleep(2000) || true"}})
    assert sleeper.messages() == []
    assert sleeper.conn.next_deadline() == sleeper.now + 2.0
    assert other.command({"count": "c"})["n"] == 1  # another connection is not held up
    sleeper.advance(2.0)
    (reply,) = sleeper.messages()
    assert [d["_id"] for d in reply.body["cursor"]["firstBatch"]] == [1]


def test_a_max_time_ms_shorter_than_the_sleep_ends_the_command() -> None:
    client = Client(make_cluster())
    client.command({"insert": "c", "documents": [{"_id": 1}, {"_id": 2}]})
    client.send({"find": "c", "filter": {"$where": "sleep(100) || true"}, "maxTimeMS": 150})
    assert client.conn.next_deadline() == client.now + 0.15  # two documents: 200 ms of sleep
    client.advance(0.15)
    (reply,) = client.messages()
    assert (reply.body["code"], reply.body["codeName"]) == (50, "MaxTimeMSExpired")
