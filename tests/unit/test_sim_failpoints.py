"""failCommand as the monitoring, pooling, logging and CSOT suites use it, judged against mongod's
own evaluation (CommandHelpers::evaluateFailCommandFailPoint): aliases, appName on the
handshake's hello, threadName, namespace, failAllCommands, errorExtraInfo, maxTimeMS during a
block, and the writeConcernError evaluated on its own."""

from __future__ import annotations

from typing import Any

from sim_wire_client import PRIMARY, SECONDARY, Client, make_cluster

from mongo_sansio.bson import Binary, Int64
from mongo_sansio.testing.server import ReplicaSet


def _fail(client: Client, mode: Any, **data: Any) -> dict[str, Any]:
    reply = client.command({"configureFailPoint": "failCommand", "mode": mode, "data": data}, db="admin")
    assert reply["ok"] == 1.0, reply
    return reply


def _hello(name: str = "app", command: str = "hello") -> dict[str, Any]:
    return {command: 1, "client": {"application": {"name": name}, "driver": {"name": "t", "version": "0"}}}


def test_hello_in_fail_commands_fails_every_spelling_of_it() -> None:
    cluster = make_cluster()
    setup = Client(cluster)
    _fail(setup, {"times": 3}, failCommands=["hello"], errorCode=91)
    for spelling in ("hello", "isMaster", "ismaster"):
        reply = Client(cluster).command({spelling: 1})
        assert (reply["ok"], reply["code"], reply["codeName"]) == (0.0, 91, "ShutdownInProgress")
        assert "topologyVersion" not in reply  # mongod versions shutdown errors only when quiescing
    assert Client(cluster).command({"hello": 1})["ok"] == 1.0  # times ran out


def test_injected_state_change_errors_carry_topology_version_as_mongods_own() -> None:
    cluster = make_cluster()
    setup = Client(cluster)
    current = setup.command({"hello": 1})["topologyVersion"]
    for code in (10107, 13435, 11602, 189, 13436):
        _fail(setup, {"times": 1}, failCommands=["find"], errorCode=code)
        assert Client(cluster).command({"find": "c"})["topologyVersion"] == current, code
    for code in (91, 11600):
        _fail(setup, {"times": 1}, failCommands=["find"], errorCode=code)
        assert "topologyVersion" not in Client(cluster).command({"find": "c"}), code
    stated = {"processId": current["processId"], "counter": Int64(current["counter"] + 1)}
    _fail(setup, {"times": 1}, failCommands=["find"], errorCode=91, errorExtraInfo={"topologyVersion": stated})
    assert Client(cluster).command({"find": "c"})["topologyVersion"] == stated
    standalone = ReplicaSet([PRIMARY], standalone=True, now=100.0)
    _fail(Client(standalone), {"times": 1}, failCommands=["find"], errorCode=10107)
    assert "topologyVersion" not in Client(standalone).command({"find": "c"})


def test_find_and_modify_alias_is_matched() -> None:
    client = Client(make_cluster())
    _fail(client, {"times": 1}, failCommands=["findAndModify"], errorCode=2)
    reply = client.command({"findandmodify": "c", "query": {}, "update": {"$set": {"a": 1}}})
    assert reply["code"] == 2


def test_app_name_of_the_first_hello_is_seen_by_the_failpoint_on_that_hello() -> None:
    cluster = make_cluster()
    setup = Client(cluster)
    _fail(setup, {"times": 1}, failCommands=["hello", "isMaster"], appName="monitor", closeConnection=True)
    other = Client(cluster)
    assert other.command(_hello("someone else"))["ok"] == 1.0
    handshake = Client(cluster)
    handshake.send(_hello("monitor"))
    assert handshake.messages() == [] and handshake.conn.should_close
    assert Client(cluster).command(_hello("monitor"))["ok"] == 1.0  # once only


def test_legacy_op_query_handshake_is_failed_by_app_name_too() -> None:
    cluster = make_cluster()
    _fail(Client(cluster), {"times": 1}, failCommands=["isMaster"], appName="legacy", errorCode=91)
    reply = Client(cluster).legacy_hello(client={"application": {"name": "legacy"}})
    assert reply.documents[0]["code"] == 91


def test_setup_client_without_app_name_is_untouched_by_an_app_name_failpoint() -> None:
    cluster = make_cluster()
    setup = Client(cluster)
    setup.command({"hello": 1})
    _fail(setup, "alwaysOn", failCommands=["hello", "ping"], appName="victim", closeConnection=True)
    assert setup.command({"hello": 1})["ok"] == 1.0
    assert setup.command({"ping": 1})["ok"] == 1.0
    assert Client(cluster).command({"hello": 1})["ok"] == 1.0
    _fail(setup, "off")


