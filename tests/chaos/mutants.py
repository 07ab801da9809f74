"""Deliberately injected bugs: each a plausible mistake in the client, applied by
monkeypatching the real code, that a sweep of the simulation must find.

Each mutant is a function taking pytest's ``monkeypatch``; ``MUTANTS`` maps its name to it,
the workload, fault kinds and world (``--world``) that exercise it, and how many seeds the sweep
may take.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import mongo_sansio.adapters._engine_base as engine_base
import mongo_sansio.client.execute as execute
import mongo_sansio.sessions.commands as session_commands
from mongo_sansio.client.core import ClientCore
from mongo_sansio.client.sessions import ClientSessions
from mongo_sansio.cursors.change_stream import ChangeStream
from mongo_sansio.pipeline.offsets import TokenRange, Verdict
from mongo_sansio.sessions.server_session import ServerSessionPool


def new_txn_number_per_retry(monkeypatch: pytest.MonkeyPatch) -> None:
    """A retried write draws a new txnNumber (the server applies it twice)."""
    prepare = ClientSessions.prepare

    def mutant(self: Any, request: Any, session: Any, body: Any, now: float) -> Any:
        if request.txn is not None:
            request.txn.number = None
        return prepare(self, request, session, body, now)

    monkeypatch.setattr(ClientSessions, "prepare", mutant)


def broken_link_not_checked_in(monkeypatch: pytest.MonkeyPatch) -> None:
    """A connection cut mid-operation (cancelled, timed out, network error) is closed but
    never given back to its pool: the pool's slot leaks."""
    check_in = ClientCore.check_in

    def mutant(self: Any, link: Any) -> None:
        if link.broken:
            link.close()
            return
        check_in(self, link)

    monkeypatch.setattr(ClientCore, "check_in", mutant)


def ignored_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    """An operation ignores its timeoutMS (the deadline is never computed)."""
    monkeypatch.setattr(engine_base, "operation_deadline", lambda *args, **kwargs: None)


def resume_from_previous_token(monkeypatch: pytest.MonkeyPatch) -> None:
    """A change stream resumes from the token before the last event it returned."""
    next_event = ChangeStream.next_event

    def mutant(self: Any) -> Any:
        before = self._resume_token
        event = next_event(self)
        if event is not None and before is not None:
            self._resume_token = before
        return event

    monkeypatch.setattr(ChangeStream, "next_event", mutant)


def no_abort_after_cut_commit(monkeypatch: pytest.MonkeyPatch) -> None:
    """A commit or abort cut before its answer leaves the transaction to the server (the
    issue's defect 3 back)."""
    monkeypatch.setattr(execute, "take_cut_abort", lambda session: None)


def dirty_session_put_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """A server session whose connection had a network error goes back to the pool (and to
    the next operation) instead of being discarded."""
    release = ServerSessionPool.release

    def mutant(self: Any, session: Any, now: float, timeout_minutes: int | None) -> None:
        session.dirty = False
        release(self, session, now, timeout_minutes)

    monkeypatch.setattr(ServerSessionPool, "release", mutant)


def causal_read_without_after_cluster_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """A causally consistent session's reads do not carry its operationTime as
    ``afterClusterTime`` (a secondary may answer from before the session's own write)."""
    monkeypatch.setattr(session_commands, "_after_cluster_time", lambda out, session: None)


def batch_drops_its_end_event(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Spark source's batch reader stops before its end event instead of keeping it (the
    next batch starts after it: the event is never delivered)."""
    verdict = TokenRange.verdict

    def mutant(self: Any, token: str) -> Verdict:
        return Verdict.STOP if token == self.end else verdict(self, token)

    monkeypatch.setattr(TokenRange, "verdict", mutant)


def unpinned_transaction(monkeypatch: pytest.MonkeyPatch) -> None:
    """A sharded transaction is not kept on its mongos: each statement selects a mongos
    afresh (the other one does not know the transaction)."""
    monkeypatch.setattr(execute, "_pinned", lambda core, operation, request: None)


#: name -> (mutant, workload, fault kinds, the seeds the bounded sweep tries).  From seed 0 the
#: sweep finds the first five at seeds 2, 0, 27, 2 and 74 (in the mixed world of all seven
#: workloads); the tests start the two slow ones a few seeds before, to stay quick.
Mutant = Callable[[pytest.MonkeyPatch], None]
MUTANTS: dict[str, tuple[Mutant, str, str, range, str]] = {
    "new_txn_number_per_retry": (new_txn_number_per_retry, "retryable-writes", "all", range(0, 20), "replica-set"),
    "broken_link_not_checked_in": (broken_link_not_checked_in, "cancellation", "none", range(0, 20), "replica-set"),
    "ignored_deadline": (ignored_deadline, "retryable-writes", "all", range(20, 40), "replica-set"),
    "resume_from_previous_token": (resume_from_previous_token, "change-streams", "all", range(0, 20), "replica-set"),
    "no_abort_after_cut_commit": (no_abort_after_cut_commit, "mixed", "none", range(72, 92), "replica-set"),
    "batch_drops_its_end_event": (batch_drops_its_end_event, "spark-offsets", "none", range(0, 10), "replica-set"),
    "dirty_session_put_back": (dirty_session_put_back, "retryable-writes", "all", range(0, 20), "replica-set"),
    "causal_read_without_after_cluster_time": (
        causal_read_without_after_cluster_time, "causal-reads", "all", range(0, 20), "replica-set"
    ),
    "unpinned_transaction": (unpinned_transaction, "transactions", "none", range(0, 10), "sharded"),
}
