"""URI options: types, names, warnings, conflicts and keyword options."""

from __future__ import annotations

from typing import Any

import pytest

from mongo_sansio.errors import ConfigurationError
from mongo_sansio.uri import ConnectionString, UriOptions, parse_options, parse_uri


def parse(query: str, **keywords: Any) -> tuple[ConnectionString, list[str]]:
    warnings: list[str] = []
    result = parse_uri(f"mongodb://localhost/?{query}", warn=warnings.append, **keywords)
    assert list(result.warnings) == warnings
    return result, warnings


def test_keys_are_case_insensitive_and_canonical() -> None:
    result, warnings = parse("REPLICASET=rs&readpreference=nearest&MaxPoolSize=5&APPNAME=app")
    assert not warnings
    assert dict(result.options) == {
        "replicaSet": "rs",
        "readPreference": "nearest",
        "maxPoolSize": 5,
        "appname": "app",
    }
    assert result.options["replicaset"] == "rs" and "MAXPOOLSIZE" in result.options


def test_typed_values() -> None:
    result, warnings = parse(
        "w=majority&journal=true&wTimeoutMS=9000000000&compressors=zstd,zlib&zlibCompressionLevel=-1"
        "&readPreference=secondary&readPreferenceTags=dc:ny,rack:1&readPreferenceTags=dc:sf"
        "&readPreferenceTags=&maxStalenessSeconds=120&heartbeatFrequencyMS=500&timeoutMS=0"
        "&authMechanism=scram-sha-256&authMechanismProperties=A:b:c,D:&retryWrites=false",
        check_credential=False,
    )
    assert not warnings
    assert result.w == "majority" and result.journal is True
    assert result.wtimeout_ms == 9_000_000_000  # 64-bit, unlike the other integers
    assert result.compressors == ("zstd", "zlib") and result.zlib_compression_level == -1
    assert result.read_preference == "secondary"
    assert [dict(t) for t in result.read_preference_tags] == [{"dc": "ny", "rack": "1"}, {"dc": "sf"}, {}]
    assert result.max_staleness_seconds == 120
    assert result.heartbeat_frequency_ms == 500 and result.timeout_ms == 0
    assert result.auth_mechanism == "SCRAM-SHA-256"
    assert dict(result.auth_mechanism_properties) == {"A": "b:c", "D": ""}
    assert result.retry_writes is False


def test_w_integer_or_string() -> None:
    assert parse("w=0")[0].w == 0
    assert parse("w=tag")[0].w == "tag"
    result, warnings = parse("w=-1")
    assert result.w is None and warnings


def test_values_are_percent_decoded_after_splitting() -> None:
    result, _ = parse("appname=a%26b%3Dc&replicaSet=r%2Bs+x")
    assert result.app_name == "a&b=c"
    assert result.replica_set == "r+s+x"  # '+' is not a space in connection strings


def test_defaults_when_absent() -> None:
    result = parse_uri("mongodb://localhost")
    assert (result.heartbeat_frequency_ms, result.local_threshold_ms) == (10_000, 15)
    assert (result.server_selection_timeout_ms, result.connect_timeout_ms) == (30_000, 10_000)
    assert (result.max_pool_size, result.min_pool_size, result.max_connecting) == (100, 0, 2)
    assert result.read_preference == "primary" and result.read_preference_tags == ()
    assert result.max_staleness_seconds is None and result.direct_connection is None
    assert result.retry_reads and result.retry_writes and not result.load_balanced
    assert result.tls is False and result.server_monitoring_mode == "auto"
    assert result.compressors == () and result.socket_timeout_ms is None
    assert result.credential is None and result.auth_source is None


def test_other_tls_options_imply_tls() -> None:
    assert parse_uri("mongodb://localhost/?tlsCAFile=ca.pem").tls is True
    assert parse_uri("mongodb://localhost/?tlsInsecure=true").tls_allow_invalid_hostnames is True


