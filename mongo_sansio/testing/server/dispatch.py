"""The command pipeline: one decoded request in, one outcome out.

Inputs: a :class:`~.context.Context` for a request.  Outputs: a reply document carrying
``$clusterTime`` and ``operationTime``, a :class:`~.context.Waiting`, a
:class:`~.context.Close`, or ``NO_REPLY`` (the client set moreToCome).

The steps, in mongod's order: find the command (CommandNotFound 59); authentication
(Unauthorized 13); the failCommand failpoint (block, close, error, writeConcernError);
the member's role (NotWritablePrimary 10107 for writes on a secondary,
NotPrimaryNoSecondaryOk 13435 for reads without secondaryOk); the transaction the command
runs in (:mod:`.transactions`: started, continued, or refused); a retried write answered from
the session's record; the handler, or :mod:`.views` for a command on a view (a statement
that fails aborts its transaction; a write that meets a document an open transaction holds
waits for it); the reply recorded for retries; the onPrimaryTransactionalWrite failpoint
(after the write, or with failBeforeCommitExceptionCode before the handler, so that nothing is
applied or recorded).  A handler's CommandError becomes an ``ok: 0`` reply; a
bug in a handler (any other exception) becomes InternalError (1) rather than escaping.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from mongo_sansio.bson import Binary, Int64
from mongo_sansio.sdam.errors import NOT_WRITABLE_PRIMARY_CODES, RECOVERING_CODES, SHUTDOWN_CODES
from mongo_sansio.testing.engine import CommandError
from mongo_sansio.testing.engine.where import js_clock
from mongo_sansio.testing.server import views
from mongo_sansio.testing.server.api_version import (
    API_TEST_COMMANDS,
    check_pipeline,
    parse_api_parameters,
)
from mongo_sansio.testing.server.changestreams import RESUMABLE_CODES, is_change_stream_cursor
from mongo_sansio.testing.server.coll_mod import COLL_MOD_COMMANDS
from mongo_sansio.testing.server.commands_admin import ADMIN_COMMANDS
from mongo_sansio.testing.server.commands_bulk import BULK_COMMANDS, failed_first_op
from mongo_sansio.testing.server.commands_crud import CRUD_COMMANDS
from mongo_sansio.testing.server.commands_explain import EXPLAIN_COMMANDS
from mongo_sansio.testing.server.commands_hello import HELLO_COMMANDS
from mongo_sansio.testing.server.commands_search import SEARCH_COMMANDS
from mongo_sansio.testing.server.commands_txn import TRANSACTION_COMMANDS
from mongo_sansio.testing.server.context import (
    NO_REPLY,
    Close,
    CommandSpec,
    Context,
    Outcome,
    Waiting,
)
from mongo_sansio.testing.server.db_stats import DB_STATS_COMMANDS
from mongo_sansio.testing.server.failpoints import FailAction, Target
from mongo_sansio.testing.server.handshake import topology_version
from mongo_sansio.testing.server.read_concern import hold_read, read_view
from mongo_sansio.testing.server.replset import PRIMARY
from mongo_sansio.testing.server.sessions import first_statement
from mongo_sansio.testing.server.transactions import (
    ABORT,
    COMMIT,
    WriteBlocked,
    enter,
    snapshot_read,
    stamp_snapshot,
    transaction_labels,
    wait_for_transaction,
)
from mongo_sansio.testing.server.write_concern import wait_for_write_concern

__all__ = [
    "CODE_NAMES", "COMMANDS", "HELLO_NAMES", "RETRYABLE_CODES", "error_reply", "execute", "failpoint_target",
    "preload_client_metadata",
]

HELLO_NAMES = ("hello", "isMaster", "ismaster")

COMMANDS: dict[str, CommandSpec] = {
    spec.name: spec
    for spec in (*HELLO_COMMANDS, *CRUD_COMMANDS, *BULK_COMMANDS, *ADMIN_COMMANDS, *DB_STATS_COMMANDS, *COLL_MOD_COMMANDS,
                 *TRANSACTION_COMMANDS, *EXPLAIN_COMMANDS, *SEARCH_COMMANDS, *API_TEST_COMMANDS)
}

RETRYABLE_CODES = frozenset({6, 7, 89, 91, 189, 262, 9001, 10107, 11600, 11602, 13435, 13436})
# mongod's NotPrimaryError category: a replica set member puts its current topologyVersion on
# these replies (injected by failCommand or not), so a driver can tell a stale error (same or
# older version: ignore it, the server has not changed) from news (mark the server Unknown and
# check it at once).  Its ShutdownError category (91, 11600) carries one only in the quiesce
# period of a real shutdown, which is when the version moves; the simulator's members stop
# without one, so a shutdown error (a failpoint's) carries none unless errorExtraInfo adds it.
STATE_CHANGE_CODES = (RECOVERING_CODES | NOT_WRITABLE_PRIMARY_CODES) - SHUTDOWN_CODES

CODE_NAMES = {
    1: "InternalError", 2: "BadValue", 6: "HostUnreachable", 7: "HostNotFound", 8: "UnknownError",
    9: "FailedToParse", 11: "UserNotFound", 13: "Unauthorized", 14: "TypeMismatch",
    18: "AuthenticationFailed", 20: "IllegalOperation", 24: "LockTimeout", 26: "NamespaceNotFound",
    43: "CursorNotFound", 48: "NamespaceExists", 50: "MaxTimeMSExpired", 59: "CommandNotFound",
    64: "WriteConcernFailed", 79: "UnknownReplWriteConcern", 89: "NetworkTimeout",
    91: "ShutdownInProgress", 96: "OperationFailed", 100: "UnsatisfiableWriteConcern",
    112: "WriteConflict", 133: "FailedToSatisfyReadPreference", 134: "ReadConcernMajorityNotAvailableYet",
    136: "CappedPositionLost", 175: "QueryPlanKilled", 189: "PrimarySteppedDown", 211: "KeyNotFound",
    117: "ConflictingOperationInProgress", 225: "TransactionTooOld", 239: "SnapshotTooOld",
    246: "SnapshotUnavailable", 256: "TransactionCommitted", 263: "OperationNotSupportedInTransaction",
    267: "PreparedTransactionInProgress", 234: "RetryChangeStream", 237: "CursorKilled", 251: "NoSuchTransaction",
    262: "ExceededTimeLimit", 280: "ChangeStreamFatalError", 286: "ChangeStreamHistoryLost", 391: "ReauthenticationRequired",
    9001: "SocketException", 10107: "NotWritablePrimary", 11000: "DuplicateKey",
    11600: "InterruptedAtShutdown", 11601: "Interrupted", 11602: "InterruptedDueToReplStateChange",
    322: "APIVersionError", 323: "APIStrictError", 324: "APIDeprecationError", 325: "APIMismatchError",
    13435: "NotPrimaryNoSecondaryOk", 13436: "NotPrimaryOrSecondary", 50915: "BackupCursorOpenConflictWithCheckpoint",
}

# Commands that must answer even without a primary or authentication (checked first).
_READ_REQUIRES_OK = "read"
_WRITE = "write"


# mongod's NonResumableChangeStreamError category: ChangeStreamFatalError, ChangeStreamHistoryLost.
NON_RESUMABLE_CODES = frozenset({280, 286})


def code_name(code: int) -> str:
    return CODE_NAMES.get(code, f"Location{code}")


def error_reply(error: CommandError) -> dict[str, Any]:
    return error.to_document()


def cluster_fields(ctx: Context) -> dict[str, Any]:
    """``$clusterTime`` (the logical clock) and ``operationTime``: on a member that has not
    applied the newest entries, the position it read at (a causal session then waits for that
    much on the next member it reads from, no more)."""
    cluster = ctx.cluster
    ts = cluster.oplog.last_timestamp
    replication = cluster.replication
    applied = replication.applied(ctx.member.address)
    return {
        "$clusterTime": {"clusterTime": ts, "signature": {"hash": Binary(bytes(20)), "keyId": Int64(0)}},
        "operationTime": applied if applied < replication.end else ts,
    }


def _is_retryable_write(ctx: Context, spec: CommandSpec | None) -> bool:
    return bool(spec and spec.retryable_write and ctx.request.txn_number is not None
                and "autocommit" not in ctx.body and "startTransaction" not in ctx.body)


def _with_labels(ctx: Context, spec: CommandSpec | None, reply: dict[str, Any], code: int | None,
                 *, change_stream: bool = True) -> dict[str, Any]:
    labels = transaction_labels(ctx, code, RETRYABLE_CODES) if "errorLabels" not in reply else []
    if labels:
        reply["errorLabels"] = labels
    if code in RETRYABLE_CODES and _is_retryable_write(ctx, spec) and "errorLabels" not in reply:
        reply["errorLabels"] = ["RetryableWriteError"]
    return change_stream_labels(ctx, reply, code) if change_stream else reply


def change_stream_labels(ctx: Context, reply: dict[str, Any], code: int | None) -> dict[str, Any]:
    """mongod labels a resumable error of a change stream's getMore ResumableChangeStreamError
    (drivers of wire version 9 and later resume on the label alone), and the errors of its
    NonResumableChangeStreamError category (280, 286) with that label, on any command."""
    if "errorLabels" in reply:
        return reply
    if code in NON_RESUMABLE_CODES:
        reply["errorLabels"] = ["NonResumableChangeStreamError"]
        return reply
    if ctx.request.name != "getMore" or code not in RESUMABLE_CODES:
        return reply
    cursor_id = ctx.body.get("getMore")
    cursor = ctx.member.cursors.cursors.get(cursor_id) if isinstance(cursor_id, int) else None
    if is_change_stream_cursor(cursor):
        reply["errorLabels"] = ["ResumableChangeStreamError"]
    return reply


def finish(ctx: Context, outcome: Outcome) -> Outcome:
    """Stamp a reply with the cluster time; let cursors waiting on the oplog look again."""
    ctx.cluster.wake_waiters(ctx.now)
    if isinstance(outcome, dict):
        if (outcome.get("code") in STATE_CHANGE_CODES and "topologyVersion" not in outcome
                and not ctx.cluster.standalone):
            outcome["topologyVersion"] = topology_version(ctx.member)
        if not ctx.cluster.standalone:  # a standalone mongod has no cluster time to gossip
            outcome.update(cluster_fields(ctx))
        if ctx.request.more_to_come:
            return NO_REPLY
    return outcome


def execute(ctx: Context) -> Outcome:
    with js_clock() as clock:
        try:
            outcome = finish(ctx, _execute(ctx))
        except CommandError as error:
            outcome = _failed(ctx, COMMANDS.get(ctx.request.name), error)
    if clock.slept_ms > 0 and isinstance(outcome, dict):
        # the command's JavaScript slept ($where with sleep()): its reply is held back that
        # long.  (Its effects are already applied: the simulator runs it whole, then waits.)
        reply = outcome
        return _held_back(ctx, COMMANDS.get(ctx.request.name), clock.slept_ms, lambda: reply)
    return outcome


def _failed(ctx: Context, spec: CommandSpec | None, error: CommandError) -> Outcome:
    """The reply of a command that failed with ``error``."""
    return finish(ctx, _with_labels(ctx, spec, error_reply(error), error.code))


def _held_back(
    ctx: Context, spec: CommandSpec | None, wait_ms: float, answer: Callable[[], Outcome]
) -> Waiting:
    """``answer()`` after ``wait_ms``, as mongod sleeps on the operation's clock before it
    answers (a failpoint's blockTimeMS, JavaScript's sleep): a maxTimeMS shorter than the
    wait ends the command with MaxTimeMSExpired at that time instead.  The wait is a Waiting,
    so only this connection is held up."""
    limit = _max_time_ms(ctx)
    expires = limit is not None and limit < wait_ms

    def resume(now: float, timed_out: bool) -> Outcome | None:
        if not timed_out:
            return None
        ctx.now = now
        try:
            if expires:
                raise CommandError(50, "MaxTimeMSExpired", "operation exceeded time limit")
            return answer()
        except CommandError as error:
            return _failed(ctx, spec, error)

    return Waiting(ctx.now + (limit if expires and limit is not None else wait_ms) / 1000.0, resume)


def _execute(ctx: Context) -> Outcome:
    request = ctx.request
    spec = COMMANDS.get(request.name)
    if spec is None or spec.min_wire_version > ctx.cluster.max_wire_version:
        raise CommandError(59, "CommandNotFound", f"no such command: '{request.name}'")
    # mongod checks the Stable API declaration first thing after finding the command
    ctx.api = parse_api_parameters(request.name, ctx.body)
    if request.name == "aggregate":
        check_pipeline(ctx.api, ctx.body.get("pipeline"))
    if spec.requires_auth and ctx.cluster.auth_enabled:
        if ctx.state.user is None:
            raise CommandError(13, "Unauthorized", f"Command {request.name} requires authentication")
        expires = ctx.state.auth_expires
        if expires is not None and ctx.cluster.wall(ctx.now) >= expires:
            # mongod: the OIDC token the connection authenticated with has expired
            raise CommandError(391, "ReauthenticationRequired", "Reauthentication required")
    if ctx.cluster.standalone and "txnNumber" in ctx.body:
        raise CommandError(20, "IllegalOperation", "Transaction numbers are only allowed on a replica set member or mongos")
    preload_client_metadata(ctx)
    action = ctx.member.failpoints.fail_command(failpoint_target(ctx))
    if action is not None and action.block_ms > 0:
        blocked = action
        return _held_back(
            ctx, spec, action.block_ms, lambda: finish(ctx, _after_block(ctx, spec, blocked))
        )
    return _after_block(ctx, spec, action)


def preload_client_metadata(ctx: Context) -> None:
    """As mongod, the client metadata of a connection's first hello is read before the
    command runs, so a failpoint with an ``appName`` sees the handshake's own name."""
    state = ctx.state
    if state.handshake_done or state.app_name is not None or ctx.request.name not in HELLO_NAMES:
        return
    client = ctx.body.get("client")
    application = client.get("application") if isinstance(client, Mapping) else None
    name = application.get("name") if isinstance(application, Mapping) else None
    if isinstance(name, str):
        state.app_name = name


