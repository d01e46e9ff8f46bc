"""Gemini CLI and Qwen Code: their sessions found with nothing configured, read as each agent
reads them (a Gemini chat's re-recorded messages, rewinds and patches; a Qwen branch by its
``parentUuid``), handed off in their own folders, the exchange recorded as each records a turn,
and crossed (``--to``) to and from the other agents."""

from __future__ import annotations

import gzip
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from .conftest import run_cli

FIXTURES = Path(__file__).parent / "fixtures"
REAL = FIXTURES / "real"
GEMINI_NEW = "session-2026-12-01T10-00-aaaaaaaa.jsonl"
GEMINI_OLD = "session-2026-11-01T10-00-bbbbbbbb.json"
QWEN_ID = "11111111-aaaa-bbbb-cccc-000000000001"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """A home where Gemini CLI keeps two chats of ~/code/app (a marked project folder, beside
    its log and a checkpoint), and Qwen Code one."""
    home = tmp_path / "home"
    project = home / "code/app"
    project.mkdir(parents=True)
    monkeypatch.delenv("HANDOFF_SESSIONS_DIR", raising=False)
    for name in ("GEMINI_CLI_HOME", "QWEN_RUNTIME_DIR", "QWEN_HOME", "XDG_DATA_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(home))
    gemini = home / ".gemini/tmp/app"
    (gemini / "chats").mkdir(parents=True)
    (gemini / ".project_root").write_text(str(project))
    (home / ".gemini/projects.json").write_text(json.dumps({"projects": {str(project): "app"}}))
    (gemini / "logs.json").write_text("[]")
    (gemini / "checkpoint-a.json").write_text('[{"role": "user", "parts": [{"text": "x"}]}]')
    for name in (GEMINI_NEW, GEMINI_OLD):
        shutil.copyfile(FIXTURES / "gemini" / name, gemini / "chats" / name)
    qwen = home / ".qwen/projects" / re.sub("[^A-Za-z0-9]", "-", str(project)) / "chats"
    qwen.mkdir(parents=True)
    text = (FIXTURES / "qwen/readme.jsonl").read_text().replace("/tmp/q/proj", str(project))
    (qwen / f"{QWEN_ID}.jsonl").write_text(text)
    return {"home": home, "project": project, "gemini": gemini / "chats", "qwen": qwen}


def listed(cwd: Path) -> list[dict[str, Any]]:
    result = run_cli("list", "--json", cwd=cwd)
    assert result.code == 0, result.stderr
    assert "skipped" not in result.stderr  # a log, a checkpoint: no sessions, not warned of
    found: list[dict[str, Any]] = result.json()
    return found


def test_list_finds_both_agents_sessions_with_nothing_configured(home: dict[str, Path]) -> None:
    found = {s["id"][:8]: s for s in listed(home["project"])}
    assert set(found) == {"aaaaaaaa", "bbbbbbbb", "11111111"}
    assert [found[k]["agent"] for k in ("aaaaaaaa", "bbbbbbbb", "11111111")] == [
        "gemini", "gemini", "qwen",
    ]  # fmt: skip
    assert {s["cwd"] for s in found.values()} == {str(home["project"])}
    assert found["aaaaaaaa"]["title"] == "Fix main.py"  # the summary the CLI lists it by
    assert found["bbbbbbbb"]["title"] == "Write a haiku file"
    assert found["11111111"]["title"] == "Add a README to the project"


def context(path: Path) -> Any:
    result = run_cli("show", path, "--context", "--json")
    assert result.code == 0, result.stderr
    return result.json()


def test_a_gemini_chat_is_resumed_as_the_cli_rebuilds_it(home: dict[str, Path]) -> None:
    """The message recorded again wins where it was first; the rewound one, the info line
    and the command are not sent; thoughts are not sent either, the first call of a turn that
    had them signed by the CLI's stand-in; results are a user turn (Gemini CLI 0.61.0 sent
    this very chat so: ``agents/gemini``'s kept requests)."""
    shown = context(home["gemini"] / GEMINI_NEW)
    assert shown["model"] == "gemini/gemini-2.5-pro"
    assert shown["messages"] == [
        {"role": "user", "parts": [{"text": "Fix the bug in main.py please"}]},
        {
            "role": "model",
            "parts": [
                {
                    "functionCall": {
                        "id": "read_file-1",
                        "name": "read_file",
                        "args": {"file_path": "main.py"},
                    },
                    "thoughtSignature": "skip_thought_signature_validator",
                },
            ],
        },
        {
            "role": "user",
            "parts": [
                {
                    "functionResponse": {
                        "id": "read_file-1",
                        "name": "read_file",
                        "response": {"output": "print(1)"},
                    }
                }
            ],
        },
        {"role": "model", "parts": [{"text": "Done: it prints 1."}]},
    ]
    old = context(home["gemini"] / GEMINI_OLD)["messages"]
    assert [m["role"] for m in old] == ["user", "model", "user", "model"]
    assert old[1]["parts"][0] == {"text": "Here it is."}
    interrupted = "[The previous response was interrupted before it completed.]"
    assert old[3] == {"role": "model", "parts": [{"text": interrupted}]}  # a result last


def test_a_compression_replaces_the_chat_and_a_rewind_to_nothing_empties_it(
    tmp_path: Path,
) -> None:
    chat = tmp_path / "session-2026-12-01T10-00-cccccccc.jsonl"
    lines = (FIXTURES / "gemini" / GEMINI_NEW).read_text().splitlines()
    summary = {"id": "s1", "timestamp": "t", "type": "user", "content": [{"text": "summary"}]}
    lines.append(json.dumps({"$set": {"messages": [summary]}}))
    chat.write_text("\n".join(lines) + "\n")
    assert context(chat)["messages"] == [{"role": "user", "parts": [{"text": "summary"}]}]
    chat.write_text("\n".join([*lines, json.dumps({"$rewindTo": "nowhere"})]) + "\n")
    assert context(chat)["messages"] == []


def test_a_qwen_session_is_resumed_from_its_last_record_its_thoughts_the_reasoning(
    home: dict[str, Path],
) -> None:
    path = home["qwen"] / f"{QWEN_ID}.jsonl"
    stray = {"uuid": "x", "parentUuid": "r1", "sessionId": QWEN_ID, "type": "assistant",
             "message": {"role": "model", "parts": [{"text": "a branch left"}]}}  # fmt: skip
    lines = path.read_text().splitlines()
    path.write_text("\n".join([*lines[:2], json.dumps(stray), *lines[2:]]) + "\n")
    shown = context(path)
    assert shown["model"] == "dashscope/qwen3-coder-plus"
    assert [m["role"] for m in shown["messages"]] == ["user", "assistant", "tool", "assistant"]
    arguments = json.dumps({"file_path": f"{home['project']}/README.md", "content": "# hi"})
    assert shown["messages"][1] == {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {
                    "name": "write_file",
                    "arguments": arguments.replace(", ", ",").replace(": ", ":"),
                },
            }
        ],
        "reasoning_content": "think",
        "reasoning": "think",
    }
    facts = run_cli("show", path, "--facts", "--json").json()
    assert facts["modified_files"] == [f"{home['project']}/README.md"]


