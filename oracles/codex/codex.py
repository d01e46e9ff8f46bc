#!/usr/bin/env python3
"""Codex CLI 0.171.0, run whole against a loopback Responses API: its rollouts and what it sends.

    codex.py exec [--home H] [--script S.json] [--provider P] [--model M] [-c KEY=VALUE ...] -- ARGS...
    codex.py context [--out-dir DIR] ROLLOUT.jsonl ...
    codex.py make-fixtures [--out tests/fixtures/codex]
    codex.py findable [--keep DIR]
    codex.py inplace [--out tests/fixtures/codex/inplace] [--python PY] [--only CASE ...]

Every run happens in a network namespace of its own that has only loopback (``unshare -n``, so
root or user namespaces are needed): the driver re-runs itself inside one, brings ``lo`` up,
starts ``responseslog.py`` there on 127.0.0.1 and runs Codex under ``strace -e connect``; a run
that connected anywhere but the server fails. Codex gets a clean environment: ``HOME`` and
``CODEX_HOME`` (``$HOME/.codex``) in a temporary home, the working directory ``PROJECT``, and
``$CODEX_HOME/config.toml`` as issue 25 gives it (``configure``), the provider named after the
rollout's own where one is resumed (Codex refuses a rollout whose provider is not configured).

``exec`` runs ``codex exec --skip-git-repo-check --disable plugins --disable apps ARGS`` once and
prints a JSON summary (exit code, stderr, the requests, the connections, the rollouts written).
``context`` resumes each rollout, a copy in a fresh home, with ``resume <id> "continue"`` and
writes what Codex sent (``<rollout>.codex-request.json``) and the part of it that is the
session's own history (``<rollout>.codex-context.json``; ``session_context``). ``make-fixtures``
has Codex make sessions of its own and writes the hand-written cases, then runs ``context`` on
all of them. ``findable`` answers which rollouts ``resume <id>``, ``resume --last`` and the
picker find (README, "Codex 0.171.0"). ``inplace`` compacts rollouts of the fixtures both ways,
by our ``handoff --in-place`` and by Codex's own ``/compact``, and resumes each result.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
VERSION = "0.171.0"
CODEX = HERE / "node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex"
SERVER = HERE / "responseslog.py"
# Fixed places, so the rollouts Codex writes name the same folders wherever they are replayed.
PROJECT = Path("/tmp/codex-oracle-project")
ORACLE_HOME = Path("/tmp/codex-oracle-home")
MODEL = "fake-model"
PROVIDER = "fake"
# The flags issue 25 gives: no plugins or apps (they would reach for the network).
EXEC = ["exec", "--skip-git-repo-check", "--disable", "plugins", "--disable", "apps"]
NETNS_MARK = "CODEX_ORACLE_NETNS"


# --- the network jail --------------------------------------------------------------------------


def enter_netns() -> None:
    """Run this script again inside a network namespace that has only loopback, once."""
    if os.environ.get(NETNS_MARK) == "1":
        subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
        return
    env = {**os.environ, NETNS_MARK: "1"}
    cmd = ["unshare", "--net", sys.executable, str(Path(sys.argv[0]).resolve()), *sys.argv[1:]]
    sys.exit(subprocess.run(cmd, env=env).returncode)


CONNECT = re.compile(
    r"connect\(\d+, \{sa_family=(AF_INET6?), sin6?_port=htons\((\d+)\), "
    r'(?:sin_addr=inet_addr|inet_pton\(AF_INET6, )\("([^"]+)"\)?.*= (-?\d+)(?: (\w+))?'
)


def connections(strace_log: Path) -> list[str]:
    """The internet connections a run attempted, ``host:port`` each (`` refused: ERRNO`` when
    the namespace turned it away), from strace's log."""
    found = []
    # strace splits a call another thread interrupts: "pid call(... <unfinished ...>", and later
    # "pid <... call resumed>...= result"; the two halves are joined again by pid.
    pending: dict[str, str] = {}
    for line in strace_log.read_text(errors="replace").splitlines():
        pid, _, rest = line.partition(" ")
        if rest.endswith("<unfinished ...>"):
            pending[pid] = rest.removesuffix("<unfinished ...>")
            continue
        if rest.startswith("<... ") and pid in pending:
            rest = pending.pop(pid) + rest.split("resumed>", 1)[-1]
        m = CONNECT.search(rest)
        if m:
            refused = (
                f" refused: {m.group(5)}"
                if m.group(4) == "-1" and m.group(5) != "EINPROGRESS"
                else ""
            )
            found.append(f"{m.group(3)}:{m.group(2)}{refused}")
        elif "htons(53)" in rest and rest.startswith("sendto("):
            found.append("dns:53 refused: ENETUNREACH" if "ENETUNREACH" in rest else "dns:53")
    return found


# --- the loopback server and Codex's configuration ----------------------------------------------


class Server:
    """``responseslog.py`` on an ephemeral loopback port, with a request log and a script."""

    def __init__(self, work: Path, script: list[Any]) -> None:
        self.log = work / "requests.jsonl"
        self.log.write_text("")
        script_file = work / "script.json"
        script_file.write_text(json.dumps(script))
        port_file = work / "port"
        self.proc = subprocess.Popen(
            [
                sys.executable,
                str(SERVER),
                str(self.log),
                "--port-file",
                str(port_file),
                "--script",
                str(script_file),
            ],
            stdout=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while not (port_file.exists() and port_file.read_text().strip()):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise RuntimeError("responseslog.py did not start")
            time.sleep(0.05)
        self.port = int(port_file.read_text())

    def requests(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.log.read_text().splitlines() if line]

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=10)


BUILT_IN = "openai"
"""Codex's built-in provider, which a config may not redefine."""


