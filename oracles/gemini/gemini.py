"""Gemini CLI 0.61.0 (npm ``@google/gemini-cli``), run whole and offline against a loopback
Gemini API (``geminilog.py``): the chats it records, and the request it sends when it resumes
one. Stdlib only.

    python3 oracles/gemini/gemini.py make --out DIR
    python3 oracles/gemini/gemini.py next --home H --session ID [--cwd C] [--prompt TEXT]
                                          --out FILE.json [--log LOG.jsonl]
    python3 oracles/gemini/gemini.py next --file CHAT [--home H] [--cwd C] [--prompt TEXT]
                                          --out FILE.json [--log LOG.jsonl]

Install first: ``cd oracles/gemini && npm ci`` (Node 20 runs it).

Offline: ``GEMINI_API_KEY=x`` with ``security.auth.selectedType: "gemini-api-key"`` in the
home's ``.gemini/settings.json`` (``GOOGLE_GEMINI_BASE_URL`` alone makes the CLI pick the
``gateway`` auth, refused in print mode), ``GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:PORT``;
folder trust, telemetry, usage statistics, update checks and the IDE off in settings;
``-m gemini-2.5-flash`` so the model router (an ``auto`` model's classifier call) is skipped.

make: in a fresh home (``GEMINI_CLI_HOME``) and cwd ``app/`` holding ``main.py``, ``-p`` a
prompt whose scripted answers are a ``read_file`` call of main.py then a text, then
``--resume latest -p`` another prompt. DIR gets the home's ``.gemini/projects.json``,
``.gemini/tmp/<slug>/.project_root`` and ``.gemini/tmp/<slug>/chats/…``, with the temporary
cwd written as ``/tmp/gemini-oracle/app`` (its ``projectHash`` as that path's) and the
temporary home as ``/tmp/gemini-oracle/home``.

next: resumes a chat with ``--resume ID -p TEXT`` (TEXT defaults to ``next``) and writes the
FIRST main-chat request it sends (a ``:streamGenerateContent``; side calls are
``:generateContent``) to FILE.json:
``{"model", "path", "session", "code", "contents", "systemInstruction", "tools",
"generationConfig", … (every key of the body), "sent", "side"}``. ``sent`` is ``contents``
without the ``<session_context>`` part the CLI puts first and the prompt it puts last (the
history as sent); ``side`` lists the other requests (path, kind) the run made; the temporary home's path
is written as ``/tmp/gemini-oracle/home``. The home is
never changed: ``--home H`` is copied into a temporary home first (settings overwritten).
``--session``: the chat must already be in H's ``.gemini/tmp/<slug>/chats/``; the cwd is
``--cwd`` or the one ``projects.json`` maps to that slug. ``--file``: the chat is copied into
the project folder of the cwd (``--cwd``, else ``/tmp/gemini-oracle/<slug of the folder above
chats/, or "project">``), registering it in projects.json with a ``.project_root`` when
needed, named ``session-<startTime>-<id8>.<ext>`` if its name is not a session file's; its
``sessionId`` is read from it. ``--log`` keeps every request. Exit 1 with one line naming why
when the CLI refuses (the tail of its stderr) or sends no chat request.
"""

from __future__ import annotations

import argparse
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
STABLE_CWD = "/tmp/gemini-oracle/app"
STABLE_HOME = "/tmp/gemini-oracle/home"


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
    while not port_file.exists():
        if time.monotonic() > deadline or server.poll() is not None:
            server.kill()
            server.wait(5)
            raise Refusal("the loopback server did not start")
        time.sleep(0.05)
    return server, int(port_file.read_text())


def _stop(server: subprocess.Popen[bytes]) -> None:
    server.send_signal(signal.SIGTERM)
    try:
        server.wait(10)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait(5)


def _settings(home: Path) -> None:
    (home / ".gemini").mkdir(parents=True, exist_ok=True)
    (home / ".gemini/settings.json").write_text(json.dumps(SETTINGS, indent=2))


