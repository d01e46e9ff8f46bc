"""The whole handoff, in process, against the loopback model server over real HTTP."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
from pathlib import Path
from typing import Any

import orjson
import pytest

from handoff_cli.agents import OMP, PI, build_context
from handoff_cli.document import (
    PROMPT_OPENINGS,
    SECTIONS,
    unwrap_document,
    without_files,
    wrap_document,
)
from handoff_cli.errors import (
    ExitCode,
    HandoffError,
    ModelError,
    NoDocumentError,
    SessionChangedError,
)
from handoff_cli.handoff import pipeline as core
from handoff_cli.handoff.builtin import EXTRACTIVE, Builtin
from handoff_cli.handoff.pipeline import HandoffResult, dry_run, handoff, prepare
from handoff_cli.handoff.plan import Budget, Counter
from handoff_cli.handoff.prompt import FACTS_INTRO
from handoff_cli.handoff.report import Reporter
from handoff_cli.llm.model import Model, resolve_model
from handoff_cli.options import Options
from handoff_cli.sessions.js import js_time
from handoff_cli.sessions.session import load_session
from handoff_cli.sessions.tree import branch, leaf

from .conftest import (
    EXAMPLES,
    FIXTURES,
    Entries,
    handoff_entry,
    run_cli,
    tool_call,
    write_session,
)
from .fakellm import Drop, Error, FakeLLMServer, Hang, Reply

pytestmark = pytest.mark.litellm  # its handoffs call the model in this process

DOCUMENT = "\n\n".join(f"## {name}\n- {name.lower()} facts" for name in SECTIONS)
OMP_EXAMPLE = next(EXAMPLES.glob("-home-dev-projects-weather-cli/*.jsonl"))
WEATHER_FILES = "\n\n<files>\n# weather_cli/\ncli.py (RW)\nhttp.py (RW)\n</files>"
PI_EXAMPLE = next(EXAMPLES.glob("--home-dev-projects-notes-app--/*.jsonl"))


class Collect(Reporter):
    def __init__(self) -> None:
        self.warnings: list[str] = []
        self.pieces = 0

    def streamed(self, pieces: int) -> None:
        self.pieces = pieces

    def warn(self, text: str) -> None:
        self.warnings.append(text)


def document_of(new_session: Path) -> str:
    """The document a new session starts from, without the ``<files>`` block added to it."""
    content = handoff_entry(new_session)["content"]
    return without_files(unwrap_document(content))


def copy(source: Path, tmp_path: Path) -> Path:
    target = tmp_path / "sessions" / source.parent.name / source.name
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    return target


def run(
    path: Path, server: FakeLLMServer, reporter: Reporter | None = None, **options: Any
) -> HandoffResult:
    options.setdefault("model", "openai/test-model")
    options.setdefault("retries", 0)
    return handoff(path, Options(api_base=server.base_url, **options), reporter)


def test_handoff_writes_the_new_session_and_records_the_exchange(
    tmp_path: Path, llm_server: FakeLLMServer
) -> None:
    path = copy(OMP_EXAMPLE, tmp_path)
    before = path.read_bytes()
    llm_server.script(Reply(DOCUMENT, usage=(1200, 80)))
    reporter = Collect()
    result = run(path, llm_server, reporter, focus="the --retries flag")

    # The request: the agent's context as chat messages, then the prompt with the focus line.
    (request,) = llm_server.requests
    assert request.stream
    sent = request.messages
    prompt = sent[-1]["content"]
    assert sent[-1]["role"] == "user" and prompt.startswith(PROMPT_OPENINGS[0])
    assert prompt.endswith("\n\nAdditional focus: the --retries flag")
    facts = prompt[prompt.index(FACTS_INTRO) :]  # what the program knows, given as exact
    assert '- The original task: "The forecast command fails whenever' in facts
    assert "- Files changed: `weather_cli/cli.py`, `weather_cli/http.py`" in facts
    assert "<summary>" in sent[0]["content"]  # the compaction summary, user side
    assert any(m["role"] == "tool" for m in sent)
    assert reporter.pieces > 0 and reporter.warnings == []

    # The new session, as oh-my-pi writes one it starts: the title slot (the source had one),
    # the header, the session's model and thinking level, the handoff message, its name.
    assert result.path.parent == path.parent
    assert result.path.name.endswith(f"_{result.id}.jsonl")
    lines = result.path.read_bytes().splitlines(keepends=True)
    assert len(lines) == 6 and len(lines[0]) == 256
    slot, header, model, thinking, entry, named = map(orjson.loads, lines)
    assert list(header) == ["type", "version", "id", "timestamp", "cwd", "parentSession"]
    assert header["id"] == result.id and header["version"] == 3
    assert header["cwd"] == "/home/dev/projects/weather-cli"
    assert header["parentSession"] == str(path.resolve())
    title = "↳ Retry with backoff for the HTTP client"  # the old session's, continued
    assert (slot["title"], slot["source"], slot["updatedAt"]) == (
        title,
        "auto",
        header["timestamp"],
    )
    assert list(slot) == ["type", "v", "title", "source", "updatedAt", "pad"]
    assert model == {
        "type": "model_change",
        "id": model["id"],
        "parentId": None,
        "timestamp": header["timestamp"],
        "model": "anthropic/claude-sonnet-4-5",
        "resolvedModelIsFallback": False,
    }
    assert list(thinking) == ["type", "id", "parentId", "timestamp", "thinkingLevel", "configured"]
    assert (thinking["parentId"], thinking["thinkingLevel"], thinking["configured"]) == (
        model["id"],
        "medium",
        None,
    )
    assert list(entry) == [
        "type",
        "customType",
        "content",
        "display",
        "attribution",
        "id",
        "parentId",
        "timestamp",
    ]
    assert entry["content"] == wrap_document(DOCUMENT + WEATHER_FILES)  # the <files> block added
    assert entry["parentId"] == thinking["id"]
    assert list(named) == ["type", "id", "parentId", "timestamp", "title", "source"]
    assert (named["type"], named["parentId"], named["title"]) == (
        "title_change",
        entry["id"],
        title,
    )
    new = load_session(result.path)
    context = build_context(branch(new, leaf(new)), OMP)
    assert [(m["role"], m["customType"], m["content"]) for m in context.messages()] == [
        ("custom", "handoff", wrap_document(DOCUMENT + WEATHER_FILES))
    ]
    assert (context.model, context.thinking_level) == ("anthropic/claude-sonnet-4-5", "medium")
    assert new.title == title
    assert result.path.stat().st_mtime_ns > path.stat().st_mtime_ns  # the newer: --continue

    # The old session: exactly two whole lines more, chained from the leaf we read.
    after = path.read_bytes()
    assert after.startswith(before)
    asked, answered = map(orjson.loads, after[len(before) :].splitlines())
    old_leaf = orjson.loads(before.splitlines()[-1])["id"]
    assert asked["parentId"] == old_leaf and answered["parentId"] == asked["id"]
    assert asked["message"]["content"][0]["text"] == sent[-1]["content"]
    reply = answered["message"]
    assert list(reply) == [
        "role",
        "api",
        "provider",
        "model",
        "content",
        "usage",
        "stopReason",
        "timestamp",
    ]
    assert reply["content"] == [{"type": "text", "text": DOCUMENT + WEATHER_FILES}]
    assert (reply["provider"], reply["model"], reply["stopReason"]) == (
        "openai",
        "test-model",
        "stop",
    )
    assert reply["usage"]["input"] == 1200 and reply["usage"]["output"] == 80

    assert result.to_json()["usage"] == {"input_tokens": 1200, "output_tokens": 80}
    assert result.missing_sections == []


def test_pi_session_gets_no_title_slot_and_no_record_leaves_it_alone(
    tmp_path: Path, llm_server: FakeLLMServer
) -> None:
    path = copy(PI_EXAMPLE, tmp_path)
    before = path.read_bytes()
    llm_server.script(Reply(DOCUMENT))
    result = run(path, llm_server, record=False, out_dir=tmp_path / "elsewhere")
    assert path.read_bytes() == before
    assert result.path.parent == tmp_path / "elsewhere"
    assert orjson.loads(result.path.read_bytes().splitlines()[0])["type"] == "session"


def test_a_pi_session_is_replayed_and_written_as_pi_does(
    tmp_path: Path, llm_server: FakeLLMServer, entries: Entries
) -> None:
    """pi's rules decide what is sent (its aborted turn too); the new session has pi's shapes
    (no title slot, no omp key), and both files read by pi's rules are what they were plus
    what we wrote."""
    entries.add("session_info", name="retries")  # pi's: the content says whose it is
    entries.user("make retries configurable")
    entries.assistant("half way through the parser", stop="aborted")
    entries.user("go on")
    path = write_session(tmp_path / "sessions" / "s.jsonl", entries.items)
    before = load_session(path)
    context_before = list(build_context(branch(before, leaf(before)), PI).messages())
    llm_server.script(Reply(DOCUMENT))
    reporter = Collect()
    result = run(path, llm_server, reporter)
    assert result.agent == PI and reporter.warnings == []
    assert "half way through the parser" in str(llm_server.requests[0].messages)

    header, model, entry, named = map(orjson.loads, result.path.read_bytes().splitlines())
    assert header["type"] == "session"
    assert model == {
        "type": "model_change",
        "id": model["id"],
        "parentId": None,
        "timestamp": header["timestamp"],
        "provider": "anthropic",
        "modelId": "claude-sonnet-4-5",
    }
    assert list(entry) == [
        "type",
        "customType",
        "content",
        "display",
        "id",
        "parentId",
        "timestamp",
    ]
    assert named == {
        "type": "session_info",
        "id": named["id"],
        "parentId": entry["id"],
        "timestamp": header["timestamp"],
        "name": "↳ retries",
    }
    new = load_session(result.path)
    assert list(build_context(branch(new, leaf(new)), PI).messages()) == [
        {
            "role": "custom",
            "customType": "handoff",
            "content": wrap_document(DOCUMENT),
            "display": True,
            "timestamp": js_time(entry["timestamp"]),
        }
    ]
    after = load_session(path)
    resumed = build_context(branch(after, leaf(after)), PI)
    messages = list(resumed.messages())
    assert messages[:-2] == context_before
    assert [m["role"] for m in messages[-2:]] == ["user", "assistant"]
    assert messages[-1]["model"] == "test-model"  # the answer says which model wrote it
    assert resumed.model == "anthropic/claude-sonnet-4-5"  # and the session keeps its own

    llm_server.script(Reply(DOCUMENT))
    run(path, llm_server, agent=OMP, record=False)  # oh-my-pi's rules drop the aborted turn
    assert "half way through the parser" not in str(llm_server.requests[-1].messages)


def test_repair_once_when_sections_are_missing(tmp_path: Path, llm_server: FakeLLMServer) -> None:
    path = copy(PI_EXAMPLE, tmp_path)
    llm_server.script(Reply("## Goal\nonly a goal"), Reply(DOCUMENT))
    result = run(path, llm_server)
    assert len(llm_server.requests) == 2
    repair = llm_server.requests[1].messages
    assert len(repair) == 1 and "only a goal" in repair[0]["content"]
    assert result.missing_sections == []
    assert document_of(result.path) == DOCUMENT


def test_still_missing_sections_warn_or_fail_when_strict(
    tmp_path: Path, llm_server: FakeLLMServer
) -> None:
    path = copy(PI_EXAMPLE, tmp_path)
    llm_server.default = Reply("## Goal\nstill only a goal")
    reporter = Collect()
    result = run(path, llm_server, reporter)
    assert result.missing_sections == list(SECTIONS[1:])
    assert "lacks the sections" in reporter.warnings[0]
    before = path.read_bytes()
    with pytest.raises(NoDocumentError) as caught:
        run(path, llm_server, strict=True)
    assert caught.value.exit_code == ExitCode.NO_DOCUMENT
    assert path.read_bytes() == before


def test_empty_answer_is_a_failure_not_a_cancel(tmp_path: Path, llm_server: FakeLLMServer) -> None:
    path = copy(PI_EXAMPLE, tmp_path)
    before = path.read_bytes()
    llm_server.script(Reply("   "))
    with pytest.raises(NoDocumentError, match="Handoff failed: the model returned no text"):
        run(path, llm_server)
    assert path.read_bytes() == before
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]


@pytest.mark.parametrize(
    ("steps", "retries", "requests", "words"),
    [
        ([Error.auth()], 2, 1, "authentication failed (401)"),
        ([Error.context_length(1000, 5000)] * 3, 2, 3, "does not fit the model's window"),
        ([Error.server_error()] * 3, 2, 3, "(500)"),
        ([Drop(), Drop()], 1, 2, "cannot reach the model's server"),
        ([Error.rate_limit(retry_after=0), Reply(DOCUMENT)], 1, 2, None),
    ],
)
def test_model_failures_and_retries(
    tmp_path: Path,
    llm_server: FakeLLMServer,
    steps: list[Any],
    retries: int,
    requests: int,
    words: str | None,
) -> None:
    path = copy(PI_EXAMPLE, tmp_path)
    before = path.read_bytes()
    llm_server.script(*steps)
    if words is None:
        run(path, llm_server, retries=retries)
    else:
        with pytest.raises(ModelError) as caught:
            run(path, llm_server, retries=retries)
        message = str(caught.value)
        assert message.startswith("Handoff failed: openai/test-model: ")
        assert words in message and "\n" not in message
        assert path.read_bytes() == before
        assert sorted(p.name for p in path.parent.iterdir()) == [path.name]
    assert len(llm_server.requests) == requests


def test_timeout(tmp_path: Path, llm_server: FakeLLMServer) -> None:
    path = copy(PI_EXAMPLE, tmp_path)
    llm_server.script(Hang(30))
    with pytest.raises(ModelError, match="no answer within 1 s"):
        run(path, llm_server, timeout=1, retries=2)
    assert len(llm_server.requests) == 1  # a timeout is not retried


def test_model_choice_and_the_extractive_fallback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = copy(OMP_EXAMPLE, tmp_path)
    reporter = Collect()
    # No key for the session's own model: the built-in writer, said once.
    assert prepare(path, Options(), reporter).writer.name == EXTRACTIVE
    (note,) = reporter.warnings
    assert "ANTHROPIC_API_KEY" in note and "anthropic/claude-sonnet-4-5" in note
    assert "--model" in note
    # An explicitly chosen model never falls back: it fails.
    with pytest.raises(ModelError, match="no credentials: set ANTHROPIC_API_KEY"):
        handoff(path, Options(model="anthropic/claude-sonnet-4-5"))
    assert prepare(path, Options(model="extractive")).writer.name == EXTRACTIVE
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    reporter = Collect()
    assert prepare(path, Options(), reporter).writer.name == "anthropic/claude-sonnet-4-5"
    assert reporter.warnings == []
    assert prepare(path, Options(model="openai/o3")).writer.name == "openai/o3"


def test_extractive_model_runs_the_same_pipeline(tmp_path: Path) -> None:
    path = copy(OMP_EXAMPLE, tmp_path)
    before = path.read_bytes()
    result = handoff(path, Options(model="extractive", focus="retries"))
    assert result.model == EXTRACTIVE
    assert result.cost_usd == 0 and result.input_tokens > 0 and result.output_tokens > 0
    assert result.missing_sections == []
    recorded = orjson.loads(path.read_bytes()[len(before) :].splitlines()[1])["message"]
    assert (recorded["provider"], recorded["model"]) == ("handoff", "extractive")
    content = handoff_entry(result.path)["content"]
    assert content == wrap_document(recorded["content"][0]["text"])


@pytest.mark.parametrize("name", ["generated/v1-003.jsonl", "generated/v2-002.jsonl"])
def test_old_versions_are_migrated_then_recorded_into(
    tmp_path: Path, llm_server: FakeLLMServer, name: str
) -> None:
    """As the agents do: the file is rewritten whole at version 3 (atomically, its mode kept),
    then the exchange appended; read back, its context is the one before plus the exchange.
    Both real agents open the result (checked with their code: docs/session-format.md §7)."""
    path = copy(FIXTURES / name, tmp_path)
    path.chmod(0o640)
    before = load_session(path)
    context_before = list(build_context(branch(before, leaf(before)), OMP).messages())
    llm_server.script(Reply(DOCUMENT))
    run(path, llm_server)
    after = load_session(path)
    assert after.version == 3 and after.header["version"] == 3
    assert after.skipped_lines == () and oct(path.stat().st_mode & 0o777) == "0o640"
    messages = list(build_context(branch(after, leaf(after)), OMP).messages())
    assert messages[:-2] == context_before
    assert [m["role"] for m in messages[-2:]] == ["user", "assistant"]
    assert without_files(messages[-1]["content"][0]["text"]) == DOCUMENT
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]


def test_a_file_that_changed_since_it_was_read_is_not_rewritten(
    tmp_path: Path, llm_server: FakeLLMServer
) -> None:
    path = copy(FIXTURES / "generated/v1-003.jsonl", tmp_path)
    grown = path.read_bytes() + b'{"type":"message","message":{"role":"user","content":"late"}}\n'

    def agent_writes(request: Any) -> Reply:
        path.write_bytes(grown)  # the agent, while the model answers
        return Reply(DOCUMENT)

    llm_server.script(agent_writes)
    with pytest.raises(SessionChangedError, match="changed while the handoff ran") as caught:
        run(path, llm_server)
    assert caught.value.exit_code == ExitCode.BAD_SESSION
    assert path.read_bytes() == grown  # its line kept, nothing of ours
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]


def _emptied(data: bytes) -> bytes:
    return b""


def _cut_short(data: bytes) -> bytes:
    return b"".join(data.splitlines(keepends=True)[:3])


def _rewritten(data: bytes) -> bytes:
    # The same size, the last two entries swapped: the leaf's line is not where it was read.
    lines = data.splitlines(keepends=True)
    return b"".join([*lines[:-2], lines[-1], lines[-2]])


def _a_word_changed(data: bytes) -> bytes:
    # The same size, the leaf's line as it was: a word of the first request changed, the file's
    # size and every line's place kept.
    changed = data.replace(b'"text":"config', b'"text":"CONFIG', 1)
    assert len(changed) == len(data) and changed != data
    return changed


@pytest.mark.parametrize("change", [_emptied, _cut_short, _rewritten, _a_word_changed, "replaced"])
@pytest.mark.parametrize("in_place", [False, True])
def test_a_session_changed_while_the_answer_streams_is_left_as_the_other_writer_left_it(
    tmp_path: Path, llm_server: FakeLLMServer, change: Any, in_place: bool
) -> None:
    path = copy(FIXTURES / "inplace/generated-omp-020-20000.jsonl", tmp_path)
    before = path.read_bytes()
    left: list[bytes] = []

    def other_writer(request: Any) -> Reply:
        if change == "replaced":  # a new file renamed over it, the same bytes
            other = path.with_name("other.tmp")
            other.write_bytes(before)
            other.replace(path)
        else:
            with path.open("r+b") as file:  # in place, as `: > file` or an editor does
                file.write(change(before))
                file.truncate()
        left.append(path.read_bytes())
        return Reply(DOCUMENT, chunks=4)

    llm_server.script(other_writer)
    with pytest.raises(SessionChangedError, match="the session changed while the handoff ran"):
        run(path, llm_server, in_place=in_place)
    assert path.read_bytes() == left[0]  # exactly as the other writer left it
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]  # no new session


def test_an_agent_appending_meanwhile_does_not_stop_a_handoff(
    tmp_path: Path, llm_server: FakeLLMServer
) -> None:
    path = copy(OMP_EXAMPLE, tmp_path)
    late = b'{"type":"label","id":"aa11bb22","parentId":null,"timestamp":"2026-01-01T00:00:00Z"}\n'

    def agent_appends(request: Any) -> Reply:
        with path.open("ab") as file:
            file.write(late)
        return Reply(DOCUMENT)

    llm_server.script(agent_appends)
    result = run(path, llm_server)
    lines = path.read_bytes().splitlines(keepends=True)
    assert late in lines and result.path.exists()
    assert [orjson.loads(line)["type"] for line in lines[-2:]] == ["message", "message"]


def test_cancel_before_writing_leaves_everything(
    tmp_path: Path, llm_server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = copy(PI_EXAMPLE, tmp_path)
    before = path.read_bytes()

    class Interrupt(Reporter):
        def streamed(self, pieces: int) -> None:
            raise KeyboardInterrupt

    llm_server.script(Reply(DOCUMENT))
    with pytest.raises(HandoffError, match="Handoff cancelled") as caught:
        run(path, llm_server, Interrupt())
    assert caught.value.exit_code == ExitCode.CANCELLED
    assert path.read_bytes() == before
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]


# --- sessions larger than the model's window ---------------------------------------------------

WORDS = (
    "parser",
    "retry",
    "budget",
    "config",
    "handler",
    "socket",
    "schema",
    "tokens",
    "cache",
    "module",
    "fixture",
    "branch",
    "commit",
    "window",
    "stream",
    "timeout",
    "payload",
)
WINDOW = 4_000


def big_session(
    tmp_path: Path,
    turns: int,
    output_words: int,
    last: str = "go on",
    entries: Entries | None = None,
) -> Path:
    entries = entries or Entries()
    for number in range(turns):
        entries.user(f"step {number}: run the tests and fix what fails")
        call = {
            "type": "toolCall",
            "id": f"c{number}",
            "name": "bash",
            "arguments": {"command": f"pytest -k case{number}"},
        }
        entries.assistant(f"Running case {number}.", call, stop="toolUse")
        words = " ".join(WORDS[(number * 7 + i * 3) % len(WORDS)] for i in range(output_words))
        entries.result(f"c{number}", words)
    entries.user(last)
    return write_session(tmp_path / "sessions" / "big.jsonl", entries.items)


def our_count() -> Counter:
    """How we count the test model's tokens (LiteLLM's counter for it)."""
    model = resolve_model("openai/test-model", None, api_key="sk-test")
    assert isinstance(model, Model)
    return model.count


def sizes(server: FakeLLMServer) -> list[int]:
    count = our_count()
    return [count(r.messages) for r in server.requests]


def window_server(server: FakeLLMServer) -> None:
    server.max_context_tokens = WINDOW
    count = our_count()
    server.count_tokens = count  # a provider whose tokenizer counts as ours does
    server.default = Reply(DOCUMENT)


@pytest.mark.heavy  # a whole corpus: make test-heavy
def test_ten_times_the_window_hands_off_in_chunks(
    tmp_path: Path, llm_server: FakeLLMServer
) -> None:
    path = big_session(tmp_path, turns=200, output_words=200)
    window_server(llm_server)
    request = prepare(path, Options(model="openai/test-model"))
    own = our_count()([*request.conversation, request.prompt])
    assert own > 10 * WINDOW
    reporter = Collect()
    result = run(path, llm_server, reporter, context_window=WINDOW, agent=OMP)
    assert result.strategy == "chunked" and result.missing_sections == []
    assert result.requests == len(llm_server.requests)
    sent = sizes(llm_server)
    assert max(sent) <= WINDOW  # no request was ever over the limit
    assert sum(sent) <= 1.3 * own  # each part of the conversation sent once
    assert reporter.warnings == []
    final = llm_server.requests[-1].messages
    assert "<draft>" in final[0]["content"] and final[-1]["content"].startswith("Write a handoff")
    assert document_of(result.path) == DOCUMENT


def test_just_under_the_window_is_one_request(tmp_path: Path, llm_server: FakeLLMServer) -> None:
    count = our_count()
    budget = Budget(WINDOW).tokens
    turns = 1
    while True:  # the largest session whose request still fits
        path = big_session(tmp_path, turns=turns + 1, output_words=40)
        request = prepare(path, Options(model="openai/test-model", context_window=WINDOW))
        if sum(count([m]) for m in [*request.conversation, request.prompt]) > budget:
            break
        turns += 1
    path = big_session(tmp_path, turns=turns, output_words=40)
    window_server(llm_server)
    result = run(path, llm_server, context_window=WINDOW)
    assert (result.strategy, result.requests, len(llm_server.requests)) == ("single", 1, 1)
    assert sizes(llm_server)[0] > 0.8 * budget


def test_one_message_larger_than_the_window_is_cut(
    tmp_path: Path, llm_server: FakeLLMServer
) -> None:
    path = big_session(tmp_path, turns=2, output_words=20, last="log: " + "timeout " * 6_000)
    window_server(llm_server)
    result = run(path, llm_server, context_window=WINDOW)
    assert max(sizes(llm_server)) <= WINDOW
    assert any(
        "characters cut" in m.get("content", "")
        for m in llm_server.requests[-1].messages
        if isinstance(m.get("content"), str)
    )
    assert result.missing_sections == []


def test_a_provider_that_counts_more_gets_smaller_requests(
    tmp_path: Path, llm_server: FakeLLMServer
) -> None:
    path = big_session(tmp_path, turns=60, output_words=100)
    window_server(llm_server)
    ours = our_count()
    llm_server.count_tokens = lambda messages: int(4.5 * ours(messages))
    reporter = Collect()
    result = run(path, llm_server, reporter, context_window=WINDOW, agent=OMP)
    assert result.strategy == "chunked" and result.missing_sections == []
    assert any("planning again" in w for w in reporter.warnings)
    rejected = [n for n in sizes(llm_server) if int(4.5 * n) > WINDOW]
    assert 0 < len(rejected) <= 2  # refused, then smaller requests went through


def keys(value: Any) -> set[str]:
    """Every key in a JSON value, at any depth."""
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in keys(v)}
    return set()


def test_our_own_json_is_snake_case(tmp_path: Path) -> None:
    path = copy(OMP_EXAMPLE, tmp_path)
    options = Options(model="extractive")
    planned = dry_run(path, options).to_json()
    ours = keys({k: v for k, v in planned.items() if k not in ("messages", "requests")})
    ours |= {k for r in planned["requests"] for k in orjson.loads(r.data)}
    ours |= keys(handoff(path, options).to_json())
    assert ours and all(re.fullmatch(r"[a-z]+(_[a-z]+)*", key) for key in ours), ours


def test_a_signal_once_the_writes_begin_does_not_cancel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Ctrl-C that arrives while the files are written is too late to cancel: the run goes
    on and reports success, so that a script retrying on exit 130 makes no duplicate."""
    path = copy(OMP_EXAMPLE, tmp_path)
    before = path.read_bytes()
    real_commit, real_result = core._commit, core.HandoffResult

    def interrupted(real: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            os.kill(os.getpid(), signal.SIGINT)  # delivered at once, to the handler below
            return real(*args, **kwargs)

        return call

    # During the writes, and after them, while the result is made.
    monkeypatch.setattr(core, "_commit", interrupted(real_commit))
    monkeypatch.setattr(core, "HandoffResult", interrupted(real_result))
    previous = signal.signal(signal.SIGINT, core.on_signal)
    try:
        result = handoff(path, Options(model="extractive"))
    finally:
        signal.signal(signal.SIGINT, previous)
    assert (
        result.path.exists() and len(path.read_bytes().splitlines()) == len(before.splitlines()) + 2
    )
    # Before the writes, the same signal cancels, and nothing is written.
    monkeypatch.setattr(core, "_with_files", lambda *a: os.kill(os.getpid(), signal.SIGINT))
    signal.signal(signal.SIGINT, core.on_signal)
    try:
        with pytest.raises(HandoffError, match="Handoff cancelled"):
            handoff(path, Options(model="extractive"))
    finally:
        signal.signal(signal.SIGINT, previous)
    assert len(list(path.parent.glob("*.jsonl"))) == 2


def test_the_window_a_provider_states_is_planned_for(
    tmp_path: Path, llm_server: FakeLLMServer
) -> None:
    """No --context-window, a model LiteLLM does not know (so 128,000 is assumed), and a
    server whose window is 4,000: its refusal says so, and the next plan fits it."""
    path = big_session(tmp_path, turns=60, output_words=100)
    window_server(llm_server)
    reporter = Collect()
    result = run(path, llm_server, reporter)
    assert result.strategy == "chunked" and result.missing_sections == []
    assert any("its window is 4,000 tokens" in w for w in reporter.warnings)
    refused = [n for n in sizes(llm_server) if n > WINDOW]
    assert len(refused) == 1  # the first request, and no other


def test_a_long_focus_is_cut_to_leave_room(tmp_path: Path, llm_server: FakeLLMServer) -> None:
    path = copy(OMP_EXAMPLE, tmp_path)
    llm_server.default = Reply(DOCUMENT)
    reporter = Collect()
    focus = "retries " * 20_000
    result = run(path, llm_server, reporter, focus=focus, context_window=WINDOW)
    assert any("--focus is about" in w for w in reporter.warnings)
    assert result.focus is not None and len(result.focus) < len(focus) // 10
    assert max(sizes(llm_server)) <= WINDOW


def test_the_focus_reported_is_the_one_sent_masked(tmp_path: Path) -> None:
    key = "sk-proj-" + "Q7wE9rT1yU3iO5pA2sD4fG6h"
    result = handoff(
        copy(OMP_EXAMPLE, tmp_path), Options(model="extractive", focus=f"rotate {key}")
    )
    assert result.focus == "rotate [REDACTED:openai-key:1]"
    assert key not in orjson.dumps(result.to_json()).decode()


def test_a_session_that_names_no_model_gets_the_builtin_writer(
    tmp_path: Path, entries: Entries
) -> None:
    entries.user("hello")
    entries.message(
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "hi"}],
            "stopReason": "stop",
            "timestamp": 2,
        }
    )  # no provider, no model
    path = write_session(tmp_path / "s.jsonl", entries.items)
    reporter = Collect()
    session = load_session(path)
    # What the agent itself prints for it; the handoff takes it as no model at all.
    assert build_context(branch(session, leaf(session)), OMP).model == "undefined/undefined"
    assert isinstance(prepare(path, Options(), reporter).writer, Builtin)
    assert any("names no model" in w for w in reporter.warnings)


