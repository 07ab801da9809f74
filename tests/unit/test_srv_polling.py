"""The SRV polling machine (mongo_sansio/uri/srv_polling.py) on a virtual clock.

The Polling SRV Records spec's prose tests 1-13 are written here against the machine: the
"mocked DNS change" is the answer we feed, "the topology's hosts" is what the machine says to
add and remove.  What they would add on a live cluster (the mongos actually being reachable)
belongs to the client's integration tests.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mongo_sansio.errors import ConfigurationError, LocalProtocolError
from mongo_sansio.sdam.description import TopologyType
from mongo_sansio.uri.seedlist import (
    Address,
    DnsFailure,
    DnsFailureKind,
    DnsQuestion,
    SrvAnswer,
    SrvRecord,
    TxtAnswer,
)
from mongo_sansio.uri.srv_polling import (
    MIN_RESCAN_INTERVAL,
    PollerState,
    SrvPoller,
    SrvPollResult,
    rescan_interval,
)

HOST = "test1.test.build.10gen.cc"
TARGET = "localhost.test.build.10gen.cc"
TTL = 86400.0


def at(port: int) -> Address:
    return (TARGET, port)


def records(*ports: int, ttl: float | None = TTL, target: str = TARGET) -> tuple[SrvRecord, ...]:
    return tuple(SrvRecord(target=target + ".", port=p, ttl=ttl) for p in ports)


def make_test1_poller(**kwargs: object) -> SrvPoller:
    kwargs.setdefault("hosts", [at(27017), at(27018)])
    kwargs.setdefault("now", 0.0)
    kwargs.setdefault("min_ttl", TTL)
    return SrvPoller(HOST, **kwargs)  # type: ignore[arg-type]


def rescan(
    poller: SrvPoller,
    answer_records: tuple[SrvRecord, ...] | None = None,
    *,
    failure: DnsFailureKind | None = None,
) -> SrvPollResult:
    """Advance the virtual clock to the deadline, take the question, answer it."""
    deadline = poller.next_deadline()
    assert deadline is not None
    assert poller.handle_timeout(deadline - 0.001) is None  # not due a moment early
    question = poller.handle_timeout(deadline)
    assert question == DnsQuestion(name=f"_mongodb._tcp.{HOST}", rdtype="SRV")
    assert poller.next_deadline() is None  # no timer while the query is out
    if failure is not None:
        return poller.receive_answer(
            DnsFailure(question=question, kind=failure, reason="mocked"), deadline
        )
    return poller.receive_answer(
        SrvAnswer(question=question, records=answer_records or ()), deadline
    )


# -- the interval ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "ttls, interval",
    [
        ([86400.0], 86400.0),
        ([300.0, 120.0], 120.0),
        ([5.0, 300.0], 60.0),
        ([], 60.0),
        ([None], 60.0),
    ],
)
def test_interval_is_the_lowest_ttl_but_at_least_sixty_seconds(
    ttls: list[float | None], interval: float
) -> None:
    assert rescan_interval(ttls) == interval


def test_first_rescan_is_due_an_interval_after_initial_discovery_ended() -> None:
    poller = make_test1_poller(now=1000.0, min_ttl=90.0)
    assert poller.next_deadline() == 1090.0
    assert poller.handle_timeout(1089.9) is None
    assert poller.handle_timeout(1090.0) is not None


def test_interval_follows_the_latest_answer_counted_from_its_end() -> None:
    poller = make_test1_poller(min_ttl=None)
    assert poller.next_deadline() == MIN_RESCAN_INTERVAL
    question = poller.handle_timeout(60.0)
    assert question is not None
    result = poller.receive_answer(
        SrvAnswer(question=question, records=records(27017, 27018, ttl=200.0)), 65.0
    )
    assert result.next_rescan == poller.next_deadline() == 265.0
    assert not result.changed


# -- prose tests 1-5: changing DNS records ------------------------------------------------------


def test_prose_1_addition_of_a_new_record() -> None:
    result = rescan(make_test1_poller(), records(27017, 27018, 27019))
    assert result.added == (at(27019),) and result.removed == ()
    assert set(result.hosts) == {at(27017), at(27018), at(27019)}


def test_prose_2_removal_of_an_existing_record() -> None:
    result = rescan(make_test1_poller(), records(27017))
    assert result.removed == (at(27018),) and result.added == ()
    assert result.hosts == (at(27017),)


def test_prose_3_replacement_of_a_record() -> None:
    result = rescan(make_test1_poller(), records(27017, 27019))
    assert result.removed == (at(27018),) and result.added == (at(27019),)
    assert set(result.hosts) == {at(27017), at(27019)}


def test_prose_4_both_replaced_with_one() -> None:
    result = rescan(make_test1_poller(), records(27019))
    assert set(result.removed) == {at(27017), at(27018)} and result.added == (at(27019),)
    assert result.hosts == (at(27019),)


def test_prose_5_both_replaced_with_two() -> None:
    result = rescan(make_test1_poller(), records(27019, 27020))
    assert set(result.hosts) == {at(27019), at(27020)}
    assert set(result.removed) == {at(27017), at(27018)}


def test_unchanged_hosts_are_left_alone_in_place() -> None:
    poller = make_test1_poller()
    result = rescan(poller, records(27018, 27017))
    assert not result.changed and result.hosts == (at(27017), at(27018))


# -- prose tests 6-8: errors leave the list unchanged ------------------------------------------


@pytest.mark.parametrize(
    "failure",
    [
        DnsFailureKind.TIMEOUT,
        DnsFailureKind.NO_SUCH_NAME,
        DnsFailureKind.ERROR,
        DnsFailureKind.NO_ANSWER,
    ],
)
def test_prose_6_7_lookup_failures_change_nothing(failure: DnsFailureKind) -> None:
    poller = make_test1_poller(heartbeat_frequency=10.0)
    result = rescan(poller, failure=failure)
    assert not result.changed and result.hosts == (at(27017), at(27018))
    assert (
        result.failure is not None
        and failure.value in result.failure
        and "mocked" in result.failure
    )
    # the interval falls back to heartbeatFrequencyMS until a verified record is seen
    assert poller.interval == 10.0 and result.next_rescan == TTL + 10.0


def test_prose_8_zero_records_change_nothing() -> None:
    poller = make_test1_poller(heartbeat_frequency=10.0)
    result = rescan(poller, ())
    assert not result.changed and result.hosts == (at(27017), at(27018))
    assert result.failure == "the SRV answer had no records"
    assert poller.interval == 10.0


def test_fast_interval_lasts_until_a_verified_record_arrives() -> None:
    poller = make_test1_poller(heartbeat_frequency=10.0)
    rescan(poller, failure=DnsFailureKind.TIMEOUT)
    rescan(poller, records(27017, ttl=300.0, target="localhost.evil.cc"))
    assert poller.interval == 10.0
    rescan(poller, records(27017, 27018, ttl=300.0))
    assert poller.interval == 300.0


def test_invalid_targets_are_left_out_never_an_error() -> None:
    poller = make_test1_poller()
    deadline = poller.next_deadline()
    assert deadline is not None
    question = poller.handle_timeout(deadline)
    assert question is not None
    answer = SrvAnswer(
        question=question,
        records=records(27017) + records(27019, target="localhost.evil.build.10gen.cc"),
    )
    result = poller.receive_answer(answer, deadline)
    assert result.hosts == (at(27017),) and result.removed == (at(27018),) and result.added == ()
    assert len(result.rejected) == 1 and "localhost.evil.build.10gen.cc" in result.rejected[0]


def test_only_invalid_targets_change_nothing() -> None:
    result = rescan(make_test1_poller(), records(27019, target="localhost.evil.cc"))
    assert not result.changed and result.failure == "no SRV target was valid"
    assert result.rejected


# -- prose test 9: no polling for load-balanced clients; topology types ------------------------


def test_prose_9_load_balanced_clients_never_poll() -> None:
    poller = SrvPoller("test3.test.build.10gen.cc", hosts=[at(27017)], now=0.0, load_balanced=True)
    assert poller.state is PollerState.STOPPED
    assert poller.next_deadline() is None
    assert poller.handle_timeout(2 * TTL) is None
    assert poller.hosts == (at(27017),)


@pytest.mark.parametrize(
    "kind",
    [
        TopologyType.SINGLE,
        TopologyType.REPLICA_SET_NO_PRIMARY,
        "ReplicaSetWithPrimary",
        TopologyType.LOAD_BALANCED,
    ],
)
def test_polling_stops_once_the_topology_is_not_sharded(kind: TopologyType | str) -> None:
    poller = make_test1_poller()
    poller.topology_type_changed(kind)
    assert poller.next_deadline() is None and poller.handle_timeout(10 * TTL) is None


@pytest.mark.parametrize("kind", [TopologyType.SHARDED, "Unknown"])
def test_polling_continues_while_sharded_or_unknown(kind: TopologyType | str) -> None:
    poller = make_test1_poller()
    poller.topology_type_changed(kind)
    assert poller.next_deadline() == TTL


def test_an_answer_in_flight_when_polling_stops_is_dropped() -> None:
    poller = make_test1_poller()
    question = poller.handle_timeout(TTL)
    assert question is not None
    poller.close()
    result = poller.receive_answer(SrvAnswer(question=question, records=records(27019)), TTL + 1)
    assert not result.changed and poller.hosts == (at(27017), at(27018))


def test_unknown_topology_type_names_are_local_errors() -> None:
    with pytest.raises(LocalProtocolError):
        make_test1_poller().topology_type_changed("Sharded-ish")


# -- prose tests 10-12: srvMaxHosts ------------------------------------------------------------


def test_prose_10_all_records_with_srv_max_hosts_zero() -> None:
    result = rescan(make_test1_poller(srv_max_hosts=0), records(27017, 27019, 27020))
    assert set(result.hosts) == {at(27017), at(27019), at(27020)}


def test_prose_11_all_records_when_srv_max_hosts_covers_them() -> None:
    poller = make_test1_poller(srv_max_hosts=2, randbelow=random.Random(0).randrange)
    result = rescan(poller, records(27019, 27020))
    assert set(result.hosts) == {at(27019), at(27020)}


@pytest.mark.parametrize("seed", range(10))
def test_prose_12_new_records_are_drawn_up_to_srv_max_hosts(seed: int) -> None:
    poller = make_test1_poller(srv_max_hosts=2, randbelow=random.Random(seed).randrange)
    result = rescan(poller, records(27017, 27019, 27020))
    assert len(result.hosts) == 2 and at(27017) in result.hosts
    assert result.removed == (at(27018),)
    assert len(result.added) == 1 and result.added[0] in {at(27019), at(27020)}


def test_prose_12_the_draw_uses_the_same_shuffle_as_initial_discovery() -> None:
    # randbelow always 0: shuffling [27019, 27020] swaps them, so 27020 comes first
    poller = make_test1_poller(srv_max_hosts=2, randbelow=lambda n: 0)
    result = rescan(poller, records(27017, 27019, 27020))
    assert result.added == (at(27020),)


def test_no_room_means_no_new_hosts() -> None:
    poller = make_test1_poller(srv_max_hosts=2, randbelow=lambda n: 0)
    result = rescan(poller, records(27017, 27018, 27019))
    assert not result.changed and result.hosts == (at(27017), at(27018))


def test_srv_max_hosts_needs_a_random_source() -> None:
    with pytest.raises(LocalProtocolError, match="randbelow"):
        make_test1_poller(srv_max_hosts=2)


# -- prose test 13: srvServiceName -------------------------------------------------------------


def test_prose_13_custom_service_name() -> None:
    poller = SrvPoller(
        "test22.test.build.10gen.cc",
        srv_service_name="customname",
        hosts=[at(27017)],
        now=0.0,
        min_ttl=TTL,
    )
    question = poller.handle_timeout(TTL)
    assert question == DnsQuestion(name="_customname._tcp.test22.test.build.10gen.cc", rdtype="SRV")
    result = poller.receive_answer(SrvAnswer(question=question, records=records(27019, 27020)), TTL)
    assert set(result.hosts) == {at(27019), at(27020)} and result.removed == (at(27017),)


# -- the topology's view and caller mistakes ---------------------------------------------------


def test_the_topologys_current_hosts_replace_the_pollers_view() -> None:
    poller = make_test1_poller()
    question = poller.handle_timeout(TTL)
    assert question is not None
    # SDAM dropped 27018 meanwhile (not a mongos); the rescan still returns it, so it is new
    answer = SrvAnswer(question=question, records=records(27017, 27018))
    result = poller.receive_answer(answer, TTL, current_hosts=[at(27017)])
    assert result.added == (at(27018),) and result.removed == ()


def test_an_answer_nobody_asked_for_is_a_local_error() -> None:
    poller = make_test1_poller()
    question = DnsQuestion(name=f"_mongodb._tcp.{HOST}", rdtype="SRV")
    with pytest.raises(LocalProtocolError, match="none was asked"):
        poller.receive_answer(SrvAnswer(question=question, records=records(27017)), 1.0)
    poller.handle_timeout(TTL)
    other = DnsQuestion(name=HOST, rdtype="TXT")
    with pytest.raises(LocalProtocolError):
        poller.receive_answer(TxtAnswer(question=other, records=()), TTL)


def test_bad_settings_are_configuration_errors() -> None:
    with pytest.raises(ConfigurationError, match="heartbeatFrequencyMS"):
        make_test1_poller(heartbeat_frequency=0)
    with pytest.raises(ConfigurationError, match="srvMaxHosts"):
        make_test1_poller(srv_max_hosts=-1)


# -- properties ------------------------------------------------------------------------------

PORTS = st.lists(st.integers(27000, 27010), max_size=8, unique=True)


@given(PORTS, PORTS, st.integers(0, 4), st.randoms(use_true_random=False))
def test_a_rescan_matches_the_records_within_the_limit(
    before: list[int], after: list[int], limit: int, rng: random.Random
) -> None:
    poller = make_test1_poller(
        hosts=[at(p) for p in before], srv_max_hosts=limit, randbelow=rng.randrange
    )
    result = rescan(poller, records(*after))
    if not after:  # nothing verified: unchanged
        assert result.hosts == tuple(at(p) for p in before) and not result.changed
        return
    hosts = set(result.hosts)
    assert hosts <= {at(p) for p in after}  # nothing stale survives
    assert {at(p) for p in before if p in after} <= hosts  # unchanged hosts stay
    assert set(result.removed) == {at(p) for p in before if p not in after}
    assert set(result.added) == hosts - {at(p) for p in before}
    if limit == 0 or limit >= len(after):
        assert hosts == {at(p) for p in after}
    else:
        assert len(hosts) == max(limit, len([p for p in before if p in after]))
