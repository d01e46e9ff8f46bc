"""Codex rollouts: read as Codex 0.171.0 reads them (tests/fixtures/codex/, the requests the
real CLI sent when it resumed each one: oracles/codex/codex.py)."""

from __future__ import annotations

import base64
import json
import os
import shutil
import zlib
from pathlib import Path
from typing import Any

import pytest

import handoff_cli.catalog as catalog
from handoff_cli.agents import CODEX, codex, get, load_session
from handoff_cli.agents.choice import choose_agent
from handoff_cli.agents.places import default_roots
from handoff_cli.document import WRAPPER_OPEN, is_handoff_prompt
from handoff_cli.errors import ExitCode
from handoff_cli.handoff.facts import facts_of
from handoff_cli.options import AUTO
from handoff_cli.text import text_of

from .conftest import DOCUMENT, EXAMPLES, FIXTURES, NOT_SESSIONS, model_env, run_cli
from .fakellm import FakeLLMServer, Reply
from .test_catalog import bytes_read, codex_folder

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
    # made by Codex, written by hand (but the one it refuses), written by our handoff (from
    # Codex, pi, oh-my-pi and Claude Code), compacted in place (by us, by Codex's own
    # /compact, and by Codex again after us), and the example of sessions/
    assert len(ROLLOUTS) == 4 + 15 + 5 + (7 + 7 + 1) + 1


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


EVERY_ROLLOUT = sorted(
    p for p in CODEX_FIXTURES.rglob("*.jsonl") if p.name not in NOT_SESSIONS and codex.owns(p)
)


@pytest.mark.parametrize("head", [catalog.HEAD_BYTES, 200], ids=["head", "cut-meta"])
def test_list_reads_from_the_head_what_the_whole_rollout_says(
    head: int, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``list`` reads a rollout's head (and, where it holds no user request, or its
    ``session_meta`` is longer than the head, the file up to one) and its tail, and once its
    lines are counted (the list cache) not the whole of a big one: what it says of every
    fixture is what loading it whole says."""
    monkeypatch.setattr(catalog, "HEAD_BYTES", head)
    (big,) = codex_folder(tmp_path / "sessions", sessions=1, megabytes=3)
    cached = catalog.catalog(tmp_path / "sessions", cache=tmp_path / "cache")
    start = bytes_read()
    warm = catalog.catalog(tmp_path / "sessions", cache=tmp_path / "cache")
    assert bytes_read() - start < 200_000 < big.stat().st_size // 10
    assert warm.sessions == cached.sessions
    assert warm.sessions[0].first_request == "step 0: fix the parser"
    for path in EVERY_ROLLOUT:
        summary = catalog.summarize(path)
        session = load_session(path)
        starts = codex.starts_from_handoff(session)
        assert (summary.id, summary.parent_session, summary.starts_from_handoff) == (
            session.id,
            session.parent,
            starts,
        ), path
        assert (summary.timestamp, summary.cwd) == (
            session.header.get("timestamp", ""),
            session.header.get("cwd", ""),
        ), path
        assert summary.first_request == session.title, path
        assert summary.title == (None if starts else session.title), path
        assert summary.agent == CODEX


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
    superscript = sessions / "\u00b2\u2070\u00b2\u2075/\u2070\u00b9/\u00b3\u00b9"  # no date
    assert codex.new_folder(superscript) == superscript
    assert codex.file_name("x").startswith("rollout-") and codex.file_name("x").endswith("-x.jsonl")


# --- the handoff ---------------------------------------------------------------------------

HANDED = CODEX_FIXTURES / "handoff"
"""Our handoff of ``made/tools`` (extractive), each file resumed by the real CLI (``codex.py
context``, rc 0 and no warning): ``tools-new`` the rollout written, ``tools-old`` the old one
with the exchange recorded."""


def lines_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def shapes(lines: list[dict[str, Any]]) -> list[Any]:
    """Each line's keys in order, its type and its payload's: what must be as Codex accepted."""
    return [(list(v), v["type"], list(v["payload"]), v["payload"].get("type")) for v in lines]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """``made/tools`` in Codex's folder, under its own name."""
    folder = tmp_path / "home/.codex/sessions/2026/12/01"
    folder.mkdir(parents=True)
    old = folder / TOOLS.name
    shutil.copyfile(TOOLS, old)
    return old


