"""The quality gate: probes from a branch's facts, held by a document or not (``check``), the
``handoff check`` command, and ``--min-score`` on handoffs and rotations."""

from __future__ import annotations

import io
import os
import shutil
import sys
import threading
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from handoff_cli.agents import load_session
from handoff_cli.document import SECTIONS, files_block, with_files
from handoff_cli.errors import HandoffError
from handoff_cli.handoff import check as checking
from handoff_cli.handoff.builtin import write_document
from handoff_cli.handoff.check import REQUIRED_CAP, check_document, check_session
from handoff_cli.handoff.facts import Command, Facts, facts_of
from handoff_cli.handoff.judge import answers_of, questions_of
from handoff_cli.handoff.prompt import facts_block
from handoff_cli.handoff.terms import key_terms
from handoff_cli.options import DEFAULT_MIN_SCORE
from handoff_cli.sessions.tree import branch, leaf

from . import calibration
from .conftest import (
    DOCUMENT,
    EXAMPLES,
    Entries,
    files_in,
    fixture_files,
    model_env,
    run_cli,
    write_session,
)
from .fakellm import Error, FakeLLMServer, RecordedRequest, Reply

WEATHER = next(EXAMPLES.glob("-home-dev-projects-weather-cli/*.jsonl"))
TASK = "Add a /health endpoint to server/app.py that reports the database status."
RULE = "Never touch the database schema in migrations/."


def _bash(call_id: str, command: str) -> dict[str, Any]:
    return {"type": "toolCall", "id": call_id, "name": "bash", "arguments": {"command": command}}


def failing_session(path: Path, fixed: bool = False) -> Path:
    """A task, a rule, a file changed, and a test that fails (then, ``fixed``, passes)."""
    chain = Entries()
    chain.user(f"{TASK} {RULE}")
    edit = {"type": "toolCall", "id": "c1", "name": "edit", "arguments": {"path": "server/app.py"}}
    chain.assistant("Adding the route.", edit)
    chain.result("c1", "edited")
    chain.assistant("Running the tests.", _bash("c2", "pytest tests/test_health.py"))
    chain.message(
        {
            "role": "toolResult",
            "toolCallId": "c2",
            "toolName": "bash",
            "content": [{"type": "text", "text": "AssertionError: 404 != 200\nexit code 1"}],
            "isError": True,
            "timestamp": 3,
        }
    )
    if fixed:
        chain.assistant("Registering the blueprint.", _bash("c3", "pytest tests/test_health.py"))
        chain.result("c3", "1 passed\nexit code 0")
        chain.assistant("Done: the endpoint works and its test passes.")
    else:
        chain.assistant("The route is not registered yet; the test fails with a 404.")
    return write_session(path, chain.items)


def facts_at(path: Path) -> Facts:
    session = load_session(path)
    return facts_of(session, branch(session, leaf(session, None)))


def document(*parts: tuple[str, str]) -> str:
    """A document of the six sections, each body given or a placeholder."""
    bodies = dict(parts)
    return "\n\n".join(f"## {name}\n{bodies.get(name, '- (none)')}" for name in SECTIONS)


# --- the probes -------------------------------------------------------------------------------


def test_a_paraphrase_holds_every_probe(tmp_path: Path) -> None:
    facts = facts_at(failing_session(tmp_path / "s.jsonl"))
    written = document(
        ("Goal", "Add a `/health` endpoint in server/app.py reporting the status of the database."),
        ("Constraints & Preferences", "- Do not modify the database schema (migrations/)."),
        (
            "Critical Context",
            "- `pytest tests/test_health.py` exits 1: AssertionError 404 != 200, the route "
            "is unregistered.",
        ),
    )
    report = check_document(facts, written)
    assert report.overall == 1.0, [str(p) for p in report.missing]
    assert report.dimensions == {
        "task": 1.0,
        "artifacts": 1.0,
        "state": None,  # the last failure is the open error: an errors probe
        "rules": 1.0,
        "decisions": None,
        "errors": 1.0,
    }


