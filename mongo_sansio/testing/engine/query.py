"""The query language: ``matches(document, filter)`` and its compiled form.

A filter compiles once into a predicate over documents (:func:`compile_filter`), so a handler
that scans a collection parses the filter a single time and reports a bad filter before looking
at any document, as mongod does.  Field conditions see every value the path reaches
(:func:`~mongo_sansio.testing.engine.paths.lookup`); most operators also look inside arrays at
the end of the path ("array element matching"), while $size, $elemMatch, $exists and $type
"array" look at the array itself.  An absent field reads as MISSING, which equality with null
matches.  Given a :class:`~.collation.Collation`, every comparison of strings the filter makes
(equality, $in, $gt and the like, inside arrays and objects, and $expr) uses it; $regex, $type,
$exists and field names do not.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from mongo_sansio.bson import MaxKey, MinKey, Regex, Symbol
from mongo_sansio.testing.engine.errors import CommandError, bad_value
from mongo_sansio.testing.engine.order import (
    MISSING,
    TYPE_NUMBERS,
    canonical_rank,
    compare,
    copy_value,
    is_number,
    numeric_value,
    truncated_int,
    type_name,
    whole_number,
)
from mongo_sansio.testing.engine.paths import get_path, lookup, set_path, split_path
from mongo_sansio.testing.engine.text import TextIndex, find_text_clause, text_query

if TYPE_CHECKING:
    from mongo_sansio.testing.engine.collation import Collation

__all__ = [
    "Predicate",
    "compile_filter",
    "matches",
    "compile_regex",
    "is_operator_document",
    "first_matching_index",
    "compile_value_condition",
]

Predicate = Callable[[Any], bool]
# A test over all the values a path reached (a list, never empty: [MISSING] when nothing)
_ValuesTest = Callable[[list[Any]], bool]

_LOGICAL = ("$and", "$or", "$nor")
_DBREF_KEYS = ("$ref", "$id", "$db")


def matches(document: Mapping[str, Any], filter: Mapping[str, Any], collation: Collation | None = None) -> bool:  # noqa: A002
    """Whether ``document`` satisfies the query ``filter``."""
    return compile_filter(filter, collation)(document)


def compile_filter(
    filter: Mapping[str, Any] | None,  # noqa: A002
    collation: Collation | None = None,
    *,
    where_refused: str | None = None,
    text: TextIndex | None = None,
) -> Predicate:
    """Parse ``filter`` once; the result tests documents (comparing strings under
    ``collation``, binary when None).  Bad filters raise CommandError; so does ``$where``
    where it is not allowed (``where_refused``: mongod's message for the place), and
    ``$text`` without the collection's ``text`` index (27)."""
    if filter is None:
        return lambda document: True
    if not isinstance(filter, Mapping):
        raise bad_value(f"query filter must be an object, not {type_name(filter)}")
    tests = [_compile_top_level(key, value, collation, where_refused, text) for key, value in filter.items()]
    if not tests:
        return lambda document: True
    if len(tests) == 1:
        return tests[0]
    return lambda document: all(test(document) for test in tests)


def is_operator_document(value: Any) -> bool:
    """A field condition like ``{$gt: 1}`` (as opposed to a document to compare equal to)."""
    if not isinstance(value, Mapping) or not value:
        return False
    first = next(iter(value))
    return isinstance(first, str) and first.startswith("$") and first not in _DBREF_KEYS


def _compile_top_level(
    key: str, value: Any, collation: Collation | None, where_refused: str | None, text: TextIndex | None = None,
) -> Predicate:
    if not key.startswith("$"):
        return _compile_field(key, value, collation)
    if key in _LOGICAL:
        if not isinstance(value, list) or not value:
            raise bad_value(f"{key} argument must be a non-empty array")
        clauses = []
        for clause in value:
            if not isinstance(clause, Mapping):
                raise bad_value(f"{key} argument's entries must be objects")
            if key == "$nor" and find_text_clause({"$and": [clause]}) is not MISSING:
                raise bad_value("text expression not allowed in nor")  # message from memory
            clauses.append(compile_filter(clause, collation, where_refused=where_refused, text=text))
        if key == "$and":
            return lambda document: all(c(document) for c in clauses)
        if key == "$or":
            return lambda document: any(c(document) for c in clauses)
        return lambda document: not any(c(document) for c in clauses)
    if key == "$expr":
        from mongo_sansio.testing.engine.expressions import (
            collation_variables,
            compile_expression,
            truthy,
        )

        expression = compile_expression(value)
        variables = collation_variables(collation)
        return lambda document: truthy(expression(document, variables))
    if key == "$comment":
        return lambda document: True
    if key == "$alwaysTrue":
        return lambda document: True
    if key == "$alwaysFalse":
        return lambda document: False
    if key == "$where":
        if where_refused is not None:
            raise bad_value(where_refused)
        from mongo_sansio.testing.engine.where import compile_where

        return compile_where(value)
    if key == "$jsonSchema":
        from mongo_sansio.testing.engine.json_schema import compile_schema

        return compile_schema(value).matches
    if key == "$text":
        return text_query(value, text).matches
    if key == "$sampleRate":
        raise bad_value(f"{key} is not supported by the simulated server")
    raise bad_value(f"unknown top level operator: {key}")


def _compile_field(path: str, condition: Any, collation: Collation | None) -> Predicate:
    parts = split_path(path)
    test = compile_value_condition(condition, collation)

    def field_predicate(document: Any) -> bool:
        values = lookup(document, parts) or [MISSING]
        return test(values)

    return field_predicate


def compile_value_condition(condition: Any, collation: Collation | None = None) -> _ValuesTest:
    """The test a field condition applies to the values its path reached."""
    if is_operator_document(condition):
        return _compile_operators(condition, collation)
    if isinstance(condition, Regex | re.Pattern):
        return _regex_test(compile_regex(condition))
    return _equality_test(condition, collation)


def _compile_operators(spec: Mapping[str, Any], collation: Collation | None) -> _ValuesTest:
    tests: list[_ValuesTest] = []
    for operator, argument in spec.items():
        if operator == "$options":
            if "$regex" not in spec:
                raise bad_value("$options needs a $regex")
            continue
        tests.append(_compile_operator(operator, argument, spec, collation))
    if len(tests) == 1:
        return tests[0]
    return lambda values: all(test(values) for test in tests)


def _any_expanded(values: list[Any], test: Callable[[Any], bool]) -> bool:
    """Whether some value, or some element of an array value, passes ``test``."""
    for value in values:
        if test(value):
            return True
        if isinstance(value, list) and any(test(element) for element in value):
            return True
    return False


def _equals(value: Any, target: Any, collation: Collation | None) -> bool:
    if target is None:
        # null matches null and absent fields (not undefined, since 6.0)
        return value is None or value is MISSING
    if value is MISSING:
        return False
    return canonical_rank(value) == canonical_rank(target) and compare(value, target, collation) == 0


def _equality_test(target: Any, collation: Collation | None) -> _ValuesTest:
    return lambda values: _any_expanded(values, lambda value: _equals(value, target, collation))


_COMPARISONS: dict[str, Callable[[int], bool]] = {
    "$gt": lambda c: c > 0,
    "$gte": lambda c: c >= 0,
    "$lt": lambda c: c < 0,
    "$lte": lambda c: c <= 0,
}


def _comparison_test(operator: str, target: Any, collation: Collation | None) -> _ValuesTest:
    accept = _COMPARISONS[operator]
    crosses_types = isinstance(target, MinKey | MaxKey)

    def one(value: Any) -> bool:
        if value is MISSING:
            return target is None and operator in ("$gte", "$lte")
        if not crosses_types and canonical_rank(value) != canonical_rank(target):
            return False  # type bracketing: {$gt: 5} never matches a string
        return accept(compare(value, target, collation))

    return lambda values: _any_expanded(values, one)


def _regex_element_test(pattern: re.Pattern[str]) -> Callable[[Any], bool]:
    return lambda value: _regex_matches(pattern, value)


def _equals_element_test(target: Any, collation: Collation | None) -> Callable[[Any], bool]:
    return lambda value: _equals(value, target, collation)


def _in_test(argument: Any, operator: str, collation: Collation | None) -> _ValuesTest:
    if not isinstance(argument, list):
        raise bad_value(f"{operator} needs an array")
    tests: list[Callable[[Any], bool]] = []
    for target in argument:
        if isinstance(target, Regex | re.Pattern):
            tests.append(_regex_element_test(compile_regex(target)))
        elif is_operator_document(target):
            raise bad_value(f"cannot nest $ under {operator}")
        else:
            tests.append(_equals_element_test(target, collation))
    return lambda values: _any_expanded(values, lambda value: any(t(value) for t in tests))


_REGEX_FLAG_MAP = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "x": re.VERBOSE}


