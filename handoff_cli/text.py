"""Plain text out of messages, for the views, the listing and the built-in writer; texts cut
to their head and tail, marked, wherever they are too long to be kept whole; and paths that
are resources, not files."""

from __future__ import annotations

import re
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
    if len(text) <= 16 * limit + 1024:
        folded = " ".join(text.split())
    else:  # only its start is shown: a long text is folded no further than that
        words: list[str] = []
        size = -1
        for match in _WORD.finditer(text):
            words.append(match.group())
            size += len(words[-1]) + 1
            if size > limit:
                break
        folded = " ".join(words)
    return folded if len(folded) <= limit else folded[: limit - 1] + "…"


_WORD = re.compile(r"\S+")  # what str.split() separates: the same white space
URL_SCHEME = re.compile(r"[a-z][a-z0-9+.-]*://", re.IGNORECASE)
"""A URL's ``scheme://``."""


def is_url(path: str) -> bool:
    """Whether ``path`` holds a ``scheme://`` resource (``https://``, omp's ``artifact://``,
    ``file.ts:conflict://1``...) rather than naming a file (oh-my-pi's ``isUrlSchemePath``)."""
    return URL_SCHEME.search(path) is not None


class CutText(str):
    """A text read as its head and tail only (``cut_text``), too long to be held whole; it
    knows the size of the whole."""

    __slots__ = ("utf8_bytes",)
    utf8_bytes: int
    """The whole text's size in UTF-8."""

    def __new__(cls, text: str, utf8_bytes: int) -> CutText:
        cut = super().__new__(cls, text)
        cut.utf8_bytes = utf8_bytes
        return cut


def cut_marker(count: int) -> str:
    """What stands in a cut text for the ``count`` characters left out."""
    return f"\n[… {count:,} characters cut …]\n"


_MARKER = re.compile(r"\n\[… ([0-9,]+) characters cut …\]\n")


def cut_text(text: str, keep: int) -> str:
    """The head and the tail of ``text``, ``keep`` characters each, the cut marked; ``text``
    itself when that would not be shorter. The count is of the characters of the whole text,
    also where what is cut away held texts cut already (read so from a file)."""
    if len(text) <= 2 * keep + 100:
        return text
    cut = len(text) - 2 * keep
    for marker in _MARKER.finditer(text, keep, len(text) - keep):
        cut += int(marker.group(1).replace(",", "")) - len(marker.group())
    return text[:keep] + cut_marker(cut) + text[-keep:]


# Control characters as visible symbols, one character for one: C0 as Unicode's control
# pictures (ESC as ␛), DEL as ␡, and C1, which has no pictures, as the replacement character.
_PICTURES: dict[int, int | str] = {
    **{code: 0x2400 + code for code in range(0x20)},
    0x7F: 0x2421,
    **{code: 0xFFFD for code in range(0x80, 0xA0)},
    **{code: 0xFFFD for code in range(0xD800, 0xE000)},  # lone surrogates cannot be printed
}
# Characters that reorder or hide text (bidirectional overrides and isolates, zero-width
# characters, the byte-order mark, line and paragraph separators): shown as their escapes, so
# that what is printed reads in the order it is stored and nothing is hidden in it.
_HIDDEN = [
    0x061C,
    0x180E,
    *range(0x200B, 0x2010),
    *range(0x2028, 0x202F),
    *range(0x2060, 0x2070),
    0xFEFF,
    *range(0xE0000, 0xE0080),  # tag characters: text that is there and not seen
]
_PICTURES |= {code: f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}" for code in _HIDDEN}
_PICTURES_KEEPING_LINES = {k: v for k, v in _PICTURES.items() if k != ord("\n")}
_PICTURES_KEEPING_LAYOUT = {k: v for k, v in _PICTURES_KEEPING_LINES.items() if k != ord("\t")}


def visible(text: str, lines: bool = False) -> str:
    """``text`` safe to print on a terminal: no escape sequence from a session or a provider
    can move the cursor, clear the screen or write the clipboard, and no character reorders
    or hides what is shown (those are shown as ``\\u202e``). Newlines stay with ``lines``."""
    return text.translate(_PICTURES_KEEPING_LINES if lines else _PICTURES)


def readable(text: str) -> str:
    """``text`` for a transcript people read in any viewer: as ``visible`` makes it, keeping
    its newlines and tabs (code keeps its layout), lone surrogates (which UTF-8 cannot carry)
    as U+FFFD."""
    return text.translate(_PICTURES_KEEPING_LAYOUT)


def _json_escape(code: int) -> str:
    if code < 0x10000:
        return f"\\u{code:04x}"
    high, low = divmod(code - 0x10000, 0x400)
    return f"\\u{0xD800 + high:04x}\\u{0xDC00 + low:04x}"


# The same characters in JSON text, as escapes: they occur only inside strings there (JSON's
# own structure is ASCII), where an escape stands for the character itself.
_JSON_ESCAPES = {code: _json_escape(code) for code in [*range(0x80, 0xA0), *_HIDDEN]}


def json_visible(data: bytes) -> bytes:
    """JSON text safe to print on a terminal, its value the same: C1 controls and the
    characters that reorder or hide text written as escapes (JSON escapes C0 already)."""
    return data.decode().translate(_JSON_ESCAPES).encode()
