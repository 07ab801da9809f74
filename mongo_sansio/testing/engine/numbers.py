"""Number and date arithmetic with mongod's result types.

The result of arithmetic takes the widest input type (int32 < int64 < double < decimal128);
an int32 result that overflows becomes an int64, and an int64 that overflows a double, as
mongod's $add/$inc do.  Dates are UTC milliseconds; results are naive UTC datetimes like the
codec's default, or DatetimeMS outside datetime's years.
"""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Callable
from typing import Any

from mongo_sansio.bson import DatetimeMS, Decimal128, Int64
from mongo_sansio.testing.engine.order import numeric_value

__all__ = ["binary_arithmetic", "arithmetic", "date_ms", "is_date", "ms_to_date"]

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _width(value: Any) -> int:
    if isinstance(value, Decimal128):
        return 3
    if isinstance(value, float):
        return 2
    if isinstance(value, Int64) or not _INT32_MIN <= value <= _INT32_MAX:
        return 1
    return 0


def _as_type(result: Any, width: int) -> Any:
    if width == 3:
        return Decimal128(decimal.Decimal(result) if not isinstance(result, decimal.Decimal) else result)
    if width == 2:
        return float(result)
    if isinstance(result, float | decimal.Decimal):
        return float(result)
    if width == 0 and _INT32_MIN <= result <= _INT32_MAX:
        return int(result)
    if _INT64_MIN <= result <= _INT64_MAX:
        return Int64(result)
    return float(result)  # int64 overflow turns into a double in mongod


def _decimal_of(value: Any) -> decimal.Decimal:
    number = numeric_value(value)
    return number if isinstance(number, decimal.Decimal) else decimal.Decimal(number)


def arithmetic(values: list[Any], op: Callable[[Any, Any], Any], start: Any) -> Any:
    width = max((_width(v) for v in values), default=0)
    if width == 3:
        total = decimal.Decimal(start)
        with decimal.localcontext() as context:
            context.prec = 34
            for v in values:
                total = op(total, _decimal_of(v))
        return _as_type(total, 3)
    result = start
    for v in values:
        result = op(result, float(numeric_value(v)) if width == 2 else numeric_value(v))
    return _as_type(result, width)


def date_ms(value: Any) -> int:
    return int(value) if isinstance(value, DatetimeMS) else int(DatetimeMS(value))


def is_date(value: Any) -> bool:
    return isinstance(value, datetime.datetime | DatetimeMS)


def ms_to_date(ms: int) -> Any:
    # a naive UTC datetime like the codec's default; DatetimeMS when outside datetime's years
    try:
        return DatetimeMS(ms).as_datetime().replace(tzinfo=None)
    except ValueError:
        return DatetimeMS(ms)


def binary_arithmetic(left: Any, right: Any, op: Callable[[Any, Any], Any]) -> Any:
    width = max(_width(left), _width(right))
    if width == 3:
        with decimal.localcontext() as context:
            context.prec = 34
            return _as_type(op(_decimal_of(left), _decimal_of(right)), 3)
    a, b = numeric_value(left), numeric_value(right)
    if width == 2:
        a, b = float(a), float(b)
    return _as_type(op(a, b), width)
