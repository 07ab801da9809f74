"""PyMongo, unchanged, against the simulated replica set: PyMongo is the judge of fidelity.

Covers replica-set discovery and primary selection, secondary reads, SCRAM-SHA-1/256, CRUD with
getMore batches, unique-index errors, a retryable write applied once when the connection drops
after the write, compression, TLS, stepdown/stop/restart, Unix sockets, and the
``mongo-sansio sim`` command. Failures are quick: every client has a short server selection
timeout, and conftest.py's watchdog ends a hung run.
"""

from __future__ import annotations

import signal
import socket
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pymongo = pytest.importorskip("pymongo")
from command_log import Commands  # noqa: E402
from integration_helpers import cli_process, first_line_uri, trusted_tls  # noqa: E402
from pymongo import MongoClient  # noqa: E402
from pymongo.errors import DuplicateKeyError, NotPrimaryError, OperationFailure  # noqa: E402

from mongo_sansio.adapters.sim import ManualClock, SimulatedReplicaSet  # noqa: E402

SELECTION_TIMEOUT_MS = 5000
CLIENT_OPTIONS: dict[str, Any] = {
    "serverSelectionTimeoutMS": SELECTION_TIMEOUT_MS,
    "connectTimeoutMS": 3000,
    "socketTimeoutMS": 10000,
}


def open_client(clients: list[MongoClient[Any]], uri: str, **options: Any) -> MongoClient[Any]:
    client: MongoClient[Any] = MongoClient(uri, **{**CLIENT_OPTIONS, **options})
    clients.append(client)
    return client