@pytest.mark.parametrize(
    "query",
    [
        "unknownOption=1",
        "maxPoolSize=-1",
        "maxPoolSize=1.5",
        "maxPoolSize=2147483648",
        "maxPoolSize=",
        "maxPoolSize=١",
        "retryWrites=maybe",
        "readPreference=PRIMARY",
        "maxStalenessSeconds=0",
        "maxStalenessSeconds=-2",
        "heartbeatFrequencyMS=499",
        "serverSelectionTimeoutMS=0",
        "waitQueueTimeoutMS=0",
        "srvMaxHosts=-1",
        "appname=" + "x" * 129,
        "replicaSet=",
        "readConcernLevel=",
        "compressors=lz4",
        "authMechanismProperties=novalue",
        "replicaSet=a&replicaSet=b",
    ],
)
def test_warned_and_ignored(query: str) -> None:
    result, warnings = parse(query)
    assert len(warnings) == 1, warnings
    key = query.partition("=")[0]
    assert key not in result.options or key in ("replicaSet", "compressors")


def test_repeated_key_keeps_last_value() -> None:
    result, warnings = parse("replicaSet=a&replicaSet=b")
    assert result.replica_set == "b" and len(warnings) == 1


def test_unknown_compressors_are_dropped_from_the_list() -> None:
    result, warnings = parse("compressors=lz4,zlib,zlib")
    assert result.compressors == ("zlib",) and len(warnings) == 1


def test_legacy_booleans_warn_but_apply() -> None:
    result, warnings = parse("journal=1&retryReads=n")
    assert result.journal is True and result.retry_reads is False
    assert len(warnings) == 2 and all("deprecated" in w for w in warnings)


def test_deprecated_wtimeout() -> None:
    result, warnings = parse("wtimeout=5")
    assert result.wtimeout_ms == 5 and len(warnings) == 1
    result, warnings = parse("wTimeoutMS=10&wtimeout=5")
    assert result.wtimeout_ms == 10 and len(warnings) == 1


def test_ssl_is_an_alias_of_tls() -> None:
    result, warnings = parse("ssl=true")
    assert result.tls is True and result.options["tls"] is True and not warnings
    assert parse("ssl=true&tls=true&SSL=true")[0].tls is True


def test_key_without_value_is_an_error() -> None:
    with pytest.raises(ConfigurationError, match="'w'"):
        parse("w")


def test_empty_pairs_are_skipped() -> None:
    result, warnings = parse("&w=1&&")
    assert result.w == 1 and not warnings


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ("tlsInsecure=true&tlsAllowInvalidHostnames=false", "tlsInsecure"),
        ("tls=true&ssl=false", "ssl"),
        ("journal=true&w=0", "journal"),
        ("loadBalanced=true&replicaSet=rs", "loadBalanced"),
        ("loadBalanced=true&directConnection=true", "directConnection"),
        ("readPreferenceTags=dc:ny", "readPreferenceTags"),
        ("readPreference=primary&maxStalenessSeconds=90", "maxStalenessSeconds"),
        ("minPoolSize=10&maxPoolSize=5", "minPoolSize"),
        ("proxyPort=1080", "proxyHost"),
        ("proxyHost=p&proxyUsername=u", "proxyPassword"),
        ("proxyHost=p&proxyHost=q", "proxyHost"),
        ("authSource=", "authSource"),
        ("authMechanism=MONGODB-CR", "authMechanism"),
        ("srvMaxHosts=1", "srvMaxHosts"),
        ("srvServiceName=svc", "srvServiceName"),
    ],
)
def test_errors_name_the_option(query: str, named: str) -> None:
    with pytest.raises(ConfigurationError, match=named):
        parse(query)


def test_small_max_staleness_is_left_to_server_selection() -> None:
    result, warnings = parse("readPreference=secondary&maxStalenessSeconds=30")
    assert result.max_staleness_seconds == 30 and not warnings


def test_primary_with_empty_tag_set_is_allowed() -> None:
    assert parse("readPreferenceTags=")[0].read_preference_tags == ({},)


