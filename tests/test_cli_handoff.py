"""The `handoff` command as users run it, against the loopback model server over HTTP."""

from __future__ import annotations

import shutil
import signal
from pathlib import Path

import orjson
import pytest

from handoff_cli.cli.app import run
from handoff_cli.document import SECTIONS, unwrap_document
from handoff_cli.errors import ExitCode

from .conftest import (
    DOCUMENT,
    EXAMPLES,
    FAKE_MODEL,
    FIXTURES,
    Result,
    cancel_mid_stream,
    files_in,
    handoff_entry,
    last_message,
    model_env,
    run_cli,
)
from .fakellm import Error, FakeLLMServer, Raw, Reply

pytestmark = pytest.mark.litellm  # its handoffs call the model in this process

SOURCE = next(EXAMPLES.glob("-home-dev-projects-weather-cli/*.jsonl"))


@pytest.fixture
def session(tmp_path: Path) -> Path:
    target = tmp_path / "sessions" / SOURCE.parent.name / SOURCE.name
    target.parent.mkdir(parents=True)
    shutil.copyfile(SOURCE, target)
    return target


def test_prints_only_the_new_id(session: Path, llm_server: FakeLLMServer) -> None:
    llm_server.script(Reply(DOCUMENT))
    result = run_cli(session, "--focus", "tests", env=model_env(llm_server))
    assert result.code == 0, result.stderr
    new_id = result.stdout.strip()
    assert result.stdout == new_id + "\n"
    assert f"_{new_id}.jsonl" in " ".join(files_in(session.parent))
    assert f"asking {FAKE_MODEL}" in result.stderr  # progress for people, on stderr
    listed = run_cli("list", "--json").json()
    assert {s["id"] for s in listed} == {
        new_id,
        orjson.loads(SOURCE.read_bytes().splitlines()[1])["id"],
    }


def test_json_result_by_id_prefix_and_quiet(session: Path, llm_server: FakeLLMServer) -> None:
    llm_server.script(Reply(DOCUMENT, usage=(900, 60)))
    session_id = orjson.loads(session.read_bytes().splitlines()[1])["id"]
    result = run_cli(
        "handoff",
        session_id[:13],
        "--json",
        "--quiet",
        "--model",
        "openai/test-model",  # outside LiteLLM's table, deliberately: no price is known
        "--api-base",
        llm_server.base_url,
        env={"HANDOFF_AGENT": "omp"},  # the variable, as a script sets it once
    )
    assert result.code == 0, result.stderr
    assert result.stderr == ""
    data = result.json()
    assert data["agent"] == "omp"
    assert list(data) == [
        "mode",
        "id",
        "path",
        "parent_path",
        "model",
        "focus",
        "usage",
        "cost_usd",
        "missing_sections",
        "score",
        "missing_probes",
        "duration_s",
        "requests",
        "strategy",
        "redacted",
        "agent",
        "resume_command",
        "cwd",
    ]
    assert data["parent_path"] == str(session.resolve())
    assert data["usage"] == {"input_tokens": 900, "output_tokens": 60}
    assert data["cost_usd"] is None  # LiteLLM has no price for a made-up model
    assert data["model"] == "openai/test-model" and data["missing_sections"] == []
    assert Path(data["path"]).exists()


def test_dry_run_calls_and_writes_nothing(session: Path, llm_server: FakeLLMServer) -> None:
    before = session.read_bytes()
    result = run_cli(session, "--dry-run", "--json", "--focus", "x", env=model_env(llm_server))
    assert result.code == 0, result.stderr
    request = result.json()
    assert request["model"] == FAKE_MODEL
    assert request["messages"][-1]["content"].endswith("Additional focus: x")
    assert llm_server.requests == []
    assert session.read_bytes() == before and files_in(session.parent) == [session.name]


@pytest.mark.parametrize(
    ("step", "code", "message"),
    [
        (Error.auth(), 1, f"Handoff failed: {FAKE_MODEL}: authentication failed (401): "),
        (Reply(""), 5, "Handoff failed: the model returned no text"),
    ],
)
def test_failures_write_nothing(
    session: Path, llm_server: FakeLLMServer, step: object, code: int, message: str
) -> None:
    before = session.read_bytes()
    llm_server.script(step)  # type: ignore[arg-type]
    result = run_cli(session, "--retries", "0", env=model_env(llm_server))
    assert result.code == code
    assert result.stderr.strip().splitlines()[-1].startswith(message)
    assert "Traceback" not in result.stderr and result.stdout == ""
    assert session.read_bytes() == before and files_in(session.parent) == [session.name]