def failpoint_target(ctx: Context) -> Target:
    """The command as failCommand sees it: its name, namespace, connection and appName."""
    request = ctx.request
    first = ctx.body.get("collection") if request.name == "getMore" else ctx.body.get(request.name)
    namespace = f"{request.db}.{first}" if isinstance(first, str) and first else f"{request.db}.$cmd"
    return Target(request.name, namespace, ctx.state.connection_id, ctx.state.app_name)


def _max_time_ms(ctx: Context) -> float | None:
    """The command's maxTimeMS as an operation deadline (None: none).  On a getMore it is the
    await time of a tailable cursor instead, and 0 means no limit."""
    if ctx.request.name == "getMore":
        return None
    value = ctx.body.get("maxTimeMS")
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        return None
    return float(value)


def _after_block(ctx: Context, spec: CommandSpec, action: FailAction | None) -> Outcome:
    if action is not None:
        if action.close_connection:
            return Close(f"failCommand failpoint closed the connection on {spec.name}")
        if action.error_code is not None:
            reply: dict[str, Any] = {
                "ok": 0.0, "errmsg": "Failing command via 'failCommand' failpoint",
                "code": action.error_code, "codeName": code_name(action.error_code),
            }
            if action.error_extra_info is not None:
                reply.update(action.error_extra_info)
            if action.error_labels is not None:
                reply["errorLabels"] = list(action.error_labels)
            # failCommand fires before a getMore checks its cursor out, so mongod cannot know
            # the cursor is a change stream's: no ResumableChangeStreamError label here (the
            # change-streams errorLabels tests rely on it; failGetMoreAfterCursorCheckout is
            # the failpoint that gets the label).
            return _with_labels(ctx, spec, reply, action.error_code, change_stream=False)
    _check_role(ctx, spec)
    held = hold_read(ctx, lambda: _run_in_role(ctx, spec))
    return held if held is not None else _run_in_role(ctx, spec)


