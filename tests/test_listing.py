"""Listing a sessions folder and resolving session ids."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from handoff_cli.errors import SessionFileError, UsageError
from handoff_cli.listing import catalog, list_sessions, resolve_session, summarize

from .conftest import EXAMPLES, FIXTURES, HEADER, Entries, line, write_session


def make_folder(root: Path) -> dict[str, Path]:
    files = {
        "omp": FIXTURES / "omp/sample-v3.jsonl",
        "pi": FIXTURES / "generated/pi-001.jsonl",
        "v1": FIXTURES / "generated/v1-003.jsonl",
    }
    copies = {}
    for name, source in files.items():
        target = root / f"--cwd-{name}--" / source.name
        target.parent.mkdir(parents=True)
        shutil.copyfile(source, target)
        copies[name] = target
    return copies


def test_list_is_recursive_newest_first_and_skips_non_sessions(tmp_path: Path) -> None:
    copies = make_folder(tmp_path)
    (tmp_path / "notes.jsonl").write_text('{"hello": "world"}\n')
    (tmp_path / "README.md").write_text("not even jsonl")
    sessions, skipped = list_sessions(tmp_path)
    assert {s.path for s in sessions} == set(copies.values())
    stamps = [s.timestamp for s in sessions]
    assert stamps == sorted(stamps, reverse=True)
    assert [s.path.name for s in skipped] == ["notes.jsonl"]
    assert skipped[0].reason.startswith("not a session file")


def test_titles_come_from_slot_session_info_or_first_user_message(
    tmp_path: Path, entries: Entries
) -> None:
    entries.user("  Fix the\n flaky   test  ")
    plain = write_session(tmp_path / "a.jsonl", entries.items)
    assert summarize(plain).title == "Fix the flaky test"
    entries.add("session_info", name="Named by the user")
    named = write_session(tmp_path / "b.jsonl", entries.items)
    assert summarize(named).title == "Named by the user"
    slot = {"type": "title", "v": 1, "title": "Slot title", "updatedAt": "x", "pad": " "}
    titled = tmp_path / "c.jsonl"
    titled.write_bytes(line(slot) + named.read_bytes())
    assert summarize(titled).title == "Slot title"


def test_summary_fields(tmp_path: Path) -> None:
    path = write_session(tmp_path / "s.jsonl", [], {**HEADER, "branchedFrom": "/old.jsonl"})
    found = catalog(tmp_path)
    (summary,) = found.sessions
    assert found.to_json(summary) == {
        "id": HEADER["id"],
        "path": str(path),
        "agent": None,
        "timestamp": HEADER["timestamp"],
        "modified": path.stat().st_mtime,
        "cwd": HEADER["cwd"],
        "title": None,
        "parent": {"id": None, "path": "/old.jsonl"},  # named, not found
        "children": [],
        "handed_off": False,
        "generation": 0,
        "entries": 0,
        "size": path.stat().st_size,
    }


def test_examples_are_listed_with_titles() -> None:
    sessions, skipped = list_sessions(EXAMPLES)
    assert skipped == []
    assert len(sessions) >= 2
    assert all(s.title for s in sessions)


def test_resolve_by_path_id_and_prefix(tmp_path: Path) -> None:
    copies = make_folder(tmp_path)
    omp_id = "01a22ac6-037e-775c-8089-58f5d6db35c2"
    assert resolve_session(str(copies["omp"]), tmp_path) == copies["omp"]
    assert resolve_session(omp_id, tmp_path) == copies["omp"]
    assert resolve_session(omp_id[:13], tmp_path) == copies["omp"]
    with pytest.raises(SessionFileError, match="no session with this id"):
        resolve_session("ffffffff", tmp_path)


def test_ambiguous_prefix_lists_the_candidates(tmp_path: Path) -> None:
    for number in (1, 2):
        write_session(tmp_path / f"{number}.jsonl", [], {**HEADER, "id": f"0199-{number}"})
    with pytest.raises(UsageError) as caught:
        resolve_session("0199", tmp_path)
    assert "0199-1" in str(caught.value) and "0199-2" in str(caught.value)


def test_missing_folder_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such folder"):
        list_sessions(tmp_path / "nope")


def test_a_fifo_named_like_a_session_is_passed_over(tmp_path: Path) -> None:
    copies = make_folder(tmp_path)
    os.mkfifo(tmp_path / "--cwd-omp--" / "waiting.jsonl")
    sessions, skipped = list_sessions(tmp_path)  # would hang if it opened the FIFO
    assert {s.path for s in sessions} == set(copies.values()) and skipped == []
    assert resolve_session("01a22ac6", tmp_path) == copies["omp"]


def test_usage_errors_say_so(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"^Usage error: .*no such folder"):
        list_sessions(tmp_path / "nope")
    for number in (1, 2):
        write_session(tmp_path / f"{number}.jsonl", [], {**HEADER, "id": f"0199-{number}"})
    with pytest.raises(UsageError, match=r"^Usage error: session id prefix '0199' is ambiguous"):
        resolve_session("0199", tmp_path)
