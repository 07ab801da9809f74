"""commitTransaction, abortTransaction, and the server parameters (getParameter,
setParameter) that govern transactions.

Inputs: a :class:`~.context.Context` whose ``txn`` the dispatcher has found
(:func:`.transactions.enter` refused the command already when the transaction is gone, too
old or committed, as mongod does).  Outputs: ``{ok: 1}`` replies; a commit applies the
transaction's writes and logs them as one oplog entry, and a commit retried after it succeeded
answers ok again (a commit is idempotent).  Failures are raised as CommandError.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mongo_sansio.testing.engine import CommandError
from mongo_sansio.testing.server.context import CommandSpec, Context, Outcome
from mongo_sansio.testing.server.transactions import ABORT, COMMIT, COMMITTED

__all__ = ["TRANSACTION_COMMANDS"]

# Read-only parameters getParameter reports besides the cluster's settable ones.
_FIXED_PARAMETERS: dict[str, Any] = {
    "maxTransactionLockRequestTimeoutMillis": 5,
    "enableTestCommands": True,
    "requireApiVersion": False,
}


def _admin_only(ctx: Context) -> None:
    if ctx.db != "admin":
        raise CommandError(13, "Unauthorized", f"{ctx.request.name} may only be run against the admin database.")


def commit_transaction(ctx: Context) -> Outcome:
    _admin_only(ctx)
    txn = ctx.txn
    if txn is None:  # enter() refuses a commit outside a transaction; kept for safety
        raise CommandError(50768, "Location50768", f"'{COMMIT}' must be run within a transaction")
    if txn.state == COMMITTED:
        return dict(txn.commit_reply or {"ok": 1.0})
    ctx.cluster.transactions.commit(txn, ctx.now)
    txn.commit_reply = {"ok": 1.0}
    return {"ok": 1.0}


def abort_transaction(ctx: Context) -> Outcome:
    _admin_only(ctx)
    txn = ctx.txn
    if txn is None:
        raise CommandError(50768, "Location50768", f"'{ABORT}' must be run within a transaction")
    ctx.cluster.transactions.abort(txn, "aborted by the client")
    return {"ok": 1.0}


def _parameters(ctx: Context) -> dict[str, Any]:
    version = "8.0" if ctx.cluster.max_wire_version >= 25 else "7.0"
    return {**_FIXED_PARAMETERS, "featureCompatibilityVersion": {"version": version}, **ctx.cluster.parameters}


def get_parameter(ctx: Context) -> Outcome:
    """getParameter: ``"*"`` (or ``{allParameters: true}``) for every parameter, else the
    parameters named by the other fields of the command."""
    _admin_only(ctx)
    parameters = _parameters(ctx)
    selector = ctx.body.get("getParameter")
    every = selector == "*" or (isinstance(selector, Mapping) and selector.get("allParameters") is True)
    if every:
        return {**parameters, "ok": 1.0}
    wanted = [name for name in ctx.body if name != "getParameter" and not name.startswith("$")
              and name not in ("lsid", "comment", "apiVersion", "apiStrict", "apiDeprecationErrors")]
    reply: dict[str, Any] = {}
    for name in wanted:
        if name not in parameters:
            raise CommandError(72, "InvalidOptions", "no option found to get")
        reply[name] = parameters[name]
    if not reply:
        raise CommandError(72, "InvalidOptions", "no option found to get")
    reply["ok"] = 1.0
    return reply


def set_parameter(ctx: Context) -> Outcome:
    """setParameter: only the cluster's settable parameters (transactionLifetimeLimitSeconds);
    answers the old value as ``was``."""
    _admin_only(ctx)
    settings = [(k, v) for k, v in ctx.body.items() if k != "setParameter" and not k.startswith("$")
                and k not in ("lsid", "comment", "writeConcern")]
    if len(settings) != 1:
        raise CommandError(2, "BadValue", "setParameter takes exactly one parameter to set")
    name, value = settings[0]
    if name not in ctx.cluster.parameters:
        if name in _FIXED_PARAMETERS:
            raise CommandError(2, "BadValue", f"Cannot set parameter {name} in the simulator")
        raise CommandError(72, "InvalidOptions", f"attempted to set unrecognized parameter [{name}], use help:true to see options ")
    if name == "transactionLifetimeLimitSeconds" and (isinstance(value, bool) or not isinstance(value, int | float) or value < 1):
        raise CommandError(2, "BadValue", "transactionLifetimeLimitSeconds must be greater than or equal to 1")
    was = ctx.cluster.parameters[name]
    ctx.cluster.parameters[name] = value
    return {"was": was, "ok": 1.0}


TRANSACTION_COMMANDS = [
    CommandSpec(COMMIT, commit_transaction, access="write"),
    CommandSpec(ABORT, abort_transaction, access="write"),
    CommandSpec("getParameter", get_parameter),
    CommandSpec("setParameter", set_parameter),
]
