"""The handshake's hello command, and the Stable API fields every command carries.

Inputs: :class:`HandshakeOptions` (from the client's validated options), the ``client``
metadata document (:func:`~mongo_sansio.connection.metadata.build_client_metadata`) and the
authenticator's speculative first step, if any.  Outputs: the hello body and whether it goes
as a legacy OP_QUERY (:func:`build_hello`); the command fields of a declared
:class:`ServerApi` (:func:`stable_api_fields`).

Which form (mongodb-handshake/handshake.md): with a Stable API version declared or in
load-balanced mode the first command is ``hello`` over OP_MSG; otherwise it is the legacy
``isMaster`` over OP_QUERY against ``admin.$cmd``, and later commands use OP_MSG.  Both carry
``helloOk: true`` so the reply says whether the server knows ``hello``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from mongo_sansio.errors import ConfigurationError
from mongo_sansio.uri.credential import Credential
from mongo_sansio.wire import COMPRESSOR_IDS

__all__ = [
    "ServerApi",
    "SERVER_API_VERSIONS",
    "BACKPRESSURE_VERSION",
    "HandshakeOptions",
    "build_hello",
    "stable_api_fields",
    "sasl_supported_mechs_user",
]

#: the API versions this client knows (versioned-api.md: unknown ones are refused)
SERVER_API_VERSIONS = frozenset({"1"})
#: the handshake's ``backpressure`` field: the Client Backpressure spec's version, a string
BACKPRESSURE_VERSION = "2"


def _optional_bool(instance: Any, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None and not isinstance(value, bool):
        raise ConfigurationError(f"serverApi {attribute.name} must be a boolean, not {value!r}")


@attrs.frozen
class ServerApi:
    """A declared Stable API version.  ``strict`` and ``deprecation_errors`` are sent only
    when given (None), even when they equal the server's default."""

    version: str
    strict: bool | None = attrs.field(default=None, validator=_optional_bool)
    deprecation_errors: bool | None = attrs.field(default=None, validator=_optional_bool)

    def __attrs_post_init__(self) -> None:
        if self.version not in SERVER_API_VERSIONS:
            raise ConfigurationError(
                f"serverApi version {self.version!r} is unknown; known: "
                + ", ".join(sorted(SERVER_API_VERSIONS))
            )


def stable_api_fields(server_api: ServerApi | None) -> dict[str, Any]:
    """The fields to add to every command (getMore and transaction commands included) when
    a Stable API version is declared; ``{}`` otherwise."""
    if server_api is None:
        return {}
    fields: dict[str, Any] = {"apiVersion": server_api.version}
    if server_api.strict is not None:
        fields["apiStrict"] = server_api.strict
    if server_api.deprecation_errors is not None:
        fields["apiDeprecationErrors"] = server_api.deprecation_errors
    return fields


def sasl_supported_mechs_user(credential: Credential | None) -> str | None:
    """``"source.username"`` to ask the server which SASL mechanisms the user has, when a
    credential leaves the mechanism to negotiation (mechanism None); None otherwise."""
    if credential is None or credential.mechanism is not None or not credential.username:
        return None
    return f"{credential.source}.{credential.username}"


def _compressors(value: object) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, list | tuple):
        raise ConfigurationError(f"compressors must be a sequence of names, not {value!r}")
    names = tuple(value)
    for name in names:
        if name not in COMPRESSOR_IDS:
            raise ConfigurationError(
                f"compressors: unknown compressor {name!r} (snappy, zlib, zstd)"
            )
    return names


def _zlib_level(instance: Any, attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not -1 <= value <= 9:
        raise ConfigurationError(
            f"zlibCompressionLevel must be an integer from -1 to 9, not {value!r}"
        )


def _bool_option(instance: Any, attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, bool):
        raise ConfigurationError(f"{attribute.name} must be a boolean, not {value!r}")


def _optional_str(instance: Any, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None and not isinstance(value, str):
        raise ConfigurationError(f"{attribute.name} must be a string, not {value!r}")


@attrs.frozen(kw_only=True)
class HandshakeOptions:
    """What the handshake needs from the client's options.

    ``app_name`` is the ``appname`` option (the metadata builder puts it in ``client``);
    ``compressors`` the names to offer, in order of preference; ``zlib_compression_level``
    -1 to 9; ``server_api`` the declared Stable API version; ``sasl_supported_mechs_user``
    is ``"source.username"`` (see :func:`sasl_supported_mechs_user`) or None.
    """

    app_name: str | None = attrs.field(default=None, validator=_optional_str)
    compressors: tuple[str, ...] = attrs.field(default=(), converter=_compressors)
    zlib_compression_level: int = attrs.field(default=-1, validator=_zlib_level)
    load_balanced: bool = attrs.field(default=False, validator=_bool_option)
    server_api: ServerApi | None = attrs.field(
        default=None, validator=attrs.validators.optional(attrs.validators.instance_of(ServerApi))
    )
    sasl_supported_mechs_user: str | None = attrs.field(default=None, validator=_optional_str)

    @property
    def uses_op_msg(self) -> bool:
        """Whether the first hello goes as OP_MSG ``hello`` (Stable API or load balanced)."""
        return self.server_api is not None or self.load_balanced


def build_hello(
    options: HandshakeOptions,
    metadata: Mapping[str, Any],
    speculative_authenticate: Mapping[str, Any] | None = None,
) -> tuple[dict[str, Any], bool]:
    """The first command of a connection, and whether it is sent as a legacy OP_QUERY.

    The body holds ``hello: 1`` (OP_MSG) or ``isMaster: 1`` (OP_QUERY), ``helloOk: true``,
    ``client`` (the metadata), ``backpressure: "2"`` (the version of the Client Backpressure
    spec this client follows, as the Handshake spec asks), ``compression`` when compressors are offered, ``loadBalanced:
    true`` in load-balanced mode, ``saslSupportedMechs`` and ``speculativeAuthenticate``
    when given, and the Stable API fields when a version is declared.  ``$db`` is the
    connection's to add (the command runs against ``admin``).
    """
    op_query = not options.uses_op_msg
    body: dict[str, Any] = {"isMaster": 1} if op_query else {"hello": 1}
    body["helloOk"] = True
    body["client"] = dict(metadata)
    body["backpressure"] = BACKPRESSURE_VERSION
    if options.compressors:
        body["compression"] = list(options.compressors)
    if options.load_balanced:
        body["loadBalanced"] = True
    if options.sasl_supported_mechs_user is not None:
        body["saslSupportedMechs"] = options.sasl_supported_mechs_user
    if speculative_authenticate is not None:
        body["speculativeAuthenticate"] = dict(speculative_authenticate)
    body.update(stable_api_fields(options.server_api))
    return body, op_query
