"""Plain text out of messages, for the views, the listing and the built-in writer; texts cut
to their head and tail, marked, wherever they are too long to be kept whole; and paths that
are resources, not files."""

from __future__ import annotations

import re
from functools import cache
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

    __slots__ = ("json_bytes", "utf8_bytes")
    utf8_bytes: int
    """The whole text's size in UTF-8."""
    json_bytes: int
    """The size of the whole text's JSON string (quotes and escapes) where it was read."""

    def __new__(cls, text: str, utf8_bytes: int, json_bytes: int) -> CutText:
        cut = super().__new__(cls, text)
        cut.utf8_bytes = utf8_bytes
        cut.json_bytes = json_bytes
        return cut


def quarter_tokens(text: str) -> int:
    """How the agents count a text's tokens with no model: a quarter of its UTF-8 bytes,
    rounded up (of the whole text, where it was read in part)."""
    size = (
        text.utf8_bytes if isinstance(text, CutText) else len(text.encode("utf-8", "surrogatepass"))
    )
    return quarter_of(size)


def quarter_of(size: int) -> int:
    """A quarter of ``size`` bytes, rounded up: their tokens by the agents' estimate."""
    return (size + 3) >> 2


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


# What a terminal must never be given as it is, from a session or a provider: every character
# that moves the cursor, or that is drawn as nothing, or reorders what is drawn. A class, by
# Unicode's own properties (Unicode 16), not a list of examples:
# - controls (Cc: C0, DEL, C1) and lone surrogates (Cs, which UTF-8 cannot carry);
# - format characters (Cf: bidirectional controls, zero-width characters, the soft hyphen,
#   the byte-order mark, interlinear annotations, tag characters, Arabic and Egyptian marks);
# - line and paragraph separators (Zl, Zp);
# - the default-ignorable code points, which a terminal draws as nothing: the combining
#   grapheme joiner, the Hangul fillers, the Khmer inherent vowels, the variation selectors, and
#   those of their blocks not assigned yet. Python's ``unicodedata`` has no such property: the
#   ranges are written out, and tests/test_text.py holds them to the ``regex`` module's tables.
# Not in it: private-use characters (a font's icons) and unassigned ones elsewhere (the emoji of
# a Unicode newer than Python's): drawn, if only as a box.
_UNSEEN = (
    (0x0000, 0x001F),
    (0x007F, 0x009F),
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x0600, 0x0605),
    (0x061C, 0x061C),
    (0x06DD, 0x06DD),
    (0x070F, 0x070F),
    (0x0890, 0x0891),
    (0x08E2, 0x08E2),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x2028, 0x202E),
    (0x2060, 0x206F),
    (0x3164, 0x3164),
    (0xD800, 0xDFFF),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFFB),
    (0x110BD, 0x110BD),
    (0x110CD, 0x110CD),
    (0x13430, 0x1343F),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
)
"""Every character of the class, as ranges (first, last)."""

# An emoji's own selector and joiner are text, not a hiding place: a variation selector 15 or
# 16 right after a character that has an emoji form (a red heart, a keycap's digit) and a
# zero-width joiner between two such (a technologist, a rainbow flag) are kept, so that emoji
# are drawn as emoji; what they could hide is a bit or two a picture. Any other selector (after
# a letter, a second one in a row, one of the 240 ideographic ones, which carry a byte each) and
# any other joiner is shown as its escape; so are tag characters, even in a flag's tag
# sequence: they spell ASCII unseen.
_SELECTORS = "\ufe0e\ufe0f"
_EMOJI_BESIDES_SYMBOLS = (
    "#*0123456789\u203c\u2049\u2139\u2194\u25fb\u25fc\u25fd\u25fe\u2934\u2935\u3030\u303d"
)
"""The characters with an emoji form that are no ``So`` symbol (keycaps, a few marks)."""


def _emoji(char: str) -> bool:
    import unicodedata  # here: only a selector or a joiner asks, and most runs meet none

    return (
        "\U0001f000" <= char <= "\U0001faff"  # the emoji blocks, with a later Unicode's emoji
        or char in _EMOJI_BESIDES_SYMBOLS
        or unicodedata.category(char) == "So"
    )


