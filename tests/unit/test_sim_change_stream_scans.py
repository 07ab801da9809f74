"""How the simulated change stream scans: a stream with a batchSize scans about a batch at a
time (the getMores give the rest, nothing lost or repeated), a token-only projection keeps exactly
the fields the general projection keeps, and a stream resuming late in a long oplog sees
exactly the events after its start."""

from __future__ import annotations

from typing import Any

from sim_wire_client import Client, make_cluster
from test_sim_change_streams import more, ok, watch

from mongo_sansio.testing.engine.aggregate import run_pipeline


def _inserted(client: Client, count: int, start: int = 0) -> None:
    ok(client, {"insert": "c", "documents": [{"_id": n, "v": n} for n in range(start, start + count)]})


def test_a_first_batch_of_batch_size_then_the_rest() -> None:
    client = Client(make_cluster())
    ok(client, {"insert": "c", "documents": [{"_id": -1}]})
    begin = watch(client)["postBatchResumeToken"]
    _inserted(client, 5)
    first = watch(client, startAfter=begin, batch_size=1)
    assert [e["documentKey"]["_id"] for e in first["firstBatch"]] == [0]
    assert first["postBatchResumeToken"] == first["firstBatch"][0]["_id"]  # more to come
    # the getMores scan about a batch each (the stream's batchSize), as mongod may return a
    # batch before its batchSize; together they bring the rest, nothing lost or repeated
    seen: list[int] = []
    while len(seen) < 4:
        rest = more(client, first)
        assert rest["nextBatch"], "a getMore with events waiting returned none"
        seen.extend(e["documentKey"]["_id"] for e in rest["nextBatch"])
        assert rest["postBatchResumeToken"] == rest["nextBatch"][-1]["_id"]  # the scan ended on it
    assert seen == [1, 2, 3, 4]


def test_a_token_only_projection_keeps_what_the_general_projection_keeps() -> None:
    client = Client(make_cluster())
    ok(client, {"insert": "c", "documents": [{"_id": -1}]})
    begin = watch(client)["postBatchResumeToken"]
    _inserted(client, 3)
    full = watch(client, startAfter=begin)["firstBatch"]
    for projection in ({"_id": 1}, {"_id": 1, "clusterTime": 1}, {"clusterTime": 1, "missing": 1}):
        projected = watch(client, startAfter=begin, pipeline=[{"$project": projection}])["firstBatch"]
        expected = run_pipeline(full, [{"$project": projection}])
        assert [list(e.items()) for e in projected] == [list(e.items()) for e in expected]
    # a projection the fast path does not take gives the same as the engine
    nested: list[dict[str, Any]] = watch(client, startAfter=begin, pipeline=[{"$project": {"ns.db": 1}}])["firstBatch"]
    assert nested == run_pipeline(full, [{"$project": {"ns.db": 1}}])


def test_a_stream_late_in_a_long_oplog_sees_what_follows_its_start() -> None:
    client = Client(make_cluster())
    for chunk in range(20):
        _inserted(client, 50, start=chunk * 50)
    late = watch(client)["postBatchResumeToken"]
    _inserted(client, 3, start=5000)
    events = watch(client, startAfter=late)["firstBatch"]
    assert [e["documentKey"]["_id"] for e in events] == [5000, 5001, 5002]
