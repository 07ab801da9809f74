"""MONGODB-OIDC's pure parts: the flows driven by hand, the token sources' requests and
answers, ALLOWED_HOSTS, the simulator's HS256 verification, and the runtime's HTTP GET."""

from __future__ import annotations

import base64
import http.server
import json
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mongo_sansio.auth.oidc import (
    OidcAuthenticator,
    OidcCache,
    OIDCCallbackResult,
    _idp_info,
)
from mongo_sansio.auth.oidc_providers import (
    CallbackOutcome,
    CallOidcCallback,
    FileOutcome,
    HttpOutcome,
    OidcHttpGet,
    ReadTokenFile,
    environment_request,
    host_allowed,
    quote,
    read_callback_result,
    token_from_environment,
)
from mongo_sansio.bson import decode, encode
from mongo_sansio.client.runtime import Wait
from mongo_sansio.errors import AuthenticationError, ConfigurationError
from mongo_sansio.flow import ConnectionCommand, Now, Sleep
from mongo_sansio.testing.server.auth import SaslFailure
from mongo_sansio.testing.server.oidc import OidcIssuer, mint_hs256, verify_hs256, verify_jwt
from mongo_sansio.uri.credential import Credential

OK = {"ok": 1, "done": True, "conversationId": 1, "payload": b""}
FAILED_18 = {"ok": 0, "code": 18, "codeName": "AuthenticationFailed", "errmsg": "Authentication failed."}


def credential(**properties: Any) -> Credential:
    username = properties.pop("username", None)
    if not properties:
        properties = {"OIDC_CALLBACK": object()}
    return Credential("MONGODB-OIDC", username, None, "$external", properties)


class Driver:
    """Drives an authenticator's flow, answering its requests from ``answers`` (callables of
    the request) and recording them."""

    def __init__(self, clock: float = 100.0) -> None:
        self.clock = clock
        self.requests: list[Any] = []

    def run(self, flow: Any, answer: Any) -> Any:
        reply: Any = None
        while True:
            try:
                request = flow.send(reply)
            except StopIteration as stop:
                return stop.value
            self.requests.append(request)
            if isinstance(request, Now):
                reply = self.clock
            elif isinstance(request, Sleep):
                self.clock += request.seconds
                reply = None
            else:
                reply = answer(request)

    def commands(self) -> list[dict[str, Any]]:
        out = []
        for request in self.requests:
            if isinstance(request, ConnectionCommand):
                body = dict(request.body)
                body["payload"] = decode(bytes(body["payload"]))
                out.append(body)
        return out


def callback_answer(tokens: list[str], replies: list[Any]) -> Any:
    def answer(request: Any) -> Any:
        if isinstance(request, CallOidcCallback):
            return CallbackOutcome(result=OIDCCallbackResult(access_token=tokens.pop(0)))
        return replies.pop(0)

    return answer


def test_machine_flow_fetches_then_caches() -> None:
    cache = OidcCache()
    auth = OidcAuthenticator(credential(), cache, host="db.example", timeout=7.5)
    assert auth.speculative_document() is None
    driver = Driver()
    driver.run(auth.flow(speculative_reply=None), callback_answer(["t1"], [OK]))
    [context] = [r.context for r in driver.requests if isinstance(r, CallOidcCallback)]
    assert context.timeout_seconds == 7.5 and context.version == 1 and context.username == ""
    assert driver.commands() == [{"saslStart": 1, "mechanism": "MONGODB-OIDC", "payload": {"jwt": "t1"}}]
    assert driver.requests[-1].db == "$external"
    assert cache.access_token == "t1" and auth.connection_token == "t1"
    # the next connection speculates with the cached token, and is done with hello
    second = OidcAuthenticator(credential(), cache, host="db.example")
    speculative = second.speculative_document()
    assert speculative is not None and speculative["db"] == "$external"
    assert decode(bytes(speculative["payload"])) == {"jwt": "t1"}
    assert Driver().run(second.flow(speculative_reply={"done": True, "conversationId": 1}), None) is None
    assert second.connection_token == "t1"


