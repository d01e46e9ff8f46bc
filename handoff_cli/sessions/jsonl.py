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

import io
import json
import re
import sys
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, NamedTuple, overload

import orjson

from handoff_cli.sessions.js import js_number
from handoff_cli.text import CutText, cut_marker


def _reject_constant(name: str) -> Any:
    # JSON.parse has no NaN or Infinity literals, so neither do we.
    raise ValueError(f"invalid JSON constant {name}")


def parse_line(line: bytes | memoryview) -> Any:
    """Parse one line; raise ``ValueError`` if the agents would not accept it either."""
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        text = bytes(line).decode("utf-8", "replace")
        try:
            return json.loads(text, parse_constant=_reject_constant)
        except RecursionError:
            raise ValueError("JSON nested too deeply") from None


LONGEST_TEXT = 1 << 20
"""Characters of the longest string ``parse_bounded`` keeps whole by default: more than any
view, the built-in writer or a document uses. A request to a model reads more (as much as
its window could take, ``context.Context.messages``)."""
_CHUNK = 1 << 18
"""Bytes of a long string decoded at once: orjson takes 13 times a string's size to read it."""
# A string, whole. Possessive (Python 3.11 on), the engine keeps nothing for each escape it
# passes: for a 100 MB text of short lines that would be a gigabyte.
_STRING_BODY = (
    rb'"[^"\\]*+(?:\\.[^"\\]*+)*+"' if sys.version_info >= (3, 11) else rb'"[^"\\]*(?:\\.[^"\\]*)*"'
)
_STRING = re.compile(_STRING_BODY, re.DOTALL)


def parse_bounded(
    data: bytes | memoryview,
    longest: int = LONGEST_TEXT,
    loads: Callable[[bytes | memoryview], Any] = parse_line,
) -> Any:
    """``parse_line`` of ``data``, but each string longer than ``longest`` characters read as
    its head and tail, ``longest`` characters in all: ``text.cut_text`` of it, as a
    ``text.CutText``. The value of a 100 MB line costs a little more than ``longest``, never
    the line again, or four times over (a str of ASCII and one emoji is four bytes a
    character).

    Raises ``ValueError`` where ``parse_line`` would; a line orjson refuses (invalid UTF-8,
    lone surrogates) is parsed whole by the fallback. ``loads``: orjson's own, to refuse it.
    """
    keep = (longest - 100) // 2  # as cut_text keeps it: what it keeps whole, so does this
    whole = 2 * keep + 100
    if len(data) <= whole:
        return loads(data)
    pieces: list[bytes | memoryview] = []
    cuts: dict[str, CutText] = {}
    done = 0
    for match in _STRING.finditer(data):  # from the first quote on, in step with the strings
        start, end = match.span()
        if end - start - 2 <= whole:  # no more characters than its bytes
            continue
        cut = _cut_string(data, start + 1, end - 1, keep)
        if cut is None:
            return loads(data)
        if cut is not _WHOLE:
            # A placeholder in its place, the CutText put back once parsed: a long text given to
            # orjson to write or read costs several times its size.
            placeholder = f"\0handoff-cli: cut text {len(cuts)}\0"
            pieces += (data[done:start], orjson.dumps(placeholder))
            cuts[placeholder] = cut
            done = end
    if not pieces:
        return loads(data)
    value = loads(b"".join([*pieces, data[done:]]))
    if isinstance(value, str):
        return cuts.get(value, value)
    _put_back(value, cuts)
    return value


_WHOLE = CutText("", 0, 0)
"""``_cut_string``'s answer for a string short enough to be read as it is."""


def _cut_string(data: bytes | memoryview, begin: int, end: int, keep: int) -> CutText | None:
    """The string whose JSON text (without its quotes) is ``data[begin:end]``, decoded a
    quarter megabyte at a time: ``cut_text(string, keep)``, its size counted; ``_WHOLE`` where that
    is the string itself; None if orjson cannot read it."""
    head: list[str] = []
    tail: deque[str] = deque()
    head_chars = tail_chars = chars = utf8 = 0
    blank = True
    json_bytes = end - begin + 2  # with its quotes
    while begin < end:
        piece, begin = _decoded(data, begin, min(end, begin + _CHUNK))
        if piece is None:
            return None
        chars += len(piece)
        utf8 += len(piece.encode())
        blank = blank and not piece.strip()
        if head_chars < keep:
            head.append(piece)
            head_chars += len(piece)
        tail.append(piece)
        tail_chars += len(piece)
        while tail_chars - len(tail[0]) >= keep:
            tail_chars -= len(tail.popleft())
    if chars <= 2 * keep + 100:
        return _WHOLE
    head[-1] = head[-1][: len(head[-1]) - (head_chars - keep)]
    tail[0] = tail[0][tail_chars - keep :]
    if blank:  # white space only: no marker, which would make it text (the agents trim it)
        return CutText("".join(head), utf8, json_bytes)
    return CutText("".join([*head, cut_marker(chars - 2 * keep), *tail]), utf8, json_bytes)


def _decoded(data: bytes | memoryview, begin: int, stop: int) -> tuple[str | None, int]:
    """The string text ``data[begin:stop]`` decoded, and where it ended: a few bytes short of
    ``stop`` where that falls inside an escape, a character or a surrogate pair, which
    orjson refuses to read cut."""
    for back in range(13):  # an escaped surrogate pair is 12 bytes
        if stop - back <= begin:
            break
        try:
            return orjson.loads(b'"' + data[begin : stop - back] + b'"'), stop - back
        except orjson.JSONDecodeError:
            continue
    return None, begin


