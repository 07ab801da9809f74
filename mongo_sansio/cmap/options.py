"""Connection pool options (the specification's ConnectionPoolOptions), validated when built.

Input: option values, by Python name (``PoolOptions(max_pool_size=5)``) or by the connection
string's names (``PoolOptions.from_mapping({"maxPoolSize": 5})``).  Output: an immutable options
record, or a :class:`~mongo_sansio.errors.ConfigurationError` naming the bad option.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from mongo_sansio.errors import ConfigurationError

__all__ = ["PoolOptions"]

# Python name -> the specification's (and the connection string's) name
_SPEC_NAMES = {
    "max_pool_size": "maxPoolSize",
    "min_pool_size": "minPoolSize",
    "max_idle_time_ms": "maxIdleTimeMS",
    "max_connecting": "maxConnecting",
    "wait_queue_timeout_ms": "waitQueueTimeoutMS",
    "load_balanced": "loadBalanced",
    "populate_backoff_ms": "populateBackoffMS",
    "wait_queue_size": "waitQueueSize",
    "wait_queue_multiple": "waitQueueMultiple",
}
_PYTHON_NAMES = {spec: python for python, spec in _SPEC_NAMES.items()}


def _integer(name: str, value: object, minimum: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ConfigurationError(f"{name} must be an integer, not {value!r}")
    if value < minimum:
        raise ConfigurationError(f"{name} must be >= {minimum}, not {value!r}")


def _number(name: str, value: object, *, positive: bool = False) -> None:
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise ConfigurationError(f"{name} must be a number, not {value!r}")
    if not (value > 0 if positive else value >= 0):  # also rejects NaN
        raise ConfigurationError(f"{name} must be {'> 0' if positive else '>= 0'}, not {value!r}")
    if value == float("inf"):
        raise ConfigurationError(f"{name} must be finite, not {value!r}")


@attrs.frozen(kw_only=True)
class PoolOptions:
    """The pool's options.  Times are milliseconds, as in the specification.

    ``max_pool_size`` 0 means no limit; ``max_idle_time_ms`` and ``wait_queue_timeout_ms`` 0 mean
    no limit.  ``load_balanced`` keeps generations per serviceId (the load balancer spec).
    ``populate_backoff_ms`` is how long the pool waits, after a connection opened to satisfy
    ``min_pool_size`` failed, before opening another one (the spec's background-thread interval;
    it keeps a failing server from being hammered when SDAM does not clear the pool).
    ``wait_queue_size`` and ``wait_queue_multiple`` are legacy bounds a connection string may
    still give: they are reported (PoolCreated, the "Connection pool created" log message) as
    the CMAP spec's logging asks, and not enforced (None: not given).
    """

    max_pool_size: int = 100
    min_pool_size: int = 0
    max_idle_time_ms: float = 0
    max_connecting: int = 2
    wait_queue_timeout_ms: float = 0
    load_balanced: bool = False
    populate_backoff_ms: float = 1000.0
    wait_queue_size: int | None = None
    wait_queue_multiple: int | None = None

    def __attrs_post_init__(self) -> None:
        _integer("maxPoolSize", self.max_pool_size, 0)
        _integer("minPoolSize", self.min_pool_size, 0)
        if self.max_pool_size and self.min_pool_size > self.max_pool_size:
            raise ConfigurationError(
                f"minPoolSize ({self.min_pool_size}) must not exceed maxPoolSize"
                f" ({self.max_pool_size})"
            )
        _number("maxIdleTimeMS", self.max_idle_time_ms)
        _integer("maxConnecting", self.max_connecting, 1)
        _number("waitQueueTimeoutMS", self.wait_queue_timeout_ms)
        if not isinstance(self.load_balanced, bool):
            raise ConfigurationError(f"loadBalanced must be a boolean, not {self.load_balanced!r}")
        _number("populateBackoffMS", self.populate_backoff_ms, positive=True)
        for name, value in (("waitQueueSize", self.wait_queue_size), ("waitQueueMultiple", self.wait_queue_multiple)):
            if value is not None:
                _integer(name, value, 0)

    @classmethod
    def from_mapping(cls, options: Mapping[str, Any]) -> PoolOptions:
        """Build from the specification's option names; an unknown name is a ConfigurationError."""
        kwargs: dict[str, Any] = {}
        for name, value in options.items():
            python = _PYTHON_NAMES.get(name)
            if python is None:
                raise ConfigurationError(f"unknown connection pool option {name!r}")
            kwargs[python] = value
        return cls(**kwargs)

    def non_default(self) -> dict[str, Any]:
        """The options that differ from the defaults, by specification name (PoolCreated)."""
        defaults = PoolOptions()
        return {
            spec: getattr(self, python)
            for python, spec in _SPEC_NAMES.items()
            if getattr(self, python) != getattr(defaults, python)
        }
