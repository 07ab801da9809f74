"""Write and read concerns: immutable values, validated when built, and the documents commands carry.

Inputs: the options a user or a connection string gives (``w``, ``wtimeoutMS``, ``journal``;
``readConcernLevel``).  Outputs: frozen :class:`WriteConcern` / :class:`ReadConcern` values,
the ``writeConcern`` / ``readConcern`` documents a command carries (:meth:`to_document`), and
whether a value is the server's default (then no document is sent at all: read-write-concern.md,
"Servers will use their default when a command does not carry one").  Invalid values raise
:class:`~mongo_sansio.errors.ConfigurationError` naming the option.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import attrs

from mongo_sansio._numbers import is_int
from mongo_sansio.errors import ConfigurationError

__all__ = [
    "WriteConcern",
    "ReadConcern",
    "DEFAULT_WRITE_CONCERN",
    "DEFAULT_READ_CONCERN",
]


def _check_w(_instance: Any, _attribute: Any, value: object) -> None:
    if value is None or isinstance(value, str):
        return
    if not is_int(value) or value < 0:
        raise ConfigurationError(
            f"w: must be a non-negative integer or a tag/mode name such as 'majority', "
            f"got {value!r}"
        )


def _check_wtimeout(_instance: Any, _attribute: Any, value: object) -> None:
    if value is not None and (not is_int(value) or value < 0):
        raise ConfigurationError(
            f"wtimeoutMS: must be a non-negative integer (milliseconds), got {value!r}"
        )


def _check_journal(_instance: Any, _attribute: Any, value: object) -> None:
    if value is not None and not isinstance(value, bool):
        raise ConfigurationError(f"journal: must be True or False, got {value!r}")


@attrs.frozen(kw_only=True, init=False)
class WriteConcern:
    """How many members must acknowledge a write, and how durably.

    ``w``: a member count (0 asks for no acknowledgement), ``"majority"`` or a custom mode
    name; ``wtimeout_ms``: how long the server waits for ``w`` before reporting a
    writeConcernError; ``journal``: wait for the on-disk journal.  Every field None is the
    server's default, which commands then do not mention.  ``w=0`` with ``journal=True`` is
    contradictory and refused.
    """

    w: int | str | None = attrs.field(default=None, validator=_check_w)
    wtimeout_ms: int | None = attrs.field(default=None, validator=_check_wtimeout)
    journal: bool | None = attrs.field(default=None, validator=_check_journal)

    def __init__(
        self,
        w: int | str | None = None,
        wtimeout: int | None = None,
        j: bool | None = None,
        fsync: bool | None = None,
        *,
        wtimeout_ms: int | None = None,
        journal: bool | None = None,
    ) -> None:
        """PyMongo's signature (``WriteConcern(w, wtimeout, j)``), or ours by keyword
        (``wtimeout_ms=``, ``journal=``).  ``fsync`` is accepted as PyMongo's alias of
        journaling (it implies it on every storage engine a replica set runs)."""
        if wtimeout is not None and wtimeout_ms is not None:
            raise ConfigurationError("wtimeout: give wtimeout or wtimeout_ms, not both")
        if j is not None and journal is not None:
            raise ConfigurationError("j: give j or journal, not both")
        if fsync is not None:
            if not isinstance(fsync, bool):
                raise ConfigurationError(f"fsync: must be True or False, got {fsync!r}")
            if j is not None or journal is not None:
                raise ConfigurationError("Can't set both j and fsync at the same time")
            journal = fsync or None
        self.__attrs_init__(
            w=w,
            wtimeout_ms=wtimeout if wtimeout_ms is None else wtimeout_ms,
            journal=j if journal is None else journal,
        )

    def __attrs_post_init__(self) -> None:
        if self.w == 0 and self.journal is True:
            raise ConfigurationError("journal: journal=True cannot be combined with w=0")

    @classmethod
    def from_document(cls, document: Mapping[str, Any]) -> WriteConcern:
        """Parse a ``writeConcern`` document (``{w, wtimeout, j}``); unknown fields are refused."""
        if not isinstance(document, Mapping):
            raise ConfigurationError(f"writeConcern: must be a document, got {document!r}")
        unknown = set(document) - {"w", "wtimeout", "j"}
        if unknown:
            raise ConfigurationError(f"writeConcern: unknown field(s) {sorted(unknown)}")
        return cls(
            w=document.get("w"), wtimeout_ms=document.get("wtimeout"), journal=document.get("j")
        )

    @property
    def acknowledged(self) -> bool:
        """False for ``w: 0`` (fire and forget): results then carry no counts."""
        return self.w != 0

    @property
    def is_server_default(self) -> bool:
        """True when nothing is set: commands carry no ``writeConcern``."""
        return self.w is None and self.wtimeout_ms is None and self.journal is None

    def to_document(self) -> dict[str, Any]:
        """The ``writeConcern`` document: ``w``, ``wtimeout``, ``j``, each only when set."""
        document: dict[str, Any] = {}
        if self.w is not None:
            document["w"] = self.w
        if self.wtimeout_ms is not None:
            document["wtimeout"] = self.wtimeout_ms
        if self.journal is not None:
            document["j"] = self.journal
        return document

    @property
    def document(self) -> dict[str, Any]:
        """PyMongo's name for :meth:`to_document`, its keys in PyMongo's order (``wtimeout``,
        ``j``, ``w``)."""
        document = self.to_document()
        if "w" in document and len(document) > 1:
            document["w"] = document.pop("w")
        return document


def _check_level(_instance: Any, _attribute: Any, value: object) -> None:
    # Any string is accepted: servers add levels, and the server is the judge of which it knows.
    if value is not None and (not isinstance(value, str) or not value):
        raise ConfigurationError(
            f"readConcernLevel: must be a non-empty string such as 'local' or 'majority', "
            f"got {value!r}"
        )


@attrs.frozen(kw_only=True, init=False)
class ReadConcern:
    """The consistency a read asks for (``"local"``, ``"majority"``, ``"linearizable"``,
    ``"available"``, ``"snapshot"``, or a future level).  ``level=None`` is the server's
    default, which commands then do not mention."""

    level: str | None = attrs.field(default=None, validator=_check_level)

    def __init__(self, level: str | None = None) -> None:
        """``ReadConcern("majority")`` as in PyMongo (or ``level=``)."""
        self.__attrs_init__(level=level)

    @classmethod
    def from_document(cls, document: Mapping[str, Any]) -> ReadConcern:
        """Parse a ``readConcern`` document (``{level}``)."""
        if not isinstance(document, Mapping):
            raise ConfigurationError(f"readConcern: must be a document, got {document!r}")
        return cls(level=document.get("level"))

    @property
    def is_server_default(self) -> bool:
        return self.level is None

    def to_document(self) -> dict[str, Any]:
        """The ``readConcern`` document: ``{level}``, or ``{}`` for the server default."""
        return {} if self.level is None else {"level": self.level}

    @property
    def document(self) -> dict[str, Any]:
        """PyMongo's name for :meth:`to_document`."""
        return self.to_document()


DEFAULT_WRITE_CONCERN: Final = WriteConcern()
"""The server's default write concern (no ``writeConcern`` is sent)."""

DEFAULT_READ_CONCERN: Final = ReadConcern()
"""The server's default read concern (no ``readConcern`` is sent)."""