def configure(codex_home: Path, port: int, provider: str, model: str, extra: list[str]) -> None:
    """``$CODEX_HOME/config.toml`` as issue 25 gives it, the provider called ``provider``."""
    codex_home.mkdir(parents=True, exist_ok=True)
    lines = [
        f'model = "{model}"',
        f'model_provider = "{provider}"',
        'approval_policy = "never"',
        'sandbox_mode = "read-only"',
        "check_for_update_on_startup = false",
        *extra,
        "",
    ]
    if provider == BUILT_IN:
        # Codex will not let a config redefine its own provider; a rollout made with it resumes
        # only under it, pointed at the loopback, with an API key "logged in" in auth.json.
        lines.insert(0, f'openai_base_url = "http://127.0.0.1:{port}/v1"')
        auth = {"OPENAI_API_KEY": "sk-fake-oracle", "tokens": None, "last_refresh": None}
        (codex_home / "auth.json").write_text(json.dumps(auth))
    else:
        lines += [
            f"[model_providers.{provider}]",
            f'name = "{provider}"',
            f'base_url = "http://127.0.0.1:{port}/v1"',
            'wire_api = "responses"',
            'env_key = "FAKE_OPENAI_KEY"',
            "request_max_retries = 0",
            "stream_max_retries = 0",
            "",
        ]
    lines += ["[analytics]", "enabled = false", ""]
    (codex_home / "config.toml").write_text("\n".join(lines))


# --- one run ------------------------------------------------------------------------------------


@dataclass
class Run:
    rc: int
    stdout: str
    stderr: str
    requests: list[dict[str, Any]]
    connections: list[str]
    rollouts: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        return {
            "rc": self.rc,
            "stdout": self.stdout,
            "stderr": self.stderr.splitlines()[-12:],
            "connections": self.connections,
            "rollouts": self.rollouts,
            "requests": self.requests,
        }


def codex_env(home: Path, rust_log: str | None = None) -> dict[str, str]:
    """The whole environment Codex gets: nothing of this machine's but PATH."""
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(home),
        "CODEX_HOME": str(home / ".codex"),
        "FAKE_OPENAI_KEY": "sk-fake",
        "TZ": "UTC",
        "LANG": "C.UTF-8",
        "TERM": "xterm-256color",
    }
    if rust_log:
        env["RUST_LOG"] = rust_log
    return env


def traced(strace_log: Path, args: list[str]) -> list[str]:
    return [
        "strace",
        "-f",
        "-qq",
        "-e",
        "trace=connect,sendto",
        "-o",
        str(strace_log),
        str(CODEX),
        *args,
    ]


def checked_connections(strace_log: Path, port: int, own_loopback: bool = False) -> list[str]:
    """The run's connections; an error if one reached anything but the server (attempts the
    namespace refused, such as the TUI's look-up of api.github.com, are listed, not errors).
    ``own_loopback``: the TUI also talks to its own app server on another loopback port, which
    in this namespace can only be a process of the run."""
    seen = connections(strace_log)
    allowed = f"127.0.0.1:{port}"

    def fine(c: str) -> bool:
        return c == allowed or " refused: " in c or (own_loopback and c.startswith("127.0.0.1:"))

    if not all(fine(c) for c in seen):
        raise RuntimeError(f"Codex connected elsewhere than {allowed}: {seen}")
    return seen


def run_codex(
    home: Path,
    args: list[str],
    script: list[Any] | None = None,
    provider: str = PROVIDER,
    model: str = MODEL,
    extra: list[str] | None = None,
    cwd: Path = PROJECT,
    rust_log: str | None = None,
    timeout: float = 120,
) -> Run:
    """Run ``codex ARGS`` once with HOME ``home`` (CODEX_HOME ``home/.codex``) against a fresh
    server. The config is written first; everything the run leaves stays in ``home``."""
    work = Path(tempfile.mkdtemp(prefix="codex-run-"))
    server = Server(work, script or [{"text": "ok"}])
    try:
        configure(home / ".codex", server.port, provider, model, extra or [])
        before = {p: p.stat().st_size for p in rollout_files(home / ".codex")}
        proc = subprocess.run(
            traced(work / "strace.txt", args),
            cwd=cwd,
            env=codex_env(home, rust_log),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        seen = checked_connections(work / "strace.txt", server.port)
        written = [
            str(p) for p in rollout_files(home / ".codex") if before.get(p) != p.stat().st_size
        ]
        return Run(proc.returncode, proc.stdout, proc.stderr, server.requests(), seen, written)
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


@dataclass(frozen=True)
class Step:
    """Wait until the screen shows ``until`` (and no longer ``busy``), then type ``keys``."""

    until: str
    keys: str = ""
    busy: str = "Working"


def run_tui(
    home: Path,
    args: list[str],
    steps: list[Step],
    script: list[Any] | None = None,
    provider: str = PROVIDER,
    model: str = MODEL,
    extra: list[str] | None = None,
    cwd: Path = PROJECT,
    timeout: float = 60,
) -> tuple[Run, list[str]]:
    """Run the interactive ``codex ARGS`` in a pseudo-terminal (200x50) and play ``steps``;
    the run, and the screen after each step (pyte renders it). Always ``--no-daemon``: the
    shared app-server daemon would outlive the run."""
    import fcntl
    import pty
    import select
    import struct
    import termios

    sys.path.insert(0, str(HERE / "pylib"))
    import pyte  # installed by setup.sh into pylib/

    work = Path(tempfile.mkdtemp(prefix="codex-tui-"))
    server = Server(work, script or [{"text": "ok"}])
    screen = pyte.Screen(200, 50)
    stream = pyte.ByteStream(screen)
    screens: list[str] = []
    try:
        configure(home / ".codex", server.port, provider, model, extra or [])
        before = {p: p.stat().st_size for p in rollout_files(home / ".codex")}
        argv = traced(work / "strace.txt", ["--no-daemon", *args])
        pid, fd = pty.fork()
        if pid == 0:
            os.chdir(cwd)
            os.execve("/usr/bin/strace", argv, codex_env(home))
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))

        def pump(seconds: float) -> None:
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                ready, _, _ = select.select([fd], [], [], 0.1)
                if not ready:
                    continue
                try:
                    data = os.read(fd, 65536)
                except OSError:
                    return
                # The terminal queries crossterm makes at start: answer as a terminal would.
                if b"\x1b[6n" in data:
                    os.write(fd, b"\x1b[1;1R")
                if b"\x1b[c" in data:
                    os.write(fd, b"\x1b[?62c")
                stream.feed(data)

        def text() -> str:
            return "\n".join(line.rstrip() for line in screen.display)

        deadline = time.monotonic() + timeout
        for step in steps:
            pump(0.5)
            while step.until not in text() or (step.busy and step.busy in text()):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the TUI never showed {step.until!r}:\n{text()}")
                pump(0.3)
            pump(0.5)
            screens.append(text())
            # One key at a time, an escape sequence whole (alone, ESC is a key of its own).
            for key in re.findall(r"\x1b\[[0-9;]*[A-Za-z~]|.", step.keys, re.S):
                os.write(fd, key.encode())
                pump(0.05)
        stop_traced(pid)
        seen = checked_connections(work / "strace.txt", server.port, own_loopback=True)
        written = [
            str(p) for p in rollout_files(home / ".codex") if before.get(p) != p.stat().st_size
        ]
        return Run(0, "", "", server.requests(), seen, written), screens
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


