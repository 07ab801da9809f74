"""Authenticating a new connection: the MongoDB-level conversation, written once as a flow.

Inputs: a :class:`~mongo_sansio.uri.credential.Credential`, random bytes for the SCRAM client
nonce (the adapter draws them, e.g. ``os.urandom(24)``), an optional shared
:class:`~mongo_sansio.auth.scram.ScramCache`, and from the handshake's ``hello`` reply its
``saslSupportedMechs`` and ``speculativeAuthenticate`` fields.  Outputs: the document for
hello's ``speculativeAuthenticate`` (:meth:`Authenticator.speculative_document`; asking for
``saslSupportedMechs`` is the handshake's part), then, from :meth:`Authenticator.flow`,
:class:`~mongo_sansio.flow.ConnectionCommand` requests (saslStart, saslContinue, authenticate)
to run on the connection; the adapter sends back each raw reply, ``ok: 0`` included.

The flow returns None once the server has accepted the credential (and, for SCRAM, proved it
knows the password) or raises :class:`~mongo_sansio.errors.AuthenticationError`: for an
``ok: 0`` reply with the server's ``code``, for anything wrong in what the server sent with
``code`` None.  Neither message nor attributes ever hold the password or payload bytes.  A
:class:`~mongo_sansio.errors.NetworkError` the adapter throws in passes through untouched.

Mechanisms (source/auth/auth.md, and the handshake spec's speculative authentication):

* none given: speculate with SCRAM-SHA-256; without a speculative reply, SCRAM-SHA-256 when
  ``saslSupportedMechs`` lists it, SCRAM-SHA-1 otherwise (also when the field is absent: every
  server we support is 3.0 or newer, so never MONGODB-CR);
* SCRAM-SHA-1 / SCRAM-SHA-256: saslStart with ``options: {skipEmptyExchange: true}``, one
  saslContinue with the proof, and one empty saslContinue more for servers that ignore the
  option; a speculative reply replaces the saslStart round trip;
* PLAIN: one saslStart with ``\\0user\\0password`` (RFC 4616: the productions are form-free and
  preparing them is the server's business, so the password goes as typed); no speculation;
* MONGODB-X509: one ``authenticate`` command, ``user`` only when given; a speculative reply
  means it is already done;
* MONGODB-OIDC: :class:`~mongo_sansio.auth.oidc.OidcAuthenticator`, not this class;
* MONGODB-AWS: not this class's; the client builds an
  :class:`~mongo_sansio.auth.aws_credentials.AwsAuthenticator` for it;
* GSSAPI: refused at construction (not supported yet).
"""

from __future__ import annotations

import base64
from collections.abc import Generator, Mapping, Sequence
from typing import Any, Final

from mongo_sansio._numbers import whole_number
from mongo_sansio.auth.saslprep import SASLprepError
from mongo_sansio.auth.scram import SCRAM_MECHANISMS, ScramCache, ScramClient, ScramMechanism
from mongo_sansio.bson import Binary
from mongo_sansio.errors import (
    AuthenticationError,
    ConfigurationError,
    InvalidOperation,
    command_succeeded,
)
from mongo_sansio.flow import ConnectionCommand
from mongo_sansio.uri.credential import Credential

__all__ = ["Authenticator", "SUPPORTED_MECHANISMS"]

#: What :class:`Authenticator` can do (None: negotiate SCRAM).
SUPPORTED_MECHANISMS: Final = (None, "SCRAM-SHA-1", "SCRAM-SHA-256", "PLAIN", "MONGODB-X509")

# Fewer random bytes than this would make a guessable nonce (base64 of 15 bytes is the
# RFC 7677 example's 20 characters).
_MIN_NONCE_BYTES: Final = 15
_X509: Final = "MONGODB-X509"

AuthFlow = Generator[ConnectionCommand, Mapping[str, Any], None]


