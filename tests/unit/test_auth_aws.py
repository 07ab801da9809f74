"""MONGODB-AWS in the core: SigV4, the conversation's checks, the credential sources as flows,
the cache, the retry after a refused cached credential; and the tiny HTTP/1.1 parser."""

from __future__ import annotations

import base64
import json
from collections.abc import Generator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mongo_sansio.auth.aws import (
    AwsConversation,
    AwsCredentials,
    amz_date,
    derive_region,
    signed_headers,
    sigv4_authorization,
)
from mongo_sansio.auth.aws_credentials import (
    AwsAuthenticator,
    AwsCredentialCache,
    AwsEnvironment,
    obtain_credentials,
)
from mongo_sansio.auth.http11 import (
    HttpFailure,
    HttpParseError,
    HttpRequest,
    HttpResponse,
    HttpResponseParser,
    form_encode,
    split_url,
)
from mongo_sansio.bson import decode, encode
from mongo_sansio.errors import AuthenticationError, ConfigurationError
from mongo_sansio.flow import ConnectionCommand
from mongo_sansio.testing.server.auth import SaslFailure
from mongo_sansio.testing.server.aws_sts import AwsIdentities
from mongo_sansio.uri import parse_uri
from mongo_sansio.uri.credential import Credential

NONCE = bytes(range(32))
SERVER_RANDOM = bytes(range(100, 132))
WALL = 1_573_086_367.0  # 2019-11-07T00:26:07Z, the spec's example date
KEYS = AwsCredentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")


def test_sigv4_matches_aws_published_vector() -> None:
    """AWS's SigV4 test suite, "get-vanilla"."""
    authorization = sigv4_authorization(
        access_key_id="AKIDEXAMPLE",
        secret_access_key="wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
        region="us-east-1",
        date="20150830T123600Z",
        headers={"host": "example.amazonaws.com", "x-amz-date": "20150830T123600Z"},
        body=b"",
        method="GET",
        service="service",
    )
    assert authorization == (
        "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
        "SignedHeaders=host;x-amz-date, "
        "Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"
    )


def test_sigv4_agrees_with_botocore() -> None:
    """An independent signer (botocore, which pymongo-auth-aws uses) gives the same header."""
    pytest.importorskip("botocore", reason="botocore (pymongo-auth-aws) is not installed")
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    server_nonce = NONCE + SERVER_RANDOM
    headers = signed_headers("sts.us-west-2.amazonaws.com", "-", server_nonce, "TOKEN")
    request = AWSRequest(
        method="POST",
        url="https://sts.us-west-2.amazonaws.com/",
        data=b"Action=GetCallerIdentity&Version=2011-06-15",
        headers={
            "Content-Type": headers["content-type"],
            "Content-Length": headers["content-length"],
            "X-MongoDB-Server-Nonce": headers["x-mongodb-server-nonce"],
            "X-MongoDB-GS2-CB-Flag": "n",
        },
    )
    SigV4Auth(Credentials("AK", "SECRET", "TOKEN"), "sts", "us-west-2").add_auth(request)
    date = request.headers["X-Amz-Date"]  # botocore signs with the current time
    headers["x-amz-date"] = date
    ours = sigv4_authorization(
        access_key_id="AK", secret_access_key="SECRET", region="us-west-2", date=date, headers=headers
    )
    assert request.headers["Authorization"] == ours


@pytest.mark.parametrize(
    ("host", "region"),
    [
        ("sts.amazonaws.com", "us-east-1"),
        ("sts.us-west-2.amazonaws.com", "us-west-2"),
        ("sts.us-west-2.amazonaws.com.ch", "us-west-2"),
        ("example.com", "com"),
        ("localhost", "us-east-1"),
    ],
)
def test_region_calculation(host: str, region: str) -> None:
    assert derive_region(host) == region


