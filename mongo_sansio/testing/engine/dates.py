"""``$dateToString``: a date rendered with mongod's format specifiers, in a time zone.

Hooked into :mod:`.expressions`' table of operators that take their own argument document
(``compile_expression`` is passed in, as for the field operators, to keep the import one way).

``{date, format, timezone, onNull}``: ``date`` is a date, a Timestamp or an ObjectId (its
creation time); ``timezone`` an Olson name ("America/New_York", "UTC", "GMT") or a UTC offset
("+04:45", "-0500", "+03"); ``format`` defaults to ``%Y-%m-%dT%H:%M:%S.%LZ``, or without the
``Z`` when a time zone is given.  A null or missing date is ``onNull`` (null without it; an
``onNull`` that is missing leaves the field out); a null format or time zone is null.
Specifiers: %Y %m %d %H %M %S %L %j %w %u %U %G %V %z %Z %b %B and %%.  Errors are mongod's
codes (18533-18536, 18628, 18629, 16006, 40485, 40517).
"""

from __future__ import annotations

import datetime
import re
import zoneinfo
from collections.abc import Callable, Mapping
from typing import Any

from mongo_sansio.bson import ObjectId, Timestamp
from mongo_sansio.testing.engine.errors import bad_value, location
from mongo_sansio.testing.engine.numbers import date_ms, is_date
from mongo_sansio.testing.engine.order import MISSING, render, type_name

__all__ = ["compile_date_to_string"]

Compiled = Callable[[Any, Mapping[str, Any]], Any]

_FIELDS = ("date", "format", "timezone", "onNull")
_ISO_Z = "%Y-%m-%dT%H:%M:%S.%LZ"
_ISO = "%Y-%m-%dT%H:%M:%S.%L"
_OFFSET = re.compile(r"^([+-])(\d{2})(?::?(\d{2}))?$")
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
           "October", "November", "December")
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def compile_date_to_string(argument: Any, compile_expression: Callable[[Any], Compiled]) -> Compiled:
    if not isinstance(argument, Mapping):
        raise location(18629, "$dateToString only supports an object as its argument")
    for key in argument:
        if key not in _FIELDS:
            raise location(18534, f"Unrecognized argument to $dateToString: {key}")
    if "date" not in argument:
        raise location(18628, "Missing 'date' parameter to $dateToString")
    date = compile_expression(argument["date"])
    given_format = argument.get("format")
    if isinstance(given_format, str):
        _check_format(given_format)  # a constant format is checked when parsed, as mongod's
    fmt = compile_expression(given_format) if "format" in argument else None
    zone = compile_expression(argument["timezone"]) if "timezone" in argument else None
    on_null = compile_expression(argument["onNull"]) if "onNull" in argument else None

    def run(root: Any, variables: Mapping[str, Any]) -> Any:
        pattern = _ISO_Z if zone is None else _ISO
        if fmt is not None:
            found = fmt(root, variables)
            if found is None or found is MISSING:
                return None
            if not isinstance(found, str):
                raise location(18533, f"$dateToString requires that 'format' be a string, found: "
                                      f"{type_name(found)} with value {render(found)}")
            _check_format(found)
            pattern = found
        tz: datetime.tzinfo = datetime.UTC
        if zone is not None:
            name = zone(root, variables)
            if name is None or name is MISSING:
                return None
            tz = _time_zone(name)
        value = date(root, variables)
        if value is None or value is MISSING:
            return on_null(root, variables) if on_null is not None else None
        return _render(_utc_ms(value), pattern, tz)

    return run


def _check_format(fmt: str) -> None:
    i = 0
    while i < len(fmt):
        if fmt[i] == "%":
            if i + 1 >= len(fmt):
                raise location(18535, "Unmatched '%' at end of format string")
            if fmt[i + 1] not in _SPECIFIERS and fmt[i + 1] != "%":
                raise location(18536, f"Invalid format character '%{fmt[i + 1]}' in format string")
            i += 2
        else:
            i += 1


