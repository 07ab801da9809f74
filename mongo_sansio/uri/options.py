"""Connection options: a query string (or keyword arguments) in, validated typed options out.

Inputs: the options part of a connection string (``"w=1&readPreference=secondary"``), the
text of a DNS TXT record (``origin="txt"``), or keyword arguments a client constructor passes
(``origin="keyword"``).  Outputs: :class:`UriOptions`, an immutable mapping from the URI
Options spec's canonical names to typed values, plus the warnings produced on the way, also
handed to the injected ``warn`` callable as they happen.

The rules, from the Connection String and URI Options specs:

* keys are case-insensitive and normalised to the canonical spelling; unknown keys are warned
  about and ignored; a key without ``=`` makes the string malformed (an error);
* values are percent-decoded; an invalid value (wrong type, out of range, empty) is warned
  about and the option dropped -- except ``authSource`` and ``authMechanism``, whose invalid
  values are errors (the auth spec);
* a repeated key warns and the last valid value wins, except ``readPreferenceTags`` (a list in
  order), ``tls``/``ssl`` (every instance must agree) and the SOCKS5 ``proxy*`` options
  (repetition is an error);
* deprecated keys (``wtimeout``) warn; when their replacement is also present they are ignored;
* conflicting options are errors (a URI's are judged after the keyword arguments that
  override them are merged in; a TXT record's on their own and again under the URI's): the
  insecure-TLS combinations, ``journal=true`` with ``w=0``,
  ``loadBalanced=true`` with ``replicaSet`` or ``directConnection=true``, a positive
  ``srvMaxHosts`` with ``replicaSet`` or ``loadBalanced=true``, tags or max staleness with read
  preference ``primary``, ``minPoolSize`` above ``maxPoolSize``, incomplete proxy settings;
* a TXT record may carry only ``authSource``, ``replicaSet`` and ``loadBalanced``
  (Initial DNS Seedlist Discovery); anything else there is an error.

Keyword options are code, not configuration: an unknown name or an invalid keyword value is an
error, not a warning (a boolean keyword takes ``True``/``False`` or ``"true"``/``"false"`` only,
as PyMongo's keyword validation does).  Warnings are data here; the adapters emit them (as
``UserWarning``, through ``adapters/_uri.py``).  Rules that involve hosts, the scheme or
credentials live in :mod:`mongo_sansio.uri.connection_string`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Literal

import attrs

from mongo_sansio.errors import ConfigurationError
from mongo_sansio.uri._table import (
    CANONICAL,
    DEPRECATED,
    OPTIONS,
    SECRET_OPTIONS,
    InvalidValue,
    OptionSpec,
    Parsed,
    parse_bool,
)

__all__ = [
    "TXT_OPTIONS",
    "Origin",
    "UriOptions",
    "Warn",
    "canonical_name",
    "frozen_mapping",
    "check_option_conflicts",
    "collect_options",
    "keyword_options",
    "merge_options",
    "parse_options",
    "percent_decode",
]

Warn = Callable[[str], None]
Origin = Literal["uri", "txt", "keyword"]

# Initial DNS Seedlist Discovery: the only options a TXT record may set.
TXT_OPTIONS = frozenset({"authSource", "replicaSet", "loadBalanced"})

# Invalid values of these are errors rather than warnings: guessing the wrong database or
# mechanism would send credentials somewhere the user did not intend.
_ERROR_ON_INVALID = frozenset({"authSource", "authMechanism"})

_PROXY_OPTIONS = ("proxyHost", "proxyPort", "proxyUsername", "proxyPassword")

# Pairs of options that must not both appear (URI Options spec, "Conflicting TLS options").
_TLS_CONFLICTS = (
    ("tlsInsecure", "tlsAllowInvalidCertificates"),
    ("tlsInsecure", "tlsAllowInvalidHostnames"),
    ("tlsInsecure", "tlsDisableOCSPEndpointCheck"),
    ("tlsInsecure", "tlsDisableCertificateRevocationCheck"),
    ("tlsAllowInvalidCertificates", "tlsDisableOCSPEndpointCheck"),
    ("tlsAllowInvalidCertificates", "tlsDisableCertificateRevocationCheck"),
    ("tlsDisableOCSPEndpointCheck", "tlsDisableCertificateRevocationCheck"),
)

_ESCAPES = re.compile(r"(?:%[0-9A-Fa-f]{2})+")
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")
# The Connection String spec lower-cases ASCII letters only; other characters stay as they are.
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def percent_decode(text: str, what: str) -> str:
    """Strict percent-decoding: a ``%`` not followed by two hex digits, or escapes that are not
    UTF-8, are errors (a lenient decoder would silently keep them)."""
    if "%" not in text:
        return text
    if _BAD_ESCAPE.search(text):
        raise ConfigurationError(f"{what} contains a '%' that is not a percent-escape (%XX)")

    def decode_run(match: re.Match[str]) -> str:
        return bytes.fromhex(match.group().replace("%", "")).decode("utf-8")

    try:
        return _ESCAPES.sub(decode_run, text)
    except UnicodeDecodeError:
        raise ConfigurationError(f"{what} contains percent-escapes that are not UTF-8") from None


def frozen_mapping(value: Mapping[str, Any]) -> Mapping[str, Any]:
    """A read-only copy (the containers inside are already immutable)."""
    return MappingProxyType(dict(value))


def canonical_name(key: str) -> str | None:
    """The spec's spelling of ``key`` (any case), or None for an unknown key."""
    return CANONICAL.get(key.translate(_ASCII_LOWER))


