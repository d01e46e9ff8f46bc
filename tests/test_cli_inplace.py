"""``handoff SESSION --in-place`` and ``rotate --in-place``, the real program against the
loopback model server: one compaction entry appended, as oh-my-pi's ``/handoff`` writes it,
and nothing else; in a Codex rollout, one ``compacted`` line, as Codex's own ``/compact``
writes it (tests/fixtures/codex/inplace/, each resumed by the real Codex 0.171.0)."""

from __future__ import annotations

import os
import shutil
import signal
import threading
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

import handoff_cli.catalog as catalog
from handoff_cli.agents.codex import SUMMARY_PREFIX
from handoff_cli.document import WRAPPER_OPEN

from .conftest import DOCUMENT, FIXTURES, cancel_mid_stream, files_in, model_env, run_cli
from .fakellm import FakeLLMServer, RecordedRequest, Reply
from .helpers.zygote import fork

SOURCE = Path(__file__).parent / "fixtures" / "inplace" / "generated-omp-020-20000.jsonl"


@pytest.fixture
def session(tmp_path: Path) -> Path:
    target = tmp_path / "sessions" / "project" / "2026-11-30T10-00-00-000Z_omp-020.jsonl"
    target.parent.mkdir(parents=True)
    shutil.copyfile(SOURCE, target)
    return target


