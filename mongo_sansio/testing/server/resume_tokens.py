"""Change-stream resume tokens: ``{_data: <hex string>}``, opaque to drivers, ordered as the oplog.

Inputs: a :class:`TokenKey` (an oplog position) and, for events, the document key.  Outputs:
the token document (:func:`encode_token`) and back (:func:`decode_token`).

The hex string is fixed-width upper-case hex fields followed by the document key's BSON in hex,
so comparing two ``_data`` strings compares positions in the oplog:

======== ====== ==============================================================================
field    digits meaning
======== ====== ==============================================================================
time     8      the entry's Timestamp seconds
inc      8      the entry's Timestamp increment
index    4      the operation's index inside the entry (0, or its place in a transaction);
                ``FFFF`` in a high-water mark that covers every event of that Timestamp
type     2      00 high-water mark (a scanned position, no event), 01 event, 02 invalidate
fragment 4      0 for a whole event; 1..N for a ``$changeStreamSplitLargeEvent`` fragment
======== ====== ==============================================================================

A high-water mark with index 0 sorts before every event of its Timestamp (a stream starting
there sees them); with index ``FFFF`` after them (a stream resuming there skips them).  An
invalidate sorts after the command event that caused it at the same Timestamp, so
``startAfter`` an invalidate token starts past both.  The layout is this simulator's own;
mongod's tokens are KeyString-encoded and different, which drivers never notice.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from mongo_sansio.bson import Timestamp, encode
from mongo_sansio.testing.engine import CommandError

__all__ = ["HIGH_WATER", "EVENT", "INVALIDATE", "LAST_INDEX", "TokenKey", "encode_token", "decode_token"]

HIGH_WATER = 0
EVENT = 1
INVALIDATE = 2
LAST_INDEX = 0xFFFF
_PREFIX = 8 + 8 + 4 + 2 + 4


@attrs.frozen(order=True)
class TokenKey:
    """An oplog position; ordering follows the fields in order (as the hex string does)."""

    time: int
    inc: int
    index: int = 0
    type: int = EVENT
    fragment: int = 0

    @property
    def ts(self) -> Timestamp:
        return Timestamp(self.time, self.inc)

    @classmethod
    def before(cls, ts: Timestamp) -> TokenKey:
        """A high-water mark just before every event at ``ts`` (startAtOperationTime)."""
        return cls(ts.time, ts.inc, 0, HIGH_WATER)

    @classmethod
    def after(cls, ts: Timestamp) -> TokenKey:
        """A high-water mark just after every event at ``ts`` (everything there was seen)."""
        return cls(ts.time, ts.inc, LAST_INDEX, HIGH_WATER)


def encode_token(key: TokenKey, document_key: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The token document ``{_data: hex}`` for ``key`` (and the event's document key)."""
    # (%-formatting: half the cost of the same format as an f-string, paid once an event)
    data = "%08X%08X%04X%02X%04X" % (key.time, key.inc, key.index, key.type, key.fragment)  # noqa: UP031
    if document_key is not None:
        data += encode(document_key).hex().upper()
    return {"_data": data}


def decode_token(token: Any) -> TokenKey:
    """The position in ``token`` (a resume token document); InvalidResumeToken (260) if it is
    not one of this simulator's tokens."""
    data = token.get("_data") if isinstance(token, Mapping) else None
    if not isinstance(data, str) or len(data) < _PREFIX:
        raise CommandError(260, "InvalidResumeToken", f"Invalid resume token: {token!r}")
    try:
        return TokenKey(
            int(data[0:8], 16), int(data[8:16], 16), int(data[16:20], 16), int(data[20:22], 16), int(data[22:26], 16)
        )
    except ValueError:
        raise CommandError(260, "InvalidResumeToken", f"Invalid resume token: {token!r}") from None