@pytest.mark.litellm
def test_a_handoff_writes_a_rollout_codex_resumes(project: Path, llm_server: FakeLLMServer) -> None:
    """The new rollout is in today's folder, in the shapes the real CLI resumed with the
    document as its first prompt (stderr says the command); the old rollout ends with the
    exchange in Codex's shapes, its ordinals continued."""
    llm_server.script(Reply(DOCUMENT))
    before = project.read_bytes()
    home = project.parents[5]
    env = {**model_env(llm_server), "HOME": str(home), "HANDOFF_SESSIONS_DIR": ""}
    result = run_cli("handoff", "01a231d8-6485", env=env, cwd=home)
    assert result.code == 0, result.stderr
    new_id = result.stdout.strip()
    assert result.stdout == new_id + "\n"
    said = result.stderr.splitlines()[-1]  # after `cd DIR &&` where the session's cwd is here
    assert said.startswith("continue in Codex: ") and said.endswith(f" codex resume {new_id}")
    (new,) = codex.dated(home / ".codex/sessions").glob(f"rollout-*-{new_id}.jsonl")
    written = lines_of(new)
    assert shapes(written) == shapes(lines_of(HANDED / "tools-new.jsonl"))
    meta, lineage = written[0]["payload"], written[1]["payload"]
    assert meta["id"] == new_id and meta["source"] == "cli" and meta["model_provider"] == "fake"
    assert lineage == {"parentSession": str(project)}
    assert [v["ordinal"] for v in written] == list(range(len(written)))
    document = written[4]["payload"]["content"][0]["text"]
    assert document.startswith(WRAPPER_OPEN) and DOCUMENT in document
    assert written[5]["payload"]["message"] == document  # the event the picker titles it by

    after = project.read_bytes()
    assert after.startswith(before)  # appended to, never rewritten
    recorded = [json.loads(line) for line in after[len(before) :].splitlines()]
    assert shapes(recorded) == shapes(lines_of(HANDED / "tools-old.jsonl")[-4:])
    last = json.loads(before.splitlines()[-1])["ordinal"]
    assert [v["ordinal"] for v in recorded] == [last + 1, last + 2, last + 3, last + 4]
    asked, answered = recorded[0]["payload"], recorded[2]["payload"]
    assert is_handoff_prompt(asked["content"][0]["text"])
    assert answered["content"][0]["text"].startswith(DOCUMENT)

    context = shown_context(new)
    assert [m["role"] for m in context["messages"]] == ["user", "assistant"]
    assert context["model"] == "openai/fake-model"
    old_context = shown_context(project)
    assert old_context["messages"][:-2] == oracle(TOOLS)["context"]

    listed = {row["id"]: row for row in json.loads(run_cli("list", "--json", env=env).stdout)}
    assert listed[new_id]["parent"]["id"] == "01a231d8-6485-70d0-866d-03e1c0f10e57"
    assert listed[new_id]["title"] == "↳ How many lines does notes.txt have, and what is the first?"
    assert listed["01a231d8-6485-70d0-866d-03e1c0f10e57"]["handed_off"] is True


def test_our_written_rollouts_are_read_as_the_real_cli_read_them() -> None:
    """What the real CLI sent resuming the files our handoff wrote is our context of them: the
    document first in the new rollout, the exchange last in the old one."""
    new = oracle(HANDED / "tools-new.jsonl")["context"]
    assert new[0]["content"][0]["text"].startswith(WRAPPER_OPEN) and new[1]["role"] == "assistant"
    old = oracle(HANDED / "tools-old.jsonl")["context"]
    assert old[:-2] == oracle(TOOLS)["context"]
    assert is_handoff_prompt(old[-2]["content"][0]["text"])
    for kind in ("new", "old"):
        assert (
            json.loads((HANDED / f"tools-{kind}.jsonl.codex-request.json").read_text("utf-8"))[
                "stderr"
            ]
            == []
        )  # accepted with no warning: Codex finds it by its id