def _run_in_role(ctx: Context, spec: CommandSpec) -> Outcome:
    """The command past its failpoint and role checks (and, for a read, past its wait for
    ``afterClusterTime``): its transaction or snapshot, a retry's record, the handler."""
    ctx.txn = enter(ctx)
    if ctx.txn is None:
        ctx.snapshot = snapshot_read(ctx) or read_view(ctx)
    retryable = _is_retryable_write(ctx, spec)
    request = ctx.request
    txn_number = request.txn_number
    if retryable and txn_number is not None:
        stored = ctx.cluster.sessions.replay(request.lsid, txn_number, first_statement(ctx.body))
        if stored is not None:
            if spec.replay is not None:
                stored = spec.replay(ctx, stored)
            return _replicated(ctx, spec, _add_write_concern_error(ctx, spec, stored))
        failed = _failed_before_commit(ctx)
        if failed is not None:
            return failed
    ctx.cluster.sessions.touch(request.lsid)
    if spec.access == _WRITE:
        ctx.cluster.begin_write(ctx.now, request.lsid if retryable else None, txn_number if retryable else None)
    outcome = _run_statement(ctx, spec)

    def after(outcome: Outcome) -> Outcome:
        if not isinstance(outcome, dict):
            return outcome
        if ctx.snapshot is not None:
            stamp_snapshot(outcome, ctx.snapshot)
        _remember_api(ctx, outcome)
        failed_writes = outcome.get("writeErrors") or outcome.get("nErrors")  # (bulkWrite: nErrors)
        if ctx.txn is not None and failed_writes and request.name not in (COMMIT, ABORT):
            ctx.cluster.transactions.abort(ctx.txn, "a write in the transaction failed")
        if retryable and txn_number is not None and outcome.get("ok") == 1.0:
            record = outcome if ctx.retry_record is None else ctx.retry_record
            ctx.cluster.sessions.record(request.lsid, txn_number, record, first_statement(ctx.body))
        if retryable and ctx.member.failpoints.close_after_write():
            return Close("onPrimaryTransactionalWrite failpoint closed the connection after the write")
        return _replicated(ctx, spec, _add_write_concern_error(ctx, spec, outcome))

    def wrap(waiting: Waiting) -> Waiting:
        # A write waiting for a transaction's lock: its reply, when it comes, is recorded and
        # checked like any other write's.
        inner = waiting.poll

        def poll(now: float, timed_out: bool) -> Outcome | None:
            ctx.cluster.begin_write(now, request.lsid if retryable else None, txn_number if retryable else None)
            result = inner(now, timed_out)
            if isinstance(result, Waiting):
                return wrap(result)
            return None if result is None else after(result)

        waiting.poll = poll
        return waiting

    if isinstance(outcome, Waiting) and spec.access == _WRITE:
        return wrap(outcome)
    return after(outcome)


