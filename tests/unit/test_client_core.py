"""The client core without sockets: scripted hello replies and failures answer its requests.

A :class:`Script` plays the adapter: it answers ``OpenConnection`` with a description built from
a scripted hello reply (or throws the scripted error in), ``CheckConnection`` likewise,
``Now`` with a fake clock and ``Sleep`` by moving that clock.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest

from mongo_sansio.bson import ObjectId
from mongo_sansio.client import (
    COOLDOWN,
    CheckConnection,
    CheckReply,
    ClientCore,
    ClientSettings,
    ConnectionSets,
    OpenConnection,
    Opened,
    Seeds,
)
from mongo_sansio.connection import ConnectionDescription
from mongo_sansio.errors import (
    AuthenticationError,
    ConfigurationError,
    IncompatibleServerError,
    InvalidOperation,
    NetworkError,
    NetworkTimeout,
    server_error_from_reply,
)
from mongo_sansio.flow import MarkServerUnknown, Now, SelectServer, ServerInfo, Sleep
from mongo_sansio.sdam.description import ServerType, TopologyType
from mongo_sansio.selection import ReadPreference, ServerSelectionTimeoutError
from mongo_sansio.uri import parse_uri

A = ("a", 27017)
B = ("b", 27017)
C = ("c", 27017)
PROCESS = ObjectId.from_parts(1, b"\x00\x01\x02\x03\x04", 3)


def member(
    address: tuple[str, int],
    *,
    primary: tuple[str, int] | None = A,
    hosts: tuple[tuple[str, int], ...] = (A, B, C),
    set_name: str = "rs0",
    max_wire_version: int = 21,
    counter: int = 0,
) -> dict[str, Any]:
    """A replica set member's hello reply."""

    def name(a: tuple[str, int]) -> str:
        return f"{a[0]}:{a[1]}"

    reply: dict[str, Any] = {
        "ok": 1.0,
        "helloOk": True,
        "isWritablePrimary": address == primary,
        "secondary": address != primary,
        "setName": set_name,
        "hosts": [name(h) for h in hosts],
        "me": name(address),
        "minWireVersion": 0,
        "maxWireVersion": max_wire_version,
        "maxBsonObjectSize": 1000,
        "topologyVersion": {"processId": PROCESS, "counter": counter},
    }
    if primary is not None:
        reply["primary"] = name(primary)
    return reply


STANDALONE: dict[str, Any] = {
    "ok": 1.0,
    "helloOk": True,
    "isWritablePrimary": True,
    "minWireVersion": 0,
    "maxWireVersion": 21,
}


class Conn:
    """A connection handle (identity-hashed, as the adapters' are)."""

    def __init__(self, address: tuple[str, int]) -> None:
        self.address = address

    def __repr__(self) -> str:
        return f"Conn{self.address}"


Answer = Mapping[str, Any] | BaseException


class Script:
    """Plays the adapter for the core's flows; ``servers`` maps addresses to hello replies or
    errors (a callable is asked each time)."""

    def __init__(self, servers: dict[tuple[str, int], Answer | Callable[[], Answer]]):
        self.servers = servers
        self.now = 1000.0
        self.requests: list[object] = []

    def answer(self, address: tuple[str, int]) -> Answer:
        value = self.servers[address]
        return value() if callable(value) else value

    def run(self, flow: Any) -> Any:
        answer: Any = None
        error: BaseException | None = None
        while True:
            try:
                request = flow.throw(error) if error is not None else flow.send(answer)
            except StopIteration as stop:
                return stop.value
            answer, error = None, None
            self.requests.append(request)
            if isinstance(request, Now):
                answer = self.now
            elif isinstance(request, Sleep):
                assert request.seconds > 0
                self.now += request.seconds
            elif isinstance(request, OpenConnection):
                reply = self.answer(request.address)
                if isinstance(reply, BaseException):
                    error = reply
                else:
                    description = ConnectionDescription.from_hello(request.address, reply)
                    answer = Opened(Conn(request.address), description, 0.002)
            elif isinstance(request, CheckConnection):
                reply = self.answer(request.connection.address)
                if isinstance(reply, BaseException):
                    error = reply
                else:
                    answer = CheckReply(reply, 0.001)
            else:
                raise AssertionError(f"unexpected request {request!r}")

    def opened(self) -> list[tuple[str, int]]:
        return [r.address for r in self.requests if isinstance(r, OpenConnection)]

    def checked(self) -> list[tuple[str, int]]:
        return [r.connection.address for r in self.requests if isinstance(r, CheckConnection)]

    def sleeps(self) -> list[float]:
        return [r.seconds for r in self.requests if isinstance(r, Sleep)]


