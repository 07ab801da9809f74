"""The engine's one error type: a server error with mongod's code, codeName and errmsg.

Command handlers turn a :class:`CommandError` into mongod's reply shape with
:meth:`CommandError.to_document`; write paths turn it into a writeErrors entry.
"""

from __future__ import annotations

from typing import Any

from mongo_sansio.errors import MongoError

__all__ = [
    "CommandError",
    "bad_value",
    "failed_to_parse",
    "type_mismatch",
    "BAD_VALUE",
    "FAILED_TO_PARSE",
    "TYPE_MISMATCH",
]

BAD_VALUE = 2
FAILED_TO_PARSE = 9
TYPE_MISMATCH = 14


class CommandError(MongoError):
    """A server-side failure, as mongod reports it (``code``, ``code_name``, ``errmsg``).

    ``extra`` holds further reply fields (``keyPattern``/``keyValue`` for duplicate keys).
    """

    def __init__(self, code: int, code_name: str, errmsg: str, **extra: Any) -> None:
        super().__init__(errmsg)
        self.code = code
        self.code_name = code_name
        self.errmsg = errmsg
        self.extra = extra

    def to_document(self) -> dict[str, Any]:
        """The error as mongod's reply body: ``{ok: 0, errmsg, code, codeName, ...}``."""
        return {"ok": 0.0, "errmsg": self.errmsg, "code": self.code, "codeName": self.code_name, **self.extra}

    def __repr__(self) -> str:
        return f"CommandError({self.code}, {self.code_name!r}, {self.errmsg!r})"


def bad_value(errmsg: str) -> CommandError:
    return CommandError(BAD_VALUE, "BadValue", errmsg)


def failed_to_parse(errmsg: str) -> CommandError:
    return CommandError(FAILED_TO_PARSE, "FailedToParse", errmsg)


def type_mismatch(errmsg: str) -> CommandError:
    return CommandError(TYPE_MISMATCH, "TypeMismatch", errmsg)


def location(code: int, errmsg: str) -> CommandError:
    """mongod's numbered assertions without a symbolic name are reported as ``Location<code>``."""
    return CommandError(code, f"Location{code}", errmsg)
