"""Hypothesis strategies for connection strings built from known parts.

``uri_parts()`` draws a :class:`UriParts` (scheme, hosts, credentials, database, options) and
``render`` writes it as a connection string with every component percent-encoded and option
keys in random case, so a test knows what parsing must give back.
"""

from __future__ import annotations

import ipaddress
from typing import Any
from urllib.parse import quote

import attrs
from hypothesis import strategies as st


def encode(text: str) -> str:
    """Percent-encode everything but RFC 3986's unreserved characters."""
    return quote(text, safe="")


@attrs.frozen
class HostPart:
    text: str  # as written in the URI
    host: str  # as parsed
    port: int | None
    kind: str


@attrs.frozen
class UriParts:
    scheme: str
    hosts: tuple[HostPart, ...]
    username: str | None
    password: str | None
    database: str | None
    # canonical name -> (key as written, value as written, parsed value)
    options: tuple[tuple[str, str, str, Any], ...]

    def render(self) -> str:
        userinfo = ""
        if self.username is not None:
            userinfo = encode(self.username)
            if self.password is not None:
                userinfo += ":" + encode(self.password)
            userinfo += "@"
        text = f"{self.scheme}://{userinfo}{','.join(h.text for h in self.hosts)}"
        query = "&".join(f"{key}={value}" for _, key, value, _ in self.options)
        if self.database is not None or query:
            text += "/" + encode(self.database or "")
        if query:
            text += "?" + query
        return text


_ALNUM = "abcdefghijklmnopqrstuvwxyz0123456789"
_LABEL = st.builds(
    lambda first, middle: first + middle.strip("-"),
    st.sampled_from(_ALNUM),
    st.text(_ALNUM + "-", max_size=10),
)
hostnames = st.lists(_LABEL, min_size=1, max_size=4).map(".".join).filter(
    lambda name: not _is_ipv4(name)
)
ports = st.none() | st.integers(1, 65535)


def _is_ipv4(name: str) -> bool:
    try:
        ipaddress.IPv4Address(name)
    except ValueError:
        return False
    return True


def _with_port(text: str, port: int | None) -> str:
    return text if port is None else f"{text}:{port}"


@st.composite
def host_parts(draw: st.DrawFn, *, srv: bool = False) -> HostPart:
    if srv:
        name = draw(hostnames)
        return HostPart(name.upper() if draw(st.booleans()) else name, name, None, "hostname")
    kind = draw(st.sampled_from(["hostname", "ipv4", "ip_literal", "unix"]))
    port = draw(ports)
    if kind == "hostname":
        name = draw(hostnames)
        shown = name.upper() if draw(st.booleans()) else name
        return HostPart(_with_port(shown, port), name, port, kind)
    if kind == "ipv4":
        address = str(ipaddress.IPv4Address(draw(st.integers(0, 2**32 - 1))))
        return HostPart(_with_port(address, port), address, port, kind)
    if kind == "ip_literal":
        address = str(ipaddress.IPv6Address(draw(st.integers(0, 2**128 - 1))))
        return HostPart(_with_port(f"[{address}]", port), address, port, kind)
    path = "/" + "/".join(draw(st.lists(_LABEL, min_size=1, max_size=3))) + ".sock"
    return HostPart(encode(path), path, None, "unix")


# Text that can be written in UTF-8 (no lone surrogates).
_TEXT = st.characters(blacklist_categories=["Cs"])


def _bool_option(name: str) -> st.SearchStrategy[tuple[str, str, Any]]:
    return st.booleans().map(lambda b: (name, "true" if b else "false", b))


def _int_option(name: str, low: int, high: int = 2**31 - 1) -> st.SearchStrategy[tuple[str, str, Any]]:
    return st.integers(low, high).map(lambda i: (name, str(i), i))


