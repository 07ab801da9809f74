"""Properties of the connection string parser: round trips, secrecy, nothing but our errors."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from uri_strategies import UriParts, encode, mutated_uris, secrets, uri_parts

from mongo_sansio.errors import ConfigurationError
from mongo_sansio.uri import ConnectionString, parse_uri


def plain(value: Any) -> Any:
    return dict(value) if hasattr(value, "items") else value


@settings(max_examples=200, deadline=None)
@given(uri_parts())
def test_round_trip(parts: UriParts) -> None:
    warnings: list[str] = []
    result = parse_uri(parts.render(), warn=warnings.append, check_credential=False)
    assert warnings == []
    assert result.scheme == parts.scheme and result.needs_seedlist == (parts.scheme == "mongodb+srv")
    assert [(h.host, h.port, h.kind) for h in result.hosts] == [
        (h.host, h.port, h.kind) for h in parts.hosts
    ]
    assert (result.username, result.password) == (parts.username, parts.password)
    assert result.database == parts.database
    assert {name: plain(v) for name, v in result.options.items()} == {
        name: parsed for name, _, _, parsed in parts.options
    }


@settings(max_examples=300, deadline=None)
@given(uri_parts(with_password=True))
def test_password_never_in_repr_or_str(parts: UriParts) -> None:
    assert parts.password is not None
    result = parse_uri(parts.render(), check_credential=False)
    for text in (repr(result), str(result), repr(result.options)):
        assert parts.password not in text and encode(parts.password) not in text
    credential = result.credential
    if credential is not None:
        assert parts.password not in repr(credential)


@settings(max_examples=300, deadline=None)
@given(uri_parts(with_password=True), st.data())
def test_password_typo_never_in_error_or_warning(parts: UriParts, data: st.DataObject) -> None:
    """An unescaped reserved character inside the password breaks parsing anywhere; whatever
    message results must not show the password or any piece of it."""
    assert parts.password is not None
    encoded = encode(parts.password)
    cut = data.draw(st.integers(0, len(encoded)))
    typo = data.draw(st.sampled_from(list(":/?#[]@")))
    broken = encoded[:cut] + typo + encoded[cut:]
    text = parts.render().replace(":" + encoded + "@", ":" + broken + "@", 1)
    warnings: list[str] = []
    try:
        parse_uri(text, warn=warnings.append)
        messages = warnings
    except ConfigurationError as exc:
        messages = [*warnings, str(exc)]
        assert exc.__cause__ is None
    pieces = [p for p in re.split(r"[:/?#\[\]@]", parts.password) if len(p) >= 3]
    for message in messages:
        assert parts.password not in message
        for piece in pieces:
            assert piece not in message


def test_secret_options_hidden_in_repr() -> None:
    result = parse_uri(
        "mongodb://u:hunter2pw@h/?tlsCertificateKeyFilePassword=certsecret&proxyHost=p"
        "&proxyUsername=pu&proxyPassword=proxysecret&authMechanism=MONGODB-AWS"
        "&authMechanismProperties=AWS_SESSION_TOKEN:tokensecret"
    )
    for text in (repr(result), str(result), repr(result.credential)):
        for secret in ("hunter2pw", "certsecret", "proxysecret", "tokensecret"):
            assert secret not in text
    assert result.tls_certificate_key_file_password == "certsecret"


def test_invalid_secret_option_value_not_echoed() -> None:
    warnings: list[str] = []
    parse_uri(
        "mongodb://h/?authMechanismProperties=tokensecret", warn=warnings.append
    )
    assert warnings and all("tokensecret" not in w for w in warnings)


def test_error_raised_from_none() -> None:
    with pytest.raises(ConfigurationError) as info:
        parse_uri("mongodb://u:pw/secret@h/db")
    assert "secret" not in str(info.value) and info.value.__cause__ is None
    assert info.value.__suppress_context__


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80) | mutated_uris())
def test_anything_gives_a_result_or_a_configuration_error(text: str) -> None:
    try:
        result = parse_uri(text)
    except ConfigurationError:
        return
    assert isinstance(result, ConnectionString)


@settings(max_examples=100, deadline=None)
@given(uri_parts(), secrets)
def test_keyword_password_never_in_repr(parts: UriParts, password: str) -> None:
    result = parse_uri(parts.render(), check_credential=False, username="u", password=password)
    assert password not in repr(result)
