"""Codex rollouts: read as Codex 0.171.0 reads them (tests/fixtures/codex/, the requests the
real CLI sent when it resumed each one: oracles/codex/codex.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from handoff_cli.agents import CODEX, codex, load_session
from handoff_cli.agents.places import default_roots
from handoff_cli.errors import ExitCode
from handoff_cli.handoff.facts import facts_of

from .conftest import FIXTURES, run_cli

CODEX_FIXTURES = FIXTURES / "codex"
ROLLOUTS = sorted(
    p
    for p in CODEX_FIXTURES.rglob("*.jsonl")
    if p.with_name(p.name + ".codex-context.json").exists()
)
MADE = CODEX_FIXTURES / "made/sessions/2026/12/01"
WRITTEN = CODEX_FIXTURES / "written"
TOOLS = MADE / "rollout-2026-12-01T13-43-14-01a231d8-6485-70d0-866d-03e1c0f10e57.jsonl"
"""``made/tools``: reasoning, parallel calls, a resumed turn with another call."""


def oracle(path: Path) -> Any:
    return json.loads(path.with_name(path.name + ".codex-context.json").read_text("utf-8"))


def shown_context(path: Path, *args: str) -> Any:
    result = run_cli("show", path, "--context", "--json", *args)
    assert result.code == 0, result.stderr
    return json.loads(result.stdout)


def test_every_oracle_rollout_is_here() -> None:
    assert len(ROLLOUTS) == 4 + 13  # made by Codex, and written by hand (but the one it refuses)


@pytest.mark.parametrize(
    "path", ROLLOUTS, ids=lambda p: p.stem[-12:] if "made" in p.parts else p.stem
)
def test_context_is_what_codex_sends(path: Path) -> None:
    """``show --context --json`` is the ``input`` the real CLI sent resuming the rollout, minus
    its own developer and environment items and the prompt: every item, every key."""
    printed = shown_context(path)
    assert printed["messages"] == oracle(path)["context"]
    assert "thinkingLevel" not in printed
    assert shown_context(path, "--agent", "codex") == printed


@pytest.mark.parametrize(
    ("path", "model"),
    [
        (WRITTEN / "mixed-records.jsonl", "openai/other-model"),  # its turn_context's
        (TOOLS, "openai/fake-model"),
        (CODEX_FIXTURES / "candidates/user-item-only.jsonl", None),  # no turn: the config's
    ],
)
def test_the_model_is_the_last_turn_contexts(path: Path, model: str | None) -> None:
    assert shown_context(path)["model"] == model


def test_a_rollout_is_known_by_its_content_and_its_folder(tmp_path: Path) -> None:
    home = tmp_path / "home"
    folder = home / ".codex/sessions/2026/12/01"
    folder.mkdir(parents=True)
    copy = folder / TOOLS.name
    shutil.copyfile(TOOLS, copy)
    env = {"HOME": str(home)}
    by_folder = run_cli("show", copy, env=env)
    assert by_folder.code == 0, by_folder.stderr
    assert "\nagent    Codex (its folder)\n" in by_folder.stdout
    by_content = run_cli("show", WRITTEN / "function-calls.jsonl", env=env)
    assert "\nagent    Codex (its content)\n" in by_content.stdout
    assert load_session(copy).id == "01a231d8-6485-70d0-866d-03e1c0f10e57"  # session_meta's
    assert load_session(copy).agent == CODEX


def test_codexs_folder_is_searched_with_nothing_configured(tmp_path: Path) -> None:
    home = tmp_path / "home"
    shutil.copytree(CODEX_FIXTURES / "made/sessions", home / ".codex/sessions")
    shutil.copyfile(
        CODEX_FIXTURES / "made/session_index.jsonl", home / ".codex/session_index.jsonl"
    )
    assert [r.agent for r in default_roots({}, home, tmp_path)] == [CODEX]
    env = {"HOME": str(home), "HANDOFF_SESSIONS_DIR": ""}
    listed = run_cli("list", "--json", env=env, cwd=tmp_path)
    assert listed.code == 0, listed.stderr
    rows = {row["id"]: row for row in json.loads(listed.stdout)}
    assert {row["agent"] for row in rows.values()} == {CODEX} and len(rows) == 4
    assert rows["01a231d8-6485-70d0-866d-03e1c0f10e57"]["title"] == (
        "How many lines does notes.txt have, and what is the first?"
    )  # the first prompt, not Codex's own environment context
    shown = run_cli("show", "01a231d8-6485", env=env, cwd=tmp_path)
    assert shown.code == 0, shown.stderr
    elsewhere = {"CODEX_HOME": str(home / ".codex")}
    assert [r.path for r in default_roots(elsewhere, tmp_path, tmp_path)] == [
        home / ".codex/sessions"
    ]


def test_list_and_every_view_work_on_them() -> None:
    listed = run_cli("list", "--json", CODEX_FIXTURES)
    assert listed.code == 0, listed.stderr
    ids = {row["id"] for row in json.loads(listed.stdout) if row["agent"] == CODEX}
    assert {load_session(p).id for p in ROLLOUTS} <= ids
    tree = run_cli("list", "--tree", CODEX_FIXTURES)
    assert tree.code == 0 and "Say hello from the TUI." in tree.stdout
    for path in ROLLOUTS:
        for view in ([], ["--tree"], ["--json"], ["--context"], ["--document"]):
            result = run_cli("show", path, *view)
            assert result.code in (0, ExitCode.USAGE, ExitCode.NOTHING_TO_HAND_OFF), result.stderr
            assert "Traceback" not in result.stderr


def test_bad_lines_are_skipped_and_named() -> None:
    result = run_cli("show", WRITTEN / "unknown-types.jsonl", "--context")
    assert result.code == 0
    assert result.stderr.startswith("warning: ") and "line 12, 14" in result.stderr


def test_the_facts_read_its_shell_calls_as_commands() -> None:
    """Codex's ``exec_command`` calls are the shared ``bash``: their exit codes are read."""
    session = load_session(TOOLS)
    commands = facts_of(session, session.records).commands
    assert [(c.text, c.ok, c.exit_code) for c in commands] == [
        ("wc -l notes.txt", True, 0),
        ("head -1 notes.txt", True, 0),
        ("tail -1 notes.txt", True, 0),
    ]


def test_agents_of_another_format_are_refused_in_one_line() -> None:
    other = run_cli("show", TOOLS, "--agent", "pi")
    assert other.code == ExitCode.USAGE
    assert "Codex's format: --agent pi cannot read it" in other.stderr
    assert len(other.stderr.strip().splitlines()) == 1
    pi_file = run_cli("show", FIXTURES / "omp/sample-v3.jsonl", "--agent", "codex")
    assert pi_file.code == ExitCode.USAGE
    assert "the pi family's format: --agent codex cannot read it" in pi_file.stderr


def test_the_new_folder_is_todays() -> None:
    sessions = Path("/h/.codex/sessions")
    today = codex.dated(sessions)
    assert codex.new_folder(sessions / "2025/01/31") == today
    assert codex.new_folder(Path("/elsewhere")) == Path("/elsewhere")
    assert codex.file_name("x").startswith("rollout-") and codex.file_name("x").endswith("-x.jsonl")
