"""The recipes in examples/ as a newcomer and a CI job run them: the loopback model, the
GitHub Actions workflow, the crontab line."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from handoff_cli.document import SECTIONS

from .conftest import EXAMPLES, HEADER, PROJECT, Entries, handoff_entry, run_cli, write_session

RECIPES = PROJECT / "examples"
HOUR_AGO = time.time() - 3600


@pytest.fixture
def loopback_model() -> Iterator[str]:
    """examples/loopback_model.py started as a newcomer starts it (any free port): its URL."""
    process = subprocess.Popen(
        [sys.executable, str(RECIPES / "loopback_model.py"), "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        yield first.split()[3]  # "loopback model at URL (Ctrl-C stops it)"
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.mark.litellm
def test_the_loopback_model_answers_a_handoff_in_full(tmp_path: Path, loopback_model: str) -> None:
    source = next(EXAMPLES.glob("-home-dev-projects-weather-cli/*.jsonl"))
    session = tmp_path / "sessions" / source.name
    session.parent.mkdir()
    shutil.copyfile(source, session)
    args = ("--model", "openai/loopback", "--api-base", loopback_model, "--json")
    result = run_cli(session, *args)
    assert result.code == 0, result.stderr
    data = result.json()
    assert data["model"] == "openai/loopback" and data["missing_sections"] == []
    assert data["usage"]["output_tokens"] > 0  # streamed, with its usage, as OpenAI streams
    document = handoff_entry(Path(data["path"]))["content"]
    assert all(f"## {name}\n" in document for name in SECTIONS)
    assert "WEATHER_RETRIES=2 python -m weather_cli Paris" in document  # read from the request


def _blocks(text: str, key: str) -> Iterator[list[str]]:
    """The value of each ``key:`` in the YAML ``text``: the lines indented under it (a block,
    or a folded ``>`` scalar), or the one after the colon. Enough of YAML for the workflow,
    which uses nothing more, with no YAML parser among the project's dependencies."""
    lines = text.splitlines()
    for number, line in enumerate(lines):
        stripped = line.lstrip(" -")
        if not stripped.startswith(f"{key}:"):
            continue
        value = stripped[len(key) + 1 :].strip()
        if value and value != ">":
            yield [value]
            continue
        depth = len(line) - len(line.lstrip(" -"))
        below = []
        for after in lines[number + 1 :]:
            if after.strip() and len(after) - len(after.lstrip()) <= depth:
                break
            if after.strip() and not after.strip().startswith("#"):
                below.append(after.strip())
        yield below


def _rotations(workflow: str) -> Iterator[tuple[dict[str, str], list[str]]]:
    """Each step of the workflow that runs ``handoff rotate``: the job's environment and the
    step's words, the matrix's shard as the first of one, the output redirection left out."""
    (env,) = (dict(line.split(": ", 1) for line in block) for block in _blocks(workflow, "env"))
    for block in _blocks(workflow, "run"):
        command = " ".join(block)
        if "handoff rotate" in command:
            command = command.replace("${{ matrix.shard }}/4", "1/1").split(">")[0]
            yield env, shlex.split(command)


def test_the_workflows_dry_run_prices_the_model_its_real_run_uses(tmp_path: Path) -> None:
    workflow = (RECIPES / "rotate-sessions.yml").read_text()
    for number in range(3):  # sessions whose own model is another one
        entries = Entries()
        entries.user("fix the parser " * 200)
        entries.assistant("done " * 200, provider="openai", model="gpt-4.1")
        header = {**HEADER, "id": f"0199aaaa-0000-7000-8000-00000000000{number}"}
        path = write_session(tmp_path / f"s{number}.jsonl", entries.items, header)
        os.utime(path, (HOUR_AGO, HOUR_AGO))
    steps = list(_rotations(workflow))
    assert len(steps) == 2  # the dry run, then the real run
    models = set()
    for env, words in steps:
        assert words[:2] == ["handoff", "rotate"]
        variables = {k: v for k, v in env.items() if k.startswith("HANDOFF_")}
        variables["HANDOFF_SESSIONS_DIR"] = str(tmp_path)  # the runner's volume, here
        plan = [flag for flag in ("--dry-run", "--json") if flag not in words]
        planned = run_cli(*words[1:], "--over-tokens", "1", *plan, env=variables)
        assert planned.code == 0, planned.stderr
        models |= {each["model"] for each in planned.json()["sessions"]}
    assert models == {"anthropic/claude-sonnet-4-5"}  # one model: priced as it is spent


def _cron_line(lock: Path) -> str:
    """The crontab's command (its five time fields left out), its lock in ``lock``."""
    (entry,) = [
        line for line in (RECIPES / "crontab").read_text().splitlines() if line[:1].isdigit()
    ]
    return entry.split(maxsplit=5)[5].replace("/tmp/handoff-rotate.lock", str(lock))


def test_the_crontab_works_on_a_fresh_account_or_fails_loudly(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    cron = {"PATH": "/usr/bin:/bin", "HOME": str(home), "SHELL": "/bin/sh", "LOGNAME": "u"}
    command = ["/bin/sh", "-c", _cron_line(tmp_path / "lock")]
    missing = subprocess.run(command, env=cron, capture_output=True, text=True, timeout=60)
    assert missing.returncode == 127 and missing.stdout == ""
    said = f"handoff-rotate: no {home}/.local/bin/handoff (pipx install . or uv tool install .)"
    assert missing.stderr == said + "\n"  # cron mails it: not lost in a log
    assert not (home / ".local").exists()
    installed = home / ".local/bin/handoff"  # as pipx and uv put it: this checkout's program
    installed.parent.mkdir(parents=True)
    program = f"PYTHONPATH={shlex.quote(str(PROJECT))} exec {shlex.quote(sys.executable)}"
    installed.write_text(f'#!/bin/sh\n{program} -m handoff_cli "$@"\n')
    installed.chmod(0o755)
    (home / ".omp/agent/sessions").mkdir(parents=True)
    ran = subprocess.run(command, env=cron, capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0 and ran.stdout == ran.stderr == "", ran.stderr
    state = home / ".local/state"
    assert (state / "handoff-rotate.jsonl").read_text() == ""  # nothing long enough yet
    assert "0 handed off, 0 skipped, 0 failed" in (state / "handoff-rotate.log").read_text()
