"""The in-place handoff's cut and entry, held to what oh-my-pi 18.2.3 itself appended
(``tests/fixtures/inplace``, made by ``oracles/inplace.py``: the agent's own
``prepareCompaction`` and ``appendCompaction`` on each session, with one document)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from handoff_cli.compaction import (
    compaction_entry,
    cut,
    estimate,
    strip_read_selector,
    with_tokens_after,
)
from handoff_cli.session import load_session
from handoff_cli.tree import branch, leaf

FOLDER = Path(__file__).parent / "fixtures" / "inplace"
DOCUMENT = (FOLDER / "document.md").read_text()
CASES = sorted(FOLDER.glob("*.jsonl"))


def test_the_fixtures_cover_cuts_and_refusals() -> None:
    expected = [json.loads(p.with_suffix(".expected.json").read_text()) for p in CASES]
    assert len(CASES) >= 12
    assert sum("entry" in e for e in expected) >= 10
    assert {e.get("error") for e in expected} >= {
        None,
        "Nothing to hand off (no messages yet)",
        "Nothing to hand off (already compacted)",
    }


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_the_entry_is_the_agents(path: Path) -> None:
    expected = json.loads(path.with_suffix(".expected.json").read_text())
    session = load_session(path)
    records = branch(session, leaf(session))
    messages = sum(1 for r in records if r.type == "message")
    where = cut(records, expected["keep_recent"]) if messages >= 2 else None
    if "error" in expected:
        assert where is None
        reason = "no messages yet" if messages < 2 else "already compacted"
        assert expected["error"] == f"Nothing to hand off ({reason})"
        return
    assert where is not None
    ids = [r.id for r in records]
    theirs: dict[str, Any] = expected["entry"]
    made = compaction_entry(where, DOCUMENT, "0a1b2c3d", ids[-1], "2026-11-30T10:00:00.000Z")
    mine = with_tokens_after(records, made)
    # Entries by their place on the branch: a version-1 file's ids are the agent's random ones.
    assert ids.index(mine["firstKeptEntryId"]) == expected["branch"].index(
        theirs["firstKeptEntryId"]
    )
    assert where.kept == len(ids) - ids.index(mine["firstKeptEntryId"])
    assert theirs["parentId"] == expected["branch"][-1] and mine["parentId"] == ids[-1]
    same = {"id", "parentId", "timestamp", "firstKeptEntryId", "tokensAfter"}
    agent = {k: (mine[k] if k in same else v) for k, v in theirs.items()}
    assert list(mine) == list(agent)  # the agent's key order
    assert mine == agent
    # Ours counts the messages alone: the agent adds the framing of the summary (about 130).
    assert 0 < mine["tokensAfter"] < theirs["tokensAfter"] <= mine["tokensAfter"] + 200


def test_a_branch_ending_in_a_compaction_has_nothing_to_compact() -> None:
    path = FOLDER / "generated-omp-020-20000.jsonl"
    session = load_session(path)
    records = branch(session, leaf(session))
    assert cut(records) is not None
    assert cut([r for r in records if r.type != "compaction"][:3]) is None  # all of it is kept


@pytest.mark.parametrize(
    ("path", "stripped"),
    [
        ("src/a.py", "src/a.py"),
        ("src/a.py:50-200", "src/a.py"),
        ("src/a.py:L5..L9,20+3", "src/a.py"),
        ("src/a.py:raw", "src/a.py"),
        ("src/a.py:1-50:raw", "src/a.py"),
        ("src/a.py:raw:1-50", "src/a.py"),
        ("src/a.py:conflicts", "src/a.py"),
        ("src/a.py:raw:raw", "src/a.py:raw"),  # not a compound: only the last is taken
        ("src/a.py:conflicts:5", "src/a.py:conflicts"),
        (":5", ":5"),  # a selector needs a path before it
        ("C:notes", "C:notes"),
    ],
)
def test_read_selectors_are_stripped_by_the_read_tools_grammar(path: str, stripped: str) -> None:
    assert strip_read_selector(path) == stripped


def test_the_estimate_is_a_quarter_of_the_utf8_bytes_rounded_up() -> None:
    assert [estimate(t) for t in ("", "a", "abcd", "abcde", "é" * 2)] == [0, 1, 1, 2, 1]
    assert estimate("x" * 10_001) == 2_501
