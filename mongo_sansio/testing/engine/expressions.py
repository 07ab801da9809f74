"""Aggregation expressions: field paths, variables, literals and the common operators.

:func:`compile_expression` parses an expression once (so a bad operator is reported before any
document is read, as mongod does) into a callable ``(root, variables) -> value``.  ``$$ROOT`` is
``root``; ``$$CURRENT`` is ``variables["CURRENT"]`` when a stage sets it, else ``root``.  A field
that is absent evaluates to MISSING: objects built by an expression leave such fields out and
arrays turn them into null, as mongod does.  The operation's collation, when it has one, rides
in the variables (:func:`collation_variables`): comparisons ($eq, $cmp, $in, $min ...) of
strings use it, as mongod's expression context does.
"""

from __future__ import annotations

import datetime
import decimal
import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from mongo_sansio.bson import Decimal128, Int64, ObjectId, Undefined
from mongo_sansio.testing.engine.dates import compile_date_to_string
from mongo_sansio.testing.engine.errors import CommandError, bad_value, location, type_mismatch
from mongo_sansio.testing.engine.field_operators import (
    compile_get_field,
    compile_set_field,
    compile_unset_field,
)
from mongo_sansio.testing.engine.numbers import (
    arithmetic,
    binary_arithmetic,
    date_ms,
    is_date,
    ms_to_date,
)
from mongo_sansio.testing.engine.order import (
    MISSING,
    compare,
    is_number,
    numeric_value,
    type_name,
    values_equal,
    whole_number,
)
from mongo_sansio.testing.engine.stages_spark import to_hashed_index_key
from mongo_sansio.testing.engine.text import compile_meta

if TYPE_CHECKING:
    from mongo_sansio.testing.engine.collation import Collation

__all__ = [
    "COLLATION_VARIABLE", "Compiled", "collation_variables", "compile_expression", "evaluate",
    "truthy", "field_path_value",
]

Compiled = Callable[[Any, Mapping[str, Any]], Any]

#: Where the variables hold the operation's collation: no ``$$name`` reaches it (a variable's
#: name never starts with "$"), and $let and $map scopes copy it along with the rest.
COLLATION_VARIABLE = "$collation"


def collation_variables(collation: Collation | None) -> dict[str, Any]:
    """Variables that carry ``collation`` (none for the simple collation)."""
    return {COLLATION_VARIABLE: collation} if collation is not None else {}


def _collation(variables: Mapping[str, Any]) -> Collation | None:
    found: Collation | None = variables.get(COLLATION_VARIABLE)
    return found


def evaluate(expression: Any, root: Any, variables: Mapping[str, Any] | None = None) -> Any:
    """Evaluate ``expression`` against the document ``root``."""
    return compile_expression(expression)(root, variables or {})


def truthy(value: Any) -> bool:
    """Aggregation truthiness: false, null, missing, undefined and zero are false."""
    if value is None or value is MISSING or value is False or isinstance(value, Undefined):
        return False
    if is_number(value):
        return bool(numeric_value(value))  # NaN is truthy, as in mongod
    return True


def field_path_value(value: Any, parts: list[str]) -> Any:
    """A field path as aggregation reads it: arrays map over their document elements, and
    numeric components are field names, never indexes."""
    for i, part in enumerate(parts):
        if isinstance(value, Mapping):
            value = value.get(part, MISSING)
        elif isinstance(value, list):
            rest = parts[i:]
            mapped = [field_path_value(e, rest) for e in value if isinstance(e, Mapping | list)]
            return [m for m in mapped if m is not MISSING]
        else:
            return MISSING
    return value