def _replicated(ctx: Context, spec: CommandSpec, reply: dict[str, Any]) -> Outcome:
    """A write's reply once its write concern is satisfied (see .write_concern)."""
    return wait_for_write_concern(ctx, reply) if spec.access == _WRITE else reply


def _failed_before_commit(ctx: Context) -> Outcome | None:
    """onPrimaryTransactionalWrite with failBeforeCommitExceptionCode: mongod fails the
    statement inside its storage transaction, so the write is not applied and not recorded as
    executed (a retry runs it again), and it drops the connection first unless
    ``closeConnection`` is false.  Then the client sees the error: as the statement's write
    error for insert, update and delete (mongod's write path turns a statement's failure into
    one), as the first op's error in bulkWrite's results, as the command's error for
    findAndModify.  The simulator fails the first statement."""
    found = ctx.member.failpoints.fail_before_commit()
    if found is None:
        return None
    code, close = found
    if close:
        return Close("onPrimaryTransactionalWrite failpoint failed the write before its commit and closed the connection")
    error = CommandError(code, code_name(code), f"Failing write for txnNumber {ctx.request.txn_number} due to failpoint. "
                         "The write must not be reflected.")
    name = ctx.request.name
    if name == "bulkWrite":
        return failed_first_op(ctx, error)
    if name not in ("insert", "update", "delete"):
        raise error
    reply: dict[str, Any] = {"n": 0, "nModified": 0} if name == "update" else {"n": 0}
    reply["writeErrors"] = [{"index": 0, "code": error.code, "errmsg": error.errmsg}]
    reply["ok"] = 1.0
    return reply


