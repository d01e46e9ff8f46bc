"""The built-in extractive writer: golden documents, determinism, and where each section comes
from. Regenerate the golden files with ``UPDATE_GOLDEN=1 make test`` and read the diff."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from handoff_cli.config import Options
from handoff_cli.core import prepare
from handoff_cli.extractive import write_document
from handoff_cli.prompt import SECTIONS, handoff_request, missing_sections, to_chat

from .conftest import EXAMPLES, FIXTURES, Entries, tool_call, write_session

GOLDEN = FIXTURES / "golden"
CASES = {
    "weather-cli": (next(EXAMPLES.glob("-home-dev-projects-weather-cli/*.jsonl")), "retries"),
    "notes-app": (next(EXAMPLES.glob("--home-dev-projects-notes-app--/*.jsonl")), None),
    "omp-sample": (FIXTURES / "omp/sample-v3.jsonl", None),
    "pi-large": (FIXTURES / "pi/large-session.jsonl", "tui"),
}


def document_for(path: Path, focus: str | None = None) -> str:
    request = prepare(path, Options(model="extractive", focus=focus))
    return write_document([*request.conversation, request.prompt])


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_documents(name: str) -> None:
    path, focus = CASES[name]
    document = document_for(path, focus)
    golden = GOLDEN / f"{name}.md"
    if os.environ.get("UPDATE_GOLDEN"):
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(document)
    assert document == golden.read_text()
    assert missing_sections(document) == []
    assert document == document_for(path, focus)  # the same session, the same bytes


def sections(document: str) -> dict[str, str]:
    parts = re.split(r"^## ", document, flags=re.MULTILINE)[1:]
    return {
        p.split("\n", 1)[0]: p.split("\n", 1)[1].strip()
        for p in parts
        if p.split("\n")[0] in SECTIONS
    }


def request(tmp_path: Path, entries: Entries, focus: str | None = None) -> list[dict[str, object]]:
    path = write_session(tmp_path / "s.jsonl", entries.items)
    request = prepare(path, Options(model="extractive", focus=focus))
    return [*request.conversation, request.prompt]


def test_sections_from_a_session_that_edits_files_and_fails(
    tmp_path: Path, entries: Entries
) -> None:
    entries.user("Port the parser to Rust. Never touch the Python tests. Keep the API stable.")
    read = {**tool_call("r1", "read"), "arguments": {"path": "src/parser.py"}}
    entries.assistant("Reading it.", read, stop="toolUse")
    entries.result("r1", "def parse(): ...")
    write = {**tool_call("w1", "write"), "arguments": {"file_path": "rust/src/lib.rs"}}
    entries.assistant(write, stop="toolUse")
    entries.result("w1", "written")
    entries.message(
        {
            "role": "bashExecution",
            "command": "cargo test",
            "output": "error[E0425]\n",
            "exitCode": 101,
            "cancelled": False,
            "truncated": False,
        }
    )
    entries.assistant("The build fails on E0425. Next I will add the missing import.")
    got = sections(write_document(request(tmp_path, entries)))
    assert "Port the parser to Rust." in got["Goal"]
    assert got["Constraints & Preferences"].splitlines() == [
        "- Never touch the Python tests.",
        "- Keep the API stable.",
    ]
    assert "- Wrote or edited `rust/src/lib.rs`" in got["Progress"]
    assert "> The build fails on E0425." in got["Progress"]
    assert "- Files read: `src/parser.py`" in got["Critical Context"]
    assert "- Files modified: `rust/src/lib.rs`" in got["Critical Context"]
    assert "- Last failing command: `cargo test` (exit code 101)" in got["Critical Context"]
    assert "error[E0425]" in got["Critical Context"]
    assert "Next I will add the missing import." in got["Next Steps"]
    assert got["Key Decisions"] == "- (none recorded)"


def test_sections_from_a_compaction_summary(tmp_path: Path, entries: Entries) -> None:
    kept = entries.user("Now the CLI flag.")
    summary = (
        "## Goal\nShip v2.\n\n## Constraints & Preferences\n- No new dependencies.\n\n"
        "## Key Decisions\n- **SQLite**: simplest.\n"
    )
    entries.add("compaction", summary=summary, firstKeptEntryId=kept, tokensBefore=9)
    entries.assistant("Adding it.")
    entries.user("Also update the docs, and always run the linter.")
    got = sections(write_document(request(tmp_path, entries, focus="docs")))
    assert got["Goal"].startswith("From the latest compaction summary:\n> Ship v2.")
    assert "Focus of this handoff: docs" in got["Goal"]
    assert got["Key Decisions"] == "- **SQLite**: simplest."
    assert got["Constraints & Preferences"].splitlines() == [
        "- Also update the docs, and always run the linter.",
        "- No new dependencies.",
    ]
    assert "The last request has no answer yet:\n> Also update the docs" in got["Progress"]


def test_focus_puts_matching_facts_first() -> None:
    messages = to_chat(
        [
            {"role": "user", "content": "Always format with black. Never edit the docs folder."},
        ]
    )
    plain = sections(write_document([*messages, *handoff_request([], None)]))
    focused = sections(write_document([*messages, *handoff_request([], "docs")]))
    assert plain["Constraints & Preferences"].startswith("- Always format")
    assert focused["Constraints & Preferences"].startswith("- Never edit the docs folder.")
