"""MONGODB-AWS credentials, in the auth spec's order, and the authenticator that uses them.

Inputs: the :class:`~mongo_sansio.uri.credential.Credential`, an :class:`AwsEnvironment`
snapshot the adapter takes for each authentication (the ``AWS_*`` environment variables, the
wall-clock time, a way to read the web identity token file: the core never reads
``os.environ`` or files itself), the client's :class:`AwsCredentialCache`, and random bytes.
Outputs (from :meth:`AwsAuthenticator.flow`): :class:`~mongo_sansio.flow.ConnectionCommand`
requests (saslStart, saslContinue) and :class:`~mongo_sansio.auth.http11.HttpRequest`
requests to the credentials services, answered with an ``HttpResponse`` or ``HttpFailure``.

Where credentials come from, first match wins:

1. the URI: username (access key id), password (secret), ``AWS_SESSION_TOKEN`` property;
2. the client's cache of temporary credentials fetched earlier (valid until five minutes
   before their ``Expiration``);
3. ``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` [/ ``AWS_SESSION_TOKEN``] (read at each
   authentication, never cached);
4. web identity: ``AWS_WEB_IDENTITY_TOKEN_FILE`` and ``AWS_ROLE_ARN`` [and
   ``AWS_ROLE_SESSION_NAME``]: STS ``AssumeRoleWithWebIdentity`` at ``AWS_ENDPOINT_URL_STS``,
   else ``AWS_ENDPOINT_URL``, else ``https://sts.amazonaws.com/``;
5. ECS: ``AWS_CONTAINER_CREDENTIALS_RELATIVE_URI`` under ``http://169.254.170.2``, or
   ``AWS_CONTAINER_CREDENTIALS_FULL_URI`` (with ``AWS_CONTAINER_AUTHORIZATION_TOKEN`` as its
   ``Authorization`` header when set);
6. EC2 IMDSv2 at ``AWS_EC2_METADATA_SERVICE_ENDPOINT`` (default ``http://169.254.169.254``):
   PUT a session token, GET the role name, GET its credentials.

Credentials from 4-6 are cached in the client, keyed by their source.  Any authentication
failure clears the cache; when the refused credentials came from the cache and the server said
AuthenticationFailed (18), they are fetched afresh and the conversation is tried once more.
Errors are :class:`~mongo_sansio.errors.AuthenticationError` (code None when the credentials
could not be obtained; the server's code when it refused them); no secret is ever in one.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable, Generator, Mapping
from typing import Any, Final

import attrs

from mongo_sansio.auth.aws import CLIENT_NONCE_BYTES, MECHANISM, AwsConversation, AwsCredentials
from mongo_sansio.auth.http11 import HttpFailure, HttpRequest, HttpResponse, form_encode
from mongo_sansio.bson import Binary
from mongo_sansio.errors import AuthenticationError
from mongo_sansio.flow import ConnectionCommand
from mongo_sansio.uri.credential import Credential

__all__ = [
    "AwsEnvironment",
    "AwsCredentialCache",
    "AwsAuthenticator",
    "obtain_credentials",
    "ENVIRONMENT_VARIABLES",
    "REFRESH_MARGIN_SECONDS",
]

#: the environment variables the adapter passes in (all that MONGODB-AWS reads)
ENVIRONMENT_VARIABLES: Final = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_ROLE_ARN",
    "AWS_ROLE_SESSION_NAME",
    "AWS_ENDPOINT_URL_STS",
    "AWS_ENDPOINT_URL",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN",
    "AWS_EC2_METADATA_SERVICE_ENDPOINT",
)
#: cached credentials are used until this long before they expire
REFRESH_MARGIN_SECONDS: Final = 300.0
_AUTHENTICATION_FAILED: Final = 18
_ECS_HOST: Final = "http://169.254.170.2"
_EC2_ENDPOINT: Final = "http://169.254.169.254"
_STS_ENDPOINT: Final = "https://sts.amazonaws.com/"
_IMDS_TOKEN_TTL: Final = "30"

Flow = Generator[Any, Any, Any]


@attrs.frozen(repr=False)
class AwsEnvironment:
    """What the adapter saw when an authentication began (see the module docstring)."""

    variables: Mapping[str, str]
    wall_time: float
    read_file: Callable[[str], str] | None = attrs.field(default=None, eq=False)

    def __repr__(self) -> str:
        return f"AwsEnvironment(variables={sorted(self.variables)}, wall_time={self.wall_time})"

    def get(self, name: str) -> str | None:
        value = self.variables.get(name)
        return value or None


class AwsCredentialCache:
    """The temporary credentials a client fetched, keyed by where they came from.  Written
    whole (one assignment), never locked: two connections may both fetch, the last wins."""

    def __init__(self) -> None:
        self._entry: tuple[str, AwsCredentials] | None = None

    def get(self, key: str, wall_time: float) -> AwsCredentials | None:
        entry = self._entry
        if entry is None or entry[0] != key:
            return None
        credentials = entry[1]
        expiration = credentials.expiration
        if expiration is not None and expiration - REFRESH_MARGIN_SECONDS <= wall_time:
            return None
        return credentials

    def put(self, key: str, credentials: AwsCredentials) -> None:
        self._entry = (key, credentials)

    def clear(self) -> None:
        self._entry = None


def _source_key(environment: AwsEnvironment) -> str | None:
    """Which fetched source applies (None: the environment's own keys, not cached)."""
    if environment.get("AWS_ACCESS_KEY_ID") and environment.get("AWS_SECRET_ACCESS_KEY"):
        return None
    if environment.get("AWS_WEB_IDENTITY_TOKEN_FILE") and environment.get("AWS_ROLE_ARN"):
        return f"web-identity {environment.get('AWS_ROLE_ARN')} {_sts_endpoint(environment)}"
    relative = environment.get("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")
    if relative is not None:
        return f"ecs {_ECS_HOST}{relative}"
    full = environment.get("AWS_CONTAINER_CREDENTIALS_FULL_URI")
    if full is not None:
        return f"ecs {full}"
    return f"ec2 {environment.get('AWS_EC2_METADATA_SERVICE_ENDPOINT') or _EC2_ENDPOINT}"


def obtain_credentials(
    credential: Credential,
    environment: AwsEnvironment,
    cache: AwsCredentialCache,
    session_name: str,
) -> Generator[HttpRequest, HttpResponse | HttpFailure, tuple[AwsCredentials, bool]]:
    """The credentials to sign with and whether they came from the cache."""
    if credential.username is not None and credential.password is not None:
        token = credential.mechanism_properties.get("AWS_SESSION_TOKEN")
        return AwsCredentials(credential.username, credential.password, token or None), False
    key = _source_key(environment)
    if key is not None:
        cached = cache.get(key, environment.wall_time)
        if cached is not None:
            return cached, True
    access_key = environment.get("AWS_ACCESS_KEY_ID")
    secret = environment.get("AWS_SECRET_ACCESS_KEY")
    if access_key is not None and secret is not None:
        return AwsCredentials(access_key, secret, environment.get("AWS_SESSION_TOKEN")), False
    assert key is not None
    if key.startswith("web-identity"):
        fetched = yield from _web_identity(environment, session_name)
    elif key.startswith("ecs"):
        fetched = yield from _ecs(environment)
    else:
        fetched = yield from _ec2(environment)
    cache.put(key, fetched)
    return fetched, False


# --- the sources ---------------------------------------------------------------------------------


def _sts_endpoint(environment: AwsEnvironment) -> str:
    return (
        environment.get("AWS_ENDPOINT_URL_STS")
        or environment.get("AWS_ENDPOINT_URL")
        or _STS_ENDPOINT
    )


def _web_identity(
    environment: AwsEnvironment, session_name: str
) -> Generator[HttpRequest, Any, AwsCredentials]:
    path = environment.get("AWS_WEB_IDENTITY_TOKEN_FILE")
    role_arn = environment.get("AWS_ROLE_ARN")
    assert path is not None and role_arn is not None
    if environment.read_file is None:
        raise _failure("web identity", "this client cannot read the token file")
    try:
        token = environment.read_file(path).strip()
    except Exception as exc:  # noqa: BLE001 - whatever the reader raises (OSError, decoding)
        raise _failure("web identity", f"cannot read AWS_WEB_IDENTITY_TOKEN_FILE: {exc}") from None
    body = form_encode(
        {
            "Action": "AssumeRoleWithWebIdentity",
            "RoleSessionName": environment.get("AWS_ROLE_SESSION_NAME") or session_name,
            "RoleArn": role_arn,
            "WebIdentityToken": token,
            "Version": "2011-06-15",
        }
    )
    url = _sts_endpoint(environment)
    response = yield HttpRequest(
        "POST",
        url,
        (("Accept", "application/json"), ("Content-Type", "application/x-www-form-urlencoded")),
        body,
    )
    document = _json_ok(response, "web identity (STS AssumeRoleWithWebIdentity)")
    found = _find_credentials(document)
    if found is None:
        raise _failure("web identity", "the STS response holds no Credentials")
    return _credentials_from(found, "web identity", token_field="SessionToken")


def _ecs(environment: AwsEnvironment) -> Generator[HttpRequest, Any, AwsCredentials]:
    relative = environment.get("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")
    headers: tuple[tuple[str, str], ...] = (("Accept", "application/json"),)
    if relative is not None:
        url = f"{_ECS_HOST}{relative if relative.startswith('/') else '/' + relative}"
    else:
        url = environment.get("AWS_CONTAINER_CREDENTIALS_FULL_URI") or ""
        authorization = environment.get("AWS_CONTAINER_AUTHORIZATION_TOKEN")
        if authorization is not None:
            headers += (("Authorization", authorization),)
    response = yield HttpRequest("GET", url, headers)
    return _credentials_from(_json_ok(response, "the ECS endpoint"), "the ECS endpoint")


def _ec2(environment: AwsEnvironment) -> Generator[HttpRequest, Any, AwsCredentials]:
    base = (environment.get("AWS_EC2_METADATA_SERVICE_ENDPOINT") or _EC2_ENDPOINT).rstrip("/")
    where = "EC2 instance metadata"
    response = yield HttpRequest(
        "PUT",
        f"{base}/latest/api/token",
        (("X-aws-ec2-metadata-token-ttl-seconds", _IMDS_TOKEN_TTL),),
    )
    token = _text_ok(response, where + " (token)")
    headers = (("X-aws-ec2-metadata-token", token),)
    roles_url = f"{base}/latest/meta-data/iam/security-credentials/"
    response = yield HttpRequest("GET", roles_url, headers)
    roles = _text_ok(response, where + " (role name)").split()
    if not roles:
        raise _failure(where, "the instance has no IAM role")
    response = yield HttpRequest("GET", roles_url + roles[0], headers)
    return _credentials_from(_json_ok(response, where), where)


# --- parsing -------------------------------------------------------------------------------------


def _failure(where: str, why: str) -> AuthenticationError:
    return AuthenticationError(f"{MECHANISM}: cannot get credentials from {where}: {why}")


def _text_ok(response: HttpResponse | HttpFailure, where: str) -> str:
    if isinstance(response, HttpFailure):
        raise _failure(where, response.reason)
    if not isinstance(response, HttpResponse):
        raise _failure(where, "no response")
    if response.status != 200:
        raise _failure(where, f"HTTP status {response.status}")
    try:
        return response.body.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise _failure(where, "the response is not UTF-8 text") from None


def _json_ok(response: HttpResponse | HttpFailure, where: str) -> Mapping[str, Any]:
    text = _text_ok(response, where)
    try:
        document = json.loads(text)
    except ValueError:
        raise _failure(where, "the response is not JSON") from None
    if not isinstance(document, dict):
        raise _failure(where, "the response is not a JSON object")
    return document


def _find_credentials(document: Mapping[str, Any], depth: int = 0) -> Mapping[str, Any] | None:
    """``Credentials`` in STS's JSON: at the top (the spec's example) or nested in
    ``AssumeRoleWithWebIdentityResponse.AssumeRoleWithWebIdentityResult`` (STS's own)."""
    found = document.get("Credentials")
    if isinstance(found, dict):
        return found
    if depth < 3:
        for value in document.values():
            if isinstance(value, dict):
                nested = _find_credentials(value, depth + 1)
                if nested is not None:
                    return nested
    return None


def _credentials_from(
    document: Mapping[str, Any], where: str, *, token_field: str = "Token"
) -> AwsCredentials:
    access_key = document.get("AccessKeyId")
    secret = document.get("SecretAccessKey")
    token = document.get(token_field)
    if not (isinstance(access_key, str) and access_key and isinstance(secret, str) and secret):
        raise _failure(where, "the response lacks AccessKeyId or SecretAccessKey")
    if token is not None and not isinstance(token, str):
        raise _failure(where, f"the response's {token_field} is not a string")
    return AwsCredentials(access_key, secret, token or None, _expiration(document, where))


def _expiration(document: Mapping[str, Any], where: str) -> float | None:
    value = document.get("Expiration")
    if value is None:
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)  # STS's JSON gives epoch seconds
    if isinstance(value, str):
        try:
            moment = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise _failure(where, f"the Expiration {value!r} is not a date") from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=datetime.UTC)
        return moment.timestamp()
    raise _failure(where, "the Expiration is neither a date nor a number")