def _remember_api(ctx: Context, reply: dict[str, Any]) -> None:
    """A cursor the command opened keeps the command's API parameters, for its getMores."""
    cursor_doc = reply.get("cursor")
    cursor_id = cursor_doc.get("id") if isinstance(cursor_doc, Mapping) else None
    if not cursor_id or not isinstance(cursor_id, int):
        return
    cursor = ctx.member.cursors.cursors.get(int(cursor_id))
    if cursor is not None and cursor.api is None:
        cursor.api = ctx.api


def _run_statement(ctx: Context, spec: CommandSpec) -> Outcome:
    """The handler; in a transaction a failing statement aborts it (mongod does), and outside
    one a write that meets a document an open transaction holds waits for it to end."""
    try:
        return _run(ctx, spec)
    except WriteBlocked as blocked:
        return wait_for_transaction(ctx, blocked.holder, lambda: _run_statement(ctx, spec))
    except CommandError:
        if ctx.txn is not None and ctx.request.name not in (COMMIT, ABORT):
            ctx.cluster.transactions.abort(ctx.txn, "a statement of the transaction failed")
        raise


def _add_write_concern_error(ctx: Context, spec: CommandSpec, reply: dict[str, Any]) -> dict[str, Any]:
    """mongod's second look at failCommand, for commands that take a write concern."""
    if spec.access != _WRITE or reply.get("ok") != 1.0:
        return reply
    found = ctx.member.failpoints.write_concern_error(failpoint_target(ctx))
    if found is None:
        unsatisfiable = _unsatisfiable_write_concern(ctx)
        if unsatisfiable is None:
            return reply
        found = unsatisfiable, None
    wce, labels = found
    reply = dict(reply)
    reply["writeConcernError"] = wce
    if labels is not None:
        reply["errorLabels"] = list(labels)
    if ctx.body.get("autocommit") is False and ctx.request.name not in (COMMIT, ABORT):
        return reply  # a statement's writeConcernError is neither transient nor retryable
    code = wce.get("code")
    return _with_labels(ctx, spec, reply, code if isinstance(code, int) else None)


