"""Checks of the arguments PyMongo checks before sending anything, with PyMongo's error
classes and words, for the arguments whose checks are not the core's.

The core's command builders (:mod:`mongo_sansio.ops.crud_commands`) check what goes into a
command (filters, updates, documents, options) for every runtime; what is checked here is
what only the client layer sees: the ``session`` argument.
"""

from __future__ import annotations

from typing import Any

__all__ = ["check_session"]


def check_session(session: Any) -> Any:
    """``session`` when it is None or one of our clients' sessions; else PyMongo's
    ValueError (``'session' argument must be a ClientSession or None``)."""
    if session is not None and not hasattr(type(session), "core_session"):
        raise ValueError(f"'session' argument must be a ClientSession or None, not {type(session)}")
    return session
