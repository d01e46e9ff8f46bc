"""The real program: output streams, exit codes, messages (in a process of its own where the
streams themselves are the test: closed, a terminal, none)."""

from __future__ import annotations

import contextlib
import json
import os
import pty
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Annotated

import click
import orjson
import pytest
import typer
from typer.testing import CliRunner

from handoff_cli.cli.app import app, run
from handoff_cli.cli.flags import finite
from handoff_cli.errors import EXIT_CODES, ExitCode, exit_codes_help
from handoff_cli.options import check_api_base
from handoff_cli.sessions.session import load_session

from .conftest import (
    EXAMPLES,
    FIXTURES,
    HEADER,
    PROJECT,
    Entries,
    children_cpu,
    omp183_context,
    run_cli,
    write_session,
)

SAMPLE = FIXTURES / "omp/sample-v3.jsonl"
SAMPLE_ID = "01a22ac6-037e-775c-8089-58f5d6db35c2"
WEATHER = "2026-11-27T09-14-03-512Z_019ac4d2-7f31-7a0e-9b6c-3e1f5a2d8c40.jsonl"


def test_show_branch_is_readable_plain_text() -> None:
    result = run_cli("show", SAMPLE, env={"NO_COLOR": ""})
    assert result.code == 0, result.stderr
    assert "\x1b[" not in result.stdout  # not a terminal: no colour codes
    assert f"session  {SAMPLE_ID}" in result.stdout
    assert "[start]" in result.stdout  # the label on its entry
    assert "⑂ 2 branches" in result.stdout
    assert "Running ls → bash" in result.stdout
    assert "on the new branch" in result.stdout
    assert "after compaction" not in result.stdout  # on the other branch
    assert result.stderr == ""


def test_show_tree_shows_every_branch_and_marks_the_current_one() -> None:
    result = run_cli("show", SAMPLE, "--tree")
    assert result.code == 0, result.stderr
    lines = result.stdout.splitlines()
    compaction = next(x for x in lines if "compaction" in x)
    assert not compaction.startswith("*")
    new_branch = next(x for x in lines if "on the new branch" in x)
    assert new_branch.startswith("*   ")  # on the current branch, one level into a fork
    assert "List files" in next(x for x in lines if x.startswith("* ae1c4c34"))


def test_show_json_is_the_branch_as_in_the_file() -> None:
    result = run_cli("show", SAMPLE, "--json")
    assert result.code == 0, result.stderr
    data = result.json()
    assert list(data) == ["header", "leaf", "branch"]
    assert data["header"]["id"] == SAMPLE_ID
    file_entries = {e["id"]: e for e in map(orjson.loads, SAMPLE.read_bytes().splitlines()[2:])}
    assert [file_entries[e["id"]] for e in data["branch"]] == data["branch"]
    assert data["branch"][-1]["id"] == data["leaf"] == "465da109"


@pytest.mark.parametrize(
    ("name", "agent", "by"),
    [
        ("omp/sample-v3", [], "omp183"),  # its title slot says oh-my-pi
        ("pi/before-compaction", [], "pi"),  # its header's model fields say pi
        ("pi/before-compaction", ["--agent", "omp"], "omp183"),
        ("generated/v2-030", ["--agent", "pi"], "pi"),
        # What 18.3 reads anew: historyRewriteAt, a snapshot's kept entries.
        ("edge/anthropic-compaction", [], "omp183"),
        ("omp183/snapshot/snapshot-compaction", ["--agent", "omp"], "omp183"),
    ],
)
def test_show_context_json_is_the_agents_context(name: str, agent: list[str], by: str) -> None:
    """Printed as the agent's own: pi 1.6.0's, and oh-my-pi 18.3.4's (the registry's)."""
    session = FIXTURES / f"{name}.jsonl"
    result = run_cli("show", session, "--context", "--json", *agent)
    assert result.code == 0, result.stderr
    kept = session.with_suffix(".pi-context.json") if by == "pi" else omp183_context(session)
    expected = orjson.loads(kept.read_bytes())
    got = result.json()
    assert list(got) == ["messages", "thinkingLevel", "model"]
    assert got["messages"] == expected["messages"]
    assert [list(m) for m in got["messages"]] == [list(m) for m in expected["messages"]]
    assert got["thinkingLevel"] == expected["thinkingLevel"]


