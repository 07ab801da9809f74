"""Failpoints: ``configureFailPoint`` state per member and the decisions it makes per command.

Inputs: the ``configureFailPoint`` command document (:meth:`FailPoints.configure`), then for
every command the member runs, a :class:`Target` (its name, namespace, the connection's id and
appName).  Outputs: a :class:`FailAction` (or None) from :meth:`FailPoints.fail_command`: what
to do to this command before it runs -- block for a while, close the connection, answer an
error; and from :meth:`FailPoints.write_concern_error` the writeConcernError (and labels) to add
to a write's reply after it ran.  As mongod, those are two evaluations of the failpoint, each
consuming ``times``/``skip`` only when it acts, and the first only acts when ``data`` has
``closeConnection``, ``blockConnection`` or ``errorCode``.

The ``onPrimaryTransactionalWrite`` failpoint (retryable writes only) is
:meth:`FailPoints.close_after_write`: the write is applied, then the connection is dropped
without a reply; with ``failBeforeCommitExceptionCode`` it is :meth:`FailPoints.fail_before_commit`
instead: the write fails with that code before it is applied (and, unless ``closeConnection`` is
false, the connection is dropped too, as mongod ends the session before it fails the write).
Both are evaluated once per write command (mongod evaluates the failpoint at each statement).  ``failGetMoreAfterCursorCheckout``
is :meth:`FailPoints.get_more_error`: a getMore fails with ``errorCode`` once its cursor is
found, so (unlike a failCommand error, raised before) the reply is labelled as the cursor's
errors are, e.g. ResumableChangeStreamError for a change stream.

``failCommand``'s ``data`` as mongod reads it: ``failCommands`` (names matched with their
aliases: ``hello`` also fails ``isMaster``/``ismaster``), ``failAllCommands``, ``appName``,
``threadName`` (mongod's ``conn<id>``), ``namespace`` (``db.coll``), ``closeConnection``,
``blockConnection`` + ``blockTimeMS``, ``errorCode``, ``errorExtraInfo`` (fields added to the
error reply), ``errorLabels`` (replacing the labels the server would add) and
``writeConcernError``.  The error is answered as mongod answers its own: a NotPrimaryError gets
the member's topologyVersion, a shutdown error (91, 11600) none but what ``errorExtraInfo``
gives (mongod adds one only while it is really shutting down).  ``configureFailPoint`` itself is never failed.

Modes as mongod: ``"alwaysOn"``, ``"off"``, ``{"times": n}`` (fires n times, then off),
``{"skip": n}`` (lets n matching commands through, then always fires).  mongod also has
``activationProbability``; it needs randomness and is refused here (BadValue).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from mongo_sansio.testing.engine import CommandError

__all__ = ["FailAction", "FailPoint", "FailPoints", "SUPPORTED", "Target", "same_command"]

SUPPORTED = ("failCommand", "onPrimaryTransactionalWrite", "failGetMoreAfterCursorCheckout")

# Commands mongod knows under several names (Command::hasAlias): a failpoint naming one fails all.
_ALIASES = (
    frozenset({"hello", "isMaster", "ismaster"}),
    frozenset({"findAndModify", "findandmodify"}),
    frozenset({"buildInfo", "buildinfo"}),
)


def same_command(listed: str, name: str) -> bool:
    """Does ``listed`` (a name in failCommands) name the command sent as ``name``?"""
    if listed == name:
        return True
    return any(listed in group and name in group for group in _ALIASES)


@attrs.frozen
class Target:
    """The command a failpoint looks at: its name, namespace and connection."""

    command: str
    namespace: str = ""
    connection_id: int = 0
    app_name: str | None = None


@attrs.frozen
class FailAction:
    block_ms: float = 0.0
    close_connection: bool = False
    error_code: int | None = None
    error_labels: tuple[str, ...] | None = None
    error_extra_info: dict[str, Any] | None = None


@attrs.define
class FailPoint:
    name: str
    always: bool = False
    times: int = 0
    skip: int = 0
    data: dict[str, Any] = attrs.Factory(dict)
    count: int = 0  # how many times it has fired (mongod's timesEntered)

    @property
    def active(self) -> bool:
        return self.always or self.times > 0 or self.skip > 0

    def fire(self) -> bool:
        """One matching evaluation: does it fire now?  Consumes times/skip as mongod does."""
        if self.skip > 0:
            self.skip -= 1
            if self.skip == 0:
                self.always = True
            return False
        if self.always:
            self.count += 1
            return True
        if self.times > 0:
            self.times -= 1
            self.count += 1
            return True
        return False


def _bad(message: str) -> CommandError:
    return CommandError(2, "BadValue", message)


def _whole(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
        return None
    return int(value)


def parse_mode(mode: Any) -> FailPoint:
    point = FailPoint("")
    if mode == "alwaysOn":
        point.always = True
    elif mode == "off":
        pass
    elif isinstance(mode, Mapping) and len(mode) == 1 and "times" in mode:
        times = _whole(mode["times"])
        if times is None or times < 0:
            raise _bad("'times' option to 'mode' must be positive")
        point.times = times
    elif isinstance(mode, Mapping) and len(mode) == 1 and "skip" in mode:
        skip = _whole(mode["skip"])
        if skip is None or skip < 0:
            raise _bad("'skip' option to 'mode' must be positive")
        point.skip = skip
        point.always = skip == 0
    elif isinstance(mode, Mapping) and "activationProbability" in mode:
        raise _bad("the simulator does not support activationProbability (it draws no randomness)")
    else:
        raise _bad("'mode' must be one of 'off', 'alwaysOn', 'times', and 'skip'")
    return point


def _check_fail_command_data(data: Mapping[str, Any]) -> None:
    commands = data.get("failCommands")
    if "failAllCommands" not in data and (
        not isinstance(commands, list) or not all(isinstance(c, str) for c in commands)
    ):
        raise _bad("'failCommands' must be an array of strings")
    if data.get("blockConnection") is True:
        block = _whole(data.get("blockTimeMS"))
        if block is None:
            raise CommandError(72, "InvalidOptions", "must specify 'blockTimeMS' when 'blockConnection' is true")
        if block < 0:
            raise CommandError(72, "InvalidOptions", "'blockTimeMS' must be non-negative")
    if "errorExtraInfo" in data and not isinstance(data["errorExtraInfo"], Mapping):
        raise CommandError(14, "TypeMismatch", "'errorExtraInfo' must be an object")


class FailPoints:
    """The failpoints of one member (mongod's are per process)."""

    def __init__(self) -> None:
        self.points: dict[str, FailPoint] = {}

    def configure(self, command: Mapping[str, Any]) -> dict[str, Any]:
        """Run ``configureFailPoint``; returns mongod's reply fields (``count``)."""
        name = command.get("configureFailPoint")
        if not isinstance(name, str):
            raise CommandError(14, "TypeMismatch", "configureFailPoint argument must be a string")
        if name not in SUPPORTED:
            raise CommandError(2, "BadValue", f"Failed to set failpoint {name}: not a known failpoint")
        if "mode" not in command:
            raise CommandError(2, "BadValue", "missing mode argument")
        point = parse_mode(command["mode"])
        point.name = name
        data = command.get("data", {})
        if not isinstance(data, Mapping):
            raise CommandError(14, "TypeMismatch", "'data' must be an object")
        point.data = dict(data)
        if name == "failCommand" and point.active:
            _check_fail_command_data(point.data)
        previous = self.points.get(name)
        self.points[name] = point
        return {"count": previous.count if previous else 0}

    def _matching(self, target: Target) -> FailPoint | None:
        """The active failCommand failpoint if it applies to ``target`` (nothing consumed)."""
        point = self.points.get("failCommand")
        if point is None or not point.active or target.command == "configureFailPoint":
            return None
        data = point.data
        if "threadName" in data and data["threadName"] != f"conn{target.connection_id}":
            return None
        if "appName" in data and data["appName"] != (target.app_name or ""):
            return None
        if "namespace" in data and data["namespace"] != target.namespace:
            return None
        if "failAllCommands" in data:
            return point
        listed = data.get("failCommands", ())
        if not any(isinstance(c, str) and same_command(c, target.command) for c in listed):
            return None
        return point

    def fail_command(self, target: Target) -> FailAction | None:
        """Before the command runs: block, close or fail it (None: run it as usual)."""
        point = self._matching(target)
        if point is None:
            return None
        data = point.data
        close = data.get("closeConnection") is True
        block = data.get("blockConnection") is True
        code = _whole(data.get("errorCode"))
        if not (close or block or code is not None) or not point.fire():
            return None
        labels = data.get("errorLabels")
        extra = data.get("errorExtraInfo")
        return FailAction(
            block_ms=float(_whole(data.get("blockTimeMS")) or 0) if block else 0.0,
            close_connection=close,
            error_code=code,
            error_labels=tuple(str(x) for x in labels) if isinstance(labels, list) else None,
            error_extra_info=dict(extra) if isinstance(extra, Mapping) and code is not None else None,
        )

    def write_concern_error(self, target: Target) -> tuple[dict[str, Any], tuple[str, ...] | None] | None:
        """After a write ran: the writeConcernError to add to its reply, with the failpoint's
        errorLabels (None: no failpoint applies)."""
        point = self._matching(target)
        if point is None:
            return None
        wce = point.data.get("writeConcernError")
        if not isinstance(wce, Mapping) or not point.fire():
            return None
        labels = point.data.get("errorLabels")
        return dict(wce), tuple(str(x) for x in labels) if isinstance(labels, list) else None

    def close_after_write(self) -> bool:
        """After a retryable write was applied: drop the connection?  (Not when the failpoint
        fails writes before their commit: :meth:`fail_before_commit` acted on it already.)"""
        point = self.points.get("onPrimaryTransactionalWrite")
        return (point is not None and point.active and "failBeforeCommitExceptionCode" not in point.data
                and bool(point.data.get("closeConnection", True)) and point.fire())

    def fail_before_commit(self) -> tuple[int, bool] | None:
        """Before a retryable write is applied: the code it fails with and whether the
        connection is dropped (``closeConnection``, true unless given false, as mongod's);
        None when no failure."""
        point = self.points.get("onPrimaryTransactionalWrite")
        if point is None or not point.active:
            return None
        code = _whole(point.data.get("failBeforeCommitExceptionCode"))
        if code is None or not point.fire():
            return None
        return code, bool(point.data.get("closeConnection", True))

    def get_more_error(self) -> int | None:
        """The code a getMore fails with after checking out its cursor (None: no failure)."""
        point = self.points.get("failGetMoreAfterCursorCheckout")
        if point is None or not point.active:
            return None
        code = _whole(point.data.get("errorCode"))
        if code is None or not point.fire():
            return None
        return code
