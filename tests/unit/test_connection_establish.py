"""The establish flow (hello, then authentication) against the simulated server's pure side,
and against scripted replies."""

from __future__ import annotations

from collections.abc import Generator, Mapping
from typing import Any

import attrs
import pytest
from sim_wire_client import PRIMARY, make_cluster

from mongo_sansio.bson import ObjectId
from mongo_sansio.connection import (
    AuthenticatorLike,
    Connection,
    ConnectionDescription,
    HandshakeOptions,
    Reply,
    ServerApi,
    establish,
)
from mongo_sansio.errors import (
    AuthenticationError,
    IncompatibleServerError,
    NetworkError,
    ServerError,
)
from mongo_sansio.flow import ConnectionCommand
from mongo_sansio.sdam.description import InvalidHelloReply, ServerType, parse_address
from mongo_sansio.testing.server import ReplicaSet, SaslFailure
from mongo_sansio.wire import RequestIds

METADATA = {"driver": {"name": "mongo-sansio", "version": "1.0"}, "os": {"type": "Linux"}}
ADDRESS = parse_address(PRIMARY)

# -- the server's side of a toy SASL mechanism (the simulator takes an injected authenticator) --


@attrs.define
class _ServerConversation:
    user: str = "alice"

    def step(self, payload: bytes) -> tuple[bytes, bool]:
        if payload != b"client-final":
            raise SaslFailure("wrong proof")
        return b"server-final", True


class ToyServerAuthenticator:
    def mechanisms(self, user: str, database: str) -> list[str] | None:
        return ["SCRAM-SHA-256"] if (user, database) == ("alice", "admin") else None

    def start(
        self, mechanism: str, database: str, payload: bytes
    ) -> tuple[_ServerConversation, bytes, bool]:
        if payload != b"client-first":
            raise SaslFailure("unknown user")
        return _ServerConversation(), b"server-first", False


# -- the client's side: a fake that satisfies AuthenticatorLike ----------------------------------


@attrs.define
class FakeAuthenticator:
    speculative: bool = True
    proof: bytes = b"client-final"
    seen: dict[str, Any] = attrs.Factory(dict)

    def speculative_document(self) -> dict[str, Any] | None:
        if not self.speculative:
            return None
        return {
            "saslStart": 1,
            "mechanism": "SCRAM-SHA-256",
            "payload": b"client-first",
            "db": "admin",
        }

    def flow(
        self,
        *,
        sasl_supported_mechs: tuple[str, ...] | None,
        speculative_reply: Mapping[str, Any] | None,
    ) -> Generator[ConnectionCommand, Mapping[str, Any], None]:
        self.seen = {"mechs": sasl_supported_mechs, "speculative": speculative_reply}
        if speculative_reply is None:
            mechanism = (sasl_supported_mechs or ("SCRAM-SHA-1",))[0]
            start = {"saslStart": 1, "mechanism": mechanism, "payload": b"client-first"}
            reply = yield ConnectionCommand(db="admin", body=start)
        else:
            reply = speculative_reply
        steps = 0
        payload = self.proof
        while not reply.get("done"):
            body = {
                "saslContinue": 1,
                "conversationId": reply["conversationId"],
                "payload": payload,
            }
            reply = yield ConnectionCommand(db="admin", body=body)
            if reply.get("ok") != 1:
                raise AuthenticationError("refused", code=reply.get("code"))
            payload = b""
            steps += 1
        self.seen["steps"] = steps


def _check_protocol(authenticator: FakeAuthenticator) -> AuthenticatorLike:
    return authenticator  # mypy checks the fake against the protocol here


def drive(
    flow: Generator[ConnectionCommand, Mapping[str, Any], ConnectionDescription],
    cluster: ReplicaSet,
    conn: Connection,
) -> tuple[ConnectionDescription, list[ConnectionCommand]]:
    """What an adapter does: run each request on the connection, send the reply back."""
    server = cluster.connect(PRIMARY, 100.0)
    requests = []
    try:
        request = next(flow)
        while True:
            requests.append(request)
            for part in conn.send_command(request.db, request.body, op_query=request.op_query):
                server.receive_data(bytes(part), 100.0)
            conn.receive_data(server.data_to_send())
            reply = conn.next_reply()
            assert isinstance(reply, Reply)
            request = flow.send(reply.document)
    except StopIteration as stop:
        description: ConnectionDescription = stop.value
    conn.set_description(description)
    # the connection is usable afterwards (authenticated when the cluster requires it)
    for part in conn.send_command("shop", {"find": "orders", "filter": {}}):
        server.receive_data(bytes(part), 100.0)
    conn.receive_data(server.data_to_send())
    found = conn.next_reply()
    assert isinstance(found, Reply) and found.document["ok"] == 1.0, found
    return description, requests


def new_connection(**kwargs: Any) -> Connection:
    return Connection(ADDRESS, request_ids=RequestIds(), **kwargs)


# -- against the simulator ---------------------------------------------------------------------


def test_handshake_without_authentication() -> None:
    options = HandshakeOptions(compressors=("zstd",))
    flow = establish(address=ADDRESS, options=options, metadata=METADATA, authenticator=None)
    description, requests = drive(flow, make_cluster(), conn := new_connection())
    (hello,) = requests
    assert hello.db == "admin" and hello.op_query is True
    assert hello.body["isMaster"] == 1 and hello.body["client"] == METADATA
    assert description.server_type is ServerType.RS_PRIMARY
    assert description.compressor == "zstd" and conn.compressor == "zstd"
    assert description.max_wire_version == 21