def first_draw(n: int) -> int:
    return 0


def make_core(uri: str, **options: Any) -> ClientCore[Conn]:
    settings = ClientSettings.from_connection_string(parse_uri(uri, **options))
    return ClientCore(settings, topology_id="t", draw=first_draw)


RS_URI = "mongodb://a,b,c/?replicaSet=rs0&serverSelectionTimeoutMS=2000"
WRITE = SelectServer(for_writes=True)


def rs_script() -> Script:
    return Script({A: member(A), B: member(B), C: member(C)})


# --- discovery and selection ------------------------------------------------------------------


def test_first_selection_scans_every_seed_and_returns_the_primary() -> None:
    core = make_core(RS_URI)
    script = rs_script()
    server = script.run(core.select_server_flow(WRITE))
    assert server == ServerInfo(
        address=A, max_wire_version=21, is_writable=True, max_bson_object_size=1000
    )
    assert sorted(script.opened()) == [A, B, C]
    assert core.description.type is TopologyType.REPLICA_SET_WITH_PRIMARY
    # the connections the scan opened are kept for operations
    assert [core.connections.idle_count(a) for a in (A, B, C)] == [1, 1, 1]
    assert script.sleeps() == []


def test_a_secondary_seed_leads_to_the_primary_it_names_first() -> None:
    core = make_core("mongodb://c/?replicaSet=rs0")
    script = rs_script()
    server = script.run(core.select_server_flow(WRITE))
    assert server.address == A
    # c names a as primary: the possible primary is checked before b
    assert script.opened() == [C, A, B]


def test_selection_within_the_heartbeat_does_not_scan_again() -> None:
    core = make_core(RS_URI)
    script = rs_script()
    script.run(core.select_server_flow(WRITE))
    before = len(script.requests)
    script.now += 1.0
    assert script.run(core.select_server_flow(WRITE)).address == A
    assert all(isinstance(r, Now) for r in script.requests[before:])


def test_after_the_heartbeat_a_scan_checks_idle_connections_with_hello() -> None:
    core = make_core(RS_URI, heartbeatFrequencyMS=1000)
    script = rs_script()
    script.run(core.select_server_flow(WRITE))
    script.now += 1.5
    script.run(core.select_server_flow(WRITE))
    assert sorted(script.checked()) == [A, B, C]
    assert len(script.opened()) == 3  # no new connections
    check = next(r for r in script.requests if isinstance(r, CheckConnection))
    assert check.body == {"hello": 1}


def test_reads_choose_among_secondaries_with_the_draw() -> None:
    settings = ClientSettings.from_connection_string(parse_uri(RS_URI))
    draws: list[int] = []

    def draw(n: int) -> int:
        draws.append(n)
        return n - 1

    core: ClientCore[Conn] = ClientCore(settings, topology_id="t", draw=draw)
    script = rs_script()
    server = script.run(core.select_server_flow(SelectServer(ReadPreference(mode="secondary"))))
    assert server.address in (B, C) and not server.is_writable
    assert draws  # the scan's ties and the choice between two secondaries were drawn