# Options that do not interact with each other or with the hosts.
_OPTIONS = [
    st.text(_TEXT, max_size=20).map(lambda t: ("appname", encode(t), t)).filter(lambda o: o[2] != ""),
    _int_option("connectTimeoutMS", 0),
    _int_option("heartbeatFrequencyMS", 500),
    _int_option("localThresholdMS", 0),
    _int_option("maxIdleTimeMS", 0),
    _int_option("serverSelectionTimeoutMS", 1),
    _int_option("socketTimeoutMS", 0),
    _int_option("timeoutMS", 0),
    _int_option("wTimeoutMS", 0, 2**63 - 1),
    _int_option("zlibCompressionLevel", -1, 9),
    _int_option("maxConnecting", 1),
    _bool_option("retryReads"),
    _bool_option("retryWrites"),
    _bool_option("tls"),
    st.sampled_from(["auto", "stream", "poll"]).map(lambda m: ("serverMonitoringMode", m, m)),
    st.lists(st.sampled_from(["snappy", "zlib", "zstd"]), min_size=1, max_size=3, unique=True).map(
        lambda c: ("compressors", ",".join(c), tuple(c))
    ),
    st.integers(0, 50).map(lambda w: ("w", str(w), w)),
    st.sampled_from(["local", "majority", "linearizable"]).map(lambda r: ("readConcernLevel", r, r)),
]


def _random_case(key: str, flips: list[bool]) -> str:
    return "".join(c.upper() if flip else c.lower() for c, flip in zip(key, flips, strict=False))


@st.composite
def option_parts(draw: st.DrawFn) -> tuple[tuple[str, str, str, Any], ...]:
    chosen = draw(st.lists(st.sampled_from(range(len(_OPTIONS))), max_size=6, unique=True))
    result = []
    for index in chosen:
        name, value, parsed = draw(_OPTIONS[index])
        flips = draw(st.lists(st.booleans(), min_size=len(name), max_size=len(name)))
        result.append((name, _random_case(name, flips), value, parsed))
    return tuple(result)


_DB_ALPHABET = st.characters(blacklist_characters='/\\ "$', blacklist_categories=["Cs"])
# Passwords long and odd enough that finding one in a repr cannot be a coincidence.
secrets = st.text(_TEXT, min_size=8, max_size=24).map(lambda t: "\u2603pw" + t)


@st.composite
def uri_parts(draw: st.DrawFn, *, with_password: bool = False) -> UriParts:
    srv = draw(st.integers(0, 4)) == 0
    if srv:
        hosts: tuple[HostPart, ...] = (draw(host_parts(srv=True)),)
    else:
        hosts = tuple(draw(st.lists(host_parts(), min_size=1, max_size=4)))
    if with_password:
        username: str | None = draw(st.text(_TEXT, min_size=1, max_size=20))
        password = draw(secrets)
    else:
        username = draw(st.none() | st.text(_TEXT, min_size=1, max_size=20))
        password = draw(st.none() | secrets) if username is not None else None
    database = draw(st.none() | st.text(_DB_ALPHABET, min_size=1, max_size=20))
    return UriParts(
        scheme="mongodb+srv" if srv else "mongodb",
        hosts=hosts,
        username=username,
        password=password,
        database=database,
        options=draw(option_parts()),
    )


@st.composite
def mutated_uris(draw: st.DrawFn) -> str:
    """A valid connection string with a few characters overwritten, inserted or cut."""
    text = list(draw(uri_parts()).render())
    for _ in range(draw(st.integers(1, 4))):
        position = draw(st.integers(0, len(text)))
        action = draw(st.sampled_from(["set", "insert", "cut"]))
        piece = draw(st.sampled_from(list(":/?#[]@%&=,.") + ["%2F", "%", "x", ":0", "é"]))
        if action == "set" and position < len(text):
            text[position] = piece
        elif action == "insert":
            text[position:position] = [piece]
        else:
            del text[position : position + draw(st.integers(1, 4))]
    return "".join(text)