def compile_expression(expression: Any) -> Compiled:
    """Parse an aggregation expression; errors are CommandErrors with mongod's codes."""
    if isinstance(expression, str) and expression.startswith("$"):
        return _compile_path(expression)
    if isinstance(expression, Mapping):
        keys = list(expression)
        if keys and isinstance(keys[0], str) and keys[0].startswith("$"):
            if len(keys) != 1:
                raise location(
                    15983,
                    "an expression specification must contain exactly one field, the name of "
                    f"the expression. Found {len(keys)} fields",
                )
            return _compile_operator(keys[0], expression[keys[0]])
        fields = {}
        for key, sub in expression.items():
            if key.startswith("$"):
                raise location(16410, f"FieldPath field names may not start with '$'. Given: {key}")
            fields[key] = compile_expression(sub)

        def build_object(root: Any, variables: Mapping[str, Any]) -> Any:
            out = {}
            for key, compiled in fields.items():
                value = compiled(root, variables)
                if value is not MISSING:
                    out[key] = value
            return out

        return build_object
    if isinstance(expression, list):
        items = [compile_expression(item) for item in expression]

        def build_array(root: Any, variables: Mapping[str, Any]) -> Any:
            return [_null_if_missing(item(root, variables)) for item in items]

        return build_array
    return lambda root, variables: expression


def _null_if_missing(value: Any) -> Any:
    return None if value is MISSING else value


def _compile_path(text: str) -> Compiled:
    if text.startswith("$$"):
        name, _, rest = text[2:].partition(".")
        parts = rest.split(".") if rest else []
        if not name:
            raise location(16869, "empty variable name")

        def read_variable(root: Any, variables: Mapping[str, Any]) -> Any:
            if name == "ROOT":
                base = root
            elif name == "CURRENT":
                base = variables.get("CURRENT", root)
            elif name == "REMOVE":
                return MISSING
            elif name in variables:
                base = variables[name]
            else:
                raise location(17276, f"Use of undefined variable: {name}")
            return field_path_value(base, parts) if parts else base

        return read_variable
    path = text[1:]
    if not path or "" in path.split("."):
        raise location(15998, "FieldPath field names may not be empty strings.")
    parts = path.split(".")
    return lambda root, variables: field_path_value(variables.get("CURRENT", root), parts)


# --- operators -----------------------------------------------------------------------------

_Impl = Callable[[list[Compiled], Any, Mapping[str, Any]], Any]


def _args(argument: Any) -> list[Compiled]:
    if isinstance(argument, list):
        return [compile_expression(a) for a in argument]
    return [compile_expression(argument)]


def _exactly(name: str, args: list[Compiled], count: int) -> None:
    if len(args) != count:
        raise location(
            16020, f"Expression {name} takes exactly {count} arguments. {len(args)} were passed in."
        )


def _compile_operator(name: str, argument: Any) -> Compiled:
    if name == "$literal":
        return lambda root, variables: argument
    if name == "$cond":
        return _compile_cond(argument)
    if name in _SCOPED:
        return _SCOPED[name](argument)
    if name not in _OPERATORS:
        raise CommandError(168, "InvalidPipelineOperator", f"Unrecognized expression '{name}'")
    arity, impl = _OPERATORS[name]
    args = _args(argument)
    if arity is not None:
        _exactly(name, args, arity)

    def run(root: Any, variables: Mapping[str, Any]) -> Any:
        try:
            return impl(args, root, variables)
        except (ArithmeticError, ValueError) as exc:
            # overflow, dates out of range, decimal traps: a server error, never a Python one
            raise bad_value(f"{name} failed: {exc}") from None

    return run


def _spec(name: str, argument: Any, required: tuple[str, ...], optional: tuple[str, ...] = ()) -> dict[str, Any]:
    if not isinstance(argument, Mapping):
        raise location(16878, f"{name} only supports an object as its argument")
    for key in argument:
        if key not in required and key not in optional:
            raise location(16879, f"Unrecognized parameter to {name}: {key}")
    for key in required:
        if key not in argument:
            raise location(16880, f"Missing '{key}' parameter to {name}")
    return dict(argument)


def _variable_name(value: Any) -> str:
    if not isinstance(value, str) or not value or not (value[0].islower() or not value[0].isascii()):
        raise location(16866, f"'{value}' starts with an invalid character for a user variable name")
    return value