def test_no_primary_waits_between_scans_until_the_timeout() -> None:
    core = make_core(RS_URI)
    no_primary = {a: member(a, primary=None) for a in (A, B, C)}
    script = Script(dict(no_primary))
    started = script.now
    with pytest.raises(ServerSelectionTimeoutError) as caught:
        script.run(core.select_server_flow(WRITE))
    assert "ReplicaSetNoPrimary" in str(caught.value)
    assert script.now - started >= 2.0 - 0.5
    sleeps = script.sleeps()
    assert sleeps and all(s <= 0.5 for s in sleeps)  # minHeartbeatFrequencyMS apart


def test_an_election_during_selection_is_found_by_a_later_scan() -> None:
    core = make_core(RS_URI)
    scans = {"count": 0}

    def b_reply() -> Answer:
        scans["count"] += 1
        return member(B, primary=B if scans["count"] > 1 else None)

    script = Script({A: member(A, primary=None), B: b_reply, C: member(C, primary=None)})
    server = script.run(core.select_server_flow(WRITE))
    assert server.address == B
    assert script.sleeps() == [pytest.approx(0.5)]


def test_try_once_mode_fails_after_one_scan() -> None:
    core = make_core(RS_URI, serverSelectionTryOnce=True)
    script = Script({a: member(a, primary=None) for a in (A, B, C)})
    with pytest.raises(ServerSelectionTimeoutError):
        script.run(core.select_server_flow(WRITE))
    assert script.sleeps() == []
    assert len(script.opened()) == 3


def test_a_network_error_puts_the_server_in_cooldown() -> None:
    core = make_core(RS_URI, heartbeatFrequencyMS=1000)
    script = Script({A: member(A), B: NetworkError("refused"), C: member(C)})
    script.run(core.select_server_flow(WRITE))
    assert core.description.servers[B].type is ServerType.UNKNOWN
    assert "refused" in (core.description.servers[B].error or "")
    script.servers[B] = member(B)
    script.now += 1.5  # stale, but b is cooling down
    script.run(core.select_server_flow(WRITE))
    assert script.opened().count(B) == 1
    script.now += COOLDOWN
    script.run(core.select_server_flow(WRITE))
    assert script.opened().count(B) == 2
    assert core.description.servers[B].type is ServerType.RS_SECONDARY


def test_a_check_that_fails_on_an_idle_connection_marks_the_server_unknown() -> None:
    core = make_core(RS_URI, heartbeatFrequencyMS=1000)
    script = rs_script()
    script.run(core.select_server_flow(WRITE))
    script.servers[C] = NetworkTimeout("timed out")
    script.now += 1.5
    script.run(core.select_server_flow(WRITE))
    assert core.description.servers[C].type is ServerType.UNKNOWN
    assert core.connections.idle_count(C) == 0  # the failed one is the adapter's to close


def test_a_dead_idle_connection_is_retried_once_on_a_new_one() -> None:
    core = make_core(RS_URI, heartbeatFrequencyMS=1000)
    script = rs_script()
    script.run(core.select_server_flow(WRITE))
    answers: list[Answer] = [NetworkError("reset by peer"), member(A)]
    script.servers[A] = lambda: answers.pop(0)
    script.now += 1.5
    assert script.run(core.select_server_flow(WRITE)).address == A
    assert script.checked().count(A) == 1 and script.opened().count(A) == 2
    assert core.description.servers[A].type is ServerType.RS_PRIMARY  # never marked Unknown


def test_an_authentication_failure_ends_the_selection() -> None:
    core = make_core("mongodb://u:p@a/?directConnection=true")
    script = Script({A: AuthenticationError("Authentication failed.", code=18)})
    with pytest.raises(AuthenticationError) as caught:
        script.run(core.select_server_flow(WRITE))
    assert caught.value.code == 18
    assert core.description.servers[A].type is ServerType.UNKNOWN


def test_an_incompatible_server_ends_the_selection() -> None:
    core = make_core("mongodb://a/?directConnection=true")
    script = Script({A: IncompatibleServerError("too old")})
    with pytest.raises(IncompatibleServerError):
        script.run(core.select_server_flow(WRITE))


