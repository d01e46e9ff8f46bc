"""Probes of opencode 1.18.33 that the main driver (opencode.py) does not make: what the real
agent stores and sends for reasoning, subagents, forks, a session written by another program,
a manual compaction, ``opencode import``'s decoding, and the database lock.

    python3 oracles/opencode/probes.py --out DIR [--only NAME ...]

Stdlib only; every subprocess has a timeout. The binary is the one ``npm ci`` installs under
``oracles/opencode/node_modules`` (see opencode.py). Each probe runs in its own temporary HOME
and XDG dirs, with ``OPENCODE_DISABLE_MODELS_FETCH=1`` and a config declaring three providers on
``llmlog.py`` servers (loopback only):

* ``loop/m``: ``@ai-sdk/openai-compatible`` (chat completions), the default model;
* ``anth/c``: ``@ai-sdk/anthropic`` (``/v1/messages``; llmlog can answer it with thinking
  blocks, so opencode stores ``reasoning`` parts);
* ``side/t``: the ``small_model`` (title requests), on a server of its own.

Probes (DIR gets the files named; ``probes.json`` holds what each found):

``reasoning``  a session on ``anth/c`` whose answers carry thinking blocks (signatures) and a
    ``read`` call; continued on the same model (``reasoning-same.request.json``: the Anthropic
    body) and then with ``--model loop/m`` (``reasoning-switch.request.json``: the reasoning of
    another model sent as plain text).
``subagent``   the ``task`` tool: a child session (``parent_id``), then ``run -s ID --fork``.
``written``    a session written by this script straight into the database (rows only, one
    ``BEGIN IMMEDIATE`` transaction, the way a handoff writer would), then continued by the real
    agent (``written.request.json``), compacted by hand through ``opencode serve`` and
    ``POST /session/ID/summarize`` (``written-summarize.request.json``), and continued again
    (``written-after.request.json``).
``import``     ``opencode import`` of an export into a fresh database: the rows it writes, and
    what a file that does not decode leaves behind.
``lock``       another connection holding a write transaction while ``opencode run`` works.

``<name>.opencode.db`` is each probe's database (a clean copy), ``<id>.export.json`` the real
``opencode export`` of each session made.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
LLMLOG = HERE.parent / "llmlog.py"
CWD_ROOT = Path("/tmp/opencode-probes")
RUN_TIMEOUT = 180
ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


class Failure(Exception):
    pass


def binary() -> str:
    for rel in (
        "node_modules/opencode-linux-x64/bin/opencode",
        "node_modules/opencode-linux-x64-baseline/bin/opencode",
        "node_modules/opencode-ai/bin/opencode.exe",
    ):
        if os.access(HERE / rel, os.X_OK):
            return str(HERE / rel)
    raise Failure(f"no opencode binary under {HERE}/node_modules (run npm ci there)")


class Llm:
    """An llmlog.py server with its script and log."""

    def __init__(self, work: Path, name: str, script: list[dict[str, Any]]) -> None:
        self.log = work / f"{name}.log.jsonl"
        self.log.write_text("")
        script_file = work / f"{name}.script.json"
        script_file.write_text(json.dumps(script))
        port_file = work / f"{name}.port"
        self.proc = subprocess.Popen(
            [
                sys.executable,
                str(LLMLOG),
                str(self.log),
                "--port-file",
                str(port_file),
                "--script",
                str(script_file),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 20
        while not (port_file.exists() and port_file.read_text().strip()):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                self.stop()
                raise Failure("llmlog.py did not start")
            time.sleep(0.05)
        self.port = int(port_file.read_text())

    def bodies(self) -> list[Any]:
        return [
            json.loads(line)["body"]
            for line in self.log.read_text().splitlines()
            if line and json.loads(line)["method"] == "POST"
        ]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


class Sandbox:
    """HOME, XDG dirs and config for one probe; the main and side servers are swapped per run."""

    def __init__(self, work: Path) -> None:
        self.work = work
        for name in ("home", "config/opencode", "cache", "state", "data"):
            (work / name).mkdir(parents=True, exist_ok=True)
        self.db = work / "data" / "opencode" / "opencode.db"
        self.runs = 0

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENCODE", "XDG_"))}
        env.update(
            HOME=str(self.work / "home"),
            XDG_DATA_HOME=str(self.work / "data"),
            XDG_CONFIG_HOME=str(self.work / "config"),
            XDG_CACHE_HOME=str(self.work / "cache"),
            XDG_STATE_HOME=str(self.work / "state"),
            OPENCODE_DISABLE_MODELS_FETCH="1",
            OPENCODE_DISABLE_AUTOUPDATE="1",
            OPENCODE_DISABLE_LSP_DOWNLOAD="1",
            OPENCODE_DISABLE_DEFAULT_PLUGINS="1",
            OPENCODE_DISABLE_SHARE="1",
            NO_COLOR="1",
        )
        return env

    def configure(self, main_port: int, side_port: int) -> None:
        def provider(npm: str, name: str, port: int, models: dict[str, Any]) -> dict[str, Any]:
            return {
                "npm": npm,
                "name": name,
                "models": models,
                "options": {"baseURL": f"http://127.0.0.1:{port}/v1", "apiKey": "x"},
            }

        limit = {"context": 200000, "output": 8000}
        config = {
            "provider": {
                "loop": provider(
                    "@ai-sdk/openai-compatible",
                    "Loop",
                    main_port,
                    {"m": {"name": "M", "tool_call": True, "limit": limit}},
                ),
                "anth": provider(
                    "@ai-sdk/anthropic",
                    "Anth",
                    main_port,
                    {"c": {"name": "C", "tool_call": True, "reasoning": True, "limit": limit}},
                ),
                "side": provider(
                    "@ai-sdk/openai-compatible",
                    "Side",
                    side_port,
                    {"t": {"name": "T", "limit": limit}},
                ),
            },
            "model": "loop/m",
            "small_model": "side/t",
            "autoupdate": False,
            "share": "disabled",
        }
        (self.work / "config/opencode/opencode.json").write_text(json.dumps(config, indent=2))

    def run(
        self, args: list[str], cwd: Path, script: list[dict[str, Any]], timeout: int = RUN_TIMEOUT
    ) -> tuple[subprocess.CompletedProcess[str], Llm, Llm]:
        """``opencode ARGS`` in CWD with fresh servers; returns the result and both servers."""
        self.runs += 1
        main = Llm(self.work, f"main{self.runs}", script)
        side = Llm(self.work, f"side{self.runs}", [{"text": "Probe title"}])
        try:
            self.configure(main.port, side.port)
            result = self.opencode(args, cwd, timeout)
        finally:
            main.stop()
            side.stop()
        return result, main, side

    def opencode(
        self, args: list[str], cwd: Path, timeout: int = 60
    ) -> subprocess.CompletedProcess[str]:
        try:
            return subprocess.run(
                [binary(), *args],
                env={**self.env(), "PWD": str(cwd)},
                cwd=str(cwd),
                capture_output=True,
                text=True,
                timeout=timeout,
                stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired as exc:
            raise Failure(f"opencode {' '.join(args[:2])} timed out after {timeout}s") from exc

    def connect(self) -> sqlite3.Connection:
        return sqlite3.connect(str(self.db), timeout=10)

    def sessions(self) -> list[tuple[str, str | None, str]]:
        con = self.connect()
        try:
            return con.execute(
                "SELECT id, parent_id, title FROM session ORDER BY time_created"
            ).fetchall()
        finally:
            con.close()

    def keep(self, out: Path, name: str) -> None:
        target = out / f"{name}.opencode.db"
        if target.exists():
            target.unlink()
        source = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True)
        copy = sqlite3.connect(str(target))
        source.backup(copy)
        copy.execute("PRAGMA journal_mode=DELETE")
        copy.close()
        source.close()

    def export(self, out: Path, session: str, cwd: Path) -> None:
        result = self.opencode(["export", session], cwd)
        if result.returncode != 0:
            raise Failure(f"export {session}: {result.stderr.strip()[-300:]}")
        (out / f"{session}.export.json").write_text(result.stdout)


def fresh_cwd(name: str) -> Path:
    cwd = CWD_ROOT / name
    if cwd.exists():
        shutil.rmtree(cwd)
    cwd.mkdir(parents=True)
    (cwd / "notes.txt").write_text("hello from notes.txt: the answer is 42\n")
    return cwd


def save(out: Path, name: str, body: Any) -> str:
    (out / name).write_text(json.dumps(body, indent=2, ensure_ascii=False) + "\n")
    return name


def main_bodies(server: Llm) -> list[dict[str, Any]]:
    """The agent's own turns (a tools list); a compaction request has none."""
    return [b for b in server.bodies() if isinstance(b, dict) and b.get("tools")]


