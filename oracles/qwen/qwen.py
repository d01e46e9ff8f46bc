"""Qwen Code 0.24.4, run whole against the loopback OpenAI-compatible server (``../llmlog.py``):
the sessions it records and what it sends when it resumes one.

    python3 oracles/qwen/qwen.py make --out DIR
    python3 oracles/qwen/qwen.py next --file SESSION.jsonl [--cwd C] [--prompt TEXT] --out FILE.json

Install first: ``cd oracles/qwen && npm ci`` (``npm i @qwen-code/qwen-code@0.24.4`` made the
lockfile; Node 20 runs its bundle). Offline: ``security.auth.selectedType: "openai"`` in
``~/.qwen/settings.json``, ``OPENAI_API_KEY``, ``OPENAI_BASE_URL`` the loopback,
``OPENAI_MODEL``; telemetry, updates and the IDE off.

make: in a fresh home and cwd (``main.py``), a prompt whose scripted answer calls ``read_file``
then answers, then ``--continue`` with another; DIR gets the session file, under
``projects/<cwd>/chats/`` as in the home.

next: copies the session into a fresh home's project folder for its cwd (the one its records
name, made if missing; ``--cwd`` another), resumes it with ``-p TEXT`` and writes the first
request of the conversation (the first one whose system prompt is Qwen Code's own; the memory
subagent's come after): ``{"model", "code", "messages", "sent"}``, ``sent`` the messages
without the system prompt, the ``<system-reminder>`` parts the CLI puts before the first
prompt, and the last user message (its date reminder and the prompt). Exit 1 with one line
when the CLI refuses or sends nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CLI = HERE / "node_modules/.bin/qwen"
LLMLOG = HERE.parent / "llmlog.py"
SETTINGS = {
    "security": {"auth": {"selectedType": "openai"}, "folderTrust": {"enabled": False}},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
    "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
    "ide": {"enabled": False},
}
MODEL = "qwen3-coder-plus"
TIMEOUT = 180
OWN_PROMPT = "You are Qwen Code"


class Refusal(Exception):
    pass


def _server(log: Path, script: list[dict[str, Any]]) -> tuple[subprocess.Popen[bytes], int]:
    script_file, port_file = log.with_suffix(".script.json"), log.with_suffix(".port")
    script_file.write_text(json.dumps(script))
    server = subprocess.Popen(
        [sys.executable, str(LLMLOG), str(log), "--port-file", str(port_file),
         "--script", str(script_file)],
        stdout=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 10
    while not port_file.exists() or not port_file.read_text().strip():
        if time.monotonic() > deadline:
            server.kill()
            raise Refusal("the loopback server did not start")
        time.sleep(0.05)
    return server, int(port_file.read_text())


def _home(home: Path) -> None:
    (home / ".qwen").mkdir(parents=True, exist_ok=True)
    (home / ".qwen/settings.json").write_text(json.dumps(SETTINGS))


def _run(home: Path, cwd: Path, port: int, args: list[str]) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ["PATH"], "HOME": str(home), "OPENAI_API_KEY": "x",
        "OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1", "OPENAI_MODEL": MODEL,
        "QWEN_CODE_SUPPRESS_YOLO_WARNING": "1", "NO_COLOR": "1", "TERM": "dumb",
    }  # fmt: skip
    return subprocess.run(
        [str(CLI), *args, "--yolo"], cwd=cwd, env=env, capture_output=True, text=True,
        timeout=TIMEOUT,
    )  # fmt: skip


def _folder(cwd: Path) -> str:
    return re.sub(r"[^a-zA-Z0-9]", "-", str(cwd))


def make(out: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="qwen-make-") as tmp:
        home, cwd = Path(tmp, "home"), Path(tmp, "app")
        cwd.mkdir()
        (cwd / "main.py").write_text("print(1)\n")
        _home(home)
        script = [{"tool": "read_file", "arguments": {"file_path": str(cwd / "main.py")}},
                  {"text": "It prints 1."}, {"text": "Run it with python3 main.py."}]  # fmt: skip
        server, port = _server(Path(tmp, "log.jsonl"), script)
        try:
            for args in (
                ["-p", "What does main.py print?"],
                ["--continue", "-p", "How do I run it?"],
            ):
                done = _run(home, cwd, port, args)
                if done.returncode != 0:
                    raise Refusal(f"qwen exited {done.returncode}: {done.stderr.strip()[-300:]}")
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(10)
        for path in sorted((home / ".qwen/projects").rglob("chats/*.jsonl")):
            target = out / "projects" / _folder(Path("/tmp/qwen-oracle/app")) / "chats" / path.name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(path.read_text().replace(str(cwd), "/tmp/qwen-oracle/app"))
            print(target)


def _identity(path: Path) -> tuple[str, str | None]:
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict) and isinstance(value.get("sessionId"), str):
            cwd = value.get("cwd")
            return value["sessionId"], cwd if isinstance(cwd, str) else None
    raise Refusal(f"{path}: no sessionId")


def _moved(path: Path, cwd: Path) -> str:
    """The session's lines with the cwd they name made ``cwd``: the CLI resumes a session only
    in the folder its first record names (``sessionBelongsToCurrentProject``), and a real one
    names its author's (a Windows path, say). Nothing else is changed."""
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            lines.append(line)
            continue
        if isinstance(value, dict) and isinstance(value.get("cwd"), str):
            value["cwd"] = str(cwd)
            line = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        lines.append(line)
    return "\n".join(lines) + "\n"