@pytest.mark.parametrize(
    ("dropped", "question"),
    [
        ("Goal", "the original task"),
        ("Critical Context", "the open error"),
        ("Files", "the files changed"),
    ],
)
def test_a_document_missing_the_task_the_files_or_the_open_error_scores_under_the_default(
    tmp_path: Path, dropped: str, question: str
) -> None:
    facts = facts_at(failing_session(tmp_path / "s.jsonl"))
    parts = {
        "Goal": "Add a /health endpoint reporting the database status.",
        "Critical Context": "- `pytest tests/test_health.py` fails: AssertionError 404 != 200.",
        "Files": "- Changed `server/app.py`.",
    }
    parts.pop(dropped)
    written = document(
        ("Goal", parts.get("Goal", "- (none)")),
        ("Constraints & Preferences", f"- {RULE}"),
        ("Critical Context", "\n".join(v for k, v in parts.items() if k != "Goal")),
    )
    report = check_document(facts, written)
    assert report.overall <= REQUIRED_CAP < DEFAULT_MIN_SCORE
    assert [p.question for p in report.missing if p.required] == [question]
    assert all(p.required for p in report.missing if p.question == question)


def test_the_built_in_writer_holds_every_probe_of_the_example() -> None:
    facts = facts_at(WEATHER)
    report = check_document(facts, write_document(facts))
    assert report.overall == 1.0 and len(report.probes) == 9  # two files, and both


def test_the_built_in_writer_names_every_file_changed() -> None:
    # More files than a list's twelve items, after an earlier summary's twelve items of
    # Critical Context: each file changed is a required probe.
    critical = "\n".join(f"- fact {n}" for n in range(12))
    facts = Facts(
        requests=("Rename the config loader",),
        summary=(("Critical Context", critical),),
        modified_files=tuple(f"src/module{n}.py" for n in range(15)),
    )
    report = check_document(facts, write_document(facts))
    assert report.overall == 1.0, [str(p) for p in report.missing]


def test_a_fixed_failure_shown_as_open_is_wrong(tmp_path: Path) -> None:
    facts = facts_at(failing_session(tmp_path / "s.jsonl", fixed=True))
    right = "- Ran `pytest tests/test_health.py`: failed, then fixed."
    wrong = "- The error still open: `pytest tests/test_health.py` (exit code 1)."
    for body, held in ((right, True), (wrong, False)):
        written = document(
            ("Goal", TASK), ("Constraints & Preferences", RULE), ("Critical Context", body)
        )
        report = check_document(facts, written + "\n\n`server/app.py`")
        wrongs = [p for p in report.probes if p.wrong]
        assert (not wrongs) is held, body
        assert report.dimensions["errors"] == (None if held else 0.0)
    assert wrongs[0].question == "a fixed failure shown as open"


def test_finished_work_listed_as_pending_is_wrong_and_the_built_in_writer_does_not() -> None:
    # A plain list under Progress, as a compaction may write it: the built-in writer once put
    # all of it under Pending.
    facts = Facts(
        requests=("Add an export command to the notes app",),
        summary=(("Progress", "- Export command added in notes/cli.py\n- Markdown renderer"),),
        modified_files=("notes/cli.py",),
    )
    built = write_document(facts)
    assert check_document(facts, built).overall == 1.0, built
    assert "### Done\n- Export command added" in built
    pending = built.replace("### Pending\n- (none recorded)", "### Pending: export command added")
    report = check_document(facts, pending)
    assert [p.question for p in report.missing] == ["finished work listed as pending"]
    assert report.dimensions["state"] == 0.0


def test_a_file_the_session_never_touched_is_wrong(tmp_path: Path) -> None:
    facts = facts_at(failing_session(tmp_path / "s.jsonl"))
    base = write_document(facts)
    assert check_document(facts, base).overall == 1.0
    # Named by the session (a command, the task): not invented. Never named: invented, but in
    # what is still to do (the last section), where a new file may be named.
    context = (
        "## Critical Context\n- See `tests/test_health.py` and app.py; `server/routes.py` too.\n"
    )
    named = base.replace("## Critical Context\n", context) + "\n- Create `server/db.py`.\n"
    report = check_document(facts, named)
    assert [str(p) for p in report.missing] == [
        "a file the session never touched: `server/routes.py` is named, but the session never "
        "read, changed or named it"
    ]
    assert report.dimensions["artifacts"] == pytest.approx(2 / 3)  # a file, the files, this


