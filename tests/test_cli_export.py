"""``handoff export``: the transcript on stdout or written whole to a file, for every agent's
sessions found as ``show`` finds them; bad input is one line and an exit code, and no session
or file is ever left damaged."""

from __future__ import annotations

import errno
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from handoff_cli.errors import SessionFileError
from handoff_cli.export import transcript as made
from handoff_cli.sessions import files
from handoff_cli.sessions.files import TEMP_SUFFIX

from .conftest import EXAMPLES, FIXTURES, files_in, hostile_session, run_cli
from .test_as_markdown import Page
from .test_limits import shaped_session

WEATHER = next(EXAMPLES.glob("-home-dev-projects-weather-cli/*.jsonl"))
AGENTS = {
    "omp": WEATHER,
    "pi": next(EXAMPLES.glob("--home-dev-projects-notes-app--/*.jsonl")),
    "claude": next(EXAMPLES.glob("-home-dev-projects-todo-api/*.jsonl")),
    "codex": FIXTURES / "codex/handoff/tools-old.jsonl",
}
"""A session of each agent (the examples, and a rollout the real Codex resumed)."""


@pytest.fixture
def sessions(tmp_path: Path) -> Path:
    """The example sessions and the rollout, where ``HANDOFF_SESSIONS_DIR`` points."""
    folder = tmp_path / "sessions"
    shutil.copytree(EXAMPLES, folder)
    shutil.copy(AGENTS["codex"], folder / "rollout-2026-12-01T16-00-00-019ad9a1.jsonl")
    return folder


@pytest.mark.parametrize("agent", list(AGENTS))
def test_each_agents_session_exports_by_its_id_and_is_left_as_it_was(
    sessions: Path, agent: str
) -> None:
    kept = AGENTS[agent].read_bytes()
    found = next(p for p in sessions.rglob("*.jsonl") if p.read_bytes() == kept)
    before = found.read_bytes()
    session_id = run_cli("show", found, "--json").json()["header"]["id"]
    result = run_cli("export", session_id[:13])
    assert result.code == 0, result.stderr
    assert result.stderr == ""
    title = {"omp": "oh-my-pi", "pi": "pi", "claude": "Claude Code", "codex": "Codex"}[agent]
    assert f"- agent: {title}\n" in result.stdout
    assert result.stdout.startswith("# ") and "\n## User · " in result.stdout
    page = run_cli("export", found, "--format", "html")
    assert page.code == 0 and Page(page.stdout).count("section") > 1
    assert found.read_bytes() == before  # an export only reads


def test_o_writes_the_file_whole_and_prints_its_path(sessions: Path, tmp_path: Path) -> None:
    out = tmp_path / "out" / "weather.html"
    out.parent.mkdir()
    result = run_cli("export", WEATHER, "-o", out)
    assert (result.code, result.stdout, result.stderr) == (0, f"{out}\n", "")
    assert out.read_text().startswith("<!DOCTYPE html>")  # the format its name asks for
    assert stat.S_IMODE(out.stat().st_mode) == 0o600  # a conversation: the owner's alone
    assert files_in(out.parent) == ["weather.html"]  # no temporary file left
    out.chmod(0o644)
    again = run_cli("export", WEATHER, "--format", "md", "-o", out)
    assert again.code == 0 and out.read_text().startswith("# Retry with backoff")
    assert stat.S_IMODE(out.stat().st_mode) == 0o644  # replaced, its mode kept
    dash = run_cli("export", WEATHER, "-o", "-")
    assert dash.code == 0 and dash.stdout.startswith("# Retry with backoff")


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("kept.jsonl", ".jsonl names a session; an export is .md or .html"),
        ("folder", "is a folder; name the file to write"),
        ("missing/x.md", "is not a folder that exists"),
    ],
)
def test_an_output_that_cannot_be_written_whole_is_refused_first(
    tmp_path: Path, name: str, said: str
) -> None:
    (tmp_path / "folder").mkdir()
    before = sorted(p.name for p in tmp_path.rglob("*"))
    result = run_cli("export", WEATHER, "-o", tmp_path / name)
    parent = f"{tmp_path / 'missing'} " if name.startswith("missing") else ""
    assert result.code == 2
    assert result.stderr == f"Usage error: -o {tmp_path / name}: {parent}{said}\n"
    assert result.stdout == ""
    assert sorted(p.name for p in tmp_path.rglob("*")) == before  # nothing made


def test_a_full_disk_is_one_line_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(fd: int, data: bytes | memoryview) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    out = tmp_path / "weather.md"
    out.write_text("the export of yesterday")
    monkeypatch.setattr(files, "_write_all", full)
    result = run_cli("export", WEATHER, "-o", out)
    assert (result.code, result.stdout) == (1, "")
    assert result.stderr == f"Export failed: cannot write {out}: No space left on device\n"
    assert out.read_text() == "the export of yesterday"
    assert files_in(tmp_path) == ["weather.md"]