def test_no_record_and_out_dir(project: Path, tmp_path: Path) -> None:
    before = project.read_bytes()
    out = tmp_path / "elsewhere"
    args = ("--model", "extractive", "--no-record", "--out-dir", out, "-q")
    result = run_cli("handoff", project, *args)
    assert result.code == 0, result.stderr
    assert project.read_bytes() == before
    (written,) = out.iterdir()  # the folder named, not a date's below it
    assert written.name.startswith("rollout-")
    assert written.name.endswith(f"-{result.stdout.strip()}.jsonl")


def test_rotate_hands_each_rollout_off_once(project: Path) -> None:
    old = project.stat().st_mtime - 3 * 86400
    os.utime(project, (old, old))
    args = ("rotate", project.parents[3], "--model", "extractive", "--over-tokens", "10")
    first = run_cli(*args)
    assert first.code == 0, first.stderr
    (line,) = first.stdout.splitlines()
    assert line.split()[0] == "01a231d8-6485-70d0-866d-03e1c0f10e57"
    again = run_cli(*args)
    assert again.code == 0, again.stderr
    assert "01a231d8-6485" not in again.stdout  # handed off already: its last items say so


# --- --to: among the four agents -------------------------------------------------------------

PI_EXAMPLE = next((FIXTURES.parent.parent / "sessions").glob("--home-dev-projects-notes-app--/*"))


def test_to_codex_writes_a_rollout_codex_resumes(tmp_path: Path) -> None:
    """A pi session continued in Codex: a rollout in today's folder of Codex's sessions, in the
    shapes the real CLI resumed (``handoff/from-pi-new``, rc 0: it names no provider, so the
    configured one is used), naming the pi session as its parent and the session's model."""
    home = tmp_path / "home"
    source = tmp_path / "sessions" / PI_EXAMPLE.name
    source.parent.mkdir()
    shutil.copyfile(PI_EXAMPLE, source)
    env = {"HOME": str(home), "HANDOFF_SESSIONS_DIR": ""}
    result = run_cli("handoff", source, "--to", "codex", "--model", "extractive", env=env)
    assert result.code == 0, result.stderr
    new_id = result.stdout.strip()
    # How to continue is said in the agent continued in, not the one handed off from.
    said = result.stderr.splitlines()[-1]  # after `cd DIR &&` where the session's cwd is here
    assert said.startswith("continue in Codex: ") and said.endswith(f" codex resume {new_id}")
    (new,) = codex.dated(home / ".codex/sessions").glob(f"rollout-*-{new_id}.jsonl")
    written = lines_of(new)
    assert shapes(written) == shapes(lines_of(HANDED / "from-pi-new.jsonl"))
    assert "model_provider" not in written[0]["payload"]
    assert written[0]["payload"]["cwd"] == "/home/dev/projects/notes-app"
    assert written[1]["payload"] == {"parentSession": str(source)}
    assert written[3]["payload"]["model"] == "gpt-4.1"  # the pi session's, an OpenAI model
    assert load_session(new).agent == CODEX and load_session(new).parent == str(source)
    request = json.loads((HANDED / "from-pi-new.jsonl.codex-request.json").read_text("utf-8"))
    assert request["rc"] == 0
    last = [e["message"] for e in lines_of(source) if e.get("type") == "message"][-2:]
    assert is_handoff_prompt(last[0]["content"][0]["text"])  # pi's own exchange
    listed = run_cli("list", "--json", source.parent, home / ".codex/sessions")
    rows = {row["id"]: row for row in json.loads(listed.stdout)}
    assert rows[new_id]["parent"]["id"] == load_session(source).id