def corpus_facts() -> list[tuple[str, Facts]]:
    """The facts of every session of the corpus that can be handed off (``make eval``'s)."""
    found = []
    for path in sorted([*fixture_files(), *EXAMPLES.rglob("*.jsonl")]):
        try:
            session = load_session(path)
            records = branch(session, leaf(session, None))
        except HandoffError:
            continue
        if sum(1 for r in records if r.type == "message") >= 2:
            found.append((path.name, facts_of(session, records)))
    return found


def test_the_built_in_writer_scores_at_least_095_on_the_corpus() -> None:
    found = corpus_facts()
    scores = {}
    for name, facts in found:
        written = with_files(write_document(facts), files_block(*_files(facts)))
        scores[name] = check_document(facts, written).overall
    assert len(scores) >= 100  # Claude Code's sessions too
    assert sum(scores.values()) / len(scores) >= 0.95
    assert min(scores.values()) >= DEFAULT_MIN_SCORE, min(scores.items(), key=lambda i: i[1])


def test_a_model_that_keeps_the_prompts_facts_holds_every_file_changed() -> None:
    # The prompt's facts list every file changed (the <files> block shows twenty): a model
    # that keeps them as told misses none.
    for name, facts in corpus_facts():
        block = facts_block(facts)
        assert all(f"`{path}`" in block for path in facts.modified_files), name


def _files(facts: Facts) -> tuple[tuple[str, ...], tuple[str, ...], frozenset[str]]:
    return facts.read_files, facts.modified_files, facts.read_set


# --- the session's own document --------------------------------------------------------------


@pytest.fixture
def weather(tmp_path: Path) -> Path:
    target = tmp_path / "sessions" / WEATHER.parent.name / WEATHER.name
    target.parent.mkdir(parents=True)
    shutil.copyfile(WEATHER, target)
    return target


def test_check_finds_the_recorded_document_and_the_one_a_new_session_starts_from(
    weather: Path,
) -> None:
    handed = run_cli(weather, "--model", "extractive", "--json")
    assert handed.code == 0, handed.stderr
    assert handed.json()["score"] == 1 and handed.json()["missing_probes"] == []
    old = load_session(weather)
    recorded = check_session(old, branch(old, leaf(old, None)))
    assert (recorded.source, recorded.report.overall) == ("handoff", 1.0)
    assert len(recorded.report.probes) == 9  # the facts before the document, not its own
    new = load_session(Path(handed.json()["path"]))
    started = check_session(new, branch(new, leaf(new, None)))
    assert started.source == "start" and started.report.probes == recorded.report.probes


def test_check_command_prints_the_score_and_names_what_is_missing(
    weather: Path, tmp_path: Path
) -> None:
    before = weather.read_bytes()
    result = run_cli("check", weather)  # its latest compaction summary
    assert (result.code, result.stdout) == (5, "0.750\n")
    assert "its latest compaction summary: 0.750 (fails 0.8)" in result.stderr
    assert "  state      0.00  0/1 probes" in result.stderr
    assert "state: the last failing command: `python -m pytest -q tests/test_http.py`" in (
        result.stderr
    )
    passing = run_cli("check", weather, "--min-score", "0.7", "--json")
    assert passing.code == 0
    data = passing.json()
    assert (data["source"], data["score"], data["passed"], data["min_score"]) == (
        "compaction",
        0.75,
        True,
        0.7,
    )
    assert [p["question"] for p in data["probes"] if not p["held"]] == ["the last failing command"]
    given = tmp_path / "doc.md"
    given.write_text(DOCUMENT)
    bad = run_cli("check", weather, "--document", given, "--json")
    assert bad.code == 5 and bad.json()["score"] <= REQUIRED_CAP
    assert "the original task: The forecast command fails" in bad.json()["missing"][0]
    assert weather.read_bytes() == before


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (("--document", "missing.md"), 2, "Usage error: --document missing.md: no such file"),
        (("--document", "latin1.md"), 2, "Usage error: --document latin1.md: not UTF-8 text"),
        (("--min-score", "2"), 2, "--min-score"),
        ((), 3, "holds no handoff document"),
    ],
)
def test_check_refuses_bad_input_in_one_line(
    tmp_path: Path, args: tuple[str, ...], code: int, message: str
) -> None:
    session = failing_session(tmp_path / "s.jsonl")
    (tmp_path / "latin1.md").write_bytes("## Goal\ncaf\xe9".encode("latin-1"))
    result = run_cli("check", session, *args, cwd=tmp_path)
    assert (result.code, result.stdout) == (code, "")
    assert len(result.stderr.strip().splitlines()) == 1 and message in result.stderr