@attrs.frozen(eq=False, repr=False)
class UriOptions(Mapping[str, Any]):
    """Validated options keyed by canonical name; lookups accept any case of the key.

    ``warnings`` lists what was ignored and why.  Secret values (passwords, mechanism
    properties) are hidden in the repr.  Equality is that of the mapping.
    """

    data: Mapping[str, Any] = attrs.field(factory=dict, converter=frozen_mapping)
    warnings: tuple[str, ...] = ()

    def __getitem__(self, key: str) -> Any:
        name = canonical_name(key) or key
        if name in self.data:
            return self.data[name]
        raise KeyError(key)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and (canonical_name(key) or key) in self.data

    def __iter__(self) -> Iterator[str]:
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)

    def __repr__(self) -> str:
        shown = ", ".join(
            f"{name}={'<hidden>' if name in SECRET_OPTIONS else repr(value)}"
            for name, value in self.data.items()
        )
        return f"UriOptions({shown})"

    __str__ = __repr__


@attrs.frozen
class _Occurrence:
    key: str  # as written (for messages)
    name: str  # canonical
    text: str  # percent-decoded value


class _Collector:
    """Accumulates options in order, reporting warnings as they happen."""

    def __init__(self, origin: Origin, warn: Warn | None) -> None:
        self.origin = origin
        self._warn = warn
        self.warnings: list[str] = []
        self.values: dict[str, Any] = {}
        self.seen: dict[str, list[str]] = {}  # canonical name -> keys as written
        self.tls_values: list[tuple[str, bool]] = []

    def warn(self, message: str) -> None:
        self.warnings.append(message)
        if self._warn is not None:
            self._warn(message)

    def invalid(self, spec: OptionSpec, key: str, text: str, reason: str) -> None:
        shown = "" if spec.secret else f" {text!r}"
        message = f"invalid value{shown} for option {key!r}: {reason}"
        if spec.name in _ERROR_ON_INVALID or self.origin == "keyword":
            raise ConfigurationError(message)
        self.warn(f"{message}; the option is ignored")

    def add(self, key: str, name: str, parsed: Parsed) -> None:
        spec = OPTIONS[name]
        if parsed.notice:
            self.warn(parsed.notice)
        self.seen.setdefault(name, []).append(key)
        if name == "tls":
            self.tls_values.append((key, parsed.value))
        if spec.repeatable:
            self.values[name] = (*self.values.get(name, ()), parsed.value)
            return
        if name in self.values and name not in ("tls",) and name not in _PROXY_OPTIONS:
            self.warn(f"option {name!r} given more than once; the last value is used")
        self.values[name] = parsed.value

    def result(self) -> UriOptions:
        """The options of this one source; conflicts are checked once sources are merged."""
        self._check_repeats()
        return UriOptions(self.values, tuple(self.warnings))

    def _check_repeats(self) -> None:
        if len({value for _, value in self.tls_values}) > 1:
            raise ConfigurationError("options 'tls' and 'ssl' must all have the same value")
        for name in _PROXY_OPTIONS:
            if len(self.seen.get(name, ())) > 1:
                raise ConfigurationError(f"option {name!r} must not be given more than once")


