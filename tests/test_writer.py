"""Writing sessions: byte-exact new files, appends that never tear, nothing left on failure."""

from __future__ import annotations

import errno
import multiprocessing
import os
import re
import stat
from pathlib import Path

import orjson
import pytest

from handoff_cli.context import build_context
from handoff_cli.session import load_session
from handoff_cli.tree import branch, leaf
from handoff_cli.writer import (
    append_entries,
    new_entry_id,
    new_session_bytes,
    session_file_name,
    title_slot_line,
    uuid7,
    write_new_session,
)

from .conftest import FIXTURES, Entries, write_session

REFERENCE = FIXTURES / "omp/handoff-new-session.jsonl"


def test_new_session_is_byte_identical_to_the_agents() -> None:
    """Rebuilt from its own values, the agent's handoff session comes out byte for byte."""
    raw = REFERENCE.read_bytes()
    _, header_line, entry_line = raw.splitlines()
    header, entry = orjson.loads(header_line), orjson.loads(entry_line)
    rebuilt_header = {
        "type": "session",
        "version": 3,
        "id": header["id"],
        "timestamp": header["timestamp"],
        "cwd": header["cwd"],
        "parentSession": header["parentSession"],
    }
    rebuilt_entry = {
        "type": "custom_message",
        "customType": "handoff",
        "content": entry["content"],
        "display": True,
        "attribution": "agent",
        "id": entry["id"],
        "parentId": None,
        "timestamp": entry["timestamp"],
    }
    assert new_session_bytes(rebuilt_header, [rebuilt_entry], title_slot=True) == raw


def test_title_slot_is_256_bytes_and_cuts_long_titles_by_characters() -> None:
    assert len(title_slot_line("2026-01-01T00:00:00.000Z")) == 256
    long = title_slot_line("2026-01-01T00:00:00.000Z", "é" * 300)
    assert len(long) == 256
    assert orjson.loads(long)["title"].startswith("éé")


def test_ids_and_names() -> None:
    first, second = uuid7(), uuid7()
    assert re.fullmatch(
        r"[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", first
    )
    assert first[:8] <= second[:8]  # time-ordered
    taken = {new_entry_id(set()) for _ in range(200)}
    assert all(re.fullmatch(r"[0-9a-f]{8}", i) for i in taken)
    assert new_entry_id(taken) not in taken
    name = session_file_name("2026-11-30T04:23:47.382Z", first)
    assert name == f"2026-11-30T04-23-47-382Z_{first}.jsonl"


def test_new_session_is_written_atomically_with_mode_0600(tmp_path: Path) -> None:
    data = REFERENCE.read_bytes()
    path = write_new_session(tmp_path / "out", "s.jsonl", data)
    assert path.read_bytes() == data
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert os.listdir(tmp_path / "out") == ["s.jsonl"]
    session = load_session(path)
    context = build_context(branch(session, leaf(session)))
    assert [m["customType"] for m in context.messages()] == ["handoff"]


def test_failed_write_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def disk_full(fd: int, data: object) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", disk_full)
    with pytest.raises(OSError, match="No space left"):
        write_new_session(tmp_path, "s.jsonl", b"data\n")
    assert os.listdir(tmp_path) == []


def test_append_is_whole_lines_and_repairs_a_torn_end(tmp_path: Path, entries: Entries) -> None:
    entries.user("a")
    path = write_session(tmp_path / "s.jsonl", entries.items, extra=b'{"type":"mess')
    before = path.read_bytes()
    append_entries(path, [{"type": "label", "id": "x1", "parentId": None}])
    after = path.read_bytes()
    assert after.startswith(before)
    assert after[len(before) :] == b'\n{"type":"label","id":"x1","parentId":null}\n'
    assert load_session(path).skipped_lines == (3,)  # the torn line stays as it was


def _append_many(path: str, worker: int) -> None:
    for number in range(200):
        entry = {"type": "label", "id": f"{worker:02x}{number:06x}", "pad": "x" * 5000}
        append_entries(Path(path), [entry, {**entry, "id": entry["id"] + "b"}])


def test_concurrent_appends_never_interleave(tmp_path: Path, entries: Entries) -> None:
    path = write_session(tmp_path / "s.jsonl", entries.items)
    with multiprocessing.get_context("fork").Pool(4) as pool:
        pool.starmap(_append_many, [(str(path), worker) for worker in range(4)])
    lines = path.read_bytes().splitlines()[1:]
    assert len(lines) == 4 * 200 * 2
    parsed = [orjson.loads(line) for line in lines]  # every line whole
    for first, second in zip(parsed[::2], parsed[1::2], strict=True):
        assert second["id"] == first["id"] + "b"  # an append's lines stay together
