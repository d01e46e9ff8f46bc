"""Gemini CLI 0.61.0, run whole against a loopback Gemini API (``geminilog.py``): the chats it
records and what it sends when it resumes one.

    python3 oracles/gemini/gemini.py make --out DIR
    python3 oracles/gemini/gemini.py next (--file CHAT | --home H --session ID) [--cwd C]
                                          [--prompt TEXT] --out FILE.json

Install first: ``cd oracles/gemini && npm ci`` (``npm i @google/gemini-cli@0.61.0`` made the
lockfile; Node 20 runs it). Offline: ``GEMINI_API_KEY`` with ``security.auth.selectedType:
"gemini-api-key"`` in ``$GEMINI_CLI_HOME/.gemini/settings.json`` (the gateway auth that
``GOOGLE_GEMINI_BASE_URL`` alone selects is refused in print mode), ``GOOGLE_GEMINI_BASE_URL``
the loopback, folder trust, telemetry, updates and the IDE off.

make: in a fresh home and cwd (``main.py``), a prompt whose scripted answer calls ``read_file``
then answers, then ``--resume latest`` with another; DIR gets the home's ``.gemini`` files.

next: resumes the chat (``--file``: copied first into a fresh home's project folder for the cwd,
``/tmp/gemini-oracle/<slug>`` unless ``--cwd``) with ``-p TEXT`` and writes the first request
it sends: ``{"model", "contents", "sent"}``, where ``sent`` is the history as the request holds
it (the contents without the session context the CLI puts first and the prompt it puts last).
Exit 1 with one line when the CLI refuses or sends nothing.
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
CLI = HERE / "node_modules/.bin/gemini"
SETTINGS = {
    "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
    "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
    "ide": {"enabled": False},
}
MODEL = "gemini-2.5-flash"
TIMEOUT = 180


class Refusal(Exception):
    pass


def _server(log: Path, script: list[dict[str, Any]]) -> tuple[subprocess.Popen[bytes], int]:
    script_file = log.with_suffix(".script.json")
    script_file.write_text(json.dumps(script))
    port_file = log.with_suffix(".port")
    server = subprocess.Popen(
        [sys.executable, str(HERE / "geminilog.py"), str(log), "--port-file", str(port_file),
         "--script", str(script_file)],
        stdout=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 10
    while not port_file.exists() or not port_file.read_text():
        if time.monotonic() > deadline:
            server.kill()
            raise Refusal("the loopback server did not start")
        time.sleep(0.05)
    return server, int(port_file.read_text())


def _home(home: Path) -> None:
    (home / ".gemini").mkdir(parents=True, exist_ok=True)
    (home / ".gemini/settings.json").write_text(json.dumps(SETTINGS))


def _run(home: Path, cwd: Path, port: int, args: list[str]) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ["PATH"], "HOME": str(home), "GEMINI_CLI_HOME": str(home),
        "GEMINI_API_KEY": "x", "GOOGLE_GEMINI_BASE_URL": f"http://127.0.0.1:{port}",
        "NO_COLOR": "1", "TERM": "dumb",
    }  # fmt: skip
    return subprocess.run(
        [str(CLI), *args, "-m", MODEL, "--yolo"], cwd=cwd, env=env, capture_output=True,
        text=True, timeout=TIMEOUT,
    )  # fmt: skip


def make(out: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="gemini-make-") as tmp:
        home, cwd = Path(tmp, "home"), Path(tmp, "app")
        cwd.mkdir()
        (cwd / "main.py").write_text("print(1)\n")
        _home(home)
        script = [{"call": "read_file", "args": {"file_path": "main.py"}}, {"text": "It prints 1."},
                  {"text": "Then run it with python3."}]  # fmt: skip
        server, port = _server(Path(tmp, "log.jsonl"), script)
        try:
            for args in (
                ["-p", "What does main.py print?"],
                ["--resume", "latest", "-p", "How do I run it?"],
            ):
                done = _run(home, cwd, port, args)
                if done.returncode != 0:
                    raise Refusal(f"gemini exited {done.returncode}: {done.stderr.strip()[-300:]}")
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(10)
        for path in sorted((home / ".gemini/tmp").rglob("session-*.json*")):
            target = out / path.relative_to(home)
            target.parent.mkdir(parents=True, exist_ok=True)
            text = path.read_text().replace(str(cwd), "/tmp/gemini-oracle/app")
            target.write_text(text)
            print(target)


def _session_id(chat: Path) -> str:
    first = chat.read_text(encoding="utf-8").lstrip()
    found = re.match(r'\{\s*"sessionId"\s*:\s*"([^"]+)"', first)
    if found is None:
        raise Refusal(f"{chat}: no sessionId")
    return found.group(1)


def _slug(cwd: Path) -> str:
    return re.sub(r"-+", "-", re.sub(r"[^a-z0-9]", "-", cwd.name.lower())).strip("-") or "project"


def next_request(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="gemini-next-") as tmp:
        if args.file is not None:
            home = Path(tmp, "home")
            _home(home)
            cwd = Path(args.cwd or f"/tmp/gemini-oracle/{args.file.parent.parent.name}")
            cwd.mkdir(parents=True, exist_ok=True)
            project = home / ".gemini/tmp" / _slug(cwd)
            (project / "chats").mkdir(parents=True)
            (project / ".project_root").write_text(str(cwd))
            shutil.copyfile(args.file, project / "chats" / args.file.name)
            session = _session_id(args.file)
        else:
            home, cwd, session = args.home, Path(args.cwd), args.session
            _home(home)
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
        generate = [
            r for r in requests if "GenerateContent" in r["path"] or "generateContent" in r["path"]
        ]
        if done.returncode != 0 or not generate:
            raise Refusal(f"gemini exited {done.returncode}: {done.stderr.strip()[-300:]}")
        first = generate[0]
        contents = first["body"]["contents"]
        sent = [dict(c) for c in contents]
        parts = sent[0]["parts"] if sent else []
        if parts and str(parts[0].get("text", "")).startswith("<session_context>"):
            sent[0] = {**sent[0], "parts": parts[1:]}
            if not sent[0]["parts"]:
                sent = sent[1:]
        last = sent[-1]["parts"] if sent else []
        if last and last[-1].get("text") == args.prompt:
            sent[-1] = {**sent[-1], "parts": last[:-1]}
            if not sent[-1]["parts"]:
                sent = sent[:-1]
        model = first["path"].split("/models/")[1].split(":")[0]
        record = {"model": model, "session": session, "code": done.returncode, "sent": sent,
                  "contents": contents}  # fmt: skip
        args.out.write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    made = sub.add_parser("make")
    made.add_argument("--out", type=Path, required=True)
    following = sub.add_parser("next")
    following.add_argument("--file", type=Path)
    following.add_argument("--home", type=Path)
    following.add_argument("--session")
    following.add_argument("--cwd")
    following.add_argument("--prompt", default="next")
    following.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    try:
        make(args.out) if args.command == "make" else next_request(args)
    except (Refusal, subprocess.TimeoutExpired) as error:
        sys.exit(f"gemini.py: {error}")


if __name__ == "__main__":
    main()