def _compile_let(argument: Any) -> Compiled:
    spec = _spec("$let", argument, ("vars", "in"))
    if not isinstance(spec["vars"], Mapping):
        raise location(10065, "invalid parameter: expected an object (vars)")
    bindings = [(_variable_name(k), compile_expression(v)) for k, v in spec["vars"].items()]
    body = compile_expression(spec["in"])

    def run(root: Any, variables: Mapping[str, Any]) -> Any:
        scope = dict(variables)
        for key, compiled in bindings:
            scope[key] = compiled(root, variables)  # vars see the outer scope, as in mongod
        return body(root, scope)

    return run


def _compile_map_or_filter(name: str) -> Callable[[Any], Compiled]:
    def compile_it(argument: Any) -> Compiled:
        body_key = "in" if name == "$map" else "cond"
        optional = ("as", "limit") if name == "$filter" else ("as",)
        spec = _spec(name, argument, ("input", body_key), optional)
        source = compile_expression(spec["input"])
        alias = _variable_name(spec.get("as", "this"))
        body = compile_expression(spec[body_key])
        limit = compile_expression(spec["limit"]) if "limit" in spec else None

        def run(root: Any, variables: Mapping[str, Any]) -> Any:
            array = source(root, variables)
            if _is_nullish(array):
                return None
            if not isinstance(array, list):
                code = 16883 if name == "$map" else 28651
                raise location(code, f"input to {name} must be an array not {type_name(array)}")
            out = []
            cap = whole_number(limit(root, variables)) if limit is not None else None
            for element in array:
                value = body(root, {**variables, alias: element})
                if name == "$map":
                    out.append(_null_if_missing(value))
                elif truthy(value):
                    out.append(element)
                    if cap is not None and len(out) >= cap:
                        break
            return out

        return run

    return compile_it


def _compile_cond(argument: Any) -> Compiled:
    if isinstance(argument, Mapping):
        for key in argument:
            if key not in ("if", "then", "else"):
                raise location(17083, f"Unrecognized parameter to $cond: {key}")
        for key in ("if", "then", "else"):
            if key not in argument:
                raise location(17080 + ("if", "then", "else").index(key), f"Missing '{key}' parameter to $cond")
        parts = [argument["if"], argument["then"], argument["else"]]
    else:
        parts = argument if isinstance(argument, list) else [argument]
    args = [compile_expression(p) for p in parts]
    _exactly("$cond", args, 3)
    condition, then, otherwise = args
    return lambda root, variables: (
        then(root, variables) if truthy(condition(root, variables)) else otherwise(root, variables)
    )


def _values(args: list[Compiled], root: Any, variables: Mapping[str, Any]) -> list[Any]:
    return [a(root, variables) for a in args]


def _is_nullish(value: Any) -> bool:
    return value is None or value is MISSING or isinstance(value, Undefined)


def _add(args: list[Compiled], root: Any, variables: Mapping[str, Any]) -> Any:
    values = _values(args, root, variables)
    if any(_is_nullish(v) for v in values):
        return None
    dates = [v for v in values if is_date(v)]
    if len(dates) > 1:
        raise location(16612, "only one date allowed in an $add expression")
    for v in values:
        if not is_number(v) and not is_date(v):
            raise type_mismatch(f"$add only supports numeric or date types, not {type_name(v)}")
    numbers = [v for v in values if not is_date(v)]
    total = arithmetic(numbers, lambda a, b: a + b, 0)
    if dates:
        return ms_to_date(date_ms(dates[0]) + round(float(numeric_value(total))))
    return total


def _subtract(args: list[Compiled], root: Any, variables: Mapping[str, Any]) -> Any:
    left, right = _values(args, root, variables)
    if _is_nullish(left) or _is_nullish(right):
        return None
    if is_date(left) and is_date(right):
        return Int64(date_ms(left) - date_ms(right))
    if is_date(left) and is_number(right):
        return ms_to_date(date_ms(left) - round(float(numeric_value(right))))
    if is_number(left) and is_number(right):
        return binary_arithmetic(left, right, lambda a, b: a - b)
    raise type_mismatch(
        f"can't $subtract {type_name(right)} from {type_name(left)}"
    )