def fifo_let_go_later(path: Path, data: bytes = b"", after: float = 5.0) -> None:
    """A FIFO at ``path`` that a writer opens after ``after`` seconds, writes ``data`` to and
    leaves: a reader that waits for one reads that and goes on, rather than hang the tests."""
    os.mkfifo(path)

    def write_and_leave() -> None:
        time.sleep(after)
        fd = os.open(path, os.O_RDWR)  # never waits: a blocked reader goes on
        os.write(fd, data)  # into the pipe's buffer, read or not
        time.sleep(0.5)
        os.close(fd)

    threading.Thread(target=write_and_leave, daemon=True).start()


@pytest.mark.parametrize(
    ("given", "reason"),
    [
        ("doc.fifo", "not a regular file"),  # its open would wait for a writer
        ("/dev/zero", "not a regular file"),  # endless
        ("folder", "is a folder"),
        ("long.md", "longer than 1 MiB: no handoff document"),
    ],
)
def test_check_reads_a_document_only_from_a_regular_file_of_bounded_size(
    tmp_path: Path, given: str, reason: str
) -> None:
    session = failing_session(tmp_path / "s.jsonl")
    fifo_let_go_later(tmp_path / "doc.fifo")
    (tmp_path / "folder").mkdir()
    with (tmp_path / "long.md").open("wb") as long:
        long.truncate(checking.MAX_DOCUMENT_BYTES + 1)  # sparse: no time or disk spent
    result = run_cli("check", session, "--document", given, cwd=tmp_path)
    assert (result.code, result.stdout) == (2, "")
    assert result.stderr.strip() == f"Usage error: --document {given}: {reason}"


def test_check_reads_at_most_so_much_of_stdin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = failing_session(tmp_path / "s.jsonl")
    piped = io.BytesIO(b"x" * 2 * checking.MAX_DOCUMENT_BYTES)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(piped))
    result = run_cli("check", session, "--document", "-")
    assert (result.code, result.stdout) == (2, "")
    reason = "longer than 1 MiB: no handoff document"
    assert result.stderr.strip() == f"Usage error: --document -: {reason}"
    assert piped.tell() == checking.MAX_DOCUMENT_BYTES + 1  # no more read than tells it


def test_check_of_stdin_when_there_is_none_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = failing_session(tmp_path / "s.jsonl")
    monkeypatch.setattr(sys, "stdin", None)  # as Python leaves it when fd 0 is closed (<&-)
    result = run_cli("check", session, "--document", "-")
    assert (result.code, result.stdout) == (2, "")
    assert result.stderr.strip() == "Usage error: --document -: stdin is closed"


# --- the gate: --min-score ---------------------------------------------------------------------


def _good(request: RecordedRequest) -> Reply:
    """A repair asked for from the conversation, naming what is missing and not its answer."""
    *conversation, written, asked = request.messages
    said = [str(m.get("content")) for m in conversation if m.get("role") == "user"]
    assert any("The forecast command fails whenever" in text for text in said)  # the conversation
    assert written["role"] == "assistant" and "# weather_cli/\ncli.py (RW)" in written["content"]
    assert "- It does not give the original task." in asked["content"]
    assert "The forecast command fails" not in asked["content"]  # the kind, never the answer
    return Reply(write_document(facts_at(WEATHER)))


