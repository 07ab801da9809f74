"""The server session pool (Driver Sessions spec, "Server Session Pool"): LIFO reuse, sessions
about to expire (less than a minute of logicalSessionTimeoutMinutes left) and dirty ones never
handed out again, endSessions batches of at most 10,000 lsids; and the same rules through the
client's :class:`ClientSessions` (binding, release, drain).  Properties check the pool's
invariants under random acquire / release / time steps."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mongo_sansio.bson import Binary
from mongo_sansio.client.sessions import ClientSessions
from mongo_sansio.errors import NetworkError
from mongo_sansio.sessions import ServerSessionPool, Session
from mongo_sansio.sessions.server_session import END_SESSIONS_BATCH, ServerSession, new_session_id

TIMEOUT = 30  # logicalSessionTimeoutMinutes
MINUTE = 60.0


def counter_random() -> Any:
    """16 distinct bytes per call (a deterministic stand-in for os.urandom)."""
    numbers = itertools.count(1)
    return lambda: next(numbers).to_bytes(16, "big")


def new_pool() -> ServerSessionPool:
    return ServerSessionPool(counter_random())


# -- lsid ----------------------------------------------------------------------------------------


def test_session_id_is_a_version_4_uuid_binary() -> None:
    lsid = new_session_id(bytes(range(16)))
    assert list(lsid) == ["id"]
    value = lsid["id"]
    assert isinstance(value, Binary) and value.subtype == 4 and len(value) == 16
    assert value[6] >> 4 == 4  # version 4
    assert value[8] >> 6 == 0b10  # RFC 4122 variant
    # the other bytes are the random ones
    assert bytes(value)[:6] == bytes(range(6)) and bytes(value)[9:] == bytes(range(9, 16))


def test_session_id_needs_sixteen_bytes() -> None:
    with pytest.raises(ValueError):
        new_session_id(b"short")


def test_new_sessions_have_distinct_ids_and_start_at_txn_number_zero() -> None:
    pool = new_pool()
    first, second = pool.acquire(0.0, TIMEOUT), pool.acquire(0.0, TIMEOUT)
    assert first.session_id != second.session_id
    assert (first.txn_number, second.txn_number) == (0, 0)
    assert first.advance_txn_number() == 1 and first.advance_txn_number() == 2


# -- LIFO --------------------------------------------------------------------------------------


def test_the_session_released_last_is_acquired_first() -> None:
    pool = new_pool()
    a, b, c = (pool.acquire(0.0, TIMEOUT) for _ in range(3))
    for session in (a, b, c):
        pool.release(session, 1.0, TIMEOUT)
    assert list(pool) == [c, b, a]
    assert pool.acquire(2.0, TIMEOUT) is c
    assert pool.acquire(2.0, TIMEOUT) is b
    pool.release(c, 3.0, TIMEOUT)
    assert pool.acquire(3.0, TIMEOUT) is c
    assert pool.acquire(3.0, TIMEOUT) is a
    assert len(pool) == 0
    fresh = pool.acquire(3.0, TIMEOUT)
    assert fresh not in (a, b, c)


def test_txn_number_survives_reuse() -> None:
    """A pooled session keeps its transaction number: the server remembers the highest."""
    pool = new_pool()
    session = pool.acquire(0.0, TIMEOUT)
    session.advance_txn_number()
    session.advance_txn_number()
    pool.release(session, 1.0, TIMEOUT)
    again = pool.acquire(2.0, TIMEOUT)
    assert again is session and again.advance_txn_number() == 3


# -- staleness ------------------------------------------------------------------------------


def test_a_session_with_less_than_a_minute_left_is_not_handed_out() -> None:
    pool = new_pool()
    session = pool.acquire(0.0, TIMEOUT)
    pool.release(session, 0.0, TIMEOUT)
    # 29 minutes later exactly one minute is left: still usable
    assert pool.acquire(TIMEOUT * MINUTE - MINUTE, TIMEOUT) is session
    session.last_use = 100.0
    pool.release(session, 100.0, TIMEOUT)
    # a moment later than 29 minutes after its last use: discarded, a new one made
    later = 100.0 + TIMEOUT * MINUTE - MINUTE + 0.001
    fresh = pool.acquire(later, TIMEOUT)
    assert fresh is not session and len(pool) == 0


def test_acquire_skips_every_stale_session_it_meets() -> None:
    pool = new_pool()
    old, newer = pool.acquire(0.0, TIMEOUT), pool.acquire(0.0, TIMEOUT)
    pool.release(old, 0.0, TIMEOUT)
    newer.last_use = 600.0
    pool.release(newer, 600.0, TIMEOUT)
    # 29 min + 1 s after the start only old has less than a minute left
    now = TIMEOUT * MINUTE - MINUTE + 1.0
    assert pool.acquire(now, TIMEOUT) is newer
    assert len(pool) == 1  # old is still there (at the old end) until someone meets it
    assert pool.acquire(now, TIMEOUT) is not old
    assert len(pool) == 0


def test_release_prunes_stale_sessions_at_the_old_end() -> None:
    pool = new_pool()
    a, b, c = (pool.acquire(0.0, TIMEOUT) for _ in range(3))
    b.last_use, c.last_use = 10.0, TIMEOUT * MINUTE
    pool.release(a, 0.0, TIMEOUT)
    pool.release(b, 10.0, TIMEOUT)
    pool.release(c, TIMEOUT * MINUTE - MINUTE + 5.0, TIMEOUT)  # a is now stale, b not yet
    assert list(pool) == [c, b]


def test_a_session_last_used_long_ago_is_dropped_on_release() -> None:
    """The clock that matters is the server's: it counts from the last command sent with the
    session, not from the moment the client gives the session back."""
    pool = new_pool()
    session = pool.acquire(0.0, TIMEOUT)
    session.last_use = 10.0  # its last command
    pool.release(session, 10.0 + TIMEOUT * MINUTE - 30.0, TIMEOUT)  # 30 s left on the server
    assert len(pool) == 0
    recent = pool.acquire(0.0, TIMEOUT)
    recent.last_use = 100.0
    pool.release(recent, 200.0, TIMEOUT)
    assert list(pool) == [recent] and recent.last_use == 100.0


def test_without_a_session_timeout_sessions_never_go_stale() -> None:
    pool = new_pool()
    session = pool.acquire(0.0, None)
    pool.release(session, 0.0, None)
    assert pool.acquire(10.0**9, None) is session


def test_a_dirty_session_is_never_pooled() -> None:
    pool = new_pool()
    clean, dirty = pool.acquire(0.0, TIMEOUT), pool.acquire(0.0, TIMEOUT)
    dirty.dirty = True
    pool.release(clean, 1.0, TIMEOUT)
    pool.release(dirty, 1.0, TIMEOUT)
    assert list(pool) == [clean]


# -- endSessions --------------------------------------------------------------------------------


def test_drain_gives_every_lsid_in_batches_of_ten_thousand() -> None:
    pool = new_pool()
    sessions = [pool.acquire(0.0, TIMEOUT) for _ in range(2 * END_SESSIONS_BATCH + 5)]
    for session in sessions:
        pool.release(session, 1.0, TIMEOUT)
    batches = pool.drain()
    assert END_SESSIONS_BATCH == 10_000
    assert [len(batch) for batch in batches] == [10_000, 10_000, 5]
    sent = [lsid["id"] for batch in batches for lsid in batch]
    assert sorted(sent) == sorted(session.session_id["id"] for session in sessions)
    assert len(pool) == 0 and pool.drain() == []


def test_drain_of_an_empty_pool_sends_nothing() -> None:
    assert new_pool().drain() == []


# -- through the client's ClientSessions ----------------------------------------------------


def client_sessions(timeout: int | None = TIMEOUT) -> ClientSessions:
    return ClientSessions(counter_random(), lambda: timeout)


def test_implicit_sessions_of_sequential_operations_share_one_server_session() -> None:
    sessions = client_sessions()
    owner = object()
    first = Session(owner, implicit=True)
    sessions.bind(first, 0.0)
    sessions.finish(first, 1.0)
    second = Session(owner, implicit=True)
    sessions.bind(second, 2.0)
    assert second.session_id == first.session_id


def test_finish_keeps_an_implicit_session_a_cursor_holds() -> None:
    sessions = client_sessions()
    session = Session(object(), implicit=True)
    sessions.bind(session, 0.0)
    session.cursor_holds = 1
    sessions.finish(session, 1.0)
    assert not session.ended and len(sessions.pool) == 0
    session.cursor_holds = 0
    sessions.finish(session, 2.0)
    assert session.ended and len(sessions.pool) == 1
    sessions.finish(session, 3.0)  # a second finish changes nothing
    assert len(sessions.pool) == 1


def test_finish_leaves_explicit_sessions_to_end_session() -> None:
    sessions = client_sessions()
    session = Session(object(), implicit=False)
    sessions.bind(session, 0.0)
    sessions.finish(session, 1.0)
    assert not session.ended and len(sessions.pool) == 0
    sessions.end(session, 2.0)
    sessions.end(session, 3.0)  # idempotent: pooled once
    assert session.ended and list(sessions.pool) == [session.server_session]


def test_a_network_error_makes_the_server_session_dirty() -> None:
    sessions = client_sessions()
    session = Session(object(), implicit=True)
    sessions.bind(session, 0.0)
    sessions.failed(session, {"find": "c"}, NetworkError("reset"))
    sessions.finish(session, 1.0)
    assert session.server_session is not None and session.server_session.dirty
    assert len(sessions.pool) == 0
    assert sessions.drain() == []


def test_a_session_never_bound_returns_nothing_to_the_pool() -> None:
    sessions = client_sessions()
    session = Session(object(), implicit=True)
    sessions.finish(session, 1.0)
    assert session.ended and len(sessions.pool) == 0


def test_supported_follows_the_session_timeout() -> None:
    assert client_sessions(TIMEOUT).supported
    assert not client_sessions(None).supported


# -- properties -------------------------------------------------------------------------------

steps = st.lists(
    st.one_of(
        st.tuples(st.just("acquire"), st.just(0)),
        st.tuples(st.just("release"), st.integers(0, 20)),
        st.tuples(st.just("release_dirty"), st.integers(0, 20)),
        st.tuples(st.just("use"), st.integers(0, 20)),
        st.tuples(st.just("wait"), st.integers(0, 40 * 60)),
    ),
    max_size=60,
)


@given(steps=steps, timeout=st.sampled_from([None, 1, 2, 30]))
def test_pool_invariants_under_random_use(
    steps: list[tuple[str, int]], timeout: int | None
) -> None:
    """Whatever the order of acquire, release and the passing of time:

    * acquire returns the most recently released session that is still fresh, else a new one;
    * a session is never both out and pooled, never pooled twice, never pooled dirty;
    * acquire never hands out a stale session."""
    pool = new_pool()
    now = 0.0
    out: list[ServerSession] = []
    for action, value in steps:
        if action == "acquire":
            expected = next(
                (s for s in pool if not s.timed_out(now, timeout)),
                None,
            )
            session = pool.acquire(now, timeout)
            if expected is not None:
                assert session is expected
            else:
                assert session.txn_number == 0 and session.last_use == now
            assert not session.timed_out(now, timeout)
            out.append(session)
        elif action in ("release", "release_dirty") and out:
            session = out.pop(value % len(out))
            session.dirty = action == "release_dirty"
            pool.release(session, now, timeout)
            if not session.dirty and not session.timed_out(now, timeout):
                assert next(iter(pool)) is session
        elif action == "use" and out:
            out[value % len(out)].last_use = now  # a command sent with it
        elif action == "wait":
            now += value
        pooled = list(pool)
        assert len({id(s) for s in pooled}) == len(pooled)
        assert not any(s.dirty for s in pooled)
        assert not {id(s) for s in pooled} & {id(s) for s in out}
    ids = [lsid["id"] for batch in pool.drain() for lsid in batch]
    assert len(ids) == len(set(ids))
