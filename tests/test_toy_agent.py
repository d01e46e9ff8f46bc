"""A fifth agent added as a plugin, with no module of handoff_cli changed: Toy
(``plugins/toy_agent.py``), which keeps a session as one indented JSON document it rewrites
whole. Registered as ``agents.register`` registers an entry point's module, it is listed,
shown, handed off (the exchange recorded by a rewrite under the lock), and handed off to and
from the pi family (``--to``); installed as a package with an entry point, a fresh process finds
it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from handoff_cli import agents
from handoff_cli.catalog import leaf_handed_off
from handoff_cli.document import is_handoff_prompt, unwrap_document

from .conftest import run_cli
from .plugins import toy_agent

PLUGIN = Path(toy_agent.__file__)
PI_EXAMPLE = next(
    (Path(__file__).parent.parent / "sessions").glob("--home-dev-projects-notes-app--/*")
)
CWD = "/home/dev/projects/toy-app"


@pytest.fixture
def toy() -> Iterator[None]:
    agents.register(toy_agent)
    try:
        yield
    finally:
        del agents.REGISTERED[toy_agent.NAME], agents.FORMATS[toy_agent.NAME]


def toy_session(folder: Path, session_id: str = "5e55101d-0000-4000-8000-000000000001") -> Path:
    """A toy session: the person's request, an answer, a follow-up and its answer."""
    turns = [
        ("user", "Add a --verbose flag to the toy CLI in src/toy.py"),
        ("assistant", "I added the flag to src/toy.py and a test in tests/test_toy.py."),
        ("user", "Now make it print timings too."),
        ("assistant", "Timings are printed when --verbose is on; tests pass."),
    ]
    document = {
        "toy": 1,
        "id": session_id,
        "created": "2026-11-30T09:00:00.000Z",
        "cwd": CWD,
        "model": "openai/gpt-4o",
        "parent": None,
        "turns": [
            {"id": f"t{n}", "role": role, "text": text, "at": f"2026-11-30T09:0{n}:00.000Z"}
            for n, (role, text) in enumerate(turns, 1)
        ],
    }
    path = folder / f"{session_id}{toy_agent.SUFFIX}"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2) + "\n", "utf-8")
    return path


def toy_env(tmp_path: Path) -> dict[str, str]:
    return {"HOME": str(tmp_path / "home"), "TOY_HOME": str(tmp_path / "toy"),
            "HANDOFF_SESSIONS_DIR": ""}  # fmt: skip


def test_a_toy_session_is_listed_shown_and_handed_off_by_a_rewrite(
    toy: None, tmp_path: Path
) -> None:
    path = toy_session(tmp_path / "toy/sessions")
    env = toy_env(tmp_path)
    (row,) = json.loads(run_cli("list", "--json", env=env, cwd=tmp_path).stdout)
    assert (row["agent"], row["cwd"], row["entries"]) == ("toy", CWD, 4)
    assert row["title"].startswith("Add a --verbose flag")
    shown = run_cli("show", path, "--context", "--json", env=env, cwd=tmp_path)
    assert shown.code == 0, shown.stderr
    context = json.loads(shown.stdout)
    assert [m["role"] for m in context["messages"]] == ["user", "assistant"] * 2
    assert context["model"] == "openai/gpt-4o"

    inode = path.stat().st_ino
    result = run_cli("handoff", path, "--model", "extractive", "--json", env=env, cwd=tmp_path)
    assert result.code == 0, result.stderr
    done = json.loads(result.stdout)
    assert done["resume_command"] == f"toy --resume {done['id']}"
    new = Path(done["path"])
    assert new == tmp_path / f"toy/sessions/{done['id']}.toy.json"
    written = json.loads(new.read_text("utf-8"))
    assert written["parent"] == str(path) and written["turns"][0]["role"] == "handoff"
    assert "--verbose" in unwrap_document(written["turns"][0]["text"])
    old = json.loads(path.read_text("utf-8"))  # rewritten whole, in its own indented shape
    assert path.stat().st_ino != inode and path.read_text("utf-8").startswith('{\n  "toy": 1,')
    assert [t["role"] for t in old["turns"][-2:]] == ["user", "assistant"]
    assert is_handoff_prompt(old["turns"][-2]["text"])
    with open(path, "rb") as file:
        assert leaf_handed_off(path, file.fileno(), os.fstat(file.fileno()).st_size)

    listed = {
        r["id"]: r for r in json.loads(run_cli("list", "--json", env=env, cwd=tmp_path).stdout)
    }
    assert listed[done["id"]]["parent"]["id"] == old["id"]
    assert listed[old["id"]]["handed_off"] is True and listed[done["id"]]["generation"] == 1
    other = toy_session(path.parent, "5e55101d-0000-4000-8000-000000000002")
    rotation = ("rotate", path.parent, "--over-tokens", "1", "--idle", "0s")
    again = run_cli(*rotation, "--model", "extractive", env=env, cwd=tmp_path)
    assert again.code == 0, again.stderr
    assert [line.split()[0] for line in again.stdout.splitlines()] == [other.name[:36]]
    assert json.loads(path.read_text("utf-8")) == old