def _unsatisfiable_write_concern(ctx: Context) -> dict[str, Any] | None:
    """mongod applies a write whose write concern the set can never satisfy, then answers a
    writeConcernError: ``w`` above the number of data-bearing members (100) or a ``w`` mode
    the replica set configuration does not name (79)."""
    concern = ctx.body.get("writeConcern")
    w = concern.get("w") if isinstance(concern, Mapping) else None
    if isinstance(w, int) and not isinstance(w, bool) and w > len(ctx.cluster.members):
        return {"code": 100, "codeName": "UnsatisfiableWriteConcern", "errmsg": "Not enough data-bearing nodes"}
    if isinstance(w, str) and w != "majority":
        return {"code": 79, "codeName": "UnknownReplWriteConcern",
                "errmsg": f"No write concern mode named '{w}' found in replica set configuration"}
    return None


def _check_role(ctx: Context, spec: CommandSpec) -> None:
    state = ctx.member.state
    if spec.access == _WRITE and state != PRIMARY:
        raise CommandError(10107, "NotWritablePrimary", "not primary")
    if spec.access == _READ_REQUIRES_OK and state != PRIMARY and not ctx.request.secondary_ok:
        raise CommandError(13435, "NotPrimaryNoSecondaryOk", "not primary and secondaryOk=false")


def _run(ctx: Context, spec: CommandSpec) -> Outcome:
    try:
        # a command that names a view is the view module's (a read through it, a refusal)
        on_view = views.intercept(ctx)
        if on_view is not None:
            return on_view
        return spec.handler(ctx)
    except (CommandError, WriteBlocked):
        raise
    except Exception as bug:  # noqa: BLE001 -- a handler bug must answer, not kill the connection
        raise CommandError(1, "InternalError", f"simulator error in {spec.name}: {type(bug).__name__}: {bug}") from bug
