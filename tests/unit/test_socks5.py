"""The SOCKS5 client machine (RFC 1928 / RFC 1929), bytes in and out, and the dial flow."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mongo_sansio.client.dial import ProxySettings, dial
from mongo_sansio.client.runtime import OpenStream, Receive, SendAll, StartTls
from mongo_sansio.connection.socks5 import (
    REPLY_MEANINGS,
    ProxyAuthenticationError,
    ProxyConnectError,
    ProxyError,
    ProxyProtocolError,
    Socks5Client,
)
from mongo_sansio.errors import ConfigurationError, ConnectionSetupError, LocalProtocolError

OK_IPV4 = b"\x05\x00\x00\x01\x7f\x00\x00\x01\x04\x38"
OK_IPV6 = b"\x05\x00\x00\x04" + bytes(15) + b"\x01" + b"\x04\x38"
OK_DOMAIN = b"\x05\x00\x00\x03\x05proxy\x04\x38"


def test_no_auth_greeting_and_domain_name_request() -> None:
    client = Socks5Client("db.example.com", 27017)
    assert client.greeting() == b"\x05\x01\x00"
    request = client.receive_data(b"\x05\x00")
    assert request == b"\x05\x01\x00\x03\x0edb.example.com\x69\x89"
    assert not client.done
    assert client.receive_data(OK_IPV4) == b""
    assert client.done


@pytest.mark.parametrize(
    ("host", "encoded"),
    [
        ("10.1.2.3", b"\x01\x0a\x01\x02\x03"),
        ("::1", b"\x04" + bytes(15) + b"\x01"),
        ("[::1]", b"\x04" + bytes(15) + b"\x01"),
    ],
)
def test_ip_literals_are_sent_as_addresses(host: str, encoded: bytes) -> None:
    client = Socks5Client(host, 1)
    assert client.receive_data(b"\x05\x00") == b"\x05\x01\x00" + encoded + b"\x00\x01"


def test_username_password_offered_and_sent() -> None:
    client = Socks5Client("h", 2, username="üser", password="pw")
    assert client.greeting() == b"\x05\x02\x00\x02"
    auth = client.receive_data(b"\x05\x02")
    assert auth == b"\x01\x05" + "üser".encode() + b"\x02pw"
    request = client.receive_data(b"\x01\x00")
    assert request == b"\x05\x01\x00\x03\x01h\x00\x02"
    client.receive_data(OK_DOMAIN)
    assert client.done


def test_credentials_given_but_proxy_wants_none() -> None:
    client = Socks5Client("h", 2, username="u", password="p")
    assert client.receive_data(b"\x05\x00").startswith(b"\x05\x01")


def test_refused_credentials() -> None:
    client = Socks5Client("h", 2, username="u", password="wrong")
    client.receive_data(b"\x05\x02")
    with pytest.raises(ProxyAuthenticationError, match="refused the username") as caught:
        client.receive_data(b"\x01\x01")
    assert "wrong" not in str(caught.value)
    with pytest.raises(LocalProtocolError):
        client.receive_data(b"more")


@pytest.mark.parametrize("method", [b"\xff", b"\x02"])
def test_no_acceptable_method(method: bytes) -> None:
    client = Socks5Client("h", 2)
    with pytest.raises(ProxyAuthenticationError, match="proxyUsername"):
        client.receive_data(b"\x05" + method)


@pytest.mark.parametrize("code", [*REPLY_MEANINGS, 0x09, 0xFE])
def test_every_reply_code(code: int) -> None:
    client = Socks5Client("db", 27017)
    client.receive_data(b"\x05\x00")
    with pytest.raises(ProxyConnectError) as caught:
        client.receive_data(bytes([5, code, 0, 1, 0, 0, 0, 0, 0, 0]))
    assert caught.value.reply_code == code
    meaning = REPLY_MEANINGS.get(code, "unassigned")
    assert meaning in str(caught.value) and "db:27017" in str(caught.value)
    assert isinstance(caught.value, ConnectionSetupError)  # never gets backpressure labels


@pytest.mark.parametrize(
    ("replies", "message"),
    [
        ([b"\x04\x00"], "version 4"),
        ([b"\x05\x01"], "did not offer"),
        ([b"\x05\x00", b"\x04\x00\x00\x01"], "CONNECT with SOCKS version 4"),
        ([b"\x05\x00", b"\x05\x00\x01\x01\x00"], "reserved"),
        ([b"\x05\x00", b"\x05\x00\x00\x07\x00"], "unknown type"),
        ([b"\x05\x00", OK_IPV4 + b"x"], "after its CONNECT reply"),
    ],
)
def test_malformed_replies(replies: list[bytes], message: str) -> None:
    client = Socks5Client("h", 1)
    with pytest.raises(ProxyProtocolError, match=message):
        for reply in replies:
            client.receive_data(reply)


def test_auth_reply_with_a_bad_version() -> None:
    client = Socks5Client("h", 1, username="u", password="p")
    client.receive_data(b"\x05\x02")
    with pytest.raises(ProxyProtocolError, match="version 5"):
        client.receive_data(b"\x05\x00")


def test_end_of_stream_mid_handshake_and_after() -> None:
    client = Socks5Client("h", 1)
    client.receive_data(b"\x05\x00\x05\x00")
    with pytest.raises(ProxyProtocolError, match="closed the connection while awaiting the CONNECT"):
        client.receive_eof()
    done = Socks5Client("h", 1)
    done.receive_data(b"\x05\x00")
    done.receive_data(OK_IPV6)
    done.receive_eof()  # the server's business from now on
    assert done.done


@pytest.mark.parametrize(
    "kwargs",
    [
        {"host": "a" * 256, "port": 1},
        {"host": "h", "port": 70000},
        {"host": "h", "port": 1, "username": "u"},
        {"host": "h", "port": 1, "username": "u" * 256, "password": "p"},
        {"host": "h", "port": 1, "username": "u", "password": ""},
        {"host": "h", "port": 1, "username": "\ud800", "password": "p"},
    ],
)
def test_bad_settings_are_configuration_errors(kwargs: dict[str, object]) -> None:
    with pytest.raises(ConfigurationError):
        Socks5Client(**kwargs)  # type: ignore[arg-type]


def test_repr_hides_the_password() -> None:
    client = Socks5Client("h", 1, username="u", password="secret")
    assert "secret" not in repr(client)
    assert "secret" not in repr(ProxySettings(host="p", username="u", password="secret"))


def _split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    pieces, last = [], 0
    for point in [*points, len(data)]:
        pieces.append(data[last:point])
        last = point
    return pieces


@given(st.lists(st.integers(0, 64), max_size=12), st.sampled_from([OK_IPV4, OK_IPV6, OK_DOMAIN]))
def test_any_chunking_gives_the_same_conversation(cuts: list[int], reply: bytes) -> None:
    client = Socks5Client("db.example", 27017, username="u", password="p")
    stream = b"\x05\x02" + b"\x01\x00" + reply
    sent = b""
    for piece in _split(stream, cuts):
        sent += client.receive_data(piece)
    assert client.done
    assert sent == b"\x01\x01u\x01p" + b"\x05\x01\x00\x03\x0adb.example\x69\x89"


@given(st.binary(max_size=40))
def test_garbage_only_raises_proxy_errors(data: bytes) -> None:
    client = Socks5Client("h", 1, username="u", password="p")
    try:
        client.receive_data(data)
        client.receive_eof()
    except ProxyError:
        pass


# --- the dial flow ------------------------------------------------------------------------------


def test_dial_directly_is_one_open_stream() -> None:
    flow = dial(("h", 1), 5.0, proxy=None, close_stream=lambda s: None)
    assert flow.send(None) == OpenStream(("h", 1), 5.0)
    with pytest.raises(StopIteration) as stop:
        flow.send("stream")
    assert stop.value.value == "stream"


def test_dial_through_a_proxy_then_tls() -> None:
    proxy = ProxySettings(host="[::1]", port=1081)
    flow = dial(("db", 27017), 5.0, proxy=proxy, close_stream=lambda s: None)
    assert flow.send(None) == OpenStream(("::1", 1081), 5.0, tls=False)
    greeting = flow.send("plain")
    assert isinstance(greeting, SendAll) and list(greeting.buffers) == [b"\x05\x01\x00"]
    assert isinstance(flow.send(None), Receive)
    request = flow.send(b"\x05\x00")
    assert isinstance(request, SendAll)
    assert isinstance(flow.send(None), Receive)
    assert flow.send(OK_IPV4) == StartTls("plain", ("db", 27017), 5.0)
    with pytest.raises(StopIteration) as stop:
        flow.send("tls")
    assert stop.value.value == "tls"


def test_dial_closes_the_stream_when_the_proxy_fails() -> None:
    closed: list[object] = []
    flow = dial(("db", 1), None, proxy=ProxySettings(host="p"), close_stream=closed.append)
    assert flow.send(None) == OpenStream(("p", 1080), None, tls=False)
    flow.send("plain")
    flow.send(None)
    with pytest.raises(ProxyProtocolError, match="closed the connection"):
        flow.send(b"")
    assert closed == ["plain"]


def test_unix_sockets_are_not_proxied() -> None:
    flow = dial(("/tmp/m.sock", 0), None, proxy=ProxySettings(host="p"), close_stream=print)
    assert flow.send(None) == OpenStream(("/tmp/m.sock", 0), None)


def test_proxy_settings_from_options() -> None:
    assert ProxySettings.from_options({}) is None
    settings = ProxySettings.from_options(
        {"proxyHost": "p", "proxyUsername": "u", "proxyPassword": "x"}
    )
    assert settings == ProxySettings(host="p", port=1080, username="u", password="x")
    assert ProxySettings.from_options({"proxyHost": "p", "proxyPort": 9}) == ProxySettings(
        host="p", port=9
    )
