"""The data source's errors: each says what happened and what to do about it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "ChangeStreamHistoryLost",
    "EndTokenNotReached",
    "MongoDataSourceError",
    "MongoRowWriteError",
]


class MongoDataSourceError(Exception):
    """A bad option, or a read or write the data source could not finish."""


class ChangeStreamHistoryLost(MongoDataSourceError):
    """The stream's resume point is no longer in the oplog: the events after it are gone.

    Raised instead of skipping them.  ``offset`` is the resume point that could not be used."""

    def __init__(self, offset: str, cause: BaseException | None = None) -> None:
        self.offset = offset
        super().__init__(
            f"ChangeStreamHistoryLost: the change stream cannot resume from {offset}: that point "
            "has fallen off the oplog, so the events after it can no longer be read and would be "
            "missing from the output. Nothing was skipped; the query stopped. To go on, accept "
            "the gap and start a new query: use a new (or emptied) checkpoint folder, with "
            "startAt=latest, or an operation time (seconds[:increment]) still inside the oplog. "
            "A larger oplog, or running the query more often, keeps this from recurring."
            + (f" (server said: {cause})" if cause is not None else "")
        )


class EndTokenNotReached(MongoDataSourceError):
    """A micro-batch's reader could not reach the batch's end token in time."""

    def __init__(self, start: str, end: str, waited: float) -> None:
        super().__init__(
            f"the change stream did not reach this micro-batch's end token {end} (starting after "
            f"{start}) within {waited:.0f} s: the server no longer returns the events the batch "
            "was planned with (a stream started after its own end, a rolled-back write, or a "
            "different deployment). Refusing to wait for ever; raise endTokenTimeoutMS if the "
            "server is merely slow."
        )


class MongoRowWriteError(MongoDataSourceError):
    """A row the server refused; ``row_index`` counts rows in the failing task, ``row`` is the
    row as sent (its id fields name it), ``code``/``errmsg`` are the server's."""

    def __init__(
        self, row_index: int, row: Mapping[str, Any], code: Any, errmsg: str, *, failed: int = 1
    ) -> None:
        self.row_index = row_index
        self.row = dict(row)
        self.code = code
        self.errmsg = errmsg
        self.failed = failed
        more = f" ({failed - 1} more rows of this task failed too)" if failed > 1 else ""
        super().__init__(f"row {row_index} of this task was refused: {errmsg} (code {code}){more}")
