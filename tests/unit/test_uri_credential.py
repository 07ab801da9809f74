"""The auth spec's rules for credentials in a connection string."""

from __future__ import annotations

import pytest

from mongo_sansio.errors import ConfigurationError
from mongo_sansio.uri import parse_uri


@pytest.mark.parametrize(
    ("uri", "source"),
    [
        ("mongodb://u:p@h", "admin"),
        ("mongodb://u:p@h/db", "db"),
        ("mongodb://u:p@h/db?authSource=other", "other"),
        ("mongodb://u:p@h/?authMechanism=SCRAM-SHA-1", "admin"),
        ("mongodb://u:p@h/?authMechanism=PLAIN", "$external"),
        ("mongodb://u:p@h/db?authMechanism=PLAIN", "db"),
        ("mongodb://u@h/db?authMechanism=MONGODB-X509", "$external"),
        ("mongodb://h/?authMechanism=MONGODB-X509", "$external"),
        ("mongodb://u@h/db?authMechanism=GSSAPI", "$external"),
        ("mongodb://h/?authMechanism=MONGODB-AWS", "$external"),
        ("mongodb://h/?authMechanism=MONGODB-OIDC&authMechanismProperties=ENVIRONMENT:k8s", "$external"),
    ],
)
def test_default_auth_source_per_mechanism(uri: str, source: str) -> None:
    credential = parse_uri(uri).credential
    assert credential is not None and credential.source == source


@pytest.mark.parametrize(
    "uri",
    [
        "mongodb://u@h",  # SCRAM needs a password
        "mongodb://h/?authMechanism=SCRAM-SHA-256",
        "mongodb://u:p@h/?authMechanism=MONGODB-X509",
        "mongodb://u@h/?authMechanism=MONGODB-X509&authSource=admin",
        "mongodb://u@h/?authMechanism=GSSAPI&authMechanismProperties=NOPE:1",
        "mongodb://u@h/?authMechanism=GSSAPI&authMechanismProperties=CANONICALIZE_HOST_NAME:sometimes",
        "mongodb://u@h/?authMechanism=MONGODB-AWS",
        "mongodb://h/?authMechanism=MONGODB-AWS&authMechanismProperties=AWS_SESSION_TOKEN:t",
        "mongodb://h/?authMechanism=MONGODB-OIDC",
        "mongodb://h/?authMechanism=MONGODB-OIDC&authMechanismProperties=ENVIRONMENT:azure",
        "mongodb://h/?authMechanism=MONGODB-OIDC&authMechanismProperties=ENVIRONMENT:test,TOKEN_RESOURCE:x",
        "mongodb://u@h/?authMechanism=MONGODB-OIDC&authMechanismProperties=ENVIRONMENT:gcp,TOKEN_RESOURCE:x",
        "mongodb://u:p@h/?authMechanism=PLAIN&authMechanismProperties=X:y",
    ],
)
def test_credential_rules(uri: str) -> None:
    with pytest.raises(ConfigurationError):
        parse_uri(uri)


def test_gssapi_service_name_default() -> None:
    credential = parse_uri("mongodb://u%40REALM@h/?authMechanism=GSSAPI").credential
    assert credential is not None
    assert credential.username == "u@REALM" and credential.password is None
    assert dict(credential.mechanism_properties) == {"SERVICE_NAME": "mongodb"}


def test_auth_database_alone_asks_for_no_authentication() -> None:
    assert parse_uri("mongodb://h/db?authSource=other").credential is None


def test_check_credential_false_defers_the_rules() -> None:
    result = parse_uri("mongodb://u@h", check_credential=False)
    with pytest.raises(ConfigurationError):
        result.credential  # noqa: B018