def handoff(*args: str | Path, cwd: Path) -> Any:
    result = run_cli(*args, "--model", "extractive", "--json", cwd=cwd)
    assert result.code == 0, result.stderr
    return result.json()


def test_a_gemini_handoff_is_a_chat_beside_the_old_one_and_a_turn_in_it(
    home: dict[str, Path],
) -> None:
    old = home["gemini"] / GEMINI_NEW
    before = old.read_bytes()
    done = handoff(old, cwd=home["project"])
    new = Path(done["path"])
    assert new.parent == home["gemini"] and new.name.startswith("session-")
    assert new.name.endswith(f"-{done['id'][:8]}.jsonl")
    assert done["resume_command"] == f"gemini --resume {done['id']}"
    lines = [json.loads(line) for line in new.read_text().splitlines()]
    assert list(lines[0]) == ["sessionId", "projectHash", "startTime", "lastUpdated", "kind"]
    assert lines[0]["projectHash"] == "abc"  # the old chat's project
    sent = context(new)["messages"]
    assert [m["role"] for m in sent] == ["user", "model"]
    assert sent[0]["parts"][0]["text"].startswith("<handoff-context>\n## Goal")
    assert context(new)["model"] == "gemini/gemini-2.5-pro"
    after = old.read_bytes()
    assert after.startswith(before)  # appended, as the CLI appends a turn
    added = [json.loads(line) for line in after[len(before) :].splitlines()]
    assert [a.get("type") or next(iter(a)) for a in added] == ["user", "$set", "gemini", "$set"]
    assert added[2]["model"] == "gemini-2.5-pro"
    found = {s["id"][:8]: s for s in listed(home["project"])}
    assert found["aaaaaaaa"]["handed_off"] is True
    assert found[done["id"][:8]]["parent"]["id"] == "aaaaaaaa-1111-2222-3333-444444444444"