def test_agent_option_takes_only_the_agents() -> None:
    result = run_cli("show", FIXTURES / "omp/sample-v3.jsonl", "--agent", "aider")
    assert result.code == 2
    named = "'omp', 'pi', 'gemini', 'qwen', 'claude', 'codex', 'opencode', 'auto'"
    assert f"'aider' is not one of {named}" in result.stderr


def test_show_context_human_and_leaf_option() -> None:
    result = run_cli("show", SAMPLE, "--context", "--leaf", "52f68310")
    assert result.code == 0, result.stderr
    assert "compactionSummary" in result.stdout
    assert "after compaction" in result.stdout
    assert "thinking high" in result.stdout


def test_session_by_id_prefix_from_the_sessions_dir(tmp_path: Path) -> None:
    folder = tmp_path / "sessions" / "--home-u-proj--"
    folder.mkdir(parents=True)
    shutil.copyfile(SAMPLE, folder / SAMPLE.name)
    by_env = run_cli("show", SAMPLE_ID[:8], "--json")
    by_option = run_cli(
        "show",
        SAMPLE_ID,
        "--json",
        "--sessions-dir",
        tmp_path / "sessions",
        env={"HANDOFF_SESSIONS_DIR": "/nonexistent"},
    )
    for result in (by_env, by_option):
        assert result.code == 0, result.stderr
        assert result.json()["header"]["id"] == SAMPLE_ID


LIST_KEYS = (
    "id",
    "path",
    "agent",
    "timestamp",
    "modified",
    "cwd",
    "title",
    "parent",
    "children",
    "handed_off",
    "generation",
    "entries",
    "size",
)


def test_list_json_and_skipped_files(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    shutil.copytree(EXAMPLES, folder)
    (folder / "junk.jsonl").write_text("not json\n")
    result = run_cli("list", "--json")
    assert result.code == 0, result.stderr
    data = result.json()
    assert {tuple(s) for s in data} == {LIST_KEYS}
    assert [s["timestamp"] for s in data] == sorted((s["timestamp"] for s in data), reverse=True)
    assert "junk.jsonl" in result.stderr and "skipped" in result.stderr


def test_list_human(tmp_path: Path) -> None:
    result = run_cli("list", EXAMPLES)
    assert result.code == 0, result.stderr
    assert "Retry with backoff for the HTTP client" in result.stdout
    assert "/home/dev/projects/notes-app" in result.stdout


def test_skipped_lines_are_reported_on_stderr_only(tmp_path: Path, entries: Entries) -> None:
    entries.user("a")
    entries.assistant("b")
    path = write_session(tmp_path / "s.jsonl", entries.items, extra=b"{torn\n")
    result = run_cli("show", path, "--context", "--json", "--agent", "omp")
    assert result.code == 0
    assert len(result.json()["messages"]) == 2
    assert result.stderr.strip() == f"warning: {path}: skipped 1 malformed line (line 4)"


@pytest.mark.parametrize(
    ("make", "code", "text"),
    [
        (lambda p: p / "missing.jsonl", 4, "no such file"),
        (lambda p: p, 4, "is a directory"),
        (lambda p: write_bytes(p / "x.jsonl", b"\x00\xff\xfe binary"), 4, ":1: not valid JSON"),
        (lambda p: write_bytes(p / "x.jsonl", b""), 4, "empty file"),
        (lambda p: write_bytes(p / "x.jsonl", b'{"type":"message"}\n'), 4, "not a session file"),
    ],
)
def test_bad_session_files(tmp_path: Path, make, code: int, text: str) -> None:
    path = make(tmp_path)
    result = run_cli("show", path)
    assert result.code == code
    assert text in result.stderr
    assert str(path) in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


def write_bytes(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_cycle_is_reported_not_looped(tmp_path: Path, entries: Entries) -> None:
    entries.user("a", parent="e0000002")
    entries.user("b")
    result = run_cli("show", write_session(tmp_path / "s.jsonl", entries.items))
    assert result.code == 4
    assert "parentId cycle through entries" in result.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["show", str(SAMPLE), "--bogus"],
        ["show"],
        ["show", str(SAMPLE), "--leaf", "nope"],
        ["show", str(SAMPLE), "--leaf", ""],
        ["list", "/no/such/folder"],
        [str(SAMPLE), "--context-window", "999", "--dry-run", "--json"],
        [str(SAMPLE), "--timeout", "0"],
    ],
    ids=" ".join,
)
def test_usage_errors_are_one_line_with_exit_2(
    args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_in_process(capsys, *args)
    assert (code, out) == (ExitCode.USAGE, "")
    assert len(err.strip().splitlines()) == 1 and err.startswith("Usage error: "), err


def test_a_bad_value_is_blamed_on_where_it_came_from(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, _, err = run_in_process(
        capsys, str(SAMPLE), "--context-window", "999", "--dry-run", "--json"
    )
    assert "--context-window must be at least 1,000, not 999" in err and "HANDOFF_" not in err
    monkeypatch.setenv("HANDOFF_CONTEXT_WINDOW", "5")
    _, _, err = run_in_process(capsys, str(SAMPLE), "--dry-run", "--json")
    assert "$HANDOFF_CONTEXT_WINDOW must be at least 1,000, not 5" in err


def float_options() -> list[tuple[str, str]]:
    """Every option of every command that takes a float, as (command, flag)."""
    group = typer.main.get_command(app)
    assert isinstance(group, click.Group)
    return [
        (name, parameter.opts[0])
        for name, command in group.commands.items()
        for parameter in command.params
        if isinstance(parameter, click.Option)
        and isinstance(parameter.type, click.types.FloatParamType)
    ]


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "NaN", "-Infinity"])
def test_every_float_option_refuses_what_is_not_a_finite_number(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, value: str
) -> None:
    options = float_options()
    assert {("handoff", "--timeout"), ("rotate", "--timeout"), ("rotate", "--max-cost")} <= set(
        options
    )
    session = tmp_path / "s.jsonl"  # a copy: were the value taken, the handoff would write
    shutil.copyfile(SAMPLE, session)
    target = {"handoff": str(session), "rotate": str(tmp_path), "check": str(session)}
    for command, flag in options:
        code, out, err = run_in_process(capsys, command, target[command], flag, value)
        assert (code, out) == (ExitCode.USAGE, ""), (command, flag, err)
        assert len(err.strip().splitlines()) == 1 and flag in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.jsonl"]


