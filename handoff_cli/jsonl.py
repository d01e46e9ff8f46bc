"""JSON lines as the agents read and write them.

orjson does the work; the standard library is the fallback for the few inputs orjson refuses
but the agents (JavaScript's ``JSON.parse`` over text decoded with replacement characters)
accept: invalid UTF-8 bytes inside strings and lone surrogate escapes.

What we write is what the agents' ``JSON.stringify`` writes of the value (docs/session-format.md
§8.2): numbers spelled as JavaScript spells them (``0``, not orjson's ``0.0``; ``1e400``, which
is Infinity to JavaScript, as ``null``), at any depth, lone surrogates escaped. orjson's output
is searched for the few numbers it may spell otherwise, at C speed, and only those are
respelled; nothing is walked in Python unless orjson cannot write the value at all.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

from .js import js_number


def _reject_constant(name: str) -> Any:
    # JSON.parse has no NaN or Infinity literals, so neither do we.
    raise ValueError(f"invalid JSON constant {name}")


def parse_line(line: bytes) -> Any:
    """Parse one line; raise ``ValueError`` if the agents would not accept it either."""
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        text = line.decode("utf-8", "replace")
        try:
            return json.loads(text, parse_constant=_reject_constant)
        except RecursionError:
            raise ValueError("JSON nested too deeply") from None


def dumps(value: Any) -> bytes:
    """Compact JSON, keys in insertion order, as ``JSON.stringify`` writes it.

    An ``orjson.Fragment`` (JSON passed on as it was read) is written as it is.
    """
    try:
        data = orjson.dumps(value, option=orjson.OPT_STRICT_INTEGER)
    except TypeError:
        # Lone surrogates (kept from a fallback parse), integers past 2**53 (JavaScript has
        # the nearest double), or nesting deeper than orjson writes (255 levels; it reads 1,024).
        return _dumps_slowly(value)
    return data if isinstance(value, orjson.Fragment) else js_numbers(data)


def dumps_line(value: Any) -> bytes:
    """One JSONL line: compact JSON and a newline."""
    return dumps(value) + b"\n"


# Where orjson may spell a number otherwise than JavaScript: it writes every float with a
# fraction or an exponent (``0.0``, ``1e-6``, ``1e+16``), and strict about integers, it writes
# none past 2**53. Each pattern begins with one literal byte, which the regular expression
# engine finds at memchr speed; a match inside a string is told apart, or costs one exact pass.
_FRACTION = re.compile(rb"\.[0-9]+(?:e[+-][0-9]+)?(?=[,\]}]|\Z)")
_EXPONENTS = (re.compile(rb"\+[0-9]+(?=[,\]}]|\Z)"), re.compile(rb"-[0-9]+(?=[,\]}]|\Z)"))
_DIGITS_BEFORE = re.compile(rb"-?[0-9]+\Z")
_NUMBER = re.compile(rb"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_LONGEST_INTEGER_PART = 24
"""More digits than orjson writes before a fraction or an exponent (it writes at most 17)."""
# Strings and numbers, each whole: outside strings, a digit or a minus starts a number.
_STRING_OR_NUMBER = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|-?[0-9][0-9.eE+-]*', re.DOTALL)
_QUOTE, _DOT, _E = b'".e'


def js_numbers(data: bytes) -> bytes:
    """orjson's JSON text ``data`` with every number spelled as ``JSON.stringify`` spells it;
    ``data`` itself, not a copy, when all of them already are."""
    return _STRING_OR_NUMBER.sub(_respelled, data) if _misspelled(data) else data


def _misspelled(data: bytes) -> bool:
    if any(_differs(data, m.start(), m.end()) for m in _FRACTION.finditer(data)):
        return True
    for pattern in _EXPONENTS:
        for match in pattern.finditer(data):
            start = match.start()
            if start and data[start - 1] == _E and _differs(data, start - 1, match.end()):
                return True
    return False


def _differs(data: bytes, start: int, end: int) -> bool:
    """Whether JavaScript spells otherwise the number whose fraction or exponent runs from
    ``start`` to ``end``; never for text that is not a number, or one seen with its fraction."""
    head = _DIGITS_BEFORE.search(data, max(0, start - _LONGEST_INTEGER_PART), start)
    if head is None or (data[start] == _E and head.start() and data[head.start() - 1] == _DOT):
        return False
    token = data[head.start() : end]
    return _NUMBER.fullmatch(token) is not None and js_number_json(token) != token


def _respelled(match: re.Match[bytes]) -> bytes:
    token = match.group()
    return token if token[0] == _QUOTE else js_number_json(token)


def _number(value: float) -> bytes:
    spelled = js_number(value)
    return spelled.encode() if spelled[-1].isdigit() else b"null"  # Infinity and NaN: null


def js_number_json(token: bytes) -> bytes:
    """A JSON number as ``JSON.stringify(JSON.parse(token))`` writes it."""
    text = token.decode("ascii")
    return _number(float(text) if any(c in text for c in ".eE") else int(text))


class _Written(bytes):
    """Output already written, on the stack of ``_dumps_slowly``."""


def _dumps_slowly(value: Any) -> bytes:
    """``dumps`` without orjson's limits, walking ``value`` with a stack of its own."""
    out: list[bytes] = []
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if type(item) is _Written:
            out.append(item)
        elif isinstance(item, str):
            out.append(_string(item))
        elif isinstance(item, dict):
            pieces: list[Any] = []
            for key, member in item.items():
                if not isinstance(key, str):
                    raise TypeError(f"a key that is not a string: {key!r}")
                pieces += (_Written((b"," if pieces else b"{") + _string(key) + b":"), member)
            stack += [_Written(b"}"), *reversed(pieces)] if pieces else [_Written(b"{}")]
        elif isinstance(item, list):
            pieces = []
            for member in item:
                pieces += (_Written(b"," if pieces else b"["), member)
            stack += [_Written(b"]"), *reversed(pieces)] if pieces else [_Written(b"[]")]
        elif item is None or isinstance(item, bool):
            out.append(orjson.dumps(item))
        elif isinstance(item, (int, float)):
            out.append(_number(item))
        else:
            # A Fragment, as it is; orjson raises its own TypeError for what is not JSON.
            out.append(orjson.dumps(item))
    return b"".join(out)


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _string(text: str) -> bytes:
    try:
        return orjson.dumps(text)
    except TypeError:
        # Lone surrogates, which UTF-8 cannot hold: escaped, as JSON.stringify escapes them.
        quoted = json.dumps(text, ensure_ascii=False)
        return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", quoted).encode()