def _without_reminders(message: dict[str, Any]) -> dict[str, Any] | None:
    content = message.get("content")
    if not isinstance(content, list):
        return message
    kept = [p for p in content if not str(p.get("text", "")).startswith("<system-reminder>")]
    return {**message, "content": kept} if kept else None


def next_request(args: argparse.Namespace) -> None:
    session, recorded_cwd = _identity(args.file)
    cwd = Path(args.cwd or recorded_cwd or "/tmp/qwen-oracle/app")
    with tempfile.TemporaryDirectory(prefix="qwen-next-") as tmp:
        home = Path(tmp, "home")
        _home(home)
        cwd.mkdir(parents=True, exist_ok=True)
        chats = home / ".qwen/projects" / _folder(cwd) / "chats"
        chats.mkdir(parents=True)
        (chats / f"{session}.jsonl").write_text(_moved(args.file, cwd), encoding="utf-8")
        log = Path(tmp, "log.jsonl")
        server, port = _server(log, [{"text": "ok"}])
        try:
            done = _run(home, cwd, port, ["--resume", session, "-p", args.prompt])
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(10)
        requests = (
            [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
        )
        own = [
            r for r in requests
            if r["path"].endswith("/chat/completions")
            and str(r["body"]["messages"][0].get("content", "")).startswith(OWN_PROMPT)
        ]  # fmt: skip
        if done.returncode != 0 or not own:
            raise Refusal(f"qwen exited {done.returncode}: {done.stderr.strip()[-300:]}")
        messages = own[0]["body"]["messages"]
        sent = list(messages[1:-1])
        if sent and sent[0].get("role") == "user":
            first = _without_reminders(sent[0])
            sent = ([first] if first is not None else []) + sent[1:]
        record = {"model": own[0]["body"].get("model"), "session": session, "code": done.returncode,
                  "sent": sent, "messages": messages}  # fmt: skip
        args.out.write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    made = sub.add_parser("make")
    made.add_argument("--out", type=Path, required=True)
    following = sub.add_parser("next")
    following.add_argument("--file", type=Path, required=True)
    following.add_argument("--cwd")
    following.add_argument("--prompt", default="next")
    following.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    try:
        make(args.out) if args.command == "make" else next_request(args)
    except (Refusal, subprocess.TimeoutExpired) as error:
        sys.exit(f"qwen.py: {error}")


if __name__ == "__main__":
    main()