def test_an_older_gemini_chat_is_rewritten_whole_with_the_turn(home: dict[str, Path]) -> None:
    old = home["gemini"] / GEMINI_OLD
    handoff(old, cwd=home["project"])
    document = json.loads(old.read_text())
    assert [m["type"] for m in document["messages"]] == ["user", "gemini", "user", "gemini"]
    assert document["lastUpdated"] == document["messages"][-1]["timestamp"]
    assert old.read_text().startswith('{\n  "sessionId": "bbbbbbbb')  # as it was indented


def test_a_qwen_handoff_chains_from_the_leaf_and_starts_a_session_of_its_own(
    home: dict[str, Path],
) -> None:
    old = home["qwen"] / f"{QWEN_ID}.jsonl"
    done = handoff(old, cwd=home["project"])
    new = Path(done["path"])
    assert new == home["qwen"] / f"{done['id']}.jsonl"
    records = [json.loads(line) for line in new.read_text().splitlines()]
    assert [r["type"] for r in records] == ["user", "assistant"]
    assert {r["sessionId"] for r in records} == {done["id"]}  # the agent refuses others
    assert records[0]["parentUuid"] is None and records[1]["parentUuid"] == records[0]["uuid"]
    assert records[1]["model"] == "qwen3-coder-plus"
    added = [json.loads(line) for line in old.read_text().splitlines()][-2:]
    assert added[0]["parentUuid"] == "r4" and added[1]["parentUuid"] == added[0]["uuid"]
    assert {a["sessionId"] for a in added} == {QWEN_ID}
    assert context(new)["messages"][0]["content"][0]["text"].startswith("<handoff-context>")


@pytest.mark.parametrize(
    ("source", "to", "folder"),
    [
        ("gemini", "qwen", ".qwen/projects/{dashed}/chats"),
        ("qwen", "gemini", ".gemini/tmp/app/chats"),
        ("gemini", "claude", ".claude/projects/{dashed}"),
        ("qwen", "omp", ".omp/agent/sessions/-{rel}"),
    ],
)
def test_crossings_land_in_the_agents_folder_for_the_cwd(
    home: dict[str, Path], source: str, to: str, folder: str
) -> None:
    old = home["gemini"] / GEMINI_NEW if source == "gemini" else home["qwen"] / f"{QWEN_ID}.jsonl"
    done = handoff(old, "--to", to, cwd=home["project"])
    dashed = re.sub("[^A-Za-z0-9]", "-", str(home["project"]))
    rel = str(home["project"].relative_to(home["home"])).replace("/", "-")
    expected = home["home"] / folder.format(dashed=dashed, rel=rel)
    assert Path(done["path"]).parent == expected
    found = {s["id"]: s for s in listed(home["project"])}
    assert found[done["id"]]["agent"] == to
    assert found[done["id"]]["cwd"] == str(home["project"])
    assert context(Path(done["path"]))["messages"]