def stop_traced(pid: int) -> None:
    """End the TUI strace runs as ``pid``: strace blocks fatal signals while it writes to a file
    (``-o``), so Codex, its child, is the one told to stop (then killed if it lingers)."""
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for child in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(child), sig)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            if os.waitpid(pid, os.WNOHANG) != (0, 0):
                return
            time.sleep(0.1)


def rollout_files(codex_home: Path) -> list[Path]:
    return sorted((codex_home / "sessions").glob("*/*/*/rollout-*.jsonl"))


def fresh_home(path: Path = ORACLE_HOME) -> Path:
    """An empty home at ``path`` (removed first: the fixed place keeps the rollouts' paths fixed)."""
    shutil.rmtree(path, ignore_errors=True)
    (path / ".codex").mkdir(parents=True)
    return path


def project() -> Path:
    """The fixed project folder, with the file the scripted sessions read."""
    PROJECT.mkdir(parents=True, exist_ok=True)
    (PROJECT / "notes.txt").write_text("alpha\nbeta\ngamma\n")
    return PROJECT


# --- the context oracle ----------------------------------------------------------------------------

PROMPT = "continue"
BASE_INSTRUCTIONS_START = "You are a coding agent running in the Codex CLI"
ROLLOUT_NAME = re.compile(r"^rollout-(\d{4})-(\d\d)-(\d\d)T[\d-]+-([0-9a-fA-F-]{36})\.jsonl$")
# Noise every run prints, kept out of the recorded stderr.
STDERR_NOISE = (
    "Unknown model fake-model",
    "could not find bubblewrap",
    "could not create PATH aliases",
    "Model metadata for `fake-model` not found",
)


def read_lines(path: Path) -> list[Any]:
    """The rollout's lines that are JSON, parsed (the rest skipped, as Codex skips them)."""
    out = []
    for raw in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            out.append(json.loads(raw))
        except ValueError:
            continue
    return out


@dataclass(frozen=True)
class Meta:
    id: str
    provider: str | None
    model: str | None
    timestamp: str


def rollout_meta(path: Path) -> Meta:
    """The session id, provider and latest model a rollout names, as Codex would read them."""
    session: dict[str, Any] | None = None
    model = None
    for line in read_lines(path):
        if not isinstance(line, dict):
            continue
        payload = line.get("payload")
        if line.get("type") == "session_meta" and isinstance(payload, dict) and session is None:
            session = payload
        elif (
            line.get("type") == "turn_context"
            and isinstance(payload, dict)
            and payload.get("model")
        ):
            model = payload["model"]
        elif session is None and "id" in line and "type" not in line:
            session = line  # the bare first version
    if session is None:
        m = ROLLOUT_NAME.match(path.name)
        if not m:
            raise ValueError(f"{path}: no session_meta and no id in the name")
        return Meta(m.group(4), None, model, "")
    return Meta(
        str(session["id"]), session.get("model_provider"), model, str(session.get("timestamp", ""))
    )


def place(path: Path, codex_home: Path, meta: Meta) -> Path:
    """A copy of the rollout where Codex looks for it: its own name, or one made from its id."""
    m = ROLLOUT_NAME.match(path.name)
    if m:
        year, month, day = m.group(1), m.group(2), m.group(3)
        name = path.name
    else:
        when = meta.timestamp[:19] or "2026-11-30T09:00:00"
        year, month, day = when[:4], when[5:7], when[8:10]
        name = f"rollout-{when.replace(':', '-')}-{meta.id}.jsonl"
    folder = codex_home / "sessions" / year / month / day
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(path, folder / name)
    return folder / name


def slim_request(body: dict[str, Any]) -> dict[str, Any]:
    """The request as kept in a fixture: the tools by name, the base instructions by size and
    digest (both are the same in every request; ``request-whole.json`` keeps one as sent)."""
    out = dict(body)
    if isinstance(out.get("tools"), list):
        out["tools"] = [t.get("name") or t.get("type") for t in out["tools"]]
    items = []
    for item in out.get("input", []):
        if item.get("role") == "developer":
            content = []
            for part in item.get("content", []):
                text = part.get("text", "")
                if text.startswith(BASE_INSTRUCTIONS_START):
                    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
                    part = {
                        **part,
                        "text": f"<base instructions: {len(text)} chars, sha256 {digest}…>",
                    }
                content.append(part)
            item = {**item, "content": content}
        items.append(item)
    out["input"] = items
    return out


def message_text(item: dict[str, Any]) -> str:
    return "".join(p.get("text", "") for p in item.get("content") or [] if isinstance(p, dict))


