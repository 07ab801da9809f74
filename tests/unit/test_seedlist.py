"""The seedlist machine (mongo_sansio/uri/seedlist.py) fed answers by hand: no DNS at all."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mongo_sansio.errors import ConfigurationError, LocalProtocolError
from mongo_sansio.uri import parse_uri
from mongo_sansio.uri.seedlist import (
    DnsFailure,
    DnsFailureKind,
    DnsQuestion,
    SeedlistDiscovery,
    SeedlistError,
    SeedlistState,
    SrvAnswer,
    SrvRecord,
    TxtAnswer,
    apply_seedlist,
    check_srv_hostname,
    choose_hosts,
    discovery_for,
    fisher_yates_shuffle,
    srv_domain,
    verify_srv_target,
)


def srv(
    machine: SeedlistDiscovery, *targets: tuple[str, int], ttl: float | None = 300.0
) -> SrvAnswer:
    question = machine.questions()[0]
    assert question.rdtype == "SRV"
    return SrvAnswer(
        question=question, records=tuple(SrvRecord(target=t, port=p, ttl=ttl) for t, p in targets)
    )


def txt_question(machine: SeedlistDiscovery) -> DnsQuestion:
    return DnsQuestion(name=machine.hostname, rdtype="TXT")


def txt(machine: SeedlistDiscovery, *records: tuple[bytes, ...]) -> TxtAnswer:
    return TxtAnswer(question=txt_question(machine), records=records)


def no_txt(machine: SeedlistDiscovery) -> DnsFailure:
    return DnsFailure(question=txt_question(machine), kind=DnsFailureKind.NO_SUCH_NAME)


TWO = [("h1.example.com", 27017), ("h2.example.com", 27017)]


def first_choice(n: int) -> int:
    return 0


def discover(
    host: str,
    targets: list[tuple[str, int]],
    txt_records: tuple[tuple[bytes, ...], ...] = (),
    **kwargs: object,
) -> SeedlistDiscovery:
    machine = SeedlistDiscovery(host, **kwargs)  # type: ignore[arg-type]
    machine.receive_answer(srv(machine, *targets))
    machine.receive_answer(txt(machine, *txt_records) if txt_records else no_txt(machine))
    return machine


# -- questions ------------------------------------------------------------------------------


def test_questions_are_srv_then_txt_on_the_lower_cased_host() -> None:
    machine = SeedlistDiscovery("TEST1.Test.Build.10gen.CC")
    assert machine.questions() == (
        DnsQuestion(name="_mongodb._tcp.test1.test.build.10gen.cc", rdtype="SRV"),
        DnsQuestion(name="test1.test.build.10gen.cc", rdtype="TXT"),
    )


def test_custom_service_name_is_the_srv_prefix() -> None:
    machine = SeedlistDiscovery("test22.test.build.10gen.cc", srv_service_name="customname")
    assert machine.questions()[0].name == "_customname._tcp.test22.test.build.10gen.cc"


def test_questions_shrink_as_answers_arrive_in_either_order() -> None:
    machine = SeedlistDiscovery("a.example.com")
    machine.receive_answer(no_txt(machine))
    assert [q.rdtype for q in machine.questions()] == ["SRV"]
    assert machine.state is SeedlistState.AWAITING_SRV
    machine.receive_answer(srv(machine, ("h.example.com", 27017)))
    assert machine.questions() == ()
    assert machine.result().hosts == (("h.example.com", 27017),)


@pytest.mark.parametrize("name", ["", "-bad", "bad-", "a--b", "a_b", "x" * 63, "27017", "mongö"])
def test_bad_service_names_are_configuration_errors(name: str) -> None:
    with pytest.raises(ConfigurationError, match="srvServiceName"):
        SeedlistDiscovery("a.example.com", srv_service_name=name)


def test_long_service_names_up_to_one_label_are_allowed() -> None:
    machine = SeedlistDiscovery("a.example.com", srv_service_name="m" * 62)
    assert machine.questions()[0].name.startswith("_" + "m" * 62 + "._tcp.")


# -- host validation before DNS (prose test 1 and the connection-string rules) ---------------


@pytest.mark.parametrize(
    "host", ["localhost", "mongo.local", "a.b.c", "cluster_1.tests.mongodb.co.uk"]
)
def test_hosts_with_any_number_of_labels_are_accepted(host: str) -> None:
    assert check_srv_hostname(host) == host


@pytest.mark.parametrize(
    "host, why",
    [
        ("a.example.com:27017", "port"),
        ("a.example.com,b.example.com", "exactly one"),
        ("[::1]", "IP literal"),
        ("a..example.com", "empty label"),
        (".example.com", "empty label"),
        ("example.com.", "empty label"),
        ("", "exactly one"),
        ("/tmp/mongodb-27017.sock", "DNS name"),
        ("x" * 64 + ".com", "label over"),
    ],
)
def test_bad_hosts_fail_before_any_question(host: str, why: str) -> None:
    with pytest.raises(SeedlistError, match=why):
        SeedlistDiscovery(host)


@pytest.mark.parametrize(
    "host, domain",
    [
        ("localhost", "localhost"),
        ("mongo.local", "mongo.local"),
        ("blogs.mongodb.com", "mongodb.com"),
        ("cluster_1.tests.mongodb.co.uk", "tests.mongodb.co.uk"),
    ],
)
def test_domain_terminology(host: str, domain: str) -> None:
    assert srv_domain(host) == domain


# -- SRV target verification (prose tests 2-4 and the suite's parent-part cases) --------------


@pytest.mark.parametrize(
    "host, target",
    [
        ("localhost", "localhost.mongodb"),  # prose 2
        ("mongo.local", "test_1.evil.local"),
        ("blogs.mongodb.com", "blogs.evil.com"),
        ("localhost", "localhost"),  # prose 3: identical to a short host
        ("mongo.local", "mongo.local"),
        ("localhost", "test_1.cluster_1localhost"),  # prose 4: no separating dot
        ("mongo.local", "test_1.my_hostmongo.local"),
        ("blogs.mongodb.com", "cluster.testmongodb.com"),
        ("test12.test.build.10gen.cc", "localhost.build.10gen.cc"),
        ("test13.test.build.10gen.cc", "test.build.10gen.cc"),
        ("test14.test.build.10gen.cc", "localhost.not-test.build.10gen.cc"),
        ("test17.test.build.10gen.cc", "localhost.test.build.10gen.not-cc"),
    ],
)
def test_targets_outside_the_domain_are_errors(host: str, target: str) -> None:
    machine = SeedlistDiscovery(host)
    with pytest.raises(SeedlistError, match="not in the domain|domain of .* itself"):
        machine.receive_answer(srv(machine, (target, 27017)))
    assert machine.state is SeedlistState.FAILED


@pytest.mark.parametrize(
    "host, target",
    [
        ("localhost", "test_1.localhost"),
        ("mongo.local", "test_1.mongo.local"),
        ("blogs.mongodb.com", "cluster.mongodb.com"),
        ("test1.mongodb.com", "test1.mongodb.com"),  # identical, three labels: shares the domain
        ("test18.test.build.10gen.cc", "localhost.sub.test.build.10gen.cc"),
        ("test1.test.build.10gen.cc", "LOCALHOST.TEST.BUILD.10GEN.CC."),
    ],
)
def test_targets_inside_the_domain_are_seeds(host: str, target: str) -> None:
    machine = discover(host, [(target, 27017)])
    assert machine.result().hosts == ((target.lower().rstrip("."), 27017),)


def test_one_bad_target_among_good_ones_fails_the_whole_lookup() -> None:
    machine = SeedlistDiscovery("test19.test.build.10gen.cc")
    with pytest.raises(SeedlistError, match="evil"):
        machine.receive_answer(
            srv(
                machine,
                ("localhost.evil.build.10gen.cc", 27017),
                ("localhost.test.build.10gen.cc", 27017),
            )
        )


@pytest.mark.parametrize("port", [0, 65536, -1])
def test_impossible_ports_are_errors(port: int) -> None:
    assert (
        verify_srv_target("a.example.com", SrvRecord(target="h.example.com", port=port)) is not None
    )


# -- SRV failures ------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(DnsFailureKind))
def test_every_srv_failure_is_an_error_with_its_reason(kind: DnsFailureKind) -> None:
    machine = SeedlistDiscovery("test4.test.build.10gen.cc")
    failure = DnsFailure(question=machine.questions()[0], kind=kind, reason="the resolver's words")
    with pytest.raises(SeedlistError, match=f"{kind.value}: the resolver's words") as info:
        machine.receive_answer(failure)
    assert "_mongodb._tcp.test4.test.build.10gen.cc" in str(info.value)
    assert isinstance(info.value, ConfigurationError)


@pytest.mark.parametrize("targets", [[], [(".", 0)]])
def test_an_empty_srv_answer_is_an_error(targets: list[tuple[str, int]]) -> None:
    machine = SeedlistDiscovery("a.example.com")
    with pytest.raises(SeedlistError, match="no SRV records"):
        machine.receive_answer(srv(machine, *targets))


def test_errors_are_sticky() -> None:
    machine = SeedlistDiscovery("a.example.com")
    with pytest.raises(SeedlistError) as first:
        machine.receive_answer(srv(machine, ("evil.com", 1)))
    with pytest.raises(SeedlistError) as again:
        machine.receive_answer(no_txt(machine))
    assert again.value is first.value
    with pytest.raises(SeedlistError):
        machine.result()
    assert machine.questions() == ()


def test_duplicate_records_give_one_seed_and_the_lowest_ttl_is_kept() -> None:
    machine = SeedlistDiscovery("a.example.com")
    question = machine.questions()[0]
    machine.receive_answer(
        SrvAnswer(
            question=question,
            records=(
                SrvRecord(target="h.example.com", port=1, ttl=500),
                SrvRecord(target="h.example.com.", port=1, ttl=90),
                SrvRecord(target="i.example.com", port=2, ttl=None),
            ),
        )
    )
    machine.receive_answer(no_txt(machine))
    result = machine.result()
    assert result.hosts == (("h.example.com", 1), ("i.example.com", 2))
    assert result.min_ttl == 90


# -- caller mistakes ---------------------------------------------------------------------------


def test_answers_to_unasked_or_answered_questions_are_local_errors() -> None:
    machine = SeedlistDiscovery("a.example.com")
    stranger = DnsQuestion(name="b.example.com", rdtype="TXT")
    with pytest.raises(LocalProtocolError):
        machine.receive_answer(TxtAnswer(question=stranger, records=()))
    with pytest.raises(LocalProtocolError, match="no seed list yet"):
        machine.result()
    machine.receive_answer(no_txt(machine))
    with pytest.raises(LocalProtocolError):
        machine.receive_answer(no_txt(machine))


def test_an_answer_of_the_wrong_shape_is_a_local_error() -> None:
    machine = SeedlistDiscovery("a.example.com")
    srv_question = machine.questions()[0]
    with pytest.raises(LocalProtocolError):
        machine.receive_answer(TxtAnswer(question=srv_question, records=()))


# -- TXT records -------------------------------------------------------------------------------


def test_a_txt_record_gives_default_options() -> None:
    result = discover(
        "test5.test.build.10gen.cc",
        [("localhost.test.build.10gen.cc", 27017)],
        ((b"replicaSet=repl0&authSource=thisDB",),),
    ).result()
    assert result.options == {"replicaSet": "repl0", "authSource": "thisDB"}
    assert result.txt_text == "replicaSet=repl0&authSource=thisDB"


def test_the_strings_of_one_record_are_concatenated_in_order() -> None:
    result = discover(
        "test11.test.build.10gen.cc",
        [("localhost.test.build.10gen.cc", 27017)],
        ((b"replicaS", b"et=rep", b"l0"),),
    ).result()
    assert result.options == {"replicaSet": "repl0"}


def test_two_txt_records_are_an_error() -> None:
    machine = SeedlistDiscovery("test6.test.build.10gen.cc")
    with pytest.raises(SeedlistError, match="2 TXT records"):
        machine.receive_answer(txt(machine, (b"replicaSet=repl0",), (b"authSource=otherDB",)))


@pytest.mark.parametrize(
    "text, match",
    [
        ("ssl=false", "'ssl' is not allowed"),
        ("socketTimeoutMS=500", "'socketTimeoutMS' is not allowed"),
        ("authSource", "no value"),
        ("=x", "empty name"),
        ("authSource=%zz", "percent"),
        ("authSource=%ff", "UTF-8"),
        ("replicaSet=a&loadBalanced=true", "conflicts"),
    ],
)
def test_bad_txt_options_are_errors(text: str, match: str) -> None:
    machine = SeedlistDiscovery("a.example.com")
    with pytest.raises(SeedlistError, match=match) as info:
        machine.receive_answer(txt(machine, (text.encode(),)))
    assert "TXT record of 'a.example.com'" in str(info.value)
    assert machine.state is SeedlistState.FAILED


def test_txt_options_are_read_like_connection_string_options() -> None:
    # keys are case-insensitive, values percent-decoded, the last repeat wins, and an
    # invalid value is warned about and ignored (the spec defers to the Connection String spec)
    warnings: list[str] = []
    machine = discover(
        "a.example.com",
        TWO[:1],
        ((b"AUTHSOURCE=a&authSource=b%2Fc&loadBalanced=false&replicaSet=",),),
        warn=warnings.append,
    )
    assert machine.result().options == {"authSource": "b/c", "loadBalanced": False}
    assert any("replicaSet" in w for w in warnings)


def test_a_txt_record_that_is_not_utf8_is_an_error() -> None:
    machine = SeedlistDiscovery("a.example.com")
    with pytest.raises(SeedlistError, match="UTF-8"):
        machine.receive_answer(txt(machine, (b"authSource=\xff",)))


@pytest.mark.parametrize("kind", [DnsFailureKind.NO_SUCH_NAME, DnsFailureKind.NO_ANSWER])
def test_no_txt_record_means_no_options(kind: DnsFailureKind) -> None:
    machine = SeedlistDiscovery("a.example.com")
    machine.receive_answer(DnsFailure(question=txt_question(machine), kind=kind))
    machine.receive_answer(srv(machine, ("h.example.com", 27017)))
    assert machine.result().options == {}
    assert machine.result().txt_text is None


@pytest.mark.parametrize("kind", [DnsFailureKind.TIMEOUT, DnsFailureKind.ERROR])
def test_a_failed_txt_lookup_is_an_error(kind: DnsFailureKind) -> None:
    machine = SeedlistDiscovery("a.example.com")
    with pytest.raises(SeedlistError, match="TXT lookup"):
        machine.receive_answer(DnsFailure(question=txt_question(machine), kind=kind, reason="x"))


# -- post-merge checks -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, txt_records, match",
    [
        ({"srv_max_hosts": 1, "replica_set": "rs"}, (), "replicaSet"),
        ({"srv_max_hosts": 1}, ((b"replicaSet=rs",),), "replicaSet"),
        ({"srv_max_hosts": 1, "load_balanced": True}, (), "loadBalanced"),
        ({"srv_max_hosts": 1}, ((b"loadBalanced=true",),), "loadBalanced"),
        ({"load_balanced": True}, (), "exactly one host"),
        ({}, ((b"loadBalanced=true",),), "exactly one host"),
    ],
)
def test_option_conflicts_found_after_the_lookup(
    kwargs: dict[str, object], txt_records: tuple[tuple[bytes, ...], ...], match: str
) -> None:
    kwargs.setdefault("randbelow", first_choice)
    with pytest.raises(SeedlistError, match=match):
        discover("a.example.com", TWO, txt_records, **kwargs)


def test_load_balanced_with_replica_set_is_an_error() -> None:
    with pytest.raises(SeedlistError, match="replicaSet"):
        discover("a.example.com", TWO[:1], ((b"loadBalanced=true",),), replica_set="rs")


def test_the_uri_overrides_the_txt_record_in_the_checks() -> None:
    # loadBalanced=false in the URI beats loadBalanced=true in TXT: two hosts are then fine
    result = discover(
        "a.example.com", TWO, ((b"loadBalanced=true",),), load_balanced=False
    ).result()
    assert len(result.hosts) == 2
    assert result.options == {
        "loadBalanced": True
    }  # the TXT value is reported; the URI's wins later


def test_direct_connection_true_is_refused_before_dns() -> None:
    with pytest.raises(ConfigurationError, match="directConnection"):
        SeedlistDiscovery("a.example.com", direct_connection=True)


@pytest.mark.parametrize("bad", [-1, True, 1.5, "2"])
def test_srv_max_hosts_must_be_a_non_negative_int(bad: object) -> None:
    with pytest.raises(ConfigurationError, match="srvMaxHosts"):
        SeedlistDiscovery("a.example.com", srv_max_hosts=bad)  # type: ignore[arg-type]


def test_srv_max_hosts_needs_a_random_source() -> None:
    with pytest.raises(LocalProtocolError, match="randbelow"):
        SeedlistDiscovery("a.example.com", srv_max_hosts=1)


# -- srvMaxHosts draws -------------------------------------------------------------------------

FIVE = [(f"h{i}.example.com", 27017 + i) for i in range(5)]


@pytest.mark.parametrize("max_hosts", [0, 5, 6])
def test_all_hosts_when_srv_max_hosts_is_zero_or_covers_them(max_hosts: int) -> None:
    calls: list[int] = []

    def spy(n: int) -> int:
        calls.append(n)
        return 0

    result = discover("a.example.com", FIVE, srv_max_hosts=max_hosts, randbelow=spy).result()
    assert result.hosts == tuple(FIVE)
    assert calls == []  # no draw when none is needed


def test_fewer_max_hosts_takes_the_first_of_a_fisher_yates_shuffle() -> None:
    # randbelow always 0 swaps each last element with the first: a known permutation
    result = discover("a.example.com", FIVE, srv_max_hosts=2, randbelow=first_choice).result()
    assert result.hosts == (FIVE[1], FIVE[2])
    assert result.all_hosts == tuple(FIVE)


def test_result_is_drawn_once() -> None:
    rng = random.Random(7)
    machine = discover("a.example.com", FIVE, srv_max_hosts=2, randbelow=rng.randrange)
    assert machine.result() is machine.result()


def test_a_random_source_out_of_range_is_a_local_error() -> None:
    machine = discover("a.example.com", FIVE, srv_max_hosts=2, randbelow=lambda n: n)
    with pytest.raises(LocalProtocolError, match="outside"):
        machine.result()


@given(st.lists(st.integers(0, 10**6), unique=True, max_size=30), st.randoms(use_true_random=False))
def test_fisher_yates_is_a_permutation(values: list[int], rng: random.Random) -> None:
    hosts = [(f"h{v}", v) for v in values]
    shuffled = fisher_yates_shuffle(hosts, rng.randrange)
    assert sorted(shuffled) == sorted(hosts)


@given(st.integers(1, 8), st.integers(0, 10), st.randoms(use_true_random=False))
def test_choose_hosts_takes_min_of_limit_and_count(
    count: int, limit: int, rng: random.Random
) -> None:
    hosts = [(f"h{i}", i) for i in range(count)]
    chosen = choose_hosts(hosts, limit, rng.randrange)
    expected = count if limit == 0 else min(limit, count)
    assert len(chosen) == expected and set(chosen) <= set(hosts) and len(set(chosen)) == expected


def test_every_subset_can_be_drawn() -> None:
    seen: set[frozenset[tuple[str, int]]] = set()
    rng = random.Random(1)
    for _ in range(300):
        seen.add(frozenset(choose_hosts(FIVE[:4], 2, rng.randrange)))
    assert len(seen) == 6  # C(4, 2)


@given(
    st.from_regex(r"[a-z0-9]{1,10}(\.[a-z0-9]{1,10}){0,4}", fullmatch=True),
    st.from_regex(r"[a-z0-9_]{1,10}(\.[a-z0-9_]{1,10}){0,2}", fullmatch=True),
)
def test_any_name_below_the_domain_verifies(host: str, prefix: str) -> None:
    target = f"{prefix}.{srv_domain(host)}"
    assert verify_srv_target(host, SrvRecord(target=target, port=27017)) is None


# -- with a parsed connection string -----------------------------------------------------------


def test_discovery_for_takes_its_settings_from_the_connection_string() -> None:
    cs = parse_uri("mongodb+srv://Test22.example.com/db?srvServiceName=customname&srvMaxHosts=1")
    machine = discovery_for(cs, randbelow=first_choice)
    assert machine.questions()[0].name == "_customname._tcp.test22.example.com"
    assert machine.srv_max_hosts == 1
    machine.receive_answer(srv(machine, *FIVE[:3]))
    machine.receive_answer(no_txt(machine))
    final = apply_seedlist(cs, machine.result())
    assert final.addresses == (FIVE[1],) and not final.needs_seedlist
    assert final.database == "db" and final.tls


def test_apply_seedlist_lets_the_uri_override_the_txt_record() -> None:
    cs = parse_uri("mongodb+srv://test5.example.com/?authSource=otherDB")
    machine = discovery_for(cs)
    machine.receive_answer(srv(machine, ("h.example.com", 27017)))
    machine.receive_answer(txt(machine, (b"replicaSet=repl0&authSource=thisDB",)))
    final = apply_seedlist(cs, machine.result())
    assert final.replica_set == "repl0" and final.auth_source == "otherDB"


def test_discovery_for_refuses_a_plain_connection_string() -> None:
    with pytest.raises(LocalProtocolError):
        discovery_for(parse_uri("mongodb://a.example.com"))


# -- whatever DNS says, the machine answers with a seed list or its own error ------------------

TARGETS = st.one_of(
    st.text(max_size=40),
    st.from_regex(r"[a-zA-Z0-9_.-]{0,20}\.?example\.com\.?", fullmatch=True),
)
RECORDS = st.lists(
    st.tuples(TARGETS, st.integers(-5, 70000), st.none() | st.floats(0, 1e6)), max_size=6
)
TXT_DATA = st.lists(
    st.lists(
        st.binary(max_size=30)
        | st.sampled_from(
            [b"authSource=a", b"replicaSet=r", b"loadBalanced=true", b"&", b"=", b"%", b"ssl=1"]
        ),
        max_size=4,
    ).map(tuple),
    max_size=3,
).map(tuple)


@given(RECORDS, TXT_DATA, st.integers(0, 3), st.sampled_from([None, True, False]))
def test_any_answers_give_a_seedlist_or_a_seedlist_error(
    records: list[tuple[str, int, float | None]],
    txt_records: tuple[tuple[bytes, ...], ...],
    max_hosts: int,
    load_balanced: bool | None,
) -> None:
    machine = SeedlistDiscovery(
        "db.example.com",
        srv_max_hosts=max_hosts,
        load_balanced=load_balanced,
        randbelow=first_choice,
    )
    question = machine.questions()[0]
    answer = SrvAnswer(
        question=question,
        records=tuple(SrvRecord(target=t, port=p, ttl=ttl) for t, p, ttl in records),
    )
    try:
        machine.receive_answer(txt(machine, *txt_records))
        machine.receive_answer(answer)
        result = machine.result()
    except SeedlistError:
        assert machine.state is SeedlistState.FAILED
        return
    assert result.hosts and all(
        host.endswith(".example.com") and 0 < port < 65536 for host, port in result.hosts
    )
    assert len(result.hosts) == (
        len(result.all_hosts) if max_hosts == 0 else min(max_hosts, len(result.all_hosts))
    )
