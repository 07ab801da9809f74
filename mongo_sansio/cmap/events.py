"""CMAP monitoring events: what the pool tells subscribers (the specification's event list).

Every event is a frozen, slotted, keyword-only attrs record validated when built, carrying every
field the specification names.  Field names are Python spellings of the spec's
(``connection_id`` for ``connectionId``, ``service_id`` for ``serviceId``, ...).  Durations are
seconds (floats), measured on the caller's ``now`` clock, like every time in the core.

The pool emits these in order through its output queue, interleaved with its actions
(``mongo_sansio.cmap.actions``); adapters publish them to listeners and loggers.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import attrs

from mongo_sansio.bson.objectid import ObjectId

__all__ = [
    "ConnectionClosedReason",
    "CheckOutFailedReason",
    "PoolEvent",
    "PoolCreated",
    "PoolReady",
    "PoolCleared",
    "PoolClosed",
    "ConnectionCreated",
    "ConnectionReady",
    "ConnectionClosed",
    "ConnectionCheckOutStarted",
    "ConnectionCheckOutFailed",
    "ConnectionCheckedOut",
    "ConnectionCheckedIn",
]


class ConnectionClosedReason(enum.StrEnum):
    """Why a connection left the pool (ConnectionClosedEvent.reason)."""

    STALE = "stale"
    IDLE = "idle"
    ERROR = "error"
    POOL_CLOSED = "poolClosed"


class CheckOutFailedReason(enum.StrEnum):
    """Why a check-out failed (ConnectionCheckOutFailedEvent.reason)."""

    POOL_CLOSED = "poolClosed"
    TIMEOUT = "timeout"
    CONNECTION_ERROR = "connectionError"


def _address(instance: object, attribute: attrs.Attribute[str], value: object) -> None:
    if not isinstance(value, str) or not value:
        raise TypeError(f"{attribute.name} must be a non-empty string, not {value!r}")


def _connection_id(instance: object, attribute: attrs.Attribute[int], value: object) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{attribute.name} must be a positive integer, not {value!r}")


def _duration(instance: object, attribute: attrs.Attribute[float], value: object) -> None:
    if not isinstance(value, int | float) or isinstance(value, bool) or not value >= 0:
        raise ValueError(f"{attribute.name} must be a non-negative number of seconds: {value!r}")


def _frozen_mapping(value: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(dict(value))


_optional_error = attrs.validators.optional(attrs.validators.instance_of(BaseException))


@attrs.frozen(kw_only=True)
class PoolEvent:
    """Base of every CMAP event: the address of the server the pool connects to."""

    address: str = attrs.field(validator=_address)


@attrs.frozen(kw_only=True)
class PoolCreated(PoolEvent):
    """The pool was created; ``options`` holds the options that differ from the defaults."""

    options: Mapping[str, Any] = attrs.field(converter=_frozen_mapping, hash=False)


@attrs.frozen(kw_only=True)
class PoolReady(PoolEvent):
    """The pool was marked ready: check-outs and background connections may proceed."""


@attrs.frozen(kw_only=True)
class PoolCleared(PoolEvent):
    """The pool (or, load-balanced, one service's connections) was cleared."""

    service_id: ObjectId | None = attrs.field(
        default=None, validator=attrs.validators.optional(attrs.validators.instance_of(ObjectId))
    )
    interrupt_in_use_connections: bool = attrs.field(
        default=False, validator=attrs.validators.instance_of(bool)
    )


@attrs.frozen(kw_only=True)
class PoolClosed(PoolEvent):
    """The pool was closed."""


@attrs.frozen(kw_only=True)
class ConnectionCreated(PoolEvent):
    """A connection was created (pending; not yet established)."""

    connection_id: int = attrs.field(validator=_connection_id)


@attrs.frozen(kw_only=True)
class ConnectionReady(PoolEvent):
    """A connection finished its handshake; ``duration`` is the time since ConnectionCreated."""

    connection_id: int = attrs.field(validator=_connection_id)
    duration: float = attrs.field(validator=_duration)


@attrs.frozen(kw_only=True)
class ConnectionClosed(PoolEvent):
    """A connection left the pool; ``error`` is set when ``reason`` is ``error`` and known."""

    connection_id: int = attrs.field(validator=_connection_id)
    reason: ConnectionClosedReason = attrs.field(
        validator=attrs.validators.instance_of(ConnectionClosedReason)
    )
    error: BaseException | None = attrs.field(default=None, validator=_optional_error, eq=False)


@attrs.frozen(kw_only=True)
class ConnectionCheckOutStarted(PoolEvent):
    """A check-out began."""


@attrs.frozen(kw_only=True)
class ConnectionCheckOutFailed(PoolEvent):
    """A check-out failed; ``duration`` is the time since ConnectionCheckOutStarted."""

    reason: CheckOutFailedReason = attrs.field(
        validator=attrs.validators.instance_of(CheckOutFailedReason)
    )
    duration: float = attrs.field(validator=_duration)
    error: BaseException | None = attrs.field(default=None, validator=_optional_error, eq=False)


@attrs.frozen(kw_only=True)
class ConnectionCheckedOut(PoolEvent):
    """A check-out succeeded; ``duration`` is the time since ConnectionCheckOutStarted."""

    connection_id: int = attrs.field(validator=_connection_id)
    duration: float = attrs.field(validator=_duration)


@attrs.frozen(kw_only=True)
class ConnectionCheckedIn(PoolEvent):
    """A connection was checked back in."""

    connection_id: int = attrs.field(validator=_connection_id)
