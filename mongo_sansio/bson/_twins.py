"""Our value classes beside PyMongo's ``bson`` classes of the same name, without importing it.

Code moved over from PyMongo mixes both: a ``bson.ObjectId`` the user made and ours read back
must compare equal, and hash alike.  Each of our classes carries PyMongo's ``_type_marker`` for
its kind (PyMongo's ``json_util`` and encoder dispatch on it, so they take our values too), and
recognises PyMongo's values by :func:`pymongo_marker`: the marker of the class's nearest base
defined in a ``bson`` module.  PyMongo's ``__eq__`` returns NotImplemented for a class it does
not know (ObjectId, Decimal128, Timestamp, Regex, DBRef), so Python then asks ours, and
``theirs == ours`` holds too; Binary, Code, MinKey and MaxKey answer False themselves.
"""

from __future__ import annotations

__all__ = ["pymongo_marker"]

_SEEN: dict[type, int | None] = {}


def pymongo_marker(cls: type) -> int | None:
    """The ``_type_marker`` of PyMongo's bson class ``cls`` is (or derives from), None for
    any other class (ours included)."""
    try:
        return _SEEN[cls]
    except KeyError:
        pass
    marker = None
    for base in cls.__mro__:
        module = base.__module__
        if module == "bson" or module.startswith("bson."):
            found = base.__dict__.get("_type_marker")
            if type(found) is int:
                marker = found
                break
    if len(_SEEN) >= 256:
        _SEEN.clear()
    _SEEN[cls] = marker
    return marker