def _run(
    home: Path, cwd: Path, port: int, args: list[str], model: str
) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ["PATH"], "HOME": str(home), "GEMINI_CLI_HOME": str(home),
        "GEMINI_API_KEY": "x", "GOOGLE_GEMINI_BASE_URL": f"http://127.0.0.1:{port}",
        "NO_COLOR": "1", "TERM": "dumb", "TZ": "UTC", "LANG": "C.UTF-8",
    }  # fmt: skip
    try:
        return subprocess.run(
            [str(CLI), *args, "-m", model], cwd=cwd, env=env, capture_output=True,
            text=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    except subprocess.TimeoutExpired as error:
        raise Refusal(f"gemini did not finish in {TIMEOUT}s: {_tail(error.stderr)}") from None


def _tail(text: str | bytes | None) -> str:
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    lines = [
        line.strip() for line in (text or "").splitlines()
        if line.strip() and not line.startswith(("Warning: ", "YOLO mode", "Ripgrep"))
    ]  # fmt: skip
    return " | ".join(lines[-3:])[-400:] or "(no stderr)"


def _requests(log: Path) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


def _slug(cwd: Path) -> str:
    return re.sub(r"-+", "-", re.sub(r"[^a-z0-9]", "-", cwd.name.lower())).strip("-") or "project"


def _hash(path: str) -> str:
    return hashlib.sha256(path.encode()).hexdigest()


def make(out: Path, model: str) -> None:
    with tempfile.TemporaryDirectory(prefix="gemini-make-") as tmp:
        home, cwd = Path(tmp, "home"), Path(tmp, "app")
        cwd.mkdir()
        (cwd / "main.py").write_text("print(1)\n")
        _settings(home)
        script = [
            {"call": "read_file", "args": {"file_path": "main.py"}},
            {"text": "It prints 1."},
            {"text": "Run it with python3 main.py."},
        ]
        log = Path(tmp, "log.jsonl")
        server, port = _server(log, script)
        try:
            for args in (
                ["-p", "What does main.py print?"],
                ["--resume", "latest", "-p", "How do I run it?"],
            ):
                done = _run(home, cwd, port, [*args, "--yolo"], model)
                if done.returncode != 0:
                    raise Refusal(f"gemini exited {done.returncode}: {_tail(done.stderr)}")
        finally:
            _stop(server)
        served = [r["path"] for r in _requests(log) if r["kind"] == "main"]
        if len(served) < 3:
            raise Refusal(f"gemini made {len(served)} chat requests, not 3")
        gemini = home / ".gemini"
        keep = [gemini / "projects.json"]
        for slug in json.loads((gemini / "projects.json").read_text())["projects"].values():
            project = gemini / "tmp" / slug
            keep += [project / ".project_root", *sorted((project / "chats").rglob("*"))]
        for path in dict.fromkeys(keep):
            if not path.is_file():
                continue
            target = out / path.relative_to(home)
            target.parent.mkdir(parents=True, exist_ok=True)
            text = path.read_text(encoding="utf-8")
            text = text.replace(_hash(str(cwd)), _hash(STABLE_CWD)).replace(str(cwd), STABLE_CWD)
            text = text.replace(str(home), STABLE_HOME)
            target.write_text(text, encoding="utf-8")
            print(target)


def _read_chat(chat: Path) -> dict[str, Any]:
    text = chat.read_text(encoding="utf-8")
    try:
        whole = json.loads(text)
    except ValueError:
        whole = json.loads(text.lstrip().splitlines()[0])
    if not isinstance(whole, dict) or not isinstance(whole.get("sessionId"), str):
        raise Refusal(f"{chat}: no sessionId")
    return whole


def _project(home: Path, cwd: Path) -> Path:
    """The project folder of cwd in home, registered as the CLI would do it."""
    registry = home / ".gemini/projects.json"
    projects = json.loads(registry.read_text())["projects"] if registry.exists() else {}
    slug = projects.get(str(cwd))
    if slug is None:
        base, slug, n = _slug(cwd), _slug(cwd), 0
        while slug in projects.values():
            n += 1
            slug = f"{base}-{n}"
        projects[str(cwd)] = slug
        registry.write_text(json.dumps({"projects": projects}, indent=2))
    folder = home / ".gemini/tmp" / slug
    (folder / "chats").mkdir(parents=True, exist_ok=True)
    if not (folder / ".project_root").exists():
        (folder / ".project_root").write_text(str(cwd))
    return folder


def _cwd_of_session(home: Path, session: str) -> Path:
    registry = home / ".gemini/projects.json"
    projects = json.loads(registry.read_text())["projects"] if registry.exists() else {}
    for cwd, slug in projects.items():
        chats = home / ".gemini/tmp" / slug / "chats"
        if chats.is_dir() and any(p.stem.endswith(session[:8]) for p in chats.iterdir()):
            return Path(cwd)
    raise Refusal(f"no project in {registry} holds a chat of session {session}; give --cwd")


def _strip(contents: list[dict[str, Any]], prompt: str) -> list[dict[str, Any]]:
    """contents without the session context first and the prompt last."""
    sent = [dict(c) for c in contents]
    parts = sent[0]["parts"] if sent else []
    if parts and str(parts[0].get("text", "")).startswith("<session_context>"):
        sent[0] = {**sent[0], "parts": parts[1:]}
        if not sent[0]["parts"]:
            sent = sent[1:]
    last = sent[-1]["parts"] if sent else []
    if sent and sent[-1].get("role") == "user" and last and last[-1].get("text") == prompt:
        sent[-1] = {**sent[-1], "parts": last[:-1]}
        if not sent[-1]["parts"]:
            sent = sent[:-1]
    return sent


def next_request(args: argparse.Namespace) -> None:
    if (args.file is None) == (args.session is None):
        raise Refusal("give --file CHAT or --home H --session ID")
    if args.session is not None and args.home is None:
        raise Refusal("--session needs --home")
    with tempfile.TemporaryDirectory(prefix="gemini-next-") as tmp:
        home = Path(tmp, "home")
        if args.home is not None:
            if not (args.home / ".gemini").is_dir():
                raise Refusal(f"{args.home}: no .gemini folder")
            shutil.copytree(args.home / ".gemini", home / ".gemini", symlinks=True)
        _settings(home)
        if args.file is not None:
            chat = _read_chat(args.file)
            session = chat["sessionId"]
            above = args.file.parent.parent.name if args.file.parent.name == "chats" else ""
            cwd = Path(args.cwd or f"/tmp/gemini-oracle/{_slug(Path(above or 'project'))}")
            name = args.file.name
            if not re.fullmatch(rf"session-.*-{re.escape(session[:8])}\.jsonl?", name):
                stamp = str(chat.get("startTime") or "1970-01-01T00:00")[:16].replace(":", "-")
                name = f"session-{stamp}-{session[:8]}{args.file.suffix or '.jsonl'}"
            shutil.copyfile(args.file, _project(home, cwd) / "chats" / name)
        else:
            session = args.session
            cwd = Path(args.cwd) if args.cwd else _cwd_of_session(home, session)
            _project(home, cwd)
        cwd.mkdir(parents=True, exist_ok=True)
        log = Path(tmp, "log.jsonl")
        server, port = _server(log, [{"text": "ok"}])
        try:
            done = _run(home, cwd, port, ["--resume", session, "-p", args.prompt], args.model)
        finally:
            _stop(server)
        requests = _requests(log)
        if args.log is not None:
            shutil.copyfile(log, args.log) if log.exists() else args.log.write_text("")
    main = [r for r in requests if r["kind"] == "main"]
    if done.returncode != 0 or not main:
        raise Refusal(f"gemini exited {done.returncode}, {len(main)} chat requests: "
                      f"{_tail(done.stderr)}")  # fmt: skip
    first = main[0]
    body = first["body"]
    record = {
        "model": first["path"].split("/models/")[1].split(":")[0],
        "path": first["path"],
        "session": session,
        "code": done.returncode,
        **body,
        "sent": _strip(body.get("contents", []), args.prompt),
        "side": [{"n": r["n"], "path": r["path"], "kind": r["kind"]} for r in requests
                 if r is not first],
    }  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(record, indent=2, ensure_ascii=False).replace(str(home), STABLE_HOME)
    args.out.write_text(text + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    made = sub.add_parser("make")
    made.add_argument("--out", type=Path, required=True)
    made.add_argument("--model", default=MODEL)
    following = sub.add_parser("next")
    following.add_argument("--file", type=Path)
    following.add_argument("--home", type=Path)
    following.add_argument("--session")
    following.add_argument("--cwd")
    following.add_argument("--prompt", default="next")
    following.add_argument("--model", default=MODEL)
    following.add_argument("--out", type=Path, required=True)
    following.add_argument("--log", type=Path)
    args = parser.parse_args()
    if not CLI.exists():
        sys.exit(f"gemini.py: {CLI} missing: run npm ci in {HERE}")
    try:
        make(args.out, args.model) if args.command == "make" else next_request(args)
    except Refusal as error:
        sys.exit(f"gemini.py: {error}")


if __name__ == "__main__":
    main()
