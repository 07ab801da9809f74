"""Connection strings for every runtime's client: parse, then show the parser's warnings.

Input: the ``host`` string and keyword options a client constructor received.  Output: the
parsed :class:`~mongo_sansio.uri.ConnectionString`, after each of its ``warnings`` (an ignored
unknown option, an invalid value dropped in favour of the default, a deprecated spelling) has
been emitted as a :class:`UserWarning` pointing at the user's line, as PyMongo does.

The decision (what is ignored, what is an error) stays in :mod:`mongo_sansio.uri`, which
returns warnings as data; only their emission lives here.  Errors are the parser's
:class:`~mongo_sansio.errors.ConfigurationError`: malformed text, invalid ``authSource`` or
``authMechanism`` values, conflicting options, and any invalid keyword option (keywords are
code and are validated strictly).

``stacklevel`` counts as :func:`warnings.warn` does, from the caller of these functions: a
client constructor called by the user passes 2.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from typing import Any

from mongo_sansio.uri import ConnectionString, parse_uri

__all__ = ["emit_uri_warnings", "parse_client_uri"]


def emit_uri_warnings(messages: Iterable[str], *, stacklevel: int) -> None:
    """Emit each message as a ``UserWarning`` ``stacklevel`` frames above the caller."""
    for message in messages:
        warnings.warn(message, UserWarning, stacklevel=stacklevel + 1)


def parse_client_uri(host: str, options: dict[str, Any], *, stacklevel: int) -> ConnectionString:
    """``parse_uri(host, **options)``, with the resulting warnings emitted.

    A ``mongodb+srv`` string's TXT record can add warnings later: emit those with
    ``emit_uri_warnings(resolved.warnings[len(parsed.warnings):], ...)``.
    """
    parsed = parse_uri(host, **options)
    emit_uri_warnings(parsed.warnings, stacklevel=stacklevel + 1)
    return parsed
