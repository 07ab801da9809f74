"""The SASL side the pure server sees: an injected authenticator, no SCRAM code of its own.

Inputs: the mechanism, the authentication database and the client's payloads of
``saslStart``/``saslContinue`` (also speculative ``hello``).  Outputs: server payloads, a
``done`` flag, and the authenticated user name; a failed proof raises :class:`SaslFailure`,
which the command layer answers with mongod's error 18 AuthenticationFailed.

SCRAM itself lives outside the core (scramp draws nonces from ``secrets``): the glue is
``mongo_sansio.transports.sim_auth.ScramAuthenticator``, which satisfies :class:`Authenticator`.
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["Authenticator", "SaslConversation", "SaslFailure"]


class SaslFailure(Exception):
    """The client's credentials were wrong (or the conversation broke): error 18."""


class SaslConversation(Protocol):
    """One conversation: feed each client payload, get the server's answer and ``done``."""

    @property
    def user(self) -> str: ...

    def step(self, payload: bytes) -> tuple[bytes, bool]: ...


class Authenticator(Protocol):
    def mechanisms(self, user: str, database: str) -> list[str] | None:
        """The mechanisms ``user`` may use (saslSupportedMechs), None when unknown."""
        ...

    def start(self, mechanism: str, database: str, payload: bytes) -> tuple[SaslConversation, bytes, bool]:
        """Begin a conversation with the client's first payload: (conversation, reply, done).
        Raises SaslFailure for an unknown user, mechanism or malformed payload."""
        ...