def own_item(item: dict[str, Any]) -> str | None:
    """Why Codex sent ``item`` of its own accord, or None when it is the session's history:
    a developer message (base instructions, permissions, skills, collaboration mode, model
    switch), or a user message that is Codex's environment context or AGENTS.md instructions
    (the fragments of its initial context)."""
    if item.get("type") == "additional_tools":
        return "additional_tools"  # tools Codex lists for this request (a fresh id each time)
    if item.get("type") != "message":
        return None
    if item.get("role") == "developer":
        return "developer"
    if item.get("role") == "user":
        text = message_text(item).strip()
        if text.lower().startswith("<environment_context>") and text.lower().endswith(
            "</environment_context>"
        ):
            return "environment_context"
        # Also the bare "# AGENTS.md instructions" Codex adds when the project's file no longer applies.
        if text.startswith("# AGENTS.md instructions") and text.endswith("</INSTRUCTIONS>"):
            return "agents_instructions"
    return None


def rollout_texts(path: Path) -> set[str]:
    """The texts of every message the rollout holds (its items and its compactions' histories)."""
    texts = set()
    for line in read_lines(path):
        payload = line.get("payload") if isinstance(line, dict) else None
        if not isinstance(payload, dict):
            continue
        items = (
            [payload]
            if line.get("type") == "response_item"
            else payload.get("replacement_history") or []
        )
        texts.update(
            message_text(i) for i in items if isinstance(i, dict) and i.get("type") == "message"
        )
    return texts


def session_context(body: dict[str, Any], texts: set[str], prompt: str = PROMPT) -> dict[str, Any]:
    """The history part of a resume request: ``input`` without Codex's own items (``own_item``)
    and without the new prompt, its last item. ``dropped`` says what was left out, by index, and
    whether the rollout held it (``from``: "rollout") or Codex made it for this request ("codex")."""
    items = body.get("input", [])
    if not items or items[-1].get("role") != "user" or message_text(items[-1]) != prompt:
        raise ValueError("the request does not end with the prompt")
    kept, dropped = [], []
    for index, item in enumerate(items[:-1]):
        why = own_item(item)
        if why:
            dropped.append(
                {
                    "at": index,
                    "why": why,
                    "from": "rollout" if message_text(item) in texts else "codex",
                }
            )
        else:
            kept.append(item)
    dropped.append({"at": len(items) - 1, "why": "prompt", "from": "codex"})
    return {"context": kept, "dropped": dropped}


def resume_oracle(path: Path) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """Resume a copy of ``path`` in a fresh home; what Codex sent, and the context derived."""
    meta = rollout_meta(path)
    home = fresh_home()
    copy = place(path, home / ".codex", meta)
    before = copy.read_bytes()
    run = run_codex(
        home,
        [*EXEC, "resume", meta.id, PROMPT],
        [{"text": "ok"}],
        provider=meta.provider or PROVIDER,
        model=meta.model or MODEL,
        rust_log="warn",
    )
    after = copy.read_bytes()
    appended = after[len(before) :] if after.startswith(before) else None
    record: dict[str, Any] = {
        "codex": VERSION,
        "argv": ["codex", *EXEC, "resume", meta.id, PROMPT],
        "provider": meta.provider or PROVIDER,
        "model": meta.model or MODEL,
        "rc": run.rc,
        "stderr": warnings(run.stderr),
        "appended": None
        if appended is None
        else [
            f"{l.get('type')}/{l['payload'].get('type')}"
            if isinstance(l.get("payload"), dict) and "type" in l["payload"]
            else l.get("type")
            for l in (json.loads(x) for x in appended.decode().splitlines() if x)
        ],
        "requests": [
            slim_request(r["body"]) for r in run.requests if isinstance(r.get("body"), dict)
        ],
    }
    if appended is None:
        record["rewritten"] = True
    # Under the built-in provider Codex first tries a websocket (GETs, answered 404), then POSTs;
    # a rollout over the model's window is compacted first (a request of its own).
    posts = [r["body"] for r in run.requests if isinstance(r.get("body"), dict)]
    turns = [b for b in posts if b.get("input") and message_text(b["input"][-1]) == PROMPT]
    record["before_the_turn"] = len(posts) - len(turns)
    context = None
    if run.rc == 0 and posts:
        # Compacted first: the history is what the compaction request carries, its own prompt
        # (the last item) aside.
        first = posts[0]
        asked = PROMPT if turns and first is turns[0] else message_text(first["input"][-1])
        context = session_context(first, rollout_texts(path), asked)
    return record, context


def cmd_context(args: argparse.Namespace) -> None:
    project()
    for name in args.rollouts:
        path = Path(name)
        record, context = resume_oracle(path)
        write_json(path.with_name(path.name + ".codex-request.json"), record)
        if context is not None:
            write_json(path.with_name(path.name + ".codex-context.json"), context)
        print(
            json.dumps(
                {
                    "path": name,
                    "rc": record["rc"],
                    "context": None if context is None else len(context["context"]),
                    "stderr": record["stderr"][-3:],
                }
            )
        )


