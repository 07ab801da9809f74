"""A scripted interpreter for flows: the test lists the requests it expects, in order, and what
to answer each with.

``run_flow(flow, *steps)`` drives ``flow`` the way an adapter would: each request the flow
yields is checked against the next :class:`Step` (its type, and for a ``RunCommand`` the command
name, database, server and a subset of the body), then answered with the step's reply (sent in)
or its error (thrown in, as an adapter throws ``NetworkError``).  A request the script does not
expect, a mismatch, or steps left over when the flow ends fail with :class:`ScriptError` (an
``AssertionError``).  The flow's return value is returned; an error the flow raises is raised
(after the leftover check, so ``pytest.raises`` also proves the whole script ran).

Body matching (:func:`matches`): expected mappings are subsets of the actual ones (nested),
sequences match element by element with equal lengths, :data:`ABSENT` requires a key to be
missing and :data:`ANY` a key to be present.  Each step keeps the request it matched in
``step.seen`` for further assertions.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping, Sequence
from typing import Any, TypeVar

import attrs

from mongo_sansio.bson import Int64, Timestamp
from mongo_sansio.errors import NetworkError
from mongo_sansio.flow import (
    GetContext,
    MarkServerUnknown,
    OperationContext,
    Request,
    RunCommand,
    SelectServer,
    ServerInfo,
)
from mongo_sansio.selection.read_preference import ReadPreference

__all__ = [
    "ABSENT",
    "ANY",
    "ScriptError",
    "Step",
    "matches",
    "run_flow",
    "command",
    "select",
    "mark_unknown",
    "network_error",
    "cursor_reply",
    "error_reply",
]

T = TypeVar("T")


class _Marker:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


#: In an expected mapping: the key must not be present.
ABSENT: Any = _Marker("ABSENT")
#: In an expected mapping: the key must be present, with any value.
ANY: Any = _Marker("ANY")


class ScriptError(AssertionError):
    """The flow did not do what the script said."""


def matches(expected: Any, actual: Any, path: str = "body") -> list[str]:
    """The differences between ``expected`` (subset semantics) and ``actual``; empty if none."""
    if expected is ANY:
        return []
    if isinstance(expected, Mapping):
        if not isinstance(actual, Mapping):
            return [f"{path}: expected a document, got {actual!r}"]
        problems = []
        for key, value in expected.items():
            if value is ABSENT:
                if key in actual:
                    problems.append(f"{path}.{key}: expected absent, got {actual[key]!r}")
            elif key not in actual:
                problems.append(f"{path}.{key}: missing (expected {value!r})")
            else:
                problems += matches(value, actual[key], f"{path}.{key}")
        return problems
    if isinstance(expected, list | tuple):
        if not isinstance(actual, Sequence) or isinstance(actual, str | bytes):
            return [f"{path}: expected an array, got {actual!r}"]
        if len(expected) != len(actual):
            return [f"{path}: expected {len(expected)} elements, got {len(actual)}: {actual!r}"]
        problems = []
        for index, (want, got) in enumerate(zip(expected, actual, strict=True)):
            problems += matches(want, got, f"{path}[{index}]")
        return problems
    if isinstance(expected, bool) != isinstance(actual, bool) or expected != actual:
        return [f"{path}: expected {expected!r}, got {actual!r}"]
    return []


@attrs.define
class Step:
    """One expected request and its answer."""

    request_type: type
    command: str | None = None
    db: str | None = None
    body: Mapping[str, Any] | None = None
    address: tuple[str, int] | None = None
    read_preference: ReadPreference | None = None
    reply: Any = None
    error: BaseException | None = None
    check: Callable[[Any], None] | None = None
    seen: Request | None = None

    def verify(self, request: Request) -> None:
        problems: list[str] = []
        if not isinstance(request, self.request_type):
            raise ScriptError(f"expected a {self.request_type.__name__}, the flow sent {request!r}")
        if isinstance(request, RunCommand):
            name = next(iter(request.body), None)
            if self.command is not None and name != self.command:
                problems.append(f"command: expected {self.command!r}, got {name!r}")
            if self.db is not None and request.db != self.db:
                problems.append(f"db: expected {self.db!r}, got {request.db!r}")
            if self.address is not None and request.server.address != self.address:
                problems.append(f"server: expected {self.address}, got {request.server.address}")
            if self.body is not None:
                problems += matches(self.body, request.body)
        elif isinstance(request, MarkServerUnknown):
            if self.address is not None and request.address != self.address:
                problems.append(f"address: expected {self.address}, got {request.address}")
        elif isinstance(request, SelectServer):
            if self.read_preference is not None and request.read_preference != self.read_preference:
                problems.append(
                    f"read preference: expected {self.read_preference}, got {request.read_preference}"
                )
        if problems:
            raise ScriptError(f"{request!r} does not match the script:\n  " + "\n  ".join(problems))
        if self.check is not None:
            self.check(request)
        self.seen = request


def run_flow(
    flow: Generator[Request, Any, T], *steps: Step, context: OperationContext | None = None
) -> T:
    """Drive ``flow`` through ``steps``; return its value or raise its error.

    ``GetContext`` requests are answered with ``context`` without a step (default: no session,
    retries off, so scripts list every command the flow sends exactly once)."""
    if context is None:
        context = OperationContext(session=None, retry_reads=False, retry_writes=False)
    pending = list(steps)
    answer: Any = None
    error: BaseException | None = None
    while True:
        try:
            request = flow.send(answer) if error is None else flow.throw(error)
        except StopIteration as stop:
            _check_finished(pending, None)
            return stop.value  # type: ignore[no-any-return]
        except ScriptError:
            raise
        except BaseException as raised:
            _check_finished(pending, raised)
            raise
        if isinstance(request, GetContext):
            answer, error = context, None
            continue
        if not pending:
            flow.close()
            raise ScriptError(f"unexpected request (the script has ended): {request!r}")
        step = pending.pop(0)
        try:
            step.verify(request)
        except BaseException:
            flow.close()
            raise
        answer, error = step.reply, step.error


def _check_finished(pending: list[Step], raised: BaseException | None) -> None:
    if pending:
        left = ", ".join(f"{s.request_type.__name__}({s.command or ''})" for s in pending)
        message = f"the flow ended ({raised!r}) with {len(pending)} script steps unused: {left}"
        raise ScriptError(message) from raised


# --- step constructors ---------------------------------------------------------------------


def command(
    name: str,
    reply: Mapping[str, Any] | None = None,
    *,
    db: str | None = None,
    body: Mapping[str, Any] | None = None,
    address: tuple[str, int] | None = None,
    error: BaseException | None = None,
    check: Callable[[Any], None] | None = None,
) -> Step:
    """A ``RunCommand`` of command ``name``, answered with ``reply`` (``{ok: 1}`` by default) or
    with ``error`` thrown in."""
    if reply is None and error is None:
        reply = {"ok": 1}
    return Step(RunCommand, name, db, body, address, reply=reply, error=error, check=check)


def select(server: ServerInfo, read_preference: ReadPreference | None = None) -> Step:
    """A ``SelectServer`` (with ``read_preference`` if given), answered with ``server``."""
    return Step(SelectServer, read_preference=read_preference, reply=server)


def mark_unknown(address: tuple[str, int] | None = None) -> Step:
    """The ``MarkServerUnknown`` that run_command yields before a network or state-change error."""
    return Step(MarkServerUnknown, address=address)


def network_error(name: str, message: str = "connection reset", **kwargs: Any) -> Step:
    """A ``RunCommand`` of ``name`` that fails with a NetworkError thrown in."""
    return command(name, error=NetworkError(message), **kwargs)


# --- replies -------------------------------------------------------------------------------


def cursor_reply(
    batch: Sequence[Any] = (),
    *,
    cursor_id: int = 0,
    ns: str | None = "db.coll",
    first: bool = True,
    post_batch_resume_token: Mapping[str, Any] | None = None,
    operation_time: Timestamp | None = None,
) -> dict[str, Any]:
    """An ``ok: 1`` cursor reply: ``firstBatch`` (``first``) or ``nextBatch``."""
    section: dict[str, Any] = {"id": Int64(cursor_id)}
    if ns is not None:
        section["ns"] = ns
    section["firstBatch" if first else "nextBatch"] = list(batch)
    if post_batch_resume_token is not None:
        section["postBatchResumeToken"] = post_batch_resume_token
    reply: dict[str, Any] = {"cursor": section, "ok": 1.0}
    if operation_time is not None:
        reply["operationTime"] = operation_time
    return reply


def error_reply(code: int, *labels: str, errmsg: str = "failed", name: str = "") -> dict[str, Any]:
    """An ``ok: 0`` reply with ``code`` and error labels."""
    reply: dict[str, Any] = {"ok": 0.0, "errmsg": errmsg, "code": code}
    if name:
        reply["codeName"] = name
    if labels:
        reply["errorLabels"] = list(labels)
    return reply