def number_options() -> list[tuple[str, str]]:
    """Every option of every command that takes a number, as (command, flag)."""
    group = typer.main.get_command(app)
    assert isinstance(group, click.Group)
    numbers = (click.types.IntParamType, click.types.FloatParamType)
    return [
        (name, parameter.opts[0])
        for name, command in group.commands.items()
        for parameter in command.params
        if isinstance(parameter, click.Option) and isinstance(parameter.type, numbers)
    ]


# int() and float() read any script's decimal digits, and str.isdigit() takes superscripts too,
# which int() then refuses with its own message.
# Arabic-Indic 3 and 30, a superscript 2, full-width 12, and an ASCII 3 before an Arabic-Indic 3.
NOT_ASCII_DIGITS = ["\u0663", "\u00b2", "\u0663\u0660", "\uff11\uff12", "3\u0663"]


@pytest.mark.parametrize("value", NOT_ASCII_DIGITS)
def test_every_number_option_reads_ascii_digits_only(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, value: str
) -> None:
    options = number_options()
    assert {("handoff", "--retries"), ("rotate", "--jobs"), ("rotate", "--max-cost")} <= set(
        options
    )
    session = tmp_path / "s.jsonl"  # a copy: were the value taken, the handoff would write
    shutil.copyfile(SAMPLE, session)
    target = {"handoff": [str(session)], "rotate": [str(tmp_path)], "check": [str(session)]}
    for command, flag in options:
        code, out, err = run_in_process(capsys, command, *target.get(command, []), flag, value)
        assert (code, out) == (ExitCode.USAGE, ""), (command, flag, err)
        assert len(err.strip().splitlines()) == 1 and flag in err, err
        assert "ASCII digits" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.jsonl"]