class Authenticator:
    """Authenticates one connection with one credential.  Create one per connection.

    Call :meth:`speculative_document` (optionally) while building ``hello``, then run
    :meth:`flow` once with what the ``hello`` reply said.
    """

    def __init__(
        self, credential: Credential, *, nonce: bytes, cache: ScramCache | None = None
    ) -> None:
        mechanism = credential.mechanism
        if mechanism not in SUPPORTED_MECHANISMS:
            raise ConfigurationError(f"authMechanism {mechanism} is not supported yet")
        if mechanism != _X509 and (credential.username is None or credential.password is None):
            raise ConfigurationError(
                f"authMechanism {mechanism or '(default)'} needs a username and a password"
            )
        if mechanism == "PLAIN":
            _plain_payload(credential)  # refuse a NUL or a lone surrogate now, not mid-handshake
        if not isinstance(nonce, bytes | bytearray) or len(nonce) < _MIN_NONCE_BYTES:
            raise ConfigurationError(
                f"the authentication nonce must be at least {_MIN_NONCE_BYTES} random bytes"
            )
        self._credential = credential
        self._nonce = base64.b64encode(nonce).decode("ascii")
        self._cache = cache if cache is not None else ScramCache()
        self._speculative_document: dict[str, Any] | None = None
        self._speculative_scram: ScramClient | None = None
        self._flow_started = False

    def __repr__(self) -> str:
        credential = self._credential
        return (
            f"Authenticator(mechanism={credential.mechanism!r}, username={credential.username!r}, "
            f"source={credential.source!r}, password=<hidden>)"
        )

    __str__ = __repr__

    @property
    def credential(self) -> Credential:
        return self._credential

    def speculative_document(self) -> dict[str, Any] | None:
        """The value of hello's ``speculativeAuthenticate`` (None: do not speculate).

        SCRAM gets its saslStart plus ``db``; with no mechanism given, SCRAM-SHA-256, unless
        SASLprep refuses the password (negotiation may still pick SCRAM-SHA-1, which does not
        prepare it).  PLAIN never speculates.  Calling again returns the same document: one
        conversation is speculated per connection.
        """
        if self._speculative_document is None:
            mechanism = self._credential.mechanism
            if mechanism == "PLAIN":
                return None
            if mechanism == _X509:
                document = self._x509_command()
            else:
                try:
                    client = self._scram_client(_scram_mechanism(mechanism, ["SCRAM-SHA-256"]))
                except SASLprepError:
                    if mechanism is not None:
                        raise
                    return None
                document = self._sasl_start(client.mechanism, client.client_first())
                self._speculative_scram = client
            self._speculative_document = {**document, "db": self._credential.source}
        return dict(self._speculative_document)

    def flow(
        self,
        *,
        sasl_supported_mechs: Sequence[str] | None,
        speculative_reply: Mapping[str, Any] | None,
    ) -> AuthFlow:
        """The conversation; pass hello's ``saslSupportedMechs`` and ``speculativeAuthenticate``
        fields (None when absent).  Runs once."""
        if self._flow_started:
            raise InvalidOperation(
                "an Authenticator runs one conversation; make one per connection"
            )
        if speculative_reply is not None and self._speculative_document is None:
            raise InvalidOperation("a speculative reply without a speculative_document() sent")
        self._flow_started = True
        mechanism = self._credential.mechanism
        if mechanism == _X509:
            return self._x509_flow(speculative_reply)
        if mechanism == "PLAIN":
            return self._plain_flow()
        if speculative_reply is not None and self._speculative_scram is not None:
            return self._scram_flow(self._speculative_scram, speculative_reply)
        client = self._scram_client(_scram_mechanism(mechanism, sasl_supported_mechs))
        return self._scram_flow(client, None)

    # --- the conversations --------------------------------------------------------------------

    def _x509_flow(self, speculative_reply: Mapping[str, Any] | None) -> AuthFlow:
        if speculative_reply is not None:
            return  # the server authenticated us along with hello
        reply = yield self._command(self._x509_command())
        _check_ok(reply, _X509)

    def _plain_flow(self) -> AuthFlow:
        reply = yield self._command(self._sasl_start("PLAIN", _plain_payload(self._credential)))
        _check_ok(reply, "PLAIN")
        if _sasl_fields(reply, "PLAIN")[2] is not True:
            raise AuthenticationError("PLAIN: the server did not complete the conversation")

    def _scram_flow(
        self, client: ScramClient, speculative_reply: Mapping[str, Any] | None
    ) -> AuthFlow:
        mechanism = client.mechanism
        if speculative_reply is None:
            reply = yield self._command(self._sasl_start(mechanism, client.client_first()))
            _check_ok(reply, mechanism)
        else:
            reply = speculative_reply
            if not isinstance(reply, Mapping):
                raise _malformed(mechanism)
            if "ok" in reply:  # the field is not expected here; a failure is a failure all the same
                _check_ok(reply, mechanism)
        conversation_id, payload, done = _sasl_fields(reply, mechanism)
        if done:
            raise AuthenticationError(
                f"{mechanism}: the server ended the conversation before proving it knows the password"
            )
        client.handle_server_first(payload)
        reply = yield self._command(_sasl_continue(conversation_id, client.client_final()))
        _check_ok(reply, mechanism)
        _, payload, done = _sasl_fields(reply, mechanism)
        client.handle_server_final(payload)
        if done:
            return
        # A server older than 4.4 ignores skipEmptyExchange and wants one more, empty, step.
        reply = yield self._command(_sasl_continue(conversation_id, b""))
        _check_ok(reply, mechanism)
        if _sasl_fields(reply, mechanism)[2] is not True:
            raise AuthenticationError(f"{mechanism}: the server did not complete the conversation")

    # --- pieces -------------------------------------------------------------------------------

    def _scram_client(self, mechanism: ScramMechanism) -> ScramClient:
        credential = self._credential
        assert credential.username is not None and credential.password is not None  # __init__
        return ScramClient(
            mechanism, credential.username, credential.password, self._nonce, cache=self._cache
        )

    def _command(self, body: Mapping[str, Any]) -> ConnectionCommand:
        return ConnectionCommand(db=self._credential.source, body=body)

    def _x509_command(self) -> dict[str, Any]:
        command: dict[str, Any] = {"authenticate": 1, "mechanism": _X509}
        if self._credential.username is not None:
            command["user"] = self._credential.username
        return command

    @staticmethod
    def _sasl_start(mechanism: str, payload: bytes) -> dict[str, Any]:
        command: dict[str, Any] = {
            "saslStart": 1,
            "mechanism": mechanism,
            "payload": Binary(payload),
            "autoAuthorize": 1,
        }
        if mechanism in SCRAM_MECHANISMS:
            command["options"] = {"skipEmptyExchange": True}
        return command


