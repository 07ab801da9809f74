"""Credentials from a connection string, by the auth spec's rules.

Input: a username, password, the URI's auth database and the validated options.  Output: a
:class:`Credential` (or None when nothing asks for authentication), or a
:class:`~mongo_sansio.errors.ConfigurationError` naming what the chosen mechanism forbids or
lacks.  No secret ever appears in a message or a repr.

Per mechanism (``None`` means "negotiate SCRAM with the server"):

=============  =========  =========  ======================================  ==========================
mechanism      username   password   source                                  properties
=============  =========  =========  ======================================  ==========================
(none), SCRAM  required   required   authSource, else the URI's db, else     none
                                     ``admin``
PLAIN          required   required   authSource, else db, else ``$external``  none
MONGODB-X509   optional   forbidden  ``$external`` only                      none
GSSAPI         required   optional   ``$external`` only                      SERVICE_NAME (default
                                                                             ``mongodb``), SERVICE_HOST,
                                                                             SERVICE_REALM,
                                                                             CANONICALIZE_HOST_NAME
MONGODB-AWS    with pwd   with user  ``$external`` only                      AWS_SESSION_TOKEN (needs
                                                                             username and password)
MONGODB-OIDC   see below  forbidden  ``$external`` only                      ENVIRONMENT, TOKEN_RESOURCE,
                                                                             OIDC_CALLBACK,
                                                                             OIDC_HUMAN_CALLBACK,
                                                                             ALLOWED_HOSTS
=============  =========  =========  ======================================  ==========================

MONGODB-OIDC needs ENVIRONMENT or a callback; ENVIRONMENT ``azure`` and ``gcp`` need
TOKEN_RESOURCE (which the others refuse); only ``azure`` accepts a username.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from mongo_sansio.errors import ConfigurationError
from mongo_sansio.uri.options import frozen_mapping

__all__ = ["Credential", "build_credential"]

EXTERNAL = "$external"

_GSSAPI_PROPERTIES = frozenset(
    {"SERVICE_NAME", "SERVICE_HOST", "SERVICE_REALM", "CANONICALIZE_HOST_NAME"}
)
_CANONICALIZE_VALUES = frozenset({"none", "forward", "forwardAndReverse", "true", "false"})
_AWS_PROPERTIES = frozenset({"AWS_SESSION_TOKEN"})
_OIDC_PROPERTIES = frozenset(
    {"ENVIRONMENT", "TOKEN_RESOURCE", "OIDC_CALLBACK", "OIDC_HUMAN_CALLBACK", "ALLOWED_HOSTS"}
)
_OIDC_ENVIRONMENTS = frozenset({"test", "azure", "gcp", "k8s"})
_OIDC_NEED_TOKEN_RESOURCE = frozenset({"azure", "gcp"})
_OIDC_ACCEPT_USERNAME = frozenset({"azure"})


@attrs.frozen(repr=False)
class Credential:
    """What the auth machines need; ``mechanism`` None means negotiate SCRAM."""

    mechanism: str | None
    username: str | None
    password: str | None
    source: str
    mechanism_properties: Mapping[str, Any] = attrs.field(factory=dict, converter=frozen_mapping)

    def __repr__(self) -> str:
        password = None if self.password is None else "<hidden>"
        return (
            f"Credential(mechanism={self.mechanism!r}, username={self.username!r}, "
            f"password={password}, source={self.source!r}, "
            f"mechanism_properties=<{len(self.mechanism_properties)} hidden>)"
        )

    __str__ = __repr__


def build_credential(
    username: str | None,
    password: str | None,
    database: str | None,
    options: Mapping[str, Any],
) -> Credential | None:
    """The credential the connection string describes, or None if it asks for no auth."""
    mechanism: str | None = options.get("authMechanism")
    if mechanism is None and username is None:
        if password is not None:
            raise ConfigurationError("a password was given without a username")
        return None
    properties = dict(options.get("authMechanismProperties", {}))
    auth_source: str | None = options.get("authSource")
    if mechanism in (None, "SCRAM-SHA-1", "SCRAM-SHA-256", "PLAIN"):
        _require_username(mechanism, username)
        if password is None:
            raise ConfigurationError(f"authMechanism {_name(mechanism)} needs a password")
        _allow_properties(mechanism, properties, frozenset())
        default = EXTERNAL if mechanism == "PLAIN" else "admin"
        source = auth_source or database or default
    else:
        source = _external_source(mechanism, auth_source)
        if mechanism == "MONGODB-X509":
            _forbid_password(mechanism, password)
            _allow_properties(mechanism, properties, frozenset())
        elif mechanism == "GSSAPI":
            _require_username(mechanism, username)
            _check_gssapi(properties)
        elif mechanism == "MONGODB-AWS":
            _check_aws(username, password, properties)
        elif mechanism == "MONGODB-OIDC":
            _forbid_password(mechanism, password)
            _check_oidc(username, properties)
    return Credential(mechanism, username, password, source, properties)


def _name(mechanism: str | None) -> str:
    return mechanism or "(default)"


def _require_username(mechanism: str | None, username: str | None) -> None:
    if not username:
        raise ConfigurationError(f"authMechanism {_name(mechanism)} needs a username")


def _forbid_password(mechanism: str, password: str | None) -> None:
    if password is not None:
        raise ConfigurationError(f"authMechanism {mechanism} does not take a password")


def _external_source(mechanism: str, auth_source: str | None) -> str:
    if auth_source is not None and auth_source != EXTERNAL:
        raise ConfigurationError(f"authMechanism {mechanism} needs authSource={EXTERNAL}")
    return EXTERNAL


def _allow_properties(mechanism: str | None, properties: Mapping[str, Any], allowed: frozenset[str]) -> None:
    unknown = sorted(set(properties) - allowed)
    if unknown:
        raise ConfigurationError(
            f"authMechanismProperties {', '.join(unknown)} not supported by "
            f"authMechanism {_name(mechanism)}"
        )


def _check_gssapi(properties: dict[str, Any]) -> None:
    _allow_properties("GSSAPI", properties, _GSSAPI_PROPERTIES)
    properties.setdefault("SERVICE_NAME", "mongodb")
    canonicalize = properties.get("CANONICALIZE_HOST_NAME")
    if isinstance(canonicalize, bool):
        return
    if canonicalize is not None and canonicalize not in _CANONICALIZE_VALUES:
        raise ConfigurationError(
            "authMechanismProperties CANONICALIZE_HOST_NAME must be one of "
            + ", ".join(sorted(_CANONICALIZE_VALUES))
        )


def _check_aws(username: str | None, password: str | None, properties: Mapping[str, Any]) -> None:
    _allow_properties("MONGODB-AWS", properties, _AWS_PROPERTIES)
    if (username is None) != (password is None):
        raise ConfigurationError("authMechanism MONGODB-AWS needs both a username and a password, or neither")
    if "AWS_SESSION_TOKEN" in properties and username is None:
        raise ConfigurationError(
            "authMechanismProperties AWS_SESSION_TOKEN needs a username and password (MONGODB-AWS)"
        )


def _check_oidc(username: str | None, properties: Mapping[str, Any]) -> None:
    _allow_properties("MONGODB-OIDC", properties, _OIDC_PROPERTIES)
    environment = properties.get("ENVIRONMENT")
    callbacks = "OIDC_CALLBACK" in properties or "OIDC_HUMAN_CALLBACK" in properties
    _check_oidc_objects(properties)
    if environment is None:
        if not callbacks:
            raise ConfigurationError(
                "authMechanism MONGODB-OIDC needs authMechanismProperties ENVIRONMENT or a callback"
            )
        return
    if callbacks:
        raise ConfigurationError("MONGODB-OIDC: ENVIRONMENT and a callback must not both be given")
    if environment not in _OIDC_ENVIRONMENTS:
        raise ConfigurationError(
            "MONGODB-OIDC: ENVIRONMENT must be one of " + ", ".join(sorted(_OIDC_ENVIRONMENTS))
        )
    if environment in _OIDC_NEED_TOKEN_RESOURCE:
        if "TOKEN_RESOURCE" not in properties:
            raise ConfigurationError(f"MONGODB-OIDC: ENVIRONMENT {environment} needs TOKEN_RESOURCE")
    elif "TOKEN_RESOURCE" in properties:
        raise ConfigurationError(f"MONGODB-OIDC: ENVIRONMENT {environment} does not take TOKEN_RESOURCE")
    if username is not None and environment not in _OIDC_ACCEPT_USERNAME:
        raise ConfigurationError(f"MONGODB-OIDC: ENVIRONMENT {environment} does not take a username")


def _check_oidc_objects(properties: Mapping[str, Any]) -> None:
    """The callbacks (objects with ``fetch``, or plain functions; not both) and ALLOWED_HOSTS (a list given in
    code, only with a human callback: never in a connection string)."""
    for name in ("OIDC_CALLBACK", "OIDC_HUMAN_CALLBACK"):
        callback = properties.get(name)
        if name in properties and not callable(getattr(callback, "fetch", callback)):
            raise ConfigurationError(
                f"MONGODB-OIDC: {name} must be an OIDCCallback (an object with a fetch method) "
                f"or a function of the context, not {type(callback).__name__}"
            )
    if "OIDC_CALLBACK" in properties and "OIDC_HUMAN_CALLBACK" in properties:
        raise ConfigurationError("MONGODB-OIDC: OIDC_CALLBACK and OIDC_HUMAN_CALLBACK must not both be given")
    if "ALLOWED_HOSTS" not in properties:
        return
    allowed = properties["ALLOWED_HOSTS"]
    if isinstance(allowed, str):
        raise ConfigurationError(
            "MONGODB-OIDC: ALLOWED_HOSTS must not be given in the connection string; pass a list "
            "in authMechanismProperties={'ALLOWED_HOSTS': [...]}"
        )
    if not isinstance(allowed, list | tuple) or not all(isinstance(h, str) for h in allowed):
        raise ConfigurationError("MONGODB-OIDC: ALLOWED_HOSTS must be a list of host names")
    if "OIDC_HUMAN_CALLBACK" not in properties:
        raise ConfigurationError("MONGODB-OIDC: ALLOWED_HOSTS is only valid with OIDC_HUMAN_CALLBACK")
