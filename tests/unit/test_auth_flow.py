"""The authentication flow: driven with scripted replies (the auth spec's own conversations),
against scramp's server side, and against the simulated replica set over the wire."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable, Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mongo_sansio.auth import Authenticator, SASLprepError, ScramCache
from mongo_sansio.auth.mechanisms import AuthFlow
from mongo_sansio.bson import Binary
from mongo_sansio.errors import (
    AuthenticationError,
    ConfigurationError,
    InvalidOperation,
    NetworkError,
    ServerError,
)
from mongo_sansio.flow import ConnectionCommand
from mongo_sansio.uri.credential import Credential

SHA1_NONCE = base64.b64decode("fyko+d2lbbFgONRv9qkxdawL")
SHA256_NONCE = base64.b64decode("rOprNGfwEbeRWgbNEkqO")
NONCE = bytes(range(24))


def b64(text: str) -> bytes:
    return base64.b64decode(text)


def credential(
    mechanism: str | None = None,
    user: str | None = "user",
    password: str | None = "pencil",
    source: str = "admin",
) -> Credential:
    return Credential(mechanism, user, password, source)


def drive(flow: AuthFlow, replies: list[Any]) -> list[ConnectionCommand]:
    """Run ``flow`` answering its requests with ``replies`` in order; the requests it made."""
    requests: list[ConnectionCommand] = []
    answers = iter(replies)
    try:
        request = next(flow)
        while True:
            requests.append(request)
            request = flow.send(next(answers))
    except StopIteration:
        pass
    assert next(answers, None) is None, "the flow ended before using every reply"
    return requests


def drive_server(
    flow: AuthFlow, server: Callable[[ConnectionCommand], Mapping[str, Any]]
) -> list[ConnectionCommand]:
    requests: list[ConnectionCommand] = []
    try:
        request = next(flow)
        while True:
            requests.append(request)
            assert len(requests) < 10
            request = flow.send(server(request))
    except StopIteration:
        return requests


# The auth spec's SCRAM-SHA-1 conversation over MongoDB's SASL commands.
SHA1_START = b64("biwsbj11c2VyLHI9ZnlrbytkMmxiYkZnT05Sdjlxa3hkYXdM")
SHA1_SERVER_FIRST = b64(
    "cj1meWtvK2QybGJiRmdPTlJ2OXFreGRhd0xIbytWZ2s3cXZVT0tVd3VXTElXZzRsLzlTcmFHTUhFRSxzPXJROVpZM01udEJldVAzRTFURFZDNHc9PSxpPTEwMDAw"
)
SHA1_CLIENT_FINAL = b64(
    "Yz1iaXdzLHI9ZnlrbytkMmxiYkZnT05Sdjlxa3hkYXdMSG8rVmdrN3F2VU9LVXd1V0xJV2c0bC85U3JhR01IRUUscD1NQzJUOEJ2Ym1XUmNrRHc4b1dsNUlWZ2h3Q1k9"
)
SHA1_SERVER_FINAL = b64("dj1VTVdlSTI1SkQxeU5ZWlJNcFo0Vkh2aFo5ZTA9")
# ... and its SCRAM-SHA-256 one.
SHA256_START = b64("biwsbj11c2VyLHI9ck9wck5HZndFYmVSV2diTkVrcU8=")
SHA256_SERVER_FIRST = b64(
    "cj1yT3ByTkdmd0ViZVJXZ2JORWtxTyVodllEcFdVYTJSYVRDQWZ1eEZJbGopaE5sRiRrMCxzPVcyMlphSjBTTlk3c29Fc1VFamI2Z1E9PSxpPTQwOTY="
)
SHA256_CLIENT_FINAL = b64(
    "Yz1iaXdzLHI9ck9wck5HZndFYmVSV2diTkVrcU8laHZZRHBXVWEyUmFUQ0FmdXhGSWxqKWhObEYkazAscD1kSHpiWmFwV0lrNGpVaE4rVXRlOXl0YWc5empmTUhnc3FtbWl6N0FuZFZRPQ=="
)
SHA256_SERVER_FINAL = b64("dj02cnJpVFJCaTIzV3BSUi93dHVwK21NaFVaVW4vZEI1bkxUSlJzamw5NUc0PQ==")


def sasl(
    payload: bytes, done: bool, conversation_id: int = 1, payload_type: type = Binary
) -> dict[str, Any]:
    return {
        "conversationId": conversation_id,
        "payload": payload_type(payload),
        "done": done,
        "ok": 1.0,
    }


def start_body(mechanism: str, payload: bytes) -> dict[str, Any]:
    return {
        "saslStart": 1,
        "mechanism": mechanism,
        "payload": payload,
        "autoAuthorize": 1,
        "options": {"skipEmptyExchange": True},
    }


def continue_body(payload: bytes, conversation_id: int = 1) -> dict[str, Any]:
    return {"saslContinue": 1, "conversationId": conversation_id, "payload": payload}


def assert_binary_payloads(requests: list[ConnectionCommand]) -> None:
    for request in requests:
        payload = request.body["payload"]
        assert isinstance(payload, Binary) and payload.subtype == 0


# --- the auth spec's conversations ---------------------------------------------------------------


def test_spec_sha1_conversation_short() -> None:
    auth = Authenticator(credential("SCRAM-SHA-1"), nonce=SHA1_NONCE)
    flow = auth.flow(sasl_supported_mechs=None, speculative_reply=None)
    requests = drive(flow, [sasl(SHA1_SERVER_FIRST, False), sasl(SHA1_SERVER_FINAL, True)])
    assert requests == [
        ConnectionCommand("admin", start_body("SCRAM-SHA-1", SHA1_START)),
        ConnectionCommand("admin", continue_body(SHA1_CLIENT_FINAL)),
    ]
    assert_binary_payloads(requests)


def test_spec_sha1_conversation_with_the_extra_round_trip_of_older_servers() -> None:
    auth = Authenticator(credential("SCRAM-SHA-1"), nonce=SHA1_NONCE)
    flow = auth.flow(sasl_supported_mechs=None, speculative_reply=None)
    requests = drive(
        flow,
        [sasl(SHA1_SERVER_FIRST, False), sasl(SHA1_SERVER_FINAL, False), sasl(b"", True)],
    )
    assert [r.body for r in requests[1:]] == [continue_body(SHA1_CLIENT_FINAL), continue_body(b"")]
    assert_binary_payloads(requests)


def test_extra_round_trip_that_never_finishes() -> None:
    auth = Authenticator(credential("SCRAM-SHA-1"), nonce=SHA1_NONCE)
    flow = auth.flow(sasl_supported_mechs=None, speculative_reply=None)
    with pytest.raises(AuthenticationError, match="did not complete") as caught:
        drive(
            flow, [sasl(SHA1_SERVER_FIRST, False), sasl(SHA1_SERVER_FINAL, False), sasl(b"", False)]
        )
    assert caught.value.code is None


@pytest.mark.parametrize("payload_type", [Binary, bytes])
def test_spec_sha256_conversation_negotiated(payload_type: type) -> None:
    auth = Authenticator(credential(None), nonce=SHA256_NONCE)
    flow = auth.flow(sasl_supported_mechs=["SCRAM-SHA-1", "SCRAM-SHA-256"], speculative_reply=None)
    requests = drive(
        flow,
        [
            sasl(SHA256_SERVER_FIRST, False, payload_type=payload_type),
            sasl(SHA256_SERVER_FINAL, True, payload_type=payload_type),
        ],
    )
    assert [r.body for r in requests] == [
        start_body("SCRAM-SHA-256", SHA256_START),
        continue_body(SHA256_CLIENT_FINAL),
    ]


def test_server_that_does_not_prove_the_password() -> None:
    auth = Authenticator(credential("SCRAM-SHA-256"), nonce=SHA256_NONCE)
    flow = auth.flow(sasl_supported_mechs=None, speculative_reply=None)
    with pytest.raises(AuthenticationError, match="could not prove it knows the password"):
        drive(flow, [sasl(SHA256_SERVER_FIRST, False), sasl(SHA1_SERVER_FINAL, True)])


# --- negotiation ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mechs", "chosen"),
    [
        (["SCRAM-SHA-1", "SCRAM-SHA-256"], "SCRAM-SHA-256"),
        (["SCRAM-SHA-256"], "SCRAM-SHA-256"),
        (("SCRAM-SHA-256", "PLAIN"), "SCRAM-SHA-256"),
        (["SCRAM-SHA-1"], "SCRAM-SHA-1"),
        ([], "SCRAM-SHA-1"),
        (["GSSAPI", "SOMETHING-NEW", 7], "SCRAM-SHA-1"),  # unknown entries are no error
        (["PLAIN"], "SCRAM-SHA-1"),  # never anything but SCRAM by default
        (None, "SCRAM-SHA-1"),  # field absent: a 3.0+ server, SCRAM-SHA-1
        ("SCRAM-SHA-256", "SCRAM-SHA-1"),  # not a list: ignored
    ],
)
def test_negotiation(mechs: Any, chosen: str) -> None:
    auth = Authenticator(credential(None), nonce=NONCE)
    request = next(auth.flow(sasl_supported_mechs=mechs, speculative_reply=None))
    assert request.body["mechanism"] == chosen


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-1", "SCRAM-SHA-256"])
def test_a_given_mechanism_is_honoured_whatever_the_server_lists(mechanism: str) -> None:
    auth = Authenticator(credential(mechanism), nonce=NONCE)
    mechs = ["SCRAM-SHA-1"] if mechanism == "SCRAM-SHA-256" else ["SCRAM-SHA-256"]
    assert (
        next(auth.flow(sasl_supported_mechs=mechs, speculative_reply=None)).body["mechanism"]
        == mechanism
    )


# --- speculative authentication ------------------------------------------------------------------


def test_speculative_document_defaults_to_sha256() -> None:
    auth = Authenticator(credential(None), nonce=SHA256_NONCE)
    document = auth.speculative_document()
    assert document == {**start_body("SCRAM-SHA-256", SHA256_START), "db": "admin"}
    assert auth.speculative_document() == document  # one speculation per connection
    assert Authenticator(credential("SCRAM-SHA-1"), nonce=SHA1_NONCE).speculative_document() == {
        **start_body("SCRAM-SHA-1", SHA1_START),
        "db": "admin",
    }


@pytest.mark.parametrize("mechs", [None, ["SCRAM-SHA-1"], ["SCRAM-SHA-1", "SCRAM-SHA-256"]])
def test_speculative_conversation_continues(mechs: Any) -> None:
    auth = Authenticator(credential(None), nonce=SHA256_NONCE)
    auth.speculative_document()
    speculative_reply = {"conversationId": 7, "payload": SHA256_SERVER_FIRST, "done": False}
    flow = auth.flow(sasl_supported_mechs=mechs, speculative_reply=speculative_reply)
    requests = drive(flow, [sasl(SHA256_SERVER_FINAL, True, conversation_id=7)])
    assert [r.body for r in requests] == [continue_body(SHA256_CLIENT_FINAL, conversation_id=7)]


def test_speculative_conversation_with_the_extra_round_trip() -> None:
    auth = Authenticator(credential("SCRAM-SHA-256"), nonce=SHA256_NONCE)
    auth.speculative_document()
    flow = auth.flow(sasl_supported_mechs=None, speculative_reply=sasl(SHA256_SERVER_FIRST, False))
    requests = drive(flow, [sasl(SHA256_SERVER_FINAL, False), sasl(b"", True)])
    assert [r.body for r in requests] == [continue_body(SHA256_CLIENT_FINAL), continue_body(b"")]


def test_without_a_speculative_reply_authentication_starts_over() -> None:
    auth = Authenticator(credential(None), nonce=SHA1_NONCE)
    assert auth.speculative_document() is not None  # SCRAM-SHA-256 speculation, unanswered
    flow = auth.flow(sasl_supported_mechs=["SCRAM-SHA-1"], speculative_reply=None)
    requests = drive(flow, [sasl(SHA1_SERVER_FIRST, False), sasl(SHA1_SERVER_FINAL, True)])
    assert [r.body for r in requests] == [
        start_body("SCRAM-SHA-1", SHA1_START),
        continue_body(SHA1_CLIENT_FINAL),
    ]


@pytest.mark.parametrize(
    "reply",
    [
        {"conversationId": 1, "payload": SHA256_SERVER_FIRST, "done": True},  # done before proof
        {"conversationId": 1, "payload": SHA256_SERVER_FIRST, "done": False, "ok": 0},
        {"payload": SHA256_SERVER_FIRST, "done": False},
        {"conversationId": 1, "done": False},
        {"conversationId": 1, "payload": "cj1yT3By", "done": False},  # text, not binary
        {"conversationId": True, "payload": SHA256_SERVER_FIRST, "done": False},
        {"conversationId": 1, "payload": SHA256_SERVER_FIRST, "done": "no"},
        {
            "conversationId": 1,
            "payload": b"r=somebody-else,s=QSXCR+Q6sek8bf92,i=4096",
            "done": False,
        },
        "not a document",
    ],
)
def test_bad_speculative_reply(reply: Any) -> None:
    auth = Authenticator(credential(None), nonce=SHA256_NONCE)
    auth.speculative_document()
    with pytest.raises(AuthenticationError):
        drive(auth.flow(sasl_supported_mechs=None, speculative_reply=reply), [])


# --- the server says no, or says nonsense --------------------------------------------------------

AUTH_FAILED = {
    "ok": 0.0,
    "code": 18,
    "codeName": "AuthenticationFailed",
    "errmsg": "Authentication failed.",
}


@pytest.mark.parametrize("step", [0, 1, 2])
def test_ok_0_becomes_authentication_error_with_the_code(step: int) -> None:
    # Until the server's final message nothing checks the password, so any will do; the third
    # step needs the spec's one to get past the server's proof.
    password = "pencil" if step == 2 else "hunter2"
    auth = Authenticator(credential("SCRAM-SHA-1", password=password), nonce=SHA1_NONCE)
    good = [sasl(SHA1_SERVER_FIRST, False), sasl(SHA1_SERVER_FINAL, False)]
    with pytest.raises(AuthenticationError) as caught:
        drive(
            auth.flow(sasl_supported_mechs=None, speculative_reply=None),
            good[:step] + [AUTH_FAILED],
        )
    error = caught.value
    assert not isinstance(error, ServerError)
    assert error.code == 18
    assert str(error) == (
        "SCRAM-SHA-1 authentication failed: Authentication failed. (code 18, AuthenticationFailed)"
    )
    assert password not in str(error) and password not in repr(vars(error))


@pytest.mark.parametrize(
    "reply",
    [
        {"ok": 0},
        {},
        {"ok": 0, "code": "18", "errmsg": 5},
        {"ok": False, "code": True},
        None,
        ["ok", 1],
    ],
)
def test_failed_replies_without_a_usable_code(reply: Any) -> None:
    auth = Authenticator(credential("SCRAM-SHA-256"), nonce=NONCE)
    with pytest.raises(AuthenticationError) as caught:
        drive(auth.flow(sasl_supported_mechs=None, speculative_reply=None), [reply])
    assert caught.value.code is None


def test_first_reply_done_before_the_server_proved_anything() -> None:
    auth = Authenticator(credential("SCRAM-SHA-256"), nonce=SHA256_NONCE)
    with pytest.raises(AuthenticationError, match="before proving"):
        drive(
            auth.flow(sasl_supported_mechs=None, speculative_reply=None),
            [sasl(SHA256_SERVER_FIRST, True)],
        )


def test_network_error_passes_through() -> None:
    auth = Authenticator(credential("SCRAM-SHA-256"), nonce=NONCE)
    flow = auth.flow(sasl_supported_mechs=None, speculative_reply=None)
    next(flow)
    with pytest.raises(NetworkError):
        flow.throw(NetworkError("connection reset"))


_REPLY_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-2, 2),
    st.floats(allow_nan=True),
    st.text(max_size=8),
    st.binary(max_size=40),
    st.sampled_from([SHA256_SERVER_FIRST, SHA256_SERVER_FINAL, b"v=", b"e=x"]),
)
_REPLIES = st.one_of(
    st.dictionaries(
        st.sampled_from(["ok", "conversationId", "payload", "done", "code", "errmsg", "codeName"]),
        _REPLY_VALUES,
        max_size=7,
    ),
    _REPLY_VALUES,
)


@settings(max_examples=400, deadline=None)
@given(
    mechanism=st.sampled_from([None, "SCRAM-SHA-256", "PLAIN", "MONGODB-X509"]),
    replies=st.lists(_REPLIES, min_size=1, max_size=4),
)
def test_garbage_replies_are_only_ever_authentication_errors(
    mechanism: str | None, replies: list[Any]
) -> None:
    cred = credential(
        mechanism,
        password=None if mechanism == "MONGODB-X509" else "pencil",
        source="$external" if mechanism in ("PLAIN", "MONGODB-X509") else "admin",
    )
    auth = Authenticator(cred, nonce=SHA256_NONCE, cache=_SHARED_CACHE)
    flow = auth.flow(sasl_supported_mechs=["SCRAM-SHA-256"], speculative_reply=None)
    try:
        request = next(flow)
        for reply in replies:
            request = flow.send(reply)
    except StopIteration:
        return
    except AuthenticationError as error:
        assert "pencil" not in str(error)
        return
    assert isinstance(request, ConnectionCommand)


_SHARED_CACHE = ScramCache()


# --- PLAIN and MONGODB-X509 ----------------------------------------------------------------------


def test_plain_spec_example() -> None:
    auth = Authenticator(credential("PLAIN", source="$external"), nonce=NONCE)
    assert auth.speculative_document() is None
    flow = auth.flow(sasl_supported_mechs=None, speculative_reply=None)
    requests = drive(flow, [{"conversationId": 1, "payload": b"", "done": True, "ok": 1}])
    assert requests == [
        ConnectionCommand(
            "$external",
            {
                "saslStart": 1,
                "mechanism": "PLAIN",
                "payload": b64("AHVzZXIAcGVuY2ls"),
                "autoAuthorize": 1,
            },
        )
    ]
    assert_binary_payloads(requests)


def test_plain_sends_the_password_as_typed() -> None:
    # RFC 4616: the password production is form-free; preparing it is the server's business.
    auth = Authenticator(credential("PLAIN", password="I\u00adX"), nonce=NONCE)
    request = next(auth.flow(sasl_supported_mechs=None, speculative_reply=None))
    assert request.body["payload"] == "\x00user\x00I\u00adX".encode()


def test_plain_failures() -> None:
    auth = Authenticator(credential("PLAIN"), nonce=NONCE)
    with pytest.raises(AuthenticationError, match="did not complete"):
        drive(
            auth.flow(sasl_supported_mechs=None, speculative_reply=None),
            [{"conversationId": 1, "payload": b"", "done": False, "ok": 1}],
        )
    auth = Authenticator(credential("PLAIN"), nonce=NONCE)
    with pytest.raises(AuthenticationError) as caught:
        drive(auth.flow(sasl_supported_mechs=None, speculative_reply=None), [AUTH_FAILED])
    assert caught.value.code == 18 and str(caught.value).startswith("PLAIN authentication failed")
    for bad in ("pen\x00cil", "pen\ud800"):
        with pytest.raises(ConfigurationError) as refused:
            Authenticator(credential("PLAIN", password=bad), nonce=NONCE)
        assert bad not in str(refused.value)


@pytest.mark.parametrize(
    "user", [None, "C=IS,ST=Reykjavik,L=Reykjavik,O=MongoDB,OU=Drivers,CN=client"]
)
def test_x509(user: str | None) -> None:
    command: dict[str, Any] = {"authenticate": 1, "mechanism": "MONGODB-X509"}
    if user is not None:
        command["user"] = user
    auth = Authenticator(
        credential("MONGODB-X509", user=user, password=None, source="$external"), nonce=NONCE
    )
    requests = drive(
        auth.flow(sasl_supported_mechs=None, speculative_reply=None),
        [{"dbname": "$external", "user": user or "CN=client", "ok": 1}],
    )
    assert requests == [ConnectionCommand("$external", command)]

    speculative = Authenticator(
        credential("MONGODB-X509", user=user, password=None, source="$external"), nonce=NONCE
    )
    assert speculative.speculative_document() == {**command, "db": "$external"}
    flow = speculative.flow(
        sasl_supported_mechs=None, speculative_reply={"dbname": "$external", "user": "x"}
    )
    assert drive(flow, []) == []  # already done with hello


def test_x509_refused() -> None:
    auth = Authenticator(
        credential("MONGODB-X509", user=None, password=None, source="$external"), nonce=NONCE
    )
    with pytest.raises(AuthenticationError) as caught:
        drive(auth.flow(sasl_supported_mechs=None, speculative_reply=None), [AUTH_FAILED])
    assert caught.value.code == 18


# --- construction and misuse ---------------------------------------------------------------------


@pytest.mark.parametrize("mechanism", ["GSSAPI", "MONGODB-AWS", "MONGODB-OIDC", "MONGODB-CR"])
def test_unsupported_mechanisms(mechanism: str) -> None:
    with pytest.raises(ConfigurationError, match=f"authMechanism {mechanism} is not supported yet"):
        Authenticator(credential(mechanism, source="$external"), nonce=NONCE)


def test_construction_checks() -> None:
    with pytest.raises(ConfigurationError, match="nonce"):
        Authenticator(credential(), nonce=b"short")
    with pytest.raises(ConfigurationError, match="nonce"):
        Authenticator(credential(), nonce="a string nonce of some length")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="needs a username and a password"):
        Authenticator(credential(password=None), nonce=NONCE)
    with pytest.raises(ConfigurationError, match="needs a username and a password"):
        Authenticator(credential("SCRAM-SHA-256", user=None), nonce=NONCE)


def test_misuse() -> None:
    auth = Authenticator(credential(), nonce=NONCE)
    with pytest.raises(InvalidOperation, match="speculative"):
        auth.flow(sasl_supported_mechs=None, speculative_reply={"conversationId": 1})
    auth.flow(sasl_supported_mechs=None, speculative_reply=None)
    with pytest.raises(InvalidOperation, match="one conversation"):
        auth.flow(sasl_supported_mechs=None, speculative_reply=None)


def test_repr_hides_the_password() -> None:
    auth = Authenticator(credential("SCRAM-SHA-256", password="hunter2"), nonce=NONCE)
    assert "hunter2" not in repr(auth) and "hunter2" not in str(auth)
    assert repr(auth) == (
        "Authenticator(mechanism='SCRAM-SHA-256', username='user', source='admin', password=<hidden>)"
    )


# --- the cache across connections ----------------------------------------------------------------


def test_cache_spares_pbkdf2_on_the_next_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Any] = []
    real = hashlib.pbkdf2_hmac

    def counting(*args: Any) -> bytes:
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(hashlib, "pbkdf2_hmac", counting)
    cache = ScramCache()
    for _ in range(3):
        auth = Authenticator(credential("SCRAM-SHA-256"), nonce=SHA256_NONCE, cache=cache)
        drive(
            auth.flow(sasl_supported_mechs=None, speculative_reply=None),
            [sasl(SHA256_SERVER_FIRST, False), sasl(SHA256_SERVER_FINAL, True)],
        )
    assert len(calls) == 1 and len(cache) == 1
    # another password with the same salt and count derives its own keys, and fails
    auth = Authenticator(
        credential("SCRAM-SHA-256", password="pencil!"), nonce=SHA256_NONCE, cache=cache
    )
    with pytest.raises(AuthenticationError, match="could not prove"):
        drive(
            auth.flow(sasl_supported_mechs=None, speculative_reply=None),
            [sasl(SHA256_SERVER_FIRST, False), sasl(SHA256_SERVER_FINAL, True)],
        )
    assert len(calls) == 2 and len(cache) == 2


# --- against scramp's server ---------------------------------------------------------------------

scramp = pytest.importorskip("scramp")


class ScrampServer:
    """A SASL command handler around scramp's server (skipEmptyExchange honoured or not)."""

    def __init__(
        self, mechanism: str, user: str, password: str, *, skip_empty: bool = True
    ) -> None:
        stored = (
            hashlib.md5(f"{user}:mongo:{password}".encode()).hexdigest()
            if mechanism == "SCRAM-SHA-1"
            else password
        )
        self.m = scramp.ScramMechanism(mechanism)
        self.info = self.m.make_auth_info(stored, iteration_count=4096)
        self.mechanism = mechanism
        self.skip_empty = skip_empty
        self.server: Any = None
        self.state = "start"

    def __call__(self, request: ConnectionCommand) -> dict[str, Any]:
        body = request.body
        if self.state == "start":
            assert body["saslStart"] == 1 and body["mechanism"] == self.mechanism
            self.server = self.m.make_server(lambda _user: self.info)
            self.server.set_client_first(bytes(body["payload"]).decode())
            self.state = "first"
            return sasl(self.server.get_server_first().encode(), False)
        if self.state == "first":
            assert body["conversationId"] == 1
            try:
                self.server.set_client_final(bytes(body["payload"]).decode())
            except scramp.ScramException:
                return AUTH_FAILED
            self.state = "final" if not self.skip_empty else "done"
            return sasl(self.server.get_server_final().encode(), self.skip_empty)
        assert self.state == "final" and body["payload"] == b""
        self.state = "done"
        return sasl(b"", True)


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-1", "SCRAM-SHA-256"])
@pytest.mark.parametrize("skip_empty", [True, False])
@pytest.mark.parametrize("password", ["pencil", "p\u00e4ss w\u00f6rd", "\u2163"])
def test_against_scramp(mechanism: str, skip_empty: bool, password: str) -> None:
    server = ScrampServer(mechanism, "user", password, skip_empty=skip_empty)
    auth = Authenticator(credential(mechanism, password=password), nonce=NONCE)
    drive_server(auth.flow(sasl_supported_mechs=None, speculative_reply=None), server)
    assert server.state == "done"


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-1", "SCRAM-SHA-256"])
def test_against_scramp_wrong_password(mechanism: str) -> None:
    server = ScrampServer(mechanism, "user", "pencil")
    auth = Authenticator(credential(mechanism, password="pencil2"), nonce=NONCE)
    with pytest.raises(AuthenticationError) as caught:
        drive_server(auth.flow(sasl_supported_mechs=None, speculative_reply=None), server)
    assert caught.value.code == 18


