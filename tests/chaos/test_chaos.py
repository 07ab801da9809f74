"""The deterministic simulation (mongo_sansio.adapters.chaos, docs/chaos.md): replayable,
green on the real client, and with teeth -- each injected bug of tests/chaos/mutants.py is
found by a bounded sweep, shrunk, and reproduced from its shrunk schedule.

Bounded: short worlds (``steps=6`` or ``8``), 30 seeds per workload in the CI sweep (270 in
all) and a few more per test; the long sweeps are the command's (``mongo-sansio chaos --seeds
0..999``, docs/chaos.md).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from mongo_sansio.adapters.chaos import KINDS, WORKLOADS, Fault, run_world, shrink
from mongo_sansio.adapters.cli import main
from mongo_sansio.client.execute import _pinned
from mongo_sansio.cmap.errors import WaitQueueTimeoutError
from mongo_sansio.errors import AutoReconnect, NetworkError, NetworkTimeout, OperationFailure
from mongo_sansio.flow import SelectServer
from mongo_sansio.ops.transactions import abandon_commit, abort_transaction
from mongo_sansio.selection import ServerSelectionTimeoutError
from mongo_sansio.sessions import Session, TransactionOptions
from mongo_sansio.sessions.server_session import ServerSession

from .mutants import MUTANTS

STEPS = 8
SHORT = 4  # the mixed world's steps where only the command or the replay is checked
LINE = re.compile(r"^seed (\d+): ok, trace [0-9a-f]{16}$")


def test_the_same_seed_gives_the_same_trace() -> None:
    first = [run_world(seed, steps=SHORT) for seed in range(3)]
    again = [run_world(seed, steps=SHORT) for seed in range(3)]
    assert [o.trace for o in first] == [o.trace for o in again]
    assert len({o.trace for o in first}) == 3  # and another seed, another world
    assert all(o.ok for o in first), [o.line() for o in first]


def test_the_trace_does_not_depend_on_the_process() -> None:
    """Another interpreter with another string hash seed prints the same line."""
    env = dict(os.environ, PYTHONHASHSEED="4321")
    command = [sys.executable, "-m", "mongo_sansio.adapters.cli", "chaos", "--seed", "4", "--steps", str(SHORT)]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == run_world(4, steps=SHORT).line()


#: the CI sweep: this many seeds of each workload, and of the sharded world's mixed one (270 in
#: all, about 27 s of CPU), in shorter worlds
CI_SEEDS = range(200, 230)


@pytest.mark.parametrize(("workload", "deployment"), [
    *((workload, "replica-set") for workload in sorted(WORKLOADS)), ("mixed", "sharded"),
])
def test_the_ci_sweep_of_a_few_hundred_seeds_passes(workload: str, deployment: str) -> None:
    outcomes = [run_world(seed, steps=6, workload=workload, deployment=deployment) for seed in CI_SEEDS]
    assert [o.line() for o in outcomes if not o.ok] == []


@pytest.mark.parametrize("workload", sorted(WORKLOADS))
def test_a_sweep_of_each_workload_passes(workload: str) -> None:
    outcomes = [run_world(seed, steps=STEPS, workload=workload) for seed in range(100, 105)]
    assert [o.line() for o in outcomes if not o.ok] == []
    assert all(o.virtual_seconds > 5 for o in outcomes)  # the workload spans the faults


@pytest.mark.parametrize("workload", sorted(WORKLOADS))
def test_each_workload_runs_on_the_sharded_world(workload: str) -> None:
    """Two mongos over two shards (--world sharded): the same workloads and invariants."""
    outcomes = [run_world(seed, steps=STEPS, workload=workload, deployment="sharded") for seed in (200,)]
    assert [o.line() for o in outcomes if not o.ok] == []
    assert all(o.virtual_seconds > 5 for o in outcomes)


def test_the_command_runs_a_sharded_world(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["chaos", "--seed", "3", "--steps", "4", "--workload", "transactions", "--world", "sharded"]
    assert main(argv) == 0
    line = capsys.readouterr().out.strip()
    assert LINE.match(line)
    assert line == run_world(3, steps=4, workload="transactions", deployment="sharded").line()
    assert line != run_world(3, steps=4, workload="transactions").line()  # another world


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_a_mutant_is_found_shrunk_and_reproduced(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    mutant, workload, kinds, seeds, deployment = MUTANTS[name]
    mutant(monkeypatch)
    chosen = KINDS if kinds == "all" else ()
    broken = None
    for seed in seeds:
        outcome = run_world(seed, workload=workload, kinds=chosen, deployment=deployment)
        if not outcome.ok:
            broken = outcome
            break
    assert broken is not None, f"{name} survived seeds {seeds} of {workload}"
    shrunk = shrink(broken, workload=workload, deployment=deployment)
    assert not shrunk.ok
    assert set(shrunk.schedule) <= set(broken.schedule)
    for index in range(len(shrunk.schedule)):  # minimal: no single fault can go
        fewer = shrunk.schedule[:index] + shrunk.schedule[index + 1 :]
        assert run_world(broken.seed, workload=workload, schedule=fewer, deployment=deployment).ok
    replay = run_world(broken.seed, workload=workload, schedule=shrunk.schedule, deployment=deployment)
    assert replay.line() == shrunk.line()


def test_the_command_prints_one_line_per_seed(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["chaos", "--seed", "2", "--steps", str(SHORT)]) == 0
    assert LINE.match(capsys.readouterr().out.strip())
    assert main(["chaos", "--seeds", "5..6", "--steps", "4", "--workload", "cursors", "--faults", "cut,stall"]) == 0
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert [LINE.match(line).group(1) for line in lines] == ["5", "6"]  # type: ignore[union-attr]
    assert "2 seeds: 2 ok, 0 broken" in captured.err and "seeds/s" in captured.err


def test_the_command_reports_the_shrunk_schedule(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    MUTANTS["new_txn_number_per_retry"][0](monkeypatch)
    assert main(["chaos", "--seeds", "16..18", "--workload", "retryable-writes"]) == 1
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert LINE.match(lines[0]) and LINE.match(lines[1])
    pattern = (r"^seed 18: BROKEN retried update \S+ was applied 2 times; shortest fault schedule \(1 of \d+\): "
               r"failpoint write-then-close ")
    assert re.match(pattern, lines[2]), lines[2]
    assert "3 seeds: 2 ok, 1 broken" in captured.err


def test_the_command_reproduces_an_unpinned_transaction_in_the_sharded_world(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    MUTANTS["unpinned_transaction"][0](monkeypatch)
    argv = ["chaos", "--seed", "0", "--workload", "transactions", "--faults", "none", "--world", "sharded"]
    assert main(argv) == 1
    line = capsys.readouterr().out.strip()
    pattern = (r"^seed 0: BROKEN transaction \('[0-9a-f]+', \d+\)'s update went to m\d.sim:27017, not to "
               r"m\d.sim:27017 where it began; shortest fault schedule \(0 of 0\): none$")
    assert re.match(pattern, line), line


@pytest.mark.parametrize("argv", [["--seed", "1", "--seeds", "1..2"], ["--seeds", "3..1"], ["--seed", "1", "--faults", "flood"], ["--seed", "1", "--workload", "nope"], ["--seed", "1", "--world", "moon"]])
def test_bad_arguments_are_refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["chaos", *argv])
    assert exit_.value.code == 2


def test_fault_kinds_are_a_set(capsys: pytest.CaptureFixture[str]) -> None:
    """Order and other names do not change the world: elections are stepdowns, delays stalls."""
    lines = []
    for faults in ("partition,stall,stepdown", "stepdown,partition,stall", "elections,delay,partition"):
        assert main(["chaos", "--seed", "3", "--steps", "4", "--workload", "transactions", "--faults", faults]) == 0
        lines.append(capsys.readouterr().out)
    assert lines[0] == lines[1] == lines[2]


def test_no_faults_and_a_given_schedule() -> None:
    assert run_world(7, steps=4, kinds=()).schedule == ()
    schedule = (Fault(1.0, "stepdown"), Fault(2.0, "crash", "n1.sim:27017", 1.5))
    outcome = run_world(7, steps=4, schedule=schedule)
    assert outcome.ok and outcome.schedule == schedule


# --- what the sweeps found ---------------------------------------------------------------------


def test_seed_16_with_transaction_giving_up_leaves_no_transaction_open() -> None:
    """Found at seed 38 (a partition of the primary, maxPoolSize=1, timeoutMS=3000; seed 16 of
    the mixed workload breaks the same way with today's worlds): the commit waited for a
    connection until timeoutMS and with_transaction gave up without a word to the server,
    leaving the transaction open there with its locks until the session's next transaction
    aborted it.  Now the give-up aborts it in the background (abandon_commit)."""
    outcome = run_world(16)
    assert outcome.ok, outcome.line()


@pytest.mark.parametrize(
    ("error", "aborted_later"),
    [
        (ServerSelectionTimeoutError("no primary"), True),
        (WaitQueueTimeoutError("no connection in time"), True),
        (OperationFailure("NoSuchTransaction", 251), False),
        (NetworkError("connection reset"), False),
    ],
)
def test_an_abort_that_could_not_be_sent_is_sent_again_in_the_background(
    error: Exception, aborted_later: bool
) -> None:
    """Found at seed 258 (a stepdown, a stall, timeoutMS=3000, a small pool): the callback's
    statement and then with_transaction's abort both timed out waiting for a connection; the
    abort's error was swallowed and the transaction stayed open on the server until its
    lifetime limit.  An abort that was never sent (no server, no connection in time) is now a
    cut abort, which the operation driver sends again in the background; one the server
    answered, or that was sent and lost (retried already), is not."""
    session = Session(object(), implicit=False)
    session.server_session = ServerSession({"id": b"lsid"}, 0.0)
    session.start_transaction(TransactionOptions())
    session.operation_sent()
    flow = abort_transaction(session)
    next(flow)  # the abort asks for its server
    with pytest.raises(StopIteration):
        flow.throw(error)
    assert session.cut_abort_due is aborted_later


def test_abandon_commit_marks_the_transaction_for_a_background_abort() -> None:
    class Session:
        def __init__(self) -> None:
            self.cut = 0

        def end_cut(self) -> bool:
            self.cut += 1
            return True

    unanswered, answered = Session(), Session()
    for session, error in ((unanswered, NetworkTimeout("timed out")), (answered, OperationFailure("no", 251))):
        flow = abandon_commit(session, error)  # type: ignore[arg-type]
        with pytest.raises(StopIteration):
            next(flow)
    assert (unanswered.cut, answered.cut) == (1, 0)



def test_seed_48_of_the_sharded_world_keeps_a_transaction_on_its_mongos() -> None:
    """Found at seed 48 of the sharded world (a partition of m1 ending as a transaction began
    there): a network error marked m1 Unknown between the transaction's first statement and
    its second, and the second went to m0, which does not know the transaction (the pinning
    invariant).  Now a statement whose mongos is not known fails with a transient error and
    the transaction is retried from the start (execute._pinned)."""
    outcome = run_world(48, deployment="sharded")
    assert outcome.ok, outcome.line()


class _Info:
    def __init__(self, is_mongos: bool) -> None:
        self.is_mongos = is_mongos


class _Core:
    def __init__(self, known: bool) -> None:
        self.known = known

    def sdam_address(self, address: tuple[str, int]) -> tuple[str, int]:
        return address

    def server_info(self, address: tuple[str, int]) -> _Info:
        return _Info(is_mongos=self.known)


class _Operation:
    def __init__(self, session: Session) -> None:
        self.explicit = session


@pytest.mark.parametrize("known", [True, False])
def test_a_statement_goes_only_to_its_pinned_mongos(known: bool) -> None:
    session = Session(object(), implicit=False)
    session.server_session = ServerSession({"id": b"lsid"}, 0.0)
    session.start_transaction(TransactionOptions())
    session.pinned_address = ("m1.sim", 27017)
    operation, core = _Operation(session), _Core(known)
    statement, commit = SelectServer(operation="update"), SelectServer(operation="commitTransaction")
    if known:
        assert _pinned(core, operation, statement).is_mongos  # type: ignore[arg-type, union-attr]
        return
    assert _pinned(core, operation, commit) is None  # type: ignore[arg-type]  # (any mongos: recovery token)
    with pytest.raises(AutoReconnect):
        _pinned(core, operation, statement)  # type: ignore[arg-type]
    assert session.pinned_address is None  # (unpinned: the transaction is retried from the start)


def test_seed_416_a_cancelled_command_answered_later_leaves_its_session_clean() -> None:
    """Seed 416 (a transaction cancelled while its statement waited for the answer, which
    still came and was read): the session went back to the pool and to the next transaction
    while that statement and the background abort were in flight.  Not a cut: every command of
    the session was answered.  The invariant counts a command as cut only when it failed with a
    network error, or when it is still unanswered at quiescence."""
    outcome = run_world(416)
    assert outcome.ok, outcome.line()