def test_thread_name_is_the_connection_id() -> None:
    cluster = make_cluster()
    first, second = Client(cluster), Client(cluster)
    thread = f"conn{second.command({'hello': 1})['connectionId']}"
    _fail(first, "alwaysOn", failCommands=["ping"], threadName=thread, errorCode=2)
    assert first.command({"ping": 1})["ok"] == 1.0
    assert second.command({"ping": 1})["code"] == 2


def test_namespace_and_fail_all_commands() -> None:
    client = Client(make_cluster())
    _fail(client, "alwaysOn", failCommands=["find"], namespace="test.a", errorCode=2)
    assert client.command({"find": "b"})["ok"] == 1.0
    assert client.command({"find": "a"})["code"] == 2
    _fail(client, {"times": 2}, failAllCommands=True, errorCode=8)
    assert client.command({"ping": 1})["code"] == 8
    assert client.command({"count": "a"})["code"] == 8
    assert client.command({"ping": 1})["ok"] == 1.0


def test_configure_fail_point_itself_is_never_failed() -> None:
    client = Client(make_cluster())
    _fail(client, "alwaysOn", failAllCommands=True, closeConnection=True)
    assert _fail(client, "off")["count"] == 0


def test_error_extra_info_and_labels_replace_the_servers_own() -> None:
    client = Client(make_cluster())
    _fail(client, {"times": 1}, failCommands=["insert"], errorCode=91, errorLabels=[], errorExtraInfo={"why": "test"})
    lsid = {"id": Binary(bytes(range(16)), 4)}
    reply = client.command({"insert": "c", "documents": [{}], "lsid": lsid, "txnNumber": Int64(1)})
    assert reply["why"] == "test"
    assert reply["errorLabels"] == []  # no RetryableWriteError: the failpoint's labels win


def test_a_failpoint_that_does_nothing_is_not_consumed() -> None:
    client = Client(make_cluster())
    _fail(client, {"times": 1}, failCommands=["insert"], writeConcernError={"code": 64, "errmsg": "x"})
    assert client.command({"ping": 1})["ok"] == 1.0
    # find takes no write concern: the failpoint neither fires nor counts
    assert "writeConcernError" not in client.command({"find": "c"})
    assert client.command({"insert": "c", "documents": [{}]})["writeConcernError"]["code"] == 64
    assert "writeConcernError" not in client.command({"insert": "c", "documents": [{}]})
    assert _fail(client, "off")["count"] == 1


def test_bad_block_options_are_refused_as_mongod_does() -> None:
    client = Client(make_cluster())
    reply = client.command(
        {"configureFailPoint": "failCommand", "mode": "alwaysOn", "data": {"failCommands": ["ping"], "blockConnection": True}},
        db="admin",
    )
    assert (reply["code"], reply["codeName"]) == (72, "InvalidOptions")


def test_max_time_ms_shorter_than_the_block_ends_it_with_50() -> None:
    client = Client(make_cluster())
    _fail(client, {"times": 2}, failCommands=["find"], blockConnection=True, blockTimeMS=500)
    client.send({"find": "c", "maxTimeMS": 100})
    assert client.conn.next_deadline() == client.now + 0.1
    client.advance(0.1)
    (reply,) = client.messages()
    assert (reply.body["code"], reply.body["codeName"]) == (50, "MaxTimeMSExpired")
    client.send({"find": "c", "maxTimeMS": 1000})  # longer than the block: it runs
    client.advance(0.5)
    (reply,) = client.messages()
    assert reply.body["ok"] == 1.0


def test_a_blocked_command_holds_up_only_its_own_connection() -> None:
    cluster = make_cluster()
    blocked, other = Client(cluster), Client(cluster)
    _fail(blocked, {"times": 1}, failCommands=["insert"], blockConnection=True, blockTimeMS=10_000)
    blocked.send({"insert": "c", "documents": [{"_id": 1}]})
    assert blocked.messages() == []
    assert other.command({"insert": "c", "documents": [{"_id": 2}]})["n"] == 1
    assert other.command({"count": "c"})["n"] == 1  # the blocked insert has not run yet
    blocked.advance(10)
    (reply,) = blocked.messages()
    assert reply.body["n"] == 1


def test_block_then_close_as_pool_cleared_error_uses_it() -> None:
    client = Client(make_cluster())
    _fail(client, {"times": 1}, failCommands=["insert"], blockConnection=True, blockTimeMS=100, closeConnection=True)
    client.send({"insert": "c", "documents": [{}]})
    assert not client.conn.should_close
    client.advance(0.1)
    assert client.conn.should_close and client.messages() == []


