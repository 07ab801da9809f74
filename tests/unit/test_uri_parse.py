"""Connection string syntax: scheme, hosts, user information, database, SRV strings."""

from __future__ import annotations

import pytest

from mongo_sansio.errors import ConfigurationError, LocalProtocolError
from mongo_sansio.uri import DEFAULT_PORT, ConnectionString, Host, parse_uri


def hosts(text: str) -> tuple[Host, ...]:
    return parse_uri(text).hosts


def test_host_kinds_ports_and_case() -> None:
    result = parse_uri("mongodb://Example.COM:27018,127.0.0.1,[::1]:27019,%2Ftmp%2Fm.sock")
    assert result.hosts == (
        Host("example.com", 27018, "hostname"),
        Host("127.0.0.1", None, "ipv4"),
        Host("::1", 27019, "ip_literal"),
        Host("/tmp/m.sock", None, "unix"),
    )
    assert result.addresses == (
        ("example.com", 27018),
        ("127.0.0.1", DEFAULT_PORT),
        ("::1", 27019),
        "/tmp/m.sock",
    )
    assert [str(h) for h in result.hosts] == ["example.com:27018", "127.0.0.1", "[::1]:27019", "/tmp/m.sock"]


def test_unix_socket_path_case_is_kept_and_name_ending_sock_is_a_host() -> None:
    assert hosts("mongodb://%2Ftmp%2FMongoDB.sock") == (Host("/tmp/MongoDB.sock", None, "unix"),)
    assert hosts("mongodb://mongodb-27017.sock") == (Host("mongodb-27017.sock", None, "hostname"),)


def test_not_an_ipv4_address_is_a_hostname() -> None:
    assert hosts("mongodb://256.0.0.1") == (Host("256.0.0.1", None, "hostname"),)


def test_options_without_a_slash() -> None:
    result = parse_uri("mongodb://example.com?replicaSet=rs")
    assert result.replica_set == "rs" and result.database is None


@pytest.mark.parametrize(
    "text",
    [
        "",
        "http://localhost",
        "mongodb://",
        "mongodb://,localhost",
        "mongodb://localhost,",
        "mongodb://localhost:",
        "mongodb://localhost:0",
        "mongodb://localhost:65536",
        "mongodb://localhost:+1",
        "mongodb://localhost:١٢",  # non-ASCII digits are not a port
        "mongodb://[::1",
        "mongodb://[::1]x",
        "mongodb://[not-ipv6]",
        "mongodb://%2Ftmp%2Fmongodb",  # a path that does not end in .sock
        "mongodb://local host",
        "mongodb://host%",
        "mongodb://h%FFost",  # escapes that are not UTF-8
    ],
)
def test_invalid_hosts(text: str) -> None:
    with pytest.raises(ConfigurationError):
        parse_uri(text)


def test_configuration_error_is_a_local_protocol_error_and_value_error() -> None:
    with pytest.raises(LocalProtocolError):
        parse_uri("mongodb://")
    with pytest.raises(ValueError):
        parse_uri("mongodb://")


def test_non_string_input() -> None:
    with pytest.raises(ConfigurationError):
        parse_uri(b"mongodb://localhost")  # type: ignore[arg-type]


def test_user_information_is_percent_decoded() -> None:
    result = parse_uri("mongodb://%40l%3Ace:p%40ss%3Aw%2Frd@localhost/my%3Ddb", check_credential=False)
    assert (result.username, result.password, result.database) == ("@l:ce", "p@ss:w/rd", "my=db")


def test_sub_delims_in_user_information_need_no_escaping() -> None:
    result = parse_uri("mongodb://!$&'()*+,;=:!$&'()*+,;=@localhost")
    assert result.username == result.password == "!$&'()*+,;="


def test_empty_password_is_not_no_password() -> None:
    assert parse_uri("mongodb://alice:@localhost").password == ""
    assert parse_uri("mongodb://alice@localhost", check_credential=False).password is None


@pytest.mark.parametrize(
    "text",
    [
        "mongodb://alice:foo:bar@localhost",
        "mongodb://alice@@localhost",
        "mongodb://a[b:c@localhost",
        "mongodb://a:b]c@localhost",
        "mongodb://a:b#c@localhost",
        "mongodb://@localhost",
        "mongodb://:pw@localhost",
        "mongodb://al%ice:pw@localhost",
    ],
)
def test_invalid_user_information(text: str) -> None:
    with pytest.raises(ConfigurationError):
        parse_uri(text)


@pytest.mark.parametrize("name", ["a/b", "a\\b", "a b", 'a"b', "a$b"])
def test_database_forbidden_characters(name: str) -> None:
    encoded = "".join(f"%{b:02X}" for b in name.encode())
    with pytest.raises(ConfigurationError, match="database"):
        parse_uri(f"mongodb://localhost/{encoded}")


def test_database_may_hold_dots_and_commas() -> None:
    assert parse_uri("mongodb://localhost/db.coll,x").database == "db.coll,x"


def test_srv_string_parses_without_dns() -> None:
    result = parse_uri("mongodb+srv://Cluster0.Example.NET/?srvServiceName=custom&srvMaxHosts=2")
    assert result.srv and result.needs_seedlist
    assert result.srv_host == "cluster0.example.net"
    assert result.hosts == (Host("cluster0.example.net", None, "hostname"),)
    assert result.srv_service_name == "custom" and result.srv_max_hosts == 2
    assert result.tls is True  # implicit for mongodb+srv


def test_srv_string_may_turn_tls_off() -> None:
    assert parse_uri("mongodb+srv://a.example.com/?tls=false").tls is False


@pytest.mark.parametrize(
    "text",
    [
        "mongodb+srv://a.example.com,b.example.com",
        "mongodb+srv://a.example.com:27017",
        "mongodb+srv://127.0.0.1",
        "mongodb+srv://[::1]",
        "mongodb+srv://%2Ftmp%2Fa.sock",
        "mongodb+srv://a.example.com/?directConnection=true",
    ],
)
def test_invalid_srv_strings(text: str) -> None:
    with pytest.raises(ConfigurationError):
        parse_uri(text)


def test_srv_allows_direct_connection_false() -> None:
    assert parse_uri("mongodb+srv://a.example.com/?directConnection=false").direct_connection is False


def test_result_is_frozen() -> None:
    result = parse_uri("mongodb://localhost")
    assert isinstance(result, ConnectionString)
    with pytest.raises(AttributeError):
        result.username = "x"  # type: ignore[misc]


def test_scheme_is_case_insensitive() -> None:
    assert parse_uri("MongoDB://localhost").scheme == "mongodb"


def test_ipv6_literal_with_zone_is_normalised() -> None:
    assert hosts("mongodb://[FE80::1%25eth0]:27018") == (Host("fe80::1%eth0", 27018, "ip_literal"),)
    assert hosts("mongodb://[0:0::1]") == (Host("::1", None, "ip_literal"),)