def _split_query(query: str) -> Iterator[tuple[str, str]]:
    for pair in query.split("&"):
        if not pair:
            continue  # "a=1&&b=2" and a trailing "&" carry nothing
        raw_key, equals, raw_value = pair.partition("=")
        key = percent_decode(raw_key, "an option name")
        if not equals:
            raise ConfigurationError(f"option {key!r} has no value (expected name=value)")
        if not key:
            raise ConfigurationError("an option has an empty name")
        name = canonical_name(key)
        what = f"the value of option {key!r}"
        if name in SECRET_OPTIONS:
            what = f"the value of option {name!r}"
        yield key, percent_decode(raw_value, what)


def parse_options(
    query_string: str, *, origin: Origin = "txt", warn: Warn | None = None
) -> UriOptions:
    """Validate ``query_string`` (``k=v&k=v``, not percent-decoded) into typed options.

    ``origin="txt"`` (the default, for the seedlist machine) allows only ``authSource``,
    ``replicaSet`` and ``loadBalanced``; ``origin="uri"`` allows every option.  Raises
    :class:`~mongo_sansio.errors.ConfigurationError` naming the option for malformed text,
    options a TXT record may not set, and conflicts between its options (a TXT record that
    contradicts itself is a broken record; the merge under the URI's options is checked again
    by :meth:`ConnectionString.with_seedlist`).
    """
    options = collect_options(query_string, origin=origin, warn=warn)
    check_option_conflicts(options)
    return options


def collect_options(query_string: str, *, origin: Origin, warn: Warn | None = None) -> UriOptions:
    """:func:`parse_options` without the conflict checks (for callers that merge sources)."""
    collector = _Collector(origin, warn)
    occurrences: list[_Occurrence] = []
    for key, text in _split_query(query_string):
        name = canonical_name(key)
        if origin == "txt" and name not in TXT_OPTIONS:
            raise ConfigurationError(
                f"option {key!r} is not allowed in a TXT record "
                f"(only {', '.join(sorted(TXT_OPTIONS))})"
            )
        if name is None:
            collector.warn(f"unsupported option {key!r} ignored")
            continue
        occurrences.append(_Occurrence(key, name, text))
    for occurrence in _without_superseded(occurrences, collector):
        _convert(occurrence, collector)
    return collector.result()


def _without_superseded(
    occurrences: list[_Occurrence], collector: _Collector
) -> Iterator[_Occurrence]:
    """Drop deprecated keys whose replacement is also present, warning either way."""
    lowered = {o.key.translate(_ASCII_LOWER) for o in occurrences}
    present = {o.name for o in occurrences if o.key.translate(_ASCII_LOWER) not in DEPRECATED}
    for occurrence in occurrences:
        old = occurrence.key.translate(_ASCII_LOWER)
        if old in DEPRECATED and old in lowered:
            new = DEPRECATED[old]
            if new in present:
                collector.warn(
                    f"deprecated option {occurrence.key!r} ignored because {new!r} is also given"
                )
                continue
            collector.warn(f"option {occurrence.key!r} is deprecated; use {new!r}")
        yield occurrence


def _convert(occurrence: _Occurrence, collector: _Collector) -> None:
    spec = OPTIONS[occurrence.name]
    if occurrence.text == "" and spec.name != "readPreferenceTags":
        # Connection String spec: an empty value means the key is ignored (with a warning).
        collector.invalid(spec, occurrence.key, occurrence.text, "the value is empty")
        return
    try:
        parsed = spec.convert(occurrence.name, occurrence.text)
    except InvalidValue as exc:
        collector.invalid(spec, occurrence.key, occurrence.text, str(exc))
        return
    collector.add(occurrence.key, occurrence.name, parsed)


def keyword_options(options: Mapping[str, Any], *, warn: Warn | None = None) -> UriOptions:
    """Options passed in code (a client constructor's keyword arguments), validated like URI
    options but strictly: unknown names and invalid values are errors."""
    collector = _Collector("keyword", warn)
    for key, value in options.items():
        name = canonical_name(key)
        if name is None:
            raise ConfigurationError(f"unknown option {key!r}")
        spec = OPTIONS[name]
        if spec.convert is parse_bool and not isinstance(value, bool):
            _check_keyword_bool(key, value)
        if isinstance(value, str):
            _convert(_Occurrence(key, name, value), collector)
        elif spec.repeatable:
            for tag_set in _typed_keyword_value(spec, key, value):
                collector.add(key, name, Parsed(tag_set))
        else:
            collector.add(key, name, Parsed(_typed_keyword_value(spec, key, value)))
    return collector.result()


