"""Claude Code sessions: read as Claude Code 2.1.332 reads them (tests/fixtures/claude/, the
contexts the real CLI sent when it resumed each one: oracles/claude/cc.py)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from handoff_cli.agents import CLAUDE, claude, load_session
from handoff_cli.agents.places import default_roots
from handoff_cli.document import WRAPPER_OPEN, is_handoff_prompt
from handoff_cli.errors import ExitCode

from .conftest import (
    DOCUMENT,
    FIXTURES,
    cancel_mid_stream,
    files_in,
    key_orders,
    model_env,
    run_cli,
)
from .fakellm import FakeLLMServer, Reply

CLAUDE_FIXTURES = FIXTURES / "claude"
SESSIONS = sorted(
    p for p in CLAUDE_FIXTURES.glob("*/*.jsonl") if p.with_suffix(".claude-context.json").exists()
)
MADE = CLAUDE_FIXTURES / "made"
HAND = CLAUDE_FIXTURES / "hand"
HANDED = CLAUDE_FIXTURES / "handoff"
"""Our handoffs of ``made/tools`` and ``hand/thinking``, each file resumed by the real CLI
(``oracles/claude/handoffs.py``): ``<name>-new`` the session written, ``<name>-old`` the old
one with the exchange recorded; ``from-pi-new``, pi's example ``--to claude``; ``to-pi-new``,
``made/tools`` ``--to pi``, with the real pi's context of it (``*.pi-context.json``)."""


def oracle(path: Path) -> Any:
    return json.loads(path.with_suffix(".claude-context.json").read_text(encoding="utf-8"))


def shown_context(path: Path, *args: str) -> Any:
    result = run_cli("show", path, "--context", "--json", *args)
    assert result.code == 0, result.stderr
    return json.loads(result.stdout)


def test_every_oracle_session_is_here() -> None:
    # the oracle's 26, and the Claude Code files our handoffs wrote (from Claude Code, pi,
    # oh-my-pi, Codex; in place)
    assert len(SESSIONS) == 26 + 9