def test_speculative_authentication() -> None:
    cluster = make_cluster(authenticator=ToyServerAuthenticator())
    authenticator = FakeAuthenticator()
    options = HandshakeOptions(sasl_supported_mechs_user="admin.alice")
    flow = establish(
        address=ADDRESS,
        options=options,
        metadata=METADATA,
        authenticator=_check_protocol(authenticator),
    )
    description, requests = drive(flow, cluster, new_connection())
    hello = requests[0].body
    assert hello["speculativeAuthenticate"] == authenticator.speculative_document()
    assert hello["saslSupportedMechs"] == "admin.alice"
    assert authenticator.seen["mechs"] == ("SCRAM-SHA-256",)
    speculative = authenticator.seen["speculative"]
    assert speculative is not None and speculative["payload"] == b"server-first"
    assert description.speculative_authenticate == speculative
    assert [request.body.get("saslContinue") for request in requests[1:]] == [1, 1]


def test_authentication_without_speculation() -> None:
    cluster = make_cluster(authenticator=ToyServerAuthenticator())
    authenticator = FakeAuthenticator(speculative=False)
    options = HandshakeOptions(sasl_supported_mechs_user="admin.alice")
    flow = establish(
        address=ADDRESS, options=options, metadata=METADATA, authenticator=authenticator
    )
    _, requests = drive(flow, cluster, new_connection())
    assert "speculativeAuthenticate" not in requests[0].body
    assert authenticator.seen["speculative"] is None
    assert requests[1].body["saslStart"] == 1
    assert requests[1].body["mechanism"] == "SCRAM-SHA-256"  # from saslSupportedMechs


def test_stable_api_handshake_uses_hello_over_op_msg() -> None:
    server_api = ServerApi("1", strict=True)
    options = HandshakeOptions(server_api=server_api)
    flow = establish(address=ADDRESS, options=options, metadata=METADATA)
    _, requests = drive(flow, make_cluster(), new_connection(server_api=server_api))
    assert requests[0].op_query is False
    assert requests[0].body["hello"] == 1 and requests[0].body["apiVersion"] == "1"


def test_load_balanced_mode_needs_a_service_id() -> None:
    options = HandshakeOptions(load_balanced=True)
    flow = establish(address=ADDRESS, options=options, metadata=METADATA)
    with pytest.raises(IncompatibleServerError, match="load balancing mode"):
        drive(flow, make_cluster(), new_connection())


# -- scripted replies --------------------------------------------------------------------------


def started(
    options: HandshakeOptions | None = None, authenticator: FakeAuthenticator | None = None
) -> tuple[Generator[ConnectionCommand, Mapping[str, Any], ConnectionDescription], Any]:
    flow = establish(
        address=ADDRESS,
        options=options or HandshakeOptions(),
        metadata=METADATA,
        authenticator=authenticator,
    )
    return flow, next(flow)


@pytest.mark.parametrize(
    ("low", "high", "words"),
    [(0, 6, "requires at least 7"), (26, 27, "only supports 7 through 25")],
)
def test_incompatible_wire_versions(low: int, high: int, words: str) -> None:
    authenticator = FakeAuthenticator()
    flow, _ = started(authenticator=authenticator)
    with pytest.raises(IncompatibleServerError, match=words):
        flow.send({"ok": 1, "ismaster": True, "minWireVersion": low, "maxWireVersion": high})
    assert authenticator.seen == {}  # authentication never started


def test_failed_hello_raises_the_server_error() -> None:
    authenticator = FakeAuthenticator()
    flow, _ = started(authenticator=authenticator)
    with pytest.raises(ServerError) as caught:
        flow.send({"ok": 0, "errmsg": "not allowed", "code": 13, "codeName": "Unauthorized"})
    assert caught.value.code == 13
    assert authenticator.seen == {}


def test_malformed_hello_reply() -> None:
    flow, _ = started()
    with pytest.raises(InvalidHelloReply, match="maxWireVersion"):
        flow.send({"ok": 1, "maxWireVersion": "21"})


def test_network_error_propagates() -> None:
    flow, _ = started()
    with pytest.raises(NetworkError, match="reset"):
        flow.throw(NetworkError("connection reset"))


def test_load_balanced_scripted_reply() -> None:
    flow, request = started(HandshakeOptions(load_balanced=True))
    assert request.op_query is False and request.body["loadBalanced"] is True
    service = ObjectId()
    with pytest.raises(StopIteration) as stop:
        flow.send({"ok": 1, "isWritablePrimary": True, "maxWireVersion": 21, "serviceId": service})
    description = stop.value.value
    assert description.service_id == service
    assert description.server_type is ServerType.LOAD_BALANCER


def test_without_authentication_the_simulator_refuses_commands() -> None:
    """What makes the authenticated runs above meaningful: drive's closing find fails here."""
    cluster = make_cluster(authenticator=ToyServerAuthenticator())
    flow = establish(address=ADDRESS, options=HandshakeOptions(), metadata=METADATA)
    with pytest.raises(AssertionError, match="'ok': 0"):
        drive(flow, cluster, new_connection())


def test_wrong_proof_fails_authentication() -> None:
    cluster = make_cluster(authenticator=ToyServerAuthenticator())
    authenticator = FakeAuthenticator(proof=b"forged")
    flow = establish(
        address=ADDRESS, options=HandshakeOptions(), metadata=METADATA, authenticator=authenticator
    )
    with pytest.raises(AuthenticationError) as caught:
        drive(flow, cluster, new_connection())
    assert caught.value.code == 18