def write_json(path: Path, value: Any) -> None:
    path.write_text(json.dumps(value, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


# --- sessions Codex makes itself ------------------------------------------------------------------

# Auto-compaction: Codex compacts once the usage a response reports reaches this many tokens
# (the fallback metadata of an unknown model has no limit of its own).
COMPACT_AT = "model_auto_compact_token_limit = 20000"
FULL = {
    "input_tokens": 50000,
    "input_tokens_details": {"cached_tokens": 0},
    "output_tokens": 10,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 50010,
}


@dataclass(frozen=True)
class Turn:
    """One ``codex exec`` run of a made session: the prompt and what the server answers."""

    prompt: str
    script: list[Any]


# Each session: its first turn is ``exec PROMPT``, the others ``exec resume <id> PROMPT``.
MADE: dict[str, list[Turn]] = {
    "chat": [
        Turn("Say hello.", [{"text": "Hello."}]),
        Turn("Say it again.", [{"text": "Hello again."}]),
    ],
    "tools": [
        Turn(
            "How many lines does notes.txt have, and what is the first?",
            [
                [
                    {
                        "reasoning": "I should look at the file.",
                        "encrypted": "gAAAA-made-reasoning-1",
                    },
                    {"call": "exec_command", "arguments": {"cmd": "wc -l notes.txt"}},
                    {"call": "exec_command", "arguments": {"cmd": "head -1 notes.txt"}},
                ],
                [
                    {"reasoning": "", "encrypted": "gAAAA-made-reasoning-2"},
                    {"text": "3 lines; the first is alpha."},
                ],
            ],
        ),
        Turn(
            "And the last?",
            [
                [{"call": "exec_command", "arguments": {"cmd": "tail -1 notes.txt"}}],
                {"text": "gamma."},
            ],
        ),
    ],
    # The first answer reports a full context, so the next turn begins with a compaction: Codex
    # asks the model for a summary (its compaction prompt) and records a ``compacted`` line.
    "compact": [
        Turn("First question.", [{"text": "First answer.", "usage": FULL}]),
        Turn(
            "Second question.",
            [{"text": "SUMMARY-MADE: one question was answered."}, {"text": "Second answer."}],
        ),
        Turn("Third question.", [{"text": "Third answer."}]),
    ],
}
SESSION_ID = re.compile(r"^session id: ([0-9a-f-]{36})$", re.M)


def make_sessions(home: Path) -> dict[str, str]:
    """Drive every ``MADE`` session in ``home``; the id each got."""
    ids: dict[str, str] = {}
    for name, turns in MADE.items():
        for turn in turns:
            args = (
                [*EXEC, turn.prompt]
                if name not in ids
                else [*EXEC, "resume", ids[name], turn.prompt]
            )
            run = run_codex(home, args, turn.script, extra=[COMPACT_AT])
            if run.rc != 0:
                raise RuntimeError(f"{name}: codex exited {run.rc}:\n{run.stderr[-2000:]}")
            m = SESSION_ID.search(run.stderr)
            if not m:
                raise RuntimeError(f"{name}: no session id in:\n{run.stderr[-2000:]}")
            ids.setdefault(name, m.group(1))
    return ids


def make_tui_session(home: Path) -> tuple[str, list[str]]:
    """An interactive session (source ``cli``, named in ``session_index.jsonl``): one turn, then
    ``/compact`` typed in the TUI; its id and the paths of the requests it made."""
    run, _ = run_tui(
        home,
        ["Say hello from the TUI."],
        [
            Step(until="Hello from the TUI.", keys="/compact"),
            Step(until="/compact", keys="\r"),
            Step(until=""),
        ],
        script=[
            {"text": "Hello from the TUI."},
            {"text": "SUMMARY-TUI: a greeting was exchanged."},
        ],
    )
    compacted = len(run.rollouts) == 1 and '"type":"compacted"' in Path(run.rollouts[0]).read_text()
    if not compacted:
        raise RuntimeError(
            f"the TUI session did not compact: {[r['path'] for r in run.requests]}, {run.rollouts}"
        )
    name = ROLLOUT_NAME.match(Path(run.rollouts[0]).name)
    assert name is not None
    return name.group(4), [
        f"{r['method']} {r['path']} {len((r['body'] or {}).get('input', []))} items"
        for r in run.requests
    ]


def dump_sqlite(path: Path) -> dict[str, Any]:
    """A SQLite file as its tables' schemas and rows (the migration log by count only)."""
    import sqlite3

    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        out: dict[str, Any] = {}
        tables = con.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY name"
        ).fetchall()
        for table, sql in tables:
            cur = con.execute(f'SELECT * FROM "{table}"')
            columns = [d[0] for d in cur.description]
            rows = [dict(zip(columns, row, strict=True)) for row in cur.fetchall()]
            entry: dict[str, Any] = {"schema": sql, "count": len(rows)}
            if table not in ("_sqlx_migrations", "sqlite_sequence"):
                entry["rows"] = rows
            out[table] = entry
        return out
    finally:
        con.close()


def keep_home(codex_home: Path, out: Path, names: dict[str, str]) -> list[Path]:
    """Copy what Codex wrote that a reader meets: the rollouts (under ``sessions/`` as Codex
    placed them), ``session_index.jsonl`` when there is one, the state and history databases as
    JSON dumps, and ``sessions.json`` (fixture name -> id). The rollouts copied, in order."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    kept = []
    for path in rollout_files(codex_home):
        target = out / path.relative_to(codex_home)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        kept.append(target)
    if (codex_home / "session_index.jsonl").exists():
        shutil.copyfile(codex_home / "session_index.jsonl", out / "session_index.jsonl")
    for db in sorted(codex_home.glob("*.sqlite")):
        if db.name.startswith(("state_", "thread_history_")):
            write_json(out / f"{db.name}.json", dump_sqlite(db))
    write_json(out / "sessions.json", names)
    return kept


def cmd_make(args: argparse.Namespace) -> None:
    project()
    out = Path(args.out)
    home = fresh_home()
    ids = make_sessions(home)
    ids["tui"], tui_paths = make_tui_session(home)
    made = keep_home(home / ".codex", out / "made", ids)
    write_json(out / "made" / "tui-requests.json", tui_paths)
    (out / "written").mkdir(parents=True, exist_ok=True)
    import rollouts

    written = []
    for name, rollout in rollouts.written().items():
        path = out / "written" / f"{name}.jsonl"
        path.write_text(rollout.text(), encoding="utf-8")
        written.append(path)
    for path in [*made, *written]:
        record, context = resume_oracle(path)
        write_json(path.with_name(path.name + ".codex-request.json"), record)
        if context is not None:
            write_json(path.with_name(path.name + ".codex-context.json"), context)
        print(
            json.dumps(
                {
                    "path": str(path.relative_to(out)),
                    "rc": record["rc"],
                    "context": None if context is None else len(context["context"]),
                }
            )
        )


# --- candidate new sessions, an exchange in an old one, and what finds them ---------------------------

DOCUMENT = (
    "# Handoff HANDOFF-DOC-7f3a\n\nThe work so far: notes.txt holds three lines (alpha, beta, gamma);"
    " the next step is to add a fourth.\n"
)
MARK = "HANDOFF-DOC-7f3a"
PICKER_COUNT = re.compile(r"(\d+) / (\d+) · ")


def carried(body: dict[str, Any], mark: str = MARK) -> list[dict[str, Any]]:
    """Where the request's input holds ``mark``: each item's index, type and role."""
    return [
        {"at": i, "type": item.get("type"), "role": item.get("role")}
        for i, item in enumerate(body.get("input", []))
        if mark in json.dumps(item, ensure_ascii=False)
    ]


def in_state(codex_home: Path, thread: str) -> bool:
    """Whether the state database has a row for ``thread``."""
    import sqlite3

    db = next(iter(sorted(codex_home.glob("state_*.sqlite"))), None)
    if db is None:
        return False
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return con.execute("SELECT 1 FROM threads WHERE id = ?", (thread,)).fetchone() is not None
    finally:
        con.close()


def warnings(stderr: str) -> list[str]:
    """Codex's WARN/ERROR lines and its error message, without the timestamps or the noise."""
    out = []
    for line in stderr.splitlines():
        if ("WARN" in line or "ERROR" in line or line.lower().startswith("error")) and not any(
            n in line for n in STDERR_NOISE
        ):
            out.append(re.sub(r"^\S+Z\s+", "", line).replace(str(ORACLE_HOME), "$HOME"))
    return out


def resumed(run: Run) -> str | None:
    """The session a run's first request belongs to (Codex names it in ``client_metadata``)."""
    if not run.requests:
        return None
    return run.requests[0]["body"].get("client_metadata", {}).get("session_id")


def picker(home: Path, mark: str) -> dict[str, Any]:
    """What the picker lists: ``codex resume`` as it opens (sessions of this cwd, interactive
    ones only) and ``codex resume --all --include-non-interactive`` (every session); for each the
    count it shows, its rows, and whether one shows ``mark``."""
    out: dict[str, Any] = {}
    for key, args in (
        ("default", ["resume"]),
        ("all", ["resume", "--all", "--include-non-interactive"]),
    ):
        _, screens = run_tui(home, args, [Step(until=" / ", busy="Loading")])
        lines = [line.strip() for line in screens[-1].splitlines() if line.strip()]
        m = PICKER_COUNT.search(screens[-1])
        start = next((i + 1 for i, line in enumerate(lines) if line == "Type to search"), 0)
        rows = [line for line in lines[start:] if not line.startswith("───")][
            : max(0, int(m.group(2)) if m else 0)
        ]
        out[key] = {
            "listed": int(m.group(2)) if m else None,
            "rows": rows,
            "shows_document": any(mark in r for r in rows),
        }
    return out


def base_home() -> tuple[Path, str]:
    """A fresh home where Codex has made one session of its own (so its state database exists
    and has been backfilled): the home and that session's id."""
    home = fresh_home()
    run = run_codex(home, [*EXEC, "Say hello from the made session."], [{"text": "Hello."}])
    m = SESSION_ID.search(run.stderr)
    if run.rc != 0 or not m:
        raise RuntimeError(f"the base session failed:\n{run.stderr[-2000:]}")
    return home, m.group(1)


# The day the kept candidate files are dated (each run dates its copies now).
FIXED_DAY = datetime(2026, 12, 1, 12, 0, 0, tzinfo=timezone.utc)


def newer() -> datetime:
    """A start time a little after now: a candidate is the newest session of its home (the
    candidates add up to 9 seconds to it)."""
    return datetime.now(timezone.utc) + timedelta(seconds=1)


def write_candidate(home: Path, rollout: Any) -> Path:
    meta = rollout.lines[0]["payload"] if "payload" in rollout.lines[0] else rollout.lines[0]
    when = meta["timestamp"][:19].replace(":", "-")
    folder = home / ".codex" / "sessions" / when[:4] / when[5:7] / when[8:10]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"rollout-{when}-{rollout.id}.jsonl"
    path.write_text(rollout.text(), encoding="utf-8")
    return path


def try_candidate(name: str, make: Any) -> dict[str, Any]:
    """Offer one candidate to Codex in three fresh homes that each hold a session Codex made:
    the picker, ``exec resume --last`` and ``exec resume <id>``, each the first thing run after
    the candidate was written (so it is not yet in the state database), and after the resume by
    id the picker and ``--last`` again."""
    out: dict[str, Any] = {"name": name}
    home, base = base_home()
    rollout = make(newer())
    path = write_candidate(home, rollout)
    out["file"] = str(path.relative_to(home / ".codex"))
    out["in_state_before"] = in_state(home / ".codex", rollout.id)
    out["picker_before"] = picker(home, MARK)
    out["in_state_after_picker"] = in_state(home / ".codex", rollout.id)

    home, base = base_home()
    write_candidate(home, make(newer()))
    run = run_codex(home, [*EXEC, "resume", "--last", PROMPT], rust_log="warn")
    who = resumed(run)
    out["exec_resume_last_before"] = {
        "rc": run.rc,
        "resumed": "candidate" if who == rollout.id else "base" if who == base else who,
        "warnings": warnings(run.stderr),
    }

    home, base = base_home()
    write_candidate(home, make(newer()))
    _, screens = run_tui(
        home, ["resume", "--last"], [Step(until="\u203a", busy="Loading"), Step(until="")]
    )
    shown = " ".join(screens[-1].split())
    out["tui_resume_last_before"] = {
        "resumed": "candidate"
        if MARK in shown
        else "base"
        if "Say hello from the made session." in shown
        else None,
        "in_state_after": in_state(home / ".codex", rollout.id),
        # The screen's text lines (the logo's braille art left out).
        "screen": [
            l.strip()
            for l in screens[-1].splitlines()
            if l.strip() and not re.search("[\u2800-\u28ff]", l)
        ],
    }

    home, base = base_home()
    path = write_candidate(home, make(newer()))
    before = path.read_bytes()
    run = run_codex(home, [*EXEC, "resume", rollout.id, PROMPT], rust_log="warn")
    body = run.requests[0]["body"] if run.requests else {}
    after = path.read_bytes()
    out["exec_resume_id"] = {
        "rc": run.rc,
        "warnings": warnings(run.stderr),
        "document_at": carried(body),
        "input": [f"{i.get('type')}/{i.get('role', '')}" for i in body.get("input", [])],
        "appended_only": after.startswith(before),
        "in_state_after": in_state(home / ".codex", rollout.id),
    }
    if run.rc == 0:
        out["picker_after"] = picker(home, MARK)
        run = run_codex(home, [*EXEC, "resume", "--last", "again"], rust_log="warn")
        who = resumed(run)
        out["exec_resume_last_after"] = {
            "rc": run.rc,
            "resumed": "candidate" if who == rollout.id else "base" if who == base else who,
        }
    return out


def try_exchange() -> dict[str, Any]:
    """Record a handoff exchange into a session Codex made (``rollouts.exchange``), then resume it
    by id: whether Codex takes the file as changed and what its next request carries."""
    import rollouts

    home, base = base_home()
    path = rollout_files(home / ".codex")[0]
    lines = read_lines(path)
    now = datetime.now(timezone.utc)
    request = f"Hand this session off. {MARK}-REQUEST"
    answer = f"Handed off to a new session ({MARK}-ANSWER)."
    added = rollouts.exchange(lines, request, answer, now)
    with path.open("a", encoding="utf-8") as f:
        for line in added:
            f.write(json.dumps(line, ensure_ascii=False) + "\n")
    run = run_codex(home, [*EXEC, "resume", base, PROMPT], rust_log="warn")
    body = run.requests[0]["body"] if run.requests else {}
    return {
        "lines_added": added,
        "rc": run.rc,
        "warnings": warnings(run.stderr),
        "request_at": carried(body, f"{MARK}-REQUEST"),
        "answer_at": carried(body, f"{MARK}-ANSWER"),
        "input": [f"{i.get('type')}/{i.get('role', '')}" for i in body.get("input", [])],
        "picker": picker(home, f"{MARK}-REQUEST"),
    }


def cmd_candidates(args: argparse.Namespace) -> None:
    import rollouts

    project()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    names = list(rollouts.candidates(DOCUMENT, newer()))
    results = []
    for name in names:
        if args.only and name not in args.only:
            continue
        make = lambda when, name=name: rollouts.candidates(DOCUMENT, when)[name]  # noqa: E731
        (out / f"{name}.jsonl").write_text(make(FIXED_DAY).text(), encoding="utf-8")
        result = try_candidate(name, make)
        results.append(result)
        print(json.dumps(result, ensure_ascii=False)[:400], flush=True)
    exchange = try_exchange()
    print(json.dumps(exchange, ensure_ascii=False)[:400], flush=True)
    write_json(
        out / "results.json",
        {"codex": VERSION, "document": DOCUMENT, "candidates": results, "exchange": exchange},
    )


# --- compactions: Codex's own /compact, and our --in-place, of the same rollouts ---------------

# Each case: a rollout of the fixtures (relative to tests/fixtures/codex/).
COMPACTED = {
    "chat": "made/sessions/2026/12/01/rollout-2026-12-01T13-43-12-01a231d8-5ae3-7510-969c-d405aff90f90.jsonl",
    "tools": "made/sessions/2026/12/01/rollout-2026-12-01T13-43-14-01a231d8-6485-70d0-866d-03e1c0f10e57.jsonl",
    "compact": "made/sessions/2026/12/01/rollout-2026-12-01T13-43-18-01a231d8-7227-7540-8ede-d019dcb986ca.jsonl",
    "contextual": "written/contextual-items.jsonl",
    "mixed": "written/mixed-records.jsonl",
    "long": "written/long-prompts.jsonl",
    "handed": "handoff/tools-new.jsonl",
}
OWN_SUMMARY = "SUMMARY-ORACLE: the work so far."
SUMMARY_START = "Another language model started to solve this problem"


def codex_compaction(path: Path) -> tuple[bytes, list[str]]:
    """Codex's own compaction of a copy of ``path``: ``codex resume <id>`` in the TUI, then
    ``/compact`` typed (the summary scripted as ``OWN_SUMMARY``); the file after it, and the
    types of the lines Codex appended."""
    meta = rollout_meta(path)
    home = fresh_home()
    copy = place(path, home / ".codex", meta)
    before = copy.read_bytes()
    run_tui(
        home,
        ["resume", meta.id],
        [
            Step(until="\u203a", keys="/compact", busy="Loading"),
            Step(until="/compact", keys="\r"),
            Step(until="Context compacted"),
        ],
        script=[{"text": OWN_SUMMARY}],
        provider=meta.provider or PROVIDER,
        model=meta.model or MODEL,
    )
    after = copy.read_bytes()
    if b'"type":"compacted"' not in after[len(before) :]:
        raise RuntimeError(f"{path.name}: Codex wrote no compacted line")
    if not after.startswith(before):
        raise RuntimeError(f"{path.name}: Codex rewrote the rollout")
    added = [json.loads(x) for x in after[len(before) :].decode().splitlines() if x]
    return after, [line_kind(v) for v in added]


def line_kind(value: dict[str, Any]) -> str:
    payload = value.get("payload")
    kind = payload.get("type") if isinstance(payload, dict) else None
    return f"{value.get('type')}/{kind}" if kind else str(value.get("type"))


def our_compaction(path: Path, work: Path, python: str) -> tuple[bytes, list[str]]:
    """Our ``handoff --in-place --model extractive`` of a copy of ``path`` (this checkout's
    code, run by ``python``); the file after it, and the types of the lines it appended."""
    copy = work / path.name
    shutil.copyfile(path, copy)
    before = copy.read_bytes()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(work), "PYTHONPATH": str(REPO)}
    argv = [python, "-m", "handoff_cli", str(copy), "--in-place", "--model", "extractive", "-q"]
    run = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    if run.returncode != 0:
        raise RuntimeError(f"{path.name}: our --in-place failed: {run.stderr}")
    after = copy.read_bytes()
    added = [json.loads(x) for x in after[len(before) :].decode().splitlines() if x]
    return after, [line_kind(v) for v in added]


