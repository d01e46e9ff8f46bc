"""Which agent's rules read a session: asked for, by its folder, else by its content."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from handoff_cli.agents import CLAUDE, CODEX, OMP, PI, load_session
from handoff_cli.agents.choice import choose_agent
from handoff_cli.agents.gemini import NAME as GEMINI
from handoff_cli.agents.places import agent_of, default_roots
from handoff_cli.agents.qwen import NAME as QWEN
from handoff_cli.options import AUTO

from .conftest import FIXTURES, HEADER, NOT_SESSIONS, Entries, fixture_files, run_cli, write_session

ALL_FIXTURES = sorted(p for p in fixture_files() if p.name not in NOT_SESSIONS)


def flat(path: Path) -> str:
    """A fixture's name in one folder: its path below the fixtures', folders and all."""
    return str(path.relative_to(FIXTURES)).replace("/", "-")


def chosen(path: Path, asked: str = AUTO, folder: str | None = None) -> tuple[str, str | None]:
    choice = choose_agent(load_session(path), asked, folder)
    return choice.agent, choice.note


def test_auto_goes_by_the_folder_the_file_is_in(tmp_path: Path) -> None:
    """Every fixture, whatever its content, under pi's folder is pi's and under oh-my-pi's is
    oh-my-pi's, as the CLI resolves them in a home where both agents live."""
    home = tmp_path / "home"
    folders = {
        PI: home / ".pi/agent/sessions/--home-u-proj--",
        OMP: home / ".omp/agent/sessions/-proj",
    }
    for folder in folders.values():
        folder.mkdir(parents=True)
        for path in ALL_FIXTURES:
            shutil.copyfile(path, folder / flat(path))
    known = default_roots({}, home, tmp_path)
    firsts = {flat(p): p.read_bytes().split(b"\n", 1)[0] for p in ALL_FIXTURES}
    geminis = {n for n, first in firsts.items() if b'"projectHash"' in first}
    qwens = {n for n, first in firsts.items() if b'"parentUuid"' in first and b'"parts"' in first}
    rollouts = {  # Codex's: a session_meta first
        n
        for n, first in firsts.items()
        if b'"type": "session_meta"' in first.replace(b'":"', b'": "')
    }
    claudes = (
        {  # Claude Code's: no pi header on the first line, a uuid or a sessionId on it
            n
            for n, first in firsts.items()
            if json.loads(first).get("type") != "session"
            and (b'"uuid"' in first or b'"sessionId"' in first)
        }
        - geminis
        - qwens
        - rollouts
    )
    for agent, folder in folders.items():
        for path in sorted(folder.iterdir()):
            # A format of one agent's own is that agent's wherever it lies.
            own = (
                CLAUDE if path.name in claudes else CODEX if path.name in rollouts
                else GEMINI if path.name in geminis else QWEN if path.name in qwens else agent
            )  # fmt: skip
            assert choose_agent(load_session(path), AUTO, agent_of(path, known)).agent == own

    sample = "omp-sample-v3.jsonl"  # oh-my-pi's by its content (a title slot)
    shown = run_cli("show", folders[PI] / sample, env={"HOME": str(home)})
    assert shown.code == 0, shown.stderr
    assert "\nagent    pi (its folder)\n" in shown.stdout and shown.stderr == ""
    asked = run_cli("show", folders[PI] / sample, "--context", env={"HOME": str(home)}, cwd=home)
    assert asked.stdout.startswith("agent pi (its folder)  model ")
    by_env = run_cli("show", folders[PI] / sample, env={"HOME": str(home), "HANDOFF_AGENT": OMP})
    assert "\nagent    oh-my-pi (--agent)\n" in by_env.stdout


def test_the_agent_asked_for_wins(tmp_path: Path) -> None:
    path = FIXTURES / "omp/sample-v3.jsonl"
    assert chosen(path, PI, OMP) == (PI, None)
    assert chosen(path, AUTO, PI) == (PI, None)
    assert chosen(path) == (OMP, None)


