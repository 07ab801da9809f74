"""StateEnum: the base of the enums that key the state machines' transition tables.

Input: nothing but its members.  Output: enum members hashed by identity.  Members of an enum
are singletons compared by identity, so the identity hash (computed in C) is as good a hash
as Enum's own, which is a Python call that every ``TRANSITIONS[state, input]`` lookup on a
hot path (a command sent, a reply accepted, a check-out) would pay.
"""

from __future__ import annotations

import enum

__all__ = ["StateEnum"]


class StateEnum(enum.Enum):
    """An enum whose members hash by identity (see the module docstring)."""

    __hash__ = object.__hash__