def history_shape(body: dict[str, Any]) -> list[Any]:
    """A request's input as compared across compactions: each item without its id, a
    summary's text as ``<summary>``."""
    shaped = []
    for item in body.get("input", []):
        item = {k: v for k, v in item.items() if k != "id"}
        if item.get("type") == "message" and message_text(item).startswith(SUMMARY_START):
            item["content"] = "<summary>"
        shaped.append(item)
    return shaped


def compacted_items(data: bytes) -> list[dict[str, Any]]:
    """The replacement history of the last ``compacted`` line of a rollout."""
    lines = [json.loads(x) for x in data.decode().splitlines() if x.strip()]
    last = [v for v in lines if isinstance(v, dict) and v.get("type") == "compacted"][-1]
    return last["payload"]["replacement_history"]


def cmd_inplace(args: argparse.Namespace) -> None:
    project()
    fixtures = REPO / "tests/fixtures/codex"
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {"codex": VERSION, "own_summary": OWN_SUMMARY, "cases": {}}
    if args.only and (out / "results.json").exists():  # the other cases as they were
        results["cases"] = json.loads((out / "results.json").read_text())["cases"]
    for name, source in COMPACTED.items():
        if args.only and name not in args.only:
            continue
        path = fixtures / source
        work = Path(tempfile.mkdtemp(prefix="codex-inplace-"))
        ours, our_lines = our_compaction(path, work, args.python)
        own, own_lines = codex_compaction(path)
        case: dict[str, Any] = {"source": source, "ours_appended": our_lines}
        case["codex_appended"] = own_lines
        requests = {}
        for kind, data in (("ours", ours), ("codex", own)):
            target = out / (f"{name}.jsonl" if kind == "ours" else f"{name}.codex-own.jsonl")
            target.write_bytes(data)
            record, context = resume_oracle(target)
            write_json(target.with_name(target.name + ".codex-request.json"), record)
            if context is not None:
                write_json(target.with_name(target.name + ".codex-context.json"), context)
            case[f"{kind}_resumed"] = {"rc": record["rc"], "warnings": record["stderr"]}
            requests[kind] = record["requests"][0] if record["requests"] else {}
        ours_shape, own_shape = (history_shape(requests[k]) for k in ("ours", "codex"))
        # Codex's own context is made for each compaction, and ours leaves it to Codex to make
        # when it resumes: the same items, where each one puts them.
        mine = [i for i in ours_shape if not own_item(i)]
        theirs = [i for i in own_shape if not own_item(i)]
        case["same_history_but_summary_and_ids"] = mine == theirs
        case["own_context"] = {
            kind: [(i, own_item(item)) for i, item in enumerate(shape) if own_item(item)]
            for kind, shape in (("ours", ours_shape), ("codex", own_shape))
        }
        case["same_own_context"] = [i for i in ours_shape if own_item(i)] == [
            i for i in own_shape if own_item(i)
        ]
        if mine != theirs:
            case["differences"] = [
                {"at": i, "ours": a, "codex": b}
                for i, (a, b) in enumerate(zip(mine, theirs, strict=False))
                if a != b
            ][:6] + [{"lengths": [len(mine), len(theirs)]}]
        if name == "tools":  # Codex compacting again what our compaction left
            again, again_lines = codex_compaction(out / f"{name}.jsonl")
            target = out / f"{name}.then-codex-own.jsonl"
            target.write_bytes(again)
            record, context = resume_oracle(target)
            write_json(target.with_name(target.name + ".codex-request.json"), record)
            if context is not None:
                write_json(target.with_name(target.name + ".codex-context.json"), context)
            kept = [message_text(i) for i in compacted_items(again) if i.get("role") == "user"]
            case["then_codex"] = {
                "appended": again_lines,
                "rc": record["rc"],
                "warnings": record["stderr"],
                "our_summary_kept_as_a_user_message": any("<handoff-context>" in t for t in kept[:-1]),
            }
        results["cases"][name] = case
        print(json.dumps({name: {k: v for k, v in case.items() if k != "differences"}})[:600], flush=True)
        shutil.rmtree(work, ignore_errors=True)
    write_json(out / "results.json", results)


