"""The dnspython resolvers in transports/ against a DNS server on loopback (dnslib).

The server serves a few made-up records and failure modes (NXDOMAIN, an empty answer,
SERVFAIL); a UDP socket that never replies stands in for a timeout.  Each resolver must turn
all of them into the core's answer values, never into dnspython exceptions.
"""

from __future__ import annotations

import asyncio
import importlib.util
import socket
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("dns.resolver", reason="dnspython (the srv extra) is not installed")
dnslib = pytest.importorskip("dnslib", reason="dnslib (a test dependency) is not installed")
from dnslib.server import BaseResolver, DNSLogger, DNSServer  # noqa: E402

from mongo_sansio.errors import ConfigurationError  # noqa: E402
from mongo_sansio.transports.dns import BlockingResolver, resolve_seedlist  # noqa: E402
from mongo_sansio.transports.dns_asyncio import AsyncioResolver, resolve_seedlist_async  # noqa: E402
from mongo_sansio.uri.seedlist import (  # noqa: E402
    DnsFailure,
    DnsFailureKind,
    DnsQuestion,
    SeedlistDiscovery,
    SeedlistError,
    SrvAnswer,
    SrvRecord,
    TxtAnswer,
)

HAVE_TRIO = importlib.util.find_spec("trio") is not None

SRV_NAME = "_mongodb._tcp.db.example.test"
ZONE: dict[tuple[str, str], list[Any]] = {
    (SRV_NAME, "SRV"): [
        dnslib.SRV(priority=0, weight=5, port=27017, target="a.example.test."),
        dnslib.SRV(priority=1, weight=0, port=27018, target="b.example.test."),
    ],
    ("db.example.test", "TXT"): [dnslib.TXT(["replicaSet=", "rs0&authSource=admin"])],
    ("two.example.test", "TXT"): [dnslib.TXT("replicaSet=a"), dnslib.TXT("authSource=b")],
    ("a.example.test", "A"): [dnslib.A("127.0.0.1")],
}
TTLS = {(SRV_NAME, "SRV"): 120, ("db.example.test", "TXT"): 300}
SERVFAIL_NAMES = {"broken.example.test", "_mongodb._tcp.broken.example.test"}


class _Zone(BaseResolver):  # type: ignore[misc]
    def resolve(self, request: Any, handler: Any) -> Any:
        reply = request.reply()
        name = str(request.q.qname).lower().rstrip(".")
        qtype = dnslib.QTYPE[request.q.qtype]
        if name in SERVFAIL_NAMES:
            reply.header.rcode = dnslib.RCODE.SERVFAIL
            return reply
        if not any(known == name for known, _ in ZONE):
            reply.header.rcode = dnslib.RCODE.NXDOMAIN
            return reply
        for rdata in ZONE.get((name, qtype), []):
            reply.add_answer(
                dnslib.RR(
                    name + ".",
                    getattr(dnslib.QTYPE, qtype),
                    rdata=rdata,
                    ttl=TTLS.get((name, qtype), 60),
                )
            )
        return reply


@pytest.fixture(scope="module")
def dns_port() -> Iterator[int]:
    server = DNSServer(
        _Zone(),
        address="127.0.0.1",
        port=0,
        logger=DNSLogger("-request,-reply,-recv,-send,-log_data", False),
    )
    server.start_thread()
    try:
        yield int(server.server.server_address[1])
    finally:
        server.stop()
        server.server.server_close()


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A UDP port that swallows queries: every question times out."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    try:
        yield int(sock.getsockname()[1])
    finally:
        sock.close()


def srv_q(name: str = SRV_NAME) -> DnsQuestion:
    return DnsQuestion(name=name, rdtype="SRV")


def txt_q(name: str = "db.example.test") -> DnsQuestion:
    return DnsQuestion(name=name, rdtype="TXT")


EXPECTED_SRV = SrvAnswer(
    question=srv_q(),
    records=(
        SrvRecord(target="a.example.test", port=27017, ttl=120.0),
        SrvRecord(target="b.example.test", port=27018, ttl=120.0),
    ),
)
EXPECTED_TXT = TxtAnswer(question=txt_q(), records=((b"replicaSet=", b"rs0&authSource=admin"),))

FAILURES = [
    (srv_q("_mongodb._tcp.missing.example.test"), DnsFailureKind.NO_SUCH_NAME),
    (txt_q("a.example.test"), DnsFailureKind.NO_ANSWER),
    (srv_q("_mongodb._tcp.broken.example.test"), DnsFailureKind.ERROR),
    (srv_q("_" + "x" * 70 + "._tcp.example.test"), DnsFailureKind.ERROR),  # label too long
]


# -- blocking --------------------------------------------------------------------------------


def blocking(port: int, lifetime: float = 5.0) -> BlockingResolver:
    return BlockingResolver(nameservers=["127.0.0.1"], port=port, lifetime=lifetime)


def test_blocking_srv_answer(dns_port: int) -> None:
    assert blocking(dns_port).ask(srv_q()) == EXPECTED_SRV


def test_blocking_txt_answer_keeps_each_string(dns_port: int) -> None:
    assert blocking(dns_port).ask(txt_q()) == EXPECTED_TXT


