"""Plain text out of messages, for the views, the listing and the built-in writer."""

from __future__ import annotations

from typing import Any


def text_of(content: Any, separator: str = " ") -> str:
    """The text of a message's ``content``: a string, or the text of its blocks (or parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return separator.join(
            b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str)
        )
    return ""


def one_line(text: str, limit: int) -> str:
    """``text`` with its white space folded, cut to ``limit`` characters."""
    folded = " ".join(text.split())
    return folded if len(folded) <= limit else folded[: limit - 1] + "…"


# Control characters as visible symbols, one character for one: C0 as Unicode's control
# pictures (ESC as ␛), DEL as ␡, and C1, which has no pictures, as the replacement character.
_PICTURES = {
    **{code: 0x2400 + code for code in range(0x20)},
    0x7F: 0x2421,
    **{code: 0xFFFD for code in range(0x80, 0xA0)},
    **{code: 0xFFFD for code in range(0xD800, 0xE000)},  # lone surrogates cannot be printed
}
_PICTURES_KEEPING_LINES = {k: v for k, v in _PICTURES.items() if k != ord("\n")}


def visible(text: str, lines: bool = False) -> str:
    """``text`` safe to print on a terminal: no escape sequence from a session or a provider
    can move the cursor, clear the screen or write the clipboard. Newlines stay with
    ``lines``."""
    return text.translate(_PICTURES_KEEPING_LINES if lines else _PICTURES)