# --- against the simulated replica set, over the wire -------------------------------------------


def _sim_client() -> Any:
    sim_wire_client = pytest.importorskip("sim_wire_client")
    sim_auth = pytest.importorskip("mongo_sansio.transports.sim_auth")
    cluster = sim_wire_client.make_cluster(
        authenticator=sim_auth.ScramAuthenticator({"alice": "s3cret"})
    )
    return sim_wire_client.Client(cluster)


def _handshake_and_authenticate(client: Any, auth: Authenticator, *, speculate: bool) -> None:
    hello: dict[str, Any] = {"hello": 1}
    if auth.credential.mechanism is None:  # the handshake asks, with the raw user name
        hello["saslSupportedMechs"] = f"{auth.credential.source}.{auth.credential.username}"
    if speculate and (document := auth.speculative_document()) is not None:
        hello["speculativeAuthenticate"] = document
    reply = client.command(hello, db="admin")
    flow = auth.flow(
        sasl_supported_mechs=reply.get("saslSupportedMechs"),
        speculative_reply=reply.get("speculativeAuthenticate"),
    )
    drive_server(flow, lambda request: client.command(dict(request.body), db=request.db))


@pytest.mark.parametrize("mechanism", [None, "SCRAM-SHA-1", "SCRAM-SHA-256"])
@pytest.mark.parametrize("speculate", [True, False])
def test_simulated_server(mechanism: str | None, speculate: bool) -> None:
    client = _sim_client()
    assert client.command({"find": "c"})["code"] == 13  # Unauthorized
    auth = Authenticator(Credential(mechanism, "alice", "s3cret", "admin"), nonce=NONCE)
    _handshake_and_authenticate(client, auth, speculate=speculate)
    assert client.command({"find": "c"})["ok"] == 1.0