# --- the authenticator ---------------------------------------------------------------------------


class AwsAuthenticator:
    """Authenticates one connection with MONGODB-AWS (see the module docstring).  No
    speculative authentication: the first step needs nothing from hello, but the spec does
    not define it for this mechanism."""

    def __init__(
        self,
        credential: Credential,
        *,
        random_bytes: Callable[[], bytes],
        environment: Callable[[], AwsEnvironment] | None,
        cache: AwsCredentialCache,
    ) -> None:
        self._credential = credential
        self._random_bytes = random_bytes
        self._environment = environment
        self._cache = cache
        self._started = False

    def __repr__(self) -> str:
        return f"AwsAuthenticator(username={self._credential.username!r}, password=<hidden>)"

    @property
    def credential(self) -> Credential:
        return self._credential

    def speculative_document(self) -> Mapping[str, Any] | None:
        return None

    def _nonce(self) -> bytes:
        drawn = b""
        while len(drawn) < CLIENT_NONCE_BYTES:
            drawn += self._random_bytes()
        return drawn[:CLIENT_NONCE_BYTES]

    def flow(
        self,
        *,
        sasl_supported_mechs: Any = None,
        speculative_reply: Mapping[str, Any] | None = None,
    ) -> Flow:
        return self._flow()

    def _snapshot(self) -> AwsEnvironment:
        if self._environment is None:  # the adapter gives the wall clock SigV4 needs
            raise AuthenticationError(f"{MECHANISM}: this client gives no AWS environment")
        return self._environment()

    def _flow(self) -> Flow:
        environment = self._snapshot()
        session_name = "mongo-sansio-" + self._random_bytes().hex()[:16]
        credentials, cached = yield from obtain_credentials(
            self._credential, environment, self._cache, session_name
        )
        try:
            yield from self._conversation(credentials, environment.wall_time)
            return
        except AuthenticationError as error:
            self._cache.clear()
            if not (cached and error.code == _AUTHENTICATION_FAILED):
                raise
        environment = self._snapshot()
        credentials, _ = yield from obtain_credentials(
            self._credential, environment, self._cache, session_name
        )
        try:
            yield from self._conversation(credentials, environment.wall_time)
        except AuthenticationError:
            self._cache.clear()
            raise

    def _conversation(self, credentials: AwsCredentials, wall_time: float) -> Flow:
        # imported here: mechanisms imports this module for its dispatch
        from mongo_sansio.auth.mechanisms import _check_ok, _sasl_continue, _sasl_fields

        conversation = AwsConversation(self._nonce())
        start = {
            "saslStart": 1,
            "mechanism": MECHANISM,
            "payload": Binary(conversation.client_first()),
        }
        reply = yield ConnectionCommand(db=self._credential.source, body=start)
        _check_ok(reply, MECHANISM)
        conversation_id, payload, done = _sasl_fields(reply, MECHANISM)
        if done:
            raise AuthenticationError(f"{MECHANISM}: the server ended the conversation early")
        conversation.handle_server_first(payload)
        final = conversation.client_final(credentials, wall_time)
        reply = yield ConnectionCommand(
            db=self._credential.source, body=_sasl_continue(conversation_id, final)
        )
        _check_ok(reply, MECHANISM)
        if _sasl_fields(reply, MECHANISM)[2] is not True:
            raise AuthenticationError(f"{MECHANISM}: the server did not complete the conversation")
