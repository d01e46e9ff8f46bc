"""JSON lines as the agents read and write them.

orjson does the work; the standard library is the fallback for the few inputs orjson refuses
but the agents (JavaScript's ``JSON.parse`` over text decoded with replacement characters)
accept: invalid UTF-8 bytes inside strings and lone surrogate escapes.
"""

from __future__ import annotations

import json
from typing import Any

import orjson


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
    """Compact JSON, keys in insertion order, as ``JSON.stringify`` writes it."""
    try:
        return orjson.dumps(value)
    except TypeError:
        # Lone surrogates (kept from a fallback parse) are escaped, as JSON.stringify does.
        return json.dumps(value, ensure_ascii=True, separators=(",", ":")).encode()


def dumps_line(value: Any) -> bytes:
    """One JSONL line: compact JSON and a newline."""
    return dumps(value) + b"\n"