@pytest.mark.parametrize("host", ["sts..com", ".amazonaws.com", "sts.amazonaws.", "", "a" * 256])
def test_invalid_sts_hosts(host: str) -> None:
    with pytest.raises(AuthenticationError):
        derive_region(host)


def test_amz_date() -> None:
    assert amz_date(WALL) == "20191107T002607Z"


def _server_first(nonce: bytes, host: Any = "sts.amazonaws.com") -> bytes:
    return encode({"s": nonce, "h": host})


def test_the_conversation_and_the_simulators_check() -> None:
    conversation = AwsConversation(NONCE)
    first = decode(conversation.client_first())
    assert first == {"r": NONCE, "p": 110}
    identities = AwsIdentities({"AKIDEXAMPLE": (KEYS.secret_access_key, None)})
    server, reply, done = identities.start(conversation.client_first(), SERVER_RANDOM, WALL)
    assert not done
    conversation.handle_server_first(reply)
    final = conversation.client_final(KEYS, WALL)
    document = decode(final)
    assert set(document) == {"a", "d"} and document["d"] == "20191107T002607Z"
    assert "x-amz-security-token" not in document["a"]
    assert server.step(final) == (b"", True)
    assert server.user == "arn:aws:iam::000000000000:user/AKIDEXAMPLE"


@pytest.mark.parametrize(
    "tamper",
    ["secret", "token", "date", "region", "signature", "headers"],
)
def test_the_simulator_refuses_what_sts_refuses(tamper: str) -> None:
    secret, token = "the-secret", "the-token"
    identities = AwsIdentities({"ASIA": (secret, token)})
    conversation = AwsConversation(NONCE)
    server, reply, _ = identities.start(conversation.client_first(), SERVER_RANDOM, WALL)
    conversation.handle_server_first(reply)
    keys = AwsCredentials("ASIA", secret, token)
    when = WALL
    if tamper == "secret":
        keys = AwsCredentials("ASIA", "not-it", token)
    elif tamper == "token":
        keys = AwsCredentials("ASIA", secret, "other-token")
    elif tamper == "date":
        when = WALL + 3600  # the server's clock says WALL: more than 15 minutes away
    document = dict(decode(conversation.client_final(keys, when)))
    if tamper == "region":
        document["a"] = document["a"].replace("/us-east-1/", "/eu-west-1/")
    elif tamper == "signature":
        document["a"] = document["a"][:-4] + "0000"
    elif tamper == "headers":
        document["a"] = document["a"].replace("x-mongodb-server-nonce", "x-other")
    with pytest.raises(SaslFailure):
        server.step(encode(document))
    # untampered, the same identity is accepted with its token
    if tamper == "token":
        good = AwsConversation(NONCE)
        server, reply, _ = identities.start(good.client_first(), SERVER_RANDOM, WALL)
        good.handle_server_first(reply)
        final = good.client_final(AwsCredentials("ASIA", secret, token), WALL)
        assert decode(final)["t"] == token
        server.step(final)
        assert server.user.startswith("arn:aws:sts::000000000000:assumed-role/")


@pytest.mark.parametrize(
    "reply",
    [
        _server_first(NONCE + SERVER_RANDOM[:31]),  # 63 bytes
        _server_first(bytes(32) + SERVER_RANDOM),  # does not start with ours
        _server_first(NONCE + SERVER_RANDOM, "sts..amazonaws.com"),
        _server_first(NONCE + SERVER_RANDOM, 5),
        b"not bson",
    ],
)
def test_server_first_checks(reply: bytes) -> None:
    conversation = AwsConversation(NONCE)
    with pytest.raises(AuthenticationError) as caught:
        conversation.handle_server_first(reply)
    assert caught.value.code is None


def test_client_nonce_must_be_32_bytes() -> None:
    with pytest.raises(ConfigurationError):
        AwsConversation(b"short")


def test_credentials_repr_hides_secrets() -> None:
    text = repr(AwsCredentials("AK", "SECRETVALUE", "TOKENVALUE", 5.0))
    assert "SECRETVALUE" not in text and "TOKENVALUE" not in text and "AK" in text