def _check_keyword_bool(key: str, value: Any) -> None:
    """A boolean keyword option is ``True``/``False`` or the text ``true``/``false``: the
    legacy spellings a URI may still use (``1``, ``yes``) and integers are errors in code."""
    if isinstance(value, str) and value.translate(_ASCII_LOWER) in ("true", "false"):
        return
    raise ConfigurationError(f"option {key!r} must be True or False, not {value!r}")


def _typed_keyword_value(spec: OptionSpec, key: str, value: Any) -> Any:
    """Check a non-string keyword value by converting it through the same rules."""
    if spec.name == "authMechanismProperties" and isinstance(value, Mapping):
        # Values may be callables (OIDC callbacks) or booleans, so they are kept as given.
        if not all(isinstance(k, str) for k in value):
            raise ConfigurationError(f"option {key!r} must have string keys")
        return MappingProxyType(dict(value))
    if spec.name == "readPreferenceTags":
        tag_sets = [value] if isinstance(value, Mapping) else value
        if not isinstance(tag_sets, Sequence) or not all(
            isinstance(t, Mapping) and all(isinstance(k, str) and isinstance(v, str) for k, v in t.items())
            for t in tag_sets
        ):
            raise ConfigurationError(f"option {key!r} must be a list of str->str mappings")
        return tuple(MappingProxyType(dict(t)) for t in tag_sets)
    if spec.name == "compressors" and isinstance(value, Sequence):
        if not all(isinstance(v, str) for v in value):
            raise ConfigurationError(f"option {key!r} must be a list of strings")
        text = ",".join(value)
    elif isinstance(value, bool):
        text = "true" if value else "false"
        if spec.convert is not parse_bool:
            raise ConfigurationError(f"option {key!r} does not take a boolean")
    elif isinstance(value, int):
        text = str(value)
    else:
        raise ConfigurationError(f"option {key!r} has an unsupported type {type(value).__name__}")
    try:
        parsed = spec.convert(spec.name, text)
    except InvalidValue as exc:
        raise ConfigurationError(f"invalid value for option {key!r}: {exc}") from None
    return parsed.value


def merge_options(*layers: UriOptions) -> UriOptions:
    """Later layers win; warnings accumulate.  ``merge_options(txt, uri, keywords)``."""
    values: dict[str, Any] = {}
    warnings: list[str] = []
    for layer in layers:
        values.update(layer.data)
        warnings.extend(layer.warnings)
    check_option_conflicts(values)
    return UriOptions(values, tuple(warnings))


def check_option_conflicts(values: Mapping[str, Any]) -> None:
    """The cross-option rules that need only the options (not hosts, scheme or credentials)."""
    for first, second in _TLS_CONFLICTS:
        if first in values and second in values:
            raise ConfigurationError(f"options {first!r} and {second!r} must not both be given")
    if values.get("journal") is True and values.get("w") == 0:
        raise ConfigurationError("option 'journal=true' conflicts with 'w=0'")
    if values.get("loadBalanced") is True:
        if "replicaSet" in values:
            raise ConfigurationError("option 'loadBalanced=true' conflicts with 'replicaSet'")
        if values.get("directConnection") is True:
            raise ConfigurationError(
                "option 'loadBalanced=true' conflicts with 'directConnection=true'"
            )
    if values.get("srvMaxHosts", 0) > 0:
        if "replicaSet" in values:
            raise ConfigurationError("a positive 'srvMaxHosts' conflicts with 'replicaSet'")
        if values.get("loadBalanced") is True:
            raise ConfigurationError("a positive 'srvMaxHosts' conflicts with 'loadBalanced=true'")
    if values.get("readPreference", "primary") == "primary":
        if any(tags for tags in values.get("readPreferenceTags", ())):
            raise ConfigurationError("option 'readPreferenceTags' needs a readPreference other than primary")
        if values.get("maxStalenessSeconds", -1) != -1:
            raise ConfigurationError("option 'maxStalenessSeconds' needs a readPreference other than primary")
    max_pool = values.get("maxPoolSize", 0)
    if max_pool and values.get("minPoolSize", 0) > max_pool:
        raise ConfigurationError("option 'minPoolSize' must not exceed 'maxPoolSize'")
    if "proxyHost" not in values:
        for name in _PROXY_OPTIONS[1:]:
            if name in values:
                raise ConfigurationError(f"option {name!r} needs 'proxyHost'")
    if ("proxyUsername" in values) != ("proxyPassword" in values):
        raise ConfigurationError("options 'proxyUsername' and 'proxyPassword' must be given together")
