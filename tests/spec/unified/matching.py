"""The unified format's matching rules ("Evaluating Matches").

Input: an expected value (parsed from the test file) and an actual value (from the client).
Output: nothing when they match; an ``AssertionError`` naming the path of the first mismatch.

Rules: extra fields only in root-level documents; key order ignored; arrays of equal length;
numbers compared by value across int/long/double (not Decimal128); the special operators
``$$exists``, ``$$type``, ``$$unsetOrMatches``, ``$$matchesEntity``, ``$$matchesHexBytes``,
``$$sessionLsid``, ``$$lte``, ``$$matchAsDocument`` and ``$$matchAsRoot``.  BSON types are
recognised by class name, so the rules hold for PyMongo's ``bson`` and for ours alike.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["Matcher", "UnsupportedInTest", "is_number", "operator_of"]


class UnsupportedInTest(Exception):
    """The test needs something this runner (or the client under test) does not have; the
    message is the skip reason."""


def operator_of(expected: Any) -> str | None:
    """The ``$$`` operator an expected value is (a one-key document), else None."""
    if isinstance(expected, Mapping) and len(expected) == 1:
        key = next(iter(expected))
        if isinstance(key, str) and key.startswith("$$"):
            return key
    return None


def _class_names(value: Any) -> set[str]:
    return {cls.__name__ for cls in type(value).__mro__}


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_int64(value: Any) -> bool:
    return "Int64" in _class_names(value)


def is_type(value: Any, name: str) -> bool:
    """Does ``value`` have the BSON type ``name`` (the ``$type`` operator's aliases)?"""
    names = _class_names(value)
    checks: dict[str, Callable[[], bool]] = {
        "double": lambda: isinstance(value, float),
        "string": lambda: isinstance(value, str),
        "object": lambda: isinstance(value, Mapping) and "DBRef" not in names,
        "array": lambda: isinstance(value, (list, tuple)),
        "binData": lambda: isinstance(value, (bytes, bytearray)) or "Binary" in names,
        "undefined": lambda: False,
        "objectId": lambda: "ObjectId" in names,
        "bool": lambda: isinstance(value, bool),
        "date": lambda: isinstance(value, datetime.datetime) or "DatetimeMS" in names,
        "null": lambda: value is None,
        "regex": lambda: isinstance(value, re.Pattern) or "Regex" in names,
        "dbPointer": lambda: "DBPointer" in names,
        "javascript": lambda: "Code" in names and getattr(value, "scope", None) is None,
        "symbol": lambda: "Symbol" in names,
        "javascriptWithScope": lambda: "Code" in names and getattr(value, "scope", None) is not None,
        "int": lambda: is_number(value)
        and isinstance(value, int)
        and not _is_int64(value)
        and -(2**31) <= value < 2**31,
        "timestamp": lambda: "Timestamp" in names,
        "long": lambda: is_number(value)
        and isinstance(value, int)
        and (_is_int64(value) or not -(2**31) <= value < 2**31),
        "decimal": lambda: "Decimal128" in names,
        "minKey": lambda: "MinKey" in names,
        "maxKey": lambda: "MaxKey" in names,
        "number": lambda: any(is_type(value, n) for n in ("int", "long", "double", "decimal")),
    }
    if name not in checks:
        raise UnsupportedInTest(f"$$type {name!r} is not a type this runner knows")
    return checks[name]()


def _where(path: str) -> str:
    return path or "(root)"


class Matcher:
    """Matches values by the format's rules.  ``entities`` resolves ``$$matchesEntity`` and
    ``$$sessionLsid`` (``session_lsid(name)`` gives a session entity's lsid); ``load_json`` parses ``$$matchAsDocument``'s
    Extended JSON strings."""

    def __init__(
        self,
        entities: Mapping[str, Any],
        load_json: Callable[[str], Any],
        session_lsid: Callable[[Any], Any],
    ) -> None:
        self.entities = entities
        self.load_json = load_json
        self.session_lsid = session_lsid

    def matches(self, expected: Any, actual: Any, *, root: bool = True) -> bool:
        try:
            self.match(expected, actual, root=root)
        except AssertionError:
            return False
        return True

    def match(self, expected: Any, actual: Any, path: str = "", *, root: bool = True) -> None:
        operator = operator_of(expected)
        if operator is not None:
            self._operator(operator, expected[operator], actual, path, root)
            return
        if isinstance(expected, Mapping):
            self._document(expected, actual, path, root)
            return
        if isinstance(expected, (list, tuple)):
            assert isinstance(actual, (list, tuple)), f"{_where(path)}: expected an array, got {actual!r}"
            assert len(expected) == len(actual), (
                f"{_where(path)}: expected {len(expected)} elements, got {len(actual)}: {actual!r}"
            )
            for index, (want, got) in enumerate(zip(expected, actual, strict=True)):
                self.match(want, got, f"{path}[{index}]", root=False)
            return
        self._scalar(expected, actual, path)

    def _document(self, expected: Mapping[str, Any], actual: Any, path: str, root: bool) -> None:
        assert isinstance(actual, Mapping), f"{_where(path)}: expected a document, got {actual!r}"
        for key, value in expected.items():
            where = f"{path}.{key}" if path else str(key)
            inner = operator_of(value)
            if inner == "$$exists":
                present = key in actual
                assert present == bool(value[inner]), (
                    f"{where}: expected {'present' if value[inner] else 'absent'}"
                    + (f", got {actual[key]!r}" if present else "")
                )
                continue
            if key not in actual:
                if inner == "$$unsetOrMatches":
                    continue
                raise AssertionError(f"{where}: missing (expected {value!r}) in {dict(actual)!r}")
            self.match(value, actual[key], where, root=False)
        if not root:
            extra = [k for k in actual if k not in expected]
            assert not extra, f"{_where(path)}: unexpected fields {extra} in {dict(actual)!r}"

    def _scalar(self, expected: Any, actual: Any, path: str) -> None:
        if is_number(expected) and is_number(actual):
            assert expected == actual, f"{_where(path)}: expected {expected!r}, got {actual!r}"
            return
        same_kind = type(expected) is type(actual) or (
            _class_names(expected) & _class_names(actual) - {"object", "int", "str", "bytes"}
        )
        assert same_kind and expected == actual, (
            f"{_where(path)}: expected {expected!r} ({type(expected).__name__}), "
            f"got {actual!r} ({type(actual).__name__})"
        )

    def _operator(self, operator: str, argument: Any, actual: Any, path: str, root: bool) -> None:
        where = _where(path)
        if operator == "$$exists":
            # Outside a document only presence can be checked: the value exists here.
            assert bool(argument), f"{where}: expected to be absent, got {actual!r}"
        elif operator == "$$type":
            names = [argument] if isinstance(argument, str) else list(argument)
            assert any(is_type(actual, n) for n in names), (
                f"{where}: expected $$type {names}, got {actual!r} ({type(actual).__name__})"
            )
        elif operator == "$$unsetOrMatches":
            self.match(argument, actual, path, root=root)
        elif operator == "$$matchesEntity":
            if argument not in self.entities:
                raise AssertionError(f"{where}: $$matchesEntity names no entity {argument!r}")
            self.match(self.entities[argument], actual, path, root=root)
        elif operator == "$$matchesHexBytes":
            if not isinstance(argument, str) or not re.fullmatch(r"(?:[0-9a-fA-F]{2})*", argument):
                raise AssertionError(f"$$matchesHexBytes: malformed hex string {argument!r}")
            data = bytes(actual) if isinstance(actual, (bytes, bytearray)) else None
            assert data is not None, f"{where}: expected bytes, got {actual!r}"
            assert data == bytes.fromhex(argument), f"{where}: expected {argument}, got {data.hex()}"
        elif operator == "$$sessionLsid":
            lsid = self.session_lsid(argument)
            assert actual == lsid, f"{where}: expected lsid of {argument} {lsid!r}, got {actual!r}"
        elif operator == "$$lte":
            assert is_number(actual) and is_number(argument), (
                f"{where}: $$lte needs numbers, got {actual!r}"
            )
            assert actual <= argument, f"{where}: expected <= {argument!r}, got {actual!r}"
        elif operator == "$$matchAsDocument":
            assert isinstance(actual, str), f"{where}: expected an Extended JSON string, got {actual!r}"
            try:
                document = self.load_json(actual)
            except ValueError as error:  # JSONDecodeError and the drivers' own parse errors
                raise AssertionError(f"{where}: not an Extended JSON document ({error}): {actual!r}") from error
            self.match(argument, document, path, root=False)
        elif operator == "$$matchAsRoot":
            self.match(argument, actual, path, root=True)
        else:
            raise UnsupportedInTest(f"uses the {operator} matching operator, which the runner does not support")
