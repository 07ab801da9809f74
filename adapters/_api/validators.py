"""Checks of the arguments PyMongo checks before sending anything, with PyMongo's error
classes and words, for the arguments whose checks are not the core's.

The core's command builders (:mod:`mongo_sansio.ops.crud_commands`) check what goes into a
command (filters, updates, documents, options) for every runtime; what is checked here is
what only the client layer sees (the ``session`` argument), and what PyMongo checks when a
method is called while our command is built later (a find cursor's options, checked by
``find()`` and by each option method, before the first document; a change stream's
pipeline).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "check_collation",
    "check_find_arguments",
    "check_hint",
    "check_pipeline",
    "check_projection",
    "check_session",
    "check_sort",
]


def check_session(session: Any) -> Any:
    """``session`` when it is None or one of our clients' sessions; else PyMongo's
    ValueError (``'session' argument must be a ClientSession or None``)."""
    if session is not None and not hasattr(type(session), "core_session"):
        raise ValueError(f"'session' argument must be a ClientSession or None, not {type(session)}")
    return session


def check_pipeline(pipeline: Any) -> Any:
    """A change stream's (or aggregate's) pipeline: None or a list; PyMongo's TypeError."""
    if pipeline is not None and not isinstance(pipeline, list | tuple):
        raise TypeError(f"pipeline must be a list, not {type(pipeline)}")
    return pipeline


def check_sort(key_or_list: Any) -> Any:
    """``sort``'s spec (a key with a direction given apart, pairs, or a mapping)."""
    if key_or_list is not None and not isinstance(key_or_list, str | list | tuple | Mapping):
        raise TypeError("if no direction is specified, key_or_list must be an instance of list")
    return key_or_list


def check_hint(index: Any) -> Any:
    """``hint``: an index name, pairs or a mapping."""
    if index is not None and not isinstance(index, str | list | tuple | Mapping):
        raise TypeError(
            f"must use a dictionary or a list of (key, direction) pairs, not: {index!r}"
        )
    return index


def check_collation(collation: Any) -> Any:
    """``collation``: a mapping or a Collation object (its ``document``), or None."""
    if collation is not None and not isinstance(collation, Mapping):
        if not isinstance(getattr(collation, "document", None), Mapping):
            raise TypeError("collation must be a dict, an instance of collation.Collation, or None")
    return collation


def check_projection(projection: Any) -> Any:
    """``projection``: a mapping or a list of field names, or None."""
    if projection is not None and not isinstance(projection, Mapping | list | tuple):
        raise TypeError("projection must be a mapping or list of key names")
    return projection


_FIND_INTEGERS = ("skip", "limit", "batch_size")
_FIND_BOOLEANS = ("no_cursor_timeout", "allow_partial_results", "return_key", "show_record_id")


def check_find_arguments(projection: Any, options: Mapping[str, Any]) -> None:
    """What PyMongo checks when ``find()`` is called (before the first document): the
    projection, integer and boolean options, ``cursor_type``, ``sort``, ``hint`` and
    ``collation``."""
    check_projection(projection)
    if not options:
        return
    for name in _FIND_INTEGERS:
        value = options.get(name)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
            raise TypeError(f"{name} must be an instance of int, not {type(value)}")
    for name in _FIND_BOOLEANS:
        value = options.get(name)
        if value is not None and not isinstance(value, bool):
            raise TypeError(f"{name} must be True or False, was: {name}={value}")
    cursor_type = options.get("cursor_type")
    if cursor_type is not None and getattr(cursor_type, "value", cursor_type) not in (0, 2, 34):
        raise ValueError("not a valid value for cursor_type")
    check_sort(options.get("sort"))
    check_hint(options.get("hint"))
    check_collation(options.get("collation"))
