"""After a handoff the agents continue from the new session: it is written as each agent writes
a session it starts (held to what the agents' own code wrote, ``tests/fixtures/agents/
newsession``), it is the newer file, oh-my-pi's terminal pointers move to it, and the old
session keeps its own model."""

from __future__ import annotations

import itertools
import json
import os
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest

from handoff_cli.agents import OMP, PI, build_context
from handoff_cli.agents.omp import move_pointers
from handoff_cli.agents.resume import continued_title
from handoff_cli.cli.app import run
from handoff_cli.handoff.pipeline import handoff
from handoff_cli.options import Options
from handoff_cli.sessions.session import load_session
from handoff_cli.sessions.tree import branch, leaf

from .conftest import FIXTURES

AGENTS = FIXTURES / "agents"
WRITTEN = AGENTS / "newsession"
VERSIONS = ["omp-18.2.3", "omp-18.2.9", "omp-18.3.4", "pi-1.6.0"]
# What is the run's own in each line: ids, times, paths, the padding, the text written.
OWN = {"id", "parentId", "timestamp", "updatedAt", "pad", "parentSession", "content", "title"}
OWN |= {"name"}


def reference(version: str, case: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((WRITTEN / version / f"{case}.json").read_text())
    return loaded


def agents_session(version: str, tmp_path: Path) -> Path:
    """The session the agent's own run started from (B), in a sessions folder of its cwd."""
    source = PROJECT / str(reference(version, "new-name-last")["spec"]["parentFile"])
    target = tmp_path / "sessions" / "-tmp-handoff-oracle-project" / source.name
    target.parent.mkdir(parents=True)
    shutil.copyfile(source, target)
    return target


PROJECT = FIXTURES.parent.parent


def shape(value: dict[str, Any]) -> dict[str, Any]:
    """A line without what is the run's own: what must be the same as the agent's."""
    return {key: item for key, item in value.items() if key not in OWN}


@pytest.mark.parametrize("version", VERSIONS)
def test_the_new_session_is_what_the_agent_writes_when_it_starts_one(
    tmp_path: Path, version: str
) -> None:
    """Line for line, key for key, the agent's own new session made by its SessionManager: the
    title slot (oh-my-pi), the header, the model, the thinking level, the document, the name."""
    old = agents_session(version, tmp_path)
    agent = PI if version.startswith("pi") else OMP
    new = handoff(old, Options(model="extractive", agent=agent)).path
    ours = [orjson.loads(line) for line in new.read_bytes().splitlines()]
    theirs = [line["value"] for line in reference(version, "new-name-last")["output"]["lines"]]
    assert [list(line) for line in ours] == [list(line) for line in theirs]
    assert [shape(line) for line in ours] == [shape(line) for line in theirs]
    entries = ours[2:] if agent == OMP else ours[1:]
    assert entries[0]["parentId"] is None
    assert all(b["parentId"] == a["id"] for a, b in itertools.pairwise(entries))
    title = continued_title(load_session(old).title)
    assert title == "↳ Read notes.txt and tell me what it asks for."
    assert entries[-1].get("title", entries[-1].get("name")) == title
    if agent == OMP:
        assert len(new.read_bytes().splitlines(keepends=True)[0]) == 256
        assert ours[0]["title"] == title


@pytest.mark.parametrize("version", VERSIONS)
def test_the_old_session_names_its_model_again_as_the_agent_writes_a_switch(
    tmp_path: Path, version: str
) -> None:
    """The recorded answer names the model that wrote it; where the agent would resume on it,
    a model switch of the agent's own shape follows, naming the session's model."""
    old = agents_session(version, tmp_path)
    agent = PI if version.startswith("pi") else OMP
    before = load_session(old)
    own = build_context(branch(before, leaf(before)), agent).model
    handoff(old, Options(model="extractive", agent=agent))
    after = load_session(old)
    resumed = build_context(branch(after, leaf(after)), agent)
    assert resumed.model == own == "anthropic/claude-sonnet-4-5"
    last = after.entry(after.records[-1])
    if agent == OMP:  # oh-my-pi's own sessions name their model in a model_change already
        assert last["type"] == "message" and last["message"]["model"] == "extractive"
        return
    switch = reference(version, "switch-after-assistant")["output"]["lines"][-1]["value"]
    assert list(last) == list(switch) and last["type"] == "model_change"
    assert (last["provider"], last["modelId"]) == ("anthropic", "claude-sonnet-4-5")


def test_a_pi_style_session_read_by_oh_my_pis_rules_keeps_its_model(tmp_path: Path) -> None:
    """oh-my-pi ignores pi's model_change shape and would take the recorded answer's model: an
    oh-my-pi switch, as oh-my-pi writes one, names the session's own model again."""
    old = agents_session("pi-1.6.0", tmp_path)
    handoff(old, Options(model="extractive", agent=OMP))
    after = load_session(old)
    last = after.entry(after.records[-1])
    switch = reference("omp-18.3.4", "switch-after-assistant")["output"]["lines"][-1]["value"]
    assert list(last) == list(switch)
    assert (last["model"], last["role"], last["resolvedModelIsFallback"]) == (
        "anthropic/claude-sonnet-4-5",
        "default",
        False,
    )


def pointer(folder: Path, name: str, cwd: str, session: Path, *extra: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("\n".join([cwd, str(session), *extra]) + "\n")
    return path


def test_a_terminal_that_remembered_the_old_session_continues_the_new_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """oh-my-pi's ``--continue`` opens the session its terminal last had open: the handoff
    moves that pointer to the new session, its other lines as they were, and leaves the
    pointers to other sessions alone."""
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    sessions = home / ".omp" / "agent" / "sessions"
    old = agents_session("omp-18.3.4", tmp_path)
    moved_in = sessions / old.parent.name
    moved_in.mkdir(parents=True)
    old = Path(shutil.move(old, moved_in / old.name))
    pointers = home / ".omp" / "agent" / "terminal-sessions"
    cwd = "/tmp/handoff-oracle-project"
    remembered = pointer(pointers, "tmux-%7", cwd, old, "cwdstat 65024 2163282")
    elsewhere = pointer(pointers, "pts-3", cwd, old.with_name("other.jsonl"))
    untouched = elsewhere.read_bytes()
    monkeypatch.delenv("HANDOFF_SESSIONS_DIR")
    code = run([str(old), "--model", "extractive", "--json"])
    out = capsys.readouterr().out
    assert code == 0
    new = Path(json.loads(out)["path"])
    assert remembered.read_text() == f"{cwd}\n{new}\ncwdstat 65024 2163282\n"
    assert elsewhere.read_bytes() == untouched
    assert new.stat().st_mtime_ns > old.stat().st_mtime_ns  # the newest: --continue elsewhere


def test_pointers_are_matched_by_the_file_they_name(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    old, new = real / "old.jsonl", real / "new.jsonl"
    old.write_text("{}\n")
    (tmp_path / "linked").symlink_to(real)
    folder = tmp_path / "pointers"
    by_link = pointer(folder, "a", "/p", tmp_path / "linked" / "old.jsonl")
    (folder / "b").write_text("/p\n")  # one line only: not a pointer
    (folder / "c").write_bytes(b"\xff\xfe\n")  # not text
    os.mkfifo(folder / "d")  # never opened
    assert move_pointers(folder, old, new) == 1
    assert by_link.read_text() == f"/p\n{tmp_path / 'linked' / 'new.jsonl'}\n"
    assert move_pointers(tmp_path / "none", old, new) == 0


def test_a_rotation_turns_the_agents_to_the_new_sessions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    old = agents_session("omp-18.3.4", tmp_path)
    os.utime(old, (1, 1))
    remembered = pointer(home / ".omp/agent/terminal-sessions", "tmux-%1", "/tmp/x", old)
    code = run(["rotate", str(old.parent), "--model", "extractive", "--over-tokens", "1", "--json"])
    row = json.loads(capsys.readouterr().out)
    assert code == 0 and row["status"] == "handed_off"
    new = Path(row["new_path"])
    assert remembered.read_text() == f"/tmp/x\n{new}\n"
    assert load_session(new).title == "↳ Read notes.txt and tell me what it asks for."
    assert new.stat().st_mtime_ns > old.stat().st_mtime_ns


def test_a_chain_of_handoffs_keeps_one_mark() -> None:
    assert continued_title("Fix the parser") == "↳ Fix the parser"
    assert continued_title("↳ Fix the parser") == "↳ Fix the parser"
    assert continued_title(None) is None and continued_title("↳ ") is None
