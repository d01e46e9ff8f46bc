"""opencode: its sessions are rows of one SQLite database, each named ``<database>/<id>``.
Found with nothing configured, read as opencode 1.18.33 continues them (the real agent's
requests kept in ``fixtures/agents/opencode``), handed off in one transaction: written whole or
not at all, whatever fails or is killed."""

from __future__ import annotations

import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from .conftest import run_cli

AGENTS = Path(__file__).parent / "fixtures" / "agents" / "opencode"
REAL = Path(__file__).parent / "fixtures" / "real" / "opencode"
CONTINUED = sorted(p.parent for p in REAL.glob("*/**/opencode.db"))
"""Real sessions continued by opencode 1.18.33 (``oracles/opencode/real.py``): databases as
committed (1.4.0 to 1.17.3), and opencode's older ``storage/`` (which 1.18.33 no longer reads)
imported by its ``opencode import`` (``<repo>/imported/``)."""
MADE, HANDOFFS, CROSSED = AGENTS / "made", AGENTS / "handoffs", AGENTS / "crossings"
OLDER = AGENTS / "older"
"""A real database of opencode 1.4.0 (its ``session`` table without the later columns) with
our handoff of its session added: opencode 1.18.33 migrated it and continued ours."""
TOOL = "ses_dc7f056feffeR3Q5eEJ44MHJWM"
"""The session made with one tool call, then a second prompt."""


def kept_requests(folder: Path) -> list[Path]:
    return sorted(folder.glob("ses_*.request.json"))


def sent(path: Path) -> list[Any]:
    """What the agent sent of the history: its messages without the system prompt and the
    prompt it was continued with, and without the ``cache_control`` marks it puts on the last
    two for a Claude model (where the provider's cache ends, not part of the conversation)."""
    messages: list[Any] = json.loads(path.read_text())["messages"]
    return [{k: v for k, v in m.items() if k != "cache_control"} for m in messages[1:-1]]


@pytest.mark.parametrize(
    "request_file",
    [
        *kept_requests(MADE),
        *kept_requests(HANDOFFS),
        *kept_requests(OLDER),
        *(r for i in CONTINUED for r in kept_requests(i)),
    ],
    ids=lambda p: f"{p.parent.name}/{p.name[:14]}",
)
def test_context_is_what_opencode_sent_continuing_the_session(request_file: Path) -> None:
    """Its own sessions (a tool call; a compaction; a compaction keeping a tail), a session we
    handed off to, sessions crossed (``--to opencode``) from Qwen Code, Claude Code, Codex,
    Gemini CLI, oh-my-pi and pi, two with our exchange recorded, and the real sessions it
    continued."""
    session = request_file.parent / "opencode.db" / request_file.name.split(".")[0]
    result = run_cli("show", session, "--context", "--json")
    assert result.code == 0, result.stderr
    assert result.json()["messages"] == sent(request_file)


def test_opencode_continued_real_sessions_from_enough_repositories() -> None:
    continued = [r for folder in CONTINUED for r in kept_requests(folder)]
    assert len(continued) >= 7
    assert len({r.relative_to(REAL).parts[0] for r in continued}) >= 4


def test_sessions_crossed_to_opencode_start_with_the_document() -> None:
    found = kept_requests(CROSSED)
    assert len(found) == 5
    for request_file in found:
        assert sent(request_file)[0]["content"].startswith("<handoff-context>\n## Goal")


def test_a_handoff_into_an_older_database_writes_the_columns_it_has(tmp_path: Path) -> None:
    data = tmp_path / ".local/share/opencode"
    data.mkdir(parents=True)
    shutil.copyfile(REAL / "Burdis28__burdis28.github.io/opencode.db", data / "opencode.db")
    old = data / "opencode.db" / "ses_10b137345ffe03355Ew4fC8LWW"
    done = run_cli(old, "--model", "extractive", "--json", env={"HOME": str(tmp_path)})
    assert done.code == 0, done.stderr
    shown = run_cli("show", done.json()["path"], "--context", "--json")
    assert shown.json()["messages"][0]["content"].startswith("<handoff-context>\n## Goal")
    (request,) = kept_requests(OLDER)
    assert sent(request)[0]["content"].startswith("<handoff-context>\n## Goal")


