"""The simulated replica set's replication: lag, the majority commit point, member partitions,
elections after the election timeout, rollback, clock jumps and oplog truncation."""

from __future__ import annotations

from typing import Any

import pytest
from sim_wire_client import MEMBERS, PRIMARY, SECONDARY, THIRD, Client, make_cluster

from mongo_sansio.bson import Timestamp
from mongo_sansio.errors import LocalProtocolError


def _lagging(seconds: float = 2.0) -> Any:
    cluster = make_cluster()
    cluster.set_lag(SECONDARY, seconds)
    cluster.set_lag(THIRD, seconds)
    return cluster


def _ids(cluster: Any, name: str = "c") -> list[Any]:
    coll = cluster.collection("test", name)
    return [] if coll is None else sorted(doc["_id"] for doc in coll.find({}))


def test_without_lag_a_majority_write_is_answered_at_once() -> None:
    cluster = make_cluster()
    client = Client(cluster)
    reply = client.command({"insert": "c", "documents": [{"_id": 1}], "writeConcern": {"w": "majority"}})
    assert reply["ok"] == 1.0 and reply["n"] == 1
    assert cluster.replication.commit_point == cluster.oplog.last.ts


def test_a_majority_write_waits_for_the_lag_and_w1_does_not() -> None:
    cluster = _lagging(2.0)
    client = Client(cluster)
    client.command({"insert": "c", "documents": [{"_id": 0}], "writeConcern": {"w": 1}})
    client.send({"insert": "c", "documents": [{"_id": 1}], "writeConcern": {"w": "majority"}})
    assert client.messages() == []  # held: no secondary has applied it yet
    assert cluster.replication.commit_point < cluster.oplog.last.ts
    client.advance(1.0)
    assert client.messages() == []
    client.advance(1.1)
    (reply,) = client.messages()
    assert reply.body["ok"] == 1.0 and reply.body["n"] == 1
    assert cluster.replication.commit_point == cluster.oplog.last.ts


def test_no_write_concern_means_majority_and_wtimeout_answers_a_write_concern_error() -> None:
    cluster = _lagging(5.0)
    client = Client(cluster)
    client.send({"insert": "c", "documents": [{"_id": 1}]})
    assert client.messages() == []  # mongod 5.0+: the implicit default write concern is majority
    client.advance(5.1)
    assert client.messages()[0].body["n"] == 1
    client.send({"insert": "c", "documents": [{"_id": 2}], "writeConcern": {"w": "majority", "wtimeout": 500}})
    client.advance(0.6)
    (reply,) = client.messages()
    assert reply.body["ok"] == 1.0 and reply.body["n"] == 1
    assert reply.body["writeConcernError"]["code"] == 64
    assert reply.body["writeConcernError"]["errInfo"]["wtimeout"] is True


def test_a_change_stream_sees_only_majority_committed_events() -> None:
    cluster = _lagging(3.0)
    client = Client(cluster)
    opened = client.command({"aggregate": "c", "pipeline": [{"$changeStream": {}}], "cursor": {}})
    cursor_id = opened["cursor"]["id"]
    client.command({"insert": "c", "documents": [{"_id": 1}], "writeConcern": {"w": 1}})
    client.send({"getMore": cursor_id, "collection": "c", "maxTimeMS": 1000})
    client.advance(1.0)
    (empty,) = client.messages()
    assert empty.body["cursor"]["nextBatch"] == []  # the insert is not majority-committed yet
    client.send({"getMore": cursor_id, "collection": "c", "maxTimeMS": 5000})
    client.advance(2.1)
    cluster.tick(client.now)  # the secondaries apply it: the waiting getMore answers
    (batch,) = client.messages()
    assert [event["documentKey"]["_id"] for event in batch.body["cursor"]["nextBatch"]] == [1]


def test_a_crashed_primary_loses_its_unreplicated_w1_writes_to_rollback() -> None:
    cluster = _lagging(10.0)
    client = Client(cluster)
    client.send({"insert": "c", "documents": [{"_id": "kept"}]})
    client.advance(10.1)
    assert client.messages()[0].body["n"] == 1
    client.command({"insert": "c", "documents": [{"_id": "lost"}], "writeConcern": {"w": 1}})
    assert _ids(cluster) == ["kept", "lost"]
    cluster.stop(PRIMARY, client.now)
    assert cluster.primary == SECONDARY
    assert _ids(cluster) == ["kept"]
    (rollback,) = cluster.replication.rollbacks
    assert rollback.member == PRIMARY
    assert [op.document_key for entry in rollback.entries for op in entry.operations() if op.op == "i"] == [
        {"_id": "lost"}
    ]
    assert all(entry.ts != rollback.entries[0].ts for entry in cluster.oplog.entries)