def test_machine_flow_replaces_a_refused_cached_token() -> None:
    cache = OidcCache()
    cache.access_token = "stale"
    auth = OidcAuthenticator(credential(), cache, host="h", timeout=None)
    driver = Driver()
    driver.run(auth.flow(speculative_reply=None), callback_answer(["fresh"], [FAILED_18, OK]))
    assert [c["payload"]["jwt"] for c in driver.commands()] == ["stale", "fresh"]
    [call] = [r for r in driver.requests if isinstance(r, CallOidcCallback)]
    assert call.context.timeout_seconds == 60  # no connect timeout: one minute
    assert cache.access_token == "fresh"


def test_machine_flow_keeps_the_cache_on_other_errors() -> None:
    cache = OidcCache()
    cache.access_token = "good"
    auth = OidcAuthenticator(credential(), cache, host="h")
    with pytest.raises(AuthenticationError, match="code 20") as failure:
        Driver().run(auth.flow(speculative_reply=None), callback_answer([], [{"ok": 0, "code": 20}]))
    assert failure.value.code == 20
    assert cache.access_token == "good"


def test_reauthentication_invalidates_the_connection_token_only() -> None:
    cache = OidcCache()
    auth = OidcAuthenticator(credential(), cache, host="h")
    Driver().run(auth.flow(speculative_reply=None), callback_answer(["t1"], [OK]))
    cache.access_token = "newer"  # another connection already replaced it
    driver = Driver()
    driver.run(auth.reauthenticate(), callback_answer([], [OK]))
    assert [c["payload"]["jwt"] for c in driver.commands()] == ["newer"]


def test_callback_calls_are_spaced_and_serialized() -> None:
    cache = OidcCache()
    cache.last_call = 99.95
    first = OidcAuthenticator(credential(), cache, host="h")
    second = OidcAuthenticator(credential(), cache, host="h")
    flow_one = first.flow(speculative_reply=None)
    assert isinstance(flow_one.send(None), Now)
    assert flow_one.send(100.0) == Sleep(pytest.approx(0.05))
    assert isinstance(flow_one.send(None), Now)
    call = flow_one.send(100.05)
    assert isinstance(call, CallOidcCallback) and cache.fetching
    flow_two = second.flow(speculative_reply=None)
    wait = flow_two.send(None)
    assert isinstance(wait, Wait)  # one call at a time
    command = flow_one.send(CallbackOutcome(result=OIDCCallbackResult("shared")))
    assert isinstance(command, ConnectionCommand)
    assert wait.signal.fired and not cache.fetching
    command_two = flow_two.send(True)  # takes the token the first one fetched
    assert decode(bytes(command_two.body["payload"])) == {"jwt": "shared"}


def test_human_two_step_then_refresh() -> None:
    cache = OidcCache()
    auth = OidcAuthenticator(
        credential(username="alice", OIDC_HUMAN_CALLBACK=object()), cache, host="cluster0.mongodb.net"
    )
    info = encode({"issuer": "https://idp", "clientId": "abc", "requestScopes": ["x"]})
    step_one = {"ok": 1, "done": False, "conversationId": 7, "payload": info}
    driver = Driver()

    def answer(request: Any) -> Any:
        if isinstance(request, CallOidcCallback):
            return CallbackOutcome(result=OIDCCallbackResult("a1", refresh_token="r1"))
        return step_one if request.body.get("saslStart") else OK

    driver.run(auth.flow(speculative_reply=None), answer)
    first, second = driver.commands()
    assert first["payload"] == {"n": "alice"}
    assert second["saslContinue"] == 1 and second["conversationId"] == 7 and second["payload"] == {"jwt": "a1"}
    [call] = [r for r in driver.requests if isinstance(r, CallOidcCallback)]
    assert call.context.timeout_seconds == 300 and call.context.idp_info.clientId == "abc"
    assert cache.refresh_token == "r1" and cache.idp_info is not None
    # a 391: the token is invalidated, the refresh token is given to the callback
    again = Driver()
    contexts: list[Any] = []

    def refresh(request: Any) -> Any:
        if isinstance(request, CallOidcCallback):
            contexts.append(request.context)
            return CallbackOutcome(result=OIDCCallbackResult("a2"))
        return OK

    again.run(auth.reauthenticate(), refresh)
    assert contexts[0].refresh_token == "r1" and contexts[0].idp_info.issuer == "https://idp"
    assert [c["payload"] for c in again.commands()] == [{"jwt": "a2"}]