def test_one_huge_tool_call_argument_still_hands_off(
    tmp_path: Path, llm_server: FakeLLMServer
) -> None:
    """A 1.2 MB file written by a tool call, in a session several times the window."""
    entries = Entries()
    entries.user("generate the fixture")
    write = {
        "type": "toolCall",
        "id": "w1",
        "name": "write",
        "arguments": {"path": "tests/big.json", "content": "payload " * 150_000},
    }
    entries.assistant("Writing it.", write, stop="toolUse")
    entries.result("w1", "wrote 1.2 MB")
    path = big_session(tmp_path, turns=40, output_words=100, entries=entries)
    window_server(llm_server)
    result = run(path, llm_server, context_window=WINDOW)
    assert result.missing_sections == [] and max(sizes(llm_server)) <= WINDOW
    sent = orjson.dumps([r.messages for r in llm_server.requests]).decode()
    assert "tests/big.json" in sent and "characters cut" in sent


def test_the_builtin_writer_reads_only_the_facts(tmp_path: Path, entries: Entries) -> None:
    """A 3 MB output: the built-in writer is given the prompt with the facts, nothing else, so
    that a session holding a 200 MB one costs little more than reading it."""
    entries.user("dump the log")
    entries.assistant("Dumping.", tool_call("c1"), stop="toolUse")
    entries.result("c1", "log line\n" * 350_000)
    path = write_session(tmp_path / "s.jsonl", entries.items)
    (request,) = dry_run(path, Options(model="extractive")).requests
    messages = request.build()
    assert [m["role"] for m in messages] == ["user"]
    assert len(orjson.dumps(messages)) < 5_000


