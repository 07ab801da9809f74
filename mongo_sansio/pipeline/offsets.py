"""Stream offsets made of resume tokens, and the rules for reading between two of them.

Inputs: ``startAt`` text, resume tokens (the ``_data`` strings), the tokens a read-ahead saw,
post-batch resume tokens, read limits and how long the stream has been quiet (seconds, from the
adapter).  Outputs: :class:`StreamOffset` values (and their JSON-able dict form, which Spark
keeps in its offset log), the end offset of the next micro-batch (:func:`next_end`), and for a
reader of one batch, what to do with each event (:class:`TokenRange`).

Why tokens order: a resume token's ``_data`` is a hex string whose byte order is the oplog
order (mongod encodes it as a KeyString, which is built to compare byte-wise; the simulator
uses fixed-width hex fields).  Upper-case hex preserves byte order, so comparing the strings
compares positions.  A post-batch resume token (a scanned position with no event) sorts with
the events around it, which is what lets a quiet stream's offset move forward.

A batch covers the events whose tokens are after its start and at or before its end.  Its
reader resumes after the start (``startAfter``, which also passes an invalidate) and stops at
the first event past the end, at the end event itself, or once the server's post-batch token
reaches the end; it never waits for ever (the adapter gives it a deadline).
"""

from __future__ import annotations

import datetime
import enum
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from mongo_sansio.bson import Timestamp

__all__ = [
    "StartAt",
    "StreamOffset",
    "TokenRange",
    "Verdict",
    "next_end",
    "parse_start_at",
    "timestamp_text",
]

_OPERATION_TIME = re.compile(r"^(\d+)(?:[:.](\d+))?$")
_HEX = re.compile(r"^[0-9A-Fa-f]+$")


def timestamp_text(ts: Timestamp | None) -> str | None:
    """``"time.inc"``, the offsets' spelling of a cluster time."""
    return None if ts is None else f"{ts.time}.{ts.inc}"


def _timestamp(text: str | None) -> Timestamp | None:
    if text is None:
        return None
    time, _, inc = text.partition(".")
    return Timestamp(int(time), int(inc or 0))


@attrs.frozen
class StreamOffset:
    """Where a stream stands: after ``token`` (a resume token's ``_data``), or, for a start
    given as an operation time before any token is known, at ``operation_time`` (inclusive).
    ``cluster_time`` is the cluster time of the last event at or before the offset, when known
    (it feeds progress and lag reports, never decisions)."""

    token: str | None = None
    operation_time: Timestamp | None = None
    cluster_time: Timestamp | None = None

    def __attrs_post_init__(self) -> None:
        if (self.token is None) == (self.operation_time is None):
            raise ValueError("an offset is a resume token or an operation time, not both or neither")

    def to_dict(self) -> dict[str, Any]:
        """The JSON-able form Spark keeps in its offset log (strings only)."""
        out: dict[str, Any] = {}
        if self.token is not None:
            out["token"] = self.token
        if self.operation_time is not None:
            out["operationTime"] = timestamp_text(self.operation_time)
        if self.cluster_time is not None:
            out["clusterTime"] = timestamp_text(self.cluster_time)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StreamOffset:
        try:
            return cls(
                token=data.get("token"),
                operation_time=_timestamp(data.get("operationTime")),
                cluster_time=_timestamp(data.get("clusterTime")),
            )
        except (ValueError, TypeError, AttributeError) as exc:
            raise ValueError(f"not an offset of this data source: {dict(data)!r} ({exc})") from None

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> StreamOffset:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"not an offset of this data source: {text!r} ({exc})") from None
        if not isinstance(data, dict):
            raise ValueError(f"not an offset of this data source: {text!r}")
        return cls.from_dict(data)

    def watch_options(self) -> dict[str, Any]:
        """The change stream options (PyMongo's names) that start just after this offset."""
        if self.token is not None:
            return {"start_after": {"_data": self.token}}
        return {"start_at_operation_time": self.operation_time}

    def is_before(self, token: str) -> bool:
        """Whether an event or position with ``token`` comes after this offset (is inside a
        batch that starts here).  An operation-time offset cannot compare tokens; the server
        already started the stream there, so everything it returns is after it."""
        return self.token is None or token > self.token


@attrs.frozen
class StartAt:
    """A parsed ``startAt`` option: ``latest`` (the default), an operation time, or a token."""

    latest: bool = False
    operation_time: Timestamp | None = None
    token: str | None = None

    def offset(self) -> StreamOffset | None:
        """The initial offset it names, or None for ``latest`` (which the adapter asks the
        server for, once, and keeps)."""
        if self.token is not None:
            return StreamOffset(token=self.token)
        if self.operation_time is not None:
            return StreamOffset(operation_time=self.operation_time)
        return None


