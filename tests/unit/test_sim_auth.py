"""SCRAM-SHA-1 / SCRAM-SHA-256 against the simulated server, with scramp's client side."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from sim_wire_client import Client, make_cluster

pytest.importorskip("scramp")

from scramp import ScramClient  # noqa: E402

from mongo_sansio.transports.sim_auth import ScramAuthenticator  # noqa: E402


def _client_password(mechanism: str, user: str, password: str) -> str:
    if mechanism == "SCRAM-SHA-1":
        return hashlib.md5(f"{user}:mongo:{password}".encode()).hexdigest()
    return password


def _cluster() -> Any:
    return make_cluster(authenticator=ScramAuthenticator({"alice": "s3cret", "bob": "pw"}))


def _authenticate(client: Client, mechanism: str, user: str, password: str, *, skip_empty: bool = True) -> dict[str, Any]:
    scram = ScramClient([mechanism], user, _client_password(mechanism, user, password))
    start: dict[str, Any] = {"saslStart": 1, "mechanism": mechanism, "payload": scram.get_client_first().encode()}
    if skip_empty:
        start["options"] = {"skipEmptyExchange": True}
    reply = client.command(start, db="admin")
    if reply["ok"] != 1.0:
        return reply
    assert reply["done"] is False and reply["conversationId"] == 1
    scram.set_server_first(bytes(reply["payload"]).decode())
    reply = client.command(
        {"saslContinue": 1, "conversationId": 1, "payload": scram.get_client_final().encode()}, db="admin"
    )
    if reply["ok"] != 1.0:
        return reply
    scram.set_server_final(bytes(reply["payload"]).decode())
    if not skip_empty:
        assert reply["done"] is False
        reply = client.command({"saslContinue": 1, "conversationId": 1, "payload": b""}, db="admin")
    assert reply["done"] is True
    return reply


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-1", "SCRAM-SHA-256"])
def test_right_password_authenticates(mechanism: str) -> None:
    client = Client(_cluster())
    assert client.command({"find": "c"})["code"] == 13
    assert _authenticate(client, mechanism, "alice", "s3cret")["ok"] == 1.0
    assert client.command({"find": "c"})["ok"] == 1.0


def test_without_skip_empty_exchange_there_is_one_more_round_trip() -> None:
    client = Client(_cluster())
    assert _authenticate(client, "SCRAM-SHA-256", "bob", "pw", skip_empty=False)["ok"] == 1.0
    assert client.command({"find": "c"})["ok"] == 1.0


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-1", "SCRAM-SHA-256"])
def test_wrong_password_is_error_18(mechanism: str) -> None:
    client = Client(_cluster())
    reply = _authenticate(client, mechanism, "alice", "wrong")
    assert (reply["ok"], reply["code"], reply["codeName"], reply["errmsg"]) == (
        0.0, 18, "AuthenticationFailed", "Authentication failed.",
    )
    assert client.command({"find": "c"})["code"] == 13


def test_unknown_user_is_error_18() -> None:
    client = Client(_cluster())
    assert _authenticate(client, "SCRAM-SHA-256", "mallory", "x")["code"] == 18


def test_sasl_supported_mechs() -> None:
    client = Client(_cluster())
    assert client.command({"hello": 1, "saslSupportedMechs": "admin.alice"})["saslSupportedMechs"] == [
        "SCRAM-SHA-1", "SCRAM-SHA-256",
    ]
    assert "saslSupportedMechs" not in client.command({"hello": 1, "saslSupportedMechs": "admin.nobody"})


def test_speculative_authentication() -> None:
    client = Client(_cluster())
    scram = ScramClient(["SCRAM-SHA-256"], "alice", "s3cret")
    hello = client.command({
        "hello": 1,
        "speculativeAuthenticate": {
            "saslStart": 1, "mechanism": "SCRAM-SHA-256", "payload": scram.get_client_first().encode(),
            "db": "admin", "options": {"skipEmptyExchange": True},
        },
    }, db="admin")
    speculative = hello["speculativeAuthenticate"]
    assert speculative["conversationId"] == 1 and speculative["done"] is False
    scram.set_server_first(bytes(speculative["payload"]).decode())
    reply = client.command(
        {"saslContinue": 1, "conversationId": 1, "payload": scram.get_client_final().encode()}, db="admin"
    )
    assert reply["done"] is True
    scram.set_server_final(bytes(reply["payload"]).decode())
    assert client.command({"find": "c"})["ok"] == 1.0


def test_hello_and_ping_need_no_authentication() -> None:
    client = Client(_cluster())
    assert client.command({"hello": 1})["ok"] == 1.0
    assert client.command({"ping": 1})["ok"] == 1.0
