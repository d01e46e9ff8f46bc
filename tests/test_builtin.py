"""The built-in extractive writer: golden documents, where each section comes from, and caps.
Regenerate the golden files with ``UPDATE_GOLDEN=1 make test`` and read the diff."""

from __future__ import annotations

import os
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from handoff_cli.document import SECTIONS, missing_sections, sections_of, unwrap_document
from handoff_cli.handoff.builtin import LIST_ITEMS, write_document
from handoff_cli.handoff.facts import Command, Facts
from handoff_cli.handoff.pipeline import handoff, prepare
from handoff_cli.options import Options

from .conftest import EXAMPLES, FIXTURES, Entries, handoff_entry, write_session

GOLDEN = FIXTURES / "golden"
WEATHER = next(EXAMPLES.glob("-home-dev-projects-weather-cli/*.jsonl"))
CASES = {
    "weather-cli": (WEATHER, "retries"),
    "notes-app": (next(EXAMPLES.glob("--home-dev-projects-notes-app--/*.jsonl")), None),
    "omp-sample": (FIXTURES / "omp/sample-v3.jsonl", None),
    "pi-large": (FIXTURES / "pi/large-session.jsonl", "tui"),
}


def document_for(path: Path, focus: str | None = None) -> str:
    request = prepare(path, Options(model="extractive", focus=focus))
    return write_document(request.facts, request.focus)


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
    assert len(document) <= 2_000 * 4


def parts(document: str) -> dict[str, str]:
    return dict(sections_of(document))


def test_every_section_of_the_latest_summary_survives() -> None:
    got = parts(document_for(WEATHER))
    assert got["Goal"].startswith("Make weather-cli's HTTP client robust")
    assert "- [x] `_with_retries` in weather_cli/http.py" in got["Progress"]
    assert "- [ ] `--retries N` option in weather_cli/cli.py." in got["Progress"]
    assert "- **Cap total backoff at 4.5 s**: user requirement." in got["Key Decisions"]
    assert "Add `--retries` to the argparse parser" in got["Next Steps"]
    assert "On an earlier path, since left: Ran the full test suite" in got["Critical Context"]
    assert "> The forecast command fails whenever the API hiccups." in got["Goal"]  # before it


def summary_facts(summary: str, **fields: Any) -> Facts:
    return Facts(summary=sections_of(summary), **fields)


def test_a_summarys_own_headings_go_where_they_belong() -> None:
    summary = (
        "# Checkpoint\n\n## Objective\nv2\n\n## Completed Work (WP1-WP16)\n- WP1 parser\n"
        "- WP2 lexer\n\n## Current Task: Moving files\nThe user wants them moved.\n\n"
        "### Agreed Structure\n```\nsrc/\n- core/\n\n- utils/\n```\n\n"
        "## User Preferences\n- **E2E tests only**\n\n## Key Decisions Made\n1. Keep old code\n\n"
        "## Next Steps (WP14)\n### WP14: main-new.ts\n- Copy main.ts\n\n"
        "## Key Files\n- a.rs\n- b.rs\n\n## Branch\n`refactor`"
    )
    got = parts(write_document(summary_facts(summary)))
    assert got["Goal"] == "v2"
    done, rest = got["Progress"].split("### In Progress")
    assert "- Completed Work (WP1-WP16): WP1 parser\n- WP2 lexer" in done
    assert "- Current Task: Moving files: The user wants them moved." in rest
    assert "- Agreed Structure:\n```\nsrc/\n- core/\n\n- utils/\n```" in rest  # one item
    assert "- User Preferences: **E2E tests only**" in got["Constraints & Preferences"]
    assert "- Key Decisions Made: Keep old code" in got["Key Decisions"]
    assert "1. Next Steps (WP14): WP14: main-new.ts: Copy main.ts" in got["Next Steps"]
    critical = got["Critical Context"]
    assert "- Key Files:\n  - a.rs\n  - b.rs" in critical and "- Branch: `refactor`" in critical
    assert "- Checkpoint" in critical