def test_a_pi_session_crosses_to_gemini_in_a_project_folder_it_has_not_marked(
    home: dict[str, Path],
) -> None:
    """A cwd Gemini CLI has no folder for: the slug it would claim, and the chat still names
    its cwd (the CLI marks the folder when it starts there)."""
    other = home["home"] / "code/New Thing"
    other.mkdir(parents=True)
    pi = home["home"] / ".pi/agent/sessions/x/2026-01-01T00-00-00-000Z_s.jsonl"
    pi.parent.mkdir(parents=True)
    text = (FIXTURES / "omp/sample-v3.jsonl").read_text()
    header = next(json.loads(line) for line in text.splitlines() if '"cwd"' in line)
    pi.write_text(text.replace(json.dumps(header["cwd"]), json.dumps(str(other)), 1))
    done = handoff(pi, "--to", "gemini", cwd=other)
    assert Path(done["path"]).parent == home["home"] / ".gemini/tmp/new-thing/chats"
    assert {s["id"]: s["cwd"] for s in listed(other)}[done["id"]] == str(other)


def test_the_real_sessions_all_read(tmp_path: Path) -> None:
    paths = [
        p
        for p in (REAL / "gemini").rglob("session-*")
        if p.suffix in (".json", ".jsonl") and not p.name.endswith(".labels.json")
    ]
    paths += [p for p in (REAL / "qwen").rglob("*.jsonl")]
    assert paths
    for path in paths:
        result = run_cli("show", path, "--context", "--json")
        assert result.code == 0, (path, result.stderr)


def test_an_older_qwen_chat_in_gemini_clis_format_keeps_its_answers() -> None:
    """Qwen Code once kept Gemini CLI's one-object chats, its answers typed ``qwen``."""
    (path,) = (REAL / "qwen/cercaniaWeb__racompospro").rglob("session-*99e82e73.json")
    sent = context(path)["messages"]
    assert [m["role"] for m in sent] == ["user", "model"] * 23
    assert run_cli("show", path, "--facts", "--json").json()["finished"] is True


def test_a_call_the_user_cancelled_in_qwen_code_is_refused_not_pending() -> None:
    """The CLI records no result for a call the user cancelled, only its telemetry."""
    path = next((REAL / "qwen/kamillayarullina__hockeyscrapper").rglob("596e5cb4-*.jsonl"))
    facts = run_cli("show", path, "--facts", "--json").json()
    assert (
        facts["stopped"] == "The user refused the call to run_shell_command and stopped the work."
    )
    assert facts["unanswered"] is None
    sent = context(path)["messages"]  # what Qwen Code sends is its own note, unchanged
    assert "Tool execution result was not recorded" in str(sent[-1])


# --- the judge: what Gemini CLI 0.61.0 sent resuming them (oracles/gemini/gemini.py next) ---

GEMINI_AGENTS = FIXTURES / "agents" / "gemini"
GEMINI_REAL = sorted(
    p.with_name(p.name.removesuffix(".gemini-context.json.gz"))
    for p in (REAL / "gemini").rglob("*.gemini-context.json.gz")
)
GEMINI_KEPT = sorted(
    p.with_name(p.name.removesuffix(".gemini-request.json"))
    for p in GEMINI_AGENTS.rglob("*.gemini-request.json")
)
GEMINI_DRIVEN = sorted(GEMINI_AGENTS.glob("*/*.request.json"))
"""Requests ``gemini.py next`` kept beside the home it made (``made/``) or a chat in its older
format written by hand (``hand/``); the chat is found by its name."""


def test_gemini_resumed_real_chats_from_enough_repositories() -> None:
    assert len(GEMINI_REAL) >= 8
    assert len({p.relative_to(REAL / "gemini").parts[0] for p in GEMINI_REAL}) >= 5


@pytest.mark.parametrize("path", GEMINI_REAL, ids=lambda p: p.name[8:27])
def test_context_is_what_gemini_cli_sent_resuming_a_real_chat(path: Path) -> None:
    record = json.loads(
        gzip.decompress(path.with_name(f"{path.name}.gemini-context.json.gz").read_bytes())
    )
    assert record["code"] == 0
    assert context(path)["messages"] == record["sent"]