@pytest.mark.parametrize(
    "args",
    [
        *(["--shard", s] for s in ("\u00b2/\u00b3", "\u0663/\u0664", "1/\u0664", "\u00b9/2")),
        *(["--idle", idle] for idle in ("\u0663m", "1\u0660s", "\u00b2h")),
    ],
    ids=" ".join,
)
def test_a_shard_or_a_duration_in_other_digits_is_one_usage_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, args: list[str]
) -> None:
    code, out, err = run_in_process(capsys, "rotate", str(tmp_path), *args)
    assert (code, out) == (ExitCode.USAGE, ""), err
    assert len(err.strip().splitlines()) == 1 and err.startswith("Usage error: "), err
    assert "not a shard" in err or "not a duration" in err, err
    assert "int()" not in err and "invalid literal" not in err


NOT_A_SERVER = [
    "not-a-url",
    "file:///x",
    "ftp://h/x",
    "http://",
    "http:///v1",
    "localhost:8000",
    "http://[::1",
    "http://h:99999/v1",
    "http://h:0/v1",
    "http://h:\u0663\u0660/v1",
    "http://exa mple.com/v1",
    "http://h/\x1b[2J",
]


@pytest.mark.parametrize("url", NOT_A_SERVER)
def test_an_api_base_that_is_no_servers_url_is_one_usage_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, url: str
) -> None:
    """Not "the model's server refused the request": nothing is sent anywhere."""
    session = tmp_path / "s.jsonl"
    shutil.copyfile(SAMPLE, session)
    model = ["--model", "openai/gpt-4o", "--api-key", "k", "--retries", "0"]
    for args in ([str(session), *model], ["rotate", str(tmp_path), *model], ["config"]):
        for given in ("--api-base", "$HANDOFF_API_BASE"):
            if given == "--api-base":
                code, out, err = run_in_process(capsys, *args, "--api-base", url)
            else:
                monkeypatch.setenv("HANDOFF_API_BASE", url)
                code, out, err = run_in_process(capsys, *args)
                monkeypatch.delenv("HANDOFF_API_BASE")
            assert (code, out) == (ExitCode.USAGE, ""), (args, given, err)
            assert len(err.strip().splitlines()) == 1, err
            assert err.startswith(f"Usage error: {given} ") and "not an http(s) URL" in err, err
    assert session.read_bytes() == SAMPLE.read_bytes()


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:8000/v1", "https://api.example.com", "HTTP://[::1]:11434/v1"]
)
def test_a_servers_url_is_taken_as_it_is(url: str) -> None:
    assert check_api_base(url) == url


def test_a_number_from_a_variable_is_checked_and_blamed_on_it() -> None:
    # No float option reads a variable yet: the check is made for those that will.
    price = typer.Typer()

    @price.command()
    def cost(
        usd: Annotated[
            float, typer.Option("--price", envvar="HANDOFF_PRICE", callback=finite)
        ] = 1.0,
    ) -> None:
        typer.echo(f"{usd:g}")

    runner = CliRunner()
    assert runner.invoke(price, [], env={"HANDOFF_PRICE": "2.5"}).output == "2.5\n"
    for value in ("nan", "inf", "-inf"):
        result = runner.invoke(price, [], env={"HANDOFF_PRICE": value})
        assert result.exit_code == ExitCode.USAGE
        assert f"$HANDOFF_PRICE must be a finite number, not {float(value)}" in result.output
    result = runner.invoke(price, ["--price", "nan"], env={"HANDOFF_PRICE": "1"})
    assert "--price must be a finite number, not nan" in result.output


def test_handoff_is_the_default_command(tmp_path: Path, entries: Entries) -> None:
    entries.user("only one message")
    path = write_session(tmp_path / "s.jsonl", entries.items)
    before = path.read_bytes()
    for args in ([path], ["handoff", path], [path, "--focus", "x"]):
        result = run_cli(*args)
        assert result.code == 3, result.stderr
        assert result.stderr.strip() == "Nothing to hand off (no messages yet)"
    assert path.read_bytes() == before


