"""JavaScript's value rules, where the agents' behaviour depends on them.

The agents are TypeScript programs: which tool call a result answers, whether a flag is set,
how a model name is printed and what a timestamp means all follow JavaScript's semantics, not
Python's. Each rule lives here once, so the loader and the context builder agree.
"""

from __future__ import annotations

import re
from collections.abc import Hashable
from typing import Any


class _Sentinel:
    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return self._name


UNDEFINED = _Sentinel("UNDEFINED")
"""An absent value: JavaScript's ``undefined``, which equals only itself."""
UNPAIRABLE = _Sentinel("UNPAIRABLE")
"""An object or array: JavaScript compares those by identity, so a value read from a file
equals nothing else."""


def js_key(value: Any) -> Hashable:
    """``value`` as a key that matches where JavaScript's ``===`` does: strings and numbers by
    value, ``undefined`` only itself, objects and arrays never."""
    return UNPAIRABLE if isinstance(value, (dict, list)) else value


def js_truthy(value: Any) -> bool:
    """JavaScript's truthiness: every object and array is true, even an empty one."""
    if isinstance(value, (dict, list)):
        return True
    return bool(value)


def js_string(value: Any) -> str:
    """``value`` as a JavaScript template literal prints it (``${provider}/${model}``)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return _joined(value)
    return _scalar_string(value)


def _scalar_string(value: Any) -> str:
    if value is UNDEFINED:
        return "undefined"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return js_number(value)
    if isinstance(value, dict):
        return "[object Object]"
    return str(value)


def _joined(value: list[Any]) -> str:
    """``Array.prototype.join`` of ``value``: nested arrays join into it, null elements are
    empty. Without recursion, as deep as the file nests them."""
    out: list[str] = []
    stack: list[tuple[list[Any], int]] = [(value, 0)]
    while stack:
        items, index = stack.pop()
        if index == len(items):
            continue
        if index:
            out.append(",")
        stack.append((items, index + 1))
        item = items[index]
        if isinstance(item, list):
            stack.append((item, 0))
        elif item is not None:
            out.append(item if isinstance(item, str) else _scalar_string(item))
    return "".join(out)


_SAFE_INTEGER = 1 << 53
"""Up to this, every integer is a double exactly; past it JavaScript has the nearest one."""


def js_number(value: float) -> str:
    """``String(value)``: ECMAScript's Number::toString, of the double JavaScript reads for a
    JSON number (an integer of any size becomes the nearest double, or Infinity)."""
    if isinstance(value, int) and -_SAFE_INTEGER <= value <= _SAFE_INTEGER:
        return str(int(value))  # int(): a bool or an int subclass prints as a number
    try:
        number = float(value)
    except OverflowError:
        return "Infinity" if value > 0 else "-Infinity"
    if number != number:
        return "NaN"
    if number in (_INFINITY, -_INFINITY):
        return "Infinity" if number > 0 else "-Infinity"
    if number == 0:
        return "0"  # -0 too
    sign = "-" if number < 0 else ""
    # repr gives the shortest digits that read back as the same double, as JavaScript's do;
    # only where the point goes and when an exponent is written differ.
    mantissa, _, exponent = repr(abs(number)).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = (whole + fraction).lstrip("0")
    point = len(whole) + int(exponent or 0) - (len(whole + fraction) - len(digits))
    digits = digits.rstrip("0")
    count = len(digits)
    if count <= point <= 21:
        return sign + digits + "0" * (point - count)
    if 0 < point <= 21:
        return f"{sign}{digits[:point]}.{digits[point:]}"
    if -6 < point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    shown = digits[0] + ("." + digits[1:] if count > 1 else "")
    return f"{sign}{shown}e{'+' if point > 0 else '-'}{abs(point - 1)}"


_INFINITY = float("inf")


# ECMAScript's date-time string format, as leniently as JavaScriptCore reads it: one-digit
# months and days, a space or lower-case "t", "z", offsets without a colon, six-digit years.
# Its digits are ASCII ones, as JavaScript's ``\d`` (Python's takes ٣ too, and int() reads it).
_ISO_TIME = re.compile(
    r"([+-][0-9]{6}|[0-9]{4,6})(?:-([0-9]{1,2})(?:-([0-9]{1,2}))?)?"
    r"(?:[Tt ]([0-9]{2}):([0-9]{2})(?::([0-9]{2})(?:\.([0-9]+))?)?([Zz]|[+-][0-9]{2}:?[0-9]{2})?)?"
)
_OTHER_DIGIT = re.compile(r"(?![0-9])\d")
_MAX_TIME_MS = 8.64e15  # JavaScript dates end here, either side of the epoch
_DAY_MS = 86_400_000


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date; days past a month's end roll over."""
    year -= month <= 2
    era = year // 400
    year_of_era = year - era * 400
    day_of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146_097 + day_of_era - 719_468


def _parse_iso(text: str) -> float | None:
    match = _ISO_TIME.fullmatch(text)
    if match is None:
        return None
    year_s, month_s, day_s, hour_s, minute_s, second_s, fraction, zone = match.groups()
    month, day = int(month_s or 1), int(day_s or 1)
    hour, minute, second = int(hour_s or 0), int(minute_s or 0), int(second_s or 0)
    millis = int((fraction or "0")[:3].ljust(3, "0"))
    if year_s == "-000000" or not (1 <= month <= 12 and 1 <= day <= 31):
        return None
    if minute > 59 or second > 59 or hour > 24 or (hour == 24 and (minute or second or millis)):
        return None
    offset = 0
    if zone and zone not in "Zz":
        digits = zone[1:].replace(":", "")
        offset = (int(digits[:2]) * 60 + int(digits[2:])) * 60_000 * (1 if zone[0] == "+" else -1)
    # A time with no zone is local time to JavaScript; the agents' sessions are read in UTC.
    days = _days_from_civil(int(year_s), month, day)
    return days * _DAY_MS + ((hour * 60 + minute) * 60 + second) * 1000 + millis - offset


def js_time(value: Any) -> int | None:
    """``new Date(value).getTime()`` for an entry's timestamp; None where JavaScript has NaN."""
    if value is None:
        return 0
    if isinstance(value, (bool, int, float)):
        millis: float | None = float(value)
    elif isinstance(value, str):
        millis = _parse_iso(value)
        if millis is None and _OTHER_DIGIT.search(value) is None:  # email's int() reads ٣
            from email.utils import parsedate_tz  # rare: imported only when needed

            parts = parsedate_tz(value)  # the RFC 2822 form JavaScript also accepts
            if parts is not None:
                year, month, day, hour, minute, second = parts[:6]
                seconds = (_days_from_civil(year, month, day) * 24 + hour) * 3600
                millis = (seconds + minute * 60 + second - (parts[9] or 0)) * 1000.0
    else:
        millis = None
    if millis is None or millis != millis or abs(millis) > _MAX_TIME_MS:
        return None
    return int(millis)