def test_blocked_handshake_with_app_name_then_answers() -> None:
    cluster = make_cluster()
    _fail(Client(cluster), {"times": 1}, failCommands=["hello"], appName="slow", blockConnection=True, blockTimeMS=1000)
    client = Client(cluster)
    client.send(_hello("slow"))
    assert client.messages() == []
    client.advance(1.0)
    (reply,) = client.messages()
    assert reply.body["isWritablePrimary"] is True


def test_streamed_hellos_are_each_evaluated_by_the_failpoint() -> None:
    from mongo_sansio.wire import EXHAUST_ALLOWED

    cluster = make_cluster()
    monitor = Client(cluster, SECONDARY)
    first = monitor.command(_hello("check"))
    monitor.send({"hello": 1, "topologyVersion": first["topologyVersion"], "maxAwaitTimeMS": 500}, flags=EXHAUST_ALLOWED)
    _fail(Client(cluster, SECONDARY), {"times": 1}, failCommands=["hello"], appName="check", closeConnection=True)
    monitor.advance(0.5)  # the waiting hello answers; the next streamed one meets the failpoint
    (reply,) = monitor.messages()
    assert reply.more_to_come and monitor.conn.should_close


def test_failpoints_belong_to_one_member() -> None:
    cluster = make_cluster()
    _fail(Client(cluster, SECONDARY), "alwaysOn", failCommands=["ping"], errorCode=2)
    assert Client(cluster, PRIMARY).command({"ping": 1})["ok"] == 1.0
    assert Client(cluster, SECONDARY).command({"ping": 1})["code"] == 2


def _on_write(client: Client, mode: Any, **data: Any) -> None:
    reply = client.command({"configureFailPoint": "onPrimaryTransactionalWrite", "mode": mode, "data": data},
                           db="admin")
    assert reply["ok"] == 1.0, reply


def _retryable(body: dict[str, Any], txn_number: int = 1) -> dict[str, Any]:
    return {**body, "lsid": {"id": Binary(bytes(range(16)), 4)}, "txnNumber": Int64(txn_number)}


def test_fail_before_commit_drops_the_connection_and_applies_nothing() -> None:
    cluster = make_cluster()
    setup = Client(cluster)
    setup.command({"insert": "c", "documents": [{"_id": 1, "x": 1}]})
    _on_write(setup, {"times": 2}, failBeforeCommitExceptionCode=1)
    update = _retryable({"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$inc": {"x": 1}}}]})
    for _attempt in range(2):  # the first try and its retry
        client = Client(cluster)
        client.send(update)
        assert client.messages() == [] and client.conn.should_close
        assert setup.command({"find": "c"})["cursor"]["firstBatch"] == [{"_id": 1, "x": 1}]
    # nothing was recorded as executed: the next retry runs the write (once)
    assert Client(cluster).command(update)["nModified"] == 1
    assert Client(cluster).command(update)["nModified"] == 1
    assert setup.command({"find": "c"})["cursor"]["firstBatch"] == [{"_id": 1, "x": 2}]


def test_fail_before_commit_without_closing_answers_the_error() -> None:
    cluster = make_cluster()
    client = Client(cluster)
    _on_write(client, {"times": 2}, failBeforeCommitExceptionCode=91, closeConnection=False)
    insert = client.command(_retryable({"insert": "c", "documents": [{"_id": 1}]}))
    assert insert["ok"] == 1.0 and insert["n"] == 0
    assert [(e["index"], e["code"]) for e in insert["writeErrors"]] == [(0, 91)]
    modify = client.command(_retryable({"findAndModify": "c", "query": {}, "update": {"$set": {"y": 1}}}, 2))
    assert (modify["ok"], modify["code"], modify["codeName"]) == (0.0, 91, "ShutdownInProgress")
    assert modify["errorLabels"] == ["RetryableWriteError"]
    assert client.command({"count": "c"})["n"] == 0
    assert client.command(_retryable({"insert": "c", "documents": [{"_id": 1}]}))["n"] == 1


def test_fail_before_commit_leaves_writes_outside_retryable_ones_alone() -> None:
    cluster = make_cluster()
    client = Client(cluster)
    _on_write(client, {"times": 1}, failBeforeCommitExceptionCode=1)
    assert client.command({"insert": "c", "documents": [{"_id": 1}]})["n"] == 1  # no txnNumber
    # the failpoint was not consumed: the next retryable write meets it
    client.send(_retryable({"insert": "c", "documents": [{"_id": 2}]}))
    assert client.messages() == [] and client.conn.should_close
    assert Client(cluster).command({"count": "c"})["n"] == 1