def test_finished_work_is_done_and_not_handed_back() -> None:
    done = Facts(
        requests=("Add the --retries flag.",),
        finished=True,
        last_answer="All done:\n- `--retries` added to the CLI\n- 11 tests pass\n\nAnything else?",
    )
    got = parts(write_document(done))
    finished = got["Progress"].split("### In Progress")[0]
    assert "- The work asked for is done; the assistant's report:" in finished
    assert "  - `--retries` added to the CLI\n  - 11 tests pass" in finished  # its items, its words
    assert (
        got["Next Steps"] == "1. Confirm the result with the user, or wait for their next request."
    )
    assert "retries flag" not in got["Next Steps"]


def test_unfinished_work_says_where_it_stopped() -> None:
    working = Facts(
        requests=("Add the flag.",),
        last_answer="Reading the CLI first.",
        stopped="A call to read was made and has no result.",
    )
    got = parts(write_document(working))
    progress = got["Progress"].split("### In Progress")[1]
    assert "- Where it stopped: A call to read was made and has no result." in progress
    assert "The assistant's last words:\n> Reading the CLI first." in progress
    assert got["Next Steps"].startswith("1. Check whether the call that had no result ran")
    asked = Facts(requests=("Add the flag.",), answered=False, stopped="No answer yet.")
    got = parts(write_document(asked))
    assert "not answered yet" in got["Progress"].split("### Pending")[1]
    assert got["Next Steps"] == "1. Answer the latest request (see Goal)."


def test_a_resolved_failure_is_not_the_open_error() -> None:
    fixed = Command("pytest tests/a.py", False, 1, resolved=True)
    got = parts(write_document(Facts(commands=(fixed, Command("pytest", True, 0)))))
    assert "failed, then fixed" in got["Progress"] and "error" not in got["Critical Context"]
    still = Facts(open_errors=("`pytest` (exit code 1)\nE   assert 1 == 2",))
    got = parts(write_document(still))
    assert got["Critical Context"].startswith(
        "- The error still open: `pytest` (exit code 1)\n```\nE   assert 1 == 2\n```"
    )
    assert got["Next Steps"].startswith("1. Fix the error still open")


def test_every_request_is_in_the_goal_in_order() -> None:
    asked = tuple(f"Request number {n}: do thing {n} in module_{n}.py" for n in range(30))
    got = parts(write_document(Facts(requests=asked, answered=False)))
    goal = got["Goal"]
    assert goal.startswith("The original task:\n> Request number 0:")
    assert goal.index("Request number 1:") < goal.index("Request number 28:")
    assert "The latest request:\n> Request number 29:" in goal
    many = tuple(f"Request {n} " + "word " * 40 for n in range(400))
    goal = parts(write_document(Facts(requests=many)))["Goal"]
    assert "earlier requests left out" in goal and "Request 398" in goal  # the latest kept


def test_files_changed_by_the_shell_are_marked_and_paths_are_the_cwds() -> None:
    facts = Facts(
        cwd="/home/u/proj",
        modified_files=("/home/u/proj/src/a.py", "/home/u/proj/notes.txt", "/etc/hosts"),
        shell_files=("/home/u/proj/notes.txt",),
        missing_files=("/home/u/proj/nope.py",),
    )
    critical = parts(write_document(facts))["Critical Context"]
    assert "- Files changed: `src/a.py`, `/etc/hosts`" in critical
    assert (
        "- Files written by shell commands (read from the command lines): `notes.txt`" in critical
    )
    assert "- Paths not found (they do not exist): `nope.py`" in critical