def _emojis_own(text: str, at: int) -> bool:
    """Whether the character at ``text[at]`` is an emoji's own selector or joiner (above)."""
    char, before = text[at], text[at - 1] if at else "\0"
    if char in _SELECTORS:
        return _emoji(before)
    if char != "\u200d":
        return False
    if before == "\ufe0f" and at > 1:
        before = text[at - 2]
    return at + 1 < len(text) and _emoji(before) and _emoji(text[at + 1])


def _escape(code: int) -> str:
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _json_escape(code: int) -> str:
    if code < 0x10000:
        return f"\\u{code:04x}"
    high, low = divmod(code - 0x10000, 0x400)
    return f"\\u{0xD800 + high:04x}\\u{0xDC00 + low:04x}"


def _shown(match: re.Match[str]) -> str:
    """A character of the class as it is printed: a control as a visible symbol, one
    character for one (C0 as Unicode's control pictures, ESC as ␛; DEL as ␡; C1, which has no
    pictures, and a lone surrogate as U+FFFD); any other as its escape (``\\u202e``), so that
    what is printed reads in the order it is stored and nothing is hidden in it."""
    char, code = match.group(), ord(match.group())
    if code < 0x20:
        return chr(0x2400 + code)
    if code == 0x7F:
        return "\u2421"
    if code < 0xA0 or 0xD800 <= code < 0xE000:
        return "\ufffd"
    return char if _emojis_own(match.string, match.start()) else _escape(code)


def _json_shown(match: re.Match[str]) -> str:
    char, at = match.group(), match.start()
    return char if _emojis_own(match.string, at) else _json_escape(ord(char))


@cache  # compiled when first asked for: most texts printed are ASCII (``visible``)
def _unseen(c0: str) -> re.Pattern[str]:
    """A pattern of the class, of its C0 controls (``_UNSEEN``'s first range) only ``c0``."""
    controls = "".join(f"\\x{ord(char):02x}" for char in c0)
    rest = "".join(f"\\U{first:08x}-\\U{last:08x}" for first, last in _UNSEEN[1:])
    return re.compile(f"[{controls}{rest}]")


_C0 = "".join(map(chr, range(0x20)))
_C0_BUT_LINES = _C0.replace("\n", "")
_C0_BUT_LAYOUT = _C0_BUT_LINES.replace("\t", "")
# An ASCII text can hold only C0 and DEL of the class: a translation, many times faster.
_ASCII = {code: 0x2400 + code for code in range(0x20)} | {0x7F: 0x2421}
_ASCII_BUT_LINES = {k: v for k, v in _ASCII.items() if k != ord("\n")}
_ASCII_BUT_LAYOUT = {k: v for k, v in _ASCII_BUT_LINES.items() if k != ord("\t")}


def visible(text: str, lines: bool = False) -> str:
    """``text`` safe to print on a terminal: no escape sequence from a session or a provider
    can move the cursor, clear the screen or write the clipboard, and no character is drawn
    as nothing or reorders what is shown (those are shown as ``\\u202e``). Newlines stay with
    ``lines``."""
    if text.isascii():
        return text.translate(_ASCII_BUT_LINES if lines else _ASCII)
    return _unseen(_C0_BUT_LINES if lines else _C0).sub(_shown, text)


def readable(text: str) -> str:
    """``text`` for a transcript people read in any viewer: as ``visible`` makes it, keeping
    its newlines and tabs (code keeps its layout), lone surrogates (which UTF-8 cannot carry)
    as U+FFFD."""
    if text.isascii():
        return text.translate(_ASCII_BUT_LAYOUT)
    return _unseen(_C0_BUT_LAYOUT).sub(_shown, text)


def json_visible(data: bytes) -> bytes:
    """JSON text safe to print on a terminal, its value the same: the characters of the class
    in it written as escapes (they occur only inside strings there, JSON's own structure being
    ASCII, and JSON escapes C0 itself); DEL the one in ASCII."""
    if data.isascii():
        return data.replace(b"\x7f", b"\\u007f")
    # No C0: JSON escapes it in strings, and its own white space is no text.
    return _unseen("").sub(_json_shown, data.decode()).encode()
