"""What a new user at a shell meets (issue 39): a mistyped command word, an ambiguous id."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

from handoff_cli.agents import get
from handoff_cli.llm.model import _retryable, explain

from .conftest import HEADER, Entries, run_cli, write_session
from .test_terminal import on_a_terminal


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        (("lsit",), "list"),
        (("shwo", "0199"), "show"),
        (("rotat",), "rotate"),
        (("expotr",), "export"),
    ],
)
def test_a_mistyped_command_word_is_named_with_the_one_meant(
    typed: tuple[str, ...], meant: str, tmp_path: Path
) -> None:
    result = run_cli(*typed, cwd=tmp_path)
    assert result.code == 2
    assert result.stderr == f"Usage error: no such command {typed[0]!r}; did you mean {meant!r}?\n"


def test_a_file_or_an_id_is_never_taken_for_a_mistyped_command(tmp_path: Path) -> None:
    (tmp_path / "lsit").write_text("not a session\n")
    as_file = run_cli("lsit", cwd=tmp_path)
    assert as_file.code == 4 and "no such command" not in as_file.stderr
    as_id = run_cli("c0ec", cwd=tmp_path)  # hex: an id's prefix, however close to "check"
    assert as_id.code == 4 and "no session with this id" in as_id.stderr


def test_help_is_a_command_word(tmp_path: Path) -> None:
    top = run_cli("help", cwd=tmp_path)
    assert top.code == 0 and top.stdout.startswith("Usage: handoff [OPTIONS] COMMAND")
    listing = run_cli("help", "list", cwd=tmp_path)
    assert listing.code == 0 and listing.stdout == run_cli("list", "--help").stdout
    unknown = run_cli("help", "lst", cwd=tmp_path)
    assert unknown.code == 2 and "no such command 'lst'" in unknown.stderr


def test_an_ambiguous_prefix_lists_its_candidates_one_a_line(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    for number in range(12):
        header = {
            **HEADER,
            "id": f"0199abcd-{number:04d}",
            "timestamp": f"2026-11-{number + 1:02d}T08:00:00.000Z",
        }
        entries = [
            {
                "type": "message",
                "id": "u1",
                "parentId": None,
                "timestamp": header["timestamp"],
                "message": {"role": "user", "content": f"Task number {number}", "timestamp": 1},
            }
        ]
        write_session(folder / f"{number}.jsonl", entries, header)
    result = run_cli("show", "0199", env={"HANDOFF_SESSIONS_DIR": str(folder)}, cwd=tmp_path)
    assert result.code == 2
    head, *lines = result.stderr.splitlines()
    assert head == "Usage error: session id prefix '0199' is ambiguous: 12 sessions start with it"
    assert len(lines) == 11 and lines[-1] == "  and 2 more"
    assert lines[0] == "  0199abcd-0011  2026-11-12 08:00  Task number 11"  # newest first
    assert all(len(line) <= 100 for line in lines)


@pytest.mark.zygote  # on a terminal, forked from the zygote (tests/conftest.py)
def test_the_conventions_of_a_terminal(tmp_path: Path) -> None:
    """``NO_COLOR`` takes away every escape (bold and dim too), ``CLICOLOR_FORCE`` styles a
    pipe, JSON is indented for a person and one line for a program, ``-m`` is ``--model``."""
    folder = tmp_path / "sessions"
    entries = Entries()
    entries.user("Fix the parser")
    entries.assistant("Fixed.")
    path = write_session(folder / "s.jsonl", entries.items, HEADER)
    code, styled = on_a_terminal("list", folder)
    assert code == 0 and b"\x1b[" in styled
    code, plain = on_a_terminal("list", folder, env={"NO_COLOR": "1"})
    assert code == 0 and b"\x1b" not in plain and b"Fix the parser" in plain
    forced = run_cli("list", folder, env={"CLICOLOR_FORCE": "1", "NO_COLOR": ""})
    assert forced.code == 0 and "\x1b[1m" in forced.stdout  # piped, and styled all the same
    code, shown = on_a_terminal("show", path, "--json")
    assert code == 0 and shown.startswith(b'{\r\n  "')  # indented (a pty ends lines in \r\n)
    piped = run_cli("show", path, "--json")
    assert piped.stdout.count("\n") == 1
    short = run_cli(path, "-m", "extractive", "--dry-run", "--json")
    assert short.code == 0 and short.json()["model"] == "handoff/extractive"


@pytest.mark.parametrize("model", ["anthropic/claude-sonnet-4-5", "openai/not-in-the-table"])
def test_a_rotation_with_nothing_to_do_never_imports_litellm(model: str, tmp_path: Path) -> None:
    """Nothing is due (too short, or not idle): nothing is asked, and LiteLLM's seconds of
    import are not paid (the tests' guard fails one that imports it unmarked)."""
    entries = Entries()
    entries.user("Fix the parser")
    entries.assistant("Fixed.")
    folder = tmp_path / "sessions"
    write_session(folder / "s.jsonl", entries.items, HEADER)
    for due in (("--over-tokens", "100000"), ("--idle", "1000d")):
        result = run_cli("rotate", folder, "--model", model, *due)
        assert result.code == 0, result.stderr
        assert result.stdout == "" and "rotating 0 sessions" in result.stderr
    assert "litellm" not in sys.modules


def _sessions(folder: Path, count: int) -> list[Path]:
    """Sessions of two projects, the older ones written to days ago, long titles."""
    made = []
    for number in range(count):
        entries = Entries()
        entries.user(f"Task {number}: " + "make the parser accept every line ending " * 5)
        entries.assistant("Done.")
        cwd = f"/home/dev/projects/{'a' * 50 if number % 2 else 'b'}"
        header = {**HEADER, "id": f"0199{number:04d}-0000-7000-8000-000000000000", "cwd": cwd}
        header["timestamp"] = f"2026-11-{number + 1:02d}T08:00:00.000Z"
        path = write_session(folder / f"{number}.jsonl", entries.items, header)
        os.utime(path, (time.time() - 86400 * (count - number),) * 2)
        made.append(path)
    return made


@pytest.mark.zygote  # on a terminal, forked from the zygote (tests/conftest.py)
def test_list_on_a_terminal_has_headers_and_fits_its_width(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    _sessions(folder, 4)
    code, printed = on_a_terminal("list", folder, env={"NO_COLOR": "1", "COLUMNS": "100"})
    assert code == 0
    lines = printed.decode().replace("\r\n", "\n").splitlines()
    assert lines[0].split() == ["ID", "CREATED", "SIZE", "AGENT", "CWD", "TITLE"]
    assert len(lines) == 5 and all(len(line) <= 100 for line in lines)
    assert all(line.endswith("…") for line in lines[1:])  # cut, not wrapped
    assert len({line.index("Task") for line in lines[1:]}) == 1  # one column for the titles
    piped = run_cli("list", folder)  # a pipe gets every line whole, and no header
    assert len(piped.stdout.splitlines()) == 4 and "TITLE" not in piped.stdout


def test_list_limit_and_since(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    _sessions(folder, 4)

    def ids(*args: str) -> list[str]:
        return [row["id"][:8] for row in run_cli("list", folder, "--json", *args).json()]

    assert ids("-n", "2") == ["01990003", "01990002"]
    assert ids("--since", "36h") == ["01990003"]
    assert ids("--limit", "1", "--since", "3d") == ["01990003"]
    bad = run_cli("list", folder, "--since", "soon")
    assert bad.code == 2 and "--since" in bad.stderr


def test_list_says_why_it_shows_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    _sessions(folder, 2)
    here = run_cli("list", folder, "--here", cwd=tmp_path)
    assert here.code == 0 and here.stdout == ""
    assert here.stderr == f"no sessions of {tmp_path} among the 2 under {folder}\n"
    elsewhere = run_cli("list", folder, "--cwd", "/nonexistent", "--since", "1h")
    assert "no sessions of /nonexistent written to since 1h among the 2" in elsewhere.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    assert run_cli("list", empty).stderr == f"no sessions under {empty}\n"


def test_a_dry_run_tells_a_person_what_it_would_do(tmp_path: Path) -> None:
    """A summary, not the request (``--json`` has it whole): the writer, the requests, the cost,
    where the new session would go; the built-in writer's document itself."""
    folder = tmp_path / "sessions"
    (path,) = _sessions(folder, 1)
    model = run_cli(path, "--dry-run", "-m", "openai/gpt-4o", "--api-key", "k")
    assert model.code == 0, model.stderr
    rows = dict(line.split(None, 1) for line in model.stdout.splitlines()[:-1])
    assert rows["writer"] == "openai/gpt-4o" and rows["window"] == "128,000 tokens"
    assert rows["requests"].startswith("1 (single): ") and rows["cost"].endswith("(estimated)")
    assert rows["writes"] == f"a new session in {folder}"
    assert len(model.stdout) < 1000 and "Task 0" not in model.stdout  # no request printed
    built_in = run_cli(path, "--dry-run", "-m", "extractive")
    assert "## Goal" in built_in.stdout and "Task 0" in built_in.stdout  # what it would write
    assert sorted(p.name for p in folder.iterdir()) == [path.name]  # nothing written
    whole = run_cli(path, "--dry-run", "--json", "-m", "openai/gpt-4o", "--api-key", "k").json()
    assert "Task 0" in json.dumps(whole["messages"])


@pytest.mark.litellm  # the model is asked in this process
def test_a_server_whose_name_does_not_resolve_is_said_so_at_once(tmp_path: Path) -> None:
    """``.invalid`` never resolves (RFC 6761): one line naming the host, no retries, exit 1."""
    (path,) = _sessions(tmp_path / "sessions", 1)
    base = "http://handoff-test.invalid/v1"
    result = run_cli(path, "-m", "openai/gpt-4o-mini", "--api-key", "k", "--api-base", base)
    assert result.code == 1
    assert result.stderr.splitlines()[-1] == (
        "Handoff failed: openai/gpt-4o-mini: cannot reach handoff-test.invalid (name not resolved)"
    )
    assert "trying again" not in result.stderr
    litellm = sys.modules["litellm"]
    said = "Cannot connect to host api.anthropic.com:443 ssl:<ssl.SSLContext object at 0x7f> "
    error = litellm.InternalServerError(
        message=said + "[Name or service not known]", llm_provider="anthropic", model="m"
    )  # as LiteLLM's own client for Anthropic reports it
    assert explain(error, 60) == "cannot reach api.anthropic.com (name not resolved)"
    assert not _retryable(error)


def test_a_rotation_says_one_cause_once_naming_what_it_is_about(tmp_path: Path) -> None:
    """Three models without their keys: one note, listing the three, then the sessions."""
    folder = tmp_path / "sessions"
    models = [
        ("anthropic", "claude-sonnet-4-5"),
        ("openai", "gpt-4o"),
        ("mistral", "mistral-large-latest"),
    ]
    for number, (provider, model) in enumerate(models):
        entries = Entries()
        entries.add("model_change", provider=provider, modelId=model)
        entries.user("Fix the parser " * 30)
        entries.assistant("Fixed. " * 30, provider=provider, model=model)
        header = {**HEADER, "id": f"0199{number:04d}-0000-7000-8000-000000000000"}
        path = write_session(folder / f"{number}.jsonl", entries.items, header)
        os.utime(path, (time.time() - 3600,) * 2)
    result = run_cli("rotate", folder, "--over-tokens", "1", "--dry-run")
    assert result.code == 0, result.stderr
    notes = [line for line in result.stderr.splitlines() if line.startswith("note: no key")]
    assert len(notes) == 1, result.stderr
    named = ("anthropic/claude-sonnet-4-5 (ANTHROPIC_API_KEY)", "openai/gpt-4o (OPENAI_API_KEY)")
    assert all(each in notes[0] for each in named)
    assert "mistral/mistral-large-latest (MISTRAL_API_KEY)" in notes[0]
    assert notes[0].endswith("(3 sessions: 01990000, 01990001, 01990002)")


def test_the_resume_line_starts_the_agent_in_the_sessions_folder(tmp_path: Path) -> None:
    """Claude Code 2.1.332 finds a session by its id only from its folder, and Codex 0.171.0
    works where it is started: their line starts them there. oh-my-pi and pi work in the
    session's folder wherever they are started (``oracles/resume_folder.py``): theirs does not."""
    project = tmp_path / "my project"
    project.mkdir()
    entries = Entries()
    entries.user("Fix the parser")
    entries.assistant("Fixed.")
    header = {**HEADER, "cwd": str(project)}
    env = {"HOME": str(tmp_path / "home")}
    for agent in ("claude", "codex"):
        path = write_session(tmp_path / f"sessions/{agent}.jsonl", entries.items, header)
        done = run_cli(path, "-m", "extractive", "--to", agent, "--json", env=env, cwd=tmp_path)
        assert done.code == 0, done.stderr
        resume = done.json()["resume_command"]
        assert done.json()["cwd"] == str(project)
        assert done.stderr.splitlines()[-1].endswith(f": cd '{project}' && {resume}")
        here = run_cli(path, "-m", "extractive", "--to", agent, "--no-record", env=env, cwd=project)
        assert here.stderr.splitlines()[-1].split(": ", 1)[1].startswith(agent)  # there: no cd
    own = write_session(tmp_path / "sessions/omp.jsonl", entries.items, header)
    line = run_cli(own, "-m", "extractive", env=env, cwd=tmp_path).stderr.splitlines()[-1]
    assert line.startswith("continue in oh-my-pi: omp --session ")
    moved = write_session(
        tmp_path / "other/s.jsonl", entries.items, {**HEADER, "cwd": "/nowhere/x"}
    )
    gone = run_cli(moved, "-m", "extractive", "--to", "claude", env=env, cwd=tmp_path)
    assert " cd " not in gone.stderr.splitlines()[-1]  # a folder not on this machine


def test_each_agent_is_started_in_the_folder_it_works_in_as_the_real_agents_showed() -> None:
    """``oracles/resume_folder.py`` resumed a session from an unrelated folder in each real
    agent: the folder its request names is the session's for oh-my-pi 18.2.3, 18.3.4 and pi
    1.6.0; Claude Code 2.1.332 found no session, and Codex 0.171.0 worked where it was started
    (both in the session's folder once started there, as our line starts them)."""
    rows = json.loads((Path(__file__).parent / "fixtures/resume-folder.json").read_text())
    ours = {"Claude Code": "claude", "Codex": "codex", "omp": "omp", "pi": "pi"}
    seen = set()
    for row in rows:
        agent = next(key for name, key in ours.items() if row["agent"].startswith(name))
        if row["run_from"] != row["session_cwd"]:
            assert get(agent).works_in_session_folder == row["works_in_session_folder"], row
            seen.add(agent)
        else:  # started where our line starts it
            assert row["works_in_session_folder"] and row["code"] == 0, row
    assert seen == {"claude", "codex", "omp", "pi"}
