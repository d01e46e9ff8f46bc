"""The in-place handoff's cut and entry, held to what oh-my-pi itself appended
(``tests/fixtures/inplace``, made by ``oracles/inplace.py``: 18.2.3's own ``prepareCompaction``
and ``appendCompaction`` on each session, with one document, which 18.3.4 appends alike; and
``tests/fixtures/omp183/snapshot``, 18.3.4's after the compactions only 18.3 reads); and the
files its ``<files>`` block lists, one rule for both modes, held to the agent's own
``computeFileLists`` (``tests/fixtures/files``, made by ``oracles/files.py``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from handoff_cli.agents import OMP
from handoff_cli.agents.omp import (
    compaction_entry,
    cut,
    sessions_folder,
    strip_read_selector,
    with_tokens_after,
)
from handoff_cli.document import files_block
from handoff_cli.handoff.facts import facts_of
from handoff_cli.sessions.session import load_session
from handoff_cli.sessions.tree import branch, leaf
from handoff_cli.text import quarter_tokens

from .conftest import FIXTURES, OMP183, key_orders, printed

FOLDER = Path(__file__).parent / "fixtures" / "inplace"
DOCUMENT = (FOLDER / "document.md").read_text()
CASES = sorted(FOLDER.glob("*.jsonl"))
SNAPSHOTS = sorted((OMP183 / "snapshot").glob("*.jsonl"))


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


def in_place(path: Path, theirs: dict[str, Any], scratch: Path) -> dict[str, Any]:
    """Our in-place handoff of the session at ``path`` in the shape the agent's outcome
    ``theirs`` is kept in: its refusal, or the leaf, the branch, the entry and the context
    after it. The entry takes the agent's ``id`` and ``timestamp`` (the run's) and, once ours
    is checked to fall short of it by the agent's framing of the summary, its ``tokensAfter``."""
    session = load_session(path)
    records = branch(session, leaf(session))
    where = cut(records, theirs["keep_recent"])
    if where is None:
        return {
            "keep_recent": theirs["keep_recent"],
            "error": "Nothing to hand off (already compacted)",
        }
    agent = theirs.get("entry", {})
    made = compaction_entry(
        where, DOCUMENT, agent.get("id"), records[-1].id, agent.get("timestamp")
    )
    mine = with_tokens_after(records, made)
    assert 0 < mine["tokensAfter"] < agent.get("tokensAfter", 0) <= mine["tokensAfter"] + 200
    mine["tokensAfter"] = agent["tokensAfter"]
    after = scratch / path.name
    after.write_bytes(path.read_bytes() + json.dumps(mine).encode() + b"\n")
    ids = [r.id for r in records]
    return {
        "keep_recent": theirs["keep_recent"],
        "leaf": ids[-1],
        "branch": ids,
        "entry": mine,
        "context": printed(after, OMP),
    }


def test_after_a_snapshot_the_cut_is_18_3s(tmp_path: Path) -> None:
    """After a snapshot compaction, 18.3.4 summarises from the entry after the one it replays
    through (its kept entries too), on or off its Anthropic payload, where 18.2.3 starts after
    the compaction and so often finds nothing to hand off; elsewhere the two agree."""
    theirs: dict[str, Any] = {}
    mine: dict[str, Any] = {}
    for path in SNAPSHOTS:
        for expected in json.loads(path.with_suffix(".omp183-inplace.json").read_text()):
            name = f"{path.stem} at {expected['keep_recent']}"
            theirs[name] = expected
            mine[name] = in_place(path, expected, tmp_path)
    assert mine == theirs
    assert key_orders(mine) == key_orders(theirs)
    handed_off = {name for name, outcome in theirs.items() if "entry" in outcome}
    assert {"snapshot-compaction at 5", "snapshot-at-leaf at 5"} <= handed_off


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
        ("src/a.py:L\u0663", "src/a.py:L\u0663"),  # the read tool's digits are ASCII ones
        ("src/a.py:\u0661-\u0665", "src/a.py:\u0661-\u0665"),
    ],
)
def test_read_selectors_are_stripped_by_the_read_tools_grammar(path: str, stripped: str) -> None:
    assert strip_read_selector(path) == stripped