def test_what_opencode_adds_to_a_users_message_is_not_a_request() -> None:
    """The user ran ``ls`` and ``pwd`` themselves: opencode's synthetic "The following tool was
    executed by the user" is sent with it, and is not what they asked."""
    session = REAL / "richardaiand__aiand-portfolio-web/opencode.db/ses_1279fce82ffeZOJhNwml1w1Fu4"
    facts = run_cli("show", session, "--facts", "--json").json()
    assert facts["requests"][0].startswith("I have a static HTML portfolio website.")
    assert not any("executed by the user" in r for r in facts["requests"])
    sent = run_cli("show", session, "--context", "--json").json()["messages"]
    assert any("The following tool was executed by the user" in str(m) for m in sent)
    # A command that exited non-zero, its code in the part's metadata only: an error left open.
    assert any("gh: command not found" in e for e in facts["open_errors"])


def test_what_we_wrote_starts_with_the_document_or_ends_with_our_turn() -> None:
    firsts = {p.name.split(".")[0]: sent(p) for p in kept_requests(HANDOFFS)}
    assert firsts["ses_dc7e28864ffelo56DtCs6U5RzR"][0]["content"].startswith("<handoff-context>")
    assert firsts["ses_dc7e28360ffevDf64jlg9FLBCZ"][0]["content"].startswith("<handoff-context>")
    asked, answered = firsts[TOOL][-2:]
    assert asked["content"].startswith("Write a handoff document")
    assert answered["content"].startswith("## Goal")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home where opencode keeps its database (WAL, as the agent keeps it)."""
    home = tmp_path / "home"
    data = home / ".local/share/opencode"
    data.mkdir(parents=True)
    shutil.copyfile(MADE / "opencode.db", data / "opencode.db")
    with sqlite3.connect(data / "opencode.db") as connection:
        connection.execute("PRAGMA journal_mode=WAL")
    for name in ("HANDOFF_SESSIONS_DIR", "XDG_DATA_HOME", "OPENCODE_DB"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(home))
    return home


def database(home: Path) -> Path:
    return home / ".local/share/opencode/opencode.db"


def rows(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of the tables a handoff writes, and the database's own check."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as connection:
        found = {
            table: sorted(connection.execute(f"SELECT * FROM {table}").fetchall(), key=repr)
            for table in ("project", "session", "message", "part")
        }
        found["check"] = connection.execute("PRAGMA integrity_check").fetchall()
    return found


def test_list_finds_the_databases_sessions_with_nothing_configured(home: Path) -> None:
    result = run_cli("list", "--json", cwd=home)
    assert result.code == 0, result.stderr
    found = {s["id"]: s for s in result.json()}
    assert len(found) == 3 and {s["agent"] for s in found.values()} == {"opencode"}
    assert found[TOOL]["path"] == str(database(home) / TOOL)
    assert found[TOOL]["cwd"] == "/tmp/opencode-oracle/cwd"
    assert found[TOOL]["title"] == "Reading notes.txt"  # the title opencode gave it
    looked_up = run_cli("show", "ses_dc7f05", "--json", cwd=home)
    assert looked_up.code == 0, looked_up.stderr


def test_a_handoff_is_one_transaction_a_new_session_and_a_turn(home: Path) -> None:
    db = database(home)
    before = rows(db)
    result = run_cli(database(home) / TOOL, "--model", "extractive", "--json", cwd=home)
    assert result.code == 0, result.stderr
    done = result.json()
    assert done["resume_command"] == f"opencode --session {done['id']}"
    after = rows(db)
    assert after["check"] == [("ok",)]
    ids = {s[0] for s in before["session"]}
    new = [s[0] for s in after["session"] if s[0] not in ids]
    assert new == [done["id"]] and done["id"] < min(ids)  # newer sessions sort first
    added = [m for m in after["message"] if m not in before["message"]]
    mine = sorted(m for m in added if m[1] == TOOL)
    assert len(mine) == 2 and mine[0][0] > max(m[0] for m in before["message"] if m[1] == TOOL)
    assert [json.loads(m[4])["role"] for m in mine] == ["user", "assistant"]
    assert len([m for m in added if m[1] == done["id"]]) == 2
    listed = {s["id"]: s for s in run_cli("list", "--json", cwd=home).json()}
    assert listed[TOOL]["handed_off"] is True
    assert listed[done["id"]]["parent"]["id"] == TOOL


def test_a_failing_write_leaves_the_database_as_it_was(home: Path) -> None:
    """The exchange's insert refused by the database (a trigger): the new session, inserted
    in the same transaction, is gone with it."""
    db = database(home)
    with sqlite3.connect(db) as connection:
        connection.execute(
            "CREATE TRIGGER refuse BEFORE INSERT ON part WHEN NEW.session_id = 'ses_dc7f056feffe"
            "R3Q5eEJ44MHJWM' BEGIN SELECT RAISE(ABORT, 'refused'); END"
        )
    before = rows(db)
    result = run_cli(db / TOOL, "--model", "extractive", cwd=home)
    assert result.code != 0 and "Traceback" not in result.stderr
    assert rows(db) == before


def test_a_database_locked_by_another_writer_is_waited_for_a_while_then_left(home: Path) -> None:
    db = database(home)
    before = rows(db)
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        began = time.monotonic()
        result = run_cli(db / TOOL, "--model", "extractive", cwd=home)
        waited = time.monotonic() - began
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert result.code == 4 and "locked" in result.stderr, result.stderr
    assert waited < 30
    assert rows(db) == before


def test_crossings_to_and_from_opencode(home: Path, tmp_path: Path) -> None:
    """A Claude Code session handed to opencode is a session in its database, in the project
    of its cwd (``global`` where it knows none); one of a Windows folder is refused (opencode
    works in the session's folder, which is no path here); an opencode one handed to Gemini
    CLI is a chat."""
    windows = Path(__file__).parent / "fixtures" / "real" / "claude" / "886caigudong__caigudong-"
    refused = run_cli(next(windows.glob("*.jsonl")), "--model", "extractive", "--to", "opencode")
    assert refused.code == 2 and "no folder of opencode's" in refused.stderr
    real = Path(__file__).parent / "fixtures" / "real" / "claude"
    claude = real / "LZY2333__LZY-FE-JumpTrack" / "d1d701bc-11c4-4f11-949a-bf2607b200eb.jsonl"
    done = run_cli(claude, "--model", "extractive", "--to", "opencode", "--no-record", "--json")
    assert done.code == 0, done.stderr
    made = Path(done.json()["path"])
    assert made.parent == database(home)
    with sqlite3.connect(database(home)) as connection:
        project = connection.execute(
            "SELECT project_id FROM session WHERE id = ?", (made.name,)
        ).fetchone()
    assert project == ("global",)
    shown = run_cli("show", made, "--context", "--json").json()["messages"]
    assert shown[0]["content"].startswith("<handoff-context>")
    out = run_cli(database(home) / TOOL, "--model", "extractive", "--to", "gemini", "--json")
    assert out.code == 0, out.stderr
    assert "/.gemini/tmp/" in out.json()["path"]


def _start(member: Path, home: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "HOME": str(home), "HANDOFF_CACHE_DIR": str(home / "cache")}
    return subprocess.Popen(
        [sys.executable, "-m", "handoff_cli", str(member), "--model", "extractive"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip


@pytest.mark.heavy  # processes killed at every moment: make test-heavy
def test_killed_at_any_moment_the_database_holds_all_of_a_handoff_or_none(
    home: Path, tmp_path: Path
) -> None:
    rng = random.Random(40)
    pristine = tmp_path / "pristine.db"
    shutil.copyfile(database(home), pristine)  # no run has written to it: no WAL beside it

    def restore() -> None:
        """The database as it was, its WAL (a killed run's, or a whole run's) gone with it."""
        for suffix in ("", "-wal", "-shm"):
            Path(f"{database(home)}{suffix}").unlink(missing_ok=True)
        shutil.copyfile(pristine, database(home))
        with sqlite3.connect(database(home)) as connection:
            connection.execute("PRAGMA journal_mode=WAL")

    began = time.monotonic()
    assert _start(database(home) / TOOL, home).wait(timeout=120) == 0
    duration = time.monotonic() - began
    whole = rows(database(home))
    outcomes = {"none": 0, "all": 0}
    trials = 10
    for trial in range(trials):
        restore()
        before = rows(database(home))
        process = _start(database(home) / TOOL, home)
        # Start-up is most of a run: the kills are spread over its second half, the work.
        time.sleep(duration * (0.4 + 0.7 * rng.uniform(trial, trial + 1) / trials))
        process.kill()
        process.wait(timeout=60)
        now = rows(database(home))
        assert now["check"] == [("ok",)]
        if now == before:
            outcomes["none"] += 1
        else:  # as many rows as a whole handoff adds, every one of them
            assert {t: len(now[t]) for t in now} == {t: len(whole[t]) for t in whole}
            outcomes["all"] += 1
    print(f"run {duration:.2f} s: {outcomes}")


PROBES = AGENTS / "probes"


@pytest.mark.parametrize(
    ("database", "session", "request_name"),
    [
        # Answers of an Anthropic model with reasoning, continued on another model: their
        # reasoning sent as text, before their text.
        ("reasoning", "ses_dc7d4298bffeFcp27j61aHUC4N", "reasoning-switch"),
        # A session written as rows only, compacted by hand (``auto: false``), continued.
        ("written", "ses_dc7d44f30ffenzt28VOTD088LS", "written-after"),
    ],
)
def test_context_begins_with_what_opencode_sent_then(
    database: str, session: str, request_name: str
) -> None:
    """The request was made before the session's last turn: our context of the session as it
    was left begins with every message of it, the prompt it was continued with included."""
    request = json.loads((PROBES / f"{request_name}.request.json").read_text())["messages"][1:]
    result = run_cli("show", PROBES / f"{database}.opencode.db" / session, "--context", "--json")
    assert result.code == 0, result.stderr
    assert result.json()["messages"][: len(request)] == request


def test_a_rotation_hands_each_session_of_the_database_off_once(home: Path) -> None:
    folder = database(home).parent
    flags = ("--model", "extractive", "--over-tokens", "1", "--idle", "0s", "--json")

    def handed_off(result: Any) -> set[str]:
        assert result.code == 0, result.stderr
        lines = [json.loads(line) for line in result.stdout.splitlines()]
        return {line["id"] for line in lines if line["status"] == "handed_off"}

    first = handed_off(run_cli("rotate", folder, *flags, cwd=home))
    assert len(first) == 3
    assert not first & handed_off(run_cli("rotate", folder, *flags, cwd=home))
    assert rows(database(home))["check"] == [("ok",)]


def test_its_ids_are_no_secrets_to_mask(home: Path) -> None:
    """An opencode session's id (``ses_`` and 26 characters, some random) is an id, as a
    provider's ``toolu_…`` is: an export names it as it is."""
    result = run_cli("export", database(home) / TOOL, "--format", "md", cwd=home)
    assert result.code == 0, result.stderr
    assert TOOL.replace("_", "\\_") in result.stdout and "secrets masked: 0" in result.stdout
