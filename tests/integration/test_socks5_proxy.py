"""Every runtime's client through a SOCKS5 proxy (proxyHost & co.), against the simulated set.

The proxy is :mod:`mongo_sansio.transports.socks5_proxy` on loopback.  The members call
themselves ``mongo.socks.test``, a name only the proxy can resolve (its resolver maps it to
loopback): a client that resolved it itself, or that went around the proxy, could not connect.
Covered on blocking, gevent, asyncio and trio: no authentication, username/password (and a
wrong one), TLS through the tunnel (the certificate names the server, not the proxy), a proxy
that refuses (a clear ProxyConnectError reason inside the selection timeout, nothing leaked),
and the monitors' connections going through the proxy too.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from integration_helpers import trusted_tls
from runtime_round_trip import RUNTIMES
from runtime_round_trip import round_trip as plain_round_trip

from mongo_sansio.adapters.sim import SimulatedReplicaSet
from mongo_sansio.errors import MongoError
from mongo_sansio.selection.errors import ServerSelectionTimeoutError
from mongo_sansio.transports.socks5_proxy import Socks5Proxy

NAME = "mongo.socks.test"
OPTIONS: dict[str, Any] = {"serverSelectionTimeoutMS": 3000, "connectTimeoutMS": 2000}


def to_loopback(host: str, port: int) -> tuple[str, int]:
    if host != NAME:
        raise OSError(f"unknown host {host}")
    return ("127.0.0.1", port)


def round_trip(runtime: str, uri: str, **options: Any) -> Any:
    return plain_round_trip(runtime, uri, **{**OPTIONS, **options})


@pytest.fixture
def named_set() -> Iterator[SimulatedReplicaSet]:
    with SimulatedReplicaSet(members=2, advertised_host=NAME) as rs:
        yield rs


def wait_until_idle(proxy: Socks5Proxy) -> None:
    deadline = time.monotonic() + 5
    while proxy.active and time.monotonic() < deadline:
        time.sleep(0.01)
    assert proxy.active == 0, "a connection through the proxy was left open"


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_through_a_proxy_without_authentication(
    runtime: str, named_set: SimulatedReplicaSet
) -> None:
    with Socks5Proxy(resolve=to_loopback) as proxy:
        found = round_trip(runtime, named_set.uri, proxyHost="127.0.0.1", proxyPort=proxy.port)
        assert found == {"_id": runtime}
        assert proxy.methods and set(proxy.methods) == {b"\x00"}
        hosts = {(host, kind) for host, _port, kind in proxy.requests}
        assert hosts == {(NAME, 3)}  # DOMAINNAME: DNS happened at the proxy
        # both members were monitored (and through the proxy: their name resolves nowhere else)
        assert {port for _h, port, _k in proxy.requests} == {
            int(member.rsplit(":", 1)[1]) for member in named_set.members
        }
        wait_until_idle(proxy)


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_through_a_proxy_with_a_password(runtime: str, named_set: SimulatedReplicaSet) -> None:
    with Socks5Proxy(username="alice", password="s3cret", resolve=to_loopback) as proxy:
        uri = (
            f"{named_set.uri}&proxyHost=localhost&proxyPort={proxy.port}"
            "&proxyUsername=alice&proxyPassword=s3cret"
        )
        assert round_trip(runtime, uri) == {"_id": runtime}
        assert set(proxy.methods) == {b"\x00\x02"}
        with pytest.raises(ServerSelectionTimeoutError) as caught:
            round_trip(
                runtime,
                named_set.uri,
                proxyHost="127.0.0.1",
                proxyPort=proxy.port,
                proxyUsername="alice",
                proxyPassword="wrong",
                serverSelectionTimeoutMS=500,
            )
        assert "ProxyAuthenticationError" in str(caught.value)
        assert "wrong" not in str(caught.value)
        wait_until_idle(proxy)


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_a_refusing_proxy_fails_clearly_in_time(
    runtime: str, named_set: SimulatedReplicaSet
) -> None:
    with Socks5Proxy(refuse=0x05, resolve=to_loopback) as proxy:
        started = time.monotonic()
        with pytest.raises(ServerSelectionTimeoutError) as caught:
            round_trip(
                runtime,
                named_set.uri,
                proxyHost="127.0.0.1",
                proxyPort=proxy.port,
                serverSelectionTimeoutMS=600,
            )
        assert time.monotonic() - started < 5
        message = str(caught.value)
        assert "ProxyConnectError" in message and "connection refused (SOCKS5 reply 0x05)" in message
        wait_until_idle(proxy)


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_a_proxy_that_is_not_there(runtime: str, named_set: SimulatedReplicaSet) -> None:
    with Socks5Proxy() as gone:
        port = gone.port
    with pytest.raises(ServerSelectionTimeoutError) as caught:
        round_trip(
            runtime, named_set.uri, proxyHost="127.0.0.1", proxyPort=port,
            serverSelectionTimeoutMS=500,
        )
    assert f"127.0.0.1:{port}" in str(caught.value)


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_tls_through_the_proxy(runtime: str, tmp_path: Path) -> None:
    tls = trusted_tls(tmp_path, (NAME,))  # the server's name; the proxy's would not verify
    with SimulatedReplicaSet(members=1, tls=tls.server_context, advertised_host=NAME) as rs:
        with Socks5Proxy(resolve=to_loopback) as proxy:
            found = round_trip(
                runtime, rs.uri, tlsCAFile=tls.ca_file, proxyHost="127.0.0.1", proxyPort=proxy.port
            )
            assert found == {"_id": runtime}
            assert proxy.requests
            wait_until_idle(proxy)


def test_proxy_options_are_validated() -> None:
    from mongo_sansio.adapters.blocking import MongoClient

    for bad in (
        {"proxyPort": 1080},
        {"proxyHost": "p", "proxyUsername": "u"},
        {"proxyHost": "p", "proxyPort": -1},
    ):
        with pytest.raises(MongoError):
            MongoClient("mongodb://h/", connect=False, **bad)
