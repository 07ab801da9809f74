"""Failpoints: ``configureFailPoint`` state per member and the decision it makes per command.

Inputs: the ``configureFailPoint`` command document (:func:`configure`), then for every
command the member runs, its name and the client's appName (:meth:`FailPoints.fail_command`).
Outputs: a :class:`FailAction` (or None): what to do to this command -- block for a while,
close the connection, answer an error, or run it and add a writeConcernError.  The
``onPrimaryTransactionalWrite`` failpoint is :meth:`FailPoints.close_after_write`: the write
is applied, then the connection is dropped without a reply.  ``failGetMoreAfterCursorCheckout``
is :meth:`FailPoints.get_more_error`: a getMore fails with ``errorCode`` once its cursor is
found, so (unlike a failCommand error, raised before) the reply is labelled as the cursor's
errors are, e.g. ResumableChangeStreamError for a change stream.

Modes as mongod: ``"alwaysOn"``, ``"off"``, ``{"times": n}`` (fires n times, then off),
``{"skip": n}`` (lets n matching commands through, then always fires).  mongod also has
``activationProbability``; it needs randomness and is refused here (BadValue).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from mongo_sansio.testing.engine import CommandError

__all__ = ["FailAction", "FailPoint", "FailPoints", "SUPPORTED"]

SUPPORTED = ("failCommand", "onPrimaryTransactionalWrite", "failGetMoreAfterCursorCheckout")


@attrs.frozen
class FailAction:
    block_ms: float = 0.0
    close_connection: bool = False
    error_code: int | None = None
    error_labels: tuple[str, ...] | None = None
    write_concern_error: dict[str, Any] | None = None


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


def parse_mode(mode: Any) -> FailPoint:
    point = FailPoint("")
    if mode == "alwaysOn":
        point.always = True
    elif mode == "off":
        pass
    elif isinstance(mode, Mapping) and len(mode) == 1 and "times" in mode:
        times = mode["times"]
        if not isinstance(times, int) or isinstance(times, bool) or times < 0:
            raise _bad("'times' option to 'mode' must be positive")
        point.times = int(times)
    elif isinstance(mode, Mapping) and len(mode) == 1 and "skip" in mode:
        skip = mode["skip"]
        if not isinstance(skip, int) or isinstance(skip, bool) or skip < 0:
            raise _bad("'skip' option to 'mode' must be positive")
        point.skip = int(skip)
        point.always = skip == 0
    elif isinstance(mode, Mapping) and "activationProbability" in mode:
        raise _bad("the simulator does not support activationProbability (it draws no randomness)")
    else:
        raise _bad("'mode' must be one of 'off', 'alwaysOn', 'times', and 'skip'")
    return point


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
            commands = point.data.get("failCommands")
            if not isinstance(commands, list) or not all(isinstance(c, str) for c in commands):
                raise CommandError(2, "BadValue", "'failCommands' must be an array of strings")
        previous = self.points.get(name)
        self.points[name] = point
        return {"count": previous.count if previous else 0}

    def fail_command(self, command_name: str, app_name: str | None) -> FailAction | None:
        point = self.points.get("failCommand")
        if point is None or not point.active:
            return None
        data = point.data
        if command_name not in data.get("failCommands", ()):
            return None
        wanted_app = data.get("appName")
        if wanted_app is not None and wanted_app != app_name:
            return None
        if not point.fire():
            return None
        labels = data.get("errorLabels")
        code = data.get("errorCode")
        wce = data.get("writeConcernError")
        return FailAction(
            block_ms=float(data.get("blockTimeMS", 0)) if data.get("blockConnection") else 0.0,
            close_connection=bool(data.get("closeConnection")),
            error_code=int(code) if isinstance(code, int) and not isinstance(code, bool) else None,
            error_labels=tuple(str(x) for x in labels) if isinstance(labels, list) else None,
            write_concern_error=dict(wce) if isinstance(wce, Mapping) else None,
        )

    def close_after_write(self) -> bool:
        point = self.points.get("onPrimaryTransactionalWrite")
        return point is not None and point.active and bool(point.data.get("closeConnection", True)) and point.fire()

    def get_more_error(self) -> int | None:
        """The code a getMore fails with after checking out its cursor (None: no failure)."""
        point = self.points.get("failGetMoreAfterCursorCheckout")
        if point is None or not point.active:
            return None
        code = point.data.get("errorCode")
        if not isinstance(code, int) or isinstance(code, bool) or not point.fire():
            return None
        return int(code)
