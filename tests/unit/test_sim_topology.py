"""topologyVersion as mongod moves it, the standalone server, and the commands the monitoring
suites run (replSetFreeze, serverStatus, the redacted-commands set)."""

from __future__ import annotations

from typing import Any

import pytest
from sim_wire_client import MEMBERS, PRIMARY, SECONDARY, THIRD, Client, make_cluster

from mongo_sansio.bson import Binary, Int64
from mongo_sansio.errors import LocalProtocolError
from mongo_sansio.testing.server import ReplicaSet
from mongo_sansio.wire import EXHAUST_ALLOWED


def _versions(cluster: ReplicaSet) -> dict[str, int]:
    return {address: int(Client(cluster, address).command({"hello": 1})["topologyVersion"]["counter"])
            for address in MEMBERS if cluster.members[address].state != "STOPPED"}


def _await(client: Client, version: dict[str, Any], exhaust: bool = False) -> None:
    body = {"hello": 1, "topologyVersion": version, "maxAwaitTimeMS": 60_000}
    client.send(body, flags=EXHAUST_ALLOWED if exhaust else 0)
    assert client.messages() == []


def test_an_election_moves_every_member_whose_reply_changed_once() -> None:
    cluster = make_cluster()
    before = _versions(cluster)
    cluster.step_down(100.0)  # PRIMARY -> SECONDARY, SECONDARY elected; THIRD's "primary" changed
    after = _versions(cluster)
    assert {a: after[a] - before[a] for a in MEMBERS} == {PRIMARY: 1, SECONDARY: 1, THIRD: 1}


def test_the_new_primary_answers_its_waiting_hellos_at_once_with_its_new_state() -> None:
    cluster = make_cluster()
    waiting = Client(cluster, SECONDARY)
    first = waiting.command({"hello": 1})
    _await(waiting, first["topologyVersion"], exhaust=True)
    cluster.step_down(100.0)
    (reply,) = waiting.messages()
    assert reply.body["isWritablePrimary"] is True and reply.body["primary"] == SECONDARY
    assert reply.body["topologyVersion"]["counter"] == first["topologyVersion"]["counter"] + 1
    assert reply.more_to_come


def test_a_member_whose_view_is_unchanged_keeps_its_version_and_keeps_waiting() -> None:
    cluster = make_cluster()
    before = _versions(cluster)
    waiting = Client(cluster, PRIMARY)
    _await(waiting, waiting.command({"hello": 1})["topologyVersion"])
    cluster.stop(THIRD, 100.0)  # a secondary going down changes no other member's hello
    assert waiting.messages() == []
    assert _versions(cluster) == {PRIMARY: before[PRIMARY], SECONDARY: before[SECONDARY]}
    cluster.restart(THIRD, 100.0)
    assert waiting.messages() == []
    assert _versions(cluster)[THIRD] == 0  # a new process starts at 0


def test_losing_the_primary_moves_the_others_and_a_new_one_moves_them_again() -> None:
    cluster = make_cluster()
    waiting = Client(cluster, THIRD)
    version = waiting.command({"hello": 1})["topologyVersion"]
    _await(waiting, version)
    cluster.stop(PRIMARY, 100.0)
    (reply,) = waiting.messages()
    assert reply.body["primary"] == SECONDARY and reply.body["topologyVersion"]["counter"] == version["counter"] + 1
    cluster.stop(SECONDARY, 100.0)  # no majority: no primary left
    reply_body = waiting.command({"hello": 1})
    assert "primary" not in reply_body and reply_body["topologyVersion"]["counter"] == version["counter"] + 2


