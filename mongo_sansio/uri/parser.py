"""Connection string parsing: text in, a :class:`ConnectionString` or a ConfigurationError out.

Input: a ``mongodb://`` or ``mongodb+srv://`` string, optional keyword options (as a client
constructor passes them; they override the string's) and an optional ``warn`` callable.
Output: a validated, immutable :class:`~mongo_sansio.uri.connection_string.ConnectionString`
whose ``warnings`` repeat what was passed to ``warn``.  Nothing else is raised: malformed text
of any kind is a :class:`~mongo_sansio.errors.ConfigurationError`.

The steps are the Connection String spec's reference algorithm:

1. strip the scheme;
2. split off the options at the first ``?`` and the database at the first ``/`` before it;
3. split user information from the hosts at the last ``@``; the user information may not hold
   an unescaped ``:/?#[]@`` beyond the one ``:`` between name and password;
4. split hosts at ``,``; each is an IP literal in brackets, a percent-encoded Unix socket path
   ending in ``.sock``, an IPv4 address or a host name (lower-cased), with an optional port
   (1-65535);
5. percent-decode the user, password and database (which may not hold ``/\\ "$``);
6. validate the options (:mod:`mongo_sansio.uri.options`), then the rules that combine them
   with the hosts and scheme, then (unless ``check_credential=False``) the auth spec's rules.

Because the password might be cut anywhere by a typo (an unescaped ``/`` or ``?`` inside it),
every message is scrubbed of any fragment that could be part of it before it leaves this
module.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any

import attrs

from mongo_sansio.errors import ConfigurationError
from mongo_sansio.uri.connection_string import (
    ConnectionString,
    Host,
    Scheme,
    validate_topology_options,
)
from mongo_sansio.uri.options import (
    UriOptions,
    Warn,
    collect_options,
    keyword_options,
    merge_options,
    percent_decode,
)

__all__ = ["parse_uri"]

_SCHEMES: tuple[tuple[str, Scheme], ...] = (
    ("mongodb+srv://", "mongodb+srv"),
    ("mongodb://", "mongodb"),
)
_USERINFO_RESERVED = frozenset(":/?#[]@")
_DATABASE_FORBIDDEN = frozenset('/\\ "$')
_HOSTNAME_FORBIDDEN = frozenset(" /\\?#[]@:,%\"<>{}|^`")
_PORT = re.compile(r"[0-9]{1,5}\Z")
# A Python repr of a str, in either kind of quotes.
_QUOTED = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")
# Keyword arguments that are not URI options.
_CREDENTIAL_KEYWORDS = ("username", "password")


class _Scrubber:
    """Removes anything that might be (part of) the password from messages."""

    def __init__(self, text: str, scheme_length: int) -> None:
        self._secrets: set[str] = set()
        rest = text[scheme_length:]
        colon = rest.find(":")
        if colon < 0 or "@" not in rest:
            return
        query = rest.find("?")
        query = len(rest) if query < 0 else query
        # An '@' after the first ':' may end the user information, and whatever lies between
        # could be the password, cut by an unescaped '/' or '?' typed inside it.  An '@' in an
        # option value (after its '=') cannot: the typo would leave it in the first key.
        for at in (i for i, ch in enumerate(rest) if ch == "@" and i > colon):
            if at > query and ("=" in rest[query:at] or "&" in rest[query:at]):
                continue
            candidate = rest[colon + 1 : at]
            self.add(candidate)
            for piece in re.split(r"[/?#&=,:@]", candidate):
                self.add(piece)

    def add(self, secret: str | None) -> None:
        if not secret:
            return
        forms = {secret}
        try:
            forms.add(percent_decode(secret, "password"))
        except ConfigurationError:
            pass
        for form in forms:
            self._secrets.add(form)
            # Messages quote text with !r, which escapes unprintable characters.
            self._secrets.add(repr(form)[1:-1])

    def clean(self, message: str) -> str:
        """Every message quotes user text with !r, so only quoted parts need scrubbing (which
        keeps a one-letter password fragment from mangling the prose around it)."""
        if not self._secrets:
            return message
        return _QUOTED.sub(self._clean_quoted, message)

    def _clean_quoted(self, match: re.Match[str]) -> str:
        quoted = match.group()
        for secret in sorted(self._secrets, key=len, reverse=True):
            quoted = quoted.replace(secret, "***")
        return quoted


def parse_uri(
    text: str,
    *,
    warn: Warn | None = None,
    check_credential: bool = True,
    **options: Any,
) -> ConnectionString:
    """Parse and validate a connection string.

    ``options`` are keyword options (any case; ``username`` and ``password`` too) that
    override the string's, validated strictly.  ``warn(message)`` is called for every ignored
    option or value; the same messages are in the result's ``warnings``.
    ``check_credential=False`` skips the auth spec's credential rules (the Connection String
    spec's own tests are about syntax only); the credential is then checked when read.
    """
    if not isinstance(text, str):
        raise ConfigurationError(f"a connection string must be str, not {type(text).__name__}")
    scheme, scheme_length = _scheme(text)
    scrubber = _Scrubber(text, scheme_length)
    scrubber.add(options.get("password") if isinstance(options.get("password"), str) else None)
    collected: list[str] = []

    def scrubbed_warn(message: str) -> None:
        message = scrubber.clean(message)
        collected.append(message)
        if warn is not None:
            warn(message)

    try:
        result = _parse(text[scheme_length:], scheme, scrubber, scrubbed_warn, options, check_credential)
    except ConfigurationError as exc:
        raise ConfigurationError(scrubber.clean(str(exc))) from None
    warnings = tuple(collected)
    return attrs.evolve(
        result, warnings=warnings, options=UriOptions(result.options.data, warnings)
    )


def _scheme(text: str) -> tuple[Scheme, int]:
    for prefix, scheme in _SCHEMES:
        if text[: len(prefix)].lower() == prefix:
            return scheme, len(prefix)
    raise ConfigurationError("a connection string must start with mongodb:// or mongodb+srv://")


def _parse(
    rest: str,
    scheme: Scheme,
    scrubber: _Scrubber,
    warn: Warn,
    keywords: dict[str, Any],
    check_credential: bool,
) -> ConnectionString:
    authority, _, query = rest.partition("?")
    authority, slash, path = authority.partition("/")
    userinfo, at, host_text = authority.rpartition("@")
    username = password = None
    if at:
        username, password = _userinfo(userinfo)
        scrubber.add(password)
    hosts = _hosts(host_text)
    database = None
    if slash and path:
        database = percent_decode(path, "the database name")
        bad = sorted(set(database) & _DATABASE_FORBIDDEN)
        if bad:
            raise ConfigurationError(f"the database name must not contain {''.join(bad)!r}")
    if scheme == "mongodb+srv":
        _check_srv_host(hosts)

    uri_options = collect_options(query, origin="uri", warn=warn)
    credential_keywords = {k: keywords.pop(k) for k in _CREDENTIAL_KEYWORDS if k in keywords}
    layers = [uri_options]
    if keywords:
        layers.append(keyword_options(keywords, warn=warn))
    # Conflicts are judged on the merge: a keyword may settle what the string alone breaks.
    uri_options = merge_options(*layers)
    username = credential_keywords.get("username", username)
    password = credential_keywords.get("password", password)
    for name, value in (("username", username), ("password", password)):
        if value is not None and not isinstance(value, str):
            raise ConfigurationError(f"{name} must be a str")
    return _validated(
        scheme, hosts, username, password, database, uri_options, check_credential
    )


def _validated(
    scheme: Scheme,
    hosts: tuple[Host, ...],
    username: str | None,
    password: str | None,
    database: str | None,
    options: UriOptions,
    check_credential: bool,
) -> ConnectionString:
    srv = scheme == "mongodb+srv"
    validate_topology_options(scheme, hosts, options, resolved=not srv)
    result = ConnectionString(
        scheme=scheme,
        hosts=hosts,
        username=username,
        password=password,
        database=database,
        options=options,
        warnings=options.warnings,
        needs_seedlist=srv,
        check_credential=check_credential,
    )
    if check_credential:
        result.credential  # noqa: B018 -- raises ConfigurationError when the auth rules fail
    return result


def _userinfo(userinfo: str) -> tuple[str, str | None]:
    name, colon, secret = userinfo.partition(":")
    # Messages here name the character, never the text around it.
    for part, what in ((name, "the username"), (secret, "the password")):
        bad = sorted(set(part) & _USERINFO_RESERVED)
        if bad:
            raise ConfigurationError(
                f"{what} contains {' '.join(bad)!r} unescaped; percent-encode the user information"
            )
    username = percent_decode(name, "the username")
    if not username:
        raise ConfigurationError("the user information has an empty username")
    password = percent_decode(secret, "the password") if colon else None
    return username, password


def _hosts(host_text: str) -> tuple[Host, ...]:
    if not host_text:
        raise ConfigurationError("a connection string needs at least one host")
    return tuple(_host(item) for item in host_text.split(","))


def _host(item: str) -> Host:
    if not item:
        raise ConfigurationError("the host list has an empty entry")
    if item.startswith("["):
        return _ip_literal(item)
    decoded = percent_decode(item, "a host")
    if "/" in decoded:
        if not decoded.endswith(".sock"):
            raise ConfigurationError(
                f"host {decoded!r} looks like a path but a Unix socket path must end in .sock"
            )
        return Host(decoded, None, "unix")
    name, colon, port_text = decoded.rpartition(":")
    if not colon:
        name, port_text = decoded, ""
    port = _port(port_text, decoded) if colon else None
    if not name or set(name) & _HOSTNAME_FORBIDDEN:
        raise ConfigurationError(f"invalid host {decoded!r}")
    try:
        ipaddress.IPv4Address(name)
    except ValueError:
        return Host(name.lower(), port, "hostname")
    return Host(name, port, "ipv4")


def _ip_literal(item: str) -> Host:
    address, bracket, after = item[1:].partition("]")
    if not bracket:
        raise ConfigurationError(f"IP literal {item!r} has no closing ']'")
    try:
        literal = ipaddress.IPv6Address(percent_decode(address, "an IP literal"))
    except ValueError:
        raise ConfigurationError(f"invalid IPv6 address in {item!r}") from None
    if after and not after.startswith(":"):
        raise ConfigurationError(f"unexpected text after the IP literal in {item!r}")
    port = _port(after[1:], item) if after else None
    return Host(str(literal), port, "ip_literal")


def _port(text: str, host: str) -> int:
    if not _PORT.match(text) or not 1 <= int(text) <= 65535:
        raise ConfigurationError(f"the port of host {host!r} must be an integer from 1 to 65535")
    return int(text)


def _check_srv_host(hosts: tuple[Host, ...]) -> None:
    if len(hosts) != 1:
        raise ConfigurationError("a mongodb+srv:// string must name exactly one host")
    (host,) = hosts
    if host.port is not None:
        raise ConfigurationError("a mongodb+srv:// host must not have a port")
    if host.kind != "hostname":
        raise ConfigurationError("a mongodb+srv:// host must be a host name")