def test_the_estimate_is_a_quarter_of_the_utf8_bytes_rounded_up() -> None:
    assert [quarter_tokens(t) for t in ("", "a", "abcd", "abcde", "é" * 2)] == [0, 1, 1, 2, 1]
    assert quarter_tokens("x" * 10_001) == 2_501


FILE_LISTS = json.loads((FIXTURES / "files" / "omp-file-lists.json").read_text())


@pytest.mark.parametrize("case", FILE_LISTS["cases"], ids=lambda case: case["name"])
def test_both_modes_list_the_files_the_agent_lists(case: dict[str, Any], tmp_path: Path) -> None:
    """The in-place compaction's details and summary, and a new session's ``<files>`` block,
    list what oh-my-pi's own ``computeFileLists`` does for the same tool calls (the block of a
    new session reads a tool named ``Read`` too, which oh-my-pi's rule passes over)."""
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(case["lines"]) + "\n")
    session = load_session(path)
    records = branch(session, leaf(session))
    expected = case["omp"]
    where = cut(records, keep_recent=1)
    assert where is not None
    entry = compaction_entry(where, FILE_LISTS["document"], "c", records[-1].id, "t")
    assert entry["details"] == {k: expected[k] for k in ("readFiles", "modifiedFiles")}
    block = expected["files"]
    assert entry["summary"] == FILE_LISTS["document"] + (f"\n\n{block}" if block else "")
    if any('"name": "Read"' in line for line in case["lines"]):
        return  # a new session's own lists read every agent's read tool, "Read" too (facts)
    facts = facts_of(session, records)
    lists = {"readFiles": list(facts.read_files), "modifiedFiles": list(facts.modified_files)}
    assert lists == {k: expected[k] for k in ("readFiles", "modifiedFiles")}
    assert files_block(facts.read_files, facts.modified_files, facts.read_set) == expected["files"]


def test_the_file_probes_cover_the_grammar() -> None:
    """The probes that the two copies of the rule told apart, and each kind of edge."""
    reads = {c["name"]: c["omp"]["readFiles"] for c in FILE_LISTS["cases"]}
    assert reads["read 'a.py:raw:raw'"] == ["a.py:raw"]
    assert reads["read 'a.py:L1:L2'"] == ["a.py:L1"]
    assert reads["read 'file:///tmp/a.py'"] == [] and reads["read 'a.py:conflict://1'"] == []
    assert reads["read 'C:\\\\src\\\\a.py:L1-L2'"] == ["C:\\src\\a.py"]
    assert reads["read 'dir:with:colons/a.py'"] == ["dir:with:colons/a.py"]
    assert len(FILE_LISTS["cases"]) >= 140


HOME = Path("/home/u")


def test_omp_folder_rules(tmp_path: Path) -> None:
    assert sessions_folder({}, HOME) == HOME / ".omp/agent/sessions"
    assert sessions_folder({"PI_CONFIG_DIR": ".ohmy"}, HOME) == HOME / ".ohmy/agent/sessions"
    assert (
        sessions_folder({"OMP_PROFILE": "work"}, HOME) == HOME / ".omp/profiles/work/agent/sessions"
    )
    assert sessions_folder({"PI_PROFILE": "old"}, HOME) == HOME / ".omp/profiles/old/agent/sessions"
    both = {"OMP_PROFILE": "", "PI_PROFILE": "old"}  # an empty OMP_PROFILE means the default
    assert sessions_folder(both, HOME) == HOME / ".omp/agent/sessions"
    custom = {"PI_CODING_AGENT_DIR": str(tmp_path / "agent")}
    assert sessions_folder(custom, HOME) == tmp_path / "agent/sessions"
    xdg = {"XDG_DATA_HOME": str(tmp_path / "data")}
    assert sessions_folder(xdg, HOME, "linux") == HOME / ".omp/agent/sessions"  # not migrated yet
    (tmp_path / "data/omp").mkdir(parents=True)
    assert sessions_folder(xdg, HOME, "linux") == tmp_path / "data/omp/sessions"
    assert sessions_folder(xdg, HOME, "darwin") == tmp_path / "data/omp/sessions"
    assert sessions_folder(xdg, HOME, "win32") == HOME / ".omp/agent/sessions"
    assert sessions_folder({**xdg, **custom}, HOME, "linux") == tmp_path / "agent/sessions"