def compile_regex(pattern: Any, options: str = "") -> re.Pattern[str]:
    """A Python regex for a query regex (``Regex``, ``re.Pattern`` or a pattern string)."""
    if isinstance(pattern, re.Pattern):
        pattern = Regex.from_native(pattern)
    if isinstance(pattern, Regex):
        if options and pattern.options:
            raise CommandError(51075, "Location51075", "options set on both $regex and $options")
        options = options or pattern.options
        pattern = pattern.pattern
    if not isinstance(pattern, str):
        raise bad_value("$regex has to be a string")
    flags = 0
    for letter in options:
        if letter in _REGEX_FLAG_MAP:
            flags |= _REGEX_FLAG_MAP[letter]
        elif letter != "u":
            raise CommandError(51108, "Location51108", f"invalid flag in regex options: {letter}")
    # PCRE spellings Python's re lacks: named groups (?<name>...) and \z
    translated = re.sub(r"\(\?<(?=[A-Za-z_])", "(?P<", pattern).replace(r"\z", r"\Z")
    try:
        return re.compile(translated, flags)
    except re.error as exc:
        raise CommandError(51091, "Location51091", f"Regular expression is invalid: {exc}") from None


def _regex_matches(pattern: re.Pattern[str], value: Any) -> bool:
    if isinstance(value, Regex):
        # a stored regex matches a query regex with the same pattern and options
        return value.pattern == pattern.pattern
    if isinstance(value, str) and (type(value) is str or isinstance(value, Symbol)):
        return pattern.search(value) is not None
    return False


