"""What the SRV seedlist machine uses: TXT options and ConnectionString.with_seedlist."""

from __future__ import annotations

import pytest

from mongo_sansio.errors import ConfigurationError
from mongo_sansio.uri import Host, parse_options, parse_uri

SEEDS = [("localhost.test.build.10gen.cc", 27017), ("localhost.test.build.10gen.cc", 27018)]


def test_txt_options_allow_only_three_options() -> None:
    options = parse_options("replicaSet=repl0&AUTHSOURCE=thisDB&loadBalanced=false")
    assert dict(options) == {"replicaSet": "repl0", "authSource": "thisDB", "loadBalanced": False}
    for text in ("ssl=false", "socketTimeoutMS=500", "unknownOption=1", "tls=true"):
        with pytest.raises(ConfigurationError, match="TXT"):
            parse_options(text, origin="txt")


def test_txt_option_without_value_is_an_error() -> None:
    with pytest.raises(ConfigurationError, match="authSource"):
        parse_options("authSource")


def test_txt_invalid_value_warns_like_a_uri() -> None:
    warnings: list[str] = []
    options = parse_options("loadBalanced=maybe", warn=warnings.append)
    assert dict(options) == {} and len(warnings) == 1 and options.warnings == tuple(warnings)


def test_with_seedlist_replaces_hosts_and_merges_txt_options() -> None:
    srv = parse_uri("mongodb+srv://auser:apass@test5.test.build.10gen.cc/adminDB?authSource=otherDB")
    result = srv.with_seedlist(SEEDS, parse_options("replicaSet=repl0&authSource=thisDB"))
    assert not result.needs_seedlist and result.srv and result.srv_host is None
    assert result.hosts == (
        Host("localhost.test.build.10gen.cc", 27017),
        Host("localhost.test.build.10gen.cc", 27018),
    )
    assert result.replica_set == "repl0"
    assert result.options["authSource"] == "otherDB"  # the URI wins over the TXT record
    assert result.credential is not None and result.credential.source == "otherDB"
    assert (result.username, result.password, result.database) == ("auser", "apass", "adminDB")
    assert result.tls is True


def test_with_seedlist_without_txt_record() -> None:
    srv = parse_uri("mongodb+srv://test1.test.build.10gen.cc/?replicaSet=repl0")
    result = srv.with_seedlist(SEEDS, None)
    assert result.replica_set == "repl0" and len(result.hosts) == 2


def test_txt_auth_source_applies_when_the_uri_has_none() -> None:
    srv = parse_uri("mongodb+srv://u:p@test5.test.build.10gen.cc/db")
    assert srv.with_seedlist(SEEDS[:1], parse_options("authSource=thisDB")).auth_source == "thisDB"


def test_keyword_options_win_over_txt() -> None:
    srv = parse_uri("mongodb+srv://test5.test.build.10gen.cc/", replicaSet="fromCode")
    assert srv.with_seedlist(SEEDS, parse_options("replicaSet=repl0")).replica_set == "fromCode"


def test_load_balanced_from_txt_with_one_host() -> None:
    srv = parse_uri("mongodb+srv://test24.test.build.10gen.cc/")
    result = srv.with_seedlist([("localhost.test.build.10gen.cc", 8000)], parse_options("loadBalanced=true"))
    assert result.load_balanced


@pytest.mark.parametrize(
    ("uri", "txt", "seeds"),
    [
        # loadBalanced from TXT with several SRV hosts
        ("mongodb+srv://test20.test.build.10gen.cc/", "loadBalanced=true", SEEDS),
        # a positive srvMaxHosts with loadBalanced or replicaSet from TXT
        ("mongodb+srv://test24.test.build.10gen.cc/?srvMaxHosts=1", "loadBalanced=true", SEEDS[:1]),
        ("mongodb+srv://test5.test.build.10gen.cc/?srvMaxHosts=1", "replicaSet=repl0", SEEDS[:1]),
        # loadBalanced from TXT with replicaSet or directConnection=true in the URI
        ("mongodb+srv://test20.test.build.10gen.cc/?replicaSet=rs", "loadBalanced=true", SEEDS[:1]),
        # a TXT authSource that the URI's mechanism refuses
        ("mongodb+srv://u@test5.test.build.10gen.cc/?authMechanism=GSSAPI", "authSource=thisDB", SEEDS[:1]),
    ],
)
def test_merged_options_are_validated_again(uri: str, txt: str, seeds: list[tuple[str, int]]) -> None:
    srv = parse_uri(uri)
    with pytest.raises(ConfigurationError):
        srv.with_seedlist(seeds, parse_options(txt))


def test_uri_load_balanced_false_beats_txt_true() -> None:
    srv = parse_uri("mongodb+srv://test20.test.build.10gen.cc/?loadBalanced=false")
    assert not srv.with_seedlist(SEEDS, parse_options("loadBalanced=true")).load_balanced


def test_srv_max_hosts_zero_allows_replica_set_from_txt() -> None:
    srv = parse_uri("mongodb+srv://test5.test.build.10gen.cc/?srvMaxHosts=0")
    assert srv.with_seedlist(SEEDS, parse_options("replicaSet=repl0")).replica_set == "repl0"


def test_direct_connection_true_after_resolution_with_one_host() -> None:
    # directConnection=true is refused on an SRV string before resolution already.
    with pytest.raises(ConfigurationError):
        parse_uri("mongodb+srv://test3.test.build.10gen.cc/?directConnection=true")


def test_empty_seedlist_is_an_error() -> None:
    with pytest.raises(ConfigurationError):
        parse_uri("mongodb+srv://test3.test.build.10gen.cc/").with_seedlist([], None)


def test_txt_warnings_are_carried() -> None:
    srv = parse_uri("mongodb+srv://test3.test.build.10gen.cc/?foo=1")
    result = srv.with_seedlist(SEEDS, parse_options("loadBalanced=maybe"))
    assert len(result.warnings) == 2


def test_ipv6_seed_tuples() -> None:
    srv = parse_uri("mongodb+srv://test3.test.build.10gen.cc/")
    assert srv.with_seedlist([("::1", 27017)]).hosts == (Host("::1", 27017, "ip_literal"),)


def test_txt_record_contradicting_itself_is_an_error() -> None:
    with pytest.raises(ConfigurationError, match="replicaSet"):
        parse_options("loadBalanced=true&replicaSet=repl0")


def test_ipv4_seed_tuples() -> None:
    srv = parse_uri("mongodb+srv://test3.test.build.10gen.cc/")
    assert srv.with_seedlist([("127.0.0.1", 27017)]).hosts == (Host("127.0.0.1", 27017, "ipv4"),)