# --- commands -----------------------------------------------------------------------------------


def cmd_exec(args: argparse.Namespace) -> None:
    home = Path(args.home) if args.home else fresh_home()
    project()
    script = json.loads(Path(args.script).read_text()) if args.script else None
    run = run_codex(
        home,
        [*EXEC, *args.args],
        script,
        args.provider,
        args.model,
        args.config,
        rust_log=args.rust_log,
    )
    print(json.dumps(run.summary(), ensure_ascii=False))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("exec")
    p.add_argument("--home")
    p.add_argument("--script")
    p.add_argument("--provider", default=PROVIDER)
    p.add_argument("--model", default=MODEL)
    p.add_argument("-c", "--config", action="append", default=[])
    p.add_argument("--rust-log")
    p.add_argument("args", nargs=argparse.REMAINDER)
    p = sub.add_parser("context")
    p.add_argument("rollouts", nargs="+")
    p = sub.add_parser("candidates")
    p.add_argument("--out", default=str(REPO / "tests/fixtures/codex/candidates"))
    p.add_argument("--only", action="append")
    p = sub.add_parser("make")
    p.add_argument("--out", default=str(REPO / "tests/fixtures/codex"))
    p = sub.add_parser("inplace")
    p.add_argument("--out", default=str(REPO / "tests/fixtures/codex/inplace"))
    p.add_argument("--python", default=str(REPO / ".venv/bin/python"), help="runs handoff_cli")
    p.add_argument("--only", action="append")
    args = parser.parse_args()
    if args.command == "exec" and args.args[:1] == ["--"]:
        args.args = args.args[1:]
    enter_netns()
    commands = {
        "exec": cmd_exec,
        "context": cmd_context,
        "make": cmd_make,
        "candidates": cmd_candidates,
        "inplace": cmd_inplace,
    }
    commands[args.command](args)


if __name__ == "__main__":
    main()
