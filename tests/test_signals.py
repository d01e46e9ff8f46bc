"""SIGINT and SIGTERM at any moment of the program's life, from its first instruction on:
real processes, started both ways users start them (the console script, ``python -m``)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import EXAMPLES, Entries, children_cpu, quick_and_stress, write_session
from .fakellm import FakeLLMServer, Reply

SOURCE = next(EXAMPLES.glob("-home-dev-projects-weather-cli/*.jsonl"))
CONSOLE_SCRIPT = Path(sys.executable).with_name("handoff")  # pyproject's [project.scripts]
STARTS = {
    "console script": [str(CONSOLE_SCRIPT)],
    "python -m": [sys.executable, "-m", "handoff_cli"],
}
SIGNALS = (signal.SIGTERM, signal.SIGINT)
# The line each command ends with when cancelled, as it says it once it runs.
LINES = {"handoff": "Handoff cancelled", "rotate": "Cancelled", "show": "Cancelled"}


def begun(pid: int) -> bool:
    """Whether the program's own code runs: it has taken SIGTERM, the first thing it does, or
    (a build that takes it later) its first compiled module is loaded. Before either, the
    interpreter is starting, which is Python's business."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        maps = Path(f"/proc/{pid}/maps").read_text()
    except FileNotFoundError:  # it is gone already: let the outcome say what happened
        return True
    caught = next(x for x in status.splitlines() if x.startswith("SigCgt:")).split()[1]
    return bool(int(caught, 16) >> (signal.SIGTERM - 1) & 1) or "orjson" in maps


def cancel_at(
    start: list[str], args: list[str | Path], signum: int, delay: float
) -> tuple[int | None, str, str, float, float]:
    """Start the program, send ``signum`` ``delay`` s after its code begins: its exit code, its
    stdout and stderr, how long it took to end after the signal, and the CPU time it used."""
    before = children_cpu()
    process = subprocess.Popen(  # a process: the signal is its own
        [*start, *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 30
    while not begun(process.pid) and time.monotonic() < deadline:
        time.sleep(0.001)
    time.sleep(delay)
    process.send_signal(signum)
    sent = time.monotonic()
    out, err = process.communicate(timeout=60)
    took = time.monotonic() - sent
    return process.returncode, out, err, took, children_cpu() - before


def runs(commands: list[str], delays: list[float]) -> list[tuple[str, str, signal.Signals, float]]:
    """Each way of starting, each command, each signal, at each delay."""
    return [
        (how, command, signum, delay)
        for how in STARTS
        for command in commands
        for signum in SIGNALS
        for delay in delays
    ]


# `show` of a 20 MB session takes half a second: it is sent its signal at once, as it starts.
QUICK = [
    *runs(["handoff", "rotate", "show"], [0.0]),  # while it starts: held until it can cancel
    ("console script", "handoff", signal.SIGTERM, 0.3),
    ("python -m", "handoff", signal.SIGINT, 0.3),
    ("python -m", "rotate", signal.SIGTERM, 0.3),
]
STRESS = [
    *runs(["handoff", "rotate"], [n / 20 for n in range(11)]),  # 0 to 0.5 s, every 50 ms
    *runs(["show"], [0.0]),
]


@pytest.mark.heavy  # fresh processes signalled: make test-heavy
@pytest.mark.parametrize("cases", quick_and_stress(QUICK, STRESS))
def test_a_signal_from_the_first_instruction_on_cancels_cleanly(
    tmp_path: Path,
    llm_server: FakeLLMServer,
    cases: list[tuple[str, str, signal.Signals, float]],
) -> None:
    """SIGINT or SIGTERM at any moment of start-up (imports, the command line, the session,
    LiteLLM's import) or of the model's answer: the command's one line, exit 130, nothing
    written, promptly. Python alone would end the process at once on SIGTERM, without a word,
    and turn a SIGINT within an import into a traceback (within orjson's, a segfault)."""
    assert CONSOLE_SCRIPT.exists(), "the console script is installed beside the interpreter"
    llm_server.default = Reply("slow " * 100, delay=0.5)  # a minute of answer, if it ever starts
    session = tmp_path / "sessions" / SOURCE.name
    session.parent.mkdir()
    shutil.copyfile(SOURCE, session)
    os.utime(session, (time.time() - 3600,) * 2)
    before = session.read_bytes()
    entries = Entries()
    for turn in range(1000):
        entries.user(f"step {turn} " + "x" * 10_000)
        entries.assistant("ok " * 3_000)
    large = write_session(tmp_path / "large.jsonl", entries.items)
    model = ["--model", "openai/test-model", "--api-base", llm_server.base_url, "--quiet"]
    arguments: dict[str, list[str | Path]] = {
        "handoff": [session, *model],
        "rotate": ["rotate", session.parent, "--over-tokens", "1", "--idle", "1m", *model],
        "show": ["show", large],
    }
    for how, command, signum, delay in cases:
        code, out, err, took, used = cancel_at(STARTS[how], arguments[command], signum, delay)
        case = f"{how}, {command}, {signum.name} at {delay:.2f} s: {code} {err!r}"
        assert (code, out, err.strip()) == (130, "", LINES[command]), case
        # Never the answer (a minute of it), nor LiteLLM's import (~4 s of CPU): the answer is
        # waited for, so wall time tells it, with room for a loaded machine's start-up; the
        # import is work, so CPU time tells it, which load does not stretch.
        assert took < 15.0, case
        assert used < 2.0, f"{case}: {used:.2f} s of CPU"
        assert session.read_bytes() == before, case
        assert sorted(p.name for p in session.parent.iterdir()) == [session.name], case