def _multiply(args: list[Compiled], root: Any, variables: Mapping[str, Any]) -> Any:
    values = _values(args, root, variables)
    if any(_is_nullish(v) for v in values):
        return None
    for v in values:
        if not is_number(v):
            raise type_mismatch(f"$multiply only supports numeric types, not {type_name(v)}")
    return arithmetic(values, lambda a, b: a * b, 1)


def _divide(args: list[Compiled], root: Any, variables: Mapping[str, Any]) -> Any:
    left, right = _values(args, root, variables)
    if _is_nullish(left) or _is_nullish(right):
        return None
    if not is_number(left) or not is_number(right):
        raise type_mismatch(
            f"$divide only supports numeric types, not {type_name(left)} and {type_name(right)}"
        )
    if numeric_value(right) == 0:
        raise bad_value("can't $divide by zero")
    if isinstance(left, Decimal128) or isinstance(right, Decimal128):
        return binary_arithmetic(left, right, lambda a, b: a / b)
    return float(numeric_value(left)) / float(numeric_value(right))


def _mod(args: list[Compiled], root: Any, variables: Mapping[str, Any]) -> Any:
    left, right = _values(args, root, variables)
    if _is_nullish(left) or _is_nullish(right):
        return None
    if not is_number(left) or not is_number(right):
        raise type_mismatch(
            f"$mod only supports numeric types, not {type_name(left)} and {type_name(right)}"
        )
    if numeric_value(right) == 0:
        raise location(16610, "can't $mod by zero")

    def c_mod(a: Any, b: Any) -> Any:
        if isinstance(a, int) and isinstance(b, int):
            remainder = abs(a) % abs(b)
            return -remainder if a < 0 else remainder
        if isinstance(a, decimal.Decimal):
            return a % b  # Decimal's % truncates toward zero, like C
        try:
            return math.fmod(a, b)
        except ValueError:  # an infinite dividend has no remainder
            return math.nan

    return binary_arithmetic(left, right, c_mod)


def _comparison(accept: Callable[[int], bool]) -> _Impl:
    def impl(args: list[Compiled], root: Any, variables: Mapping[str, Any]) -> Any:
        left, right = _values(args, root, variables)
        return accept(_agg_compare(left, right, _collation(variables)))

    return impl


def _agg_compare(left: Any, right: Any, collation: Collation | None) -> int:
    # aggregation orders a missing field before null (so {$eq: ["$absent", null]} is false)
    if left is MISSING or right is MISSING:
        return int(right is MISSING) - int(left is MISSING)
    return compare(left, right, collation)


def _cmp(args: list[Compiled], root: Any, variables: Mapping[str, Any]) -> Any:
    left, right = _values(args, root, variables)
    return _agg_compare(left, right, _collation(variables))


def _and(args: list[Compiled], root: Any, variables: Mapping[str, Any]) -> Any:
    return all(truthy(a(root, variables)) for a in args)


def _or(args: list[Compiled], root: Any, variables: Mapping[str, Any]) -> Any:
    return any(truthy(a(root, variables)) for a in args)


def _not(args: list[Compiled], root: Any, variables: Mapping[str, Any]) -> Any:
    return not truthy(args[0](root, variables))


def _if_null(args: list[Compiled], root: Any, variables: Mapping[str, Any]) -> Any:
    if len(args) < 2:
        raise location(1257300, "$ifNull needs at least two arguments, had: " + str(len(args)))
    for a in args[:-1]:
        value = a(root, variables)
        if not _is_nullish(value):
            return value
    return args[-1](root, variables)


def _concat(args: list[Compiled], root: Any, variables: Mapping[str, Any]) -> Any:
    values = _values(args, root, variables)
    out = []
    for v in values:
        if _is_nullish(v):
            return None
        if not isinstance(v, str):
            raise location(16702, f"$concat only supports strings, not {type_name(v)}")
        out.append(str(v))
    return "".join(out)


def _case(upper: bool) -> _Impl:
    def impl(args: list[Compiled], root: Any, variables: Mapping[str, Any]) -> Any:
        value = args[0](root, variables)
        if _is_nullish(value):
            return ""
        if isinstance(value, str):
            text = str(value)
        elif is_number(value) or is_date(value):
            text = str(numeric_value(value)) if is_number(value) else str(value)
        else:
            name = "$toUpper" if upper else "$toLower"
            raise location(16007, f"can't convert from BSON type {type_name(value)} to String in {name}")
        return text.upper() if upper else text.lower()

    return impl


