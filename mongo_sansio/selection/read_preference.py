"""Read preferences: the value, its validation, and the ``$readPreference`` a command carries.

Theory of operation
-------------------
A :class:`ReadPreference` is an immutable value: a :class:`Mode`, an ordered tuple of tag sets,
an optional ``maxStalenessSeconds`` and an optional ``hedge`` document.  Construction validates
what can be checked without a topology (server-selection.md, "Components of a read
preference"): tags and maxStalenessSeconds are refused with mode primary.  The rules that need
the client's settings -- ``maxStalenessSeconds`` against ``heartbeatFrequencyMS`` plus the idle
write period, and the 90-second floor -- are :func:`check_max_staleness`, which selection runs
for replica-set topologies only (max-staleness.md: mongos validates on its own).

Inputs: mode names, tag sets, maxStalenessSeconds, hedge documents (or one read preference
document); the topology type and server type a command goes to.
Outputs: frozen :class:`ReadPreference` values; the ``$readPreference`` document (or None) and the
legacy ``secondaryOk`` flag for a command; :class:`ConfigurationError` naming the option.

``hedge`` is accepted and validated (a document) but otherwise ignored: hedged reads are
deprecated since MongoDB 8.0, which ignores them, so selection never looks at it and no command
carries it.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any, ClassVar, Final

import attrs

from mongo_sansio.errors import ConfigurationError
from mongo_sansio.sdam.description import ServerType, TopologyType

__all__ = [
    "Mode",
    "ReadPreference",
    "TagSet",
    "IDLE_WRITE_PERIOD",
    "SMALLEST_MAX_STALENESS",
    "PRIMARY",
    "smallest_max_staleness",
    "check_max_staleness",
    "read_preference_document",
    "secondary_ok",
]

IDLE_WRITE_PERIOD: Final = 10.0
"""Seconds between the no-op writes of an idle primary (max-staleness.md, idleWritePeriodMS)."""
SMALLEST_MAX_STALENESS: Final = 90.0
"""The smallest maxStalenessSeconds a client accepts (max-staleness.md)."""

TagSet = Mapping[str, str]


class Mode(enum.Enum):
    """A read preference mode; values are the camel-case names a server understands."""

    PRIMARY = "primary"
    PRIMARY_PREFERRED = "primaryPreferred"
    SECONDARY = "secondary"
    SECONDARY_PREFERRED = "secondaryPreferred"
    NEAREST = "nearest"

    @classmethod
    def parse(cls, value: object) -> Mode:
        """A :class:`Mode`, or its name in any letter case (``"SecondaryPreferred"``)."""
        if isinstance(value, Mode):
            return value
        if isinstance(value, str):
            mode = _MODES_BY_LOWER_NAME.get(value.lower())
            if mode is not None:
                return mode
        choices = ", ".join(m.value for m in Mode)
        raise ConfigurationError(f"readPreference: expected one of {choices}, got {value!r}")


_MODES_BY_LOWER_NAME: Final = {m.value.lower(): m for m in Mode}


def _mode(value: Mode | str) -> Mode:
    return Mode.parse(value)


def _tag_sets(value: Iterable[Mapping[str, str]] | None) -> tuple[TagSet, ...]:
    if value is None:
        return (MappingProxyType({}),)
    if isinstance(value, Mapping) or isinstance(value, str | bytes):
        raise ConfigurationError(f"readPreferenceTags: expected a list of tag sets, got {value!r}")
    tag_sets: list[TagSet] = []
    for tag_set in value:
        if not isinstance(tag_set, Mapping):
            raise ConfigurationError(
                f"readPreferenceTags: a tag set must be a document: {tag_set!r}"
            )
        for name, tag in tag_set.items():
            if not isinstance(name, str) or not isinstance(tag, str):
                raise ConfigurationError(
                    f"readPreferenceTags: tags map strings to strings, got {name!r}: {tag!r}"
                )
        tag_sets.append(MappingProxyType(dict(tag_set)))
    return tuple(tag_sets)


def _max_staleness(value: object) -> int | None:
    if value is None or value == -1 and not isinstance(value, bool):
        return None  # -1 is the spec's spelling of "no maximum"
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ConfigurationError(
            f"maxStalenessSeconds: must be a positive integer or -1 (no maximum), got {value!r}"
        )
    return value


def _hedge(value: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ConfigurationError(f"hedge: must be a document, got {value!r}")
    return MappingProxyType(dict(value))


@attrs.frozen(kw_only=True, unsafe_hash=False)
class ReadPreference:
    """Which servers may serve a read (server-selection.md, "Read Preference").

    ``tag_sets`` defaults to ``({},)``, which matches every server; an empty tuple also matches
    every server.  ``max_staleness_seconds`` None (or -1 when given) means no maximum.
    Not hashable: tag sets are mappings.
    """

    mode: Mode = attrs.field(default=Mode.PRIMARY, converter=_mode)
    tag_sets: tuple[TagSet, ...] = attrs.field(default=None, converter=_tag_sets)
    max_staleness_seconds: int | None = attrs.field(default=None, converter=_max_staleness)
    hedge: Mapping[str, Any] | None = attrs.field(default=None, converter=_hedge)

    # PyMongo's spelling of the plain modes (``ReadPreference.SECONDARY``), set below
    PRIMARY: ClassVar[ReadPreference]
    PRIMARY_PREFERRED: ClassVar[ReadPreference]
    SECONDARY: ClassVar[ReadPreference]
    SECONDARY_PREFERRED: ClassVar[ReadPreference]
    NEAREST: ClassVar[ReadPreference]

    def __attrs_post_init__(self) -> None:
        if self.mode is Mode.PRIMARY:
            if self.has_tags:
                raise ConfigurationError(
                    "readPreferenceTags: tag sets cannot be used with readPreference=primary"
                )
            if self.max_staleness_seconds is not None:
                raise ConfigurationError(
                    "maxStalenessSeconds: cannot be used with readPreference=primary"
                )
            if self.hedge is not None:
                raise ConfigurationError("hedge: cannot be used with readPreference=primary")

    @classmethod
    def from_document(cls, document: Mapping[str, Any]) -> ReadPreference:
        """Parse ``{mode, tags | tag_sets, maxStalenessSeconds, hedge}`` (a ``$readPreference``
        document or the spec tests' form); a missing mode is primary (the default), unknown
        fields are ignored."""
        if not isinstance(document, Mapping):
            raise ConfigurationError(f"readPreference: must be a document, got {document!r}")
        tags = document.get("tags", document.get("tag_sets"))
        return cls(
            mode=document.get("mode", Mode.PRIMARY),
            tag_sets=tags,
            max_staleness_seconds=document.get("maxStalenessSeconds"),
            hedge=document.get("hedge"),
        )

    @property
    def name(self) -> str:
        """PyMongo's name of the mode (``"SecondaryPreferred"``)."""
        return self.mode.value[0].upper() + self.mode.value[1:]

    @property
    def mongos_mode(self) -> str:
        """PyMongo's name of the mode as ``$readPreference`` spells it (``"secondaryPreferred"``)."""
        return self.mode.value

    @property
    def max_staleness(self) -> int:
        """PyMongo's spelling of :attr:`max_staleness_seconds`: -1 for no maximum."""
        return -1 if self.max_staleness_seconds is None else self.max_staleness_seconds

    @property
    def document(self) -> dict[str, Any]:
        """PyMongo's name for :meth:`to_document`."""
        return self.to_document()

    @property
    def has_tags(self) -> bool:
        """Whether some tag set restricts anything (the default ``[{}]`` does not)."""
        return any(self.tag_sets)

    def to_document(self) -> dict[str, Any]:
        """The ``$readPreference`` document: mode, then tags and maxStalenessSeconds when set."""
        document: dict[str, Any] = {"mode": self.mode.value}
        if self.has_tags:
            document["tags"] = [dict(tag_set) for tag_set in self.tag_sets]
        if self.max_staleness_seconds is not None:
            document["maxStalenessSeconds"] = self.max_staleness_seconds
        return document

    def __str__(self) -> str:
        parts = [self.mode.value]
        if self.has_tags:
            parts.append(f"tag_sets={[dict(t) for t in self.tag_sets]!r}")
        if self.max_staleness_seconds is not None:
            parts.append(f"maxStalenessSeconds={self.max_staleness_seconds}")
        return f"ReadPreference({', '.join(parts)})"


PRIMARY: Final = ReadPreference()
"""The default read preference."""

ReadPreference.PRIMARY = PRIMARY
ReadPreference.PRIMARY_PREFERRED = ReadPreference(mode=Mode.PRIMARY_PREFERRED)
ReadPreference.SECONDARY = ReadPreference(mode=Mode.SECONDARY)
ReadPreference.SECONDARY_PREFERRED = ReadPreference(mode=Mode.SECONDARY_PREFERRED)
ReadPreference.NEAREST = ReadPreference(mode=Mode.NEAREST)


def smallest_max_staleness(heartbeat_frequency: float) -> float:
    """The smallest maxStalenessSeconds a replica set allows: max(90, heartbeat + 10 s)."""
    return max(SMALLEST_MAX_STALENESS, heartbeat_frequency + IDLE_WRITE_PERIOD)


def check_max_staleness(read_preference: ReadPreference, heartbeat_frequency: float) -> None:
    """Raise :class:`ConfigurationError` if maxStalenessSeconds is below
    :func:`smallest_max_staleness` (``heartbeat_frequency`` in seconds)."""
    max_staleness = read_preference.max_staleness_seconds
    if max_staleness is None:
        return
    smallest = smallest_max_staleness(heartbeat_frequency)
    if max_staleness < smallest:
        raise ConfigurationError(
            f"maxStalenessSeconds: must be at least {smallest:g} (the larger of 90 and "
            f"heartbeatFrequencyMS/1000 + 10), got {max_staleness}"
        )


_MONGOS_LIKE: Final = frozenset({ServerType.MONGOS, ServerType.LOAD_BALANCER})


def read_preference_document(
    read_preference: ReadPreference | None,
    topology_type: TopologyType,
    server_type: ServerType,
    *,
    is_write: bool = False,
) -> dict[str, Any] | None:
    """The ``$readPreference`` an OP_MSG command to this server carries, or None for none.

    server-selection.md: writes carry none; mongos and load balancers get it for every mode but
    primary; with topology type Single a standalone gets none and any other server type gets
    ``{mode: primaryPreferred}`` for primary (so that it accepts the read) and the preference
    itself otherwise; replica-set members get it for every mode but primary.
    """
    if is_write:
        return None
    read_preference = read_preference or PRIMARY
    primary = read_preference.mode is Mode.PRIMARY
    if topology_type is TopologyType.SINGLE and server_type not in _MONGOS_LIKE:
        if server_type is ServerType.STANDALONE:
            return None
        return {"mode": Mode.PRIMARY_PREFERRED.value} if primary else read_preference.to_document()
    return None if primary else read_preference.to_document()


def secondary_ok(
    read_preference: ReadPreference | None,
    topology_type: TopologyType,
    server_type: ServerType,
    *,
    is_write: bool = False,
) -> bool:
    """The legacy OP_QUERY ``SecondaryOk`` flag (used for the first hello and old servers):
    set for reads in every mode but primary, and always for a direct connection to a server
    that is neither a standalone nor a mongos."""
    if is_write:
        return False
    mode = (read_preference or PRIMARY).mode
    if topology_type is TopologyType.SINGLE and server_type not in _MONGOS_LIKE:
        return server_type is not ServerType.STANDALONE
    return mode is not Mode.PRIMARY
