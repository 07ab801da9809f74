"""MONGODB-AWS for the simulated replica set: the pure check (``testing.server.aws_sts``) with
the server nonce's random half and the wall clock supplied here, and an authenticator that
serves SCRAM users and AWS identities side by side.

Inputs: identities ``(access key id, secret[, session token])``; per conversation the client's
SASL payloads on ``$external``.  Outputs: the server's payloads and ``done`` flags, or
:class:`~mongo_sansio.testing.server.auth.SaslFailure` (error 18).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Sequence

from mongo_sansio.testing.server.auth import Authenticator, SaslConversation, SaslFailure
from mongo_sansio.testing.server.aws_sts import AwsIdentities

__all__ = ["AwsAuthenticator", "CombinedAuthenticator", "parse_aws_identity"]

EXTERNAL = "$external"


def parse_aws_identity(text: str) -> tuple[str, str, str | None]:
    """``ACCESS_KEY:SECRET[:SESSION_TOKEN]`` (the command line's ``--aws``)."""
    parts = text.split(":", 2)
    if len(parts) < 2 or not parts[0] or not parts[1]:
        raise ValueError("--aws takes ACCESS_KEY:SECRET[:SESSION_TOKEN]")
    return parts[0], parts[1], (parts[2] or None) if len(parts) == 3 else None


class AwsAuthenticator:
    """An :class:`~mongo_sansio.testing.server.auth.Authenticator` for AWS identities."""

    def __init__(
        self,
        identities: Iterable[Sequence[str | None]],
        *,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.identities = AwsIdentities(_table(identities))
        self._wall_clock = wall_clock

    def replace(self, identities: Iterable[Sequence[str | None]]) -> None:
        """Accept these identities from now on, instead of the earlier ones (rotated keys)."""
        self.identities = AwsIdentities(_table(identities), host=self.identities.host)

    def mechanisms(self, user: str, database: str) -> list[str] | None:
        return None

    def start(
        self, mechanism: str, database: str, payload: bytes
    ) -> tuple[SaslConversation, bytes, bool]:
        if mechanism != "MONGODB-AWS" or database != EXTERNAL:
            raise SaslFailure(f"no {mechanism} users in {database}")
        return self.identities.start(payload, os.urandom(32), self._wall_clock())


class CombinedAuthenticator:
    """Several authenticators; each conversation goes to the one serving its mechanism."""

    def __init__(self, parts: Sequence[tuple[Sequence[str], Authenticator]]) -> None:
        self._parts = list(parts)

    def mechanisms(self, user: str, database: str) -> list[str] | None:
        for _names, part in self._parts:
            found = part.mechanisms(user, database)
            if found is not None:
                return found
        return None

    def start(
        self, mechanism: str, database: str, payload: bytes
    ) -> tuple[SaslConversation, bytes, bool]:
        for names, part in self._parts:
            if mechanism in names:
                return part.start(mechanism, database, payload)
        raise SaslFailure(f"mechanism {mechanism} is not supported")


def _table(identities: Iterable[Sequence[str | None]]) -> dict[str, tuple[str, str | None]]:
    table: dict[str, tuple[str, str | None]] = {}
    for identity in identities:
        access_key, secret, *rest = identity
        if not access_key or not secret:
            raise ValueError("an AWS identity needs an access key id and a secret")
        table[access_key] = (secret, rest[0] if rest else None)
    return table
