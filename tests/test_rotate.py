"""Rotation: which sessions are chosen, shards, exactly once, budgets, output, cancel."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from handoff_cli.config import AUTO, OMP, PI, Options, parse_duration, parse_shard
from handoff_cli.core import handoff
from handoff_cli.document import SECTIONS
from handoff_cli.listing import catalog
from handoff_cli.output import Reporter
from handoff_cli.places import Root
from handoff_cli.rotate import RotateOptions, in_shard, select

from .conftest import HEADER, Entries, write_session
from .fakellm import FakeLLMServer, Reply

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


def rotate(folder: Path, server: FakeLLMServer, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "handoff_cli",
            "rotate",
            str(folder),
            "--over-tokens",
            "2000",
            "--model",
            "openai/test-model",
            "--api-base",
            server.base_url,
            "--retries",
            "0",
            *extra,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def exchanges(path: Path, lines_before: int) -> int:
    """How many exchanges were recorded: each is two whole lines."""
    added = path.read_bytes().splitlines()[lines_before:]
    assert len(added) % 2 == 0 and all(orjson.loads(line) for line in added)
    return len(added) // 2


def new_sessions(folder: Path, sources: list[Path]) -> list[Path]:
    return [p for p in folder.glob("*.jsonl") if p not in sources]


def test_rotation_hands_off_each_once_concurrently(
    tmp_path: Path, llm_server: FakeLLMServer
) -> None:
    sources = [make_session(tmp_path, f"s{n}", turns=8) for n in range(6)]
    lines = {p: len(p.read_bytes().splitlines()) for p in sources}
    llm_server.default = Reply(DOCUMENT, chunks=5, delay=0.1)
    process = rotate(tmp_path, llm_server, "--jobs", "3", "--json")
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    results = [orjson.loads(line) for line in out.splitlines()]
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
    }
    assert 2 <= llm_server.most_in_flight <= 3  # concurrent, and never more than --jobs
    assert all(exchanges(p, lines[p]) == 1 for p in sources)
    assert len(new_sessions(tmp_path, sources)) == 6
    again = rotate(tmp_path, llm_server)
    out, err = again.communicate(timeout=120)
    assert (again.returncode, out) == (0, "") and "0 handed off" in err  # nothing twice


def test_two_runs_at_once_hand_off_each_session_once(
    tmp_path: Path, llm_server: FakeLLMServer
) -> None:
    sources = [make_session(tmp_path, f"s{n}", turns=8) for n in range(4)]
    lines = {p: len(p.read_bytes().splitlines()) for p in sources}
    llm_server.default = Reply(DOCUMENT, chunks=5, delay=0.1)
    runs = [rotate(tmp_path, llm_server, "--jobs", "4", "--json") for _ in range(2)]
    results = []
    for run in runs:
        out, err = run.communicate(timeout=120)
        assert run.returncode == 0, err
        results += [orjson.loads(line) for line in out.splitlines()]
    handed = [r["id"] for r in results if r["status"] == "handed_off"]
    assert sorted(handed) == sorted(set(handed)) and len(handed) == 4
    assert all(exchanges(p, lines[p]) == 1 for p in sources)
    assert len(new_sessions(tmp_path, sources)) == 4  # the late ones took theirs back
    assert not list(tmp_path.glob(".*.tmp"))


def test_a_dry_run_estimates_and_writes_nothing(tmp_path: Path, llm_server: FakeLLMServer) -> None:
    sources = [make_session(tmp_path, f"s{n}", turns=8) for n in range(3)]
    before = {p: p.read_bytes() for p in sources}
    process = rotate(tmp_path, llm_server, "--dry-run", "--json")
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    planned = orjson.loads(out)
    assert len(planned["sessions"]) == 3 and planned["total"]["sessions"] == 3
    assert all(s["strategy"] == "single" and s["requests"] == 1 for s in planned["sessions"])
    assert planned["total"]["input_tokens"] == sum(s["input_tokens"] for s in planned["sessions"])
    assert llm_server.requests == [] and new_sessions(tmp_path, sources) == []
    assert all(p.read_bytes() == data for p, data in before.items())


def test_over_budget_nothing_starts(tmp_path: Path, llm_server: FakeLLMServer) -> None:
    sources = [make_session(tmp_path, f"s{n}", turns=8) for n in range(2)]
    process = subprocess.run(
        [
            sys.executable,
            "-m",
            "handoff_cli",
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
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert process.returncode == 6, process.stderr
    assert process.stderr.strip().splitlines()[-1].startswith("Over budget: the estimate is $")
    assert llm_server.requests == [] and new_sessions(tmp_path, sources) == []


def test_ctrl_c_keeps_what_finished_and_writes_nothing_else(
    tmp_path: Path, llm_server: FakeLLMServer
) -> None:
    sources = [make_session(tmp_path, f"s{n}", turns=8) for n in range(6)]
    lines = {p: len(p.read_bytes().splitlines()) for p in sources}
    llm_server.script(Reply(DOCUMENT))  # one quick answer, then slow ones
    llm_server.default = Reply(DOCUMENT, chunks=40, delay=0.5)
    process = rotate(tmp_path, llm_server, "--jobs", "2")
    assert process.stdout is not None
    first = process.stdout.readline()  # a handoff finished
    time.sleep(0.5)  # others are in flight
    process.send_signal(signal.SIGINT)
    sent = time.monotonic()
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert time.monotonic() - sent < 1.5
    finished = [first, *out.splitlines()]
    finished = [line for line in finished if line.strip()]
    assert len(finished) >= 1 and "cancelled" in err
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
