"""A read's selector, and a read that failed, in both ``<files>`` blocks: a new session's (the
facts') and an in-place compaction's (oh-my-pi's own, ``omp.cut``).

oh-my-pi's compaction (pi-agent-core 18.2.3 ``compaction/utils.ts``: ``splitReadSelector``,
``extractFileOpsFromMessage``; the same in 18.3.4's bundle) strips only a trailing ``:``
selector of the read tool's grammar (a range list, ``raw``, ``conflicts``, a range and ``raw``
in either order), never a ``#``: its read tool has no ``#section`` selector, so
``README.md#intro`` is a path it does not find (``Path 'README.md#intro' not found``). Both
blocks read a call's path by that one rule (``omp.file_operation``). They differ where they
mean to: the agent's compaction lists every call unread, as oh-my-pi writes it in place; a new
session's block lists the files the branch read and changed, not a call that found none
(people reading real sessions marked such a listing wrong: ``tests/test_labels.py``, class
``failed``). A ``#`` in a real file's name is the name's."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from handoff_cli.agents.omp import compaction_entry, cut
from handoff_cli.document import files_block, with_files
from handoff_cli.handoff.facts import facts_of
from handoff_cli.handoff.tools import missing
from handoff_cli.sessions.session import load_session
from handoff_cli.sessions.tree import branch, leaf

from .conftest import Entries, run_cli, write_session

DOCUMENT = "## Goal\nRead the guide."
NOT_FOUND = "Path '{}' not found"  # what oh-my-pi's read tool answers for a path it cannot find

# (the read's path, whether the read tool found it, the path both blocks list)
READS = [
    ("docs/guide.md#section", False, "docs/guide.md#section"),
    ("src/a.py#L10-20", False, "src/a.py#L10-20"),
    ("docs/guide.md#intro:raw", False, "docs/guide.md#intro"),
    ("notes/issue#42.md", True, "notes/issue#42.md"),  # a '#' of the file's own name
    ("notes/issue#42.md:5-9", True, "notes/issue#42.md"),
    ("src/a.py:10-20", True, "src/a.py"),
    ("src/a.py:L10-L20", True, "src/a.py"),
    ("src/a.py:5-16,960-973", True, "src/a.py"),
    ("src/a.py:50+10", True, "src/a.py"),
    ("src/a.py:5..9", True, "src/a.py"),
    ("src/a.py:5-", True, "src/a.py"),
    ("src/a.py:raw", True, "src/a.py"),
    ("src/a.py:conflicts", True, "src/a.py"),
    ("src/a.py:1-50:raw", True, "src/a.py"),
    ("src/a.py:raw:1-50", True, "src/a.py"),
    ("src/a.py:L1:L2", True, "src/a.py:L1"),  # two ranges are no compound: the last goes
    ("src/a.py:-60", True, "src/a.py:-60"),  # the read tool's tail, not the compaction's
    ("src/a.py:1-50", False, "src/a.py"),  # failed, listed all the same
]


def session(path: Path, reads: list[tuple[str, bool]], last: str = "ok") -> Path:
    """A user's request, one turn that reads ``reads`` (each found or not) and edits
    ``src/b.py``, the results, then a last exchange (``last``: the kept part)."""
    entries = Entries()
    entries.user("Read the guide and fix b.")
    calls = [("read", path) for path, _ in reads] + [("edit", "src/b.py")]
    entries.assistant(
        *(
            {"type": "toolCall", "id": f"c{i}", "name": tool, "arguments": {"path": target}}
            for i, (tool, target) in enumerate(calls)
        ),
        stop="toolUse",
    )
    found = [ok for _, ok in reads] + [True]
    for i, ((_, target), ok) in enumerate(zip(calls, found, strict=True)):
        text = "ok" if ok else NOT_FOUND.format(target)
        entries.message(
            {
                "role": "toolResult",
                "toolCallId": f"c{i}",
                "toolName": calls[i][0],
                "content": [{"type": "text", "text": text}],
                "isError": not ok,
                "timestamp": 3,
            }
        )
    entries.assistant("Done.")
    entries.user("next")
    entries.assistant(last)
    return write_session(path, entries.items)


def lists(path: Path) -> tuple[str, Any]:
    """(a new session's block, the in-place compaction entry)."""
    loaded = load_session(path)
    records = branch(loaded, leaf(loaded))
    where = cut(records, keep_recent=1)
    assert where is not None
    entry = compaction_entry(where, DOCUMENT, "c", records[-1].id, "t")
    facts = facts_of(loaded, records)
    return files_block(facts.read_files, facts.modified_files, facts.read_set), entry


@pytest.mark.parametrize(("read", "found", "listed"), READS, ids=[r[0] for r in READS])
def test_a_read_is_listed_by_the_agents_rule_in_both(
    tmp_path: Path, read: str, found: bool, listed: str
) -> None:
    block, entry = lists(session(tmp_path / "s.jsonl", [(read, found)]))
    assert entry["details"] == {"readFiles": [listed], "modifiedFiles": ["src/b.py"]}
    assert entry["summary"] == with_files(DOCUMENT, files_block([listed], ["src/b.py"], {listed}))
    read_files = [listed] if found else []  # a call that found no file: no file read
    assert block == files_block(read_files, ["src/b.py"], set(read_files))


def test_a_section_read_and_its_file_are_two_paths(tmp_path: Path) -> None:
    reads = [("docs/guide.md#section", False), ("docs/guide.md:1-40", True)]
    block, entry = lists(session(tmp_path / "s.jsonl", reads))
    assert entry["details"]["readFiles"] == ["docs/guide.md", "docs/guide.md#section"]
    assert block == "<files>\n# docs/\nguide.md (Read)\n# src/\nb.py (Write)\n</files>"
    loaded = load_session(tmp_path / "s.jsonl")
    facts = facts_of(loaded, branch(loaded, leaf(loaded)))
    assert facts.missing_files == ("docs/guide.md#section",) and facts.open_errors == ()


def test_the_read_tools_not_found_is_a_missing_path() -> None:
    assert missing(NOT_FOUND.format("docs/guide.md#section"))
    assert missing("File not found: /w/docs/guide.md#section")


def test_the_command_writes_both_blocks(tmp_path: Path) -> None:
    """The real program: a new session and an in-place handoff of copies of one session (its
    last answer long enough that the 20,000 tokens kept leave the reads to summarise)."""
    reads = [("docs/guide.md#section", False), ("src/a.py:10-20", True)]
    long_answer = "Done. " + " ".join(f"word{i}" for i in range(20_000))
    new = session(tmp_path / "new" / "s.jsonl", reads, long_answer)
    in_place = tmp_path / "in-place" / "s.jsonl"
    in_place.parent.mkdir()
    shutil.copyfile(new, in_place)
    for path, *flags in ((new,), (in_place, "--in-place")):
        result = run_cli(path, *flags, "--agent", "omp", "--model", "extractive", "--quiet")
        assert result.code == 0, result.stderr
    started = next(p for p in new.parent.glob("*.jsonl") if p != new)
    document = next(
        e["content"]
        for e in map(json.loads, started.read_text().splitlines())
        if e.get("type") == "custom_message"
    )
    compaction = json.loads(in_place.read_text().splitlines()[-1])
    assert "docs/guide.md#section" in compaction["details"]["readFiles"]
    files = "# src/\na.py (Read)\nb.py (Write)\n</files>"
    assert compaction["summary"].endswith(f"<files>\n# docs/\nguide.md#section (Read)\n{files}")
    assert f"<files>\n{files}" in document
