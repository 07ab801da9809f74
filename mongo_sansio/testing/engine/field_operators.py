"""``$getField``, ``$setField`` and ``$unsetField``: reading and writing one field by its name,
whatever the name holds (dots, a leading ``$``), where a field path cannot name it.

Hooked into :mod:`.expressions`' table of operators that parse their own argument; each
compile function is given the expression compiler (it cannot import it: the table lives there).
As in mongod 7.0, ``field`` is a constant known when the pipeline is parsed: a string that is not
a field path, or ``{$literal: <string>}``; anything else is refused then, before any document is
read.  A ``value`` that evaluates to nothing ($$REMOVE, an absent field) removes the field.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from mongo_sansio.testing.engine.errors import location
from mongo_sansio.testing.engine.order import MISSING, type_name

__all__ = ["compile_get_field", "compile_set_field", "compile_unset_field"]

Compiled = Callable[[Any, Mapping[str, Any]], Any]
Compiler = Callable[[Any], Compiled]

_CURRENT = "$$CURRENT"

# mongod's codes, by operator: unknown argument, missing field, missing value, missing input,
# field path given as field, field not constant, field not a string, input not an object.
_CODES: dict[str, dict[str, int]] = {
    "$getField": {"unknown": 3041701, "no_field": 3041702, "path": 5654600, "constant": 5654601,
                  "string": 5654602, "object": 3041705},
    "$setField": {"unknown": 4161101, "no_field": 4161102, "no_value": 4161103, "no_input": 4161109,
                  "path": 4161108, "constant": 4161106, "string": 4161107, "object": 4161105,
                  "argument": 4161100},
    "$unsetField": {"unknown": 4161101, "no_field": 4161102, "no_input": 4161109, "path": 4161108,
                    "constant": 4161106, "string": 4161107, "object": 4161105, "argument": 4161100},
}


def _field_name(name: str, field: Any) -> str:
    """The constant field name, checked as mongod checks it when parsing."""
    codes = _CODES[name]
    if isinstance(field, str):
        if field.startswith("$"):
            raise location(
                codes["path"],
                f"A field path reference which is not allowed in this context. Did you mean {{$literal: '{field}'}}?",
            )
        return field
    if isinstance(field, Mapping) and list(field) == ["$literal"]:
        field = field["$literal"]
        if isinstance(field, str):
            return field
    elif isinstance(field, Mapping | list):
        # an object or array is an expression mongod does not fold to a constant here
        # (mongod 7.0 names $setField in this message for $unsetField too)
        operator = "$getField" if name == "$getField" else "$setField"
        raise location(codes["constant"], f"{operator} requires 'field' to evaluate to a constant, but got a non-constant argument")
    raise location(codes["string"], f"{name} requires 'field' to evaluate to type String, but got {type_name(field)}")


def _input_object(name: str, value: Any) -> Any:
    """The input document, None when it is null or missing (the answer is then null)."""
    if value is None or value is MISSING:
        return None
    if not isinstance(value, Mapping):
        raise location(_CODES[name]["object"], f"{name} requires 'input' to evaluate to type Object")
    return value


def _check_keys(name: str, spec: Mapping[str, Any], allowed: tuple[str, ...]) -> None:
    for key in spec:
        if key not in allowed:
            raise location(_CODES[name]["unknown"], f"{name} found an unknown argument: {key}")


def compile_get_field(argument: Any, compile_expression: Compiler) -> Compiled:
    """``{$getField: {field, input}}``, or ``{$getField: <field>}`` for the current document.
    An object whose first key is an operator is the short form's field, not the long form."""
    name = "$getField"
    long_form = isinstance(argument, Mapping) and not (argument and str(next(iter(argument))).startswith("$"))
    if long_form:
        _check_keys(name, argument, ("field", "input"))
        if "field" not in argument:
            raise location(_CODES[name]["no_field"], "$getField requires 'field' to be specified")
        field = _field_name(name, argument["field"])
        source = compile_expression(argument.get("input", _CURRENT))
    else:
        field = _field_name(name, argument)
        source = compile_expression(_CURRENT)

    def run(root: Any, variables: Mapping[str, Any]) -> Any:
        document = _input_object(name, source(root, variables))
        return None if document is None else document.get(field, MISSING)

    return run


def _compile_writer(name: str, argument: Any, compile_expression: Compiler) -> tuple[str, Compiled, Compiled | None]:
    codes = _CODES[name]
    if not isinstance(argument, Mapping):
        raise location(codes["argument"], f"{name} only supports an object as its argument")
    allowed = ("field", "input", "value") if name == "$setField" else ("field", "input")
    _check_keys(name, argument, allowed)
    if "field" not in argument:
        raise location(codes["no_field"], f"{name} requires 'field' to be specified")
    if name == "$setField" and "value" not in argument:
        raise location(codes["no_value"], f"{name} requires 'value' to be specified")
    if "input" not in argument:
        raise location(codes["no_input"], f"{name} requires 'input' to be specified")
    field = _field_name(name, argument["field"])
    value = compile_expression(argument["value"]) if name == "$setField" else None
    return field, compile_expression(argument["input"]), value


def compile_set_field(argument: Any, compile_expression: Compiler) -> Compiled:
    """``{$setField: {field, input, value}}``: ``input`` with the field set (in place when it
    is there, else last), or removed when ``value`` gives nothing."""
    field, source, compiled_value = _compile_writer("$setField", argument, compile_expression)
    value = compiled_value if compiled_value is not None else source  # (always given for $setField)

    def run(root: Any, variables: Mapping[str, Any]) -> Any:
        document = _input_object("$setField", source(root, variables))
        if document is None:
            return None
        out = dict(document)
        new = value(root, variables)
        if new is MISSING:
            out.pop(field, None)
        else:
            out[field] = new
        return out

    return run


def compile_unset_field(argument: Any, compile_expression: Compiler) -> Compiled:
    """``{$unsetField: {field, input}}``: ``input`` without the field."""
    field, source, _ = _compile_writer("$unsetField", argument, compile_expression)

    def run(root: Any, variables: Mapping[str, Any]) -> Any:
        document = _input_object("$unsetField", source(root, variables))
        if document is None:
            return None
        return {key: item for key, item in document.items() if key != field}

    return run