@pytest.mark.litellm  # the model is asked in this process
def test_a_document_under_min_score_is_repaired_once(
    weather: Path, llm_server: FakeLLMServer
) -> None:
    llm_server.script(Reply(DOCUMENT), _good)
    result = run_cli(weather, "--min-score", "0.8", "--json", env=model_env(llm_server))
    assert result.code == 0, result.stderr
    assert len(llm_server.requests) == 2
    assert result.json()["score"] == 1 and result.json()["missing_probes"] == []
    assert result.json()["usage"]["output_tokens"] > 10  # both answers counted


@pytest.mark.litellm  # the model is asked in this process
def test_a_document_still_under_min_score_fails_and_writes_nothing(
    weather: Path, llm_server: FakeLLMServer
) -> None:
    before = weather.read_bytes()
    llm_server.script(Reply(DOCUMENT), Reply(DOCUMENT))
    result = run_cli(weather, "--min-score", "0.8", env=model_env(llm_server))
    assert (result.code, result.stdout) == (5, "")
    assert len(llm_server.requests) == 2
    assert "Handoff failed: the document scores 0.200, under --min-score 0.8; nothing " in (
        result.stderr
    )
    assert "it misses the original task: The forecast command fails" in result.stderr
    assert weather.read_bytes() == before and files_in(weather.parent) == [weather.name]


@pytest.mark.litellm  # the model is asked in this process
def test_a_repair_too_long_with_the_conversation_is_asked_with_the_document_alone(
    weather: Path, llm_server: FakeLLMServer
) -> None:
    def alone(request: RecordedRequest) -> Reply:
        (asked,) = request.messages  # no conversation: the request, the document in it
        assert "- It does not give the original task." in asked["content"]
        assert "<document>\n" + DOCUMENT in asked["content"]
        return Reply(write_document(facts_at(WEATHER)))

    llm_server.script(Reply(DOCUMENT), Error.context_length(1000, 5000), alone)
    result = run_cli(weather, "--min-score", "0.8", "--json", env=model_env(llm_server))
    assert result.code == 0, result.stderr
    assert len(llm_server.requests) == 3 and result.json()["score"] == 1


@pytest.mark.litellm  # the model is asked in this process
def test_a_repair_that_games_the_probes_is_not_kept(
    weather: Path, llm_server: FakeLLMServer
) -> None:
    # The rewrite holds every probe's answer, and claims a file changed that was never touched
    # and a failure fixed that still fails: it scores under the floor, and is not kept.
    gamed = write_document(facts_at(WEATHER)).replace(
        "## Progress", "## Progress\n### Done\n- Updated `weather_cli/settings.toml` to match.\n"
    )
    llm_server.script(Reply(DOCUMENT), Reply(gamed))
    result = run_cli(weather, "--min-score", "0.8", env=model_env(llm_server))
    assert (result.code, result.stdout) == (5, "")
    assert "scores 0.200, under --min-score 0.8" in result.stderr  # the first document's score


def test_the_built_in_writer_is_gated_too(tmp_path: Path) -> None:
    # Thirty decisions an earlier summary recorded: the built-in writer keeps twelve.
    decisions = "\n".join(
        f"- **Use backend{n}** for shard {n}: measured fastest." for n in range(30)
    )
    chain = Entries()
    first = chain.user("Port the parser to Rust.")
    chain.assistant("Porting it.")
    summary = f"## Goal\nPort the parser.\n\n## Key Decisions\n{decisions}\n"
    chain.add("compaction", summary=summary, firstKeptEntryId=first, tokensBefore=1000)
    chain.user("Go on with the port.")
    chain.assistant("Going on.")
    session = write_session(tmp_path / "s.jsonl", chain.items)
    before = session.read_bytes()
    result = run_cli(session, "--model", "extractive", "--min-score", "0.8")
    assert (result.code, result.stdout) == (5, "")
    assert "a decision recorded earlier: **Use backend12** for shard 12" in result.stderr
    assert session.read_bytes() == before and files_in(tmp_path) == ["s.jsonl"]
    scored = run_cli(session, "--model", "extractive", "--json", "--no-record")
    assert scored.code == 0 and 0.6 < scored.json()["score"] < 0.8
    assert len(scored.json()["missing_probes"]) == 18