def test_a_failed_hello_is_a_failed_check_and_selection_goes_on() -> None:
    core = make_core(RS_URI)
    failing = server_error_from_reply({"ok": 0, "code": 8000, "errmsg": "busy"})
    script = Script({A: member(A), B: failing, C: member(C)})
    assert script.run(core.select_server_flow(WRITE)).address == A
    assert core.description.servers[B].type is ServerType.UNKNOWN


def test_load_balanced_mode_selects_without_scanning() -> None:
    core = make_core("mongodb://lb/?loadBalanced=true")
    script = Script({})
    server = script.run(core.select_server_flow(WRITE))
    assert server.address == ("lb", 27017)
    assert script.opened() == []


# --- errors from operations -------------------------------------------------------------------


def discovered() -> tuple[ClientCore[Conn], Script]:
    core = make_core(RS_URI, heartbeatFrequencyMS=60000)
    script = rs_script()
    script.run(core.select_server_flow(WRITE))
    return core, script


def test_a_network_error_marks_the_server_unknown_and_clears_its_connections() -> None:
    core, script = discovered()
    in_use = core.check_out(A, script.now)
    assert in_use is not None
    core.mark_server_unknown(MarkServerUnknown(A, NetworkError("reset")), script.now)
    assert core.description.servers[A].type is ServerType.UNKNOWN
    assert core.description.type is TopologyType.REPLICA_SET_NO_PRIMARY
    assert core.check_in(in_use, script.now) is False  # opened before the clear
    # the next selection finds the primary again (a is not cooling down: no check failed)
    script.now += 0.1
    assert script.run(core.select_server_flow(WRITE)).address == A
    assert script.opened().count(A) == 2


def test_a_state_change_error_marks_the_server_unknown_and_the_topology_stale() -> None:
    core, script = discovered()
    error = server_error_from_reply(
        {
            "ok": 0,
            "code": 10107,
            "errmsg": "not primary",
            "topologyVersion": {"processId": PROCESS, "counter": 1},
        }
    )
    core.mark_server_unknown(MarkServerUnknown(A, error), script.now)
    assert core.description.servers[A].type is ServerType.UNKNOWN
    assert core.connections.idle_count(A) == 1  # no pool clear for 4.2+ "not primary"
    script.servers = {
        A: member(A, primary=B, counter=1),
        B: member(B, primary=B),
        C: member(C, primary=B),
    }
    script.now += 0.1
    assert script.run(core.select_server_flow(WRITE)).address == B
    assert sorted(script.checked()) == [A, B, C]  # a rescan, on the idle connections


def test_a_timeout_after_the_handshake_changes_nothing() -> None:
    core, script = discovered()
    core.mark_server_unknown(MarkServerUnknown(A, NetworkTimeout("slow")), script.now)
    assert core.description.servers[A].type is ServerType.RS_PRIMARY


def test_an_unknown_address_is_ignored() -> None:
    core, script = discovered()
    core.mark_server_unknown(MarkServerUnknown(("z", 1), NetworkError("x")), script.now)
    assert core.description.type is TopologyType.REPLICA_SET_WITH_PRIMARY


def test_a_server_the_primary_does_not_list_is_removed_and_its_connections_close() -> None:
    core = make_core(RS_URI)
    script = Script(
        {A: member(A, hosts=(A, B)), B: member(B, hosts=(A, B)), C: member(C, hosts=(A, B, C))}
    )
    script.run(core.select_server_flow(WRITE))
    assert C not in core.description.servers
    closed = core.take_to_close()
    assert all(conn.address == C for conn in closed)
    assert core.connections.idle_count(C) == 0


# --- connections, commands and closing ----------------------------------------------------------