def test_a_primary_that_loses_the_majority_steps_down_and_a_majority_back_elects() -> None:
    """Two of three members stopped: the primary still running cannot see a majority, so it
    steps down (its waiting hellos are answered, writes fail NotWritablePrimary) and nobody
    can be elected; one member back makes a majority and an election is held at once."""
    cluster = make_cluster()
    waiting = Client(cluster, PRIMARY)
    version = waiting.command({"hello": 1})["topologyVersion"]
    term = cluster.term
    cluster.stop(SECONDARY, 100.0)
    assert cluster.primary == PRIMARY  # two of three still run
    _await(waiting, version)
    cluster.stop(THIRD, 100.0)
    (reply,) = waiting.messages()
    assert reply.body["isWritablePrimary"] is False and "primary" not in reply.body
    assert reply.body["topologyVersion"]["counter"] > version["counter"]
    assert cluster.primary is None and cluster.members[PRIMARY].state == "SECONDARY"
    write = Client(cluster, PRIMARY).command({"insert": "c", "documents": [{"_id": 1}]})
    assert (write["code"], write["codeName"]) == (10107, "NotWritablePrimary")
    with pytest.raises(LocalProtocolError, match="majority"):
        cluster.elect(PRIMARY, 100.0)
    cluster.restart(THIRD, 100.0)
    assert cluster.primary == PRIMARY and cluster.term == term + 1  # a new term
    assert Client(cluster, PRIMARY).command({"insert": "c", "documents": [{"_id": 1}]})["n"] == 1
    cluster.restart(SECONDARY, 100.0)
    assert cluster.primary == PRIMARY and cluster.term == term + 1


def test_a_stopped_primary_without_a_majority_left_is_replaced_when_one_comes_back() -> None:
    cluster = make_cluster()
    cluster.stop(THIRD, 100.0)
    cluster.stop(PRIMARY, 100.0)  # SECONDARY alone: no election
    assert cluster.primary is None and cluster.members[SECONDARY].state == "SECONDARY"
    cluster.restart(PRIMARY, 100.0)  # the member that kept running wins
    assert cluster.primary == SECONDARY


def test_repl_set_step_down_from_a_client_wakes_other_connections() -> None:
    cluster = make_cluster()
    monitor = Client(cluster, THIRD)
    _await(monitor, monitor.command({"hello": 1})["topologyVersion"])
    assert Client(cluster).command({"replSetStepDown": 30, "secondaryCatchUpPeriodSecs": 30, "force": False}, db="admin")["ok"] == 1.0
    (reply,) = monitor.messages()
    assert reply.body["primary"] == SECONDARY


def test_repl_set_freeze() -> None:
    cluster = make_cluster()
    secondary = Client(cluster, SECONDARY)
    assert secondary.command({"replSetFreeze": 0}, db="admin")["info"] == "unfreezing"
    assert secondary.command({"replSetFreeze": 30}, db="admin")["ok"] == 1.0
    reply = Client(cluster).command({"replSetFreeze": 30}, db="admin")
    assert (reply["code"], reply["codeName"]) == (95, "NotSecondary")


def test_server_status_and_redacted_commands() -> None:
    client = Client(make_cluster())
    status = client.command({"serverStatus": 1}, db="admin")
    assert status["ok"] == 1.0 and status["process"] == "mongod" and status["connections"]["current"] == 1
    authenticate = client.command({"authenticate": 1, "mechanism": "MONGODB-X509", "user": "CN=x"}, db="$external")
    assert authenticate["code"] == 18
    for command in ({"createUser": "private", "pwd": {}, "roles": []}, {"updateUser": "private", "pwd": {}, "roles": []}):
        assert client.command(command)["code"] == 14


# --- the standalone server ------------------------------------------------------------------

def _standalone() -> ReplicaSet:
    return ReplicaSet(["127.0.0.1:27017"], standalone=True, now=100.0)


def test_standalone_hello_has_no_replica_set_fields() -> None:
    client = Client(_standalone(), "127.0.0.1:27017")
    body = client.command({"hello": 1})
    for absent in ("setName", "hosts", "primary", "me", "secondary", "setVersion", "electionId", "lastWrite",
                   "$clusterTime", "operationTime", "isImplicitDefaultMajorityWC"):
        assert absent not in body, absent
    assert body["isWritablePrimary"] is True and body["connectionId"] == 1 and "topologyVersion" in body
    assert client.legacy_hello().documents[0]["ismaster"] is True


def test_standalone_refuses_change_streams_transactions_numbers_and_repl_commands() -> None:
    client = Client(_standalone(), "127.0.0.1:27017")
    reply = client.command({"aggregate": "c", "pipeline": [{"$changeStream": {}}], "cursor": {}})
    assert (reply["code"], reply["errmsg"]) == (40573, "The $changeStream stage is only supported on replica sets")
    lsid = {"id": Binary(bytes(16), 4)}
    reply = client.command({"insert": "c", "documents": [{}], "lsid": lsid, "txnNumber": Int64(1)})
    assert (reply["code"], reply["codeName"]) == (20, "IllegalOperation")
    for command in ({"replSetGetStatus": 1}, {"replSetStepDown": 10}, {"replSetFreeze": 0}):
        assert client.command(command, db="admin")["code"] == 76