# --- credential sources as flows ---------------------------------------------------------------


def _credential(uri: str = "mongodb://h/?authMechanism=MONGODB-AWS") -> Credential:
    credential = parse_uri(uri).credential
    assert credential is not None
    return credential


def _environment(**variables: str) -> AwsEnvironment:
    return AwsEnvironment(variables=variables, wall_time=WALL, read_file=lambda path: "jwt\n")


def _json(document: Any) -> HttpResponse:
    return HttpResponse(status=200, headers={}, body=json.dumps(document).encode())


def _run(flow: Generator[Any, Any, Any], answers: list[Any]) -> tuple[Any, list[HttpRequest]]:
    requests: list[HttpRequest] = []
    answer: Any = None
    try:
        while True:
            request = flow.send(answer)
            requests.append(request)
            answer = answers.pop(0)
    except StopIteration as stop:
        return stop.value, requests


TEMPORARY = {
    "AccessKeyId": "ASIA",
    "SecretAccessKey": "secret",
    "Token": "tok",
    "Expiration": "2019-11-07T01:26:07Z",
}


def test_uri_credentials_come_first() -> None:
    uri = "mongodb://AK:SK@h/?authMechanism=MONGODB-AWS&authMechanismProperties=AWS_SESSION_TOKEN:T"
    (keys, cached), requests = _run(
        obtain_credentials(
            _credential(uri), _environment(AWS_ACCESS_KEY_ID="X", AWS_SECRET_ACCESS_KEY="Y"),
            AwsCredentialCache(), "s",
        ),
        [],
    )
    assert (keys.access_key_id, keys.secret_access_key, keys.session_token, cached) == (
        "AK", "SK", "T", False,
    )
    assert requests == []


def test_environment_variables_are_never_cached() -> None:
    cache = AwsCredentialCache()
    environment = _environment(AWS_ACCESS_KEY_ID="X", AWS_SECRET_ACCESS_KEY="Y", AWS_SESSION_TOKEN="Z")
    (keys, cached), requests = _run(obtain_credentials(_credential(), environment, cache, "s"), [])
    assert (keys.access_key_id, keys.session_token, cached, requests) == ("X", "Z", False, [])
    assert cache.get("anything", WALL) is None


def test_web_identity_request() -> None:
    environment = _environment(
        AWS_WEB_IDENTITY_TOKEN_FILE="/token",
        AWS_ROLE_ARN="arn:aws:iam::1:role/r",
        AWS_ENDPOINT_URL="http://127.0.0.1:9/",
    )
    sts = {"AssumeRoleWithWebIdentityResponse": {"AssumeRoleWithWebIdentityResult": {
        "Credentials": {**TEMPORARY, "Token": None, "SessionToken": "st", "Expiration": WALL + 3600}
    }}}
    cache = AwsCredentialCache()
    (keys, _), requests = _run(
        obtain_credentials(_credential(), environment, cache, "generated"), [_json(sts)]
    )
    assert keys.session_token == "st" and keys.expiration == WALL + 3600
    (request,) = requests
    assert request.method == "POST" and request.url == "http://127.0.0.1:9/"
    assert b"RoleSessionName=generated" in request.body and b"WebIdentityToken=jwt&" in request.body
    assert b"RoleArn=arn%3Aaws%3Aiam%3A%3A1%3Arole%2Fr" in request.body
    # cached now: the next connection asks nothing
    (again, cached), requests = _run(obtain_credentials(_credential(), environment, cache, "g"), [])
    assert again == keys and cached and requests == []


