"""Rotation: which sessions are chosen, shards, exactly once, budgets, output, cancel."""

from __future__ import annotations

import collections
import os
import resource
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from handoff_cli.agents import OMP, PI, build_context
from handoff_cli.agents.choice import choose_agent
from handoff_cli.agents.places import Root
from handoff_cli.catalog import catalog
from handoff_cli.cli.app import run as cli_run
from handoff_cli.document import SECTIONS, is_handoff_prompt
from handoff_cli.errors import HandedOffError
from handoff_cli.handoff import pipeline
from handoff_cli.handoff import rotate as rotation
from handoff_cli.handoff.pipeline import Target, handoff
from handoff_cli.handoff.report import Reporter
from handoff_cli.handoff.rotate import RotateOptions, in_shard, select
from handoff_cli.llm import model as model_module
from handoff_cli.options import AUTO, Options, parse_duration, parse_shard
from handoff_cli.sessions.session import load_session
from handoff_cli.text import text_of

from .conftest import FAKE_MODEL, HEADER, Entries, run_cli, write_session
from .fakellm import FakeLLMServer, Reply
from .helpers import zygote
from .helpers.zygote import fork
from .test_catalog import codex_folder
from .test_limits import claude_session

DOCUMENT = "\n\n".join(f"## {name}\n- {name.lower()} facts" for name in SECTIONS)
HOUR_AGO = time.time() - 3600


def make_session(folder: Path, name: str, turns: int, idle: bool = True) -> Path:
    """A session of ``turns`` exchanges of some 400 tokens each."""
    entries = Entries()
    for turn in range(turns):
        entries.user(f"step {turn}: " + "fix the parser and run the tests " * 40)
        entries.assistant(f"done with step {turn}: " + "the tests pass now " * 40)
    number = abs(hash(name)) % 10**12
    header = {**HEADER, "id": f"0199aaaa-0000-7000-8000-{number:012d}"}
    path = write_session(folder / f"{name}.jsonl", entries.items, header)
    if idle:
        os.utime(path, (HOUR_AGO, HOUR_AGO))
    return path


def make_claude_session(folder: Path, name: str) -> Path:
    """A Claude Code session of some 40,000 tokens (``test_limits.CLAUDE_SHAPE``), idle."""
    folder.mkdir(parents=True, exist_ok=True)
    path = claude_session(folder / f"{name}.jsonl", 0.02)
    os.utime(path, (HOUR_AGO, HOUR_AGO))
    return path


def rotate_options(**fields: Any) -> RotateOptions:
    return RotateOptions(**{"handoff": Options(model="extractive"), "over_tokens": 2000, **fields})


def chosen(folder: Path, **fields: Any) -> set[str]:
    found = catalog(folder)
    candidates, unreadable = select(found, rotate_options(**fields), time.time(), Reporter())
    return {c.summary.path.stem for c in candidates} | {f"!{o.path.stem}" for o in unreadable}


def test_what_is_chosen(tmp_path: Path) -> None:
    make_session(tmp_path, "long-idle", turns=12)
    make_session(tmp_path, "short-idle", turns=2)
    make_session(tmp_path, "long-active", turns=12, idle=False)  # an agent may be writing it
    done = make_session(tmp_path, "long-handed-off", turns=12)
    handoff(done, Options(model="extractive"))  # the exchange at its leaf
    os.utime(done, (HOUR_AGO, HOUR_AGO))
    elsewhere = make_session(tmp_path, "long-handed-off-elsewhere", turns=12)
    handoff(elsewhere, Options(model="extractive", record=False))  # a child, made after
    resumed = make_session(tmp_path, "long-resumed", turns=12)
    handoff(resumed, Options(model="extractive", record=False))
    later = time.time() + 60  # written to after its handoff: something new to hand off
    os.utime(resumed, (later, later))
    entries = Entries()
    entries.user("a", parent="e0000002")
    entries.user("b")
    write_session(tmp_path / "broken.jsonl", entries.items)  # a parentId cycle
    os.utime(tmp_path / "broken.jsonl", (HOUR_AGO, HOUR_AGO))
    assert chosen(tmp_path, idle_s=600) == {"long-idle", "!broken"}
    assert chosen(tmp_path, idle_s=600, over_tokens=100) == {"long-idle", "short-idle", "!broken"}
    assert "long-resumed" in chosen(tmp_path, idle_s=-120)