def _time_zone(name: Any) -> datetime.tzinfo:
    if not isinstance(name, str):
        raise location(40517, f"timezone must evaluate to a string, found {type_name(name)}")
    offset = _OFFSET.match(name)
    if offset is not None:
        sign = -1 if offset.group(1) == "-" else 1
        minutes = int(offset.group(2)) * 60 + int(offset.group(3) or 0)
        return datetime.timezone(datetime.timedelta(minutes=sign * minutes))
    if name in ("UTC", "GMT", "Z"):
        return datetime.UTC
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise location(40485, f'unrecognized time zone identifier: "{name}"') from None


def _utc_ms(value: Any) -> int:
    if is_date(value):
        if isinstance(value, datetime.datetime) and value.tzinfo is not None:
            return (value - _EPOCH) // datetime.timedelta(milliseconds=1)
        return date_ms(value)
    if isinstance(value, Timestamp):
        return value.time * 1000
    if isinstance(value, ObjectId):
        return (value.generation_time - _EPOCH) // datetime.timedelta(milliseconds=1)
    raise location(16006, f"can't convert from BSON type {type_name(value)} to Date")


def _render(ms: int, fmt: str, tz: datetime.tzinfo) -> str:
    try:
        when = (_EPOCH + datetime.timedelta(milliseconds=ms)).astimezone(tz)
    except OverflowError:
        raise bad_value("$dateToString: the date is outside the years 1 to 9999 the simulator renders") from None
    out: list[str] = []
    i = 0
    while i < len(fmt):
        char = fmt[i]
        if char == "%" and i + 1 < len(fmt):
            spec = fmt[i + 1]
            out.append("%" if spec == "%" else _SPECIFIERS[spec](when, ms))
            i += 2
        else:
            out.append(char)
            i += 1
    return "".join(out)


def _offset_minutes(when: datetime.datetime) -> int:
    offset = when.utcoffset() or datetime.timedelta(0)
    return int(offset.total_seconds()) // 60


def _z(when: datetime.datetime, ms: int) -> str:
    minutes = _offset_minutes(when)
    sign = "-" if minutes < 0 else "+"
    return f"{sign}{abs(minutes) // 60:02d}{abs(minutes) % 60:02d}"


def _sunday_week(when: datetime.datetime, ms: int) -> str:
    # weeks start on Sunday; the days before the year's first Sunday are week 0 (strftime %U)
    day_of_year = when.timetuple().tm_yday - 1
    sunday_based_weekday = (when.weekday() + 1) % 7
    return f"{(day_of_year + 7 - sunday_based_weekday) // 7:02d}"


_SPECIFIERS: dict[str, Callable[[datetime.datetime, int], str]] = {
    "Y": lambda when, ms: f"{when.year:04d}",
    "m": lambda when, ms: f"{when.month:02d}",
    "d": lambda when, ms: f"{when.day:02d}",
    "H": lambda when, ms: f"{when.hour:02d}",
    "M": lambda when, ms: f"{when.minute:02d}",
    "S": lambda when, ms: f"{when.second:02d}",
    "L": lambda when, ms: f"{ms % 1000:03d}",
    "j": lambda when, ms: f"{when.timetuple().tm_yday:03d}",
    "w": lambda when, ms: str((when.weekday() + 1) % 7 + 1),  # 1 (Sunday) to 7 (Saturday)
    "u": lambda when, ms: str(when.isoweekday()),  # 1 (Monday) to 7 (Sunday)
    "U": _sunday_week,
    "G": lambda when, ms: f"{when.isocalendar()[0]:04d}",
    "V": lambda when, ms: f"{when.isocalendar()[1]:02d}",
    "z": _z,
    "Z": lambda when, ms: str(_offset_minutes(when)),
    "b": lambda when, ms: _MONTHS[when.month - 1][:3],
    "B": lambda when, ms: _MONTHS[when.month - 1],
}