def test_blocking_two_txt_records_come_back_as_two(dns_port: int) -> None:
    answer = blocking(dns_port).ask(txt_q("two.example.test"))
    assert isinstance(answer, TxtAnswer) and sorted(answer.records) == [
        (b"authSource=b",),
        (b"replicaSet=a",),
    ]


@pytest.mark.parametrize("question, kind", FAILURES, ids=[k.name for _, k in FAILURES])
def test_blocking_failures_are_values(
    dns_port: int, question: DnsQuestion, kind: DnsFailureKind
) -> None:
    answer = blocking(dns_port).ask(question)
    assert isinstance(answer, DnsFailure) and answer.kind is kind and answer.question == question
    assert answer.reason


def test_blocking_timeout_is_a_value(silent_port: int) -> None:
    answer = blocking(silent_port, lifetime=0.2).ask(srv_q())
    assert isinstance(answer, DnsFailure) and answer.kind is DnsFailureKind.TIMEOUT


def test_blocking_drives_the_seedlist_machine(dns_port: int) -> None:
    result = resolve_seedlist(SeedlistDiscovery("db.example.test"), blocking(dns_port))
    assert result.hosts == (("a.example.test", 27017), ("b.example.test", 27018))
    assert result.options == {"replicaSet": "rs0", "authSource": "admin"}
    assert result.min_ttl == 120.0


def test_blocking_seedlist_errors_come_from_the_machine(dns_port: int) -> None:
    with pytest.raises(SeedlistError, match="no such name"):
        resolve_seedlist(SeedlistDiscovery("missing.example.test"), blocking(dns_port))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"nameservers": ["not-an-ip"]}, "name server"),
        ({"nameservers": ["127.0.0.1"], "lifetime": 0}, "lifetime"),
        ({"nameservers": ["127.0.0.1"], "port": 0}, "port"),
    ],
)
def test_bad_resolver_settings_are_configuration_errors(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigurationError, match=match):
        BlockingResolver(**kwargs)


# -- asyncio ---------------------------------------------------------------------------------


def test_asyncio_answers_match_blocking(dns_port: int) -> None:
    async def main() -> list[Any]:
        resolver = AsyncioResolver(nameservers=["127.0.0.1"], port=dns_port)
        return [await resolver.ask(q) for q in (srv_q(), txt_q(), *(q for q, _ in FAILURES))]

    answers = asyncio.run(main())
    assert answers[:2] == [EXPECTED_SRV, EXPECTED_TXT]
    assert [a.kind for a in answers[2:]] == [k for _, k in FAILURES]


def test_asyncio_timeout_is_a_value(silent_port: int) -> None:
    async def main() -> Any:
        return await AsyncioResolver(nameservers=["127.0.0.1"], port=silent_port, lifetime=0.2).ask(
            srv_q()
        )

    answer = asyncio.run(main())
    assert isinstance(answer, DnsFailure) and answer.kind is DnsFailureKind.TIMEOUT


def test_asyncio_drives_the_seedlist_machine(dns_port: int) -> None:
    async def main() -> Any:
        resolver = AsyncioResolver(nameservers=["127.0.0.1"], port=dns_port)
        return await resolve_seedlist_async(SeedlistDiscovery("db.example.test"), resolver)

    assert asyncio.run(main()).hosts == (("a.example.test", 27017), ("b.example.test", 27018))


# -- trio ------------------------------------------------------------------------------------

needs_trio = pytest.mark.skipif(not HAVE_TRIO, reason="trio (the trio extra) is not installed")


@needs_trio
def test_trio_answers_match_blocking(dns_port: int) -> None:
    import trio

    from mongo_sansio.transports.dns_trio import TrioResolver, resolve_seedlist_trio

    async def main() -> list[Any]:
        resolver = TrioResolver(nameservers=["127.0.0.1"], port=dns_port)
        answers = [await resolver.ask(q) for q in (srv_q(), txt_q(), *(q for q, _ in FAILURES))]
        answers.append(await resolve_seedlist_trio(SeedlistDiscovery("db.example.test"), resolver))
        return answers

    answers = trio.run(main)
    assert answers[:2] == [EXPECTED_SRV, EXPECTED_TXT]
    assert [a.kind for a in answers[2:-1]] == [k for _, k in FAILURES]
    assert answers[-1].options == {"replicaSet": "rs0", "authSource": "admin"}


@needs_trio
def test_trio_timeout_is_a_value(silent_port: int) -> None:
    import trio

    from mongo_sansio.transports.dns_trio import TrioResolver

    async def main() -> Any:
        return await TrioResolver(nameservers=["127.0.0.1"], port=silent_port, lifetime=0.2).ask(
            srv_q()
        )

    answer = trio.run(main)
    assert isinstance(answer, DnsFailure) and answer.kind is DnsFailureKind.TIMEOUT


def test_without_dnspython_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import mongo_sansio.transports.dns as blocking_module

    monkeypatch.setattr(blocking_module, "HAVE_DNSPYTHON", False)
    with pytest.raises(ConfigurationError, match=r"mongo-sansio\[srv\]"):
        BlockingResolver()


def test_without_trio_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from mongo_sansio.transports import dns_trio

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "trio" else real_find_spec(name, *a),
    )
    with pytest.raises(ConfigurationError, match=r"mongo-sansio\[trio\]"):
        dns_trio.TrioResolver(nameservers=["127.0.0.1"])