def test_allowed_hosts() -> None:
    assert host_allowed("cluster0.abc.mongodb.net", ["*.mongodb.net"])
    assert host_allowed("LOCALHOST", ["localhost"])
    assert not host_allowed("mongodb.net.evil.com", ["*.mongodb.net"])
    assert not host_allowed("example.com", [])
    auth = OidcAuthenticator(
        credential(OIDC_HUMAN_CALLBACK=object(), ALLOWED_HOSTS=["*.corp"]), OidcCache(), host="db.other"
    )
    with pytest.raises(ConfigurationError, match="ALLOWED_HOSTS"):
        auth.speculative_document()
    # the default list, and machine callbacks are never checked
    OidcAuthenticator(credential(OIDC_HUMAN_CALLBACK=object()), OidcCache(), host="::1").speculative_document()
    OidcAuthenticator(credential(), OidcCache(), host="db.other").speculative_document()


# -- token sources --------------------------------------------------------------------------------


def test_environment_requests() -> None:
    assert environment_request("test", token_resource=None, username=None, timeout=5) == ReadTokenFile(
        ("OIDC_TOKEN_FILE",)
    )
    k8s = environment_request("k8s", token_resource=None, username=None, timeout=5)
    assert isinstance(k8s, ReadTokenFile)
    assert k8s.variables == ("AZURE_FEDERATED_TOKEN_FILE", "AWS_WEB_IDENTITY_TOKEN_FILE")
    assert k8s.default == "/var/run/secrets/kubernetes.io/serviceaccount/token"
    azure = environment_request("azure", token_resource="api://a b,c", username="cid", timeout=9)
    assert isinstance(azure, OidcHttpGet)
    assert azure.url == (
        "http://169.254.169.254/metadata/identity/oauth2/token?api-version=2018-02-01"
        "&resource=api%3A%2F%2Fa%20b%2Cc&client_id=cid"
    )
    assert dict(azure.headers) == {"Accept": "application/json", "Metadata": "true"}
    assert azure.timeout == 9
    no_user = environment_request("azure", token_resource="r", username=None, timeout=9)
    assert isinstance(no_user, OidcHttpGet) and "client_id" not in no_user.url
    gcp = environment_request("gcp", token_resource="aud", username=None, timeout=3)
    assert isinstance(gcp, OidcHttpGet)
    assert gcp.url.endswith("/instance/service-accounts/default/identity?audience=aud")
    assert dict(gcp.headers) == {"Metadata-Flavor": "Google"}
    assert quote("é~") == "%C3%A9~"


def test_environment_answers() -> None:
    azure = HttpOutcome(200, b'{"access_token": "A", "expires_in": "3599"}')
    assert token_from_environment("azure", azure).access_token == "A"
    assert token_from_environment("azure", azure).expires_in_seconds == 3599
    assert token_from_environment("gcp", HttpOutcome(200, b"G\n")).access_token == "G"
    with pytest.raises(AuthenticationError, match="HTTP 400: bad client_id"):
        token_from_environment("azure", HttpOutcome(400, b"bad client_id"))
    with pytest.raises(AuthenticationError, match="no access_token"):
        token_from_environment("azure", HttpOutcome(200, b"[]"))
    with pytest.raises(AuthenticationError, match="timed out"):
        token_from_environment("gcp", HttpOutcome(None, error="timed out"))
    assert token_from_environment("test", FileOutcome("T\n", "/t")).access_token == "T"
    with pytest.raises(AuthenticationError, match="empty"):
        token_from_environment("k8s", FileOutcome("  ", "/t"))
    with pytest.raises(AuthenticationError, match="not set"):
        token_from_environment("test", FileOutcome(None, None, "OIDC_TOKEN_FILE is not set"))


def test_callback_results() -> None:
    good = read_callback_result(
        CallbackOutcome(result=OIDCCallbackResult("t", timedelta(seconds=30), "r")), human=True
    )
    assert (good.access_token, good.expires_in_seconds, good.refresh_token) == ("t", 30.0, "r")
    assert read_callback_result(CallbackOutcome(result={"access_token": "d"}), human=False).access_token == "d"
    with pytest.raises(AuthenticationError, match="returned None"):
        read_callback_result(CallbackOutcome(result=None), human=False)
    with pytest.raises(AuthenticationError, match="negative"):
        read_callback_result(CallbackOutcome(result=OIDCCallbackResult("t", -1)), human=False)
    with pytest.raises(AuthenticationError, match="OIDC_HUMAN_CALLBACK raised ValueError: no") as failure:
        read_callback_result(CallbackOutcome(error=ValueError("no")), human=True)
    assert isinstance(failure.value.__cause__, ValueError)