SECRET_TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
SECRET_KEY = "AKIA" + "Z7QW3ERT5YUI2OPA"


def secret_paths_session(entries: Entries, tmp_path: Path) -> Path:
    """A session whose secrets are in file paths (a token as a folder's and a file's name, in
    a URL's query) and in its first request, which becomes the new session's title."""
    entries.user(f"deploy with token {SECRET_TOKEN}")
    read = {"path": f"build/{SECRET_TOKEN}/out.txt"}
    entries.assistant(
        {"type": "toolCall", "id": "c1", "name": "read", "arguments": read}, stop="toolUse"
    )
    entries.result("c1", "contents")
    wrote = {"path": f"src/{SECRET_TOKEN}.py", "content": "x = 1"}
    entries.assistant(
        {"type": "toolCall", "id": "c2", "name": "write", "arguments": wrote}, stop="toolUse"
    )
    entries.result("c2", "ok")
    fetched = {"path": f"https://example.com/api?token={SECRET_TOKEN}"}
    entries.assistant(
        {"type": "toolCall", "id": "c3", "name": "read", "arguments": fetched}, stop="toolUse"
    )
    entries.result("c3", "<html>")
    for turn in range(40):  # more than an in-place handoff keeps
        entries.user(f"step {turn} " + "and the tests pass " * 200)
        entries.assistant("done " * 200)
    return write_session(tmp_path / "sessions" / "s.jsonl", entries.items)