def _size(args: list[Compiled], root: Any, variables: Mapping[str, Any]) -> Any:
    value = args[0](root, variables)
    if not isinstance(value, list):
        raise location(
            17124, f"The argument to $size must be an array. Type of argument is {type_name(value)}"
        )
    return len(value)


def _array_elem_at(args: list[Compiled], root: Any, variables: Mapping[str, Any]) -> Any:
    array, index = _values(args, root, variables)
    if _is_nullish(array) or _is_nullish(index):
        return None
    if not isinstance(array, list):
        raise location(
            28689, f"$arrayElemAt's first argument must be an array, but is {type_name(array)}"
        )
    if not is_number(index):
        raise location(
            28690, f"$arrayElemAt's second argument must be a numeric value, but is {type_name(index)}"
        )
    whole = whole_number(index)
    if whole is None:
        raise location(
            28691, f"$arrayElemAt's second argument must be representable as a 32-bit integer: {index}"
        )
    position = whole
    if position < 0:
        position += len(array)
    return array[position] if 0 <= position < len(array) else MISSING


def _in(args: list[Compiled], root: Any, variables: Mapping[str, Any]) -> Any:
    needle, haystack = _values(args, root, variables)
    if not isinstance(haystack, list):
        raise location(
            40081, f"$in requires an array as a second argument, found: {type_name(haystack)}"
        )
    collation = _collation(variables)
    return any(values_equal(needle, item, collation) for item in haystack)


def _type(args: list[Compiled], root: Any, variables: Mapping[str, Any]) -> Any:
    return type_name(args[0](root, variables))


def _end(first: bool) -> _Impl:
    def impl(args: list[Compiled], root: Any, variables: Mapping[str, Any]) -> Any:
        value = args[0](root, variables)
        if _is_nullish(value):
            return None
        if not isinstance(value, list):
            name = "$first" if first else "$last"
            raise location(28689, f"{name}'s argument must be an array, but is {type_name(value)}")
        if not value:
            return MISSING
        return value[0] if first else value[-1]

    return impl


def _concat_arrays(args: list[Compiled], root: Any, variables: Mapping[str, Any]) -> Any:
    out: list[Any] = []
    for v in _values(args, root, variables):
        if _is_nullish(v):
            return None
        if not isinstance(v, list):
            raise location(28664, f"$concatArrays only supports arrays, not {type_name(v)}")
        out.extend(v)
    return out


def _is_array(args: list[Compiled], root: Any, variables: Mapping[str, Any]) -> Any:
    return isinstance(args[0](root, variables), list)


def _numbers_of(args: list[Compiled], root: Any, variables: Mapping[str, Any]) -> list[Any]:
    values = _values(args, root, variables)
    if len(values) == 1 and isinstance(values[0], list):
        values = values[0]
    return values


def _sum(args: list[Compiled], root: Any, variables: Mapping[str, Any]) -> Any:
    numbers = [v for v in _numbers_of(args, root, variables) if is_number(v)]
    return arithmetic(numbers, lambda a, b: a + b, 0) if numbers else 0


def _avg(args: list[Compiled], root: Any, variables: Mapping[str, Any]) -> Any:
    numbers = [v for v in _numbers_of(args, root, variables) if is_number(v)]
    if not numbers:
        return None
    total = arithmetic(numbers, lambda a, b: a + b, 0)
    if isinstance(total, Decimal128):
        return Decimal128(total.to_decimal() / len(numbers))
    return float(numeric_value(total)) / len(numbers)


def _extreme(largest: bool) -> _Impl:
    def impl(args: list[Compiled], root: Any, variables: Mapping[str, Any]) -> Any:
        values = [v for v in _numbers_of(args, root, variables) if not _is_nullish(v)]
        if not values:
            return None
        best = values[0]
        for v in values[1:]:
            c = compare(v, best, _collation(variables))
            if (c > 0) if largest else (c < 0):
                best = v
        return best

    return impl