def test_a_trivial_last_message_is_no_next_step() -> None:
    facts = Facts(
        requests=("Rename the module.",),
        acknowledgement="👍",
        go_ahead=True,
        answered=False,
        last_answer="Shall I?",
        stopped="The latest request has no answer yet.",
    )
    got = parts(write_document(facts))
    assert "👍" not in got["Next Steps"] and 'answered "👍"' in got["Progress"]
    thanks = replace(
        facts,
        requests=("What does it do?",),
        go_ahead=False,
        answered=True,
        finished=True,
        stopped=None,
        last_answer="It parses.",
    )
    got = parts(write_document(thanks))
    assert "👍" not in got["Progress"] and "What does it do?" not in got["Next Steps"]


def test_caps_on_every_list_command_and_the_whole() -> None:
    facts = Facts(
        requests=("x " * 2_000,),
        rules=tuple(f"Never do thing number {n}." for n in range(40)),
        modified_files=tuple(f"src/file{n}.py" for n in range(40)),
        commands=tuple(Command(f"make target{n} " + "arg " * 40, True, 0) for n in range(30)),
        summary=sections_of("## Next Steps\n" + "\n".join(f"{n}. step {n}" for n in range(30))),
    )
    document = write_document(facts)
    for name, body in parts(document).items():
        items = [line for line in body.splitlines() if re.match(r"^(- |\d+\. )", line)]
        assert len(items) <= 3 * LIST_ITEMS, name  # Progress holds three lists
    assert all(len(line) <= 220 for line in document.splitlines() if line.startswith("- Ran"))
    assert len(document) <= 2_000 * 4
    assert len(write_document(facts, max_tokens=500)) <= 500 * 4
    focused = write_document(facts, "file7 target3")
    assert len(focused) <= 2_000 * 4
    assert (
        parts(focused)["Constraints & Preferences"].startswith("- Never do thing number 7.")
        is False
    )
    assert "- Ran `make target3" in parts(focused)["Progress"].split("\n")[1]  # focus first


def test_a_second_handoff_is_no_longer_and_holds_nothing_of_our_prompt(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(WEATHER.read_bytes())
    first = unwrap_document(_content(handoff(path, Options(model="extractive")).path))
    second = unwrap_document(_content(handoff(path, Options(model="extractive")).path))
    assert len(second) <= len(first)
    for sentence in (
        "Be concrete",
        "Answer with the Markdown document",
        "handoff document for the",
    ):
        assert sentence not in second
    assert second.count("## Goal") == 1 and missing_sections(second) == []


def _content(path: Path) -> str:

    return str(handoff_entry(path)["content"])


def test_sections_from_a_session_that_edits_files_and_fails(
    tmp_path: Path, entries: Entries
) -> None:
    entries.user("Port the parser to Rust. Never touch the Python tests. Keep the API stable.")
    read = {"type": "toolCall", "id": "r1", "name": "read", "arguments": {"path": "src/parser.py"}}
    entries.assistant("Reading it.", read, stop="toolUse")
    entries.result("r1", "def parse(): ...")
    write = {
        "type": "toolCall",
        "id": "w1",
        "name": "write",
        "arguments": {"path": "rust/src/lib.rs"},
    }
    entries.assistant(write, stop="toolUse")
    entries.result("w1", "written")
    entries.message(
        {
            "role": "bashExecution",
            "command": "cargo test",
            "output": "error[E0425]\n",
            "exitCode": 101,
        }
    )
    entries.assistant("The build fails on E0425. Next I will add the missing import.")
    got = parts(document_for(write_session(tmp_path / "s.jsonl", entries.items)))
    assert "Port the parser to Rust." in got["Goal"]
    assert got["Constraints & Preferences"].splitlines() == [
        "- Never touch the Python tests.",
        "- Keep the API stable.",
    ]
    assert "- Files changed: `rust/src/lib.rs`" in got["Critical Context"]
    assert "- Files read: `src/parser.py`" in got["Critical Context"]
    assert "- The error still open: `cargo test` (exit code 101)" in got["Critical Context"]
    assert "Next I will add the missing import." in got["Next Steps"]
    assert got["Key Decisions"] == "- (none recorded)"
    assert all(name in got for name in SECTIONS)
