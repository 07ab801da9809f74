"""hello / isMaster and SASL authentication (saslStart, saslContinue, speculative auth).

Inputs: the command document, the connection state (first hello or not, the conversation in
progress), the cluster's injected :class:`~.auth.Authenticator`.  Outputs: the hello reply
(with ``saslSupportedMechs`` and ``speculativeAuthenticate`` when asked), a
:class:`~.context.Waiting` for an awaitable hello, SASL replies ``{conversationId, done,
payload}``; wrong credentials raise mongod's error 18 AuthenticationFailed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mongo_sansio.bson import Binary
from mongo_sansio.testing.engine import CommandError
from mongo_sansio.testing.server.auth import SaslFailure
from mongo_sansio.testing.server.context import CommandSpec, Context, Outcome, Waiting
from mongo_sansio.testing.server.handshake import await_deadline, hello_reply, negotiate_compression
from mongo_sansio.testing.server.load_balancer import balanced_hello
from mongo_sansio.testing.server.oidc import MECHANISM as OIDC_MECHANISM
from mongo_sansio.testing.server.oidc import OidcConversation

__all__ = ["HELLO_COMMANDS", "AUTH_FAILED"]

AUTH_FAILED = CommandError(18, "AuthenticationFailed", "Authentication failed.")
CONVERSATION_ID = 1


def _payload_bytes(value: Any) -> bytes:
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    if isinstance(value, str):  # some clients send the payload as a string
        return value.encode()
    raise CommandError(14, "TypeMismatch", "the SASL payload must be binary data")


def hello(ctx: Context) -> Outcome:
    state = ctx.state
    body = ctx.body
    first = not state.handshake_done
    if first:
        state.compression = negotiate_compression(body.get("compression"))
        client = body.get("client")
        if isinstance(client, Mapping):
            application = client.get("application")
            if isinstance(application, Mapping) and isinstance(application.get("name"), str):
                state.app_name = application["name"]
        state.handshake_done = True
    extras = _auth_fields(ctx)

    def answer(now: float) -> dict[str, Any]:
        reply = hello_reply(
            ctx.cluster, ctx.member, body, command_name=ctx.request.name,
            connection_id=state.connection_id, compression=state.compression if first else None, now=now,
        )
        reply.update(extras)
        if state.via_load_balancer:
            reply = balanced_hello(reply, ctx.member, state, body, first=first)
        reply["ok"] = 1.0
        return reply

    deadline = await_deadline(ctx.member, body, ctx.now)
    if deadline is None:
        return answer(ctx.now)
    counter, process = ctx.member.counter, ctx.member.process_id

    def poll(now: float, timed_out: bool) -> Outcome | None:
        moved = ctx.member.counter != counter or ctx.member.process_id != process
        return answer(now) if moved or timed_out else None

    return Waiting(deadline, poll, interruptible=False)


def _auth_fields(ctx: Context) -> dict[str, Any]:
    authenticator = ctx.cluster.authenticator
    out: dict[str, Any] = {}
    if not ctx.cluster.auth_enabled:
        return out
    asked = ctx.body.get("saslSupportedMechs")
    if authenticator is not None and isinstance(asked, str) and "." in asked:
        database, user = asked.split(".", 1)
        mechanisms = authenticator.mechanisms(user, database)
        if mechanisms is not None:
            out["saslSupportedMechs"] = mechanisms
    speculative = ctx.body.get("speculativeAuthenticate")
    if isinstance(speculative, Mapping) and speculative.get("saslStart"):
        try:
            out["speculativeAuthenticate"] = _start(ctx, speculative, str(speculative.get("db", ctx.db)))
        except CommandError:
            pass  # mongod leaves the field out; the client then authenticates normally and fails
    return out


#: the SASL mechanisms the server knows (the authenticator says whom it accepts)
_SASL_MECHANISMS = ("SCRAM-SHA-1", "SCRAM-SHA-256", "MONGODB-AWS")


def _start(ctx: Context, command: Mapping[str, Any], database: str) -> dict[str, Any]:
    authenticator = ctx.cluster.authenticator
    mechanism = command.get("mechanism")
    if mechanism == OIDC_MECHANISM and ctx.cluster.oidc is not None:
        return _start_oidc(ctx, command, database)
    if authenticator is None:
        raise CommandError(334, "MechanismUnavailable", "Authentication is not enabled on this server")
    if mechanism not in _SASL_MECHANISMS:
        raise CommandError(
            334, "MechanismUnavailable", f"Received authentication for mechanism {mechanism} which is unknown or not enabled"
        )
    options = command.get("options")
    skip_empty = isinstance(options, Mapping) and options.get("skipEmptyExchange") is True
    skip_empty = skip_empty or not str(mechanism).startswith("SCRAM-")  # only SCRAM has the extra step
    try:
        conversation, payload, done = authenticator.start(str(mechanism), database, _payload_bytes(command.get("payload")))
    except SaslFailure:
        raise AUTH_FAILED from None
    ctx.state.conversation = conversation
    ctx.state.conversation_db = database
    ctx.state.conversation_done = False
    ctx.state.skip_empty_exchange = skip_empty
    return _sasl_reply(ctx, payload, done)


def _start_oidc(ctx: Context, command: Mapping[str, Any], database: str) -> dict[str, Any]:
    """MONGODB-OIDC (users of ``$external``): one step with a JWT, or two with the IdpInfo."""
    issuer = ctx.cluster.oidc
    assert issuer is not None
    if database != "$external":
        raise CommandError(2, "BadValue", "MONGODB-OIDC must be used with authentication database $external")
    try:
        conversation, payload, done = issuer.start(_payload_bytes(command.get("payload")), ctx.cluster.wall(ctx.now))
    except SaslFailure as failure:
        raise _oidc_failed(failure) from None
    ctx.state.conversation = conversation
    ctx.state.conversation_db = database
    ctx.state.conversation_done = False
    ctx.state.skip_empty_exchange = True
    return _sasl_reply(ctx, payload, done)


def _oidc_failed(failure: SaslFailure) -> CommandError:
    # mongod logs why a token was refused; the simulator, a test peer, also says it
    return CommandError(18, "AuthenticationFailed", f"Authentication failed: {failure}")


def _sasl_reply(ctx: Context, payload: bytes, done: bool) -> dict[str, Any]:
    state = ctx.state
    if done and state.conversation is not None:
        if not state.skip_empty_exchange and not state.conversation_done:
            state.conversation_done = True  # SCRAM's empty final round trip comes next
            return {"conversationId": CONVERSATION_ID, "done": False, "payload": Binary(payload), "ok": 1.0}
        state.user = state.conversation.user
        state.user_db = state.conversation_db
        state.auth_expires = getattr(state.conversation, "expires", None)
        state.conversation = None
    return {"conversationId": CONVERSATION_ID, "done": done, "payload": Binary(payload), "ok": 1.0}


def sasl_start(ctx: Context) -> Outcome:
    return _start(ctx, ctx.body, ctx.db)


def sasl_continue(ctx: Context) -> Outcome:
    state = ctx.state
    conversation = state.conversation
    if conversation is None or ctx.body.get("conversationId") != CONVERSATION_ID:
        raise CommandError(17, "ProtocolError", "No SASL session state found")
    if state.conversation_done:
        state.user = conversation.user
        state.user_db = state.conversation_db
        state.conversation = None
        return {"conversationId": CONVERSATION_ID, "done": True, "payload": Binary(b""), "ok": 1.0}
    try:
        payload, done = conversation.step(_payload_bytes(ctx.body.get("payload")))
    except SaslFailure as failure:
        state.conversation = None
        if isinstance(conversation, OidcConversation):
            raise _oidc_failed(failure) from None
        raise AUTH_FAILED from None
    return _sasl_reply(ctx, payload, done)


def connection_status(ctx: Context) -> Outcome:
    """Who the connection authenticated as (mongod's ``connectionStatus``; roles are not
    modelled: every simulated user may do everything)."""
    state = ctx.state
    users = [] if state.user is None else [{"user": state.user, "db": state.user_db or ctx.db}]
    return {"authInfo": {"authenticatedUsers": users, "authenticatedUserRoles": []}, "ok": 1.0}


HELLO_COMMANDS = [
    CommandSpec("hello", hello, requires_auth=False),
    CommandSpec("isMaster", hello, requires_auth=False),
    CommandSpec("ismaster", hello, requires_auth=False),
    CommandSpec("saslStart", sasl_start, requires_auth=False),
    CommandSpec("saslContinue", sasl_continue, requires_auth=False),
    CommandSpec("connectionStatus", connection_status, requires_auth=False),
]