def _put_back(value: Any, cuts: dict[str, CutText]) -> None:
    """Each placeholder string in ``value`` becomes the ``CutText`` it stands for (NUL-framed, it
    is no text of a session's)."""
    stack = [value]
    while stack:
        item = stack.pop()
        members = enumerate(item) if isinstance(item, list) else item.items()
        for key, member in members:
            if isinstance(member, str):
                if member in cuts:
                    item[key] = cuts[member]
            elif isinstance(member, (list, dict)):
                stack.append(member)


def whole_size(value: Any, dumped: bytes) -> int:
    """Bytes of the JSON of what ``value`` stands for, ``dumped`` being its own JSON: each text
    in it that ``parse_bounded`` cut counted as the whole text's JSON where it was read."""
    size = len(dumped)
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, CutText):
            size += item.json_bytes - len(orjson.dumps(item))
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return size


class Verbatim(NamedTuple):
    """JSON text passed on as it was read from a file (orjson read it: it is valid), never
    parsed again; ``dumps`` writes it as it is, and ``output.write_json`` without a copy."""

    data: bytes | memoryview


def _verbatim(value: Any) -> orjson.Fragment:
    if isinstance(value, Verbatim):
        return orjson.Fragment(bytes(value.data))
    raise TypeError(f"Type is not JSON serializable: {type(value).__name__}")


def dumps(value: Any) -> bytes:
    """Compact JSON, keys in insertion order, as ``JSON.stringify`` writes it."""
    if isinstance(value, Verbatim):
        return bytes(value.data)
    try:
        data = orjson.dumps(value, default=_verbatim, option=orjson.OPT_STRICT_INTEGER)
    except TypeError:
        # Lone surrogates (kept from a fallback parse), integers past 2**53 (JavaScript has
        # the nearest double), or nesting deeper than orjson writes (255 levels; it reads 1,024).
        return _dumps_slowly(value)
    return js_numbers(data)


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
_STRING_OR_NUMBER = re.compile(_STRING_BODY + rb"|-?[0-9][0-9.eE+-]*", re.DOTALL)
_QUOTE, _DOT, _E = b'".e'


@overload
def js_numbers(data: bytes) -> bytes: ...
@overload
def js_numbers(data: bytes | memoryview) -> bytes | memoryview: ...
def js_numbers(data: bytes | memoryview) -> bytes | memoryview:
    """orjson's JSON text ``data`` (or JSON as the agents write it) with every number spelled
    as ``JSON.stringify`` spells it; ``data`` itself, not a copy, when all of them already
    are."""
    return _STRING_OR_NUMBER.sub(_respelled, data) if _misspelled(data) else data


def _misspelled(data: bytes | memoryview) -> bool:
    if any(_differs(data, m.start(), m.end()) for m in _FRACTION.finditer(data)):
        return True
    for pattern in _EXPONENTS:
        for match in pattern.finditer(data):
            start = match.start()
            if start and data[start - 1] == _E and _differs(data, start - 1, match.end()):
                return True
    return False


def _differs(data: bytes | memoryview, start: int, end: int) -> bool:
    """Whether JavaScript spells otherwise the number whose fraction or exponent runs from
    ``start`` to ``end``; never for text that is not a number, or one seen with its fraction."""
    head = _DIGITS_BEFORE.search(data, max(0, start - _LONGEST_INTEGER_PART), start)
    if head is None or (data[start] == _E and head.start() and data[head.start() - 1] == _DOT):
        return False
    token = bytes(data[head.start() : end])
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
        elif isinstance(item, Verbatim):
            out.append(bytes(item.data))
        elif isinstance(item, (list, tuple)):
            pieces = []
            for member in item:
                pieces += (_Written(b"," if pieces else b"["), member)
            stack += [_Written(b"]"), *reversed(pieces)] if pieces else [_Written(b"[]")]
        elif item is None or isinstance(item, bool):
            out.append(orjson.dumps(item))
        elif isinstance(item, (int, float)):
            out.append(_number(item))
        else:
            raise TypeError(f"Type is not JSON serializable: {type(item).__name__}")
    return b"".join(out)


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _string(text: str) -> bytes:
    try:
        return orjson.dumps(text)
    except TypeError:
        # Lone surrogates, which UTF-8 cannot hold: escaped, as JSON.stringify escapes them.
        quoted = json.dumps(text, ensure_ascii=False)
        return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", quoted).encode()


# --- JSON objects written in pieces ------------------------------------------------------------


def objects(rows: Iterable[Mapping[str, Any]]) -> Iterator[Verbatim]:
    """Each of ``rows`` as the JSON object ``write_json`` writes of it (an iterator in it
    streamed), made one at a time: a long list of large ones is never held whole."""
    for row in rows:
        data = io.BytesIO()
        write_object(row, data.write)
        yield Verbatim(data.getvalue())


def write_object(fields: Mapping[str, Any], write: Callable[[bytes | memoryview], Any]) -> None:
    write(b"{")
    for position, (key, value) in enumerate(fields.items()):
        write(b"," if position else b"")
        write(dumps(key) + b":")
        if isinstance(value, Iterator):
            write(b"[")
            for index, item in enumerate(value):
                if index:
                    write(b",")
                write(item.data if isinstance(item, Verbatim) else dumps(item))
            write(b"]")
        else:
            write(dumps(value))
    write(b"}")