@pytest.mark.parametrize(
    ("to", "folder"),
    [
        ("pi", ".pi/agent/sessions/--tmp-codex-oracle-project--"),
        ("omp", ".omp/agent/sessions/-tmp-codex-oracle-project"),
        ("claude", ".claude/projects/-tmp-codex-oracle-project"),
    ],
)
def test_from_codex_to_every_other_agent(project: Path, to: str, folder: str) -> None:
    """A rollout continued in another agent: that agent's session in its folder for the
    rollout's cwd, naming the rollout as its parent; the rollout records the exchange in its own
    shapes and is listed as handed off."""
    home = project.parents[5]
    before = project.read_bytes()
    env = {"HOME": str(home), "HANDOFF_SESSIONS_DIR": ""}
    result = run_cli("handoff", project, "--to", to, "--model", "extractive", env=env)
    assert result.code == 0, result.stderr
    new_id = result.stdout.strip()
    assert result.stderr.splitlines()[-1].startswith(f"continue in {get(to).title}: ")
    (new,) = (home / folder).glob(f"*{new_id}.jsonl")
    loaded = load_session(new)
    assert loaded.parent == str(project)
    assert choose_agent(loaded, AUTO, to).agent == to
    recorded = [json.loads(line) for line in project.read_bytes()[len(before) :].splitlines()]
    assert [v["type"] for v in recorded] == ["response_item", "event_msg"] * 2
    listed = {row["id"]: row for row in json.loads(run_cli("list", "--json", env=env).stdout)}
    assert listed[new_id]["parent"]["id"] == "01a231d8-6485-70d0-866d-03e1c0f10e57"
    assert listed["01a231d8-6485-70d0-866d-03e1c0f10e57"]["handed_off"] is True


def test_a_rollout_handed_off_to_and_again_takes_no_title_from_our_prompt(tmp_path: Path) -> None:
    """Its first user message is our next handoff's prompt: no title of the user's."""
    again = tmp_path / "again.jsonl"
    exchange = (HANDED / "tools-old.jsonl").read_text("utf-8").splitlines(keepends=True)[-4:]
    again.write_text((HANDED / "tools-new.jsonl").read_text("utf-8") + "".join(exchange), "utf-8")
    assert load_session(again).title is None
    result = run_cli(
        "handoff", again, "--to", "pi", "--model", "extractive", "--out-dir", tmp_path / "pi"
    )
    assert result.code == 0, result.stderr
    (new,) = (tmp_path / "pi").iterdir()
    assert "Write a handoff document" not in new.read_text("utf-8").split("<handoff-context>")[0]


def test_a_rollout_is_known_by_a_first_line_longer_than_the_head_read() -> None:
    """A ``session_meta`` holds Codex's whole base instructions: the catalog reads 64 KiB."""
    head = TOOLS.read_bytes()[:200]
    assert b"\n" not in head and codex.owns_head(head)
    assert codex.owns_head((WRITTEN / "basic-legacy.jsonl").read_bytes()[:80])  # json.dumps'
    assert not codex.owns_head(b'{"type":"session","version":3,"id":"x"}\n')
    legacy = WRITTEN / "bare-first-version.jsonl"  # Codex's 2025 format: read as a transcript
    assert codex.owns_head(legacy.read_bytes())
    assert load_session(legacy).not_resumed == codex.LEGACY


CROSSED = {
    "omp": HANDED / "to-omp-new.jsonl",
    "pi": HANDED / "to-pi-new.jsonl",
    "claude": FIXTURES / "claude/handoff/from-codex-new.jsonl",
}
"""``made/tools`` handed off ``--to`` each agent, and read by the real one (oracles/crossings.py):
oh-my-pi 18.2.3 and pi 1.6.0 resuming it in print mode (``*.agent-request.json``; their own
contexts of it beside, which ours equals: tests/test_context.py), Claude Code 2.1.332
(``*.claude-context.json``, which ours equals: tests/test_claude.py)."""


def line_shapes(path: Path) -> list[Any]:
    """Each line's keys in order and its type: what must be as the agent accepted it."""
    return [(list(v), v.get("type")) for v in lines_of(path)]