def _regex_test(pattern: re.Pattern[str]) -> _ValuesTest:
    return lambda values: _any_expanded(values, lambda value: _regex_matches(pattern, value))


def _type_test(argument: Any) -> _ValuesTest:
    wanted = argument if isinstance(argument, list) else [argument]
    if not wanted:
        raise bad_value("a $type array must have at least one type")
    names: set[str] = set()
    for item in wanted:
        if isinstance(item, str):
            if item == "number":
                names.update(("int", "long", "double", "decimal"))
            elif item in TYPE_NUMBERS:
                names.add(item)
            else:
                raise bad_value(f"Unknown type name alias: {item}")
        elif is_number(item):
            code = whole_number(item)
            by_number = {v: k for k, v in TYPE_NUMBERS.items()}
            if code is None or code not in by_number:
                raise bad_value(f"Invalid numerical type code: {item}")
            names.add(by_number[code])
        else:
            raise type_error_for_type(item)

    def one(value: Any) -> bool:
        return value is not MISSING and type_name(value) in names

    return lambda values: _any_expanded(values, one)


def type_error_for_type(item: Any) -> CommandError:
    return CommandError(14, "TypeMismatch", f"type must be represented as a number or a string, not {type_name(item)}")


def _whole_number(argument: Any, operator: str) -> int:
    if not is_number(argument):
        raise bad_value(f"{operator} needs a number")
    number = whole_number(argument)
    if number is None:
        raise bad_value(f"{operator} must be a whole number")
    return number


def _size_test(argument: Any) -> _ValuesTest:
    size = _whole_number(argument, "$size")
    if size < 0:
        raise bad_value("$size may not be negative")
    return lambda values: any(isinstance(v, list) and len(v) == size for v in values)


def _c_remainder(dividend: int, divisor: int) -> int:
    # mongod truncates toward zero (C's %), unlike Python's floor-based %
    remainder = abs(dividend) % abs(divisor)
    return -remainder if dividend < 0 else remainder


def _mod_test(argument: Any) -> _ValuesTest:
    if not isinstance(argument, list):
        raise bad_value("malformed mod, needs to be an array")
    if len(argument) < 2:
        raise bad_value("malformed mod, not enough elements")
    if len(argument) > 2:
        raise bad_value("malformed mod, too many elements")
    if not is_number(argument[0]):
        raise bad_value("malformed mod, divisor not a number")
    if not is_number(argument[1]):
        raise bad_value("malformed mod, remainder not a number")
    divisor = truncated_int(argument[0])
    remainder = truncated_int(argument[1])
    if divisor is None or remainder is None:
        raise bad_value("malformed mod, divisor and remainder must be finite numbers")
    if divisor == 0:
        raise bad_value("divisor cannot be 0")

    def one(value: Any) -> bool:
        number = truncated_int(value)  # None for non-numbers, NaN and infinities
        return number is not None and _c_remainder(number, divisor) == remainder

    return lambda values: _any_expanded(values, one)


def _elem_match_test(argument: Any, collation: Collation | None) -> _ValuesTest:
    if not isinstance(argument, Mapping):
        raise bad_value("$elemMatch needs an Object")
    if is_operator_document(argument) and next(iter(argument)) not in (*_LOGICAL, "$expr", "$where"):
        value_test = _compile_operators(argument, collation)

        def element_ok(element: Any) -> bool:
            return value_test([element])
    else:
        document_test = compile_filter(
            argument, collation, where_refused="$elemMatch cannot contain $where expression"
        )

        def element_ok(element: Any) -> bool:
            return isinstance(element, Mapping | list) and document_test(element)

    return lambda values: any(
        isinstance(v, list) and any(element_ok(e) for e in v) for v in values
    )