def outline(body: dict[str, Any]) -> list[str]:
    """role: a short view of each message (OpenAI or Anthropic shape)."""
    lines = []
    for message in body.get("messages", []):
        content = message.get("content")
        if isinstance(content, list):
            kinds = [c.get("type") for c in content]
            view = ",".join(kinds)
        else:
            view = (content or "")[:60]
        extra = [k for k in message if k not in ("role", "content")]
        lines.append(f"{message['role']}: {view}" + (f" {extra}" if extra else ""))
    return lines


# --- probes ---------------------------------------------------------------------------------


def probe_reasoning(work: Path, out: Path) -> dict[str, Any]:
    box, cwd = Sandbox(work), fresh_cwd("reasoning")
    script = [
        {
            "content": [
                {"type": "thinking", "thinking": "I should read the file.", "signature": "sig-one"},
                {"type": "tool_use", "name": "read", "input": {"filePath": str(cwd / "notes.txt")}},
            ]
        },
        {
            "content": [
                {"type": "thinking", "thinking": "It says 42.", "signature": "sig-two"},
                {"type": "text", "text": "The notes say 42."},
            ]
        },
    ]
    first, _, _ = box.run(["run", "--model", "anth/c", "Read", "notes.txt"], cwd, script)
    if first.returncode != 0:
        raise Failure(f"run: {first.stderr.strip()[-300:]}")
    session = box.sessions()[0][0]
    same, main, _ = box.run(["run", "-s", session, "And", "again?"], cwd, [{"text": "Same model."}])
    same_body = main.bodies()[0]
    switch, main, _ = box.run(
        ["run", "-s", session, "--model", "loop/m", "Third?"], cwd, [{"text": "Other model."}]
    )
    switch_body = main_bodies(main)[0]
    con = box.connect()
    parts = [
        json.loads(d)
        for (d,) in con.execute(
            "SELECT data FROM part WHERE session_id=?"
            ' AND data LIKE \'{"type":"reasoning"%\' ORDER BY id',
            (session,),
        )
    ]
    model = con.execute("SELECT model FROM session WHERE id=?", (session,)).fetchone()[0]
    con.close()
    box.keep(out, "reasoning")
    box.export(out, session, cwd)
    return {
        "session": session,
        "exit": [first.returncode, same.returncode, switch.returncode],
        "reasoning_parts": parts,
        "same_model_request": save(out, "reasoning-same.request.json", same_body),
        "same_model_outline": outline(same_body),
        "switched_request": save(out, "reasoning-switch.request.json", switch_body),
        "switched_outline": outline(switch_body),
        "session_model_after_switch": json.loads(model),
    }


