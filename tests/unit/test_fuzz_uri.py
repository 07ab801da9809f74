"""The connection string fuzz target's invariant (fuzz/uri_parse.py), run briefly under hypothesis."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from uri_strategies import mutated_uris, uri_parts

_TARGET = Path(__file__).resolve().parents[2] / "fuzz" / "uri_parse.py"
_spec = importlib.util.spec_from_file_location("fuzz_uri_parse", _TARGET)
assert _spec is not None and _spec.loader is not None
fuzz_target: Any = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fuzz_target)

# Pieces of connection strings: random sequences of them get past the scheme and reach the
# host, user-information and option rules far more often than random text does.
_TOKENS = [
    "mongodb://", "mongodb+srv://", "user", ":", "pass", "@", "/", "?", "&", "=", ",", "[", "]",
    "::1", "127.0.0.1", "localhost", "example.com", ":27017", ":0", ":65536", "%2F", "%", "%zz",
    "%C3%A9", "%FF", ".sock", "db", "$", " ", "tls", "ssl", "true", "false", "1", "-1", "0",
    "replicaSet", "loadBalanced", "directConnection", "srvMaxHosts", "srvServiceName",
    "authMechanism", "MONGODB-X509", "GSSAPI", "PLAIN", "MONGODB-AWS", "MONGODB-OIDC",
    "authMechanismProperties", "ENVIRONMENT:azure", "TOKEN_RESOURCE:x", "authSource",
    "$external", "readPreference", "secondary", "primary", "readPreferenceTags", "dc:ny",
    "maxStalenessSeconds", "w", "journal", "wtimeout", "wTimeoutMS", "compressors", "zlib,zstd",
    "tlsInsecure", "tlsAllowInvalidCertificates", "proxyHost", "proxyUsername", "proxyPassword",
    "minPoolSize", "maxPoolSize", "appname", "\x00", "é", "\ud800",
]


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=200))
def test_random_bytes(data: bytes) -> None:
    fuzz_target.check_one(data)


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.sampled_from(_TOKENS), max_size=30).map("".join))
def test_token_soup(text: str) -> None:
    fuzz_target.check_text(text)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=100))
def test_text_after_scheme(text: str) -> None:
    fuzz_target.check_text("mongodb://" + text)
    fuzz_target.check_text("mongodb+srv://" + text)


@settings(max_examples=300, deadline=None)
@given(mutated_uris())
def test_mutated_uris(text: str) -> None:
    """Valid strings with a few characters changed: near-misses reach every rule."""
    fuzz_target.check_text(text)


@settings(max_examples=100, deadline=None)
@given(uri_parts())
def test_valid_uris(parts: Any) -> None:
    assert fuzz_target.check_text(parts.render()) is not None
