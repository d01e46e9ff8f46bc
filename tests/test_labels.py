"""Real sessions, labelled by people who read them (tests/fixtures/real, tests/labels.py): what
the built-in writer's documents and ``show --facts`` say of real work, held to those labels.

``scores.json`` keeps the figures of the last deliberate change, per class: the checks pass no
fewer than that, and at least ``FLOOR`` of them pass overall. ``UPDATE_GOLDEN=1`` writes them
again (then read what moved)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests import labels
from tests.labels import Document, document_checks, facts_checks, folded, names_path, same_path

from .conftest import REAL, run_cli

SCORES = REAL / "scores.json"
FLOOR = labels.FLOOR


def in_process(home: Path, args: list[str]) -> str:
    done = run_cli(*args, env={"HOME": str(home)}, cwd=home)
    if done.code != 0:
        raise RuntimeError(done.stderr.strip()[-300:])
    return done.stdout


@pytest.mark.heavy  # a whole corpus: make test-heavy
def test_real_sessions_pass_their_labels() -> None:
    results, refused = labels.run_all(in_process)
    found = labels.counts(results)
    shown: dict[str, object] = {
        "sessions": len(results),
        "not read": sorted(str(p.relative_to(REAL)) for p in refused),
        "classes": found,
    }
    if os.environ.get("UPDATE_GOLDEN"):
        SCORES.write_text(json.dumps(shown, indent=1, ensure_ascii=False) + "\n")
    kept = json.loads(SCORES.read_text())
    assert len(results) >= 25 and shown["not read"] == kept["not read"]
    for kind, row in found.items():
        before: dict[str, int] = kept["classes"][kind]
        assert row["checks"] == before["checks"], kind  # the labels did not change
        assert row["document"] >= before["document"], (kind, row, before)
        assert row["facts"] >= before["facts"], (kind, row, before)
    total = {k: sum(row[k] for row in found.values()) for k in ("checks", "document", "facts")}
    assert total["document"] >= FLOOR * total["checks"]
    assert total["facts"] >= FLOOR * total["checks"]


def test_the_labels_come_from_many_repositories_agents_and_languages() -> None:
    written = [json.loads(p.read_text()) for p in REAL.rglob("*" + labels.LABELS)]
    repositories = {p.parent.name for p in REAL.rglob("*" + labels.LABELS)}
    assert len(written) >= 25 and len(repositories) >= 10
    assert {w["agent"] for w in written} >= {"claude", "codex", "pi", "gemini", "qwen", "opencode"}
    assert len({w["language"] for w in written}) >= 5
    assert {w["finished"] for w in written} == {True, False}


# --- the checker itself: it fails what it should ------------------------------------------------

LABELS = {
    "task_terms": ["export command"],
    "requests": ["Add an export command to notes", "Also write the tests"],
    "injected": ["<environment_context>"],
    "files_changed": ["src/export.py"],
    "failed_paths": ["src/gone.py"],
    "finished": True,
    "open_errors": [],
    "harmless_exits": ["grep -rn export src"],
    "constraints": ["never touch the CLI"],
}
GOOD = """## Goal
The original task:
> Add an export command to notes. Never touch the CLI.

The latest request:
> Also write the tests

## Constraints & Preferences
- Never touch the CLI.

## Progress
### Done
- The export command is added; 4 tests pass.

### In Progress
- (none recorded)

### Pending
- (none recorded)

## Key Decisions
- (none recorded)

## Critical Context
- Ran `grep -rn export src`: passed
- Paths not found: `src/gone.py`

## Next Steps
1. Confirm the result with the user.

<files>
# src/
export.py (Write)
</files>
"""


def test_a_good_document_passes_every_check() -> None:
    results = list(document_checks(LABELS, GOOD, "/home/u/notes"))
    assert [(kind, ok) for kind, _, ok in results if not ok] == []


@pytest.mark.parametrize(
    ("change", "failing"),
    [
        (("Add an export command to notes. Never", "<environment_context> Never"), "task"),
        (("1. Confirm the result with the user.", "1. Also write the tests"), "finished"),
        (("- The export command is added; 4 tests pass.", "- (none recorded)"), "finished"),
        (("export.py (Write)", "export.py (Read)"), "changed"),
        (("- Paths not found: `src/gone.py`", "- Files read: `src/gone.py`"), "failed"),
        (("`grep -rn export src`: passed", "`grep -rn export src`: failed"), "harmless"),
        (("- Never touch the CLI.\n", "- (none recorded)\n"), "constraints"),
    ],
)
def test_a_wrong_document_fails_its_check(change: tuple[str, str], failing: str) -> None:
    wrong = GOOD.replace(*change, 1)
    assert wrong != GOOD
    results = list(document_checks(LABELS, wrong, "/home/u/notes"))
    assert failing in {kind for kind, _, ok in results if not ok}


def test_the_facts_checks_read_the_facts_json() -> None:
    facts = {
        "cwd": "/home/u/notes",
        "requests": [
            "Add an export command to notes. Never touch the CLI.",
            "Also write the tests",
        ],
        "modified_files": ["/home/u/notes/src/export.py"],
        "read_files": [],
        "read_set": [],
        "finished": True,
        "open_errors": [],
        "commands": [{"text": "grep -rn export src", "ok": True}],
        "rules": ["Never touch the CLI."],
    }
    assert all(ok for _, _, ok in facts_checks(LABELS, facts))
    wrong = facts | {"finished": False, "read_set": ["src/gone.py"]}
    assert {k for k, _, ok in facts_checks(LABELS, wrong) if not ok} == {"finished", "failed"}


def test_paths_are_compared_from_the_sessions_folder() -> None:
    assert same_path("src/a.py", "/w/p/src/a.py", "/w/p")
    assert not same_path("README.md", "/w/p/docs/README.md", "/w/p")  # another file
    assert not same_path("p/README.md", "/w/p/README.md", "/w/p")  # /w/p/p/README.md
    assert names_path("core/a.ts", "/w/p/src/core/a.ts", "/w/p")  # after a `cd src`
    assert not names_path("a.ts", "/w/p/src/a.ts", "/w/p")  # a bare name says too little
    assert same_path("C:\\x\\y.txt", "C:/x/y.txt", None)


def test_the_files_tree_is_read_whole() -> None:
    document = Document.read(
        "## Goal\nx\n\n<files>\na.txt (Read)\n# src/\n## core/\nb.py (RW)\n</files>"
    )
    assert document.files == {"a.txt": "Read", "src/core/b.py": "RW"}
    assert folded("> Some  `Text`\n> here") == "some text here"