@pytest.mark.parametrize("path", GEMINI_KEPT, ids=lambda p: p.name)
def test_context_is_what_gemini_cli_sent_resuming_what_we_wrote(path: Path) -> None:
    """Our new sessions (its own, and crossed from Claude Code, Codex, Qwen Code, oh-my-pi, pi)
    and a chat with our exchange recorded: resumed, the document first, or our turn last."""
    record = json.loads(path.with_name(f"{path.name}.gemini-request.json").read_text())
    assert context(path)["messages"] == record["sent"]
    if path.parent.name == "handoffs" and path.name != "recorded.jsonl":
        assert record["sent"][0]["parts"][0]["text"].startswith("<handoff-context>\n## Goal")
        assert [c["role"] for c in record["sent"]] == ["user", "model"]
    if path.name == "recorded.jsonl":
        asked, answered = record["sent"][-2:]
        assert asked["parts"][0]["text"].startswith("Write a handoff document")
        assert answered["parts"][0]["text"].startswith("## Goal")


@pytest.mark.parametrize("request_file", GEMINI_DRIVEN, ids=lambda p: p.parent.name)
def test_context_is_what_gemini_cli_sent_resuming_its_own_chats(request_file: Path) -> None:
    name = request_file.name.removesuffix(".request.json")
    chat = next(p for p in request_file.parent.rglob(name) if p != request_file)
    record = json.loads(request_file.read_text())
    assert record["code"] == 0
    assert context(chat)["messages"] == record["sent"]


# --- the judge: what Qwen Code 0.24.4 sent resuming them (oracles/qwen/qwen.py next) ---

QWEN_REAL = sorted(
    p.with_name(p.name.removesuffix(".qwen-context.json.gz"))
    for p in (REAL / "qwen").rglob("*.qwen-context.json.gz")
)
QWEN_KEPT = sorted(
    p.with_name(p.name.removesuffix(".qwen-request.json"))
    for p in (FIXTURES / "agents" / "qwen").rglob("*.qwen-request.json")
)


def test_qwen_resumed_real_sessions_from_enough_repositories() -> None:
    assert len(QWEN_REAL) >= 8
    assert len({p.relative_to(REAL / "qwen").parts[0] for p in QWEN_REAL}) >= 5


@pytest.mark.parametrize("path", QWEN_REAL, ids=lambda p: p.name[:8])
def test_context_is_what_qwen_code_sent_resuming_a_real_session(path: Path) -> None:
    """Its chat messages: thoughts sent back as the reasoning, a user's turns in a row one
    message, a call nobody answered answered by the agent's note."""
    data = path.with_name(f"{path.name}.qwen-context.json.gz").read_bytes()
    record = json.loads(gzip.decompress(data))
    assert record["code"] == 0
    assert context(path)["messages"] == _history(record["body"])


@pytest.mark.parametrize("path", QWEN_KEPT, ids=lambda p: p.name)
def test_context_is_what_qwen_code_sent_resuming_what_we_wrote(path: Path) -> None:
    record = json.loads(path.with_name(f"{path.name}.qwen-request.json").read_text())
    sent = _history(record)
    assert context(path)["messages"] == sent
    if path.parent.name == "handoffs" and path.name != "recorded.jsonl":
        first = sent[0]["content"][0]["text"]
        assert first.startswith("<handoff-context>\n## Goal")
        assert [m["role"] for m in sent] == ["user", "assistant"]
    if path.name == "recorded.jsonl":
        asked, answered = sent[-2:]
        assert asked["content"][0]["text"].startswith("Write a handoff document")
        assert answered["content"].startswith("## Goal")


# --- the other way: their sessions crossed to the other agents, resumed by them ---------------

CROSSED = sorted((FIXTURES / "agents" / "crossings").glob("from-*-to-*"))
"""A session of Gemini CLI, Qwen Code and opencode each handed off ``--to`` Claude Code (its
``claude/cc.py context``), Codex (``codex/codex.py context``), oh-my-pi 18.2.3 and pi 1.6.0
(``agents.py next``): what each sent when it resumed the new session."""


