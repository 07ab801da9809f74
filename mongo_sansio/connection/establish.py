"""Establishing a connection: the handshake, then authentication, as one flow.

Inputs: the server's address, the :class:`~.handshake.HandshakeOptions`, the ``client``
metadata document, and an authenticator (or None).  The flow yields
:class:`~mongo_sansio.flow.ConnectionCommand` requests -- the hello first, then whatever the
authenticator needs -- and receives each reply document from the adapter, which runs them on
the new connection (``Connection.send_command(..., op_query=request.op_query)``).  An
authenticator may also yield runtime primitives (MONGODB-OIDC's token requests, a wait, the
clock), which the adapter carries out and answers in the same way.
Output (the generator's return value): the :class:`~.description.ConnectionDescription`,
which the adapter applies with ``Connection.set_description`` and hands to CMAP/SDAM.

Errors: an ``ok: 0`` hello raises the typed :class:`~mongo_sansio.errors.ServerError`; a
malformed reply :class:`~.description.InvalidHelloReply`; a server whose wire versions do not
overlap ours, or a load balancer's backend without ``serviceId``,
:class:`~mongo_sansio.errors.IncompatibleServerError`; authentication failures are the
authenticator's (:class:`~mongo_sansio.errors.AuthenticationError`).  A NetworkError the
adapter throws in propagates unchanged.  On any error the adapter closes the connection.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from typing import Any, Protocol

from mongo_sansio.connection.description import ConnectionDescription, check_compatible
from mongo_sansio.connection.handshake import HandshakeOptions, build_hello
from mongo_sansio.flow import ConnectionCommand
from mongo_sansio.sdam.description import Address

__all__ = ["AuthenticatorLike", "establish"]


class AuthenticatorLike(Protocol):
    """What :func:`establish` needs from an authenticator (``mongo_sansio.auth``'s
    Authenticator satisfies it): the speculative first step to put in the hello, and the
    flow that finishes authentication given what the hello reply said."""

    def speculative_document(self) -> Mapping[str, Any] | None: ...

    def flow(
        self,
        *,
        sasl_supported_mechs: tuple[str, ...] | None,
        speculative_reply: Mapping[str, Any] | None,
    ) -> Generator[ConnectionCommand, Mapping[str, Any], object]: ...


def establish(
    *,
    address: Address,
    options: HandshakeOptions,
    metadata: Mapping[str, Any],
    authenticator: AuthenticatorLike | None = None,
) -> Generator[ConnectionCommand, Mapping[str, Any], ConnectionDescription]:
    """The handshake and authentication flow (see the module documentation)."""
    speculative = None if authenticator is None else authenticator.speculative_document()
    body, op_query = build_hello(options, metadata, speculative)
    reply = yield ConnectionCommand(db="admin", body=body, op_query=op_query)
    description = ConnectionDescription.from_hello(
        address, reply, compressors=options.compressors, load_balanced=options.load_balanced
    )
    check_compatible(description, load_balanced=options.load_balanced)
    if authenticator is not None:
        yield from authenticator.flow(
            sasl_supported_mechs=description.sasl_supported_mechs,
            speculative_reply=description.speculative_authenticate,
        )
    return description
