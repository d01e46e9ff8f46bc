"""The README stays short, and the reference in docs/ says what ``--help`` says."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from .conftest import run_cli

PROJECT = Path(__file__).parent.parent
COMMANDS = ("handoff", "show", "list", "rotate", "check", "export", "config", "trust")
README_LINES = 300
"""A newcomer reads it in ten minutes; the reference is docs/commands.md."""


def test_the_readme_is_short_and_links_the_reference() -> None:
    readme = (PROJECT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) < README_LINES
    for linked in re.findall(r"\]\((docs/[\w.-]+\.md)", readme):
        assert (PROJECT / linked).is_file(), linked


@pytest.mark.parametrize("command", COMMANDS)
def test_every_option_of_every_command_is_in_the_reference(command: str) -> None:
    shown = run_cli(command, "--help")
    assert shown.code == 0, shown.stderr
    options = re.findall(r"^\s+(?:(-\w), )?(--[a-z][a-z0-9-]*)", shown.stdout, re.MULTILINE)
    reference = (PROJECT / "docs" / "commands.md").read_text(encoding="utf-8")
    missing = [
        long
        for short, long in options
        if long != "--help"
        and not re.search(rf"{re.escape(long)}\b", reference)
        and not (short and re.search(rf"`{re.escape(short)}[ `]", reference))
    ]
    assert not missing, f"handoff {command}: {missing} not in docs/commands.md"


def test_the_reference_links_land() -> None:
    docs = PROJECT / "docs"
    for page in docs.glob("*.md"):
        text = page.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(((?!https?:)[\w./-]+\.md)(?:#[\w-]+)?\)", text):
            assert (page.parent / target).resolve().is_file(), f"{page.name}: {target}"