def test_ecs_relative_uri_and_ec2() -> None:
    ecs = _environment(AWS_CONTAINER_CREDENTIALS_RELATIVE_URI="/v2/credentials/x")
    (keys, _), requests = _run(
        obtain_credentials(_credential(), ecs, AwsCredentialCache(), "s"), [_json(TEMPORARY)]
    )
    assert requests[0].url == "http://169.254.170.2/v2/credentials/x"
    assert keys.expiration == WALL + 3600
    (keys, _), requests = _run(
        obtain_credentials(_credential(), _environment(), AwsCredentialCache(), "s"),
        [
            HttpResponse(200, {}, b"imds-token"),
            HttpResponse(200, {}, b"the-role\n"),
            _json(TEMPORARY),
        ],
    )
    assert [(r.method, r.url) for r in requests] == [
        ("PUT", "http://169.254.169.254/latest/api/token"),
        ("GET", "http://169.254.169.254/latest/meta-data/iam/security-credentials/"),
        ("GET", "http://169.254.169.254/latest/meta-data/iam/security-credentials/the-role"),
    ]
    assert ("X-aws-ec2-metadata-token", "imds-token") in requests[2].headers
    assert keys.session_token == "tok"


@pytest.mark.parametrize(
    "answer",
    [
        HttpFailure("connection refused"),
        HttpResponse(500, {}, b""),
        HttpResponse(200, {}, b"not json"),
        _json({"AccessKeyId": "only"}),
        _json({**TEMPORARY, "Expiration": "yesterday"}),
    ],
)
def test_a_failing_service_is_an_authentication_error(answer: Any) -> None:
    ecs = _environment(AWS_CONTAINER_CREDENTIALS_FULL_URI="http://127.0.0.1:1/creds")
    with pytest.raises(AuthenticationError) as caught:
        _run(obtain_credentials(_credential(), ecs, AwsCredentialCache(), "s"), [answer])
    assert caught.value.code is None and "the ECS endpoint" in str(caught.value)


def test_the_cache_expires_five_minutes_early() -> None:
    cache = AwsCredentialCache()
    keys = AwsCredentials("A", "S", "T", expiration=WALL + 301)
    cache.put("k", keys)
    assert cache.get("k", WALL) == keys
    assert cache.get("k", WALL + 2) is None
    assert cache.get("other source", WALL) is None


def _server_reply(payload: bytes, *, done: bool = False) -> dict[str, Any]:
    return {"ok": 1, "conversationId": 1, "payload": payload, "done": done}


def test_a_refused_cached_credential_is_fetched_again_once() -> None:
    cache = AwsCredentialCache()
    cache.put("ecs http://127.0.0.1:1/c", AwsCredentials("OLD", "S", "T", WALL + 3600))
    environment = _environment(AWS_CONTAINER_CREDENTIALS_FULL_URI="http://127.0.0.1:1/c")
    draws = iter([NONCE[:24], NONCE[24:] + bytes(16)] * 10)
    authenticator = AwsAuthenticator(
        _credential(), random_bytes=lambda: next(draws), environment=lambda: environment, cache=cache
    )
    flow = authenticator.flow(sasl_supported_mechs=None, speculative_reply=None)
    step = flow.send(None)
    assert isinstance(step, ConnectionCommand) and step.body["mechanism"] == "MONGODB-AWS"
    nonce = decode(step.body["payload"])["r"]
    step = flow.send(_server_reply(_server_first(nonce + SERVER_RANDOM)))
    assert isinstance(step, ConnectionCommand)
    assert decode(step.body["payload"])["a"].startswith("AWS4-HMAC-SHA256 Credential=OLD/")
    step = flow.send({"ok": 0, "code": 18, "codeName": "AuthenticationFailed"})
    assert isinstance(step, HttpRequest)  # dropped from the cache: fetched again
    step = flow.send(_json({**TEMPORARY, "AccessKeyId": "NEW"}))
    nonce = decode(step.body["payload"])["r"]
    step = flow.send(_server_reply(_server_first(nonce + SERVER_RANDOM)))
    assert "Credential=NEW/" in decode(step.body["payload"])["a"]
    with pytest.raises(AuthenticationError) as caught:  # refused again: no third try
        flow.send({"ok": 0, "code": 18, "codeName": "AuthenticationFailed"})
    assert caught.value.code == 18
    assert cache.get("ecs http://127.0.0.1:1/c", WALL) is None