def test_checkout_reuses_the_connection_the_scan_opened() -> None:
    core, script = discovered()
    connection = core.check_out(A, script.now)
    assert connection is not None and connection.address == A
    assert core.check_out(A, script.now) is None  # the only one is in use: open another
    description = ConnectionDescription.from_hello(A, member(A))
    other = Conn(A)
    core.connection_opened(A, Opened(other, description, 0.001), script.now, idle=False)
    assert core.connections.in_use_counts() == {A: 2}
    assert core.check_in(connection, script.now) and core.check_in(other, script.now)
    assert core.connections.idle_count(A) == 2


def test_direct_connection_to_a_secondary_reads_with_primary_preferred() -> None:
    core = make_core("mongodb://b/?directConnection=true")
    script = rs_script()
    server = script.run(core.select_server_flow(SelectServer()))
    assert server.address == B and not server.is_writable
    assert core.command_body(server, {"find": "c"}) == {
        "find": "c",
        "$readPreference": {"mode": "primaryPreferred"},
    }
    assert core.command_body(server, {"find": "c", "$readPreference": {"mode": "secondary"}}) == {
        "find": "c",
        "$readPreference": {"mode": "secondary"},
    }
    standalone = make_core("mongodb://a/?directConnection=true")
    server = Script({A: STANDALONE}).run(standalone.select_server_flow(SelectServer()))
    assert standalone.command_body(server, {"find": "c"}) == {"find": "c"}
    # a replica set topology leaves it to the flows
    rs, rs_runner = discovered()
    primary = rs_runner.run(rs.select_server_flow(WRITE))
    assert rs.command_body(primary, {"find": "c"}) == {"find": "c"}


def test_a_unix_socket_is_path_and_port_zero_for_flows_and_transports() -> None:
    path = "/tmp/mongodb-27017.sock"
    core = make_core(f"mongodb://{path.replace('/', '%2F')}/?directConnection=true")
    script = Script({(path, 0): STANDALONE})
    server = script.run(core.select_server_flow(WRITE))
    assert server.address == (path, 0)
    assert script.opened() == [(path, 0)]
    connection = core.check_out((path, 0), script.now)
    assert connection is not None
    core.mark_server_unknown(MarkServerUnknown((path, 0), NetworkError("gone")), script.now)
    assert next(iter(core.description.servers.values())).type is ServerType.UNKNOWN


def test_request_ids_count_up() -> None:
    core = make_core(RS_URI)
    assert [core.next_request_id() for _ in range(3)] == [1, 2, 3]


def test_close_hands_back_idle_connections_and_refuses_more() -> None:
    core, script = discovered()
    in_use = core.check_out(A, script.now)
    assert in_use is not None
    core.close()
    assert {conn.address for conn in core.take_to_close()} == {B, C}
    assert core.check_in(in_use, script.now) is False
    with pytest.raises(InvalidOperation):
        script.run(core.select_server_flow(WRITE))
    core.close()  # idempotent


def test_connection_sets_perish_idle_connections_and_bound_the_idle_set() -> None:
    sets: ConnectionSets[Conn] = ConnectionSets(max_idle_time=10.0, max_idle_per_server=1)
    sets.track(A)
    description = ConnectionDescription.from_hello(A, member(A))
    old, new = Conn(A), Conn(A)
    sets.add(A, old, description, now=0.0, idle=True)
    sets.add(A, new, description, now=5.0, idle=False)
    assert sets.check_in(new, 5.0) is False  # one idle connection is enough
    assert sets.check_out(A, 20.0) is None  # the idle one perished
    assert sets.take_to_close() == [old]
    untracked = Conn(B)
    sets.add(B, untracked, description, now=0.0, idle=True)
    assert sets.take_to_close() == [untracked]


# --- settings ---------------------------------------------------------------------------------