def test_the_default_threshold_is_most_of_the_window(tmp_path: Path) -> None:
    make_session(tmp_path, "long", turns=20)  # about 10,000 tokens
    assert chosen(tmp_path, over_tokens=None) == set()  # the built-in writer: 128,000 assumed
    options = Options(model="openai/gpt-4o", api_key="k", context_window=10_000)
    assert chosen(tmp_path, over_tokens=None, handoff=options) == {"long"}  # over 8,000


def test_shards_cover_every_session_once(tmp_path: Path) -> None:
    for number in range(12):
        make_session(tmp_path, f"s{number}", turns=6)
    whole = chosen(tmp_path)
    halves = [chosen(tmp_path, shard=(k, 2)) for k in (1, 2)]
    thirds = [chosen(tmp_path, shard=(k, 3)) for k in (1, 2, 3)]
    for parts in (halves, thirds):
        assert set().union(*parts) == whole and sum(map(len, parts)) == len(whole)
    assert all(in_shard("abc", None) for _ in range(2))


@pytest.mark.parametrize(
    ("text", "seconds"), [("90", 90), ("30s", 30), ("10m", 600), ("2h", 7200), ("1d", 86400)]
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


def test_bad_durations_and_shards() -> None:
    for text in ("", "10x", "m"):
        with pytest.raises(ValueError):
            parse_duration(text)
    assert parse_shard("2/4") == (2, 4)
    for text in ("0/4", "5/4", "1-4", "a/b"):
        with pytest.raises(ValueError):
            parse_shard(text)


# --- the command, over real HTTP ----------------------------------------------------------------


def rotate_args(folder: Path, server: FakeLLMServer, *extra: str) -> list[str]:
    return [
        "rotate",
        str(folder),
        "--over-tokens",
        "2000",
        "--model",
        FAKE_MODEL,
        "--api-base",
        server.base_url,
        "--retries",
        "0",
        *extra,
    ]


def exchanges(path: Path, lines_before: int) -> int:
    """How many exchanges were recorded: each is whole lines, a handoff prompt first (a
    message entry of the pi family's, a user record of Claude Code's)."""
    added = [orjson.loads(line) for line in path.read_bytes().splitlines()[lines_before:]]
    asked = [
        e for e in added if e.get("type") in ("message", "user") and e["message"]["role"] == "user"
    ]
    assert all(is_handoff_prompt(text_of(e["message"]["content"])) for e in asked)
    return len(asked)


def new_sessions(folder: Path, sources: list[Path]) -> list[Path]:
    return [p for p in folder.glob("*.jsonl") if p not in sources]


@pytest.mark.litellm
def test_rotation_hands_off_each_once_concurrently(
    tmp_path: Path, llm_server: FakeLLMServer
) -> None:
    sources = [make_session(tmp_path, f"s{n}", turns=8) for n in range(6)]
    lines = {p: len(p.read_bytes().splitlines()) for p in sources}
    llm_server.default = Reply(DOCUMENT, chunks=5, delay=0.1)
    result = run_cli(*rotate_args(tmp_path, llm_server, "--jobs", "3", "--json"))
    assert result.code == 0, result.stderr
    results = [orjson.loads(line) for line in result.stdout.splitlines()]
    assert {r["status"] for r in results} == {"handed_off"} and len(results) == 6
    assert set(results[0]) == {
        "id",
        "path",
        "status",
        "reason",
        "new_id",
        "new_path",
        "entry_id",
        "tokens",
        "cost_usd",
        "duration_s",
        "score",
        "missing_probes",
        "resume_command",
    }
    # What opens each new session, as a handoff's --json says it (oh-my-pi's, outside its own
    # folders by its path).
    assert all(
        r["resume_command"] == shlex.join(["omp", "--session", r["new_path"]]) for r in results
    )
    assert 2 <= llm_server.most_in_flight <= 3  # concurrent, and never more than --jobs
    assert all(exchanges(p, lines[p]) == 1 for p in sources)
    assert len(new_sessions(tmp_path, sources)) == 6
    again = run_cli(*rotate_args(tmp_path, llm_server))
    assert (again.code, again.stdout) == (0, "") and "0 handed off" in again.stderr  # not twice


@pytest.mark.zygote  # forks the program from the zygote (tests/conftest.py)
def test_two_runs_at_once_hand_off_each_session_once(
    tmp_path: Path, llm_server: FakeLLMServer
) -> None:
    sources = [make_session(tmp_path, f"s{n}", turns=8) for n in range(4)]
    lines = {p: len(p.read_bytes().splitlines()) for p in sources}
    llm_server.default = Reply(DOCUMENT, chunks=5, delay=0.1)
    # Two processes (forked from the zygote: their locks race, not their start-up): each takes
    # the sessions' locks against the other.
    args = rotate_args(tmp_path, llm_server, "--jobs", "4", "--json")
    runs = [fork(args, tmp_path.parent / f"{tmp_path.name}-run-{n}") for n in range(2)]
    results = []
    for run in runs:
        assert run.wait(timeout=120) == 0, run.stderr
        results += [orjson.loads(line) for line in run.stdout.splitlines()]
    handed = [r["id"] for r in results if r["status"] == "handed_off"]
    assert sorted(handed) == sorted(set(handed)) and len(handed) == 4
    assert all(exchanges(p, lines[p]) == 1 for p in sources)
    assert len(new_sessions(tmp_path, sources)) == 4  # the late ones took theirs back
    assert not list(tmp_path.glob(".*.tmp"))


@pytest.mark.zygote  # forks the program from the zygote (tests/conftest.py)
def test_two_rotations_of_claude_code_sessions_hand_each_off_once(
    tmp_path: Path, llm_server: FakeLLMServer
) -> None:
    """As for the pi family's: each session handed off by one run, its new session (a Claude
    Code file naming it in its lineage record) the only one, the other run skipping it."""
    sources = [make_claude_session(tmp_path, f"c{n}") for n in range(4)]
    lines = {p: len(p.read_bytes().splitlines()) for p in sources}
    llm_server.default = Reply(DOCUMENT, chunks=5, delay=0.1)
    args = rotate_args(tmp_path, llm_server, "--jobs", "4", "--json")
    runs = [fork(args, tmp_path.parent / f"{tmp_path.name}-run-{n}") for n in range(2)]
    rows = []
    for run in runs:
        assert run.wait(timeout=120) == 0, run.stderr
        rows += [orjson.loads(line) for line in run.stdout.splitlines()]
    handed = [r["id"] for r in rows if r["status"] == "handed_off"]
    assert sorted(handed) == sorted(set(handed)) and len(handed) == 4
    assert {r["reason"] for r in rows if r["status"] != "handed_off"} <= {
        "handed off by another run"
    }
    assert all(exchanges(p, lines[p]) == 1 for p in sources)
    made = new_sessions(tmp_path, sources)
    assert len(made) == 4 and all(b'"type":"handoff-cli"' in p.read_bytes() for p in made)


def test_a_dry_run_estimates_and_writes_nothing(tmp_path: Path, llm_server: FakeLLMServer) -> None:
    sources = [make_session(tmp_path, f"s{n}", turns=8) for n in range(3)]
    before = {p: p.read_bytes() for p in sources}
    result = run_cli(*rotate_args(tmp_path, llm_server, "--dry-run", "--json"))
    assert result.code == 0, result.stderr
    planned = result.json()
    assert len(planned["sessions"]) == 3 and planned["total"]["sessions"] == 3
    assert all(s["strategy"] == "single" and s["requests"] == 1 for s in planned["sessions"])
    assert planned["total"]["input_tokens"] == sum(s["input_tokens"] for s in planned["sessions"])
    assert llm_server.requests == [] and new_sessions(tmp_path, sources) == []
    assert all(p.read_bytes() == data for p, data in before.items())


def test_over_budget_nothing_starts(tmp_path: Path, llm_server: FakeLLMServer) -> None:
    sources = [make_session(tmp_path, f"s{n}", turns=8) for n in range(2)]
    process = run_cli(
        "rotate",
        tmp_path,
        "--over-tokens",
        "2000",
        "--model",
        "openai/gpt-4o",  # priced in LiteLLM's table
        "--api-base",
        llm_server.base_url,
        "--max-cost",
        "0.001",
    )
    assert process.code == 6, process.stderr
    assert process.stderr.strip().splitlines()[-1].startswith("Over budget: the estimate is $")
    assert llm_server.requests == [] and new_sessions(tmp_path, sources) == []


@pytest.mark.zygote  # forks the program from the zygote (tests/conftest.py)
def test_ctrl_c_keeps_what_finished_and_writes_nothing_else(
    tmp_path: Path, llm_server: FakeLLMServer
) -> None:
    sources = [make_session(tmp_path, f"s{n}", turns=8) for n in range(6)]
    lines = {p: len(p.read_bytes().splitlines()) for p in sources}
    llm_server.script(Reply(DOCUMENT))  # one quick answer, then slow ones
    llm_server.default = Reply(DOCUMENT, chunks=40, delay=0.5)
    # A process, for its SIGINT: forked from the zygote, the signal coming long after start-up.
    zygote.ready()
    args = rotate_args(tmp_path, llm_server, "--jobs", "2")
    process = fork(args, tmp_path.with_name(f"{tmp_path.name}-run"))
    deadline = time.monotonic() + 60
    while "\n" not in process.stdout and time.monotonic() < deadline:  # a handoff finished
        time.sleep(0.05)
    time.sleep(0.5)  # others are in flight
    process.send_signal(signal.SIGINT)
    sent = time.monotonic()
    code = process.wait(timeout=60)
    assert code == 130, process.stderr
    assert time.monotonic() - sent < 1.5
    finished = [line for line in process.stdout.splitlines() if line.strip()]
    assert len(finished) >= 1 and "cancelled" in process.stderr
    recorded = sum(exchanges(p, lines[p]) for p in sources)
    assert recorded == len(finished) == len(new_sessions(tmp_path, sources))
    assert not list(tmp_path.glob(".*.tmp"))


def test_each_session_is_measured_by_its_agents_rules(tmp_path: Path) -> None:
    # A long failed turn: oh-my-pi leaves it out of the context, pi sends it.
    entries = Entries()
    entries.user("fix the parser")
    entries.assistant("the tests pass now " * 800, stop="error")
    entries.user("try again")
    entries.assistant("done")
    for folder in ("unmarked", "pi-folder"):
        write_session(tmp_path / folder / "s.jsonl", entries.items)
        os.utime(tmp_path / folder / "s.jsonl", (HOUR_AGO, HOUR_AGO))

    def measured(root: Root, agent: str = AUTO) -> set[str]:
        options = rotate_options(handoff=Options(model="extractive", agent=agent))
        candidates, _ = select(catalog([root]), options, time.time(), Reporter())
        return {c.summary.path.parent.name for c in candidates}

    assert measured(Root(tmp_path / "unmarked")) == set()  # nothing names pi: omp's rules
    assert measured(Root(tmp_path / "pi-folder", PI)) == {"pi-folder"}  # pi's folder
    assert measured(Root(tmp_path / "unmarked"), PI) == {"unmarked"}  # --agent pi
    assert measured(Root(tmp_path / "pi-folder", PI), OMP) == set()  # --agent omp


@pytest.mark.litellm
def test_each_chosen_session_is_read_and_prepared_once(
    tmp_path: Path,
    llm_server: FakeLLMServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """With --max-cost, a session is chosen, estimated and handed off from one reading of it:
    loaded once, its agent chosen once, its context built once; the model decided once for
    the whole run."""
    sources = [make_session(tmp_path, f"s{n}", turns=8) for n in range(3)]
    lines = {p: len(p.read_bytes().splitlines()) for p in sources}
    calls: collections.Counter[str] = collections.Counter()

    def counted(name: str, real: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            calls[name] += 1
            return real(*args, **kwargs)

        return call

    # Wherever each step is looked up (the pipeline, and rotation itself if it reads).
    steps = {
        "load_session": load_session,
        "choose_agent": choose_agent,
        "build_context": build_context,
    }
    for module in (pipeline, rotation):
        for name, real in steps.items():
            monkeypatch.setattr(module, name, counted(name, real), raising=False)
    monkeypatch.setattr(
        model_module, "_token_counter", counted("resolve_model", model_module._token_counter)
    )
    llm_server.default = Reply(DOCUMENT)
    gpt = ("--model", "openai/gpt-4o", "--api-base", llm_server.base_url)  # priced
    code = cli_run(["rotate", str(tmp_path), *gpt, "--over-tokens", "2000", "--max-cost", "5"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert len(out.splitlines()) == 3 and "3 handed off" in err
    assert all(exchanges(p, lines[p]) == 1 for p in sources)
    assert dict(calls) == {
        "load_session": 3,
        "choose_agent": 3,
        "build_context": 3,
        "resolve_model": 1,
    }


def test_the_sessions_held_hold_no_open_file(tmp_path: Path) -> None:
    """Each chosen session is read once and held until its handoff, its file closed meanwhile:
    a rotation of more sessions than the process may have files open hands off every one."""
    sources = [make_session(tmp_path, f"s{n:02d}", turns=3) for n in range(48)]
    _, most = resource.getrlimit(resource.RLIMIT_NOFILE)
    command = [sys.executable, "-m", "handoff_cli", "rotate", str(tmp_path), "--model"]
    process = subprocess.run(
        [*command, "extractive", "--over-tokens", "1", "--max-cost", "1", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (32, most)),
    )
    assert process.returncode == 0, process.stderr
    rows = [orjson.loads(line) for line in process.stdout.splitlines()]
    assert [r["status"] for r in rows] == ["handed_off"] * len(sources), rows[:2]


def test_a_rotation_writes_only_inside_its_folders(tmp_path: Path) -> None:
    """A link in the folder rotated to a session elsewhere is never written through (its
    exchange would be appended there, its new session made there): it is skipped with a note
    naming it, the other folder left as it was. A link to a session inside is that session,
    handed off once, whichever of its names was found first."""
    rotated, elsewhere = tmp_path / "rotated", tmp_path / "elsewhere"
    inside = make_session(rotated, "inside", turns=8)
    outside = make_session(elsewhere, "outside", turns=8)
    (rotated / "out-link.jsonl").symlink_to(outside)
    (rotated / "in-link.jsonl").symlink_to(inside)
    before, lines = outside.read_bytes(), len(inside.read_bytes().splitlines())
    result = run_cli("rotate", rotated, "--model", "extractive", "--over-tokens", "1", "--json")
    assert result.code == 0, result.stderr
    assert [orjson.loads(row)["status"] for row in result.stdout.splitlines()] == ["handed_off"]
    link, to = rotated / "out-link.jsonl", outside.resolve()
    assert f"note: {link} leads outside the folders rotated, to {to}: skipped" in result.stderr
    assert outside.read_bytes() == before and sorted(elsewhere.iterdir()) == [outside]
    assert exchanges(inside, lines) == 1
    made = [p for p in rotated.iterdir() if not p.is_symlink() and p != inside]
    assert len(made) == 1 and load_session(made[0]).header["parentSession"] == str(inside.resolve())


# --- exactly once, decided under the lock --------------------------------------------------------


def rotate_builtin(folder: Path, *extra: str) -> subprocess.Popen[str]:
    """``rotate`` with the built-in writer: as fast as a handoff gets, the hardest race (in a
    process of its own: the race is between processes, each with its locks)."""
    command = [sys.executable, "-m", "handoff_cli", "rotate", str(folder), "--model", "extractive"]
    return subprocess.Popen(
        [*command, "--over-tokens", "1", "--json", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def overlapping_rotations(folder: Path, sessions: int, jobs: tuple[str, str]) -> None:
    """Two rotations started together over ``sessions`` sessions hand each off exactly once;
    the later one reports the rest skipped, and both exit 0."""
    sources = [make_session(folder, f"s{n:03d}", turns=3) for n in range(sessions)]
    lines = {p: len(p.read_bytes().splitlines()) for p in sources}
    runs = [rotate_builtin(folder, "--jobs", count) for count in jobs]
    rows = []
    for run in runs:
        out, err = run.communicate(timeout=300)
        assert run.returncode == 0, err
        rows += [orjson.loads(line) for line in out.splitlines()]
    handed = sorted(r["id"] for r in rows if r["status"] == "handed_off")
    assert len(handed) == len(set(handed)) == sessions
    others = [r for r in rows if r["status"] != "handed_off"]
    assert all(r["status"] == "skipped" for r in others), others
    assert {r["reason"] for r in others} <= {"handed off by another run"}
    assert all(exchanges(p, lines[p]) == 1 for p in sources)
    assert len(new_sessions(folder, sources)) == sessions  # the late ones took theirs back
    assert not list(folder.glob(".*.tmp"))


@pytest.mark.parametrize("jobs", [("1", "5"), ("5", "1"), ("1", "1")])
def test_overlapping_rotations_hand_each_session_off_once(
    tmp_path: Path, jobs: tuple[str, str]
) -> None:
    overlapping_rotations(tmp_path, 24, jobs)


@pytest.mark.slow
def test_overlapping_rotations_at_size(tmp_path: Path) -> None:
    for pair in range(10):
        jobs = (("1", "5"), ("5", "1"), ("3", "3"))[pair % 3]
        overlapping_rotations(tmp_path / f"pair{pair}", 100, jobs)


def test_the_later_of_two_in_place_rotations_skips(tmp_path: Path) -> None:
    sources = [make_session(tmp_path, f"s{n}", turns=60) for n in range(6)]
    runs = [rotate_builtin(tmp_path, "--in-place", "--jobs", count) for count in ("1", "4")]
    rows = []
    for run in runs:
        out, err = run.communicate(timeout=300)
        assert run.returncode == 0, err
        rows += [orjson.loads(line) for line in out.splitlines()]
    handed = [r["id"] for r in rows if r["status"] == "handed_off"]
    assert len(handed) == len(set(handed)) == len(sources)
    assert {r["reason"] for r in rows if r["status"] != "handed_off"} <= {
        "handed off by another run"
    }
    for path in sources:
        types = [orjson.loads(line)["type"] for line in path.read_bytes().splitlines()]
        assert types.count("compaction") == 1


@pytest.mark.litellm
@pytest.mark.parametrize("agent", ["omp", "claude", "codex"])
def test_a_handoff_newer_than_the_last_entry_counts_as_done(
    tmp_path: Path, llm_server: FakeLLMServer, agent: str
) -> None:
    """Another run wrote its new session and recorded nothing (``--no-record``, or killed
    between its writes) while ours was asking the model: the session is handed off, and a
    rotation deciding under the lock leaves it alone. Its new session names it in a header,
    or (Claude Code's, Codex's) in our lineage line; a new rollout is in today's folder, not
    the old one's."""
    if agent == "claude":
        path = make_claude_session(tmp_path, "c8e5e286-ae88-42dd-9175-7a7482e56fde")
    elif agent == "codex":
        (path,) = codex_folder(tmp_path, sessions=1, megabytes=0.1, day="2025/01/31")
    else:
        path = make_session(tmp_path, "s", turns=8)
    before = path.read_bytes()

    def the_other_run(request: Any) -> Reply:
        handoff(path, Options(model="extractive", record=False))
        return Reply(DOCUMENT)

    llm_server.script(the_other_run)
    options = Options(model="openai/gpt-4o", api_key="k", api_base=llm_server.base_url)
    with pytest.raises(HandedOffError):
        handoff(path, options, target=Target(exclusive=True))
    assert path.read_bytes() == before
    made = [p for p in tmp_path.rglob("*.jsonl") if p != path]
    assert len(made) == 1  # only the other run's


# --- what cannot be handed off, and what is skipped ---------------------------------------------


def test_a_session_holding_only_a_document_is_not_chosen(tmp_path: Path) -> None:
    source = make_session(tmp_path, "s", turns=8)
    new = Path(handoff(source, Options(model="extractive")).path)  # one custom_message
    for path in (source, new):
        os.utime(path, (HOUR_AGO, HOUR_AGO))
    make_session(tmp_path, "t", turns=8)
    dry = run_cli("rotate", tmp_path, "--dry-run", "--json", "--idle", "1s", "--over-tokens", "1")
    assert dry.code == 0, dry.stderr
    planned = dry.json()
    assert [s["path"] for s in planned["sessions"]] == [str(tmp_path / "t.jsonl")]
    assert planned["skipped"] == []
    real = run_cli("rotate", tmp_path, "--json", "--idle", "1s", "--over-tokens", "1")
    assert real.code == 0, real.stderr
    assert [orjson.loads(line)["status"] for line in real.stdout.splitlines()] == ["handed_off"]


def test_skips_are_rows_and_counted(tmp_path: Path) -> None:
    make_session(tmp_path, "good", turns=8)
    entries = Entries()
    entries.user("a", parent="e0000002")
    entries.user("b")
    write_session(tmp_path / "broken.jsonl", entries.items)  # a parentId cycle
    os.utime(tmp_path / "broken.jsonl", (HOUR_AGO, HOUR_AGO))
    result = run_cli("rotate", tmp_path, "--model", "extractive", "--over-tokens", "1", "--json")
    assert result.code == 0, result.stderr
    rows = {Path(row["path"]).stem: row for row in map(orjson.loads, result.stdout.splitlines())}
    assert rows["good"]["status"] == "handed_off"
    assert rows["broken"]["status"] == "skipped" and "cycle" in rows["broken"]["reason"]
    assert "1 handed off, 1 skipped, 0 failed" in result.stderr
    dry = run_cli("rotate", tmp_path, "--dry-run", "--json", "--over-tokens", "1")
    assert [Path(s["path"]).stem for s in dry.json()["skipped"]] == ["broken"]


# --- a cap that can be checked ------------------------------------------------------------------


@pytest.mark.litellm
def test_a_cap_without_a_price_refuses_to_start(tmp_path: Path, llm_server: FakeLLMServer) -> None:
    sources = [make_session(tmp_path, f"s{n}", turns=8) for n in range(2)]
    unpriced = ("--model", "openai/no-such-model-anywhere", "--api-base", llm_server.base_url)
    cap = ("--over-tokens", "1", "--max-cost", "0.0001")
    refused = run_cli("rotate", tmp_path, *unpriced, *cap)
    assert refused.code == 6
    assert refused.stderr.strip().splitlines()[-1] == (
        "--max-cost cannot be checked: no price is known for openai/no-such-model-anywhere; "
        "give --price-in and --price-out (USD per million tokens); nothing started"
    )
    assert llm_server.requests == [] and new_sessions(tmp_path, sources) == []
    priced = ("--price-in", "1", "--price-out", "2")
    dry = run_cli("rotate", tmp_path, *unpriced, *cap, *priced, "--dry-run", "--json")
    assert dry.code == 6 and "Over budget: the estimate is $" in dry.stderr  # a price: checked
    plan = dry.json()["sessions"][0]
    assert plan["cost_usd"] == pytest.approx(plan["input_tokens"] / 1e6 + 2 * 2000 / 1e6)
    llm_server.default = Reply(DOCUMENT)
    spent = run_cli("rotate", tmp_path, *unpriced, "--over-tokens", "1", *priced, "--json")
    assert spent.code == 0, spent.stderr
    rows = [orjson.loads(line) for line in spent.stdout.splitlines()]
    assert all(r["status"] == "handed_off" and r["cost_usd"] > 0 for r in rows)
    one = run_cli("rotate", tmp_path, "--price-in", "1", "--dry-run")
    assert one.code == 2 and "--price-in and --price-out go together" in one.stderr


@pytest.mark.litellm
def test_a_bug_in_one_handoff_is_that_sessions_failure(
    tmp_path: Path,
    llm_server: FakeLLMServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """An exception no rule foresaw, in one session's handoff: that session is reported
    failed, in one line, and the others are handed off; no outcome is lost."""
    sources = [make_session(tmp_path, f"s{n}", turns=8) for n in range(3)]
    broken = load_session(sources[1]).header["id"]
    real = pipeline.ahandoff_request

    async def flaky(request: Any, *args: Any, **kwargs: Any) -> Any:
        if request.source.session.header["id"] == broken:
            raise RuntimeError("a bug")
        return await real(request, *args, **kwargs)

    monkeypatch.setattr(rotation, "ahandoff_request", flaky)
    llm_server.default = Reply(DOCUMENT)
    code = cli_run([*rotate_args(tmp_path, llm_server), "--json"])
    out, err = capsys.readouterr()
    rows = {row["id"]: row for row in map(orjson.loads, out.splitlines())}
    assert code == 1, err
    assert len(rows) == 3
    assert rows[broken]["status"] == "failed"
    assert rows[broken]["reason"] == "unexpected error: RuntimeError: a bug"
    assert sorted(row["status"] for row in rows.values()) == ["failed", "handed_off", "handed_off"]


def test_each_writer_note_is_said_once_naming_the_sessions_chosen(tmp_path: Path) -> None:
    paths = [make_session(tmp_path, f"long-{n}", turns=12) for n in range(3)]
    short = make_session(tmp_path, "short", turns=1)  # not chosen: its model's note unsaid
    short.write_text(short.read_text().replace('"anthropic"', '"openai"'))
    os.utime(short, (HOUR_AGO, HOUR_AGO))
    nameless = make_session(tmp_path, "nameless", turns=12)
    nameless.write_text(nameless.read_text().replace('"anthropic"', '"undefined"'))
    os.utime(nameless, (HOUR_AGO, HOUR_AGO))
    planned = run_cli("rotate", tmp_path, "--dry-run", "--over-tokens", "2000")
    assert planned.code == 0, planned.stderr
    notes = [line for line in planned.stderr.splitlines() if line.startswith("note:")]
    key, model = [n for n in notes if "ANTHROPIC_API_KEY" in n], [n for n in notes if "names" in n]
    assert len(notes) == 2 and len(key) == len(model) == 1, notes
    shown = catalog(tmp_path).short_ids()  # as list shows them: unique, unlike 8 digits
    ids = [shown[load_session(p).id] for p in paths]  # oldest first, then by path
    assert key[0].endswith(f"(3 sessions: {', '.join(ids)})")
    assert model[0].endswith(f"(1 session: {shown[load_session(nameless).id]})")
    assert all("would write the document" in n and " writes " not in n for n in notes)
    done = run_cli("rotate", tmp_path, "--over-tokens", "2000")
    assert done.code == 0, done.stderr
    said = [line for line in done.stderr.splitlines() if "ANTHROPIC_API_KEY" in line]
    assert len(said) == 1 and "writes the document" in said[0]


def test_a_sessions_notes_name_it_by_its_whole_id(tmp_path: Path) -> None:
    """Ids made within a minute share their first digits: a note names its session whole."""
    sources = [make_session(tmp_path, f"s{n}", turns=8) for n in range(2)]
    ids = [load_session(p).id for p in sources]
    assert ids[0][:8] == ids[1][:8]
    result = run_cli(
        "rotate", tmp_path, "--over-tokens", "2000", "--model", FAKE_MODEL, "--dry-run"
    )
    assert result.code == 0, result.stderr
    notes = [line for line in result.stderr.splitlines() if "nothing in it says" in line]
    assert sorted(line.split(": ", 1)[0] for line in notes) == sorted(ids)