@pytest.mark.parametrize("speculate", [True, False])
def test_simulated_server_wrong_password(speculate: bool) -> None:
    client = _sim_client()
    auth = Authenticator(Credential(None, "alice", "wrong", "admin"), nonce=NONCE)
    with pytest.raises(AuthenticationError) as caught:
        _handshake_and_authenticate(client, auth, speculate=speculate)
    assert caught.value.code == 18 and "wrong" not in str(caught.value)


def test_password_sasl_prep_refuses() -> None:
    # With no mechanism given, such a password may still work with SCRAM-SHA-1 (no SASLprep):
    # no speculation, and negotiation decides.
    auth = Authenticator(credential(None, password="pw\u0007"), nonce=SHA1_NONCE)
    assert auth.speculative_document() is None
    request = next(auth.flow(sasl_supported_mechs=["SCRAM-SHA-1"], speculative_reply=None))
    assert request.body["mechanism"] == "SCRAM-SHA-1"
    auth = Authenticator(credential(None, password="pw\u0007"), nonce=SHA1_NONCE)
    with pytest.raises(SASLprepError):
        auth.flow(sasl_supported_mechs=["SCRAM-SHA-256"], speculative_reply=None)
    with pytest.raises(SASLprepError):
        Authenticator(
            credential("SCRAM-SHA-256", password="pw\u0007"), nonce=NONCE
        ).speculative_document()