def test_rotate_tells_the_score_of_each_session(tmp_path: Path) -> None:
    failing_session(tmp_path / "a" / "s.jsonl")
    result = run_cli(
        "rotate",
        tmp_path / "a",
        "--model",
        "extractive",
        "--over-tokens",
        "1",
        "--idle",
        "0",
        "--json",
        "--min-score",
        "0.8",
    )
    assert result.code == 0, result.stderr
    (outcome,) = [orjson.loads(line) for line in result.stdout.splitlines()]
    assert (outcome["status"], outcome["score"], outcome["missing_probes"]) == (
        "handed_off",
        1,
        [],
    )


# --- --probe-model: the probes answered by a model from the document alone ---------------------

ANSWERS = """\
1. Add retries with exponential backoff to the HTTP client in weather_cli/http.py: the \
forecast command fails when the API hiccups.
2. not stated
3. `weather_cli/http.py`
4. `python -m pytest -q tests/test_http.py`, fixed since.
5. No new dependencies; never retry 4xx except 429; keep the total wait under 5 seconds (the CLI \
runs in shell prompts).
6. not stated
"""


@pytest.mark.litellm  # the model is asked in this process
def test_probe_model_answers_from_the_document_alone(
    weather: Path, tmp_path: Path, llm_server: FakeLLMServer
) -> None:
    given = tmp_path / "doc.md"
    goal = "Retries with backoff for the forecast command."
    given.write_text(document(("Goal", goal), ("Critical Context", "- `weather_cli/http.py`")))

    def answer(request: RecordedRequest) -> Reply:
        (asked,) = request.messages
        assert given.read_text() in asked["content"]  # the document, the questions, no facts
        assert "weather_cli/cli.py" not in asked["content"]
        assert (
            "3. Which files were changed (written or edited)? List every path."
            in (asked["content"])
        )
        return Reply(ANSWERS)

    llm_server.script(answer, answer)
    result = run_cli(
        "check", weather, "--document", given, "--json", "--probe-model", "openai/test-model",
        "--api-base", llm_server.base_url, "--api-key", "sk-test",
    )  # fmt: skip
    assert result.code == 5, result.stderr
    judged = result.json()["probe_model"]
    assert judged["model"] == "openai/test-model" and len(judged["answers"]) == 6
    assert judged["usage"]["input_tokens"] > 0 and judged["usage"]["output_tokens"] > 0
    held = {(p["question"], p["answer"][:20]): p["held"] for p in judged["probes"]}
    assert held == {
        ("the original task", "The forecast command"): True,
        ("the latest request", "Also read WEATHER_RE"): False,
        ("a file changed", "weather_cli/cli.py"): False,
        ("a file changed", "weather_cli/http.py"): True,
        ("the files changed", "weather_cli/cli.py, "): True,  # half of them
        ("the last failing command", "`python -m pytest -q"): True,
        ("a rule the user stated", "Don't add new depend"): True,
        ("a rule the user stated", "Also: always keep th"): True,
        ("a decision recorded earlier", "**Cap total backoff "): False,
    }
    assert judged["score"] == 0.633  # the mean of 1/2, 2/3, 1, 1 and 0: nothing required missed
    text = run_cli(
        "check", weather, "--document", given, "--probe-model", "openai/test-model",
        "--api-base", llm_server.base_url, "--api-key", "sk-test",
    )  # fmt: skip
    assert "answered by openai/test-model from the document alone: 0.633" in text.stderr
    assert "  one request: " in text.stderr and " tokens in, " in text.stderr


def test_probe_model_takes_a_model(weather: Path) -> None:
    result = run_cli("check", weather, "--probe-model", "extractive")
    assert (result.code, result.stdout) == (2, "")
    assert result.stderr == (
        "Usage error: --probe-model takes a model reached through LiteLLM, not extractive\n"
    )


def test_answers_are_read_by_their_numbers() -> None:
    text = "2) b\n1. a\nstill a\n**3.** c\n7. beyond"
    assert answers_of(text, 4) == ["a\nstill a", "b", "c", ""]
    assert answers_of("ok", 2) == ["", ""]  # no numbered answers: none held, no failure