def test_a_refused_fresh_credential_is_not_retried() -> None:
    environment = _environment(AWS_ACCESS_KEY_ID="A", AWS_SECRET_ACCESS_KEY="S")
    authenticator = AwsAuthenticator(
        _credential(), random_bytes=lambda: NONCE, environment=lambda: environment,
        cache=AwsCredentialCache(),
    )
    flow = authenticator.flow(sasl_supported_mechs=None, speculative_reply=None)
    flow.send(None)
    flow.send(_server_reply(_server_first(NONCE + SERVER_RANDOM)))
    with pytest.raises(AuthenticationError):
        flow.send({"ok": 0, "code": 18})


# --- the HTTP/1.1 pieces -----------------------------------------------------------------------


def test_split_url() -> None:
    assert split_url("http://169.254.169.254") == (False, "169.254.169.254", 80, "/")
    assert split_url("https://sts.amazonaws.com/") == (True, "sts.amazonaws.com", 443, "/")
    assert split_url("http://[::1]:8080/a?b=c") == (False, "::1", 8080, "/a?b=c")
    for bad in ("ftp://x/", "nohost", "http://:80/", "http://h:99999/"):
        with pytest.raises(ConfigurationError):
            split_url(bad)


def test_request_bytes_and_form_encoding() -> None:
    request = HttpRequest("PUT", "http://h:8080/t", (("X-A", "1"),))
    assert request.to_bytes() == (
        b"PUT /t HTTP/1.1\r\nHost: h:8080\r\nX-A: 1\r\nContent-Length: 0\r\n"
        b"Connection: close\r\n\r\n"
    )
    assert form_encode({"a b": "x/y~z"}) == b"a%20b=x%2Fy~z"
    with pytest.raises(ConfigurationError):
        HttpRequest("GET", "http://h/", (("X", "a\r\nInjected: 1"),)).to_bytes()


RESPONSES = [
    (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", b"hello", False),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nhel\r\n2;x=y\r\nlo\r\n0\r\n\r\n", b"hello", False),
    (b"HTTP/1.0 404 Not Found\r\nServer: x\r\n\r\nhello", b"hello", True),
]


@given(st.sampled_from(RESPONSES), st.lists(st.integers(1, 80), max_size=8))
def test_responses_in_any_chunking(case: tuple[bytes, bytes, bool], cuts: list[int]) -> None:
    raw, body, needs_end = case
    parser = HttpResponseParser()
    response = None
    position = 0
    for cut in sorted(set(cuts)):
        if response is None and position < min(cut, len(raw)):
            response = parser.receive_data(raw[position:cut])
            position = cut
    if response is None and position < len(raw):
        response = parser.receive_data(raw[position:])
    if response is None:
        assert needs_end
        response = parser.receive_data(b"")
    assert response is not None and response.body == body


@pytest.mark.parametrize(
    "raw",
    [b"SSH-2.0\r\n\r\n", b"HTTP/1.1 200 OK\r\nbad header\r\n\r\n",
     b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nshort", b"HTTP/1.1 200",
     b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"],
)
def test_malformed_responses(raw: bytes) -> None:
    parser = HttpResponseParser()
    with pytest.raises(HttpParseError):
        parser.receive_data(raw)
        parser.receive_data(b"")


@given(st.binary(max_size=200))
def test_garbage_never_escapes_as_anything_else(data: bytes) -> None:
    parser = HttpResponseParser()
    try:
        parser.receive_data(data)
        parser.receive_data(b"")
    except HttpParseError:
        pass


def test_the_server_nonce_header_is_base64() -> None:
    headers = signed_headers("h", "20200101T000000Z", NONCE + SERVER_RANDOM, None)
    assert base64.b64decode(headers["x-mongodb-server-nonce"]) == NONCE + SERVER_RANDOM
