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