@pytest.mark.parametrize("in_place", [False, True])
def test_nothing_written_holds_a_secret_the_session_or_the_answer_held(
    tmp_path: Path, llm_server: FakeLLMServer, entries: Entries, in_place: bool
) -> None:
    """What comes from the session is masked wherever it is written, as in the request: the
    <files> block's paths, an in-place compaction's details, the new session's title; and so is
    the model's answer, which may quote a secret (counted in ``redacted``)."""
    path = secret_paths_session(entries, tmp_path)
    before = path.read_bytes()
    quoting = DOCUMENT.replace(
        "- goal facts", f"- goal facts; the key is {SECRET_KEY}, {SECRET_TOKEN}"
    )
    llm_server.script(Reply(quoting))
    result = run(path, llm_server, in_place=in_place)
    sent = json.dumps([r.messages for r in llm_server.requests])
    new_files = [p.read_text() for p in path.parent.glob("*.jsonl") if p != path]
    written = [*new_files, path.read_bytes()[len(before) :].decode()]  # all we wrote
    for secret in (SECRET_TOKEN, SECRET_KEY):
        assert secret not in sent
        assert not any(secret in text for text in written), secret
    assert result.redacted == 2  # the token, and the key only the answer held
    if in_place:
        entry = orjson.loads(path.read_bytes().splitlines()[-1])
        assert "[REDACTED:github-token:1]" in str(entry["details"])
    else:
        new = load_session(result.path)
        assert new.title == "↳ deploy with token [REDACTED:github-token:1]"
        assert "# build/[REDACTED:github-token:1]/" in handoff_entry(result.path)["content"]
    unmasked = run(path, llm_server, redact=False, record=False, model="extractive")
    assert SECRET_TOKEN in unmasked.path.read_text() and unmasked.redacted == 0


@pytest.mark.parametrize("agent", ["claude", "codex"])
def test_a_session_of_an_agents_own_format_handed_off_to_starts_from_its_document(
    agent: str,
) -> None:
    """A new Claude Code session or Codex rollout of ours opens with the pi family's handoff
    message in the shared shape: ``show --document`` finds it, and its next handoff updates
    that document."""
    new = FIXTURES / agent / "handoff" / "tools-new.jsonl"
    shown = run_cli("show", new, "--document")
    assert shown.code == 0 and shown.stdout.startswith("## Goal")
    planned = run_cli("handoff", new, "--dry-run", "--json", "--model", "extractive")
    assert planned.code == 0, planned.stderr
    prompt = json.loads(planned.stdout)["messages"][-1]["content"]
    assert prompt.startswith("Update the handoff document of this coding session.")