def run_in_process(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """The program in this process: for what needs no subprocess of its own."""
    code = run(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_help_and_version(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_in_process(capsys, "--help")
    assert code == 0
    assert all(word in out for word in ("handoff", "show", "list", "Exit codes"))
    assert exit_codes_help() in " ".join(out.split())  # the codes, from their one definition
    code, out, _ = run_in_process(capsys, "--version")
    assert code == 0 and out.startswith("handoff ")
    code, out, err = run_in_process(capsys)
    assert code == ExitCode.USAGE and out == "" and "show" in err  # the help, as a usage error


@pytest.mark.parametrize(
    "command", [[], ["handoff"], ["show"], ["list"], ["some-session"], ["some-session", "--json"]]
)
def test_dash_h_is_help_everywhere(capsys: pytest.CaptureFixture[str], command: list[str]) -> None:
    code, short, _ = run_in_process(capsys, *command, "-h")
    assert code == 0 and short.startswith("Usage: handoff")
    assert short == run_in_process(capsys, *command, "--help")[1]


def test_readme_lists_every_exit_code() -> None:
    readme = (PROJECT / "README.md").read_text()
    for code, meaning in EXIT_CODES.items():
        row = next((r for r in readme.splitlines() if r.startswith(f"| {int(code)} |")), None)
        assert row is not None and meaning in row, f"exit code {int(code)}"


def test_show_list_and_export_never_import_litellm(tmp_path: Path) -> None:
    probe = (
        "import sys\nfrom handoff_cli.cli.app import run\n"
        "for args in (['show', sys.argv[1], '--context', '--json'], ['list', sys.argv[2]],\n"
        "             ['export', sys.argv[1]], ['export', sys.argv[1], '--format', 'html']):\n"
        "    assert run(args) == 0, args\n"
        "print('litellm' in sys.modules, file=sys.stderr)\n"
    )
    completed = subprocess.run(  # a process: this one has imported LiteLLM already
        [sys.executable, "-c", probe, str(SAMPLE), str(EXAMPLES)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert completed.stderr.strip().splitlines()[-1] == "False"


@pytest.mark.parametrize(
    "args",
    [
        ["show", "--context", "--json"],
        ["show"],
        ["show", "--tree"],
        ["show", "--context"],
        ["export"],
        ["export", "--format", "html"],
    ],
    ids=" ".join,
)
def test_a_closed_pipe_is_not_a_failure(args: list[str]) -> None:
    """`handoff show ... | head -1`: the reader leaves early; the program ends quietly, exit 0."""
    command, *flags = args
    process = subprocess.Popen(  # a process: the pipe its stdout is closes under it
        [sys.executable, "-m", "handoff_cli", command, FIXTURES / "pi/large-session.jsonl", *flags],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.read(10)
    process.stdout.close()
    stderr = process.stderr.read().decode()
    assert (process.wait(timeout=60), stderr) == (0, "")


def test_a_handoff_with_stdout_closed_says_its_id_on_stderr(tmp_path: Path) -> None:
    source = tmp_path / "s.jsonl"
    shutil.copyfile(FIXTURES / "omp/sample-v3.jsonl", source)
    read, write = os.pipe()
    os.close(read)  # nobody will read what it prints
    completed = subprocess.run(  # a process: its stdout is a pipe nobody reads
        [sys.executable, "-m", "handoff_cli", source, "--model", "extractive", "--quiet"],
        stdout=write,
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
    )
    os.close(write)
    made = [p for p in tmp_path.glob("*.jsonl") if p != source]
    assert completed.returncode == 0 and len(made) == 1
    assert completed.stderr.strip().startswith(f"new session {load_session(made[0]).id}")


def test_console_script_is_the_same_program() -> None:
    script = Path(sys.executable).parent / "handoff"
    # A process: the console script is one.
    completed = subprocess.run([script, "show", SAMPLE, "--json"], capture_output=True, check=True)
    assert completed.stdout.decode() == run_cli("show", SAMPLE, "--json").stdout


def test_lone_surrogates_are_kept_and_never_crash(
    tmp_path: Path, entries: Entries, capsys: pytest.CaptureFixture[str]
) -> None:
    """JavaScript writes a lone surrogate when it cuts text inside an emoji: every command
    takes it, JSON keeps it escaped, and views show a replacement character."""
    entries.user("cut \ud83d here")
    entries.assistant(
        "ok",
        {"type": "toolCall", "id": "c1", "name": "write", "arguments": {"path": "f\ud83d.txt"}},
        stop="toolUse",
    )
    entries.result("c1", "wrote \udc00")
    entries.add("session_info", name="title \udc00")
    raw = b"".join(
        json.dumps(e).encode() + b"\n" for e in [HEADER, *entries.items]
    )  # the standard library writes lone surrogates as escapes, as JavaScript does
    path = tmp_path / "sessions" / "s.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(raw)
    for args in (["show", path], ["show", path, "--context"], ["list", path.parent]):
        code, out, err = run_in_process(capsys, *map(str, args))
        assert code == 0 and err == "" and "\ufffd" in out, args
    code, out, _ = run_in_process(capsys, "show", str(path), "--context", "--json")
    assert code == 0 and "cut \\ud83d here" in out
    code, out, _ = run_in_process(capsys, "list", str(path.parent), "--json")
    assert code == 0 and json.loads(out)[0]["title"] == "title \udc00"
    code, out, err = run_in_process(capsys, str(path), "--model", "extractive", "--json")
    assert code == 0, err
    assert "f\\ud83d.txt" in Path(json.loads(out)["path"]).read_text()  # escaped, as JS does
    recorded = [json.loads(line) for line in path.read_bytes()[len(raw) :].splitlines()]
    # The exchange, then the session's own model named again (the answer is the handoff's).
    assert [e["type"] for e in recorded] == ["message", "message", "model_change"]


def catches(pid: int, number: int) -> bool:
    """Whether the process has a handler of its own for the signal ``number`` yet."""
    status = Path(f"/proc/{pid}/status").read_text()
    caught = int(
        next(line for line in status.splitlines() if line.startswith("SigCgt:")).split()[1], 16
    )
    return bool(caught >> (number - 1) & 1)


def cpu_seconds(pid: int) -> float:
    """The CPU time (user and system) the process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.parametrize("after", [0.0, 0.5, 1.2])
def test_ctrl_c_while_litellm_is_imported_cancels_cleanly(tmp_path: Path, after: float) -> None:
    """From the moment the handoff command takes the signals (then the session is loaded and
    LiteLLM imported, for seconds): a Ctrl-C is a clean cancel (exit 130, no traceback), and a
    prompt one."""
    source = tmp_path / "s.jsonl"
    shutil.copyfile(FIXTURES / "omp/sample-v3.jsonl", source)
    before = source.read_bytes()
    used_before = children_cpu()
    process = subprocess.Popen(  # a process: for its SIGINT, while it imports LiteLLM
        [sys.executable, "-m", "handoff_cli", source, "--model", "openai/m", "--api-key", "k"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not catches(process.pid, signal.SIGTERM) and time.monotonic() < deadline:
        time.sleep(0.01)  # the interpreter's own start-up is not ours to cancel
    time.sleep(after)
    process.send_signal(signal.SIGINT)
    sent, used_by_then = time.monotonic(), cpu_seconds(process.pid)
    out, err = process.communicate(timeout=60)
    took = time.monotonic() - sent
    used = children_cpu() - used_before
    assert (process.returncode, out) == (130, ""), err
    assert "Traceback" not in err and err.strip().endswith("ancelled")
    # Prompt: the import is not finished first (seconds of CPU); the CPU it took after the
    # signal tells that whatever the machine's load, the wall bound only that it ended.
    assert used - used_by_then < 1.0, f"{used - used_by_then:.2f} s of CPU after the signal"
    assert took < 15.0
    assert source.read_bytes() == before


def test_show_facts_says_what_a_handoff_is_told(tmp_path: Path, entries: Entries) -> None:
    entries.user("<environment_context>/w</environment_context>")
    entries.user("Rotate the key sk-live-4f9aQ2mZ8xK1pL7vT3nB6cY0 in deploy.sh. Never print it.")
    call = {"type": "toolCall", "id": "c1", "name": "edit", "arguments": {"path": "deploy.sh"}}
    entries.assistant(call, stop="toolUse")
    entries.result("c1", "Successfully replaced text in deploy.sh.")
    entries.assistant("Done: deploy.sh reads the new key from the vault.")
    path = write_session(tmp_path / "s.jsonl", entries.items)
    as_json = run_cli("show", path, "--facts", "--json").json()
    assert as_json["requests"][0].startswith("Rotate the key ") and len(as_json["requests"]) == 1
    assert "sk-live-4f9aQ2mZ8xK1pL7vT3nB6cY0" not in json.dumps(as_json)  # masked, as sent
    assert as_json["modified_files"] == ["deploy.sh"] and as_json["finished"] is True
    assert as_json["rules"] == [as_json["requests"][0].split(". ")[1]]
    shown = run_cli("show", path, "--facts")
    assert shown.code == 0 and "## Requests" in shown.stdout and "- `deploy.sh`" in shown.stdout
    assert "## State\nfinished" in shown.stdout
    both = run_cli("show", path, "--facts", "--document")
    assert both.code == ExitCode.USAGE and "give one" in both.stderr


def test_show_document_piped_and_on_a_terminal(tmp_path: Path) -> None:
    source = tmp_path / "s.jsonl"
    shutil.copyfile(EXAMPLES / "-home-dev-projects-weather-cli" / WEATHER, source)
    new_id = run_cli(source, "--model", "extractive", "--quiet").stdout.strip()
    new = next(p for p in tmp_path.glob("*.jsonl") if new_id in p.name)
    piped = run_cli("show", new, "--document")
    assert piped.code == 0 and piped.stdout.startswith("## Goal\n")  # raw Markdown
    assert "<handoff-context>" not in piped.stdout
    recorded = run_cli("show", source, "--document")  # the old session's record of it
    assert recorded.stdout == piped.stdout
    as_json = run_cli("show", new, "--document", "--json").json()
    assert as_json == {"id": new_id, "document": piped.stdout.rstrip("\n")}
    # On a terminal: rendered, the headings drawn rather than spelled with '##'.
    main, other = pty.openpty()
    process = subprocess.Popen(  # a process: its stdout is a terminal
        [sys.executable, "-m", "handoff_cli", "show", new, "--document"],
        stdout=other,
        stderr=subprocess.PIPE,
        env={**os.environ, "COLUMNS": "100", "TERM": "xterm"},
    )
    os.close(other)
    shown = b""
    with contextlib.suppress(OSError):
        while chunk := os.read(main, 65536):
            shown += chunk
    assert process.wait(timeout=60) == 0
    text = shown.decode(errors="replace")
    assert "Goal" in text and "## Goal" not in text
    nothing = run_cli("show", FIXTURES / "omp/sample-v3.jsonl", "--document")
    assert nothing.code == 3 and "holds no handoff document" in nothing.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["show", ""],
        ["show", str(FIXTURES / "omp/sample-v3.jsonl"), "--tree", "--json"],
        ["show", str(FIXTURES / "omp/sample-v3.jsonl"), "--tree", "--context"],
        ["list", "--tree", "--json"],
        ["list", "--here", "--cwd", "/x"],
        [""],
    ],
    ids=" ".join,
)
def test_what_cannot_be_combined_is_a_usage_error(
    args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_in_process(capsys, *args)
    assert (code, out) == (ExitCode.USAGE, "") and err.startswith("Usage error: ")


def test_show_dates_a_branch_that_spans_days(tmp_path: Path, entries: Entries) -> None:
    entries.user("monday")
    entries.items[-1]["timestamp"] = "2026-03-02T09:00:00.000Z"
    entries.assistant("tuesday")
    entries.items[-1]["timestamp"] = "2026-03-03T10:30:00.000Z"
    path = write_session(tmp_path / "s.jsonl", entries.items)
    lines = run_cli("show", path).stdout.splitlines()
    assert any("2026-03-02 09:00:00 user" in line for line in lines)
    assert any("2026-03-03 10:30:00 assistant" in line for line in lines)


def test_session_ids_complete_with_their_titles(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    shutil.copytree(EXAMPLES, folder)
    completed = subprocess.run(  # a process: the shell's completion protocol ends it (exit)
        [sys.executable, "-m", "handoff_cli", "show", "019a"],
        capture_output=True,
        text=True,
        env={
            **os.environ,
            "_HANDOFF_COMPLETE": "complete_zsh",
            "_TYPER_COMPLETE_ARGS": "handoff show 019a",
        },
    )
    assert "019ac4d2-7f31-7a0e-9b6c-3e1f5a2d8c40" in completed.stdout
    assert "Retry with backoff for the HTTP client" in completed.stdout
    assert "019acb0e-1c55-7d21-8f04-6a9e2b7c13d5" in completed.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["--version"],
        ["show", str(FIXTURES / "omp/sample-v3.jsonl")],
        ["show", str(FIXTURES / "omp/sample-v3.jsonl"), "--context", "--json"],
        [str(FIXTURES / "omp/sample-v3.jsonl"), "--model", "extractive", "--dry-run", "--json"],
    ],
    ids=lambda a: " ".join(a[:1] + a[2:]),
)
def test_no_stdout_at_all_is_not_a_failure(args: list[str]) -> None:
    """Started with stdout closed (``>&-``): nothing to print to, nothing wrong."""
    completed = subprocess.run(  # a process: started with no stdout at all
        [sys.executable, "-m", "handoff_cli", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        close_fds=True,
        preexec_fn=lambda: os.close(1),
    )
    assert (completed.returncode, completed.stderr) == (0, "")


def test_a_handoff_with_no_stdout_says_its_id_on_stderr(tmp_path: Path) -> None:
    source = tmp_path / "s.jsonl"
    shutil.copyfile(FIXTURES / "omp/sample-v3.jsonl", source)
    for extra in ([], ["--json"]):
        completed = subprocess.run(  # a process: started with no stdout at all
            [sys.executable, "-m", "handoff_cli", source, "--model", "extractive", "-q", *extra],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=lambda: os.close(1),
        )
        assert completed.returncode == 0, completed.stderr
        assert completed.stderr.startswith("new session ") and "Traceback" not in completed.stderr


def test_list_shows_ids_that_show_finds_though_they_share_eight_digits(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    made = [f"01a2308c-{n:x}b00-7000-8000-00000000000{n}" for n in range(1, 7)]
    for number, session_id in enumerate(made):
        entries = Entries()
        entries.user(f"task {number}")
        header = {**HEADER, "id": session_id, "timestamp": f"2026-12-01T10:00:0{number}.000Z"}
        write_session(folder / f"{session_id}.jsonl", entries.items, header)
    listed = run_cli("list")
    assert listed.code == 0, listed.stderr
    shown = [line.split()[0] for line in listed.stdout.splitlines()]
    assert shown == [f"01a2308c-{n:x}" for n in range(6, 0, -1)]  # newest first, one width
    for short, session_id in zip(shown, reversed(made), strict=True):
        found = run_cli("show", short, "--json")
        assert found.code == 0 and found.json()["header"]["id"] == session_id
    assert run_cli("show", "01a2308c").code == 2  # the eight digits alone: ambiguous


def test_the_main_form_completes_session_ids_as_show_does(tmp_path: Path) -> None:
    from click.shell_completion import ShellComplete

    folder = tmp_path / "sessions"
    shutil.copytree(EXAMPLES, folder)
    complete = ShellComplete(typer.main.get_command(app), {}, "handoff", "_HANDOFF_COMPLETE")
    weather = "019ac4d2-7f31-7a0e-9b6c-3e1f5a2d8c40"
    for words in (["show"], []):
        found = {(item.value, item.help) for item in complete.get_completions(words, "019ac4")}
        assert found == {(weather, "Retry with backoff for the HTTP client")}, words
    commands = {item.value for item in complete.get_completions([], "sh")}
    assert commands == {"show"}  # the command words still complete
    assert "--version" in {item.value for item in complete.get_completions([], "--v")}


def test_a_current_directory_that_is_gone_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    """A shell left in a removed directory: every command looks for the sessions and settings
    there, so each says so in one line (a real process: a deleted cwd cannot be entered)."""
    gone = tmp_path / "gone"
    gone.mkdir()
    script = f'cd "{gone}" && rmdir "{gone}" && exec "{sys.executable}" -m handoff_cli list'
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    result = subprocess.run(["sh", "-c", script], capture_output=True, text=True, env=env)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "Usage error: the current directory no longer exists: cd to one that does"
    ]