def probe_subagent(work: Path, out: Path) -> dict[str, Any]:
    box, cwd = Sandbox(work), fresh_cwd("subagent")
    script = [
        {
            "tool": "task",
            "arguments": {
                "description": "Check the notes",
                "prompt": "Say what notes.txt holds.",
                "subagent_type": "general",
            },
        },
        {"text": "Child done: 42."},
        {"text": "Parent done."},
    ]
    first, _, side = box.run(["run", "Delegate", "a", "check."], cwd, script)
    if first.returncode != 0:
        raise Failure(f"run: {first.stderr.strip()[-300:]}")
    parent = next(s for s, p, _ in box.sessions() if p is None)
    fork, main, _ = box.run(["run", "-s", parent, "--fork", "More?"], cwd, [{"text": "Forked."}])
    listed = box.opencode(["session", "list", "--format", "json"], cwd)
    con = box.connect()
    rows = con.execute(
        "SELECT id, parent_id, title, agent, permission FROM session ORDER BY time_created"
    ).fetchall()
    messages = {
        s: con.execute(
            "SELECT id, time_created FROM message WHERE session_id=? ORDER BY time_created, id",
            (s,),
        ).fetchall()
        for s, *_ in rows
    }
    con.close()
    box.keep(out, "subagent")
    for s, *_ in rows:
        box.export(out, s, cwd)
    return {
        "exit": [first.returncode, fork.returncode],
        "sessions": [
            {
                "id": s,
                "parent_id": p,
                "title": t,
                "agent": a,
                "permission": json.loads(perm) if perm else None,
                "messages": [list(m) for m in messages[s]],
            }
            for s, p, t, a, perm in rows
        ],
        "title_requests": len(side.bodies()),
        "fork_request_outline": outline(main_bodies(main)[0]),
        "session_list_json": json.loads(listed.stdout or "[]"),
    }


