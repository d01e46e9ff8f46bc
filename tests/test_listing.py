"""Listing a sessions folder and resolving session ids."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from handoff_cli.config import Options
from handoff_cli.core import handoff
from handoff_cli.errors import SessionFileError, UsageError
from handoff_cli.listing import catalog, list_sessions, resolve_session, summarize
from handoff_cli.session import load_session
from handoff_cli.writer import append_entries

from .conftest import EXAMPLES, FIXTURES, HEADER, Entries, line, write_session

WEATHER = "2026-11-27T09-14-03-512Z_019ac4d2-7f31-7a0e-9b6c-3e1f5a2d8c40.jsonl"


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


@pytest.mark.parametrize("block", [64, 1 << 20])
def test_the_latest_name_is_found_anywhere_as_show_finds_it(
    tmp_path: Path, entries: Entries, monkeypatch: pytest.MonkeyPatch, block: int
) -> None:
    """A rename far past the head, and marks split across the blocks the file is read in."""
    monkeypatch.setattr("handoff_cli.listing.SCAN_BLOCK", block)
    entries.user("first request")
    entries.add("session_info", name="Early name")
    for n in range(400):
        entries.assistant(f"step {n} " + "x" * 300)
    entries.add("session_info", name="Late name")
    entries.assistant('quoting a line: {"type":"session_info","name":"Not a name"}')
    path = write_session(tmp_path / "s.jsonl", entries.items)
    assert path.stat().st_size > 2 * 64 * 1024
    summary = summarize(path)
    assert summary.title == load_session(path).title == "Late name"
    assert summary.entries == len(entries.items)
    for cut in range(1, 40):  # every split of a mark across two blocks
        shifted = tmp_path / f"shift-{cut}.jsonl"
        data = path.read_bytes()
        at = data.rindex(b'"session_info"') + cut % 14
        padding = (-at) % 64  # the mark's split point lands on a block edge
        shifted.write_bytes(data.replace(b"first request", b"first request" + b"-" * padding))
        assert summarize(shifted).title == "Late name"


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


def continue_session(path: Path, text: str) -> None:
    """The agent resumes a session and does some work in it."""
    session = load_session(path)
    parent = session.records[-1].id
    append_entries(
        path,
        [
            {
                "type": "message",
                "id": "c0ffee01",
                "parentId": parent,
                "timestamp": "2026-02-01T00:00:00.000Z",
                "message": {"role": "user", "content": text, "timestamp": 1},
            },
            {
                "type": "message",
                "id": "c0ffee02",
                "parentId": "c0ffee01",
                "timestamp": "2026-02-01T00:00:01.000Z",
                "message": {
                    "role": "assistant",
                    "content": [{"type": "text", "text": "done"}],
                    "provider": "x",
                    "model": "y",
                    "stopReason": "stop",
                    "timestamp": 2,
                },
            },
        ],
    )


def test_lineage_across_two_handoffs_and_a_fork(tmp_path: Path, capsys: Any) -> None:
    first = tmp_path / "first.jsonl"
    shutil.copyfile(EXAMPLES / "-home-dev-projects-weather-cli" / WEATHER, first)
    second = handoff(first, Options(model="extractive")).path
    continue_session(second, "now the docs")
    third = handoff(second, Options(model="extractive")).path
    fork = write_session(
        tmp_path / "fork.jsonl",
        [],
        {**HEADER, "id": "0199ffff-0000-7000-8000-00000000f0f0", "parentSession": str(first)},
    )
    found = catalog(tmp_path)
    by_path = {s.path: s for s in found.sessions}
    one, two, three = (by_path[p] for p in (first, second, third))
    assert found.to_json(one)["children"] == ["0199ffff-0000-7000-8000-00000000f0f0", two.id]
    assert [found.generation(s) for s in (one, two, three, by_path[fork])] == [0, 1, 2, 0]
    assert [found.handed_off(s) for s in (one, two, three)] == [True, True, False]
    assert found.to_json(three)["parent"] == {"id": two.id, "path": str(second)}
    title = "Retry with backoff for the HTTP client"
    assert found.title(three) == found.title(two) == f"↳ {title}"
    # An id in parentSession links too, as the agents also write it.
    by_id = write_session(
        tmp_path / "by-id.jsonl", [], {**HEADER, "id": "0199eeee", "parentSession": three.id}
    )
    found = catalog(tmp_path)
    assert found.parent(found.at(by_id)) == found.at(third)  # type: ignore[arg-type]


def test_the_exchange_at_the_leaf_marks_a_session_handed_off(tmp_path: Path) -> None:
    """Even when the new session is gone (elsewhere with --out-dir, or lost to a kill), the
    exchange recorded at the leaf says that the session was handed off."""
    source = tmp_path / "s.jsonl"
    shutil.copyfile(EXAMPLES / "-home-dev-projects-weather-cli" / WEATHER, source)
    handoff(source, Options(model="extractive", out_dir=tmp_path / "elsewhere"))
    found = catalog(tmp_path)
    summary = found.at(source)
    assert summary is not None and summary.ends_with_handoff and found.handed_off(summary)
    continue_session(source, "one more thing")
    assert not catalog(tmp_path).at(source).ends_with_handoff  # type: ignore[union-attr]
