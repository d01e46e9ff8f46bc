"""Nothing waits for a session's lock without end: another process's lock on it (a backup tool's
shared one, a writer stopped while it held it) is waited for ``files.LOCK_WAIT_S``, a signal
meanwhile cancels, and then the handoff is refused in one line; in every case nothing is
written. In place, two handoffs of one session started together: ``test_cli_inplace.py``."""

from __future__ import annotations

import os
import shutil
import signal
import time
from pathlib import Path

import orjson
import pytest

from handoff_cli.sessions import files

from .conftest import EXAMPLES, files_in, run_cli
from .helpers.zygote import fork
from .test_files import held_elsewhere
from .test_rotate import make_session

SOURCE = next(EXAMPLES.glob("-home-dev-projects-weather-cli/*.jsonl"))
LOCKED = "the session is locked by another process"
HOUR_AGO = time.time() - 3600


@pytest.fixture
def session(tmp_path: Path) -> Path:
    """A session, idle (a rotation chooses it), alone in its folder."""
    target = tmp_path / "sessions" / SOURCE.name
    target.parent.mkdir()
    shutil.copyfile(SOURCE, target)
    os.utime(target, (HOUR_AGO, HOUR_AGO))
    return target


def test_a_handoff_of_a_session_locked_elsewhere_ends_in_one_line(
    session: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = session.read_bytes()
    monkeypatch.setattr(files, "LOCK_WAIT_S", 0.3)
    with held_elsewhere(session):
        result = run_cli(session, "--model", "extractive", "--quiet")
    assert (result.code, result.stdout) == (4, "")
    assert result.stderr.strip() == (
        f"Handoff failed: {session.resolve()}: {LOCKED} (waited 0.3 s); nothing written"
    )
    assert session.read_bytes() == before and files_in(session.parent) == [session.name]


def test_a_rotation_goes_on_past_a_session_locked_elsewhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The session locked fails (exit 1 at the end, as for any failed handoff), the other is
    handed off: one lock never stops a rotation."""
    locked, free = (make_session(tmp_path, name, turns=8) for name in ("locked", "free"))
    before = locked.read_bytes()
    monkeypatch.setattr(files, "LOCK_WAIT_S", 0.3)
    args: list[str | Path] = ["rotate", tmp_path, "--model", "extractive", "--over-tokens", "1"]
    with held_elsewhere(locked):
        result = run_cli(*args, "--json")
    assert result.code == 1, result.stderr
    rows = {row["path"]: row for row in map(orjson.loads, result.stdout.splitlines())}
    assert rows[str(locked)]["status"] == "failed" and LOCKED in rows[str(locked)]["reason"]
    assert rows[str(free)]["status"] == "handed_off"
    assert locked.read_bytes() == before
    assert len(files_in(tmp_path)) == 3  # the two, and the free one's new session


def waits_for_lock(pid: int, path: Path) -> bool:
    """Whether the process ``pid`` holds ``path`` open for writing: what a writer of ours does
    only to take the session's lock (it reads it through a descriptor of its own)."""
    folder = Path(f"/proc/{pid}")
    for link in (folder / "fd").iterdir():
        try:
            if os.readlink(link) != str(path):
                continue
            flags = (folder / "fdinfo" / link.name).read_text().split("flags:")[1].split()[0]
        except OSError:  # closed meanwhile
            continue
        if int(flags, 8) & os.O_ACCMODE == os.O_RDWR:
            return True
    return False


@pytest.mark.zygote  # forks the program from the zygote (tests/conftest.py)
@pytest.mark.parametrize("command", ["handoff", "rotate"])
def test_a_signal_while_waiting_for_the_lock_cancels(
    tmp_path: Path, session: Path, command: str
) -> None:
    """Before its writes, a handoff that waits for the lock is cancelled by SIGTERM at once, as
    at any other moment before them: exit 130, nothing written. (A blocking lock, with signals
    deferred once the writes are near, waited for as long as the other process held it.)"""
    before = session.read_bytes()
    args: list[str | Path] = [session, "--model", "extractive", "--quiet"]
    if command == "rotate":
        args = ["rotate", session.parent, "--model", "extractive", "--over-tokens", "1"]
    with held_elsewhere(session, at_most=120):
        process = fork([str(a) for a in args], tmp_path / "run")
        try:
            deadline = time.monotonic() + 60
            while not waits_for_lock(process.process.pid or 0, session.resolve()):
                assert process.poll() is None, process.stderr
                assert time.monotonic() < deadline, "it never came to the lock"
                time.sleep(0.01)
            process.send_signal(signal.SIGTERM)
            code = process.wait(timeout=60)
        finally:
            if process.poll() is None:
                process.kill()
    assert code == 130, process.stderr
    line = "Handoff cancelled" if command == "handoff" else "cancelled"
    assert line in process.stderr
    assert session.read_bytes() == before and files_in(session.parent) == [session.name]