def _all_test(argument: Any, collation: Collation | None) -> _ValuesTest:
    if not isinstance(argument, list):
        raise bad_value("$all needs an array")
    if not argument:
        return lambda values: False
    tests: list[_ValuesTest] = []
    for item in argument:
        if isinstance(item, Mapping) and next(iter(item), None) == "$elemMatch":
            tests.append(_elem_match_test(item["$elemMatch"], collation))
        elif is_operator_document(item):
            raise bad_value("no $ expressions in $all")
        else:
            tests.append(compile_value_condition(item, collation))
    return lambda values: all(test(values) for test in tests)


def _not_test(argument: Any, collation: Collation | None) -> _ValuesTest:
    if isinstance(argument, Regex | re.Pattern):
        inner = _regex_test(compile_regex(argument))
    elif isinstance(argument, Mapping):
        if not argument:
            raise bad_value("$not cannot be empty")
        if not is_operator_document(argument):
            raise bad_value("$not needs a regex or a document")
        inner = _compile_operators(argument, collation)
    else:
        raise bad_value("$not needs a regex or a document")
    return lambda values: not inner(values)


def _compile_operator(operator: str, argument: Any, spec: Mapping[str, Any], collation: Collation | None) -> _ValuesTest:
    if operator == "$eq":
        return _equality_test(argument, collation)
    if operator == "$ne":
        if isinstance(argument, Regex | re.Pattern):
            raise bad_value("Can't have regex as arg to $ne.")
        equal = _equality_test(argument, collation)
        return lambda values: not equal(values)
    if operator in _COMPARISONS:
        return _comparison_test(operator, argument, collation)
    if operator == "$in":
        return _in_test(argument, "$in", collation)
    if operator == "$nin":
        inside = _in_test(argument, "$nin", collation)
        return lambda values: not inside(values)
    if operator == "$exists":
        if _truthy_flag(argument):
            return lambda values: any(v is not MISSING for v in values)
        return lambda values: all(v is MISSING for v in values)
    if operator == "$type":
        return _type_test(argument)
    if operator == "$regex":
        options = spec.get("$options", "")
        if not isinstance(options, str):
            raise bad_value("$options has to be a string")
        return _regex_test(compile_regex(argument, options))
    if operator == "$size":
        return _size_test(argument)
    if operator == "$mod":
        return _mod_test(argument)
    if operator == "$elemMatch":
        return _elem_match_test(argument, collation)
    if operator == "$all":
        return _all_test(argument, collation)
    if operator == "$not":
        return _not_test(argument, collation)
    if operator == "$comment":
        return lambda values: True
    raise bad_value(f"unknown operator: {operator}")


def _truthy_flag(argument: Any) -> bool:
    if is_number(argument):
        return bool(numeric_value(argument))
    return argument is not None and argument is not False and argument is not MISSING


# ---------------------------------------------------------------------------------------------
# The positional operator ($ in projections and updates): which array element did the query
# match?  Done by trying the filter against the document with the array narrowed to one
# element at a time, which gives mongod's answer for the common filters.


def _filter_paths(filter: Mapping[str, Any]) -> list[str]:  # noqa: A002
    paths: list[str] = []
    for key, value in filter.items():
        if key in _LOGICAL and isinstance(value, list):
            for clause in value:
                if isinstance(clause, Mapping):
                    paths.extend(_filter_paths(clause))
        elif not key.startswith("$"):
            paths.append(key)
    return paths


def first_matching_index(
    document: Mapping[str, Any], filter: Mapping[str, Any] | None, array_parts: list[str],  # noqa: A002
    collation: Collation | None = None,
) -> int | None:
    """The index of the first element of the array at ``array_parts`` that lets ``filter``
    match, or None when the filter does not constrain that array or no element fits."""
    if not filter:
        return None
    prefix = ".".join(array_parts)
    if not any(p == prefix or p.startswith(prefix + ".") for p in _filter_paths(filter)):
        return None
    array = get_path(document, array_parts)
    if not isinstance(array, list):
        return None
    predicate = compile_filter(filter, collation)
    for index, element in enumerate(array):
        narrowed = copy_value(dict(document))
        set_path(narrowed, array_parts, [element])
        if predicate(narrowed):
            return index
    return None