WORDS = "## Goal\n" + "word " * 300


@pytest.mark.parametrize(
    ("step", "message"),
    [
        (
            Reply(WORDS, cut_after=20),
            "the answer broke off after 20 pieces: the connection closed before its end",
        ),
        (
            Raw(b"data: {not json}\n\ndata: [DONE]\n\n", content_type="text/event-stream"),
            "the model's server sent a stream that is not valid: Expecting property name",
        ),
        (
            Reply(WORDS, chunk_size=5),  # "word " each time: LiteLLM's check for a loop
            "LiteLLM stopped the answer after ",
        ),
        *(
            pytest.param(
                Raw(b'{"error": {"message": "' + b"x" * size + b'"}}', status=500),
                "the model's server refused the request (500): xxx",
                id=f"error body {size:_} bytes",
                marks=marks,
            )
            # LiteLLM scans an error body several times (~5 s of CPU a megabyte): the quick
            # size is long enough to be cut, the stress size is the 5 MB that was reported.
            for size, marks in ((300_000, ()), (5_000_000, (pytest.mark.slow,)))
        ),
    ],
)
def test_each_failure_is_told_as_what_happened(
    session: Path,
    llm_server: FakeLLMServer,
    capsys: pytest.CaptureFixture[str],
    step: object,
    message: str,
) -> None:
    """A stream cut mid-way, a stream of invalid events, LiteLLM's own mid-stream check, an
    error body far too long to print: each one line of at most ~300 characters saying what it was,
    exit 1, nothing written."""
    before = session.read_bytes()
    llm_server.script(step)  # type: ignore[arg-type]
    model = ("--model", FAKE_MODEL, "--api-base", llm_server.base_url)
    code = run([str(session), *model, "--retries", "0", "--quiet"])
    err = capsys.readouterr().err
    (line,) = err.strip().splitlines()
    assert code == 1 and line.startswith(f"Handoff failed: {FAKE_MODEL}: " + message), line
    assert len(line) <= 300
    assert session.read_bytes() == before and files_in(session.parent) == [session.name]


@pytest.mark.parametrize("option", ["--focus", "--api-key", "--model", "--api-base"])
def test_text_options_that_are_not_utf8_are_usage_errors(
    session: Path, capsys: pytest.CaptureFixture[str], option: str
) -> None:
    undecodable = b"fix \xff\xfe it".decode("utf-8", "surrogateescape")  # as the shell passes it
    code = run([str(session), option, undecodable, "--dry-run", "--json"])
    assert code == 2
    assert capsys.readouterr().err.startswith(f"Usage error: {option} is not valid UTF-8 text")