def _slice(args: list[Compiled], root: Any, variables: Mapping[str, Any]) -> Any:
    if len(args) not in (2, 3):
        raise location(
            28667,
            f"Expression $slice takes at least 2 arguments, and at most 3, but {len(args)} were passed in.",
        )
    values = _values(args, root, variables)
    if any(_is_nullish(v) for v in values):
        return None
    array, numbers = values[0], [whole_number(v) for v in values[1:]]
    if not isinstance(array, list):
        raise location(28724, f"First argument to $slice must be an array, but is of type: {type_name(array)}")
    if any(n is None for n in numbers):
        raise location(28725, "Second argument to $slice must be a numeric value")
    if len(numbers) == 1:
        n = numbers[0] or 0
        return array[:n] if n >= 0 else array[n:]
    start, count = numbers[0] or 0, numbers[1] or 0
    if count <= 0:
        raise location(28729, f"Third argument to $slice must be positive: {count}")
    if start < 0:
        start = max(len(array) + start, 0)
    return array[start : start + count]


def _abs(args: list[Compiled], root: Any, variables: Mapping[str, Any]) -> Any:
    value = args[0](root, variables)
    if _is_nullish(value):
        return None
    if not is_number(value):
        raise location(28765, f"$abs only supports numeric types, not {type_name(value)}")
    return binary_arithmetic(value, value, lambda a, b: abs(a))


def _to_string(args: list[Compiled], root: Any, variables: Mapping[str, Any]) -> Any:
    value = args[0](root, variables)
    if _is_nullish(value):
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str) or is_number(value) or isinstance(value, ObjectId):
        return str(value)
    if is_date(value):
        when = ms_to_date(date_ms(value))
        if isinstance(when, datetime.datetime):
            return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"
    raise CommandError(
        241, "ConversionFailure",
        f"Unsupported conversion from {type_name(value)} to string in $convert with no onError value",
    )


_SCOPED: dict[str, Callable[[Any], Compiled]] = {
    "$getField": lambda argument: compile_get_field(argument, compile_expression),
    "$setField": lambda argument: compile_set_field(argument, compile_expression),
    "$unsetField": lambda argument: compile_unset_field(argument, compile_expression),
    "$dateToString": lambda argument: compile_date_to_string(argument, compile_expression),
    "$meta": compile_meta,
    "$let": _compile_let,
    "$map": _compile_map_or_filter("$map"),
    "$filter": _compile_map_or_filter("$filter"),
}

_OPERATORS: dict[str, tuple[int | None, _Impl]] = {
    "$add": (None, _add),
    "$subtract": (2, _subtract),
    "$multiply": (None, _multiply),
    "$divide": (2, _divide),
    "$mod": (2, _mod),
    "$eq": (2, _comparison(lambda c: c == 0)),
    "$ne": (2, _comparison(lambda c: c != 0)),
    "$gt": (2, _comparison(lambda c: c > 0)),
    "$gte": (2, _comparison(lambda c: c >= 0)),
    "$lt": (2, _comparison(lambda c: c < 0)),
    "$lte": (2, _comparison(lambda c: c <= 0)),
    "$cmp": (2, _cmp),
    "$and": (None, _and),
    "$or": (None, _or),
    "$not": (1, _not),
    "$ifNull": (None, _if_null),
    "$concat": (None, _concat),
    "$toLower": (1, _case(False)),
    "$toUpper": (1, _case(True)),
    "$size": (1, _size),
    "$arrayElemAt": (2, _array_elem_at),
    "$in": (2, _in),
    "$type": (1, _type),
    "$first": (1, _end(True)),
    "$last": (1, _end(False)),
    "$concatArrays": (None, _concat_arrays),
    "$isArray": (1, _is_array),
    "$sum": (None, _sum),
    "$avg": (None, _avg),
    "$max": (None, _extreme(True)),
    "$min": (None, _extreme(False)),
    "$slice": (None, _slice),
    "$abs": (1, _abs),
    "$toString": (1, _to_string),
    "$toHashedIndexKey": (1, to_hashed_index_key),
}