@pytest.mark.parametrize("how", ["rewritten", "grown"])
def test_a_toy_session_changed_under_the_handoff_is_left_as_the_agent_wrote_it(
    toy: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """The pipeline's rule holds for a file its agent rewrites: what the agent wrote after our
    read (a new file in its place, or bytes added) is never lost to our rewrite; the handoff
    fails, and the new session is taken back."""
    path = toy_session(tmp_path / "toy/sessions")
    exchange = toy_agent.exchange

    def written_meanwhile(*args: Any) -> Any:
        if how == "rewritten":
            changed = path.with_name("changed")
            changed.write_bytes(path.read_bytes())
            changed.replace(path)
        else:
            with open(path, "ab") as file:
                file.write(b"\n")
        return exchange(*args)

    monkeypatch.setattr(toy_agent, "exchange", written_meanwhile)
    result = run_cli("handoff", path, "--model", "extractive", env=toy_env(tmp_path), cwd=tmp_path)
    assert result.code == 4, result.stderr
    assert ("was replaced" if how == "rewritten" else "was written to") in result.stderr
    assert json.loads(path.read_text("utf-8"))["turns"][-1]["text"].startswith("Timings")
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]


def test_handed_off_between_toy_and_pi(toy: None, tmp_path: Path) -> None:
    """``--to``: a pi session continued as a toy session in the toy's folder, and a toy session
    continued in pi, each starting from the document, naming its parent."""
    env = toy_env(tmp_path)
    source = tmp_path / "pi" / PI_EXAMPLE.name
    source.parent.mkdir()
    shutil.copyfile(PI_EXAMPLE, source)
    to_toy = run_cli(
        "handoff", source, "--to", "toy", "--model", "extractive", env=env, cwd=tmp_path
    )
    assert to_toy.code == 0, to_toy.stderr
    made = tmp_path / f"toy/sessions/{to_toy.stdout.strip()}.toy.json"
    assert json.loads(made.read_text("utf-8"))["parent"] == str(source)
    assert agents.load_session(made).agent == "toy"

    path = toy_session(tmp_path / "toy/sessions")
    to_pi = run_cli("handoff", path, "--to", "pi", "--model", "extractive", env=env, cwd=tmp_path)
    assert to_pi.code == 0, to_pi.stderr
    (new,) = (tmp_path / "home/.pi/agent/sessions").glob(f"*/*_{to_pi.stdout.strip()}.jsonl")
    header, *entries = [json.loads(line) for line in new.read_text("utf-8").splitlines()]
    assert header["parentSession"] == str(path)
    document = next(e for e in entries if e.get("customType") == "handoff")
    assert "--verbose" in document["content"]


def test_an_installed_plugin_is_found_by_its_entry_point(tmp_path: Path) -> None:
    """As a package installs it: a module named in the group ``handoff_cli.agents`` of its
    ``entry_points.txt``, found by a fresh process with nothing else said; a plugin that
    fails to load costs its own agent, with a note, and nothing else."""
    site = tmp_path / "site"
    info = site / "toy_agent-0.1.dist-info"
    info.mkdir(parents=True)
    shutil.copyfile(PLUGIN, site / "toy_agent.py")
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-agent\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[handoff_cli.agents]\ntoy = toy_agent\n")
    broken = site / "broken-0.1.dist-info"
    broken.mkdir()
    (broken / "entry_points.txt").write_text("[handoff_cli.agents]\nbroken = no_such_module\n")
    path = toy_session(tmp_path / "toy/sessions")
    env = {**os.environ, **toy_env(tmp_path), "PYTHONPATH": str(site)}
    listed = subprocess.run(
        [sys.executable, "-m", "handoff_cli", "list", "--agent", "toy", "--json"],
        capture_output=True, env=env, timeout=60, check=False,
    )  # fmt: skip
    assert listed.returncode == 0, listed.stderr
    assert b"'no_such_module' was not loaded: ModuleNotFoundError" in listed.stderr
    (row,) = json.loads(listed.stdout)
    assert (row["agent"], row["path"]) == ("toy", str(path))