def lines(path: Path) -> list[dict[str, object]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def session_id() -> object:
    return next(line for line in lines(SOURCE) if line["type"] == "session")["id"]


@pytest.mark.litellm
def test_one_compaction_entry_is_appended(session: Path, llm_server: FakeLLMServer) -> None:
    before = session.read_bytes()
    llm_server.script(Reply(DOCUMENT))
    result = run_cli(session, "--in-place", "--json", env=model_env(llm_server))
    assert result.code == 0, result.stderr
    report = result.json()
    leaf = lines(SOURCE)[-1]
    assert report["mode"] == "in_place" and report["id"] == session_id()
    assert session.read_bytes().startswith(before)  # the old bytes untouched
    *_, entry = lines(session)
    assert len(lines(session)) == len(lines(SOURCE)) + 1
    assert list(entry) == [
        "type",
        "id",
        "parentId",
        "timestamp",
        "summary",
        "firstKeptEntryId",
        "tokensBefore",
        "tokensAfter",
        "method",
        "details",
        "fromExtension",
    ]
    assert entry["parentId"] == leaf["id"] and entry["method"] == "handoff"
    assert entry["firstKeptEntryId"] == report["first_kept_entry_id"] == "1819a85f"
    assert entry["tokensBefore"] == report["tokens_before"] == 1881
    assert entry["details"] == {"readFiles": ["src/a.py"], "modifiedFiles": ["src/b.py"]}
    assert str(entry["summary"]).startswith("## Goal") and "<handoff-context>" not in str(
        entry["summary"]
    )
    assert str(entry["summary"]).endswith("<files>\n# src/\na.py (Read)\nb.py (Write)\n</files>")
    assert report["entry_id"] == entry["id"] and 0 < report["tokens_after"] < 1881
    assert entry["tokensAfter"] == report["tokens_after"]
    assert files_in(session.parent) == [session.name]  # no new session
    context = run_cli("show", session, "--context", "--json").json()
    assert context["messages"][0]["role"] == "compactionSummary"
    assert run_cli("show", session, "--document").stdout.startswith("## Goal")
    # Compacted now: a second in-place handoff has nothing to do.
    again = run_cli(session, "--in-place", env=model_env(llm_server))
    assert again.code == 3 and again.stderr.strip() == "Nothing to hand off (already compacted)"


@pytest.mark.litellm
def test_stdout_is_the_sessions_own_id(session: Path, llm_server: FakeLLMServer) -> None:
    llm_server.script(Reply(DOCUMENT))
    result = run_cli(session, "--in-place", "--quiet", env=model_env(llm_server))
    assert result.code == 0, result.stderr
    assert result.stdout == f"{session_id()}\n" and result.stderr == ""


def test_dry_run_shows_the_cut_and_writes_nothing(session: Path) -> None:
    before = session.read_bytes()
    result = run_cli(session, "--in-place", "--dry-run", "--json", "--model", "extractive")
    assert result.code == 0, result.stderr
    plan = result.json()
    assert plan["mode"] == "in_place" and plan["first_kept_entry_id"] == "1819a85f"
    assert plan["tokens_before"] == 1881 and plan["kept_entries"] == 7
    assert session.read_bytes() == before
    assert (
        run_cli(session, "--dry-run", "--json", "--model", "extractive").json()["mode"]
        == "new_session"
    )


def test_a_small_session_has_nothing_to_compact(tmp_path: Path) -> None:
    said = {
        "-home-dev-projects-weather-cli": "what follows the last compaction fits",
        "--home-dev-projects-notes-app--": "the branch fits",  # never compacted: not "already"
    }
    for folder, what in said.items():
        small = next((Path(__file__).parents[1] / "sessions" / folder).glob("*.jsonl"))
        copy = tmp_path / small.name
        shutil.copyfile(small, copy)
        result = run_cli(copy, "--in-place", "--agent", "omp", "--model", "extractive")
        assert result.code == 3
        assert result.stderr.strip() == f"Nothing to compact: {what} in the 20,000 tokens kept"
        assert copy.read_bytes() == small.read_bytes()


def test_in_place_refuses_new_session_options(session: Path) -> None:
    result = run_cli(session, "--in-place", "--no-record")
    assert result.code == 2 and "--in-place" in result.stderr


@pytest.mark.zygote  # forks the program from the zygote (tests/conftest.py)
def test_signal_before_the_write_leaves_the_file_as_it_was(
    session: Path, llm_server: FakeLLMServer
) -> None:
    before = session.read_bytes()
    result, _ = cancel_mid_stream(llm_server, signal.SIGINT, session, "--in-place")
    assert result.code == 130 and result.stderr.strip() == "Handoff cancelled"
    assert result.stdout == ""
    assert session.read_bytes() == before and files_in(session.parent) == [session.name]


@pytest.mark.zygote  # forks the program from the zygote (tests/conftest.py)
def test_two_in_place_handoffs_started_together_compact_once(
    tmp_path: Path, session: Path, llm_server: FakeLLMServer
) -> None:
    """Both read the session and ask the model before either writes (the model answers once
    both have asked): the one that comes to the lock second finds the session written to since
    it read it, the other's compaction, and writes nothing, exit 4. Two processes, forked from
    the zygote: their locks race, not their start-up."""
    both = threading.Barrier(2)

    def once_both_asked(request: RecordedRequest) -> Reply:
        both.wait(timeout=60)
        return Reply(DOCUMENT)

    llm_server.script(once_both_asked, once_both_asked)
    before = session.read_bytes()
    args = [str(session), "--in-place", "--quiet"]
    runs = [fork(args, tmp_path / f"run-{n}", model_env(llm_server)) for n in range(2)]
    codes = [run.wait(timeout=120) for run in runs]
    assert sorted(codes) == [0, 4], [run.stderr for run in runs]
    refused = runs[codes.index(4)].stderr.strip()
    assert refused == (
        f"Handoff failed: {session}: the session changed while the handoff ran (it was written "
        "to); nothing written"
    )
    assert session.read_bytes().startswith(before)
    assert [line["type"] for line in lines(session)[len(lines(SOURCE)) :]] == ["compaction"]
    assert len(llm_server.requests) == 2 and files_in(session.parent) == [session.name]


def test_rotate_in_place_compacts_each_once(session: Path) -> None:
    os.utime(session, (time.time() - 3600, time.time() - 3600))
    args = ("rotate", session.parent, "--in-place", "--over-tokens", "100", "--model", "extractive")
    first = run_cli(*args, "--json")
    assert first.code == 0, first.stderr
    (outcome,) = [orjson.loads(line) for line in first.stdout.splitlines()]
    assert outcome["status"] == "handed_off" and outcome["new_id"] == outcome["id"]
    assert outcome["entry_id"] == lines(session)[-1]["id"]
    os.utime(session, (time.time() - 3600, time.time() - 3600))
    second = run_cli(*args, "--json")
    assert second.code == 0 and second.stdout == ""  # its leaf is our compaction: done


def dead_process_id() -> int:
    """The id of a process that has ended: its temporary file is nobody's now."""
    child = os.fork()
    if child == 0:
        os._exit(0)
    os.waitpid(child, 0)
    return child


@pytest.mark.zygote  # forks the program from the zygote (tests/conftest.py)
@pytest.mark.parametrize("command", [(), ("rotate",)])
def test_a_killed_runs_temporary_is_removed_in_place_too(
    session: Path, command: tuple[str, ...]
) -> None:
    stale = session.parent / f".{session.name}.{dead_process_id()}.0a1b2c3d.tmp"
    stale.write_bytes(b"half a file")
    someone_elses = session.parent / f".{session.name}.notours.tmp"
    someone_elses.write_bytes(b"not ours")
    if command:
        os.utime(session, (time.time() - 3600,) * 2)
        target: tuple[str | Path, ...] = (*command, session.parent, "--over-tokens", "1")
    else:
        target = (session,)
    result = run_cli(*target, "--in-place", "--model", "extractive")
    assert result.code == 0, result.stderr
    assert not stale.exists() and someone_elses.exists()


@pytest.mark.litellm
def test_what_follows_a_compaction_may_fit_too(session: Path, llm_server: FakeLLMServer) -> None:
    llm_server.script(Reply(DOCUMENT))
    assert run_cli(session, "--in-place", "-q", env=model_env(llm_server)).code == 0
    compaction = orjson.loads(session.read_bytes().splitlines()[-1])
    assert compaction["type"] == "compaction"
    message = {"role": "user", "content": "go on", "timestamp": 1_764_583_200_000}
    after = {"type": "message", "id": "a1b2c3d4", "parentId": compaction["id"]}
    after |= {"timestamp": "2026-12-01T10:00:00.000Z", "message": message}
    with session.open("ab") as file:
        file.write(orjson.dumps(after) + b"\n")
    before = session.read_bytes()
    result = run_cli(session, "--in-place", env=model_env(llm_server))
    said = "Nothing to compact: what follows the last compaction fits in the 20,000 tokens kept"
    assert result.code == 3 and result.stderr.strip() == said
    assert session.read_bytes() == before


# --- a Codex rollout: Codex's own compaction, holding the document ----------------------------

CODEX = FIXTURES / "codex"
COMPACTIONS: dict[str, Any] = orjson.loads((CODEX / "inplace/results.json").read_bytes())["cases"]
"""Each case: a rollout of the fixtures, compacted by our ``--in-place`` (``inplace/<case>``)
and by Codex's own ``/compact`` (``<case>.codex-own``), each then resumed by the real CLI
(``oracles/codex/codex.py inplace``)."""


def compacted(data: bytes) -> dict[str, Any]:
    """The last ``compacted`` line of a rollout."""
    values: list[dict[str, Any]] = [orjson.loads(line) for line in data.splitlines() if line]
    return [v for v in values if v.get("type") == "compacted"][-1]


def history(line: dict[str, Any]) -> list[Any]:
    """A compaction's replacement history as compared across writers: Codex's own context
    left out (Codex makes it for each compaction), ids and metadata aside, the summary's
    text as ``<summary>``."""
    kept = []
    for item in line["payload"]["replacement_history"]:
        text = "".join(part["text"] for part in item["content"])
        if item["role"] == "developer" or text.startswith("<environment_context>"):
            continue
        content = "<summary>" if text.startswith(SUMMARY_PREFIX) else item["content"]
        kept.append({"type": item["type"], "role": item["role"], "content": content})
    return kept


@pytest.mark.parametrize("case", sorted(COMPACTIONS))
def test_a_codex_rollout_is_compacted_as_codex_compacts_it(tmp_path: Path, case: str) -> None:
    """One ``compacted`` line, appended, numbered on: its replacement history is what Codex's
    own ``/compact`` of the same rollout left (the user's messages, the newest worth 20,000
    tokens, the next cut in its middle; not its summaries, nor its own context, which it makes
    again), and then the summary, which is the document; the real CLI resumed the file so
    written (rc 0, no warning) sending that history, as it did after its own compaction."""
    source = CODEX / str(COMPACTIONS[case]["source"])
    copy = tmp_path / source.name
    shutil.copyfile(source, copy)
    before = copy.read_bytes()
    result = run_cli(copy, "--in-place", "--model", "extractive", "--json")
    assert result.code == 0, result.stderr
    report = result.json()
    assert report["first_kept_entry_id"] is None and report["entry_id"] is None
    assert report["tokens_before"] > 0 and report["tokens_after"] > 0
    after = copy.read_bytes()
    assert after.startswith(before)
    (line,) = [orjson.loads(raw) for raw in after[len(before) :].splitlines()]
    kept = compacted((CODEX / f"inplace/{case}.jsonl").read_bytes())
    assert list(line) == list(kept) and list(line["payload"]) == ["message", "replacement_history"]
    last = orjson.loads(before.splitlines()[-1])
    assert line.get("ordinal") == (last["ordinal"] + 1 if "ordinal" in last else None)
    summary = line["payload"]["message"]
    assert summary.startswith(f"{SUMMARY_PREFIX}\n{WRAPPER_OPEN}## Goal")
    assert line["payload"]["replacement_history"][-1]["content"][0]["text"] == summary
    own = compacted((CODEX / f"inplace/{case}.codex-own.jsonl").read_bytes())
    assert history(line) == history(kept) == history(own)
    resumed = COMPACTIONS[case]["ours_resumed"]
    assert resumed["rc"] == 0
    assert [w for w in resumed["warnings"] if "Unknown model other-model" not in w] == []
    assert COMPACTIONS[case]["same_history_but_summary_and_ids"] is True
    assert COMPACTIONS[case]["same_own_context"] is True


def test_the_long_prompts_are_cut_as_codex_cuts_them() -> None:
    """The oldest prompt dropped, the next cut to what is left of the 20,000 tokens (across
    its two parts, on a character's edge), the newest whole."""
    (cut, newest, _summary) = compacted((CODEX / "inplace/long.jsonl").read_bytes())["payload"][
        "replacement_history"
    ]
    head, marker, tail = (part["text"] for part in cut["content"])
    assert head == "\u00e9" * 9998 and tail == "q" * 19996
    assert marker == "\u20265002 tokens truncated\u2026"
    assert newest["content"][0]["text"] == ("Render the report table. " * 1600)[:40000] + " the end"


@pytest.fixture
def rollout(tmp_path: Path) -> Path:
    """``made/tools`` in Codex's folder of a home."""
    source = CODEX / str(COMPACTIONS["tools"]["source"])
    target = tmp_path / "home/.codex/sessions/2026/12/01" / source.name
    target.parent.mkdir(parents=True)
    shutil.copyfile(source, target)
    return target


def test_a_compacted_rollout_is_handed_off_and_has_nothing_left_to_compact(rollout: Path) -> None:
    """Listed as handed off (its last line our compaction, however longer than the tail read
    it is), its document shown and updated by the next handoff, and a second ``--in-place``
    refused, the file left as it is."""
    assert run_cli(rollout, "--in-place", "--model", "extractive").code == 0
    row = run_cli("list", "--json", rollout.parents[3]).json()[0]
    assert row["handed_off"] is True
    assert run_cli("show", rollout, "--document").stdout.startswith("## Goal")
    planned = run_cli(rollout, "--dry-run", "--json", "--model", "extractive").json()
    assert planned["messages"][-1]["content"].startswith("Update the handoff document")
    before = rollout.read_bytes()
    again = run_cli(rollout, "--in-place", "--model", "extractive")
    assert again.code == 3 and again.stderr.strip() == "Nothing to hand off (already compacted)"
    assert rollout.read_bytes() == before
    long = (CODEX / "inplace/long.jsonl").read_bytes()
    assert len(long.splitlines()[-1]) > catalog.TAIL_BYTES
    assert catalog.summarize(CODEX / "inplace/long.jsonl").ends_with_handoff


def test_codex_compacting_after_us_keeps_our_summary_as_a_summary() -> None:
    """Codex's own ``/compact`` of what our compaction left takes our summary for one of its
    own: it keeps the user's messages, not it."""
    assert COMPACTIONS["tools"]["then_codex"]["our_summary_kept_as_a_user_message"] is False
    again = compacted((CODEX / "inplace/tools.then-codex-own.jsonl").read_bytes())
    texts = [item["content"][0]["text"] for item in again["payload"]["replacement_history"]]
    assert sum(t.startswith(SUMMARY_PREFIX) for t in texts) == 1
    assert not any(WRAPPER_OPEN in t for t in texts)


@pytest.mark.zygote  # forks the program from the zygote (tests/conftest.py)
def test_a_signal_before_the_write_leaves_a_rollout_as_it_was(
    rollout: Path, llm_server: FakeLLMServer
) -> None:
    before = rollout.read_bytes()
    result, _ = cancel_mid_stream(llm_server, signal.SIGINT, rollout, "--in-place")
    assert result.code == 130 and result.stderr.strip() == "Handoff cancelled"
    assert rollout.read_bytes() == before and files_in(rollout.parent) == [rollout.name]


def test_rotate_in_place_compacts_each_rollout_once(rollout: Path) -> None:
    os.utime(rollout, (time.time() - 3600, time.time() - 3600))
    folder = rollout.parents[3]
    args = ("rotate", folder, "--in-place", "--over-tokens", "100", "--model", "extractive")
    first = run_cli(*args, "--json")
    assert first.code == 0, first.stderr
    (outcome,) = [orjson.loads(line) for line in first.stdout.splitlines()]
    assert outcome["status"] == "handed_off" and outcome["entry_id"] is None
    os.utime(rollout, (time.time() - 3600, time.time() - 3600))
    second = run_cli(*args, "--json")
    assert second.code == 0 and second.stdout == ""  # its last line is our compaction: done
    assert rollout.read_bytes().count(b'"type":"compacted"') == 1