class Ids:
    """opencode's identifier scheme: 12 hex digits of (ms * 4096 + counter), bitwise-inverted
    for descending ids, then 14 random base-62 characters."""

    def __init__(self) -> None:
        self.last, self.count = 0, 0

    def make(self, prefix: str, ms: int, descending: bool = False) -> str:
        if ms != self.last:
            self.last, self.count = ms, 0
        self.count += 1
        value = ms * 4096 + self.count
        if descending:
            value = ~value
        tail = "".join(ALPHABET[b % 62] for b in os.urandom(14))
        return f"{prefix}_{value & (2**48 - 1):012x}{tail}"


def write_session(db: Path, cwd: Path) -> str:
    """A session as a handoff writer would insert it: rows only, one transaction."""
    ids, compact = Ids(), (lambda o: json.dumps(o, separators=(",", ":"), ensure_ascii=False))
    t0 = int(time.time() * 1000) - 60_000
    session = ids.make("ses", t0, descending=True)
    user, call, answer = (ids.make("msg", t0 + i) for i in (1, 2, 3))
    con = sqlite3.connect(str(db), timeout=10, isolation_level=None)
    try:
        con.execute("PRAGMA busy_timeout = 5000")
        con.execute("BEGIN IMMEDIATE")
        con.execute(
            "INSERT INTO project (id, worktree, vcs, time_created, time_updated, sandboxes) "
            "VALUES ('global', '/', NULL, ?, ?, '[]') ON CONFLICT(id) DO NOTHING",
            (t0, t0),
        )
        con.execute(
            "INSERT INTO session (id, project_id, slug, directory, path, title, version, agent,"
            " model, time_created, time_updated) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (
                session,
                "global",
                "written-probe",
                str(cwd),
                str(cwd).lstrip("/"),
                "A written session",
                "1.18.33",
                "build",
                compact({"id": "m", "providerID": "loop"}),
                t0,
                t0 + 3,
            ),
        )

        def message(mid: str, ms: int, data: dict[str, Any]) -> None:
            con.execute(
                "INSERT INTO message (id, session_id, time_created, time_updated, data)"
                " VALUES (?,?,?,?,?)",
                (mid, session, ms, ms, compact(data)),
            )

        def part(mid: str, ms: int, data: dict[str, Any]) -> None:
            con.execute(
                "INSERT INTO part (id, message_id, session_id, time_created, time_updated, data)"
                " VALUES (?,?,?,?,?,?)",
                (ids.make("prt", ms), mid, session, ms, ms, compact(data)),
            )

        message(
            user,
            t0 + 1,
            {
                "role": "user",
                "time": {"created": t0 + 1},
                "agent": "build",
                "model": {"providerID": "loop", "modelID": "m"},
            },
        )
        part(user, t0 + 1, {"type": "text", "text": "Look at notes.txt please."})
        assistant = {
            "role": "assistant",
            "mode": "build",
            "agent": "build",
            "path": {"cwd": str(cwd), "root": "/"},
            "cost": 0,
            "tokens": {"input": 0, "output": 0, "reasoning": 0, "cache": {"read": 0, "write": 0}},
            "modelID": "m",
            "providerID": "loop",
        }
        message(
            call,
            t0 + 2,
            {
                "parentID": user,
                **assistant,
                "time": {"created": t0 + 2, "completed": t0 + 2},
                "finish": "tool-calls",
            },
        )
        part(
            call,
            t0 + 2,
            {
                "type": "reasoning",
                "text": "Thinking about reading.",
                "time": {"start": t0 + 2, "end": t0 + 2},
            },
        )
        part(
            call,
            t0 + 2,
            {
                "type": "tool",
                "tool": "read",
                "callID": "call_w1",
                "state": {
                    "status": "completed",
                    "input": {"filePath": str(cwd / "notes.txt")},
                    "output": "hello from notes.txt: the answer is 42",
                    "title": "notes.txt",
                    "metadata": {},
                    "time": {"start": t0 + 2, "end": t0 + 2},
                },
            },
        )
        part(
            call,
            t0 + 2,
            {
                "type": "tool",
                "tool": "bash",
                "callID": "call_w2",
                "state": {
                    "status": "error",
                    "input": {"command": "false"},
                    "error": "exit 1",
                    "time": {"start": t0 + 2, "end": t0 + 2},
                },
            },
        )
        message(
            answer,
            t0 + 3,
            {
                "parentID": user,
                **assistant,
                "time": {"created": t0 + 3, "completed": t0 + 3},
                "finish": "stop",
            },
        )
        part(answer, t0 + 3, {"type": "text", "text": "It says 42."})
        con.execute("COMMIT")
    finally:
        con.close()
    return session


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _summarize(box: Sandbox, cwd: Path, session: str, log: Any) -> Any:
    """Start ``opencode serve`` on a free loopback port, ask it to summarize, stop it."""
    port = free_port()
    proc = subprocess.Popen(
        [binary(), "serve", "--hostname", "127.0.0.1", "--port", str(port)],
        env={**box.env(), "PWD": str(cwd)},
        cwd=str(cwd),
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{base}/session?directory={cwd}", timeout=5).read()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise Failure("opencode serve did not answer") from None
                time.sleep(0.3)
        request = urllib.request.Request(
            f"{base}/session/{session}/summarize?directory={cwd}",
            method="POST",
            data=json.dumps({"providerID": "loop", "modelID": "m", "auto": False}).encode(),
            headers={"Content-Type": "application/json"},
        )
        answer = json.loads(urllib.request.urlopen(request, timeout=120).read())
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
    return answer


def summarize(box: Sandbox, cwd: Path, session: str) -> tuple[Llm, Any]:
    """A manual compaction: ``opencode serve`` and ``POST /session/ID/summarize``."""
    box.runs += 1
    main = Llm(
        box.work,
        f"main{box.runs}",
        [{"text": "## Objective\n- Read notes.txt.\n\n## Next Move\n1. (none)"}],
    )
    side = Llm(box.work, f"side{box.runs}", [{"text": "unused"}])
    box.configure(main.port, side.port)
    try:
        with open(box.work / "serve.log", "w") as log:
            answer = _summarize(box, cwd, session, log)
    finally:
        main.stop()
        side.stop()
    return main, answer


def probe_written(work: Path, out: Path) -> dict[str, Any]:
    box, cwd = Sandbox(work), fresh_cwd("written")
    made = box.opencode(["session", "list"], cwd)  # creates and migrates the database
    if made.returncode != 0 or not box.db.exists():
        raise Failure(f"session list: {made.stderr.strip()[-300:]}")
    session = write_session(box.db, cwd)
    listed = box.opencode(["session", "list", "--format", "json"], cwd)
    cont, main, side = box.run(["run", "-s", session, "Go", "on."], cwd, [{"text": "Continued."}])
    continued = main_bodies(main)[0]
    compactor, answer = summarize(box, cwd, session)
    compaction = compactor.bodies()[0]
    after, main, _ = box.run(["run", "-s", session, "Next", "step."], cwd, [{"text": "After."}])
    after_body = main_bodies(main)[0]
    con = box.connect()
    tail = [
        json.loads(d)
        for (d,) in con.execute(
            "SELECT data FROM message WHERE session_id=?"
            " ORDER BY time_created DESC, id DESC LIMIT 4",
            (session,),
        )
    ][::-1]
    compaction_part = con.execute(
        "SELECT data FROM part WHERE session_id=? AND data LIKE '%\"compaction\"%'", (session,)
    ).fetchone()
    events = con.execute("SELECT count(*) FROM event WHERE aggregate_id=?", (session,)).fetchone()[
        0
    ]
    con.close()
    box.keep(out, "written")
    box.export(out, session, cwd)
    return {
        "session": session,
        "exit": [cont.returncode, after.returncode],
        "summarize_answer": answer,
        "listed": json.loads(listed.stdout or "[]"),
        "title_requests": len(side.bodies()),
        "continued_request": save(out, "written.request.json", continued),
        "continued_outline": outline(continued),
        "summarize_request": save(out, "written-summarize.request.json", compaction),
        "after_request": save(out, "written-after.request.json", after_body),
        "after_outline": outline(after_body),
        "compaction_part": json.loads(compaction_part[0]) if compaction_part else None,
        "last_messages": tail,
        "events_after_opencode_appended": events,
    }


def probe_import(work: Path, out: Path) -> dict[str, Any]:
    source = out / "subagent.opencode.db"
    exports = sorted(out.glob("*.export.json"))
    if not source.exists() or not exports:
        raise Failure("run the subagent probe first")
    con = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
    forked = con.execute("SELECT id FROM session WHERE title LIKE '%(fork #1)'").fetchone()[0]
    original = {
        i: d for i, d in con.execute("SELECT id, data FROM part WHERE session_id=?", (forked,))
    }
    original_msgs = {
        i: d for i, d in con.execute("SELECT id, data FROM message WHERE session_id=?", (forked,))
    }
    con.close()
    box, cwd = Sandbox(work), fresh_cwd("import")
    done = box.opencode(["import", str(out / f"{forked}.export.json")], cwd)
    if done.returncode != 0:
        raise Failure(f"import: {done.stderr.strip()[-300:]}")
    db = box.connect()
    imported = {
        i: d for i, d in db.execute("SELECT id, data FROM part WHERE session_id=?", (forked,))
    }
    imported_msgs = {
        i: d for i, d in db.execute("SELECT id, data FROM message WHERE session_id=?", (forked,))
    }
    row = db.execute(
        "SELECT directory, path, project_id FROM session WHERE id=?", (forked,)
    ).fetchone()
    events = db.execute("SELECT count(*) FROM event").fetchone()[0]
    db.close()
    # a file whose second message lacks a required key
    broken = json.loads((out / f"{forked}.export.json").read_text())
    broken["info"]["id"] = broken["info"]["id"][:-4] + "Xbad"
    for message in broken["messages"]:
        message["info"]["id"] = message["info"]["id"][:-4] + "Xbad"
        for part in message["parts"]:
            part["id"], part["messageID"] = part["id"][:-4] + "Xbad", message["info"]["id"]
    del broken["messages"][1]["info"]["tokens"]
    bad_file = work / "broken.export.json"
    bad_file.write_text(json.dumps(broken))
    bad = box.opencode(["import", str(bad_file)], cwd)
    db = box.connect()
    left = db.execute(
        "SELECT (SELECT count(*) FROM session WHERE id=?), (SELECT count(*) FROM message"
        " WHERE session_id=?)",
        (broken["info"]["id"],) * 2,
    ).fetchone()
    db.close()
    same = lambda a, b: sum(a[k] == b.get(k) for k in a)  # noqa: E731
    sample = next(k for k in original if '"step-finish"' in original[k])
    return {
        "session": forked,
        "exit": done.returncode,
        "stdout": done.stdout.strip(),
        "row_after_import": {"directory": row[0], "path": row[1], "project_id": row[2]},
        "events_written": events,
        "parts_with_identical_data": [same(original, imported), len(original)],
        "messages_with_identical_data": [same(original_msgs, imported_msgs), len(original_msgs)],
        "step_finish_before": original[sample],
        "step_finish_after": imported[sample],
        "broken_exit": bad.returncode,
        "broken_error": re.sub(r"\x1b\[[0-9;]*m", "", bad.stderr).strip()[-200:],
        "broken_left_rows": {"session": left[0], "messages": left[1]},
    }


def probe_lock(work: Path, out: Path) -> dict[str, Any]:
    del out
    found = {}
    for hold in (3.0, 7.0):
        box, cwd = Sandbox(work / f"hold{int(hold)}"), fresh_cwd(f"lock{int(hold)}")
        if box.opencode(["session", "list"], cwd).returncode != 0:
            raise Failure("session list failed")
        result: dict[str, Any] = {}

        def run(box: Sandbox, cwd: Path, result: dict[str, Any]) -> None:
            started = time.monotonic()
            r, _, _ = box.run(
                ["run", "Run", "echo", "x", "with", "bash."],
                cwd,
                [{"tool": "bash", "arguments": {"command": "sleep 1; echo x"}}, {"text": "done"}],
            )
            result.update(
                exit=r.returncode,
                seconds=round(time.monotonic() - started, 1),
                error=[
                    line
                    for line in r.stderr.splitlines()
                    if "Failed query" in line or "locked" in line
                ][:2],
            )

        worker = threading.Thread(target=run, args=(box, cwd, result))
        worker.start()
        time.sleep(2.0)  # opencode is starting up and writing its project and session rows
        con = sqlite3.connect(str(box.db), timeout=30, isolation_level=None)
        waited = time.monotonic()
        con.execute("BEGIN IMMEDIATE")
        waited = round(time.monotonic() - waited, 3)
        reader = sqlite3.connect(str(box.db), timeout=1)
        readable = reader.execute("SELECT count(*) FROM session").fetchone()[0] >= 0
        reader.close()
        time.sleep(hold)
        con.execute("COMMIT")
        con.close()
        worker.join(RUN_TIMEOUT + 30)
        found[f"held_{hold:g}s"] = {
            "waited_for_lock": waited,
            "reader_ok_meanwhile": readable,
            **result,
        }
    return found


PROBES: dict[str, Callable[[Path, Path], dict[str, Any]]] = {
    "reasoning": probe_reasoning,
    "subagent": probe_subagent,
    "written": probe_written,
    "import": probe_import,
    "lock": probe_lock,
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--only", nargs="*", choices=sorted(PROBES))
    args = parser.parse_args()
    args.out = args.out.resolve()  # opencode runs in other directories
    args.out.mkdir(parents=True, exist_ok=True)
    summary_file = args.out / "probes.json"
    summary = json.loads(summary_file.read_text()) if summary_file.exists() else {}
    summary["opencode"] = subprocess.run(
        [binary(), "--version"], capture_output=True, text=True, timeout=60
    ).stdout.strip()
    status = 0
    for name in args.only or list(PROBES):
        work = Path(tempfile.mkdtemp(prefix=f"opencode-probe-{name}-"))
        try:
            summary[name] = PROBES[name](work, args.out)
            print(f"{name}: ok")
        except (Failure, sqlite3.Error, OSError, StopIteration, IndexError, KeyError) as exc:
            summary[name] = {"error": f"{type(exc).__name__}: {exc}"}
            print(f"{name}: {exc}", file=sys.stderr)
            status = 1
        finally:
            shutil.rmtree(work, ignore_errors=True)
        summary_file.write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n")
    return status


if __name__ == "__main__":
    sys.exit(main())