def wait_until(predicate: Callable[[], bool], what: str, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting until {what}")
        time.sleep(0.02)


def address_of(member: str) -> tuple[str, int]:
    host, port = member.rsplit(":", 1)
    return host, int(port)


# --- discovery and selection -------------------------------------------------------------


def test_replica_set_discovery_and_primary_selection(rs: SimulatedReplicaSet, clients: list[MongoClient[Any]]) -> None:
    client = open_client(clients, rs.uri)
    client.admin.command("ping")
    assert client.primary == address_of(rs.members[0])
    # Each member has its own monitor: the secondaries may be discovered after the primary.
    secondaries = {address_of(m) for m in rs.members[1:]}
    wait_until(lambda: client.secondaries == secondaries, "both secondaries are discovered")
    client.test.things.insert_one({"x": 1})
    hello = client.admin.command("hello")
    assert hello["setName"] == "rs0" and hello["isWritablePrimary"] is True
    assert sorted(hello["hosts"]) == sorted(rs.members)


def test_seeded_with_one_secondary_the_client_finds_the_primary(rs: SimulatedReplicaSet, clients: list[MongoClient[Any]]) -> None:
    client = open_client(clients, f"mongodb://{rs.members[2]}/?replicaSet=rs0")
    client.test.things.insert_one({"found": True})
    assert client.primary == address_of(rs.members[0])


def test_reads_on_secondaries(rs: SimulatedReplicaSet, clients: list[MongoClient[Any]]) -> None:
    writer = open_client(clients, rs.uri)
    writer.test.things.insert_many([{"i": i} for i in range(5)])
    reader = open_client(clients, rs.uri, readPreference="secondary")
    cursor = reader.test.things.find({}, {"_id": 0}).sort("i", 1)
    assert [doc["i"] for doc in cursor] == list(range(5))
    assert cursor.address in {address_of(m) for m in rs.members[1:]}


def test_a_secondary_refuses_writes_with_not_writable_primary(rs: SimulatedReplicaSet, clients: list[MongoClient[Any]]) -> None:
    direct = open_client(clients, f"mongodb://{rs.members[1]}/?directConnection=true")
    with pytest.raises(NotPrimaryError) as caught:
        direct.test.things.insert_one({"x": 1})
    assert (caught.value.details or {}).get("code") == 10107  # NotWritablePrimary


# --- authentication ----------------------------------------------------------------------


@pytest.fixture
def auth_rs() -> Iterator[SimulatedReplicaSet]:
    with SimulatedReplicaSet(members=1, auth={"alice": "s3cret", "bob": "pässwörd"}) as replica_set:
        yield replica_set


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-1", "SCRAM-SHA-256"])
def test_scram_with_the_right_password(auth_rs: SimulatedReplicaSet, clients: list[MongoClient[Any]], mechanism: str) -> None:
    client = open_client(clients, auth_rs.uri, username="alice", password="s3cret", authMechanism=mechanism)
    assert client.admin.command("ping")["ok"] == 1
    client.test.things.insert_one({"by": "alice"})


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-1", "SCRAM-SHA-256"])
def test_scram_with_a_wrong_password_fails_with_code_18(auth_rs: SimulatedReplicaSet, clients: list[MongoClient[Any]], mechanism: str) -> None:
    client = open_client(clients, auth_rs.uri, username="alice", password="wrong", authMechanism=mechanism)
    with pytest.raises(OperationFailure) as caught:
        client.admin.command("ping")
    assert caught.value.code == 18


def test_default_mechanism_negotiation_and_a_non_ascii_password(auth_rs: SimulatedReplicaSet, clients: list[MongoClient[Any]]) -> None:
    client = open_client(clients, auth_rs.uri_with_credentials("bob"))
    assert client.admin.command("ping")["ok"] == 1


def test_unauthenticated_commands_are_refused(auth_rs: SimulatedReplicaSet, clients: list[MongoClient[Any]]) -> None:
    client = open_client(clients, auth_rs.uri)
    with pytest.raises(OperationFailure) as caught:
        client.test.things.insert_one({"x": 1})
    assert caught.value.code == 13  # Unauthorized


# --- data ----------------------------------------------------------------------------------


def test_crud_with_get_more_batches(rs: SimulatedReplicaSet, clients: list[MongoClient[Any]]) -> None:
    commands = Commands()
    client = open_client(clients, rs.uri, event_listeners=[commands])
    things = client.test.things
    assert len(things.insert_many([{"i": i, "even": i % 2 == 0} for i in range(25)]).inserted_ids) == 25
    found = [doc["i"] for doc in things.find({}, batch_size=4).sort("i", 1)]
    assert found == list(range(25))
    assert len(commands.named("getMore")) == 6  # 4 in the first batch, 21 more in batches of 4

    assert things.count_documents({"even": True}) == 13
    assert things.update_many({"even": True}, {"$inc": {"i": 100}}).modified_count == 13
    assert things.update_one({"i": 1}, {"$set": {"tag": "one"}}).modified_count == 1
    assert things.find_one({"i": 1}, {"_id": 0}) == {"i": 1, "even": False, "tag": "one"}
    before = things.find_one_and_update({"i": 3}, {"$set": {"i": 33}})
    assert before is not None and before["i"] == 3
    assert things.delete_many({"even": False}).deleted_count == 12
    assert sorted(things.distinct("i")) == [i + 100 for i in range(0, 25, 2)]
    assert things.replace_one({"nothing": 1}, {"new": True}, upsert=True).upserted_id is not None


def test_unique_index_gives_duplicate_key_error(rs: SimulatedReplicaSet, clients: list[MongoClient[Any]]) -> None:
    client = open_client(clients, rs.uri)
    people = client.test.people
    people.create_index("email", unique=True)
    people.insert_one({"email": "a@example.com"})
    with pytest.raises(DuplicateKeyError) as caught:
        people.insert_one({"email": "a@example.com"})
    assert caught.value.code == 11000
    details = caught.value.details or {}
    assert details.get("keyPattern") == {"email": 1}
    assert details.get("keyValue") == {"email": "a@example.com"}
    assert people.count_documents({}) == 1


def test_retryable_write_is_applied_once_when_the_connection_drops_after_it(rs: SimulatedReplicaSet, clients: list[MongoClient[Any]]) -> None:
    commands = Commands()
    client = open_client(clients, rs.uri, retryWrites=True, event_listeners=[commands])
    client.admin.command("ping")
    client.admin.command(
        "configureFailPoint", "onPrimaryTransactionalWrite",
        mode={"times": 1}, data={"closeConnection": True},
    )
    result = client.test.counters.update_one({"_id": 1}, {"$inc": {"n": 1}}, upsert=True)
    assert result.acknowledged
    assert len(commands.named("update")) == 2  # the first attempt lost its reply; one retry
    assert client.test.counters.find_one({"_id": 1}) == {"_id": 1, "n": 1}


def test_fail_command_failpoint_set_directly_through_the_api(rs: SimulatedReplicaSet, clients: list[MongoClient[Any]]) -> None:
    client = open_client(clients, rs.uri, retryReads=False)
    client.admin.command("ping")
    rs.configure_failpoint(rs.members[0], {
        "configureFailPoint": "failCommand", "mode": {"times": 1},
        "data": {"failCommands": ["find"], "errorCode": 2, "errmsg": "injected"},
    })
    with pytest.raises(OperationFailure) as caught:
        client.test.things.find_one({})
    assert caught.value.code == 2
    assert client.test.things.find_one({}) is None  # fired once, then off


# --- faults --------------------------------------------------------------------------------


def test_step_down_elects_another_primary_and_writes_follow(rs: SimulatedReplicaSet, clients: list[MongoClient[Any]]) -> None:
    client = open_client(clients, rs.uri)
    client.test.things.insert_one({"before": True})
    old_primary = rs.primary
    rs.step_down()
    assert rs.primary not in (None, old_primary)
    client.test.things.insert_one({"after": True})  # PyMongo finds the new primary
    assert client.primary == address_of(rs.primary or "")
    assert client.test.things.count_documents({}) == 2


def test_stop_and_restart_a_member(rs: SimulatedReplicaSet, clients: list[MongoClient[Any]]) -> None:
    client = open_client(clients, rs.uri)
    client.admin.command("ping")
    rs.stop(rs.members[0])  # the primary: the next member is elected
    client.test.things.insert_one({"while": "stopped"})
    assert client.primary == address_of(rs.members[1])
    rs.restart(rs.members[0])
    assert rs.primary == rs.members[1]
    direct = open_client(clients, f"mongodb://{rs.members[0]}/?directConnection=true")
    assert direct.admin.command("hello")["secondary"] is True


def test_two_of_three_members_stopped_leave_no_primary_until_one_returns(
    rs: SimulatedReplicaSet, clients: list[MongoClient[Any]]
) -> None:
    """As against mongod: the primary that cannot see a majority steps down, PyMongo then
    finds no primary (a write fails, a secondary read still works), and a
    member coming back makes a majority that elects a primary at once."""
    client = open_client(clients, rs.uri, serverSelectionTimeoutMS=1000)
    client.test.things.insert_one({"_id": 1})
    rs.stop(rs.members[1])
    rs.stop(rs.members[2])
    assert rs.primary is None
    # (a write sent before the monitor's news fails NotWritablePrimary, and its retry finds
    # no primary: PyMongo raises the first error then)
    with pytest.raises((pymongo.errors.ServerSelectionTimeoutError, NotPrimaryError)):
        client.test.things.insert_one({"_id": 2})
    secondary_reads = client.test.get_collection(
        "things", read_preference=pymongo.ReadPreference.SECONDARY_PREFERRED
    )
    assert secondary_reads.count_documents({}) == 1
    rs.restart(rs.members[2])
    assert rs.primary == rs.members[0]
    client.test.things.insert_one({"_id": 2})
    assert client.primary == address_of(rs.members[0])


def test_a_client_sending_garbage_does_not_stop_the_others(rs: SimulatedReplicaSet, clients: list[MongoClient[Any]]) -> None:
    client = open_client(clients, rs.uri)
    client.admin.command("ping")
    with socket.create_connection(address_of(rs.members[0]), timeout=5) as bad:
        bad.sendall(b"\xff" * 16 + b"GET / HTTP/1.1\r\n\r\n")  # a message length of -1
        bad.settimeout(5)
        assert bad.recv(100) == b""  # the simulator hangs up on it
    client.test.things.insert_one({"still": "serving"})
    assert client.test.things.count_documents({}) == 1


def test_a_manual_clock_moves_the_simulator_time(clients: list[MongoClient[Any]]) -> None:
    clock = ManualClock()
    with SimulatedReplicaSet(members=1, clock=clock) as replica_set:
        client = open_client(clients, replica_set.uri)
        client.admin.command("ping")
        before = replica_set.call(lambda cluster, now: (cluster.oplog.last.wall, now))
        clock.advance(60)
        after = replica_set.call(lambda cluster, now: (cluster.oplog.last.wall, now))
        assert after[1] - before[1] >= 60
        assert after[0] - before[0] >= 50  # the idle primary wrote its periodic noop
        assert client.admin.command("ping")["ok"] == 1
        client.close()


def test_an_isolated_primary_is_replaced_after_the_election_timeout() -> None:
    clock = ManualClock()
    with SimulatedReplicaSet(members=3, clock=clock) as replica_set:
        first = replica_set.primary
        replica_set.isolate(first)
        clock.advance(5)
        assert replica_set.primary == first  # mongod's electionTimeoutMillis is 10 s
        clock.advance(6)
        assert replica_set.primary == replica_set.members[1]
        replica_set.reconnect(first)
        clock.advance(11)
        assert replica_set.primary == replica_set.members[1]


# --- compression, TLS, Unix sockets --------------------------------------------------------


@pytest.mark.parametrize("compressor", ["zlib", "snappy", "zstd"])
def test_compression_is_negotiated(rs: SimulatedReplicaSet, clients: list[MongoClient[Any]], compressor: str) -> None:
    codec_module = {"snappy": "snappy", "zstd": "backports.zstd" if sys.version_info < (3, 14) else "compression.zstd"}
    if compressor in codec_module:
        pytest.importorskip(codec_module[compressor], reason=f"PyMongo needs it to offer {compressor}")
    client = open_client(clients, rs.uri, compressors=compressor, zlibCompressionLevel=6)
    things = client.test.things
    things.insert_many([{"text": "compress me " * 50, "i": i} for i in range(20)])
    assert [doc["i"] for doc in things.find().sort("i", 1)] == list(range(20))

    def negotiated(cluster: Any, _now: float) -> set[str]:
        return {
            name
            for member in cluster.members.values()
            for connection in member.connections
            for name in connection.state.compression
        }

    assert compressor in rs.call(negotiated)


def test_tls_with_trustme_certificates(tmp_path: Path, clients: list[MongoClient[Any]]) -> None:
    tls = trusted_tls(tmp_path)
    with SimulatedReplicaSet(members=2, tls=tls.server_context) as replica_set:
        assert "tls=true" in replica_set.uri
        client = open_client(clients, replica_set.uri, tlsCAFile=tls.ca_file)
        client.test.things.insert_one({"secure": True})
        assert client.test.things.count_documents({}) == 1
        client.close()
        untrusting = open_client(clients, replica_set.uri, serverSelectionTimeoutMS=500)
        with pytest.raises(pymongo.errors.ServerSelectionTimeoutError):
            untrusting.admin.command("ping")  # the system store does not trust our CA
        untrusting.close()


def test_unix_socket(tmp_path: Path, clients: list[MongoClient[Any]]) -> None:
    with SimulatedReplicaSet(members=1, unix_socket_dir=str(tmp_path)) as replica_set:
        path = replica_set.unix_sockets[0]
        quoted = path.replace("/", "%2F")
        client = open_client(clients, f"mongodb://{quoted}/?directConnection=true")
        assert client.admin.command("ping")["ok"] == 1
        client.close()


# --- the command line ----------------------------------------------------------------------


def test_the_sim_command_prints_its_uri_and_exits_cleanly_on_sigterm(clients: list[MongoClient[Any]]) -> None:
    with cli_process("sim", "--members", "2", "--port", "0", "--auth", "admin:pw", "--replset", "demo") as process:
        uri = first_line_uri(process, "mongodb://admin:pw@")
        assert "replicaSet=demo" in uri and uri.count(",") == 1
        client = open_client(clients, uri)
        client.test.things.insert_one({"from": "cli"})
        assert client.test.things.count_documents({}) == 1
        client.close()
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=15) == 0


def test_the_sim_command_refuses_a_malformed_auth_option(capsys: pytest.CaptureFixture[str]) -> None:
    from mongo_sansio.adapters.cli import main

    with pytest.raises(SystemExit) as caught:
        main(["sim", "--auth", "no-colon-here"])
    assert caught.value.code == 2
    assert "USER:PASSWORD" in capsys.readouterr().err


# Change streams (a getMore failure and a stepdown survived, startAfter after an invalidate and
# the rest) are in test_sim_pymongo_change_streams.py.