@pytest.mark.parametrize("path", SESSIONS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_context_is_what_claude_code_sends(path: Path) -> None:
    """``show --context --json`` is the ``messages`` the real CLI sent resuming the session,
    minus its own additions and the prompt: every value and every key in its order."""
    printed = shown_context(path)
    want = oracle(path)
    assert printed["messages"] == want
    assert key_orders(printed["messages"]) == key_orders(want)
    assert "thinkingLevel" not in printed  # Claude Code keeps none in the file


@pytest.mark.parametrize(
    ("name", "model"),
    [
        ("hand/model", "anthropic/claude-sonnet-4-6"),  # haiku, then sonnet: the last answer's
        ("made/tools", "anthropic/claude-opus-5-5"),
        ("hand/single-user", None),  # no answer: Claude Code's own default, unknown here
    ],
)
def test_the_model_is_the_last_answers(name: str, model: str | None) -> None:
    assert shown_context(CLAUDE_FIXTURES / f"{name}.jsonl")["model"] == model


def test_a_file_is_known_by_its_content_and_its_folder(tmp_path: Path) -> None:
    home = tmp_path / "home"
    folder = home / ".claude/projects/-tmp-handoff-oracle-claude-my-proj-v2"
    folder.mkdir(parents=True)
    copy = folder / "8904eaea-1111-4222-8333-444455556666.jsonl"
    shutil.copyfile(MADE / "tools.jsonl", copy)
    env = {"HOME": str(home)}
    by_folder = run_cli("show", copy, env=env)
    assert by_folder.code == 0, by_folder.stderr
    assert "\nagent    Claude Code (its folder)\n" in by_folder.stdout
    by_content = run_cli("show", HAND / "tool-result.jsonl", env=env)
    assert "\nagent    Claude Code (its content)\n" in by_content.stdout
    assert run_cli("show", copy, "--agent", "claude").code == 0
    assert load_session(copy).id == copy.stem  # the id is the file's name, as for the CLI


def test_claude_codes_folder_is_searched_with_nothing_configured(tmp_path: Path) -> None:
    home = tmp_path / "home"
    folder = home / ".claude/projects/-tmp-x"
    (folder / "8904eaea-1111-4222-8333-444455556666").mkdir(parents=True)
    shutil.copyfile(MADE / "tools.jsonl", folder / "8904eaea-1111-4222-8333-444455556666.jsonl")
    shutil.copytree(MADE / "subagent", folder / "8904eaea-1111-4222-8333-444455556666/x")
    assert [r.agent for r in default_roots({}, home, tmp_path)] == [CLAUDE]
    env = {"HOME": str(home), "HANDOFF_SESSIONS_DIR": ""}
    listed = run_cli("list", "--json", env=env, cwd=tmp_path)
    assert listed.code == 0, listed.stderr
    rows = json.loads(listed.stdout)
    # The subagent's transcript is part of its session, not one of its own.
    assert [(row["id"], row["agent"]) for row in rows] == [
        ("8904eaea-1111-4222-8333-444455556666", CLAUDE)
    ]
    assert rows[0]["title"] == "Read notes.txt and tell me what it says."
    shown = run_cli("show", "8904eaea", env=env, cwd=tmp_path)
    assert shown.code == 0, shown.stderr
    elsewhere = {"HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": str(home / ".claude")}
    assert [r.path for r in default_roots(elsewhere, tmp_path, tmp_path)] == [
        home / ".claude/projects"
    ]


def test_a_session_whose_first_line_is_longer_than_a_listings_head_is_listed_and_found(
    tmp_path: Path,
) -> None:
    # A pasted image or a long paste in the first prompt: the first line alone is 200 KB.
    home = tmp_path / "home"
    folder = home / ".claude/projects/-tmp-x"
    folder.mkdir(parents=True)
    lines = (MADE / "tools.jsonl").read_text(encoding="utf-8").splitlines()
    first = next(i for i, line in enumerate(lines) if '"type":"user"' in line)
    record = json.loads(lines[first])
    record["message"]["content"] = "Read notes.txt and tell me what it says. " + "x" * 200_000
    lines[first] = json.dumps(record)
    session = folder / "8904eaea-1111-4222-8333-444455556666.jsonl"
    session.write_text("\n".join(lines[first:]) + "\n", encoding="utf-8")
    assert len(lines[first]) > 64 * 1024
    env = {"HOME": str(home), "HANDOFF_SESSIONS_DIR": ""}
    listed = run_cli("list", "--json", env=env, cwd=tmp_path)
    assert listed.code == 0, listed.stderr
    rows = json.loads(listed.stdout)
    assert [(row["id"], row["agent"]) for row in rows] == [(session.stem, CLAUDE)]
    assert rows[0]["title"].startswith("Read notes.txt and tell me what it says. xxx")
    for named in ("8904eaea", session):
        shown = run_cli("show", named, "--json", env=env, cwd=tmp_path)
        assert shown.code == 0, shown.stderr


def test_the_project_folder_rule() -> None:
    assert claude.project_folder_name("/tmp/handoff-oracle-claude/my_proj.v2") == (
        "-tmp-handoff-oracle-claude-my-proj-v2"
    )
    assert claude.project_folder_name("/a b_é.c~d") == "-a-b---c-d"
    assert claude.project_folder_name("/" + "x" * 230) is None  # cut and hashed by the CLI


def test_list_and_every_view_work_on_them() -> None:
    listed = run_cli("list", "--json", CLAUDE_FIXTURES)
    assert listed.code == 0, listed.stderr
    rows = json.loads(listed.stdout)
    ids = sorted(row["id"] for row in rows if row["agent"] == CLAUDE)
    assert ids == sorted(p.stem for p in SESSIONS)
    assert len(rows) == len(SESSIONS) + 2  # and handoff/to-pi-new and to-omp-new
    tree = run_cli("list", "--tree", CLAUDE_FIXTURES)
    assert tree.code == 0 and "Remember the word lantern." in tree.stdout
    for path in SESSIONS:
        for view in ([], ["--tree"], ["--json"], ["--context"]):
            result = run_cli("show", path, *view)
            assert result.code == 0, (path, view, result.stderr)
            assert "Traceback" not in result.stderr


_ENTRY_LINE = re.compile(r"^\S+ +(?:\d{4}-\d\d-\d\d )?(?:\d\d:\d\d:\d\d)? +(\S+)(?: +(.*))?$")


def entry_lines(path: Path) -> list[tuple[str, str | None]]:
    """Each line ``show`` prints of the branch, after the header: its kind and its excerpt."""
    shown = run_cli("show", path)
    assert shown.code == 0, shown.stderr
    entries = shown.stdout.split("\n\n", 1)[1]
    matched = [_ENTRY_LINE.match(line) for line in entries.splitlines()]
    return [(m.group(1), m.group(2)) for m in matched if m is not None]


def test_show_gives_every_record_a_line_as_for_the_pi_family() -> None:
    """A record holding only a tool call, a tool result or thinking (Claude Code writes each
    block of an answer a record of its own) is shown as the pi family's message would be: the
    tool and its arguments, the result under its tool's name, the thinking; no message record
    of any fixture has a blank line."""
    lines = entry_lines(MADE / "tools.jsonl")
    read = '→ read {"path":"/tmp/handoff-oracle-claude/my_proj.v2/notes.txt"}'
    bash = '→ bash {"command":"wc -l notes.txt","description":"Count lines"}'
    assert ("assistant", read) in lines and ("assistant", bash) in lines
    assert ("toolResult", "read: 1 one 2 two 3 three 4") in lines
    assert ("assistant", "thinking: wc -l counts them.") in lines
    assert ("attachment", "environment") in lines
    assert ("assistant", "thinking (redacted)") in entry_lines(HAND / "thinking.jsonl")
    for session in SESSIONS:
        for kind, excerpt in entry_lines(session):
            if kind in ("user", "assistant", "toolResult", "custom", "compactionSummary"):
                assert excerpt, (session.name, kind)


def test_show_names_the_leaf_claude_code_resumes() -> None:
    """The last ``last-prompt`` names a record off the last message's branch: it is the leaf,
    even an inner user message (then answered by "No response requested.")."""
    shown = json.loads(run_cli("show", HAND / "last-prompt-inner.jsonl", "--json").stdout)
    assert shown["leaf"] == "994bbac9-81df-5e74-af18-3b3c583cf45a"
    assert shown["branch"][-1]["message"] == {"role": "user", "content": "Arm A."}
    assert shown["header"]["id"] == "last-prompt-inner"


def test_records_outside_the_tree_and_bad_lines_never_crash() -> None:
    result = run_cli("show", HAND / "records.jsonl", "--context", "--json")
    assert result.code == 0
    assert result.stderr.startswith("warning: ") and "line 11, 12" in result.stderr


@pytest.mark.parametrize(
    "record",
    [
        {"type": ["user"], "uuid": "u2", "parentUuid": "u1"},
        {"type": "user", "uuid": "u2", "parentUuid": 7, "message": "text"},
        {"type": "user", "uuid": "u2", "parentUuid": "u1", "message": {"content": 3}},
        {"type": "assistant", "uuid": "u2", "parentUuid": "u1", "message": {"content": [1, None]}},
        {"type": "assistant", "uuid": "u2", "parentUuid": "u1", "message": {"id": [], "model": {}}},
        {"type": "attachment", "uuid": "u2", "parentUuid": "u1", "attachment": {"type": []}},
        {"type": "attachment", "uuid": "u2", "parentUuid": "u1",
         "attachment": {"type": "queued_command", "prompt": [{"type": "text", "text": "q"}]}},
        {"type": "system", "uuid": "u2", "parentUuid": None, "subtype": "compact_boundary",
         "compactMetadata": {"preservedSegment": {"headUuid": "u1", "anchorUuid": "zz"}}},
        {"type": "user", "uuid": "u2", "parentUuid": "u1", "isMeta": True,
         "message": {"role": "user", "content": [{"type": "tool_result", "content": 5}]}},
        {"type": "last-prompt", "leafUuid": ["u1"]},
        {"type": "wibble", "uuid": "u2", "parentUuid": "u2"},
    ],
)  # fmt: skip
def test_odd_records_are_read_without_a_crash(tmp_path: Path, record: dict[str, Any]) -> None:
    first = {"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "s",
             "message": {"role": "user", "content": "Hello."}}  # fmt: skip
    path = tmp_path / "odd.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in (first, record)), encoding="utf-8")
    for view in (["--context", "--json"], ["--json"], ["--tree"], []):
        result = run_cli("show", path, *view)
        assert result.code == 0, (view, result.stderr)
    assert load_session(path).agent == CLAUDE


def test_agents_of_another_format_are_refused_in_one_line() -> None:
    other = run_cli("show", MADE / "tools.jsonl", "--agent", "pi")
    assert other.code == ExitCode.USAGE
    assert "Claude Code's format: --agent pi cannot read it" in other.stderr
    assert len(other.stderr.strip().splitlines()) == 1
    pi_file = run_cli("show", FIXTURES / "omp/sample-v3.jsonl", "--agent", "claude")
    assert pi_file.code == ExitCode.USAGE
    assert "the pi family's format: --agent claude cannot read it" in pi_file.stderr


# --- the handoff ---------------------------------------------------------------------------


def lines_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def shapes(records: list[dict[str, Any]]) -> list[Any]:
    """Each record's keys in order, and its message's: what must be as the CLI accepted."""
    return [(list(r), list(r.get("message") or {})) for r in records]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """``made/tools`` in Claude Code's folder for its cwd, under its own id."""
    folder = tmp_path / "home/.claude/projects/-tmp-handoff-oracle-claude-my-proj-v2"
    folder.mkdir(parents=True)
    old = folder / "c8e5e286-ae88-52dd-9175-7a7482e56fde.jsonl"
    shutil.copyfile(MADE / "tools.jsonl", old)
    return old


@pytest.mark.litellm
def test_a_handoff_writes_a_session_claude_code_resumes(
    project: Path, llm_server: FakeLLMServer
) -> None:
    """The new session is ``<id>.jsonl`` beside the old one, in the shapes the real CLI resumed
    with the document as its first message and the old session's model kept; the old session
    ends with the exchange in Claude Code's shapes, its own model again."""
    llm_server.script(Reply(DOCUMENT))
    before = project.read_bytes()
    leaf = load_session(project).leaf_id
    env = {**model_env(llm_server), "HOME": str(project.parents[3]), "HANDOFF_SESSIONS_DIR": ""}
    result = run_cli("handoff", project.stem, env=env, cwd=project.parents[3])
    assert result.code == 0, result.stderr
    new_id = result.stdout.strip()
    assert result.stdout == new_id + "\n"
    new = project.with_name(f"{new_id}.jsonl")
    written = lines_of(new)
    assert shapes(written) == shapes(lines_of(HANDED / "tools-new.jsonl"))
    lineage, document, answer, last = written
    assert lineage == {**lineage, "type": "handoff-cli", "parentSession": str(project)}
    assert document["message"]["content"].startswith(WRAPPER_OPEN)
    assert DOCUMENT in document["message"]["content"]
    assert answer["parentUuid"] == document["uuid"] and last["leafUuid"] == answer["uuid"]
    assert answer["message"]["model"] == "claude-opus-5-5"  # the old session's, not the writer's
    assert {r["sessionId"] for r in written} == {new_id}
    assert {r.get("cwd") for r in written[1:3]} == {"/tmp/handoff-oracle-claude/my_proj.v2"}

    after = project.read_bytes()
    assert after.startswith(before)  # appended to, never rewritten
    recorded = [json.loads(line) for line in after[len(before) :].splitlines()]
    assert shapes(recorded) == shapes(lines_of(HANDED / "tools-old.jsonl")[-3:])
    asked, answered, pointer = recorded
    assert asked["parentUuid"] == leaf and is_handoff_prompt(asked["message"]["content"])
    assert answered["parentUuid"] == asked["uuid"] and pointer["leafUuid"] == answered["uuid"]
    assert answered["message"]["model"] == "claude-opus-5-5"
    assert answered["message"]["content"][0]["text"].startswith(DOCUMENT)

    context = shown_context(new)
    assert [m["role"] for m in context["messages"]] == ["user", "assistant"]
    assert context["model"] == "anthropic/claude-opus-5-5"
    old_context = shown_context(project)
    assert old_context["messages"][:-2] == oracle(MADE / "tools.jsonl")
    assert old_context["model"] == "anthropic/claude-opus-5-5"

    listed = {row["id"]: row for row in json.loads(run_cli("list", "--json", env=env).stdout)}
    assert listed[new_id]["parent"]["id"] == project.stem
    assert listed[new_id]["title"] == "↳ Read notes.txt and tell me what it says."
    assert listed[project.stem]["handed_off"] is True


def test_our_written_files_are_read_as_the_real_cli_read_them() -> None:
    """What the real CLI sent resuming the files our handoffs wrote (beside them) is our context
    of them: the document first in the new session, the exchange last in the old one."""
    for name in ("tools", "thinking"):
        new = oracle(HANDED / f"{name}-new.jsonl")
        assert new[0]["content"].startswith(WRAPPER_OPEN) and new[1]["role"] == "assistant"
        old = oracle(HANDED / f"{name}-old.jsonl")
        assert old[:-2] == oracle((MADE if name == "tools" else HAND) / f"{name}.jsonl")
        assert is_handoff_prompt(old[-2]["content"])
        for kind in ("new", "old"):
            assert shown_context(HANDED / f"{name}-{kind}.jsonl")["messages"] == oracle(
                HANDED / f"{name}-{kind}.jsonl"
            )


def test_the_default_model_is_the_sessions_through_litellm(project: Path) -> None:
    env = {"ANTHROPIC_API_KEY": "sk-ant-test"}
    result = run_cli("handoff", project, "--dry-run", "--json", env=env)
    assert result.code == 0, result.stderr
    assert json.loads(result.stdout)["model"] == "anthropic/claude-opus-5-5"


IN_PLACE = {
    "tools": (MADE / "tools.jsonl", "c8e5e286-ae88-52dd-9175-7a7482e56fde", "claude-opus-5-5",
              4736),
    "thinking": (HAND / "thinking.jsonl", "76bdb59b-1a3b-5700-86b3-edbcb97cde08",
                 "claude-sonnet-4-6", 15),
}  # fmt: skip
"""The sessions handed off in place and resumed by the real CLI (``handoff/<name>-inplace``):
each one's id, model, and the context its last answer counted (input and output tokens)."""


@pytest.mark.litellm
@pytest.mark.parametrize("name", IN_PLACE)
def test_in_place_appends_a_compaction_claude_code_reads(
    tmp_path: Path, llm_server: FakeLLMServer, name: str
) -> None:
    """``--in-place``: four whole lines appended, as the real CLI read them when it resumed
    ``handoff/<name>-inplace`` (the branch starts at the boundary: the summary holding the
    document, then the answer in the session's model, which the resume kept: ``thinking``'s
    ``claude-sonnet-4-6``, not the CLI's default); the old bytes untouched, no new session; once
    compacted, nothing more to compact."""
    source, session_id, model, tokens = IN_PLACE[name]
    project = tmp_path / "home/.claude/projects/-tmp-handoff-oracle-claude-my-proj-v2"
    project.mkdir(parents=True)
    project = project / f"{session_id}.jsonl"
    shutil.copyfile(source, project)
    llm_server.script(Reply(DOCUMENT))
    before = project.read_bytes()
    leaf = load_session(project).leaf_id
    env = {**model_env(llm_server), "HOME": str(tmp_path / "home"), "HANDOFF_SESSIONS_DIR": ""}
    result = run_cli("handoff", project, "--in-place", "--json", env=env)
    assert result.code == 0, result.stderr
    report = result.json()
    after = project.read_bytes()
    assert after.startswith(before) and files_in(project.parent) == [project.name]
    written = [json.loads(line) for line in after[len(before) :].splitlines()]
    assert shapes(written) == shapes(lines_of(HANDED / f"{name}-inplace.jsonl")[-4:])
    boundary, summary, answer, pointer = written
    assert boundary["parentUuid"] is None and boundary["logicalParentUuid"] == leaf
    assert boundary["subtype"] == "compact_boundary"
    metadata = {"trigger": "manual", "preTokens": tokens, "postTokens": report["tokens_after"]}
    assert boundary["compactMetadata"] == metadata
    assert summary["parentUuid"] == boundary["uuid"] and summary["isCompactSummary"] is True
    content = summary["message"]["content"]
    assert content.startswith(claude.COMPACT_OPENING + "\n\n" + WRAPPER_OPEN + DOCUMENT)
    assert str(project) in content  # the transcript, for a detail the document leaves out
    assert answer["parentUuid"] == summary["uuid"] and pointer["leafUuid"] == answer["uuid"]
    assert answer["message"]["model"] == model  # the session's: the CLI keeps it
    assert {r["sessionId"] for r in written} == {session_id}
    assert report == {
        **report,
        "mode": "in_place",
        "id": session_id,
        "entry_id": boundary["uuid"],
        "first_kept_entry_id": None,
        "tokens_before": tokens,
    }
    assert report["tokens_after"] > 0

    context = shown_context(project)
    assert [m["role"] for m in context["messages"]] == ["user", "assistant"]
    assert context["messages"][0]["content"] == content
    assert context["model"] == f"anthropic/{model}"
    assert run_cli("show", project, "--document").stdout.startswith(DOCUMENT)
    planned = run_cli("handoff", project, "--dry-run", "--json", "--model", "extractive").json()
    assert planned["messages"][-1]["content"].startswith("Update the handoff document")
    listed = {row["id"]: row for row in json.loads(run_cli("list", "--json", env=env).stdout)}
    assert listed[session_id]["handed_off"] is True
    again = run_cli("handoff", project, "--in-place", env=env)
    assert again.code == 3 and again.stderr.strip() == "Nothing to hand off (already compacted)"
    assert project.read_bytes() == after


def test_in_place_dry_run_compacts_the_whole_branch(project: Path) -> None:
    before = project.read_bytes()
    result = run_cli(
        "handoff", project, "--in-place", "--dry-run", "--json", "--model", "extractive"
    )
    assert result.code == 0, result.stderr
    plan = result.json()
    assert plan["mode"] == "in_place" and plan["first_kept_entry_id"] is None
    assert plan["kept_entries"] == 0 and plan["tokens_before"] == 4736
    assert project.read_bytes() == before


@pytest.mark.zygote  # forks the program from the zygote (tests/conftest.py)
def test_in_place_cancelled_before_the_write_leaves_the_file_as_it_was(
    project: Path, llm_server: FakeLLMServer
) -> None:
    before = project.read_bytes()
    result, _ = cancel_mid_stream(llm_server, signal.SIGTERM, project, "--in-place")
    assert result.code == 130 and result.stderr.strip() == "Handoff cancelled"
    assert project.read_bytes() == before and files_in(project.parent) == [project.name]


def _leaf_moved(data: bytes) -> bytes:
    """The same bytes, the leaf's line (the last record with a uuid) swapped with the line
    before it."""
    lines = data.splitlines(keepends=True)
    at = max(
        i for i, line in enumerate(lines) if b'"uuid"' in line and b'"type":"assistant"' in line
    )
    lines[at - 1], lines[at] = lines[at], lines[at - 1]
    return b"".join(lines)


@pytest.mark.litellm
@pytest.mark.parametrize("change", ["emptied", "cut short", "leaf moved", "replaced"])
def test_in_place_on_a_session_changed_meanwhile_writes_nothing(
    project: Path, llm_server: FakeLLMServer, change: str
) -> None:
    before = project.read_bytes()
    left: list[bytes] = []

    def other_writer(request: Any) -> Reply:
        if change == "replaced":  # a new file renamed over it, the same bytes
            other = project.with_name("other.tmp")
            other.write_bytes(before)
            other.replace(project)
        else:
            changed = {"emptied": b"", "cut short": before[: len(before) // 2]}
            with project.open("r+b") as file:
                file.write(changed.get(change, _leaf_moved(before)))
                file.truncate()
        left.append(project.read_bytes())
        return Reply(DOCUMENT, chunks=4)

    llm_server.script(other_writer)
    result = run_cli("handoff", project, "--in-place", "-q", env=model_env(llm_server))
    assert result.code == ExitCode.BAD_SESSION, result.stderr
    assert "the session changed while the handoff ran" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert project.read_bytes() == left[0]
    assert files_in(project.parent) == [project.name]


def test_rotate_in_place_compacts_each_claude_code_session_once(project: Path) -> None:
    old = project.stat().st_mtime - 3 * 86400
    os.utime(project, (old, old))
    args = ("rotate", project.parent, "--in-place", "--model", "extractive", "--over-tokens", "10")
    first = run_cli(*args, "--json")
    assert first.code == 0, first.stderr
    (outcome,) = [json.loads(line) for line in first.stdout.splitlines()]
    assert outcome["status"] == "handed_off" and outcome["new_id"] == project.stem
    assert outcome["entry_id"] == lines_of(project)[-4]["uuid"]
    os.utime(project, (old, old))
    again = run_cli(*args, "--json")
    assert again.code == 0 and again.stdout == ""  # compacted: its leaf says so


def test_no_record_and_out_dir(project: Path, tmp_path: Path) -> None:
    before = project.read_bytes()
    out = tmp_path / "elsewhere"
    args = ("--model", "extractive", "--no-record", "--out-dir", out, "-q")
    result = run_cli("handoff", project, *args)
    assert result.code == 0, result.stderr
    assert project.read_bytes() == before
    assert [p.name for p in out.iterdir()] == [f"{result.stdout.strip()}.jsonl"]


def test_rotate_hands_each_claude_code_session_off_once(project: Path) -> None:
    old = project.stat().st_mtime - 3 * 86400
    os.utime(project, (old, old))
    args = ("rotate", project.parent, "--model", "extractive", "--over-tokens", "10")
    first = run_cli(*args)
    assert first.code == 0, first.stderr
    (line,) = first.stdout.splitlines()
    assert line.split()[0] == project.stem
    again = run_cli(*args)
    assert again.code == 0, again.stderr
    assert project.stem not in again.stdout  # handed off already: its leaf says so


# --- --to: the new session as another agent's ------------------------------------------------

PI_EXAMPLE = next((FIXTURES.parent.parent / "sessions").glob("--home-dev-projects-notes-app--/*"))


def test_to_pi_writes_a_pi_session_in_pis_folder(project: Path) -> None:
    """A Claude Code session continued in pi: a pi session in pi's folder for the same cwd,
    naming the old one, on the old session's model; the old one records the exchange in its own
    shapes. (The real pi reads such a file as we do: ``handoff/to-pi-new.pi-context.json``,
    held by the pi context tests.)"""
    home = project.parents[3]
    before = project.read_bytes()
    env = {"HOME": str(home), "HANDOFF_SESSIONS_DIR": ""}
    result = run_cli("handoff", project, "--to", "pi", "--model", "extractive", env=env)
    assert result.code == 0, result.stderr
    new_id = result.stdout.strip()
    folder = home / ".pi/agent/sessions/--tmp-handoff-oracle-claude-my_proj.v2--"
    (new,) = folder.glob(f"*_{new_id}.jsonl")
    header, model, document, *_ = lines_of(new)
    assert header["parentSession"] == str(project) and "version" in header
    assert model == {**model, "type": "model_change", "provider": "anthropic"}
    assert model["modelId"] == "claude-opus-5-5"
    assert document["customType"] == "handoff"
    assert shown_context(new, "--agent", "pi")["model"] == "anthropic/claude-opus-5-5"
    recorded = project.read_bytes()[len(before) :].splitlines()
    assert [json.loads(line)["type"] for line in recorded] == ["user", "assistant", "last-prompt"]
    listed = {row["id"]: row for row in json.loads(run_cli("list", "--json", env=env).stdout)}
    assert listed[new_id]["parent"]["id"] == project.stem
    assert listed[project.stem]["handed_off"] is True


def test_to_claude_writes_a_session_claude_code_resumes(tmp_path: Path) -> None:
    """A pi session continued in Claude Code: ``<id>.jsonl`` in Claude Code's folder for the
    cwd, in the shapes the real CLI resumed (``handoff/from-pi-new``); the answer to the
    document names no model of Claude Code's (the session's is another provider's)."""
    home = tmp_path / "home"
    source = tmp_path / "sessions" / PI_EXAMPLE.name
    source.parent.mkdir()
    shutil.copyfile(PI_EXAMPLE, source)
    result = run_cli(
        "handoff", source, "--to", "claude", "--model", "extractive", env={"HOME": str(home)}
    )
    assert result.code == 0, result.stderr
    new_id = result.stdout.strip()
    new = home / f".claude/projects/-home-dev-projects-notes-app/{new_id}.jsonl"
    written = lines_of(new)
    assert shapes(written) == shapes(lines_of(HANDED / "from-pi-new.jsonl"))
    assert written[0]["parentSession"] == str(source)
    assert written[2]["message"]["model"] == "<synthetic>"
    assert written[1]["cwd"] == "/home/dev/projects/notes-app"
    assert load_session(new).agent == CLAUDE
    last = [e["message"] for e in lines_of(source) if e.get("type") == "message"][-2:]
    assert [m["role"] for m in last] == ["user", "assistant"]  # pi's own exchange
    assert is_handoff_prompt(last[0]["content"][0]["text"])


def _requested(agent: str) -> Any:
    """The first request the pi-family agent whole sent on ``handoff/to-<agent>-new`` opened by
    its path (``oracles/claude/handoffs.py``, ``agents.py next``)."""
    return json.loads((HANDED / f"to-{agent}-new.{agent}-request.json").read_text("utf-8"))


@pytest.mark.parametrize(
    ("agent", "folder"),
    [
        ("omp", ".omp/agent/sessions/-tmp-handoff-oracle-claude-my_proj.v2"),
        ("pi", ".pi/agent/sessions/--tmp-handoff-oracle-claude-my_proj.v2--"),
    ],
)
def test_to_the_pi_family_writes_a_session_the_agent_opens_with_the_document(
    project: Path, agent: str, folder: str
) -> None:
    """A Claude Code session continued in oh-my-pi or pi: the session written is in the
    shapes of ``handoff/to-<agent>-new``, which oh-my-pi 18.2.3 and pi 1.6.0 whole opened (by its
    path, and by ``--continue`` in the cwd), listed under the old session's title and sent with
    the document as the first message on the old session's model: our context of that file, the
    document first, is what the agent sent (its own ``buildSessionContext`` of it is held by the
    context tests: ``*.context.json``, ``*.pi-context.json``)."""
    home = project.parents[3]
    env = {"HOME": str(home), "HANDOFF_SESSIONS_DIR": ""}
    result = run_cli("handoff", project, "--to", agent, "--model", "extractive", env=env)
    assert result.code == 0, result.stderr
    (new,) = (home / folder).glob(f"*_{result.stdout.strip()}.jsonl")
    kept = HANDED / f"to-{agent}-new.jsonl"
    assert shapes(lines_of(new)) == shapes(lines_of(kept))
    sent = _requested(agent)
    assert sent["model"] == "claude-opus-5-5"
    (document,) = shown_context(kept, "--agent", agent)["messages"]
    assert [m["role"] for m in sent["messages"]] == ["system", "user", "user"]
    assert sent["messages"][1]["content"] == [{"type": "text", "text": document["content"]}]
    assert document["content"].startswith(WRAPPER_OPEN)


OMP_MADE = min((FIXTURES / "agents/omp-18.2.3").glob("*.jsonl"), key=lambda p: p.stat().st_size)
"""The short session oh-my-pi 18.2.3 made itself (a read, a bash call, a plan)."""


def test_an_omp_session_to_claude_is_resumed_with_the_document(tmp_path: Path) -> None:
    """A session oh-my-pi made itself, continued in Claude Code: the shapes the real CLI
    resumed (``handoff/from-omp-new``: the document first, then the answer, and a plain resume
    appended only its own turn); the answer names the session's model, ``claude-sonnet-4-5``,
    which the CLI does not offer, so it resumed on its default (as it does any session whose
    model it does not offer: ``docs/claude-code.md``)."""
    home = tmp_path / "home"
    source = home / ".omp/agent/sessions/-tmp-handoff-oracle-project" / OMP_MADE.name
    source.parent.mkdir(parents=True)
    shutil.copyfile(OMP_MADE, source)
    env = {"HOME": str(home), "HANDOFF_SESSIONS_DIR": ""}
    result = run_cli("handoff", source, "--to", "claude", "--model", "extractive", env=env)
    assert result.code == 0, result.stderr
    new = home / f".claude/projects/-tmp-handoff-oracle-project/{result.stdout.strip()}.jsonl"
    written = lines_of(new)
    kept = HANDED / "from-omp-new.jsonl"
    assert shapes(written) == shapes(lines_of(kept))
    assert written[0]["parentSession"] == str(source)
    assert written[2]["message"]["model"] == "claude-sonnet-4-5"
    sent = oracle(kept)
    assert sent[0]["content"].startswith(WRAPPER_OPEN) and sent[1]["role"] == "assistant"
    request = json.loads(kept.with_suffix(".claude-request.json").read_text("utf-8"))
    assert request["model"] == "claude-opus-5-5"


def test_to_a_folder_that_cannot_be_named_is_refused_before_the_writer(tmp_path: Path) -> None:
    source = tmp_path / "sessions" / "long.jsonl"
    source.parent.mkdir()
    lines = PI_EXAMPLE.read_text(encoding="utf-8").splitlines(keepends=True)
    header = json.loads(lines[0]) | {"cwd": "/" + "x" * 230}
    source.write_text(json.dumps(header) + "\n" + "".join(lines[1:]), encoding="utf-8")
    before = source.read_bytes()
    args = ("--to", "claude", "--model", "extractive")
    result = run_cli("handoff", source, *args, env={"HOME": str(tmp_path / "home")})
    assert result.code == ExitCode.USAGE
    assert "--to claude: no folder of Claude Code's for the cwd" in result.stderr
    assert source.read_bytes() == before and not (tmp_path / "home").exists()
    both = run_cli("handoff", source, "--to", "pi", "--in-place")
    assert both.code == ExitCode.USAGE and "no --to" in both.stderr


def test_list_tree_shows_each_sessions_subagents_beneath_it() -> None:
    folder = Path(__file__).parent / "fixtures/real/claude/Eduardodmb__ClaudeWork"
    plain = [row["id"] for row in json.loads(run_cli("list", "--json", folder).stdout)]
    assert not any(i.startswith("agent-") for i in plain)  # part of their sessions
    lines = run_cli("list", "--tree", folder).stdout.splitlines()
    parent = next(i for i, line in enumerate(lines) if line.startswith("738a70de"))
    below = lines[parent + 1 :]
    assert len(below) == 16 and all("⤷ agent-a" in line for line in below)
    transcript = next(folder.glob("738a70de-*/subagents/agent-*.jsonl"))
    facts = json.loads(run_cli("show", transcript, "--facts", "--json").stdout)
    assert facts["spawned_by"] == "738a70de-a593-468d-9535-0a1a31be5d45"  # loaded as listed


def _session(tmp_path: Path, records: list[dict[str, Any]]) -> Path:
    """A file of ``records`` (each a ``(type, uuid, parent, message)``-like dict, completed
    with the keys the CLI writes)."""
    path = tmp_path / "8904eaea-1111-4222-8333-444455556666.jsonl"
    lines = [
        json.dumps({"isSidechain": False, "timestamp": f"2026-11-30T10:00:{i:02d}.000Z"} | r)
        for i, r in enumerate(records)
    ]
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return path


def _prompt(uuid: str, parent: str | None, content: Any) -> dict[str, Any]:
    message = {"role": "user", "content": content}
    return {"type": "user", "uuid": uuid, "parentUuid": parent, "message": message}


def _answer(uuid: str, parent: str, content: list[Any], model: str = "claude-sonnet-4-6",
            answer: str = "msg_1") -> dict[str, Any]:  # fmt: skip
    message = {"id": answer, "role": "assistant", "model": model, "content": content}
    return {"type": "assistant", "uuid": uuid, "parentUuid": parent, "message": message}


def _call(call: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": call, "name": "Bash", "input": {"command": "ls"}}


def _result(call: str) -> dict[str, Any]:
    return {"tool_use_id": call, "type": "tool_result", "content": "ok"}


@pytest.mark.parametrize(
    ("model", "day", "resumed"),
    [
        ("claude-sonnet-4-5-20250929", "2026-11-29", "claude-sonnet-4-5-20250929"),
        ("claude-sonnet-4-5-20250929", "2026-11-30", "claude-opus-5-5"),  # retired that day
        ("claude-opus-4-5-20251101", "2026-12-02", "claude-opus-4-5-20251101"),
        ("claude-opus-4-5-20251101", "2027-01-22", "claude-opus-5-5"),
        ("claude-opus-4-1-20250805", "2026-01-01", "claude-opus-5-5"),  # remapped: the default
        ("claude-opus-4-20250514", "2026-06-15", "claude-opus-5-5"),  # claude-opus-4-0's
        ("CLAUDE-OPUS-4-6[1m]", "2026-12-02", "claude-opus-4-6"),
        ("claude-opus-4.6-fast", "2026-12-02", "claude-opus-4.6-fast"),
        ("us.anthropic.claude-sonnet-4-6", "2026-12-02", "us.anthropic.claude-sonnet-4-6"),
        ("claude-3-7-sonnet-20250219", "2026-12-02", "claude-opus-5-5"),
        ("minimax-m2.7", "2026-12-02", "claude-opus-5-5"),  # no family the CLI knows
        ("opus", "2026-12-02", "claude-opus-5-5"),
    ],
)
def test_the_model_resumed_on_is_one_the_cli_still_offers(
    model: str, day: str, resumed: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(claude, "today", lambda: date.fromisoformat(day))
    assert claude.resumed_on(model) == resumed


def test_thinking_is_kept_from_an_answer_of_the_same_family(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The session resumes on the last answer's model; an earlier answer keeps its signed
    thinking when its model is that one by another name, loses it when it is another."""
    monkeypatch.setattr(claude, "today", lambda: date(2026, 12, 2))
    thought = {"type": "thinking", "thinking": "so", "signature": "sig"}
    said = {"type": "text", "text": "a"}
    path = _session(tmp_path, [
        _prompt("u1", None, "q1"),
        _answer("a1", "u1", [thought, said], "claude-opus-4.6", "msg_1"),
        _prompt("u2", "a1", "q2"),
        _answer("a2", "u2", [thought, said], "claude-sonnet-4-6", "msg_2"),
        _prompt("u3", "a2", "q3"),
        _answer("a3", "u3", [said], "claude-opus-4-6[1m]", "msg_3"),
    ])  # fmt: skip
    shown = shown_context(path)
    assert shown["model"] == "anthropic/claude-opus-4-6"
    answers = [m["content"] for m in shown["messages"] if m["role"] == "assistant"]
    assert answers == [[thought, said], [said], [said]]


def test_parallel_calls_beside_the_branch_are_put_back(tmp_path: Path) -> None:
    """An answer with two calls is two records, chained, each result hanging from its call:
    the leaf's branch passes the first result by, which is put back, by file position."""
    path = _session(tmp_path, [
        _prompt("u1", None, "q1"),
        _answer("a1", "u1", [_call("toolu_1")]),
        _answer("a2", "a1", [_call("toolu_2")]),
        _prompt("r1", "a1", [_result("toolu_1")]),
        _prompt("r2", "a2", [_result("toolu_2")]),
        _answer("a3", "r2", [{"type": "text", "text": "done"}], answer="msg_2"),
    ])  # fmt: skip
    assert shown_context(path)["messages"] == [
        {"role": "user", "content": "q1"},
        {"role": "assistant", "content": [_call("toolu_1"), _call("toolu_2")]},
        {"role": "user", "content": [_result("toolu_1"), _result("toolu_2")]},
        {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
    ]


def test_calls_without_a_result_are_paired_as_the_cli_pairs_them(tmp_path: Path) -> None:
    """Before the last answer, a record none of whose calls has a result is not sent (the
    prompts around it join) and one with some gets the missing one first; the last answer's
    calls without one are interrupted, then "No response requested."."""
    text = {"type": "text", "text": "x"}
    path = _session(tmp_path, [
        _prompt("u1", None, "q1"),
        _answer("a1", "u1", [text, _call("toolu_1")], answer="msg_1"),
        _prompt("u2", "a1", "q2"),
        _answer("a2", "u2", [_call("toolu_2"), _call("toolu_3")], answer="msg_2"),
        _prompt("r3", "a2", [_result("toolu_3")]),
        _answer("a3", "r3", [_call("toolu_4"), _call("toolu_5")], answer="msg_3"),
        _prompt("r4", "a3", [_result("toolu_4")]),
    ])  # fmt: skip
    missing = {
        "type": "tool_result",
        "tool_use_id": "toolu_2",
        "content": "[Tool result missing due to internal error]",
        "is_error": True,
    }
    interrupted = {
        "type": "tool_result",
        "content": "[Tool call interrupted: the session ended before this call's result was "
        "recorded, so its outcome is unknown. Check whether it took effect before relying on it "
        "or running it again.]",
        "is_error": True,
        "tool_use_id": "toolu_5",
    }
    messages = shown_context(path)["messages"]
    assert messages == [
        {"role": "user", "content": [{"type": "text", "text": "q1\n"}, {"type": "text",
                                                                          "text": "q2"}]},
        {"role": "assistant", "content": [_call("toolu_2"), _call("toolu_3")]},
        {"role": "user", "content": [missing, _result("toolu_3")]},
        {"role": "assistant", "content": [_call("toolu_4"), _call("toolu_5")]},
        {"role": "user", "content": [_result("toolu_4"), interrupted]},
        {"role": "assistant", "content": [{"type": "text", "text": "No response requested."}]},
    ]  # fmt: skip
    assert key_orders(messages[2:5:2]) == key_orders([
        {"role": "user", "content": [missing, _result("toolu_3")]},
        {"role": "user", "content": [_result("toolu_4"), interrupted]},
    ])  # fmt: skip
