"""The URI Options spec's table: every option's canonical name, type and accepted values.

Each entry turns one percent-decoded string value into a typed value, or says why it cannot
(an :class:`InvalidValue`, which the caller reports as a warning and drops, as the Connection
String spec requires).  Cross-option rules (conflicts, load-balanced mode, SRV-only options)
live in :mod:`mongo_sansio.uri.options`; this module only knows single values.

Keys are matched case-insensitively: :data:`CANONICAL` maps a lower-cased key to the spec's
spelling.  :data:`DEPRECATED` maps an old key to its replacement.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

import attrs

from mongo_sansio.errors import ConfigurationError

__all__ = [
    "CANONICAL",
    "DEPRECATED",
    "OPTIONS",
    "SECRET_OPTIONS",
    "InvalidValue",
    "OptionSpec",
    "parse_bool",
]

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1

_INTEGER = re.compile(r"[+-]?[0-9]+\Z")

# The Connection String spec's legacy spellings of booleans: accepted, with a deprecation warning.
_LEGACY_TRUE = frozenset({"1", "yes", "y", "t"})
_LEGACY_FALSE = frozenset({"0", "-1", "no", "n", "f"})

READ_PREFERENCE_MODES = ("primary", "primaryPreferred", "secondary", "secondaryPreferred", "nearest")
SERVER_MONITORING_MODES = ("auto", "stream", "poll")
AUTH_MECHANISMS = (
    "SCRAM-SHA-1",
    "SCRAM-SHA-256",
    "MONGODB-X509",
    "GSSAPI",
    "PLAIN",
    "MONGODB-AWS",
    "MONGODB-OIDC",
)
# What the wire machine can negotiate; other names are warned about and left out of the list.
KNOWN_COMPRESSORS = ("snappy", "zlib", "zstd")

# An SRV service name (RFC 6335 section 5.1, without its 15-character cap, which the Initial
# DNS Seedlist spec lifts): letters, digits and inner hyphens, at least one letter.
_SERVICE_NAME = re.compile(r"(?=.*[A-Za-z])[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?\Z")


class InvalidValue(Exception):
    """A value the option does not accept; the parser warns and drops the option."""


@attrs.frozen
class Parsed:
    """A converted value plus any deprecation notice the conversion produced."""

    value: Any
    notice: str | None = None


Converter = Callable[[str, str], Parsed]


@attrs.frozen
class OptionSpec:
    """One row of the URI Options table."""

    name: str
    convert: Converter
    # Repeated keys accumulate into a tuple instead of the last one winning.
    repeatable: bool = False
    # Values that must never be echoed in a repr, warning or error.
    secret: bool = False


def parse_bool(name: str, text: str) -> Parsed:
    lowered = text.lower()
    if lowered == "true":
        return Parsed(True)
    if lowered == "false":
        return Parsed(False)
    if lowered in _LEGACY_TRUE or lowered in _LEGACY_FALSE:
        value = lowered in _LEGACY_TRUE
        notice = f"deprecated boolean value for {name!r}: {text!r}, use {name}={str(value).lower()}"
        return Parsed(value, notice)
    raise InvalidValue(f"{name} must be 'true' or 'false'")


def _parse_integer(name: str, text: str) -> int:
    if not _INTEGER.match(text):
        raise InvalidValue(f"{name} must be an integer")
    return int(text)


def _integer(minimum: int, maximum: int = INT32_MAX, *, extra: tuple[int, ...] = ()) -> Converter:
    def convert(name: str, text: str) -> Parsed:
        value = _parse_integer(name, text)
        if value in extra or minimum <= value <= maximum:
            return Parsed(value)
        allowed = f"between {minimum} and {maximum}"
        if extra:
            allowed = " or ".join(str(e) for e in extra) + f", or {allowed}"
        raise InvalidValue(f"{name} must be {allowed}")

    return convert


def _string(name: str, text: str) -> Parsed:
    return Parsed(text)


def _nonempty_string(name: str, text: str) -> Parsed:
    if not text:
        raise InvalidValue(f"{name} must not be empty")
    return Parsed(text)


def _appname(name: str, text: str) -> Parsed:
    # The handshake spec caps the application name at 128 bytes of UTF-8.
    if len(text.encode("utf-8", "surrogatepass")) > 128:
        raise InvalidValue(f"{name} must be at most 128 bytes")
    return Parsed(text)


def _choice(choices: tuple[str, ...]) -> Converter:
    def convert(name: str, text: str) -> Parsed:
        if text in choices:
            return Parsed(text)
        raise InvalidValue(f"{name} must be one of {', '.join(choices)}")

    return convert


def _auth_mechanism(name: str, text: str) -> Parsed:
    if text.upper() in AUTH_MECHANISMS:
        return Parsed(text.upper())
    raise InvalidValue(f"{name} must be one of {', '.join(AUTH_MECHANISMS)}")


def _service_name(name: str, text: str) -> Parsed:
    if len(text) <= 62 and _SERVICE_NAME.match(text):
        return Parsed(text)
    raise InvalidValue(f"{name} must be a valid SRV service name (RFC 6335)")


def _key_value_pairs(name: str, text: str, *, allow_empty: bool) -> Mapping[str, str]:
    """``"k1:v1,k2:v2"``: the key is everything up to the first colon (values may hold colons)."""
    if not text:
        if allow_empty:
            return MappingProxyType({})
        raise InvalidValue(f"{name} must not be empty")
    pairs: dict[str, str] = {}
    for item in text.split(","):
        key, colon, value = item.partition(":")
        if not colon or not key:
            raise InvalidValue(f"{name} must be comma-separated key:value pairs")
        pairs[key] = value
    return MappingProxyType(pairs)


def _auth_mechanism_properties(name: str, text: str) -> Parsed:
    pairs = _key_value_pairs(name, text, allow_empty=False)
    if "ALLOWED_HOSTS" in pairs:
        # auth spec: a security setting that "MUST NOT be allowed in the URI connection
        # string" (nor as text): an error, never a warning
        raise ConfigurationError(
            "MONGODB-OIDC: ALLOWED_HOSTS must not be given in the connection string; pass a "
            "list in authMechanismProperties={'ALLOWED_HOSTS': [...]}"
        )
    return Parsed(pairs)


def _tag_set(name: str, text: str) -> Parsed:
    # An empty value is the empty tag set, which matches any server (a fallback).
    return Parsed(_key_value_pairs(name, text, allow_empty=True))


def _compressors(name: str, text: str) -> Parsed:
    names = tuple(part for part in text.split(",") if part)
    if not names:
        raise InvalidValue(f"{name} must list at least one compressor")
    known = tuple(dict.fromkeys(n for n in names if n in KNOWN_COMPRESSORS))
    unknown = [n for n in names if n not in KNOWN_COMPRESSORS]
    notice = None
    if unknown:
        notice = f"unsupported compressors in {name} ignored: {', '.join(unknown)}"
    return Parsed(known, notice)


def _write_concern_w(name: str, text: str) -> Parsed:
    if not text:
        raise InvalidValue(f"{name} must not be empty")
    if _INTEGER.match(text):
        value = int(text)
        if 0 <= value <= INT32_MAX:
            return Parsed(value)
        raise InvalidValue(f"{name} must be a non-negative integer or a string")
    return Parsed(text)


_NON_NEGATIVE = _integer(0)
_POSITIVE = _integer(1)

_SPECS = (
    OptionSpec("appname", _appname),
    OptionSpec("authMechanism", _auth_mechanism),
    OptionSpec("authMechanismProperties", _auth_mechanism_properties, secret=True),
    OptionSpec("authSource", _string),
    OptionSpec("compressors", _compressors),
    OptionSpec("connectTimeoutMS", _NON_NEGATIVE),
    OptionSpec("directConnection", parse_bool),
    OptionSpec("enableOverloadRetargeting", parse_bool),
    OptionSpec("heartbeatFrequencyMS", _integer(500)),
    OptionSpec("journal", parse_bool),
    OptionSpec("loadBalanced", parse_bool),
    OptionSpec("localThresholdMS", _NON_NEGATIVE),
    OptionSpec("maxAdaptiveRetries", _NON_NEGATIVE),
    OptionSpec("maxConnecting", _POSITIVE),
    OptionSpec("maxIdleTimeMS", _NON_NEGATIVE),
    OptionSpec("maxPoolSize", _NON_NEGATIVE),
    # The URI Options table says "-1 or >= 90", but the Max Staleness spec makes a small
    # positive value an error of server selection (only for replica sets, and together with
    # heartbeatFrequencyMS), so positive values are kept for the selector to judge.
    OptionSpec("maxStalenessSeconds", _integer(1, extra=(-1,))),
    OptionSpec("minPoolSize", _NON_NEGATIVE),
    OptionSpec("proxyHost", _nonempty_string),
    OptionSpec("proxyPassword", _string, secret=True),
    OptionSpec("proxyPort", _integer(0, 65535)),
    OptionSpec("proxyUsername", _nonempty_string),
    OptionSpec("readConcernLevel", _nonempty_string),
    OptionSpec("readPreference", _choice(READ_PREFERENCE_MODES)),
    OptionSpec("readPreferenceTags", _tag_set, repeatable=True),
    OptionSpec("replicaSet", _nonempty_string),
    OptionSpec("retryReads", parse_bool),
    OptionSpec("retryWrites", parse_bool),
    OptionSpec("serverMonitoringMode", _choice(SERVER_MONITORING_MODES)),
    OptionSpec("serverSelectionTimeoutMS", _POSITIVE),
    OptionSpec("serverSelectionTryOnce", parse_bool),
    OptionSpec("socketTimeoutMS", _NON_NEGATIVE),
    OptionSpec("srvMaxHosts", _NON_NEGATIVE),
    OptionSpec("srvServiceName", _service_name),
    OptionSpec("timeoutMS", _NON_NEGATIVE),
    OptionSpec("tls", parse_bool),
    OptionSpec("tlsAllowInvalidCertificates", parse_bool),
    OptionSpec("tlsAllowInvalidHostnames", parse_bool),
    OptionSpec("tlsCAFile", _nonempty_string),
    OptionSpec("tlsCertificateKeyFile", _nonempty_string),
    OptionSpec("tlsCertificateKeyFilePassword", _string, secret=True),
    OptionSpec("tlsDisableCertificateRevocationCheck", parse_bool),
    OptionSpec("tlsDisableOCSPEndpointCheck", parse_bool),
    OptionSpec("tlsInsecure", parse_bool),
    OptionSpec(
        "uuidRepresentation",
        _choice(("unspecified", "standard", "pythonLegacy", "javaLegacy", "csharpLegacy")),
    ),
    OptionSpec("w", _write_concern_w),
    # legacy queue bounds (the CMAP spec's logging reports them when given; nothing enforces them)
    OptionSpec("waitQueueMultiple", _integer(0)),
    OptionSpec("waitQueueSize", _integer(0)),
    OptionSpec("waitQueueTimeoutMS", _POSITIVE),
    OptionSpec("wTimeoutMS", _integer(0, INT64_MAX)),
    OptionSpec("zlibCompressionLevel", _integer(-1, 9)),
)

OPTIONS: Mapping[str, OptionSpec] = MappingProxyType({spec.name: spec for spec in _SPECS})

# Old key (lower case) -> canonical replacement.  "ssl" is not here: it is a full alias of
# "tls" with its own rule (every instance of both must agree), handled by the options module.
DEPRECATED: Mapping[str, str] = MappingProxyType({"wtimeout": "wTimeoutMS"})

# Lower-cased key -> canonical name, for every key the parser understands.
CANONICAL: Mapping[str, str] = MappingProxyType(
    {**{name.lower(): name for name in OPTIONS}, "ssl": "tls", **DEPRECATED}
)

SECRET_OPTIONS = frozenset(spec.name for spec in _SPECS if spec.secret)