def test_standalone_serves_everything_else() -> None:
    client = Client(_standalone(), "127.0.0.1:27017")
    assert client.command({"insert": "c", "documents": [{"_id": 1}], "lsid": {"id": Binary(bytes(16), 4)}})["n"] == 1
    assert client.command({"find": "c", "batchSize": 0})["cursor"]["firstBatch"] == []
    assert client.command({"aggregate": "c", "pipeline": [{"$count": "n"}], "cursor": {}})["cursor"]["firstBatch"] == [{"n": 1}]
    assert client.command({"listDatabases": 1, "nameOnly": True}, db="admin")["databases"] == [
        {"name": "admin"}, {"name": "config"}, {"name": "local"}, {"name": "test"}]


def test_standalone_has_no_elections() -> None:
    cluster = _standalone()
    with pytest.raises(LocalProtocolError):
        cluster.step_down(100.0)
    with pytest.raises(LocalProtocolError):
        cluster.elect("127.0.0.1:27017", 100.0)
    cluster.stop("127.0.0.1:27017", 100.0)
    cluster.restart("127.0.0.1:27017", 100.0)
    assert Client(cluster, "127.0.0.1:27017").command({"hello": 1})["isWritablePrimary"] is True
    with pytest.raises(LocalProtocolError):
        ReplicaSet(MEMBERS, standalone=True)


# --- capped collections and tailable cursors -----------------------------------------------

def test_tailable_cursors_on_a_capped_collection() -> None:
    cluster = make_cluster()
    client = Client(cluster)
    assert client.command({"create": "log", "capped": True, "size": 500})["ok"] == 1.0
    listed = client.command({"listCollections": 1, "filter": {"name": "log"}})["cursor"]["firstBatch"]
    assert listed[0]["options"] == {"capped": True, "size": 500}
    client.command({"insert": "log", "documents": [{"_id": 0}, {"_id": 1}]})
    first = client.command({"find": "log", "tailable": True, "batchSize": 1})["cursor"]
    assert first["firstBatch"] == [{"_id": 0}] and first["id"] != 0
    more = {"getMore": first["id"], "collection": "log"}
    assert client.command(more)["cursor"]["nextBatch"] == [{"_id": 1}]
    empty = client.command(more)["cursor"]
    assert empty["nextBatch"] == [] and empty["id"] == first["id"]  # still open
    client.command({"insert": "log", "documents": [{"_id": 2, "x": 1}]})
    assert client.command(more)["cursor"]["nextBatch"] == [{"_id": 2, "x": 1}]


def test_await_data_get_more_waits_for_an_insert() -> None:
    cluster = make_cluster()
    reader, writer = Client(cluster), Client(cluster)
    reader.command({"create": "log", "capped": True, "size": 500})
    cursor = reader.command({"find": "log", "filter": {"keep": True}, "projection": {"_id": 0},
                             "tailable": True, "awaitData": True})["cursor"]
    assert cursor["firstBatch"] == [] and cursor["id"] != 0
    reader.send({"getMore": cursor["id"], "collection": "log", "maxTimeMS": 5000})
    assert reader.messages() == []
    writer.command({"insert": "log", "documents": [{"keep": False}]})
    assert reader.messages() == []  # filtered out: keeps waiting
    writer.command({"insert": "log", "documents": [{"keep": True}]})
    (reply,) = reader.messages()
    assert reply.body["cursor"]["nextBatch"] == [{"keep": True}]


def test_tailable_is_refused_on_a_collection_that_is_not_capped() -> None:
    client = Client(make_cluster())
    client.command({"insert": "plain", "documents": [{}]})
    assert client.command({"find": "plain", "tailable": True})["code"] == 2
    assert client.command({"find": "plain", "awaitData": True})["code"] == 9
    assert client.command({"create": "x", "capped": True})["code"] == 72