def _first_history_text(folder: Path) -> str:
    """The text of the first message the agent sent after its system prompt."""
    for name, key in (("*.claude-request.json", "messages"), ("*.agent-request.json", None)):
        for found in folder.glob(name):
            data = json.loads(found.read_text())
            body = data["request"] if key is None else data.get("body", data)
            messages = [m for m in body["messages"] if m.get("role") != "system"]
            content = messages[0]["content"]
            return content if isinstance(content, str) else content[0]["text"]
    record = json.loads(next(folder.glob("*.codex-request.json")).read_text())
    assert record["rc"] == 0
    said = [i for i in record["requests"][0]["input"] if i.get("role") == "user"]
    return "\n".join(str(part.get("text")) for item in said for part in item["content"])


def test_every_new_agent_crossed_to_each_other_agent() -> None:
    assert {c.name for c in CROSSED} == {
        f"from-{a}-to-{b}"
        for a in ("gemini", "qwen", "opencode")
        for b in ("claude", "codex", "omp", "pi")
    }


@pytest.mark.parametrize("folder", CROSSED, ids=lambda p: p.name)
def test_a_crossed_session_is_resumed_with_the_document_first(folder: Path) -> None:
    assert "<handoff-context>\n## Goal" in _first_history_text(folder)


def test_list_shows_every_agents_sessions_with_nothing_configured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The examples of ``sessions/``, each in its agent's own folder of a home: ``list``, with
    no folder named, finds the seven agents' sessions."""
    examples = Path(__file__).parent.parent / "sessions"
    home = tmp_path / "home"
    for name in ("HANDOFF_SESSIONS_DIR", "GEMINI_CLI_HOME", "QWEN_RUNTIME_DIR", "QWEN_HOME",
                 "XDG_DATA_HOME", "OPENCODE_DB", "CLAUDE_CONFIG_DIR", "CODEX_HOME",
                 "PI_CODING_AGENT_DIR", "PI_CONFIG_DIR", "OMP_PROFILE"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(home))
    places = {
        "-home-dev-projects-weather-cli": ".omp/agent/sessions/-home-dev-projects-weather-cli",
        "--home-dev-projects-notes-app--": ".pi/agent/sessions/--home-dev-projects-notes-app--",
        "-home-dev-projects-todo-api": ".claude/projects/-home-dev-projects-todo-api",
        "2026": ".codex/sessions/2026",
        "gemini": ".gemini",
        "qwen": ".qwen",
        "opencode": ".local/share/opencode",
    }
    for example, place in places.items():
        shutil.copytree(examples / example, home / place)
    result = run_cli("list", "--json", cwd=home)
    assert result.code == 0, result.stderr
    agents = {s["agent"] for s in result.json()}
    assert agents == {"omp", "pi", "claude", "codex", "gemini", "qwen", "opencode"}


QWEN_DRIVEN = sorted((FIXTURES / "agents" / "qwen").rglob("*.jsonl.request.json"))
"""Bodies ``qwen.py next`` kept: sessions it made (one with a ``chat_compression``) and one
written by hand."""


def _history(body: dict[str, Any]) -> list[Any]:
    """The history in a request body: without the system prompt, the prompt sent last, and the
    ``<system-reminder>`` parts the agent puts before the first prompt."""
    sent: list[Any] = list(body["messages"][1:-1])
    first = sent[0] if sent else None
    if first is not None and first["role"] == "user" and isinstance(first["content"], list):
        kept = [p for p in first["content"] if not p["text"].startswith("<system-reminder>")]
        sent = ([{**first, "content": kept}] if kept else []) + sent[1:]
    return sent


@pytest.mark.parametrize("request_file", QWEN_DRIVEN, ids=lambda p: p.name[:8])
def test_context_is_what_qwen_code_sent_resuming_its_own_sessions(request_file: Path) -> None:
    session = request_file.with_name(request_file.name.removesuffix(".request.json"))
    assert context(session)["messages"] == _history(json.loads(request_file.read_text()))
