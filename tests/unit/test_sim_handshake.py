"""The simulated server's handshake: legacy and OP_MSG hello, awaitable and exhaust hello."""

from __future__ import annotations

import datetime

from sim_wire_client import MEMBERS, PRIMARY, SECONDARY, Client, make_cluster

from mongo_sansio.bson import Int64, ObjectId, Timestamp
from mongo_sansio.wire import EXHAUST_ALLOWED, OpReply


def test_legacy_op_query_is_master_is_answered_with_op_reply() -> None:
    client = Client(make_cluster())
    reply = client.legacy_hello(helloOk=True, client={"application": {"name": "app"}})
    assert isinstance(reply, OpReply)
    body = reply.documents[0]
    assert body["ismaster"] is True and "isWritablePrimary" not in body
    assert body["helloOk"] is True
    assert body["ok"] == 1.0


def test_hello_has_every_field_drivers_read() -> None:
    cluster = make_cluster()
    client = Client(cluster)
    body = client.command({"hello": 1}, db="admin")
    assert body["isWritablePrimary"] is True and body["secondary"] is False
    assert body["hosts"] == MEMBERS and body["setName"] == "rs0" and body["setVersion"] == 1
    assert body["primary"] == PRIMARY and body["me"] == PRIMARY
    assert body["electionId"] == ObjectId(bytes.fromhex("7fffffff0000000000000001"))
    assert isinstance(body["topologyVersion"]["processId"], ObjectId)
    assert isinstance(body["topologyVersion"]["counter"], Int64)
    assert body["maxBsonObjectSize"] == 16777216
    assert body["maxMessageSizeBytes"] == 48000000
    assert body["maxWriteBatchSize"] == 100000
    assert isinstance(body["localTime"], datetime.datetime)
    assert body["logicalSessionTimeoutMinutes"] == 30
    assert body["connectionId"] == 1
    assert (body["minWireVersion"], body["maxWireVersion"]) == (0, 21)
    last_write = body["lastWrite"]
    assert set(last_write) == {"opTime", "lastWriteDate", "majorityOpTime", "majorityWriteDate"}
    assert isinstance(last_write["opTime"]["ts"], Timestamp)
    assert body["$clusterTime"]["signature"] == {"hash": bytes(20), "keyId": Int64(0)}
    assert isinstance(body["operationTime"], Timestamp)
    assert "compression" not in body and "saslSupportedMechs" not in body


def test_wire_version_8_0() -> None:
    client = Client(make_cluster(max_wire_version=25))
    assert client.command({"hello": 1})["maxWireVersion"] == 25
    assert client.command({"buildInfo": 1})["version"].startswith("8.0")


def test_secondary_hello() -> None:
    client = Client(make_cluster(), SECONDARY)
    body = client.command({"hello": 1})
    assert body["isWritablePrimary"] is False and body["secondary"] is True
    assert body["primary"] == PRIMARY and body["me"] == SECONDARY
    assert "electionId" not in body


def test_compression_is_the_intersection_in_the_servers_order() -> None:
    client = Client(make_cluster())
    body = client.command({"hello": 1, "compression": ["zlib", "zstd", "noop"]})
    assert body["compression"] == ["zstd", "zlib"]
    # only the first hello negotiates
    assert "compression" not in client.command({"hello": 1, "compression": ["zlib"]})


def test_replies_use_the_requests_compressor() -> None:
    client = Client(make_cluster())
    client.command({"hello": 1, "compression": ["zlib"]})
    client.send({"ping": 1}, compressor="zlib")
    (reply,) = client.messages()
    assert reply.compressor_id == 2 and reply.body["ok"] == 1.0


def test_awaitable_hello_waits_until_max_await_time() -> None:
    client = Client(make_cluster())
    first = client.command({"hello": 1})
    client.send({"hello": 1, "topologyVersion": first["topologyVersion"], "maxAwaitTimeMS": 500})
    assert client.messages() == []
    assert client.conn.next_deadline() == client.now + 0.5
    client.advance(0.4)
    assert client.messages() == []
    client.advance(0.2)
    (reply,) = client.messages()
    assert reply.body["topologyVersion"] == first["topologyVersion"]
    assert client.conn.next_deadline() is None


def test_awaitable_hello_answers_at_once_when_the_topology_changed() -> None:
    client = Client(make_cluster())
    first = client.command({"hello": 1})
    stale = {"processId": first["topologyVersion"]["processId"], "counter": Int64(0)}
    reply = client.command({"hello": 1, "topologyVersion": stale, "maxAwaitTimeMS": 500})
    assert reply["topologyVersion"]["counter"] == first["topologyVersion"]["counter"]


def test_awaitable_hello_is_answered_by_a_stepdown() -> None:
    cluster = make_cluster()
    client = Client(cluster, SECONDARY)
    first = client.command({"hello": 1})
    client.send({"hello": 1, "topologyVersion": first["topologyVersion"], "maxAwaitTimeMS": 10000})
    assert client.messages() == []
    cluster.step_down(client.now)
    (reply,) = client.messages()
    assert reply.body["isWritablePrimary"] is True  # the next member was elected
    assert reply.body["topologyVersion"]["counter"] > first["topologyVersion"]["counter"]


def test_exhaust_hello_streams_with_more_to_come() -> None:
    cluster = make_cluster()
    client = Client(cluster)
    first = client.command({"hello": 1})
    request_id = client.send(
        {"hello": 1, "topologyVersion": first["topologyVersion"], "maxAwaitTimeMS": 1000}, flags=EXHAUST_ALLOWED
    )
    client.advance(1.0)
    (one,) = client.messages()
    assert one.more_to_come and one.response_to == request_id
    cluster.step_down(client.now)
    (two,) = client.messages()
    assert two.more_to_come and two.response_to == one.request_id
    assert two.body["isWritablePrimary"] is False


def test_stop_closes_connections_and_restart_changes_process_id() -> None:
    cluster = make_cluster()
    client = Client(cluster, SECONDARY)
    before = client.command({"hello": 1})["topologyVersion"]
    cluster.stop(SECONDARY, client.now)
    assert client.conn.should_close and client.conn.close_reason == "member stopped"
    assert cluster.connect(SECONDARY, client.now).should_close
    cluster.restart(SECONDARY, client.now)
    after = Client(cluster, SECONDARY).command({"hello": 1})["topologyVersion"]
    assert after["processId"] != before["processId"]


def test_lagging_secondary_reports_an_older_last_write() -> None:
    cluster = make_cluster()
    primary = Client(cluster)
    cluster.set_lag(SECONDARY, 30)
    primary.advance(60)
    primary.command({"insert": "c", "documents": [{}]})
    secondary = Client(cluster, SECONDARY, now=primary.now)
    lag = primary.command({"hello": 1})["lastWrite"]["lastWriteDate"] - secondary.command({"hello": 1})["lastWrite"]["lastWriteDate"]
    assert lag >= datetime.timedelta(seconds=30)


def test_on_ready_reports_output_caused_by_the_cluster() -> None:
    cluster = make_cluster()
    client = Client(cluster, SECONDARY)
    first = client.command({"hello": 1})
    calls: list[int] = []
    client.conn.on_ready = lambda: calls.append(1)
    client.send({"hello": 1, "topologyVersion": first["topologyVersion"], "maxAwaitTimeMS": 10000})
    assert calls == []
    cluster.step_down(client.now)
    assert calls and len(client.messages()) == 1