def _scram_mechanism(
    given: str | None, sasl_supported_mechs: Sequence[str] | None
) -> ScramMechanism:
    """The mechanism given, or the negotiated one when none was."""
    if given == "SCRAM-SHA-1":
        return "SCRAM-SHA-1"
    if given == "SCRAM-SHA-256":
        return "SCRAM-SHA-256"
    # The spec forbids validating the list: only whether SCRAM-SHA-256 is in it matters.
    if isinstance(sasl_supported_mechs, list | tuple) and "SCRAM-SHA-256" in sasl_supported_mechs:
        return "SCRAM-SHA-256"
    return "SCRAM-SHA-1"


def _plain_payload(credential: Credential) -> bytes:
    text = f"\x00{credential.username}\x00{credential.password}"
    if text.count("\x00") != 2:
        raise ConfigurationError(
            "authMechanism PLAIN: the username and password must not contain NUL"
        )
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise ConfigurationError(
            "authMechanism PLAIN: the username and password must be valid Unicode text"
        ) from None


def _sasl_continue(conversation_id: Any, payload: bytes) -> dict[str, Any]:
    return {"saslContinue": 1, "conversationId": conversation_id, "payload": Binary(payload)}


def _check_ok(reply: Any, mechanism: str) -> None:
    """Raise AuthenticationError (with the server's code) unless ``reply`` has a true ``ok``."""
    if not isinstance(reply, Mapping):
        raise _malformed(mechanism)
    if command_succeeded(reply):
        return
    code = whole_number(reply.get("code"))
    code_name = reply.get("codeName")
    errmsg = reply.get("errmsg")
    message = f"{mechanism} authentication failed"
    if isinstance(errmsg, str) and errmsg:
        message += f": {errmsg[:500]}"
    if code is not None:
        name = f", {code_name}" if isinstance(code_name, str) and code_name else ""
        message += f" (code {code}{name})"
    raise AuthenticationError(message, code=code)


def _sasl_fields(reply: Mapping[str, Any], mechanism: str) -> tuple[Any, bytes, bool]:
    """``conversationId``, ``payload`` and ``done`` of a SASL reply, checked for type."""
    conversation_id = reply.get("conversationId")
    payload = reply.get("payload")
    done = reply.get("done", False)
    if (
        not isinstance(conversation_id, int)
        or isinstance(conversation_id, bool)
        or not isinstance(payload, bytes | bytearray | memoryview)
        or not isinstance(done, bool)
    ):
        raise _malformed(mechanism)
    return conversation_id, bytes(payload), done


def _malformed(mechanism: str) -> AuthenticationError:
    return AuthenticationError(f"{mechanism}: the server's reply is malformed")