def test_an_out_dir_that_is_a_file_is_not_a_folder(
    session: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = tmp_path / "a-file"
    file.write_text("x")
    for out_dir in (file, file / "below"):
        code = run([str(session), "--model", "extractive", "--out-dir", str(out_dir), "-q"])
        assert code == 1
        line = capsys.readouterr().err.strip()
        assert line == f"Handoff failed: cannot write {out_dir}: not a folder", line


def test_invalid_options_are_usage_errors(session: Path) -> None:
    for args in (["--timeout", "0"], ["--retries", "-1"], ["--bogus"]):
        result = run_cli(session, *args)
        assert result.code == 2, args
        assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.zygote  # forks the program from the zygote (tests/conftest.py)
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_signal_while_streaming_cancels_cleanly(
    session: Path, llm_server: FakeLLMServer, signum: int
) -> None:
    before = session.read_bytes()
    result, waited = cancel_mid_stream(llm_server, signum, session)
    assert result.code == 130, result.stderr
    assert result.stderr.strip() == "Handoff cancelled"
    assert result.stdout == ""
    assert waited < 10  # it stops promptly rather than finishing the answer (~15 s)
    assert session.read_bytes() == before and files_in(session.parent) == [session.name]
    assert llm_server.wait_idle(5)  # the connection was closed


def test_no_key_falls_back_to_the_extractive_writer(session: Path) -> None:
    result = run_cli(session, "--json")
    assert result.code == 0, result.stderr
    data = result.json()
    assert data["model"] == "handoff/extractive" and data["cost_usd"] == 0
    notes = [line for line in result.stderr.splitlines() if line.startswith("note:")]
    assert len(notes) == 1 and "ANTHROPIC_API_KEY" in notes[0] and "--model" in notes[0]
    document = handoff_entry(Path(data["path"]))["content"]
    assert all(f"## {name}\n" in document for name in SECTIONS)


def test_with_a_key_the_sessions_own_model_is_used(session: Path) -> None:
    result = run_cli(session, "--dry-run", "--json", env={"ANTHROPIC_API_KEY": "sk-test"})
    assert result.code == 0, result.stderr
    assert result.json()["model"] == "anthropic/claude-sonnet-4-5"
    assert "note:" not in result.stderr


def test_an_explicit_model_never_falls_back(session: Path) -> None:
    result = run_cli(session, "--model", "anthropic/claude-sonnet-4-5")
    assert result.code == 1
    assert "no credentials: set ANTHROPIC_API_KEY" in result.stderr
    assert files_in(session.parent) == [session.name]


def test_max_doc_tokens_caps_the_builtin_writer_and_guides_a_model(
    session: Path, llm_server: FakeLLMServer
) -> None:
    sizes = []
    for tokens in ("2000", "250"):
        result = run_cli(session, "--model", "extractive", "--max-doc-tokens", tokens, "--json")
        assert result.code == 0, result.stderr
        content = handoff_entry(Path(result.json()["path"]))["content"]
        sizes.append(len(content.split("<files>")[0]))
    assert sizes[1] <= 250 * 4 + 200 < sizes[0]  # the wrapper's lines aside
    result = run_cli(
        session, "--dry-run", "--json", "--max-doc-tokens", "700", env=model_env(llm_server)
    )
    assert "under about 700 tokens" in result.json()["messages"][-1]["content"]
    result = run_cli(session, "--max-doc-tokens", "20")
    assert result.code == 2 and "--max-doc-tokens" in result.stderr


def hand_off_in_process(
    capsys: pytest.CaptureFixture[str], server: FakeLLMServer, *args: str | Path
) -> Result:
    """The program in this process (no process of its own needed), against ``server``."""
    model = ["--model", FAKE_MODEL, "--api-base", server.base_url, "--retries", "0"]
    code = run([*map(str, args), *model])
    out, err = capsys.readouterr()
    return Result(code, out, err)


TEN_MB = "word " * (2 * 1024 * 1024)


def test_an_answer_far_over_the_cap_is_not_read_to_its_end(
    session: Path, llm_server: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """10 MB when 2,000 tokens were asked for: the reading stops at 4x that (no document
    there, so nothing is written), and the connection is closed rather than read on."""
    before = session.read_bytes()
    # Paced a little (a millisecond a 4 KiB piece), so that what was sent is what was read,
    # not what the sockets' buffers took in.
    llm_server.script(
        Reply(TEN_MB, chunk_size=4096, delay=0.001), Reply(TEN_MB, ignore_stream=True)
    )
    for _ in range(2):  # streamed, then one JSON document
        result = hand_off_in_process(capsys, llm_server, session)
        assert (result.code, result.stdout) == (ExitCode.NO_DOCUMENT, ""), result.stderr
        assert result.stderr.strip().splitlines()[-1] == (
            f"Handoff failed: {FAKE_MODEL}'s answer went on past 8,000 tokens "
            "(4x --max-doc-tokens) without the required sections; stopped reading it"
        )
        assert session.read_bytes() == before and files_in(session.parent) == [session.name]
    assert llm_server.wait_idle(5) and llm_server.client_gone == 2
    streamed, plain = llm_server.sent
    assert streamed < 1_000_000 and plain < len(TEN_MB)


def test_a_whole_document_that_goes_on_is_kept_cut_there(
    session: Path, llm_server: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    llm_server.script(Reply(DOCUMENT + "\n" + TEN_MB, chunk_size=4096, delay=0.001))
    result = hand_off_in_process(capsys, llm_server, session, "--json", "--max-doc-tokens", "500")
    assert result.code == 0, result.stderr
    assert (
        result.stderr.count("warning:") == 1
        and (
            f"warning: {FAKE_MODEL}'s answer went on past 2,000 tokens (4x --max-doc-tokens); "
            "it holds every section by then, so it is kept, cut there"
        )
        in result.stderr
    )
    new = Path(result.json()["path"])
    document = unwrap_document(handoff_entry(new)["content"])
    assert document.startswith(DOCUMENT) and "[… cut: the answer went on]" in document
    assert len(document) <= 2_000 * 4 + 300  # the bound, the marker and the <files> block
    assert result.json()["usage"]["output_tokens"] >= 2_000  # at least what was read


def test_a_server_that_ignores_stream_is_read_as_one_completion(
    session: Path, llm_server: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    llm_server.script(Reply(DOCUMENT, usage=(1234, 56), ignore_stream=True))
    result = hand_off_in_process(capsys, llm_server, session, "--json")
    assert result.code == 0, result.stderr
    (request,) = llm_server.requests
    assert request.stream  # it was asked for a stream, and answered with one document
    data = result.json()
    assert data["usage"] == {"input_tokens": 1234, "output_tokens": 56}
    new = Path(data["path"])
    document = unwrap_document(handoff_entry(new)["content"])
    assert document.startswith(DOCUMENT + "\n\n<files>")
    recorded = last_message(session)
    assert recorded["usage"]["input"] == 1234 and recorded["usage"]["output"] == 56


@pytest.mark.parametrize(
    "body",
    [b"not json", b'{"object": "list", "data": []}', b'{"choices": [{"index": 0}]}'],
)
def test_json_that_is_no_completion_is_one_clear_failure(
    session: Path, llm_server: FakeLLMServer, capsys: pytest.CaptureFixture[str], body: bytes
) -> None:
    before = session.read_bytes()
    llm_server.script(Raw(body))
    result = hand_off_in_process(capsys, llm_server, session)
    assert result.code == ExitCode.NO_DOCUMENT and result.stdout == ""
    assert result.stderr.strip().splitlines()[-1] == (
        "Handoff failed: the model's server sent JSON that is not a chat completion, where a "
        "stream was asked"
    )
    assert session.read_bytes() == before and files_in(session.parent) == [session.name]


def test_stderr_and_json_say_how_to_continue_in_the_agent(session: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    own = home / ".omp/agent/sessions/-proj" / SOURCE.name
    mine = home / ".pi/agent/sessions/--proj--/pi.jsonl"
    for path, source in ((own, SOURCE), (mine, FIXTURES / "pi/before-compaction.jsonl")):
        path.parent.mkdir(parents=True)
        shutil.copyfile(source, path)
    env = {"HOME": str(home)}
    for path, agent, opened in ((session, "oh-my-pi", "path"), (own, "oh-my-pi", "id")):
        result = run_cli(path, "--model", "extractive", "--json", env=env)
        assert result.code == 0, result.stderr
        data = result.json()
        word = data["id"] if opened == "id" else data["path"]
        assert data["resume_command"] == f"omp --session {word}"
        assert result.stderr.splitlines()[-1] == f"continue in {agent}: omp --session {word}"
    result = run_cli(mine, "--model", "extractive", "--json", env=env)
    assert result.code == 0, result.stderr
    data = result.json()
    assert data["agent"] == "pi" and data["resume_command"] == f"pi --session {data['path']}"
    assert result.stderr.splitlines()[-1] == f"continue in pi: pi --session {data['path']}"
    quiet = run_cli(own, "--model", "extractive", "-q", env=env)
    assert quiet.code == 0 and "continue in" not in quiet.stderr


def test_an_out_dir_is_made_only_in_a_folder_that_exists(session: Path, tmp_path: Path) -> None:
    missing = tmp_path / "nonexistent" / "x"
    result = run_cli(session, "--model", "extractive", "--out-dir", missing)
    assert result.code == 2 and result.stdout == ""
    parent = tmp_path / "nonexistent"
    said = f"Usage error: --out-dir {missing}: {parent} does not exist (make it first)\n"
    assert result.stderr == said
    assert not parent.exists() and files_in(session.parent) == [session.name]
    made = tmp_path / "new"
    result = run_cli(session, "--model", "extractive", "--out-dir", made, "-q")
    assert result.code == 0, result.stderr
    assert files_in(made) == [f for f in files_in(made) if result.stdout.strip() in f] != []


def test_a_dry_runs_note_says_what_would_be_done(session: Path) -> None:
    result = run_cli(session, "--dry-run", "--json")
    assert result.code == 0, result.stderr
    (note,) = [line for line in result.stderr.splitlines() if line.startswith("note:")]
    assert "ANTHROPIC_API_KEY" in note and "(handoff/extractive) would write the document" in note