# -- the simulator's issuer -----------------------------------------------------------------------


def test_hs256_tokens() -> None:
    now = time.time()
    claims = {"sub": "u", "aud": ["x", "aud"], "exp": now + 60}
    assert verify_hs256(mint_hs256(claims, "k"), "k", audience="aud", now=now)["sub"] == "u"
    for token, reason in [
        (mint_hs256(claims, "other"), "signature"),
        (mint_hs256({**claims, "aud": "x"}, "k"), "audience"),
        (mint_hs256({**claims, "exp": now - 1}, "k"), "expired"),
        (mint_hs256({**claims, "nbf": now + 30}, "k"), "not valid yet"),
        (mint_hs256({"aud": "aud", "exp": now + 60}, "k"), "subject"),
        ("a.b", "compact"),
        ("!!.??.**", "compact"),
    ]:
        with pytest.raises(SaslFailure, match=reason):
            verify_hs256(token, "k", audience="aud", now=now)
    header, body, _ = mint_hs256(claims, "k").split(".")
    with pytest.raises(SaslFailure, match="HS256"):  # alg none is never accepted
        verify_hs256(f"eyJhbGciOiJub25lIn0.{body}.", "k", audience="aud", now=now)


def test_issuer_conversations() -> None:
    issuer = OidcIssuer(secret="k", audience="aud", issuer="https://i", client_id="c")
    now = time.time()
    jwt = mint_hs256({"sub": "u", "aud": "aud", "exp": now + 60}, "k")
    conversation, payload, done = issuer.start(encode({"jwt": jwt}), now)
    assert done and payload == b"" and conversation.user == "u" and conversation.expires == now + 60
    conversation, payload, done = issuer.start(encode({"n": "u"}), now)
    assert not done and decode(payload) == {"issuer": "https://i", "clientId": "c"}
    assert conversation.step(encode({"jwt": jwt})) == (b"", True)
    with pytest.raises(SaslFailure):
        issuer.start(b"not bson", now)
    machine_idp = OidcIssuer(secret="k", audience="aud", client_id=None, request_scopes=("a",))
    _, payload, _ = machine_idp.start(encode({}), now)
    assert decode(payload) == {"issuer": "https://simulated-idp.invalid", "requestScopes": ["a"]}


def test_human_flow_with_a_machine_idp() -> None:
    """Prose 1.8: an IdpInfo without clientId is handled."""
    cache = OidcCache()
    auth = OidcAuthenticator(credential(OIDC_HUMAN_CALLBACK=object()), cache, host="localhost")
    step_one = {"ok": 1, "done": False, "conversationId": 1, "payload": encode({"issuer": "https://m"})}
    contexts: list[Any] = []

    def answer(request: Any) -> Any:
        if isinstance(request, CallOidcCallback):
            contexts.append(request.context)
            return CallbackOutcome(result=OIDCCallbackResult("t"))
        return step_one if request.body.get("saslStart") else OK

    driver = Driver()
    driver.run(auth.flow(speculative_reply=None), answer)
    assert driver.commands()[0]["payload"] == {}  # no username: no principal name
    assert contexts[0].idp_info.issuer == "https://m" and contexts[0].idp_info.clientId is None


# -- the runtime's HTTP GET -----------------------------------------------------------------------


@pytest.fixture
def metadata_server() -> Iterator[tuple[str, list[dict[str, str]]]]:
    seen: list[dict[str, str]] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the http.server name
            seen.append({"path": self.path, **{k: v for k, v in self.headers.items()}})
            status, body = (200, b'{"access_token": "from-imds"}') if "good" in self.path else (404, b"nope")
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", seen
    server.shutdown()
    server.server_close()


def test_runtime_http_get(metadata_server: tuple[str, list[dict[str, str]]]) -> None:
    from mongo_sansio.adapters._oidc_io import carry_out

    base, seen = metadata_server
    outcome = carry_out(OidcHttpGet(f"{base}/good?resource=x", (("Metadata", "true"),), 5))
    assert outcome == HttpOutcome(200, b'{"access_token": "from-imds"}')
    assert seen[0]["path"] == "/good?resource=x" and seen[0]["Metadata"] == "true"
    assert token_from_environment("azure", outcome).access_token == "from-imds"
    missing = carry_out(OidcHttpGet(f"{base}/other", (), 5))
    assert missing.status == 404 and missing.body == b"nope"
    refused = carry_out(OidcHttpGet("http://127.0.0.1:1/x", (), 2))
    assert refused.status is None and refused.error


