"""SCRAM-SHA-1 and SCRAM-SHA-256 for the simulated replica set, through scramp.

The pure server (:mod:`mongo_sansio.testing.server`) never does SCRAM itself: it is handed an
:class:`~mongo_sansio.testing.server.auth.Authenticator`, and this module is the one that wraps
scramp (which draws its nonces from ``secrets``, so it may not live under the core).

Inputs: ``{user: password}`` at construction (users of the ``admin`` database, or of
``database``); per conversation the client's SASL payloads.  Outputs: the server's payloads,
``done`` flags, and :class:`~mongo_sansio.testing.server.auth.SaslFailure` on a wrong proof or
an unknown user (answered by the server as error 18).

Credentials as mongod keeps them: SCRAM-SHA-1 derives from
``md5(f"{user}:mongo:{password}").hexdigest()`` (MongoDB's legacy digest), SCRAM-SHA-256 from
the SASLprep'd password (scramp applies SASLprep); iteration counts are mongod's defaults
(10000 and 15000); salts are derived from the user name so a run is reproducible.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from scramp import ScramException, ScramMechanism  # type: ignore[import-untyped,unused-ignore]

from mongo_sansio.testing.server.auth import SaslConversation, SaslFailure

__all__ = ["ScramAuthenticator", "MECHANISMS"]

MECHANISMS = ("SCRAM-SHA-1", "SCRAM-SHA-256")
_ITERATIONS = {"SCRAM-SHA-1": 10000, "SCRAM-SHA-256": 15000}


def mongo_password(mechanism: str, user: str, password: str) -> str:
    if mechanism == "SCRAM-SHA-1":
        return hashlib.md5(f"{user}:mongo:{password}".encode()).hexdigest()  # noqa: S324 -- MongoDB's digest
    return password


class _Conversation:
    def __init__(self, server: Any, user: str) -> None:
        self._server = server
        self._user = user
        self._step = 0

    @property
    def user(self) -> str:
        return self._user

    def step(self, payload: bytes) -> tuple[bytes, bool]:
        if self._step != 0:
            raise SaslFailure("the SCRAM conversation is already complete")
        self._step = 1
        try:
            self._server.set_client_final(payload.decode("utf-8"))
            final = self._server.get_server_final()
        except (ScramException, UnicodeDecodeError) as error:
            raise SaslFailure(str(error)) from None
        return final.encode(), True


class ScramAuthenticator:
    """An :class:`~mongo_sansio.testing.server.auth.Authenticator` over fixed users."""

    def __init__(self, users: Mapping[str, str], *, database: str = "admin") -> None:
        self.database = database
        self._mechanisms = {name: ScramMechanism(name) for name in MECHANISMS}
        self._auth_info: dict[tuple[str, str], tuple[bytes, bytes, bytes, int]] = {}
        for user, password in users.items():
            for name, mechanism in self._mechanisms.items():
                salt = hashlib.sha256(f"{name}:{user}".encode()).digest()[:16]
                info = mechanism.make_auth_info(
                    mongo_password(name, user, password), iteration_count=_ITERATIONS[name], salt=salt
                )
                self._auth_info[(name, user)] = info

    def mechanisms(self, user: str, database: str) -> list[str] | None:
        if database != self.database or ("SCRAM-SHA-256", user) not in self._auth_info:
            return None
        return list(MECHANISMS)

    def start(self, mechanism: str, database: str, payload: bytes) -> tuple[SaslConversation, bytes, bool]:
        chosen = self._mechanisms.get(mechanism)
        if chosen is None or database != self.database:
            raise SaslFailure(f"no {mechanism} users in {database}")
        seen: list[str] = []

        def lookup(user: str) -> tuple[bytes, bytes, bytes, int]:
            seen.append(user)
            info = self._auth_info.get((mechanism, user))
            if info is None:
                raise ScramException("unknown user")
            return info

        server = chosen.make_server(lookup)
        try:
            server.set_client_first(payload.decode("utf-8"))
            first = server.get_server_first()
        except (ScramException, UnicodeDecodeError) as error:
            raise SaslFailure(str(error)) from None
        return _Conversation(server, seen[-1] if seen else ""), first.encode(), False