def parse_start_at(text: str | None) -> StartAt:
    """``latest``; an operation time as ``seconds``, ``seconds:increment`` or an ISO-8601 UTC
    date; a resume token as Extended JSON ``{"_data": "..."}`` or its bare hex string; or an
    operation time as Extended JSON ``{"$timestamp": {"t": ..., "i": ...}}``."""
    value = (text or "latest").strip()
    if value.lower() == "latest":
        return StartAt(latest=True)
    match = _OPERATION_TIME.match(value)
    if match:
        return StartAt(operation_time=Timestamp(int(match.group(1)), int(match.group(2) or 0)))
    if value.startswith("{"):
        try:
            data = json.loads(value)
        except json.JSONDecodeError:
            raise ValueError(f"startAt: not JSON: {value!r}") from None
        if isinstance(data, dict) and isinstance(data.get("_data"), str):
            return StartAt(token=data["_data"])
        stamp = data.get("$timestamp") if isinstance(data, dict) else None
        if isinstance(stamp, dict) and isinstance(stamp.get("t"), int) and isinstance(stamp.get("i"), int):
            return StartAt(operation_time=Timestamp(stamp["t"], stamp["i"]))
        raise ValueError(f"startAt: expected {{\"_data\": ...}} or {{\"$timestamp\": ...}}, got {value!r}")
    if _HEX.match(value):
        return StartAt(token=value)
    try:
        when = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"startAt: {value!r} is not 'latest', an operation time (seconds[:increment] or an "
            "ISO-8601 date) or a resume token"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.UTC)
    return StartAt(operation_time=Timestamp(int(when.timestamp()), 0))


def next_end(
    start: StreamOffset,
    seen: Sequence[tuple[str, Timestamp | None]],
    post_batch_token: str | None,
    *,
    max_events: int | None,
    quiet_seconds: float,
    quiet_advance_seconds: float,
    target: str | None = None,
    position: StreamOffset | None = None,
) -> StreamOffset:
    """The end offset of the next micro-batch.

    ``seen`` are the (token, cluster time) pairs a read-ahead stream (projected to its ``_id``)
    returned after ``start``, in order; ``post_batch_token`` is its latest post-batch resume
    token.  The end is the last event within ``max_events`` (and at or before ``target``, the
    position fixed for an available-now run); with no events it is ``start`` itself, except
    that after ``quiet_advance_seconds`` without events the offset moves to the post-batch
    token, so a restart after a long quiet time does not resume from a position the oplog has
    dropped.  A run with a ``target`` moves to it as soon as nothing is left before it: in the
    same batch when the read-ahead reached the target with every event before it within the
    limit, so that no empty batch follows only to move the offset there.

    ``position`` is where the stream stood when the read-ahead began (a token, with the
    operation time it was read at; for an available-now run, the target).  With no limit, a
    batch whose first event is at or before it ends there: every event up to it belongs to the
    batch, so the read-ahead needs one event to know that the batch is not empty, not every
    token."""
    events = [(token, ts) for token, ts in seen if start.is_before(token)]
    if target is not None:
        events = [(token, ts) for token, ts in events if token <= target]
    if max_events is not None and max_events < 1:
        raise ValueError("maxEventsPerBatch must be at least 1")
    complete = max_events is None or len(events) <= max_events
    if max_events is not None:
        events = events[:max_events]
    if events and max_events is None and position is not None and position.token is not None:
        if events[0][0] <= position.token and (target is None or position.token <= target):
            token, ts = events[-1]
            if token <= position.token:
                return StreamOffset(token=position.token, cluster_time=position.cluster_time or ts)
            return StreamOffset(token=token, cluster_time=ts or position.cluster_time)
    if events:
        token, ts = events[-1]
        cluster_time = ts or start.cluster_time
        if target is not None and complete and post_batch_token is not None and post_batch_token >= target:
            return StreamOffset(token=target, cluster_time=cluster_time)
        return StreamOffset(token=token, cluster_time=cluster_time)
    if post_batch_token is None or not start.is_before(post_batch_token):
        return start
    if target is not None:
        if start.is_before(target) and post_batch_token >= target:
            return StreamOffset(token=target, cluster_time=start.cluster_time)
        return start
    if quiet_seconds >= quiet_advance_seconds:
        return StreamOffset(token=post_batch_token, cluster_time=start.cluster_time)
    return start


class Verdict(enum.Enum):
    """What a batch reader does with an event."""

    KEEP = "keep"  # inside the batch, more may follow
    KEEP_AND_STOP = "keep and stop"  # the batch's end event
    STOP = "stop"  # past the end: not part of this batch


@attrs.frozen
class TokenRange:
    """The events of one micro-batch: after ``start``, at or before ``end`` (a token)."""

    start: StreamOffset
    end: str

    def verdict(self, token: str) -> Verdict:
        if token > self.end:
            return Verdict.STOP
        if token == self.end:
            return Verdict.KEEP_AND_STOP
        return Verdict.KEEP

    def reached_by(self, post_batch_token: str | None) -> bool:
        """Whether the server has scanned up to the end (nothing of this batch is left)."""
        return post_batch_token is not None and post_batch_token >= self.end

    @property
    def empty(self) -> bool:
        return not self.start.is_before(self.end)