@pytest.mark.parametrize(
    ("entry", "agent"),
    [
        ({"type": "reset_boundary"}, OMP),
        ({"type": "model_usage"}, OMP),
        ({"type": "model_change", "model": "openai/gpt-4o"}, OMP),
        ({"type": "custom_message", "customType": "x", "content": "", "attribution": "user"}, OMP),
        ({"type": "compaction", "summary": "S", "shortSummary": "s"}, OMP),
        ({"type": "message", "message": {"role": "pythonExecution", "code": "1"}}, OMP),
        ({"type": "session_info", "name": "n"}, PI),
        ({"type": "context_edit", "targetId": "e0000001", "replacement": None}, PI),
        ({"type": "usage", "provider": "anthropic", "usage": {"input": 1}}, PI),
        ({"type": "model_change", "provider": "openai", "modelId": "gpt-4o"}, PI),
        ({"type": "compaction", "summary": "S", "systemMessage": {"role": "system"}}, PI),
        ({"type": "message", "message": {"role": "system", "content": "prompt"}}, PI),
    ],
)
def test_the_content_says_whose_it_is(
    tmp_path: Path, entries: Entries, entry: dict[str, Any], agent: str
) -> None:
    entries.user("hi")
    entries.add(entry.pop("type"), **entry)
    assert chosen(write_session(tmp_path / "s.jsonl", entries.items)) == (agent, None)


@pytest.mark.parametrize(
    ("header", "agent"),
    [
        ({"title": "Retry", "titleSource": "auto"}, OMP),
        ({"provider": "anthropic", "modelId": "m", "thinkingLevel": "off"}, PI),
        ({"branchedFrom": "/x.jsonl"}, PI),
    ],
)
def test_the_header_says_whose_it_is(
    tmp_path: Path, entries: Entries, header: dict[str, Any], agent: str
) -> None:
    entries.user("hi")
    path = write_session(tmp_path / "s.jsonl", entries.items, {**HEADER, **header})
    assert chosen(path) == (agent, None)


def test_unclear_content_is_read_by_omp_with_a_note(tmp_path: Path, entries: Entries) -> None:
    entries.user("hi")
    path = write_session(tmp_path / "s.jsonl", entries.items)
    agent, note = chosen(path)
    assert agent == OMP
    assert note == (
        f"note: {path}: nothing in it says which agent wrote it; reading it by oh-my-pi's "
        "rules (--agent to choose)"
    )
    entries.add("session_info", name="pi's")
    entries.add("model_change", model="openai/gpt-4o")  # then oh-my-pi wrote to it
    both = write_session(tmp_path / "both.jsonl", entries.items)
    agent, note = chosen(both)
    assert agent == OMP and note is not None and "both agents wrote to it" in note
    entries.add("context_edit", targetId="e0000001", replacement=None)  # and pi again, last
    assert chosen(write_session(tmp_path / "last.jsonl", entries.items))[0] == PI

    result = run_cli("show", path, "--context", "--json")
    assert result.code == 0 and result.stderr.startswith("note: ")  # stdout is the JSON only
    assert list(result.json()) == ["messages", "thinkingLevel", "model"]


@pytest.mark.parametrize(
    ("message", "agent"),
    [
        (b'{"role":"user","content":"x","role":"system"}', PI),  # JSON.parse takes the last
        (b'{"role":"user","content":"x","r\\u006fle":"developer"}', OMP),  # a key in escapes
        (b'{"content":"x","role":"fileMention"}', OMP),  # not its first key
        (b'{"role":"toolResult","content":"\\u0072ole \\"role\\""}', None),  # text, not a key
        (b'{"role":"assistant","content":[{"type":"text","text":"system"}]}', None),
    ],
)
def test_a_role_read_from_its_first_bytes_is_the_role_json_parse_reads(
    tmp_path: Path, message: bytes, agent: str | None
) -> None:
    """A message before the last compaction is left on disk, its role read from its first
    bytes where nothing after could be another "role" key (``Session.roles``): the agent it
    marks is the one its parsed role marks."""
    lines = [json.dumps(HEADER, separators=(",", ":")).encode()]
    line = b'{"type":"message","id":"m%d","parentId":%s,"timestamp":"t","message":%s}'
    lines.append(line % (0, b"null", message))
    for n in range(1, 12):
        lines.append(line % (n, b'"m%d"' % (n - 1), b'{"role":"user","content":"hi"}'))
    lines.append(
        b'{"type":"compaction","id":"c","parentId":"m11","timestamp":"t","summary":"S",'
        b'"firstKeptEntryId":"m11","tokensBefore":1}'
    )
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    session = load_session(path)
    assert repr(session.records[0].loaded_facts) == "LAZY"  # on disk: the fast way is taken
    got, note = chosen(path)
    assert got == (agent or OMP) and (note is None) == (agent is not None)
    source = session.records[0].source
    assert source is not None
    roles = list(session.roles())
    assert len(source._facts) <= 1  # the plain messages' facts were never read
    assert roles == [r.facts.role if r.facts else None for r in session.records]
