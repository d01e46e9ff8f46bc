"""Plain text out of messages."""

from __future__ import annotations

from handoff_cli.text import one_line, text_of


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