def rs256_key_and_jwks(kid: str = "k1") -> tuple[Any, dict[str, Any]]:
    rsa = pytest.importorskip("cryptography.hazmat.primitives.asymmetric.rsa")
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    numbers = key.public_key().public_numbers()

    def b64(number: int) -> str:
        raw = number.to_bytes((number.bit_length() + 7) // 8, "big")
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()

    return key, {"keys": [{"kty": "RSA", "kid": kid, "n": b64(numbers.n), "e": b64(numbers.e)}]}


def mint_rs256(claims: dict[str, Any], key: Any, kid: str = "k1") -> str:
    hashes = pytest.importorskip("cryptography.hazmat.primitives.hashes")
    padding = pytest.importorskip("cryptography.hazmat.primitives.asymmetric.padding")

    def part(document: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(document).encode()).rstrip(b"=").decode()

    signed = f"{part({'alg': 'RS256', 'kid': kid})}.{part(claims)}"
    signature = key.sign(signed.encode(), padding.PKCS1v15(), hashes.SHA256())
    return f"{signed}.{base64.urlsafe_b64encode(signature).rstrip(b'=').decode()}"


def test_rs256_tokens_with_a_jwks() -> None:
    key, jwks = rs256_key_and_jwks()
    other, _ = rs256_key_and_jwks()
    now = time.time()
    claims = {"sub": "rsa-user", "aud": "aud", "exp": now + 60}
    assert verify_jwt(mint_rs256(claims, key), audience="aud", now=now, jwks=jwks)["sub"] == "rsa-user"
    with pytest.raises(SaslFailure, match="signature"):
        verify_jwt(mint_rs256(claims, other), audience="aud", now=now, jwks=jwks)
    with pytest.raises(SaslFailure, match="signature"):  # no key with that kid
        verify_jwt(mint_rs256(claims, key, kid="k2"), audience="aud", now=now, jwks=jwks)
    with pytest.raises(SaslFailure, match="not signed with HS256"):  # no JWKS: HS256 only
        verify_jwt(mint_rs256(claims, key), audience="aud", now=now, secret="s")
    with pytest.raises(SaslFailure, match="RS256"):  # an HS256 token when only RS256 is trusted
        verify_jwt(mint_hs256(claims, "s"), audience="aud", now=now, jwks=jwks)
    issuer = OidcIssuer(secret=None, audience="aud", jwks=jwks)
    conversation, _, done = issuer.start(encode({"jwt": mint_rs256(claims, key)}), now)
    assert done and conversation.user == "rsa-user"


# Documents the server could send: text BSON can carry (UTF-8, so no lone surrogates; no NUL in keys).
UTF8 = st.characters(codec="utf-8")
KEYS = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\x00"), max_size=8)
VALUES = (
    st.text(UTF8, max_size=8)
    | st.integers(-(2**63), 2**63 - 1)
    | st.lists(st.text(UTF8, max_size=4), max_size=3)
)


@given(
    st.binary(max_size=200)
    | st.builds(encode, st.dictionaries(KEYS | st.sampled_from(["issuer", "clientId"]), VALUES, max_size=4))
)
def test_idp_info_from_any_payload(payload: bytes) -> None:
    """Whatever the server sends as IdpInfo, the client raises only AuthenticationError."""
    try:
        info = _idp_info({"payload": payload})
    except AuthenticationError:
        return
    assert isinstance(info.issuer, str)


B64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


@given(
    st.text(max_size=120)
    | st.lists(st.text(alphabet=B64URL, max_size=40), min_size=3, max_size=3).map(".".join)
)
def test_verify_jwt_only_refuses(token: str) -> None:
    """Any text given as a token is accepted or refused with SaslFailure, nothing else."""
    with pytest.raises(SaslFailure):
        verify_jwt(
            token, audience="aud", now=time.time(), secret="k",
            jwks={"keys": [{"kty": "RSA", "n": "AQAB", "e": "AQAB"}]},
        )