def _failing(parts: Iterator[made.Part]) -> Iterator[made.Part]:
    for count, part in enumerate(parts):
        if count == 20:
            raise SessionFileError("s.jsonl", "changed while being read", 7)
        yield part


def test_a_failure_half_way_leaves_the_file_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "weather.md"
    out.write_text("the export of yesterday")
    walk = made._Walk.parts
    monkeypatch.setattr(made._Walk, "parts", lambda self, records: _failing(walk(self, records)))
    result = run_cli("export", WEATHER, "-o", out)
    assert (result.code, result.stdout) == (4, "")
    assert result.stderr == "s.jsonl:7: changed while being read\n"
    assert out.read_text() == "the export of yesterday"
    assert files_in(tmp_path) == ["weather.md"]  # its temporary file taken back


def test_a_temporary_file_a_killed_export_left_is_removed(tmp_path: Path) -> None:
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], stdout=subprocess.PIPE
    )
    dead = gone.stdout.decode().strip()  # a process that ran and ended
    stale = tmp_path / f".weather.md.{dead}.0123abcd{TEMP_SUFFIX}"
    running = tmp_path / f".weather.md.1.0123abcd{TEMP_SUFFIX}"  # pid 1 still runs
    other = tmp_path / f".notes.md.{dead}.0123abcd{TEMP_SUFFIX}"  # another file's
    for path in (stale, running, other):
        path.write_text("half")
    assert run_cli("export", WEATHER, "-o", tmp_path / "weather.md").code == 0
    assert files_in(tmp_path) == sorted([running.name, other.name, "weather.md"])


def test_secrets_are_masked_unless_no_redact(tmp_path: Path) -> None:
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    path = tmp_path / "s.jsonl"
    path.write_text(WEATHER.read_text().replace("weather_cli/http.py", f"weather_cli/{secret}.py"))
    masked = run_cli("export", path)
    assert secret not in masked.stdout and "[REDACTED:github-token:1]" in masked.stdout
    assert "secrets masked: 1 " in masked.stdout
    kept = run_cli("export", path, "--no-redact", "--format", "html")
    assert secret in kept.stdout and "secrets not masked (--no-redact)" in kept.stdout


def test_text_that_utf8_cannot_carry_and_controls_are_shown_safely(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    odd = "\\ud800 \\u001b[2J \\u202e The forecast"  # in JSON: a lone surrogate, ESC, RLO
    path.write_text(WEATHER.read_text().replace("The forecast", odd, 1))
    page = run_cli("export", path, "--format", "html")
    assert page.code == 0, page.stderr
    assert "\ufffd ␛[2J \\u202e The forecast" in Page(page.stdout).text
    markdown = run_cli("export", path)
    assert "\ufffd ␛\\[2J \\\\u202e The forecast" in markdown.stdout  # [ and \\ escaped


def test_leaf_picks_another_branch() -> None:
    sample = FIXTURES / "omp/sample-v3.jsonl"
    whole = run_cli("export", sample).stdout
    other = run_cli("export", sample, "--leaf", "52f68310").stdout
    assert "on the new branch" in whole and "on the new branch" not in other
    assert "after compaction" in other and "◆ Compaction" in other
    assert run_cli("export", sample, "--leaf", "nope").code == 2


def test_a_hostile_session_through_the_command(tmp_path: Path) -> None:
    path = hostile_session(tmp_path / "s.jsonl")
    result = run_cli("export", path, "--format", "html", "-o", tmp_path / "s.html")
    assert result.code == 0, result.stderr
    assert "<script" not in (tmp_path / "s.html").read_text().lower()


def test_ctrl_c_while_it_writes_leaves_the_file_as_it_was(tmp_path: Path) -> None:
    """A real process (the signal is the test): interrupted once its temporary file is there,
    it ends with 130, and the file it was to replace is as it was."""
    session = shaped_session(tmp_path / "big.jsonl", "many tiny lines", 4)
    out = tmp_path / "out" / "big.md"
    out.parent.mkdir()
    out.write_text("the export of yesterday")
    process = subprocess.Popen(
        [sys.executable, "-m", "handoff_cli", "export", session, "--agent", "omp", "-o", out],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not any(p.name.endswith(TEMP_SUFFIX) for p in out.parent.iterdir()):
        assert process.poll() is None and time.monotonic() < deadline, "it never began to write"
        time.sleep(0.005)
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=60)
    assert (process.returncode, stdout, stderr) == (130, "", "Cancelled\n")
    assert out.read_text() == "the export of yesterday"
    assert files_in(out.parent) == ["big.md"]
