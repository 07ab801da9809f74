"""The blocking client (mongo_sansio.adapters.blocking) against the simulated replica set.

Discovery, SCRAM, CRUD across getMore batches, unique indexes, TLS, Unix sockets, errors that
must come out typed, and change streams that resume across failures without losing or
repeating an event.  Every client has short timeouts; conftest.py's watchdog ends a hung run.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from integration_helpers import next_changes, trusted_tls

from mongo_sansio import monitoring
from mongo_sansio.adapters.blocking import MongoClient
from mongo_sansio.adapters.environment import client_metadata
from mongo_sansio.adapters.sim import SimulatedReplicaSet
from mongo_sansio.errors import (
    AuthenticationError,
    ConfigurationError,
    DuplicateKeyError,
    InvalidOperation,
    NetworkError,
    NetworkTimeout,
    NotPrimaryError,
    ServerError,
)
from mongo_sansio.monitoring import CommandFailedEvent, CommandStartedEvent, CommandSucceededEvent
from mongo_sansio.selection import ServerSelectionTimeoutError
from mongo_sansio.transports.blocking import open_stream
from mongo_sansio.uri import DnsAnswer, DnsQuestion, SrvAnswer, SrvRecord, TxtAnswer

OPTIONS: dict[str, Any] = {
    "serverSelectionTimeoutMS": 5000,
    "connectTimeoutMS": 3000,
    "socketTimeoutMS": 10000,
}
AWAIT_MS = 50


class Commands(monitoring.CommandListener):
    """A command listener recording what the client sent."""

    def __init__(self) -> None:
        self.started_events: list[CommandStartedEvent] = []
        self.failures: list[CommandFailedEvent] = []
        self.lock = threading.Lock()

    def started(self, event: CommandStartedEvent) -> None:
        with self.lock:
            self.started_events.append(event)

    def succeeded(self, event: CommandSucceededEvent) -> None:
        pass

    def failed(self, event: CommandFailedEvent) -> None:
        with self.lock:
            self.failures.append(event)

    def named(self, name: str) -> list[CommandStartedEvent]:
        with self.lock:
            return [e for e in self.started_events if e.command_name == name]


def address_of(member: str) -> tuple[str, int]:
    host, port = member.rsplit(":", 1)
    return host, int(port)


def open_client(clients: list[MongoClient], uri: str, **options: Any) -> MongoClient:
    client = MongoClient(uri, **{**OPTIONS, **options})
    clients.append(client)
    return client


# --- discovery -----------------------------------------------------------------------------------


def test_connects_and_finds_the_primary(
    rs: SimulatedReplicaSet, clients: list[MongoClient]
) -> None:
    client = open_client(clients, rs.uri)
    assert client.admin.command("ping")["ok"] == 1
    assert client.primary == address_of(rs.members[0])
    hello = client.admin.command("hello")
    assert hello["isWritablePrimary"] is True and sorted(hello["hosts"]) == sorted(rs.members)



def test_no_primary_while_two_of_three_members_are_stopped(
    rs: SimulatedReplicaSet, clients: list[MongoClient]
) -> None:
    """The primary left alone steps down (as mongod's): a write fails selecting a primary
    until a member comes back and an election is held."""
    client = open_client(clients, rs.uri, serverSelectionTimeoutMS=1000)
    client.test.things.insert_one({"_id": 1})
    rs.stop(rs.members[1])
    rs.stop(rs.members[2])
    # (sent before the monitor's news, it fails NotWritablePrimary and its retry finds no
    # primary: the first error is raised, as PyMongo does)
    with pytest.raises((ServerSelectionTimeoutError, NotPrimaryError)):
        client.test.things.insert_one({"_id": 2})
    rs.restart(rs.members[1])
    client.test.things.insert_one({"_id": 2})
    assert client.primary == address_of(rs.members[0])
    assert client.test.things.count_documents({}) == 2


def test_seeded_with_a_secondary_the_client_writes_to_the_primary(
    rs: SimulatedReplicaSet, clients: list[MongoClient]
) -> None:
    client = open_client(clients, f"mongodb://{rs.members[2]}/?replicaSet=rs0")
    client.test.things.insert_one({"found": True})
    assert client.primary == address_of(rs.members[0])
    assert client.test.things.count_documents({}) == 1


def test_direct_connection_to_a_secondary_reads_but_refuses_writes(
    rs: SimulatedReplicaSet, clients: list[MongoClient]
) -> None:
    writer = open_client(clients, rs.uri)
    writer.test.things.insert_one({"_id": 1})
    direct = open_client(clients, f"mongodb://{rs.members[1]}/?directConnection=true")
    assert direct.test.things.find_one({"_id": 1}) == {"_id": 1}  # primaryPreferred is sent
    with pytest.raises(NotPrimaryError) as caught:
        direct.test.things.insert_one({"_id": 2})
    assert caught.value.code == 10107


def test_nothing_listening_times_out_with_the_reason(clients: list[MongoClient]) -> None:
    with socket.socket() as placeholder:
        placeholder.bind(("127.0.0.1", 0))
        port = placeholder.getsockname()[1]
    client = open_client(clients, f"mongodb://127.0.0.1:{port}/", serverSelectionTimeoutMS=300)
    started = time.monotonic()
    with pytest.raises(ServerSelectionTimeoutError) as caught:
        client.admin.command("ping")
    assert time.monotonic() - started < 3
    assert "refused" in str(caught.value).lower()


# --- authentication ------------------------------------------------------------------------------


@pytest.fixture
def auth_rs() -> Iterator[SimulatedReplicaSet]:
    with SimulatedReplicaSet(members=1, auth={"alice": "s3cret", "bob": "pässwörd"}) as replica_set:
        yield replica_set


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-1", "SCRAM-SHA-256"])
def test_scram_with_the_right_password(
    auth_rs: SimulatedReplicaSet, clients: list[MongoClient], mechanism: str
) -> None:
    client = open_client(
        clients, auth_rs.uri, username="alice", password="s3cret", authMechanism=mechanism
    )
    assert client.admin.command("ping")["ok"] == 1
    client.test.things.insert_one({"by": "alice"})
    assert client.test.things.count_documents({}) == 1


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-1", "SCRAM-SHA-256", None])
def test_a_wrong_password_is_an_authentication_error_with_code_18(
    auth_rs: SimulatedReplicaSet, clients: list[MongoClient], mechanism: str | None
) -> None:
    extra = {"authMechanism": mechanism} if mechanism else {}
    client = open_client(clients, auth_rs.uri, username="alice", password="wrong", **extra)
    with pytest.raises(AuthenticationError) as caught:
        client.admin.command("ping")
    assert caught.value.code == 18
    assert "wrong" not in str(caught.value)


def test_negotiated_mechanism_and_a_non_ascii_password(
    auth_rs: SimulatedReplicaSet, clients: list[MongoClient]
) -> None:
    client = open_client(clients, auth_rs.uri_with_credentials("bob"))
    assert client.admin.command("ping")["ok"] == 1


def test_without_credentials_commands_are_refused(
    auth_rs: SimulatedReplicaSet, clients: list[MongoClient]
) -> None:
    client = open_client(clients, auth_rs.uri)
    with pytest.raises(ServerError) as caught:
        client.test.things.insert_one({"x": 1})
    assert caught.value.code == 13


# --- data ----------------------------------------------------------------------------------------


def test_crud_across_get_more_batches(rs: SimulatedReplicaSet, clients: list[MongoClient]) -> None:
    commands = Commands()
    client = open_client(clients, rs.uri, event_listeners=[commands])
    things = client.test.things
    result = things.insert_many([{"i": i, "even": i % 2 == 0} for i in range(25)])
    assert len(result.inserted_ids) == 25
    with things.find({}, batch_size=4).sort("i", 1) as cursor:
        assert [doc["i"] for doc in cursor] == list(range(25))
    assert len(commands.named("getMore")) == 6  # 4 in the first batch, 21 more in batches of 4
    assert [d["i"] for d in things.find({"even": False}).sort("i", -1).skip(2).limit(3)] == [
        19, 17, 15,
    ]  # fmt: skip
    assert things.count_documents({"even": True}) == 13
    assert things.update_many({"even": True}, {"$inc": {"i": 100}}).modified_count == 13
    assert things.update_one({"i": 1}, {"$set": {"tag": "one"}}).modified_count == 1
    assert things.find_one({"i": 1}, {"_id": 0}) == {"i": 1, "even": False, "tag": "one"}
    assert things.delete_one({"i": 3}).deleted_count == 1
    assert things.delete_many({"even": False}).deleted_count == 11
    assert things.replace_one({"nothing": 1}, {"new": True}, upsert=True).upserted_id is not None
    totals = list(things.aggregate([{"$group": {"_id": "$even", "n": {"$sum": 1}}}]))
    assert {d["_id"]: d["n"] for d in totals} == {None: 1, True: 13}
    things.drop()
    assert things.count_documents({}) == 0


def test_a_partly_read_cursor_is_killed_on_close(
    rs: SimulatedReplicaSet, clients: list[MongoClient]
) -> None:
    commands = Commands()
    client = open_client(clients, rs.uri, event_listeners=[commands])
    client.test.things.insert_many([{"i": i} for i in range(10)])
    cursor = client.test.things.find(batch_size=3)
    assert next(cursor)["i"] == 0
    cursor.close()
    assert len(commands.named("killCursors")) == 1
    with pytest.raises(StopIteration):
        next(cursor)


def test_command_started_events_show_document_sequences_as_arrays(
    rs: SimulatedReplicaSet, clients: list[MongoClient]
) -> None:
    commands = Commands()
    client = open_client(clients, rs.uri, event_listeners=[commands])
    client.test.things.insert_many([{"_id": 1}, {"_id": 2}])
    (insert,) = commands.named("insert")
    assert insert.command["documents"] == [{"_id": 1}, {"_id": 2}]
    assert insert.command["insert"] == "things" and insert.command["$db"] == "test"


def test_a_unique_index_gives_duplicate_key_error(
    rs: SimulatedReplicaSet, clients: list[MongoClient]
) -> None:
    client = open_client(clients, rs.uri)
    client.test.command(
        {"createIndexes": "people", "indexes": [{"key": {"email": 1}, "name": "e", "unique": True}]}
    )
    people = client.test.people
    people.insert_one({"email": "a@example.com"})
    with pytest.raises(DuplicateKeyError) as caught:
        people.insert_one({"email": "a@example.com"})
    assert caught.value.code == 11000
    assert people.count_documents({}) == 1


def test_a_dropped_connection_is_a_network_error_never_an_os_error(
    rs: SimulatedReplicaSet, clients: list[MongoClient]
) -> None:
    client = open_client(clients, rs.uri, retryReads=False)
    client.admin.command("ping")
    rs.configure_failpoint(
        rs.members[0],
        {
            "configureFailPoint": "failCommand",
            "mode": {"times": 1},
            "data": {"failCommands": ["find"], "closeConnection": True},
        },
    )
    with pytest.raises(NetworkError) as caught:  # no retryable reads yet: it surfaces, typed
        client.test.things.find_one({})
    assert not isinstance(caught.value, OSError)
    assert client.test.things.find_one({}) is None  # and the client recovers


def test_threads_share_a_client(rs: SimulatedReplicaSet, clients: list[MongoClient]) -> None:
    client = open_client(clients, rs.uri)
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for i in range(20):
                client.test.threads.insert_one({"t": n, "i": i})
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert not errors
    assert client.test.threads.count_documents({}) == 80


def test_a_closed_client_refuses_operations(rs: SimulatedReplicaSet) -> None:
    with MongoClient(rs.uri, **OPTIONS) as client:
        client.admin.command("ping")
    with pytest.raises(InvalidOperation):
        client.admin.command("ping")


# --- TLS and Unix sockets ------------------------------------------------------------------------


def test_tls_with_a_trusted_ca(tmp_path: Path, clients: list[MongoClient]) -> None:
    tls = trusted_tls(tmp_path)
    with SimulatedReplicaSet(members=2, tls=tls.server_context) as replica_set:
        client = MongoClient(replica_set.uri, tlsCAFile=tls.ca_file, **OPTIONS)
        try:
            client.test.things.insert_one({"secure": True})
            assert client.test.things.count_documents({}) == 1
        finally:
            client.close()
        untrusting = MongoClient(replica_set.uri, **{**OPTIONS, "serverSelectionTimeoutMS": 300})
        try:
            with pytest.raises(ServerSelectionTimeoutError) as caught:
                untrusting.admin.command("ping")
            assert "certificate" in str(caught.value).lower()
        finally:
            untrusting.close()
        insecure = MongoClient(replica_set.uri, tlsInsecure=True, **OPTIONS)
        try:
            assert insecure.admin.command("ping")["ok"] == 1
        finally:
            insecure.close()


def test_tls_host_names_client_certificates_and_unreadable_files(
    tmp_path: Path, clients: list[MongoClient]
) -> None:
    tls = trusted_tls(tmp_path, ("localhost",))  # not valid for 127.0.0.1
    client_pem = tmp_path / "client.pem"
    tls.ca.issue_cert("client").private_key_and_cert_chain_pem.write_to_path(str(client_pem))
    with pytest.raises(ConfigurationError):
        MongoClient("mongodb://127.0.0.1/?tls=true", tlsCAFile=str(tmp_path / "missing.pem"))
    with SimulatedReplicaSet(members=1, tls=tls.server_context) as replica_set:
        strict = open_client(
            clients, replica_set.uri, tlsCAFile=tls.ca_file, serverSelectionTimeoutMS=300
        )
        with pytest.raises(ServerSelectionTimeoutError) as caught:
            strict.admin.command("ping")
        assert "127.0.0.1" in str(caught.value) and "certificate" in str(caught.value).lower()
        lenient = open_client(
            clients,
            replica_set.uri,
            tlsCAFile=tls.ca_file,
            tlsAllowInvalidHostnames=True,
            tlsCertificateKeyFile=str(client_pem),
        )
        assert lenient.admin.command("ping")["ok"] == 1
        for client in (strict, lenient):
            client.close()


def test_unix_socket(tmp_path: Path, clients: list[MongoClient]) -> None:
    with SimulatedReplicaSet(members=1, unix_socket_dir=str(tmp_path)) as replica_set:
        path = replica_set.unix_sockets[0]
        client = MongoClient(
            f"mongodb://{path.replace('/', '%2F')}/?directConnection=true", **OPTIONS
        )
        try:
            assert client.admin.command("ping")["ok"] == 1
            client.test.things.insert_one({"over": "unix"})
            assert client.test.things.find_one({}, {"_id": 0}) == {"over": "unix"}
        finally:
            client.close()


# --- the blocking transport and the process metadata ------------------------------------------


def test_a_stream_sends_buffers_in_order_and_times_out_typed() -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        stream = open_stream(("127.0.0.1", port), connect_timeout=2, socket_timeout=0.1)
        peer, _ = server.accept()
        with peer:
            stream.send_all([b"ab", bytearray(b"cd"), memoryview(b"ef")])
            received = b""
            while len(received) < 6:
                received += peer.recv(16)
            assert received == b"abcdef"
            with pytest.raises(NetworkTimeout, match=f"127.0.0.1:{port}"):
                stream.recv()  # the peer says nothing
            stream.set_timeout(2)
            peer.sendall(b"x")
            buffer = bytearray(4)
            assert stream.recv_into(buffer) == 1 and buffer[:1] == b"x"
        assert stream.recv() == b""  # the peer closed
        stream.close()
        with pytest.raises(NetworkError):
            stream.recv()


def test_unreachable_addresses_are_network_errors(tmp_path: Path) -> None:
    with socket.socket() as placeholder:
        placeholder.bind(("127.0.0.1", 0))
        port = placeholder.getsockname()[1]
    failures = [
        (("127.0.0.1", port), "refused"),
        (("a" * 64 + ".example", 27017), "cannot resolve"),  # a label IDNA refuses
        ((str(tmp_path / "none.sock"), 0), "cannot connect"),
    ]
    for address, reason in failures:
        with pytest.raises(NetworkError) as caught:
            open_stream(address, connect_timeout=1, socket_timeout=1)
        assert reason in str(caught.value).lower()
        assert not isinstance(caught.value, OSError)


class FakeDns:
    """Answers the seedlist questions of ``mongodb+srv://cluster.example.com``."""

    def ask(self, question: DnsQuestion) -> DnsAnswer:
        if question.rdtype == "SRV":
            records = tuple(
                SrvRecord(target=f"{name}.example.com.", port=27017 + i)
                for i, name in enumerate(("a", "b"))
            )
            return SrvAnswer(question=question, records=records)
        return TxtAnswer(question=question, records=((b"replicaSet=rs9&authSource=users",),))


def test_a_srv_string_is_resolved_before_the_client_is_built() -> None:
    client = MongoClient("mongodb+srv://u:p@cluster.example.com/", dns_resolver=FakeDns())
    settings = client.settings
    assert settings.seeds.addresses == (("a.example.com", 27017), ("b.example.com", 27018))
    assert settings.topology.set_name == "rs9"
    assert settings.credential is not None and settings.credential.source == "users"
    assert settings.tls.enabled  # mongodb+srv implies TLS
    client.close()


def test_client_metadata_describes_the_process() -> None:
    document = client_metadata(
        "app", environ={"AWS_EXECUTION_ENV": "AWS_Lambda_python3.11", "AWS_REGION": "us-east-2"}
    )
    assert document["application"] == {"name": "app"}
    assert document["driver"]["name"] == "mongo-sansio" and document["driver"]["version"]
    assert document["os"]["type"]
    assert document["env"]["name"] == "aws.lambda" and document["env"]["region"] == "us-east-2"
    assert "name" not in client_metadata(None, environ={}).get("env", {})  # no FaaS


# --- change streams ------------------------------------------------------------------------------


def test_a_change_stream_resumes_across_failures_without_losing_or_repeating_events(
    rs: SimulatedReplicaSet, clients: list[MongoClient]
) -> None:
    commands = Commands()
    client = open_client(clients, rs.uri, event_listeners=[commands])
    things = client.test.things
    seen: list[int] = []
    batch = iter(range(100))

    def write_three() -> None:
        things.insert_many([{"_id": next(batch)} for _ in range(3)])

    with things.watch(max_await_time_ms=1500) as stream:
        write_three()
        seen += [c["documentKey"]["_id"] for c in next_changes(stream, 3)]
        primary = rs.primary
        assert primary is not None
        # (a) a getMore error carrying the ResumableChangeStreamError label
        rs.configure_failpoint(primary, {
            "configureFailPoint": "failCommand", "mode": {"times": 1},
            "data": {"failCommands": ["getMore"], "errorCode": 2,
                     "errorLabels": ["ResumableChangeStreamError"]},
        })  # fmt: skip
        write_three()
        seen += [c["documentKey"]["_id"] for c in next_changes(stream, 3)]
        assert len(commands.named("aggregate")) == 2
        # (b) the connection drops under a getMore
        rs.configure_failpoint(primary, {
            "configureFailPoint": "failCommand", "mode": {"times": 1},
            "data": {"failCommands": ["getMore"], "closeConnection": True},
        })  # fmt: skip
        write_three()
        seen += [c["documentKey"]["_id"] for c in next_changes(stream, 3)]
        assert len(commands.named("aggregate")) == 3
        # (c) the primary steps down while a getMore waits
        timer = threading.Timer(0.2, rs.step_down)
        timer.start()
        stream.try_next()
        timer.join()
        assert rs.primary not in (None, primary)
        write_three()
        seen += [c["documentKey"]["_id"] for c in next_changes(stream, 3)]
    assert seen == list(range(12))  # nothing lost, nothing repeated, in order
    aggregates = commands.named("aggregate")
    assert len(aggregates) == 4
    assert all("resumeAfter" in a.command["pipeline"][0]["$changeStream"] for a in aggregates[1:])
    assert aggregates[-1].connection_id == address_of(rs.primary or "")


def test_a_non_resumable_error_surfaces_and_ends_the_stream(
    rs: SimulatedReplicaSet, clients: list[MongoClient]
) -> None:
    commands = Commands()
    client = open_client(clients, rs.uri, event_listeners=[commands])
    with client.test.things.watch(max_await_time_ms=AWAIT_MS) as stream:
        rs.configure_failpoint(rs.members[0], {
            "configureFailPoint": "failCommand", "mode": {"times": 1},
            "data": {"failCommands": ["getMore"], "errorCode": 280, "errorLabels": []},
        })  # fmt: skip
        with pytest.raises(ServerError) as caught:
            stream.try_next()
        assert caught.value.code == 280
        assert not stream.alive
        assert stream.try_next() is None
    assert len(commands.named("aggregate")) == 1  # never resumed


def test_start_after_an_invalidate(rs: SimulatedReplicaSet, clients: list[MongoClient]) -> None:
    client = open_client(clients, rs.uri)
    things = client.test.things
    with things.watch(max_await_time_ms=AWAIT_MS) as stream:
        things.insert_one({"_id": 1})
        things.drop()
        things.insert_one({"_id": 2})
        changes = list(stream)  # iteration ends with the invalidate
    assert [c["operationType"] for c in changes] == ["insert", "drop", "invalidate"]
    with things.watch(start_after=changes[-1]["_id"], max_await_time_ms=AWAIT_MS) as after:
        (change,) = next_changes(after, 1)
    assert change["operationType"] == "insert" and change["documentKey"] == {"_id": 2}


def test_a_new_client_resumes_from_a_saved_token(rs: SimulatedReplicaSet) -> None:
    with MongoClient(rs.uri, **OPTIONS) as first:
        things = first.test.things
        with things.watch(max_await_time_ms=AWAIT_MS) as stream:
            things.insert_many([{"_id": i} for i in range(4)])
            assert [c["documentKey"]["_id"] for c in next_changes(stream, 2)] == [0, 1]
            token = stream.resume_token
    assert token is not None
    with MongoClient(rs.uri, **OPTIONS) as second:
        with second.test.things.watch(resume_after=token, max_await_time_ms=AWAIT_MS) as resumed:
            rest = next_changes(resumed, 2)
            assert resumed.try_next() is None
    assert [c["documentKey"]["_id"] for c in rest] == [2, 3]


def test_database_and_cluster_streams(rs: SimulatedReplicaSet, clients: list[MongoClient]) -> None:
    client = open_client(clients, rs.uri)
    with (
        client.test.watch(max_await_time_ms=AWAIT_MS) as database,
        client.watch(max_await_time_ms=AWAIT_MS) as cluster,
    ):
        client.test.a.insert_one({"_id": 1})
        client.other.b.insert_one({"_id": 2})
        (in_test,) = next_changes(database, 1)
        everything = next_changes(cluster, 2)
    assert in_test["ns"] == {"db": "test", "coll": "a"}
    assert [c["ns"]["db"] for c in everything] == ["test", "other"]


def test_members_can_advertise_a_host_name_other_than_their_listening_address() -> None:
    with SimulatedReplicaSet(members=2, advertised_host="localhost") as rs:
        assert all(member.startswith("localhost:") for member in rs.members)
        assert rs.uri.startswith("mongodb://localhost:")
        with MongoClient(rs.uri, serverSelectionTimeoutMS=5000) as client:
            assert client.admin.command("ping")["ok"] == 1
            hello = client.admin.command("hello")
            assert hello["me"].startswith("localhost:") and hello["setName"] == "rs0"