def test_a_long_text_is_read_no_further_than_its_key_terms_need() -> None:
    assert key_terms("a " * 10_000 + "zebra") == []  # 16 terms' reach, and no further
    big = ("word " * 20 + "src/mod.py ") * 100_000  # 11 MB that say little new
    facts = Facts(requests=(big, big + "!"), rules=(big[:200],), last_answer=big)
    started = time.process_time()
    check_document(facts, "## Goal\nsrc/other.py")
    assert time.process_time() - started < 1.0  # was 43 s: every term of every text stemmed


# --- calibration: documents written by hand for real sessions ---------------------------------


@pytest.mark.heavy  # a whole corpus: make test-heavy
def test_the_gate_on_documents_written_by_hand_keeps_its_figures() -> None:
    """``tests/fixtures/calibration`` (``make eval``), the development set: measured 27 of 30
    good documents passed, 27 of 30 wrong ones and every empty one refused, 15 of 30 incomplete
    ones refused, the good above the wrong in 25 sessions, and 43 of 72 planted errors of the
    checkable kinds caught by the contradiction they make. The second set (read once its
    figures were taken, and three rules made of what it showed): 6 of 6 good passed, 4 of 6
    wrong refused, every empty one refused, the good above the wrong in 4 sessions. The fresh
    set, written after all that by another hand and measured before anyone read it: 3 of 6 good
    passed, 4 of 6 wrong, 4 of 6 incomplete and every empty one refused, the good above the
    wrong in 1 session, 4 of 17 planted errors of the checkable kinds caught. The set for
    Gemini CLI, Qwen Code and opencode, measured first: 0 of 6 good passed (5 of 6 wrong, 4
    incomplete and every empty one refused); after the fixes for the classes it showed, 6 of 6
    good passed, 1 of 6 wrong, 2 of 6 incomplete and every empty one refused (its wrong
    documents' errors are in French, Russian, or claims of outcome)."""
    found = calibration.cases()
    got = calibration.figures(found)
    n = got.sessions
    assert n == 30 and calibration.unread() == []
    assert got.passed["good"] >= 27 and got.passed["wrong"] <= 3 and got.passed["empty"] == 0
    assert n - got.passed["incomplete"] >= 15
    assert got.good_over_wrong >= 25
    checkable = ("changed-not", "done-pending", "open-fixed", "ran-not")
    assert sum(got.caught[kind] for kind in checkable) >= 43
    assert sum(got.planted[kind] for kind in checkable) == 72
    heldout = calibration.figures(calibration.cases(calibration.HELDOUT))
    assert heldout.sessions == 6 and heldout.passed["good"] == 6 and heldout.passed["empty"] == 0
    assert heldout.passed["wrong"] <= 2 and heldout.good_over_wrong >= 4
    fresh = calibration.figures(calibration.cases(calibration.FRESH))
    assert fresh.sessions == 6 and fresh.passed["good"] >= 3 and fresh.passed["empty"] == 0
    assert fresh.passed["wrong"] <= 2 and fresh.passed["incomplete"] <= 2
    assert sum(fresh.caught[kind] for kind in checkable) >= 4
    agents = calibration.figures(calibration.cases(calibration.AGENTS))
    assert agents.sessions == 6 and calibration.unread(calibration.AGENTS) == []
    assert agents.passed["good"] == 6 and agents.passed["empty"] == 0
    assert agents.passed["wrong"] <= 5 and agents.passed["incomplete"] <= 4


@pytest.mark.parametrize(
    ("said", "held"),
    [
        (
            "- Issued `git push`; no output was recorded, so whether it reached origin is unknown.",
            True,
        ),
        ("- 最后发出了 `git push`，没有任何输出，不知道是否成功。", True),
        ("- Next: ask the user to restart zellij and confirm the theme.", False),  # not the call
        ("- Committed and pushed with `git push`.", False),  # said done: its outcome unknown
    ],
)
def test_the_call_the_branch_ends_on_with_no_result_is_said_unknown(said: str, held: bool) -> None:
    facts = Facts(requests=("Commit and push the fix.",), unanswered="git push")
    written = document(("Goal", "Commit and push the fix."), ("Progress", said))
    report = check_document(facts, written)
    probe = next(p for p in report.probes if p.question == "the call with no result")
    assert probe.required and probe.held is held
    assert (report.overall <= REQUIRED_CAP) is not held


