"""Command-level ``let`` variables (find, aggregate, update, delete, findAndModify).

Inputs: the command's ``let`` document and the filters, pipelines and projections it applies
to.  Outputs: the same values with every ``$$name`` of a ``let`` variable replaced by
``{$literal: value}`` (``$$name.path`` by the value at that path), so the engine's compilers
need no new parameter.  mongod evaluates ``let`` once per command, before any document, so a
variable is a constant for the command and substituting it is equivalent.

Only aggregation contexts are rewritten: the ``$expr`` parts of a query filter, pipelines and
projections; a query operand such as ``{name: "$$x"}`` is a plain string to mongod and stays
one.  System variables (``$$ROOT``, ``$$NOW``...) are never ``let`` names (mongod requires a
lowercase first letter), and a ``$literal`` is left alone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from mongo_sansio.testing.engine.errors import CommandError
from mongo_sansio.testing.engine.expressions import evaluate
from mongo_sansio.testing.engine.order import MISSING, copy_value

__all__ = ["bind_expression", "bind_filter", "let_values"]


def let_values(let: Any, *, rand: Callable[[], float] | None = None) -> dict[str, Any]:
    """The command's variables: each ``let`` expression evaluated once, without a document.
    ``rand`` draws the value of a variable that is ``{$rand: {}}`` (the engine has no
    randomness of its own; the server passes its seeded source)."""
    if let is None:
        return {}
    if not isinstance(let, Mapping):
        raise CommandError(14, "TypeMismatch", "BSON field 'let' is the wrong type, expected type 'object'")
    values: dict[str, Any] = {}
    for name, expression in let.items():
        if not isinstance(name, str) or not name or not (name[0].islower() or not name[0].isascii()):
            raise CommandError(16867, "Location16867", f"'{name}' starts with an invalid character for a user variable name")
        if rand is not None and isinstance(expression, Mapping) and list(expression) == ["$rand"]:
            values[name] = rand()
            continue
        values[name] = evaluate(expression, {}, values)
    return values


def bind_filter(filter_: Any, values: Mapping[str, Any]) -> Any:
    """A query filter with the variables of its ``$expr`` parts bound."""
    if not values or not isinstance(filter_, Mapping):
        return filter_
    out: dict[str, Any] = {}
    for key, value in filter_.items():
        if key == "$expr":
            out[key] = bind_expression(value, values)
        elif key in ("$and", "$or", "$nor") and isinstance(value, list):
            out[key] = [bind_filter(clause, values) for clause in value]
        else:
            out[key] = value
    return out


def bind_expression(value: Any, values: Mapping[str, Any]) -> Any:
    """An aggregation value (expression, stage, pipeline, projection) with the variables bound."""
    if not values:
        return value
    if isinstance(value, str) and value.startswith("$$"):
        name, _, path = value[2:].partition(".")
        if name in values:
            return {"$literal": copy_value(_at_path(values[name], path))}
        return value
    if isinstance(value, list):
        return [bind_expression(item, values) for item in value]
    if isinstance(value, Mapping):
        if list(value) == ["$literal"]:
            return value
        return {key: bind_expression(item, values) for key, item in value.items()}
    return value


def _at_path(value: Any, path: str) -> Any:
    for part in path.split(".") if path else []:
        if not isinstance(value, Mapping) or part not in value:
            return None  # a missing field of a variable evaluates to missing (null here)
        value = value[part]
    return None if value is MISSING else value
