"""Writing sessions: byte-exact new files, appends that never tear, nothing left on failure."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import multiprocessing
import os
import re
import stat
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from handoff_cli.agents import OMP, build_context
from handoff_cli.errors import ExitCode, SessionLockedError
from handoff_cli.sessions import files
from handoff_cli.sessions.files import (
    TitleSlot,
    append_entries,
    new_entry_id,
    new_session_bytes,
    remove_stale_temporaries,
    session_file_name,
    title_slot_line,
    uuid7,
    write_new_session,
)
from handoff_cli.sessions.session import load_session
from handoff_cli.sessions.tree import branch, leaf

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
    slot = TitleSlot("", header["timestamp"])
    assert new_session_bytes(rebuilt_header, [rebuilt_entry], slot) == raw


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
    context = build_context(branch(session, leaf(session)), OMP)
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
    pool = multiprocessing.get_context("fork").Pool(4)
    try:
        pool.starmap(_append_many, [(str(path), worker) for worker in range(4)])
    finally:
        # close and join, not the terminate of `with`: a worker killed while it holds the
        # task queue's lock leaves the others waiting for it forever, orphans that hold the
        # test run's output open.
        pool.close()
        pool.join()
    lines = path.read_bytes().splitlines()[1:]
    assert len(lines) == 4 * 200 * 2
    parsed = [orjson.loads(line) for line in lines]  # every line whole
    for first, second in zip(parsed[::2], parsed[1::2], strict=True):
        assert second["id"] == first["id"] + "b"  # an append's lines stay together


def fail_after(
    monkeypatch: pytest.MonkeyPatch, then: Callable[[int], None] = lambda fd: None
) -> None:
    """``os.write`` writes half of what it is given, runs ``then`` (another writer), and then
    finds the disk full."""
    real = os.write
    calls: list[int] = []

    def half_then_full(fd: int, data: Any) -> int:
        calls.append(fd)
        if len(calls) > 1:
            raise OSError(errno.ENOSPC, "No space left on device")
        written = real(fd, bytes(data[: len(data) // 2]))
        then(fd)
        return written

    monkeypatch.setattr(os, "write", half_then_full)


ENTRY = {"type": "label", "id": "x1", "parentId": None, "pad": "p" * 200}


def test_a_failed_append_is_cut_back(
    tmp_path: Path, entries: Entries, monkeypatch: pytest.MonkeyPatch
) -> None:
    entries.user("a")
    path = write_session(tmp_path / "s.jsonl", entries.items)
    before = path.read_bytes()
    fail_after(monkeypatch)
    with pytest.raises(OSError, match="No space left"):
        append_entries(path, [ENTRY, ENTRY])
    assert path.read_bytes() == before


def test_a_failed_append_never_takes_another_writers_line(
    tmp_path: Path, entries: Entries, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent appends without our lock: a line it writes after our first half stays whole,
    and what is left of ours reads as nothing at all."""
    entries.user("a")
    path = write_session(tmp_path / "s.jsonl", entries.items)
    before = path.read_bytes()
    agent_line = b'{"type":"custom","customType":"agent","data":1,"id":"ag1","parentId":null}\n'

    def agent(_: int) -> None:
        with open(path, "ab") as file:
            file.write(agent_line)

    fail_after(monkeypatch, agent)
    with pytest.raises(OSError):
        append_entries(path, [ENTRY, ENTRY])
    monkeypatch.undo()
    after = path.read_bytes()
    assert after.startswith(before) and after.endswith(agent_line)
    assert after[len(before) : -len(agent_line)].strip(b" \n") == b""  # ours: blanked
    session = load_session(path)
    assert [r.id for r in session.records][-1] == "ag1" and session.skipped_lines == ()


def test_only_our_own_stale_temporaries_are_removed(tmp_path: Path) -> None:
    dead = 2**22 + 12345  # above the kernel's pid range: no such process
    ours = tmp_path / f".2026-01-01T00-00-00-000Z_abc.jsonl.{dead}.0123abcd.tmp"
    theirs = [
        tmp_path / ".report.2024.final.tmp",
        tmp_path / ".notes.99999.bak.tmp",
        tmp_path / f".s.jsonl.{dead}.0123abcd.tmp.keep",
        tmp_path / f".s.jsonl.{dead}.XYZ.tmp",
    ]
    for path in [ours, *theirs]:
        path.write_text("x")
    link = tmp_path / f".t.jsonl.{dead}.89abcdef.tmp"
    link.symlink_to(tmp_path / ".report.2024.final.tmp")
    alive = tmp_path / f".u.jsonl.{os.getppid()}.89abcdef.tmp"
    alive.write_text("being written")
    remove_stale_temporaries(tmp_path)
    assert not ours.exists()
    assert all(p.exists() for p in theirs) and link.is_symlink() and alive.exists()


@contextlib.contextmanager
def held_elsewhere(path: Path, at_most: float = 5.0) -> Iterator[None]:
    """A shared lock on ``path``, as a backup tool takes one, through a descriptor of its own
    (flock's locks are the open file's: it conflicts with ours as another process's does); let
    go after ``at_most`` seconds at the latest, so that a writer that waits without bound is
    seen to write late rather than hang the tests."""
    fd = os.open(path, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_SH)
    let_go = threading.Timer(at_most, fcntl.flock, [fd, fcntl.LOCK_UN])
    let_go.start()
    try:
        yield
    finally:
        let_go.cancel()
        let_go.join()
        os.close(fd)


def test_a_lock_held_elsewhere_is_waited_for_a_while_then_refused(
    tmp_path: Path, entries: Entries, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process's lock (a backup tool's shared one, a stopped writer's) is waited for
    ``LOCK_WAIT_S``, then the write is refused in one line naming the file, exit 4: never a
    wait without end. Nothing is written."""
    entries.user("a")
    path = write_session(tmp_path / "s.jsonl", entries.items)
    before = path.read_bytes()
    monkeypatch.setattr(files, "LOCK_WAIT_S", 0.3)
    with held_elsewhere(path), pytest.raises(SessionLockedError) as caught:
        append_entries(path, [ENTRY])
    assert str(caught.value) == (
        f"Handoff failed: {path}: the session is locked by another process (waited 0.3 s); "
        "nothing written"
    )
    assert caught.value.exit_code == ExitCode.BAD_SESSION
    assert path.read_bytes() == before
    append_entries(path, [ENTRY])  # once it is let go, the lock is ours at once
    assert path.read_bytes().startswith(before) and path.read_bytes() != before