def test_a_rolled_back_retryable_write_runs_again_when_retried() -> None:
    cluster = _lagging(10.0)
    client = Client(cluster)
    lsid = {"id": b"\x01" * 16}
    command = {"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$inc": {"n": 1}}, "upsert": True}],
               "lsid": lsid, "txnNumber": 1, "writeConcern": {"w": 1}}
    assert client.command(dict(command))["n"] == 1
    cluster.stop(PRIMARY, client.now)
    assert _ids(cluster) == []
    retry = Client(cluster, SECONDARY, now=client.now)
    assert retry.command(dict(command))["n"] == 1
    assert [doc["n"] for doc in cluster.collection("test", "c").find({})] == [1]


def test_an_isolated_primary_steps_down_after_the_election_timeout_and_rolls_back() -> None:
    cluster = _lagging(1.0)
    cluster.replication.election_timeout = 2.0
    client = Client(cluster)
    client.command({"insert": "c", "documents": [{"_id": "committed"}], "writeConcern": {"w": 1}})
    client.advance(1.5)
    cluster.tick(client.now)
    cluster.isolate(PRIMARY, client.now)
    client.command({"insert": "c", "documents": [{"_id": "w1"}], "writeConcern": {"w": 1}})
    client.send({"insert": "c", "documents": [{"_id": "majority"}], "writeConcern": {"w": "majority"}})
    client.advance(1.0)
    cluster.tick(client.now)
    assert cluster.primary == PRIMARY and client.messages() == []  # not yet: the timeout runs
    client.advance(1.1)
    cluster.tick(client.now)
    assert cluster.primary == SECONDARY
    (reply,) = client.messages()  # the majority write was never acknowledged
    assert reply.body["code"] == 11602
    assert _ids(cluster) == ["committed"]
    assert cluster.replication.rollbacks[-1].member == PRIMARY
    cluster.reconnect(PRIMARY, client.now)
    client.advance(5.0)
    cluster.tick(client.now)
    assert cluster.primary == SECONDARY
    assert cluster.replication.applied(PRIMARY) == cluster.oplog.last.ts


def test_an_isolated_secondary_changes_nothing_but_its_position() -> None:
    cluster = make_cluster()
    cluster.replication.election_timeout = 1.0
    client = Client(cluster)
    cluster.isolate(THIRD, client.now)
    reply = client.command({"insert": "c", "documents": [{"_id": 1}], "writeConcern": {"w": "majority"}})
    assert reply["n"] == 1 and "writeConcernError" not in reply
    assert cluster.replication.applied(THIRD) < cluster.oplog.last.ts
    client.advance(2.0)
    cluster.tick(client.now)
    assert cluster.primary == PRIMARY
    cluster.reconnect(THIRD, client.now)
    cluster.tick(client.now)
    assert cluster.replication.applied(THIRD) == cluster.oplog.last.ts


def test_two_members_cut_off_leave_no_primary_until_they_heal() -> None:
    cluster = make_cluster()
    cluster.replication.election_timeout = 1.0
    cluster.isolate(SECONDARY, 100.0)
    cluster.isolate(THIRD, 100.0)
    cluster.tick(101.5)
    assert cluster.primary is None
    cluster.reconnect(THIRD, 102.0)
    cluster.tick(103.5)
    assert cluster.primary in MEMBERS


def test_a_clock_jump_moves_wall_times_but_never_the_cluster_time_back() -> None:
    cluster = make_cluster()
    client = Client(cluster)
    first = client.command({"insert": "c", "documents": [{"_id": 1}], "writeConcern": {"w": 1}})["operationTime"]
    cluster.jump_clock(PRIMARY, -3600.0)
    client.advance(1.0)
    second = client.command({"insert": "c", "documents": [{"_id": 2}], "writeConcern": {"w": 1}})["operationTime"]
    assert second > first
    walls = [entry.wall for entry in cluster.oplog.entries[-2:]]
    assert walls[1] < walls[0] - 3000
    assert client.command({"hello": 1})["localTime"].year >= 2023


def test_truncating_the_oplog_loses_a_behind_change_stream_history() -> None:
    cluster = make_cluster()
    client = Client(cluster)
    start = client.command({"insert": "c", "documents": [{"_id": 0}], "writeConcern": {"w": 1}})["operationTime"]
    for i in range(1, 5):
        client.command({"insert": "c", "documents": [{"_id": i}], "writeConcern": {"w": 1}})
    dropped = cluster.truncate_oplog(cluster.oplog.last.ts)
    assert dropped > 0 and len(cluster.oplog.entries) == 1
    reply = client.command({"aggregate": "c", "pipeline": [{"$changeStream": {"startAtOperationTime": start}}],
                            "cursor": {}})
    assert reply["code"] == 286 and "NonResumableChangeStreamError" in reply["errorLabels"]


