"""Reading integers out of server replies.

Servers send counts, codes and sizes as int32, int64 or, from some paths (and from drivers
that wrote them), as integral doubles.  :func:`whole_number` is the one place that reads such a
field: every check of a reply that wants an integer goes through it.  :func:`is_int` is the
stricter test of an argument or field that must be an integer itself (no bool, no double).
"""

from __future__ import annotations

from typing import TypeGuard

__all__ = ["is_int", "whole_number"]


def is_int(value: object) -> TypeGuard[int]:
    """Whether ``value`` is an integer and not a bool (an Int64 is one)."""
    # (the exact type first: the usual case, without the two isinstance calls)
    return type(value) is int or (isinstance(value, int) and not isinstance(value, bool))


def whole_number(value: object) -> int | None:
    """``value`` as an ``int`` when it is an integer (not a bool) or an integral double;
    None for anything else (NaN and the infinities included)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None