@pytest.mark.parametrize("to", sorted(CROSSED))
def test_from_codex_each_agent_resumes_with_the_document(project: Path, to: str) -> None:
    """What ``--to`` writes from a rollout is, line for line, in the shapes of the file the
    real agent resumed, and that agent sent the document as the first message of its
    context."""
    home = project.parents[5]
    env = {"HOME": str(home), "HANDOFF_SESSIONS_DIR": ""}
    result = run_cli("handoff", project, "--to", to, "--model", "extractive", "--json", env=env)
    assert result.code == 0, result.stderr
    new = Path(result.json()["path"])
    assert line_shapes(new) == line_shapes(CROSSED[to])
    if to == "claude":
        sent = json.loads(CROSSED[to].with_suffix(".claude-context.json").read_text("utf-8"))
        assert sent[0]["role"] == "user" and sent[0]["content"].startswith(WRAPPER_OPEN)
        return
    resumed = json.loads(CROSSED[to].with_suffix(".agent-request.json").read_text("utf-8"))
    assert resumed["exit"] == 0
    first = resumed["request"]["messages"][1]  # after the agent's system prompt
    assert first["role"] == "user" and first["content"][0]["text"].startswith(WRAPPER_OPEN)


AGENTS_MADE = FIXTURES / "agents/omp-18.2.3"
OMP_MADE = AGENTS_MADE / "2026-12-01T09-58-51-313Z_01a2310a-f4b1-73f4-88b3-c1b996fe6728.jsonl"
CLAUDE_MADE = FIXTURES / "claude/made/tools.jsonl"


@pytest.mark.parametrize(
    ("source", "folder", "kept"),
    [
        (OMP_MADE, ".omp/agent/sessions/-tmp-handoff-oracle-project", "from-omp-new"),
        (CLAUDE_MADE, ".claude/projects/-tmp-handoff-oracle-claude-my-proj-v2", "from-claude-new"),
    ],
    ids=["omp", "claude"],
)
def test_to_codex_from_oh_my_pi_and_claude_code(
    tmp_path: Path, source: Path, folder: str, kept: str
) -> None:
    """A session oh-my-pi 18.2.3 made, and one Claude Code 2.1.332 made, continued in Codex: a
    rollout in the shapes the real CLI resumed (``handoff/<kept>``: rc 0, no warning), the
    document the first item it sent."""
    home = tmp_path / "home"
    placed = home / folder / source.name
    placed.parent.mkdir(parents=True)
    shutil.copyfile(source, placed)
    env = {"HOME": str(home), "HANDOFF_SESSIONS_DIR": ""}
    result = run_cli("handoff", placed, "--to", "codex", "--model", "extractive", env=env)
    assert result.code == 0, result.stderr
    made = codex.dated(home / ".codex/sessions").glob(f"rollout-*-{result.stdout.strip()}.jsonl")
    (new,) = made
    fixture = HANDED / f"{kept}.jsonl"
    assert shapes(lines_of(new)) == shapes(lines_of(fixture))
    assert lines_of(new)[1]["payload"] == {"parentSession": str(placed)}
    request = json.loads((HANDED / f"{kept}.jsonl.codex-request.json").read_text("utf-8"))
    assert request["rc"] == 0 and request["stderr"] == []
    first = oracle(fixture)["context"][0]
    assert first["role"] == "user" and first["content"][0]["text"].startswith(WRAPPER_OPEN)


CODEX_EXAMPLE = next(EXAMPLES.glob("2026/11/30/rollout-*.jsonl"))
"""The example of sessions/: a fix (calls, reasoning, a test run that fails, then passes), then
the next request, in Codex 0.171.0's line shapes."""


def test_the_codex_example_is_read_as_the_real_cli_read_it() -> None:
    """The real Codex resumed the example (``example/``: the same lines, but the provider named
    after the oracle's, since Codex will not have its own ``openai`` configured as another):
    our context of it is what it sent."""
    checked = CODEX_FIXTURES / "example" / CODEX_EXAMPLE.name
    example, copy = CODEX_EXAMPLE.read_bytes().splitlines(), checked.read_bytes().splitlines()
    assert example[1:] == copy[1:]
    assert example[0].replace(b'"model_provider":"openai"', b'"model_provider":"fake"') == copy[0]
    request = json.loads(checked.with_name(checked.name + ".codex-request.json").read_text("utf-8"))
    assert request["rc"] == 0
    assert shown_context(CODEX_EXAMPLE)["messages"] == oracle(checked)["context"]


