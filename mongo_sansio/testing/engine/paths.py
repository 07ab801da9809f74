"""Dotted paths: reading them the way the query language does, writing them the way updates do.

Reading (``lookup``) traverses arrays: ``a.b`` over ``{a: [{b: 1}, {b: 2}]}`` reaches both
``b`` values, and a numeric component also indexes an array (``a.0.b``).  Writing (``set_path``,
``unset_path``) never fans out: a numeric component indexes an array, missing intermediate
documents are created, and a scalar in the way is mongod's PathNotViable (28).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mongo_sansio.testing.engine.errors import CommandError
from mongo_sansio.testing.engine.order import MISSING, render

__all__ = [
    "split_path",
    "lookup",
    "lookup_leaves",
    "get_path",
    "set_path",
    "unset_path",
    "is_index",
]


def split_path(path: str) -> list[str]:
    return path.split(".")


def is_index(part: str) -> bool:
    return part.isdigit() and part.isascii()


def lookup(value: Any, parts: list[str]) -> list[Any]:
    """Every value reachable at the path, with MISSING where a document lacks the field.

    Arrays met along the way are traversed (each document element continues the path), and a
    numeric component also selects the element at that index.  The value at the end of the
    path is returned as it is (an array at the leaf is not expanded here).
    """
    out: list[Any] = []
    _lookup(value, parts, 0, out)
    return out


def _lookup(value: Any, parts: list[str], i: int, out: list[Any]) -> None:
    if i == len(parts):
        out.append(value)
        return
    part = parts[i]
    if isinstance(value, Mapping):
        if part in value:
            _lookup(value[part], parts, i + 1, out)
        else:
            out.append(MISSING)
        return
    if isinstance(value, list):
        if is_index(part):
            index = int(part)
            if index < len(value):
                _lookup(value[index], parts, i + 1, out)
        for element in value:
            # documents in the array continue the path; scalars and nested arrays end it
            if isinstance(element, Mapping):
                _lookup(element, parts, i, out)
        return
    out.append(MISSING)


def lookup_leaves(value: Any, parts: list[str]) -> list[Any]:
    """Like :func:`lookup` without MISSING entries."""
    return [v for v in lookup(value, parts) if v is not MISSING]


def get_path(document: Any, parts: list[str]) -> Any:
    """The single value at the path without array fan-out (numeric components index arrays);
    MISSING when any step is absent.  Updates and $sort-by-field use it."""
    value = document
    for part in parts:
        if isinstance(value, Mapping):
            if part not in value:
                return MISSING
            value = value[part]
        elif isinstance(value, list) and is_index(part):
            index = int(part)
            if index >= len(value):
                return MISSING
            value = value[index]
        else:
            return MISSING
    return value


def path_not_viable(part: str, container: Any) -> CommandError:
    return CommandError(28, "PathNotViable", f"Cannot create field '{part}' in element {{{_render_field(container)}}}")


def _render_field(container: Any) -> str:
    text = render(container)
    return text[2:-2] if text.startswith("{ ") else text


def set_path(document: dict[str, Any], parts: list[str], value: Any) -> None:
    """Store ``value`` at the path, creating documents on the way (an update's $set)."""
    container: Any = document
    for i, part in enumerate(parts[:-1]):
        nxt = _child(container, part, parts, i)
        if nxt is MISSING:
            nxt = {}
            _store(container, part, nxt)
        elif not isinstance(nxt, dict | list):
            raise CommandError(
                28, "PathNotViable",
                f"Cannot create field '{parts[i + 1]}' in element {{{part}: {render(nxt)}}}",
            )
        container = nxt
    _store(container, parts[-1], value)


def _child(container: Any, part: str, parts: list[str], i: int) -> Any:
    if isinstance(container, dict):
        return container.get(part, MISSING)
    if isinstance(container, list):
        if not is_index(part):
            raise CommandError(
                28, "PathNotViable",
                f"Cannot create field '{part}' in element {{{parts[i - 1] if i else ''}: {render(container)}}}",
            )
        index = int(part)
        return container[index] if index < len(container) else MISSING
    return MISSING


def _store(container: Any, part: str, value: Any) -> None:
    if isinstance(container, dict):
        container[part] = value
        return
    if not is_index(part):
        raise CommandError(28, "PathNotViable", f"Cannot create field '{part}' in element {render(container)}")
    index = int(part)
    if index >= len(container):
        # mongod pads with nulls up to the index it was asked to set
        container.extend([None] * (index + 1 - len(container)))
    container[index] = value


def unset_path(document: dict[str, Any], parts: list[str]) -> bool:
    """Remove the field at the path (an array element becomes null, as $unset does);
    returns whether anything was there."""
    container: Any = document
    for part in parts[:-1]:
        container = get_path(container, [part])
        if not isinstance(container, dict | list):
            return False
    last = parts[-1]
    if isinstance(container, dict):
        if last in container:
            del container[last]
            return True
        return False
    if isinstance(container, list) and is_index(last) and int(last) < len(container):
        container[int(last)] = None
        return True
    return False