def test_truncation_keeps_what_is_not_majority_committed() -> None:
    cluster = _lagging(5.0)
    client = Client(cluster)
    client.command({"insert": "c", "documents": [{"_id": 1}], "writeConcern": {"w": 1}})
    point = cluster.replication.commit_point
    cluster.truncate_oplog(Timestamp(2**31 - 1, 0))
    assert cluster.oplog.first_timestamp == point


def test_a_limited_oplog_keeps_its_newest_entries_until_the_limit_is_lifted() -> None:
    cluster = make_cluster()
    client = Client(cluster)
    cluster.limit_oplog(2)
    for i in range(5):
        client.command({"insert": "c", "documents": [{"_id": i}], "writeConcern": {"w": 1}})
        assert len(cluster.oplog.entries) <= 2
    cluster.limit_oplog(None)
    for i in range(5, 8):
        client.command({"insert": "c", "documents": [{"_id": i}], "writeConcern": {"w": 1}})
    assert len(cluster.oplog.entries) == 5


def test_a_member_that_sees_no_majority_cannot_be_elected() -> None:
    cluster = make_cluster()
    cluster.isolate(SECONDARY, 100.0)
    with pytest.raises(LocalProtocolError, match="does not see a majority"):
        cluster.elect(SECONDARY, 100.0)
    cluster.step_down(100.0)
    assert cluster.primary == THIRD  # the next member that sees a majority


def test_a_lagging_secondary_reads_what_it_applied_and_waits_for_after_cluster_time() -> None:
    cluster = _lagging(2.0)
    primary = Client(cluster)
    written = primary.command({"insert": "c", "documents": [{"_id": 1}], "writeConcern": {"w": 1}})["operationTime"]
    secondary = Client(cluster, SECONDARY, now=primary.now)
    stale = secondary.command({"find": "c", "$readPreference": {"mode": "secondary"}})
    assert stale["cursor"]["firstBatch"] == [] and "atClusterTime" not in stale["cursor"]
    assert stale["operationTime"] < written <= stale["$clusterTime"]["clusterTime"]  # it read at its position
    secondary.send({"find": "c", "$readPreference": {"mode": "secondary"},
                    "readConcern": {"afterClusterTime": written}})
    assert secondary.messages() == []  # held until the secondary has applied the write
    secondary.advance(2.1)
    (caught_up,) = secondary.messages()
    assert [doc["_id"] for doc in caught_up.body["cursor"]["firstBatch"]] == [1]


def test_a_majority_read_sees_only_majority_committed_data() -> None:
    cluster = _lagging(2.0)
    client = Client(cluster)
    client.command({"insert": "c", "documents": [{"_id": 1}], "writeConcern": {"w": 1}})
    local = client.command({"find": "c"})["cursor"]["firstBatch"]
    majority = client.command({"find": "c", "readConcern": {"level": "majority"}})["cursor"]["firstBatch"]
    assert [doc["_id"] for doc in local] == [1] and majority == []


def test_an_after_cluster_time_wait_ends_at_max_time_ms() -> None:
    cluster = _lagging(5.0)
    primary = Client(cluster)
    written = primary.command({"insert": "c", "documents": [{"_id": 1}], "writeConcern": {"w": 1}})["operationTime"]
    secondary = Client(cluster, SECONDARY, now=primary.now)
    secondary.send({"find": "c", "$readPreference": {"mode": "secondary"}, "maxTimeMS": 500,
                    "readConcern": {"afterClusterTime": written}})
    secondary.advance(0.6)
    (reply,) = secondary.messages()
    assert reply.body["code"] == 50


def test_snapshot_reads_and_transactions_read_majority_committed_data() -> None:
    cluster = _lagging(2.0)
    client = Client(cluster)
    client.command({"insert": "c", "documents": [{"_id": 1}], "writeConcern": {"w": 1}})
    snapshot = client.command({"find": "c", "readConcern": {"level": "snapshot"}})["cursor"]
    assert snapshot["firstBatch"] == [] and snapshot["atClusterTime"] == cluster.replication.commit_point
    lsid = {"id": b"\x02" * 16}
    found = client.command({"find": "c", "lsid": lsid, "txnNumber": 1, "autocommit": False,
                            "startTransaction": True, "readConcern": {"level": "majority"}})
    assert found["cursor"]["firstBatch"] == []