def test_the_codex_example_is_handed_off_with_nothing_configured(tmp_path: Path) -> None:
    """As ``make demo`` hands it off: no key for its model, so the built-in writer; a new
    rollout in today's folder of the copy's sessions folder, the document and its
    acknowledgement its context."""
    shutil.copytree(EXAMPLES, tmp_path / "sessions")
    env = {"HANDOFF_SESSIONS_DIR": str(tmp_path / "sessions")}
    result = run_cli("handoff", "019ad9f3", env=env)
    assert result.code == 0, result.stderr
    assert "the built-in extractive writer" in result.stderr
    new_id = result.stdout.strip()
    (new,) = codex.dated(tmp_path / "sessions").glob(f"rollout-*-{new_id}.jsonl")
    messages = shown_context(new)["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert "parse_line" in messages[0]["content"][0]["text"]


def _png(width: int, height: int, crc_ok: bool = True) -> bytes:
    """A valid RGB PNG of ``width`` by ``height`` black pixels (its checksum spoilt, if not
    ``crc_ok``)."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = zlib.crc32(kind + body) ^ (0 if crc_ok or kind != b"IDAT" else 1)
        return len(body).to_bytes(4, "big") + kind + body + crc.to_bytes(4, "big")

    header = width.to_bytes(4, "big") + height.to_bytes(4, "big") + bytes([8, 2, 0, 0, 0])
    pixels = zlib.compress(b"".join(b"\0" + b"\0" * 3 * width for _ in range(height)))
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


def _url(data: bytes, kind: str = "image/png") -> str:
    return f"data:{kind};base64,{base64.b64encode(data).decode()}"


JPEG = b"\xff\xd8\xff\xe0\x00\x04JF\xff\xc0\x00\x11\x08\x00\x10\x00\x20\x03" + b"\0" * 12
GIF = b"GIF89a\x10\x00\x08\x00" + b"\0" * 20


@pytest.mark.parametrize(
    ("part", "sent"),
    [
        # What it reads and sends as it is: named by the kind its bytes are.
        ({"image_url": _url(_png(2, 2))}, {"image_url": _url(_png(2, 2))}),
        ({"image_url": _url(_png(2, 2), "image/jpeg")}, {"image_url": _url(_png(2, 2))}),
        ({"image_url": _url(JPEG, "image/png")}, {"image_url": _url(JPEG, "image/jpeg")}),
        # What it makes again (a GIF as a PNG; one over the budget scaled down): as it was.
        ({"image_url": _url(GIF)}, {"image_url": _url(GIF)}),
        ({"image_url": _url(_png(3000, 2))}, {"image_url": _url(_png(3000, 2))}),
        ({"image_url": _url(_png(3000, 2)), "detail": "original"}, None),
        # What it cannot send: its notes.
        ({"image_url": "data:image/png;base64,iVBORw0KGgo="}, codex.IMAGE_OMITTED),
        ({"image_url": _url(_png(2, 2, crc_ok=False))}, codex.IMAGE_OMITTED),
        ({"image_url": _url(_png(2, 2)[:-20])}, codex.IMAGE_OMITTED),
        ({"image_url": "data:image/png;base64,not base64!"}, codex.IMAGE_OMITTED),
        ({"image_url": _url(b"plain text")}, codex.IMAGE_OMITTED),
        ({"image_url": _url(_png(2, 2)), "detail": "low"}, "detail 'low' is not supported"),
        ({"image_url": "https://example.com/a.png"}, "remote image URLs are not supported"),
        ({"image_url": _url(b"\x89PNG\r\n\x1a\n" + b"\0" * (20 << 20))}, "exceeded the"),
    ],
)
def test_an_image_is_sent_as_codex_prepares_it(part: dict[str, Any], sent: Any) -> None:
    """An ``input_image`` of a message or a tool's output is sent as Codex 0.171.0 prepares
    it (``tests/fixtures/keep``: a PNG it read sent as it was), or as its note."""
    item = {"type": "message", "role": "user", "content": [{"type": "input_image", **part}]}
    got = codex._wire(item)
    assert got is not None
    output = codex._wire(
        {"type": "function_call_output", "call_id": "c", "output": item["content"]}
    )
    assert output is not None and output["output"] == got["content"]
    (image,) = got["content"]
    if sent is None:  # in its budget (detail "original"): sent as it is
        assert image == {"type": "input_image", **part}
    elif isinstance(sent, dict):
        assert image == {"type": "input_image", **part, **sent}
    else:
        assert image["type"] == "input_text" and sent in image["text"]


@pytest.mark.parametrize("typed", [False, True])
def test_a_long_message_codex_put_in_is_its_own_context_as_a_short_one_is(
    tmp_path: Path, typed: bool
) -> None:
    """A line longer than what a record holds of it is read with its texts cut, and its
    message made again from it when read: a block that no event says the person typed is
    still Codex's own context, whole where it is sent, and its size is the whole's."""
    text = "<notice>\n" + "a line of the notice\n" * 150_000 + "</notice>"
    lines: list[tuple[str, dict[str, Any]]] = [
        ("session_meta", {"id": "01a2356b-0000-7000-8000-000000000001", "cwd": "/p"}),
        ("event_msg", {"type": "user_message", "message": "fix it"}),
        ("response_item", _item("user", "fix it")),
    ]
    if typed:
        lines.append(("event_msg", {"type": "user_message", "message": text}))
    lines += [("response_item", _item("user", text)), ("response_item", _item("assistant", "ok"))]
    path = tmp_path / "rollout-2026-01-01T00-00-00-01a2356b-0000-7000-8000-000000000001.jsonl"
    stamp = "2026-01-01T00:00:00.000Z"
    lines_json = (json.dumps({"timestamp": stamp, "type": k, "payload": p}) for k, p in lines)
    path.write_text("".join(line + "\n" for line in lines_json))
    session = load_session(path)
    record = [r for r in session.records if r.has_message][1]
    assert record.facts is not None
    assert record.facts.role == ("user" if typed else "custom")
    assert text_of(record.message(None).get("content"), "\n") == text
    assert record.message_size == len(record.message_json())
    assert "characters cut" in text_of(record.message().get("content"), "\n")


def _item(role: str, text: str) -> dict[str, Any]:
    kind = "input_text" if role == "user" else "output_text"
    return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}


REAL = Path(__file__).parent / "fixtures" / "real" / "codex"


def test_a_rollout_of_the_2025_format_is_handed_off_to_another_agent(tmp_path: Path) -> None:
    """Codex 0.171.0 no longer resumes it (``test_real_resume``): read as the transcript it
    is, its folder from its environment context, handed off to Claude Code."""
    old = next((REAL / "Elektriker-Edgar__PV-Projekt").glob("rollout-*.jsonl"))
    copy = tmp_path / old.name
    shutil.copyfile(old, copy)
    env = {"HOME": str(tmp_path / "home")}
    done = run_cli("handoff", copy, "--model", "extractive", "--to", "claude", env=env)
    assert done.code == 0, done.stderr
    assert "2025 format" in done.stderr
    written = tmp_path / f"home/.claude/projects/E--ANPR-anpr-system/{done.stdout.strip()}.jsonl"
    assert "specs/001-arguments/spec.md" in written.read_text(encoding="utf-8")


def test_a_subagents_rollout_is_its_parents_child(tmp_path: Path) -> None:
    folder = REAL / "doudouqie66__CommonTools"
    listed = run_cli("list", "--tree", folder)
    assert listed.code == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[0].startswith("019f4efb") and lines[1].startswith("⤷ 019f4efd")
    rows = {row["id"][:8]: row for row in json.loads(run_cli("list", "--json", folder).stdout)}
    assert rows["019f4efd"]["parent"]["id"] == rows["019f4efb"]["id"]
    assert rows["019f4efd"]["parent"]["subagent"] is True
    child = Path(rows["019f4efd"]["path"])
    facts = json.loads(run_cli("show", child, "--facts", "--json").stdout)
    assert facts["spawned_by"] == rows["019f4efb"]["id"]
    copy = tmp_path / child.name
    shutil.copyfile(child, copy)
    done = run_cli("handoff", copy, "--model", "extractive", "--dry-run", "--json")
    assert done.code == 0, done.stderr
    assert f"a subagent's conversation, spawned by session {facts['spawned_by']}" in done.stdout