def test_settings_from_a_connection_string() -> None:
    settings = ClientSettings.from_connection_string(
        parse_uri(
            "mongodb://u:p@a:27018,b/db?replicaSet=rs0&connectTimeoutMS=2500&socketTimeoutMS=0"
            "&tlsCAFile=ca.pem&w=majority&journal=true&wTimeoutMS=100&readPreference=secondary"
            "&appname=app&compressors=zlib&maxIdleTimeMS=1000"
        )
    )
    assert settings.seeds.addresses == (("a", 27018), ("b", 27017))
    assert settings.topology.set_name == "rs0"
    assert settings.connect_timeout == 2.5 and settings.socket_timeout is None
    assert settings.tls.enabled and settings.tls.ca_file == "ca.pem"
    assert not settings.tls.allow_invalid_certificates
    assert settings.write_concern == {"w": "majority", "j": True, "wtimeout": 100}
    assert settings.read_preference.mode.value == "secondary"
    assert settings.handshake.app_name == "app" and settings.handshake.compressors == ("zlib",)
    assert settings.handshake.sasl_supported_mechs_user == "db.u"
    assert settings.credential is not None and settings.credential.source == "db"
    assert settings.max_idle_time == 1.0 and settings.database == "db"
    assert settings.server_selection_try_once is False


def test_settings_refuse_an_unresolved_srv_string_and_odd_socket_paths() -> None:
    with pytest.raises(ConfigurationError, match="resolved"):
        ClientSettings.from_connection_string(parse_uri("mongodb+srv://cluster.example.com"))
    with pytest.raises(ConfigurationError, match="white space"):
        Seeds.from_hosts(parse_uri("mongodb://%2Ftmp%2Fa%20b.sock").hosts)
    with pytest.raises(ConfigurationError, match="case"):
        Seeds.from_hosts(parse_uri("mongodb://%2Ftmp%2FA.sock,%2Ftmp%2Fa.sock").hosts)


def test_tls_insecure_allows_invalid_certificates_and_hostnames() -> None:
    settings = ClientSettings.from_connection_string(parse_uri("mongodb://a/?tlsInsecure=true"))
    assert settings.tls.enabled
    assert settings.tls.allow_invalid_certificates and settings.tls.allow_invalid_hostnames


def test_the_reply_wait_allows_for_a_getmore_s_own_await_time() -> None:
    core = make_core("mongodb://a:27017/?socketTimeoutMS=2000")
    assert core.command_timeout(None, {"find": "c"}) == 2.0
    assert core.command_timeout(None, {"getMore": 1, "maxTimeMS": 1500}) == 3.5
    assert core.command_timeout(0.25, {"getMore": 1, "maxTimeMS": 1500}) == 0.25
    assert core.command_timeout(None, {"getMore": 1, "maxTimeMS": True}) == 2.0
    unlimited = make_core("mongodb://a:27017/")
    assert unlimited.command_timeout(None, {"getMore": 1, "maxTimeMS": 1500}) is None


def test_command_monitor_builds_the_events_every_adapter_publishes() -> None:
    from mongo_sansio.bson import encode
    from mongo_sansio.client.events import (
        CommandFailedEvent,
        CommandMonitor,
        CommandSucceededEvent,
    )
    from mongo_sansio.errors import DuplicateKeyError

    insert = CommandMonitor(
        "db", {"insert": "c"}, {"documents": [encode({"_id": 1}), {"_id": 2}]}, 7, ("a", 27017)
    )
    started = insert.started()
    assert started.command == {"insert": "c", "documents": [{"_id": 1}, {"_id": 2}], "$db": "db"}
    assert (started.command_name, started.request_id) == ("insert", 7)
    ok = insert.finished({"ok": 1, "n": 2}, 0.5)
    assert isinstance(ok, CommandSucceededEvent) and ok.reply == {"ok": 1, "n": 2}
    refused = insert.finished({"ok": 0, "code": 11000, "errmsg": "dup"}, 0.5)
    assert isinstance(refused, CommandFailedEvent)
    assert isinstance(refused.failure, DuplicateKeyError)
    secret = CommandMonitor("admin", {"saslStart": 1, "payload": b"x"}, None, 8, ("a", 27017))
    assert secret.started().command == {}
    success = secret.finished({"ok": 1, "payload": b"y"}, 0.1)
    assert isinstance(success, CommandSucceededEvent) and success.reply == {}