def test_journal_false_with_w0_is_fine() -> None:
    result, _ = parse("journal=false&w=0")
    assert (result.journal, result.w) == (False, 0)


def test_direct_connection_and_load_balanced_with_hosts() -> None:
    with pytest.raises(ConfigurationError, match="directConnection"):
        parse_uri("mongodb://a,b/?directConnection=true")
    with pytest.raises(ConfigurationError, match="loadBalanced"):
        parse_uri("mongodb://a,b/?loadBalanced=true")
    assert parse_uri("mongodb://a,b/?directConnection=false").direct_connection is False


# -- keyword options ---------------------------------------------------------------------


def test_keyword_options_override_the_string() -> None:
    result = parse_uri("mongodb://localhost/?maxPoolSize=5&w=1", maxpoolsize=7, W="majority")
    assert result.max_pool_size == 7 and result.w == "majority"


def test_keyword_options_are_typed_or_strings() -> None:
    result = parse_uri(
        "mongodb://localhost",
        retryWrites=False,
        compressors=["zlib"],
        readPreference="nearest",
        readPreferenceTags=[{"dc": "ny"}, {}],
        connectTimeoutMS="250",
    )
    assert result.retry_writes is False and result.compressors == ("zlib",)
    assert [dict(t) for t in result.read_preference_tags] == [{"dc": "ny"}, {}]
    assert result.connect_timeout_ms == 250


@pytest.mark.parametrize(
    "keywords",
    [
        {"noSuchOption": 1},
        {"maxPoolSize": -1},
        {"maxPoolSize": True},
        {"maxPoolSize": 1.5},
        {"retryWrites": "maybe"},
        {"retryWrites": "yes"},  # legacy spellings are for URIs only (PyMongo: ValueError)
        {"tls": 1},  # an integer is not a boolean keyword (PyMongo: TypeError)
        {"readPreferenceTags": ["dc:ny"]},
        {"compressors": [1]},
        {"username": 5},
    ],
)
def test_invalid_keyword_options_are_errors(keywords: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError):
        parse_uri("mongodb://localhost", **keywords)


def test_keyword_conflicts_with_the_string_are_errors() -> None:
    with pytest.raises(ConfigurationError):
        parse_uri("mongodb://localhost/?w=0", journal=True)


def test_keyword_credentials() -> None:
    result = parse_uri("mongodb://u:p@localhost", username="v", password="q")
    assert (result.username, result.password) == ("v", "q")


def test_oidc_callback_keyword_completes_the_credential() -> None:
    def callback(*_: Any) -> None:
        return None

    uri = "mongodb://localhost/?authMechanism=MONGODB-OIDC"
    with pytest.raises(ConfigurationError):
        parse_uri(uri)
    result = parse_uri(uri, authMechanismProperties={"OIDC_CALLBACK": callback})
    assert result.credential is not None
    assert result.credential.mechanism_properties["OIDC_CALLBACK"] is callback


# -- parse_options and UriOptions ----------------------------------------------------------


def test_parse_options_for_uri_origin() -> None:
    options = parse_options("w=1&tls=true", origin="uri")
    assert isinstance(options, UriOptions) and dict(options) == {"w": 1, "tls": True}


def test_uri_options_is_an_immutable_mapping() -> None:
    options = parse_options("replicaSet=rs", origin="uri")
    assert options == {"replicaSet": "rs"} and len(options) == 1 and list(options) == ["replicaSet"]
    with pytest.raises(TypeError):
        options.data["x"] = 1  # type: ignore[index]
    with pytest.raises(KeyError):
        options["w"]


def test_keywords_may_settle_what_the_string_alone_breaks() -> None:
    result = parse_uri("mongodb://h/?readPreferenceTags=dc:ny", readPreference="secondary")
    assert result.read_preference == "secondary"
    assert parse_uri("mongodb://h/?w=0&journal=true", w=1).journal is True


def test_parse_options_uri_origin_checks_conflicts() -> None:
    with pytest.raises(ConfigurationError):
        parse_options("w=0&journal=true", origin="uri")
