"""Plain text out of messages."""

from __future__ import annotations

from functools import cache

import orjson
import pytest
import regex  # type: ignore[import-untyped]  # Unicode's properties; LiteLLM's tiktoken needs it

from handoff_cli.text import json_visible, one_line, readable, text_of, visible


def test_text_of_strings_blocks_and_anything_else() -> None:
    blocks = [{"type": "text", "text": "a"}, {"type": "image"}, "x", {"text": 5}, {"text": "b"}]
    assert text_of("plain") == "plain"
    assert text_of(blocks) == "a b"
    assert text_of(blocks, "\n") == "a\nb"
    assert text_of(None) == text_of(7) == text_of({"text": "a"}) == ""


def test_one_line_folds_and_cuts() -> None:
    assert one_line("  a\n\tb   c ", 10) == "a b c"
    assert one_line("abcdefghij", 10) == "abcdefghij"
    assert one_line("abcdefghijk", 10) == "abcdefghi…"


# --- what a terminal is never given as it is ---------------------------------------------------

# Unicode's own classes, from the regex module's tables (which Python's unicodedata lacks the
# last of): controls, format characters, surrogates, line and paragraph separators, and the
# default-ignorable code points, which are drawn as nothing.
UNSEEN = regex.compile(r"[\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}]")


@cache
def unseen() -> tuple[list[str], str]:
    """Every character of that class, and all the others as one text (made when a test asks:
    a pass over every code point, which collecting the tests should not pay)."""
    chars = [chr(code) for code in range(0x110000)]
    return [c for c in chars if UNSEEN.match(c)], "".join(c for c in chars if not UNSEEN.match(c))


def test_every_character_drawn_as_nothing_or_that_moves_the_cursor_is_made_visible() -> None:
    CLASS = unseen()[0]  # the class's name
    assert {"\x7f", "\u00ad", "\u034f", "\u3164", "\ufff9", "\ufe0f", "\U000e0100"} <= set(CLASS)
    # Between letters, and (but for an emoji's own selectors and joiner) between keycap digits
    # and between emoji.
    around = [("a", "a"), ("1", "2"), ("\U0001f469", "\U0001f4bb")]
    for char in CLASS:
        for before, after in around[: 1 if char in "\ufe0e\ufe0f\u200d" else 3]:
            text = f"{before}{char}{after}"
            for shown in (visible(text), visible(text, lines=True), readable(text)):
                assert char not in shown or (char in "\n\t" and shown == text), hex(ord(char))
            if char >= " " and not "\ud800" <= char <= "\udfff":  # JSON escapes C0 itself
                data = json_visible(orjson.dumps(text))
                assert char.encode() not in data and orjson.loads(data) == text, hex(ord(char))
    assert json_visible(b'{"k":"a\x7fb"}') == b'{"k":"a\\u007fb"}'  # ASCII: DEL the only one


def test_every_other_character_is_shown_as_it_is() -> None:
    """Letters, marks, spaces, symbols, private use, and what Python's Unicode does not know
    yet (a later Unicode's emoji)."""
    OTHERS = unseen()[1]  # the rest's name
    assert visible(OTHERS) == visible(OTHERS, lines=True) == readable(OTHERS) == OTHERS
    assert json_visible(orjson.dumps(OTHERS)) == orjson.dumps(OTHERS)


@pytest.mark.parametrize(
    "text",
    [
        "\u2764\ufe0f",  # a red heart, as an emoji
        "\u2764\ufe0e",  # as text
        "#\ufe0f\u20e3",  # a keycap
        "\U0001f469\u200d\U0001f4bb",  # a technologist: a woman and a laptop, joined
        "\U0001f3f3\ufe0f\u200d\U0001f308",  # a rainbow flag
        "\U0001f44d\U0001f3fd",  # a thumb of a skin tone
        "\U0001f469\U0001f3fd\u200d\U0001f4bb",
        "\u2194\ufe0f",
    ],
)
def test_an_emojis_own_selectors_and_joiners_are_kept(text: str) -> None:
    assert visible(text) == readable(text) == text
    assert json_visible(orjson.dumps(text)) == orjson.dumps(text)


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("a\ufe0f", "a\\ufe0f"),  # a letter has no emoji form
        ("\ufe0f", "\\ufe0f"),
        ("\u2764\ufe0f\ufe0f", "\u2764\ufe0f\\ufe0f"),  # one selector a character, no more
        ("\U0001f600\U000e0100", "\U0001f600\\U000e0100"),  # an ideographic one carries a byte
        ("\u845b\U000e0100", "\u845b\\U000e0100"),
        ("a\u200db", "a\\u200db"),
        ("\U0001f469\u200d", "\U0001f469\\u200d"),  # a joiner joins two
        ("\u200d\U0001f4bb", "\\u200d\U0001f4bb"),
        ("\U0001f3f4\U000e0067\U000e0062\U000e007f", "\U0001f3f4\\U000e0067\\U000e0062\\U000e007f"),
    ],
)
def test_a_selector_or_a_joiner_of_no_emoji_is_shown(text: str, shown: str) -> None:
    assert visible(text) == readable(text) == shown