def test_a_check_that_failed_and_never_passed_is_said_to_fail() -> None:
    failed = Command("npm run test:e2e", ok=False, exit_code=1)
    facts = Facts(requests=("Add the e2e suite.",), commands=(failed,))
    named = "- `npm run test:e2e` was run; it was not re-run after the change."
    failing = "- `npm run test:e2e` failed with `listen EPERM` and has never passed."
    for body, held in ((named, False), (failing, True)):
        report = check_document(facts, document(("Goal", "Add the e2e suite."), ("Progress", body)))
        probe = next(p for p in report.probes if p.question == "the failing check")
        assert probe.required and probe.held is held, body
    fixed = Facts(requests=facts.requests, commands=(Command(failed.text, False, 1, True),))
    report = check_document(fixed, document(("Goal", "Add the e2e suite."), ("Progress", named)))
    assert [p.question for p in report.probes if p.dimension == "state"] == [
        "the last failing command"
    ]


def test_a_file_named_as_what_was_not_done_is_no_claim_of_touching_it() -> None:
    facts = Facts(requests=("Record the naming rule.",), modified_files=("memory/MEMORY.md",))
    for said in (
        "- The rule is in `memory/MEMORY.md`, not in the global `~/.config/notes/RULES.md`.",
        "- 规则写在项目级记忆 `memory/MEMORY.md`，而不是全局 `~/.config/notes/RULES.md`。",
    ):
        report = check_document(
            facts, document(("Goal", "Record the naming rule."), ("Progress", said))
        )
        assert not [p for p in report.probes if p.wrong], said
    said = "- Followed the repository guidelines of `AGENTS.md`."  # read by the agent itself
    report = check_document(
        facts, document(("Goal", "Record the naming rule."), ("Progress", said))
    )
    assert not [p for p in report.probes if p.wrong]
    said = "- Wrote the rule to `memory/MEMORY.md` and `~/.config/notes/RULES.md`."
    report = check_document(
        facts, document(("Goal", "Record the naming rule."), ("Progress", said))
    )
    assert [p.question for p in report.probes if p.wrong] == ["a file the session never touched"]


def test_the_probe_model_is_asked_where_the_work_stands_too() -> None:
    failed = Command("npm test", ok=False, exit_code=1)
    facts = Facts(requests=("Fix the build.",), unanswered="git push", commands=(failed,))
    report = check_document(facts, document(("Goal", "Fix the build.")))
    asked = questions_of(report)
    assert "the call with no result" in asked and "the failing check" in asked


def test_claims_of_what_was_not_done_need_the_calls_the_session_kept() -> None:
    """Older Gemini CLI and Qwen Code chats kept the answers only: a file said to be changed
    cannot be told from one that was."""
    said = document(("Goal", "Tidy the help page."), ("Progress", "- Edited `public/help.html`."))
    kept = Facts(requests=("Tidy the help page.",), read_files=("public/help.html",))
    wrong = [p.question for p in check_document(kept, said).probes if p.wrong]
    assert "a file said to be changed" in wrong
    unkept = Facts(requests=("Tidy the help page.",), calls_recorded=False)
    wrong = [p.question for p in check_document(unkept, said).probes if p.wrong]
    assert "a file said to be changed" not in wrong


@pytest.mark.parametrize(
    ("place", "said"),
    [
        ("Progress", "- Removed `skills\\find-skills\\SKILL.md` with its folder."),  # rd /s /q
        ("Progress", "- Nothing is initialized, committed or pushed."),
        ("Next Steps", "- Run it, then `git add sync.sh`, commit and push."),
    ],
)
def test_a_folder_removed_nothing_committed_and_git_add_are_no_false_claims(
    place: str, said: str
) -> None:
    facts = Facts(
        requests=("Sync the sessions.",),
        modified_files=("C:\\w\\agents\\skills", "sync.sh"),
        read_files=("skills\\find-skills\\SKILL.md",),
        commands=(Command("bash sync.sh", True, 0),),
    )
    report = check_document(facts, document(("Goal", "Sync the sessions."), (place, said)))
    claims = [p.question for p in report.probes if p.wrong]
    assert not [q for q in claims if q != "a file the session never touched"], said
