#!/usr/bin/env python3
"""Claude Code 2.1.332 whole, in print mode, against a loopback Anthropic Messages server.

    cc.py run --config C --cwd D [--script S.json] [--strace] -- ARG ...  one run: what was sent
    cc.py make-fixtures [--out tests/fixtures/claude/made]    sessions the CLI makes itself
    cc.py hand [--out tests/fixtures/claude/hand]             the hand-written sessions
    cc.py context FILE.jsonl ...                          the context oracle (below)
    cc.py candidates [--out claude/sessions/candidates]   new-session files and exchanges
    cc.py fold-check                                      the project folder rule

Every run is ``claude -p`` (the native binary ``setup.sh`` installs, run directly) with a clean
environment: HOME and CLAUDE_CONFIG_DIR in a temporary folder, ANTHROPIC_BASE_URL at
``llmlog.py`` on 127.0.0.1 (every request body logged, the answers scripted), a fake API key and
every non-essential traffic switched off. Nothing else is contacted: ``run --strace`` lists the
connect() calls, and only the loopback port appears.

``context`` installs each session file into a fresh config under
``projects/<folded cwd>/<sessionId>.jsonl`` and runs ``claude -p --resume <id> continue --bare
--fork-session --no-session-persistence``; it keeps the first Messages request as
``<session>.claude-request.json`` and, derived from it, ``<session>.claude-context.json``: the
``messages`` minus the prompt and minus Claude Code's own additions (``context_of``). The
project folder is hashed before and after: the resume must leave it untouched.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ORACLES = HERE.parent
REPO = ORACLES.parent
BIN = HERE / "node_modules/@anthropic-ai/claude-code-linux-x64/claude"
VERSION = "2.1.332"
# A fixed project folder (with '_' and '.' in it, so the folder rule is seen at work): the
# sessions' cwd exists wherever the fixtures are replayed.
PROJECT = Path("/tmp/handoff-oracle-claude/my_proj.v2")
PROMPT = "continue"
RESUME_FLAGS = ["--bare", "--fork-session", "--no-session-persistence"]


def fold(cwd: str) -> str:
    """The project folder's name for a cwd: every character but [A-Za-z0-9] as '-'."""
    return re.sub(r"[^A-Za-z0-9]", "-", cwd)


# --- the loopback server ---------------------------------------------------------------------


class Loopback:
    """llmlog.py in a child process: its port, and the Messages requests it has logged."""

    def __init__(self, script: list[dict[str, Any]] | None = None) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="cclog-"))
        self.log = self.dir / "log.jsonl"
        args = [sys.executable, str(ORACLES / "llmlog.py"), str(self.log)]
        if script:
            (self.dir / "script.json").write_text(json.dumps(script))
            args += ["--script", str(self.dir / "script.json")]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        self.port = int(self.proc.stdout.readline())

    def entries(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def requests(self) -> list[dict[str, Any]]:
        """The bodies of the message requests (count_tokens left out), in order."""
        return [
            e["body"]
            for e in self.entries()
            if e["method"] == "POST" and e["path"].split("?")[0].endswith("/v1/messages")
        ]

    def close(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> Loopback:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# --- one run ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    code: int
    stdout: str
    stderr: str
    requests: list[dict[str, Any]]
    other: list[dict[str, Any]]  # every logged entry that is not a message request
    connects: list[str]  # with strace: the inet connect() calls


def claude_env(root: Path, port: int) -> dict[str, str]:
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(root / "home"),
        "CLAUDE_CONFIG_DIR": str(root / "config"),
        "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}",
        "ANTHROPIC_API_KEY": "sk-ant-fake",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
    }


def run(
    root: Path,
    cwd: Path,
    args: list[str],
    script: list[dict[str, Any]] | None = None,
    strace: bool = False,
    timeout: float = 180,
) -> Run:
    """``claude -p ARGS`` from cwd with root's home and config, stdin empty."""
    (root / "home").mkdir(parents=True, exist_ok=True)
    (root / "config").mkdir(parents=True, exist_ok=True)
    cwd.mkdir(parents=True, exist_ok=True)
    with Loopback(script) as server, tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "strace.txt"
        command = [str(BIN), "-p", *args]
        if strace:
            command = ["strace", "-f", "-qq", "-e", "trace=connect", "-o", str(trace), *command]
        done = subprocess.run(
            command,
            cwd=cwd,
            env=claude_env(root, server.port),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        connects = []
        if strace:
            connects = [
                line.split("connect(", 1)[1].split(")", 1)[0]
                for line in trace.read_text().splitlines()
                if "connect(" in line and "AF_UNIX" not in line
            ]
        requests = server.requests()
        other = [e for e in server.entries() if e["body"] not in requests]
        return Run(done.returncode, done.stdout, done.stderr, requests, other, connects)


def project_dir(root: Path, cwd: Path) -> Path:
    return root / "config/projects" / fold(str(cwd))


def tree_hash(folder: Path) -> str:
    """One hash of every file under folder: names and bytes."""
    h = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        h.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


# --- the context oracle ----------------------------------------------------------------------


def strip_cache_control(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: strip_cache_control(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [strip_cache_control(v) for v in value]
    return value


def context_of(request: dict[str, Any], prompt: str = PROMPT) -> list[dict[str, Any]]:
    """The session's context in a resume request: its messages minus Claude Code's additions.

    Taken away, and nothing else: every ``cache_control`` key; every ``role: "system"`` item
    whose content is empty (``--bare`` sends one, with ``output_config``, after the first user
    turn); the prompt, the last text block of the last (user) message, and that message when
    nothing else is left in it. Anything else unexpected stops the run, to be looked at.
    """
    messages = strip_cache_control(copy.deepcopy(request["messages"]))
    kept = []
    for m in messages:
        if m["role"] == "system":
            if m["content"] or set(m) - {"role", "content", "output_config"}:
                raise SystemExit(f"a system item with content: {json.dumps(m)[:300]}")
            continue
        kept.append(m)
    last = kept[-1]
    if last["role"] != "user":
        raise SystemExit("the last message is not the user's")
    if last["content"] == prompt:
        kept.pop()
    else:
        block = last["content"][-1]
        if block != {"type": "text", "text": prompt}:
            raise SystemExit(f"the last block is not the prompt: {json.dumps(block)[:300]}")
        last["content"] = last["content"][:-1]
        if not last["content"]:
            kept.pop()
    return kept


def session_id_cwd(path: Path) -> tuple[str, str]:
    """The session id (the file's own records' ``sessionId``, else its name) and its cwd."""
    sid, cwd = None, None
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            sid = sid or record.get("sessionId")
            cwd = cwd or record.get("cwd")
    return sid or path.stem, cwd or str(PROJECT)


def install(root: Path, path: Path, sid: str, cwd: str) -> Path:
    """Copies a session file (and its folder of subagents, when it has one) into root's config."""
    folder = root / "config/projects" / fold(cwd)
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{sid}.jsonl"
    shutil.copyfile(path, target)
    side = path.with_suffix("")
    if side.is_dir():
        shutil.copytree(side, folder / sid)
    return target


def resume(
    path: Path,
    flags: list[str] = RESUME_FLAGS,
    prompt: str = PROMPT,
    sid: str | None = None,
    cwd: str | None = None,
) -> dict[str, Any]:
    """Resumes a session file as the issue does (installed as sid.jsonl, by default the id its
    records name; run from ``cwd``, by default its own); what was sent, and what happened to
    the file."""
    named, own = session_id_cwd(path)
    sid, cwd = sid or named, cwd or own
    with tempfile.TemporaryDirectory(prefix="ccresume-") as tmp:
        root = Path(tmp)
        target = install(root, path, sid, cwd)
        folder = target.parent
        before = tree_hash(folder)
        done = run(root, Path(cwd), ["--resume", sid, prompt, *flags])
        files = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
        return {
            "session": sid,
            "code": done.code,
            "stdout": done.stdout,
            "stderr": done.stderr[-2000:],
            "requests": done.requests,
            "untouched": tree_hash(folder) == before,
            "files_after": files,
            "file_after": target.read_text(encoding="utf-8") if target.exists() else None,
        }


def write_context(path: Path) -> dict[str, Any]:
    got = resume(path)
    stem = path.with_suffix("")
    summary = {
        "file": str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path),
        "code": got["code"],
        "requests": len(got["requests"]),
        "untouched": got["untouched"],
    }
    if got["code"] != 0 or not got["requests"]:
        summary["stderr"] = got["stderr"][-500:]
        summary["stdout"] = got["stdout"][-500:]
        return summary
    request = got["requests"][0]
    context = context_of(request)
    dump(stem.with_name(stem.name + ".claude-request.json"), request)
    dump(stem.with_name(stem.name + ".claude-context.json"), context)
    summary["messages"] = len(context)
    summary["model"] = request["model"]
    return summary


def fold_check() -> None:
    """Runs one turn in cwds with odd characters and prints the folder the CLI made beside
    what ``fold`` predicts."""
    base = PROJECT.parent
    for name in ("a b_é.c~d", "x" * 230):
        cwd = base / name
        with tempfile.TemporaryDirectory(prefix="ccfold-") as tmp:
            root = Path(tmp)
            done = run(root, cwd, ["hello", "--bare"])
            made = [p.name for p in (root / "config/projects").iterdir()]
            row = {"cwd": str(cwd), "code": done.code, "made": made, "fold": fold(str(cwd))}
            print(json.dumps({**row, "same": made == [fold(str(cwd))]}, ensure_ascii=False))
        shutil.rmtree(cwd, ignore_errors=True)


def dump(path: Path, value: Any) -> None:
    path.write_text(json.dumps(value, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("run")
    p.add_argument("--config", type=Path, required=True, help="the folder for home/ and config/")
    p.add_argument("--cwd", type=Path, default=PROJECT)
    p.add_argument("--script", type=Path)
    p.add_argument("--strace", action="store_true")
    p.add_argument("args", nargs="*")
    p = sub.add_parser("context")
    p.add_argument("files", nargs="+", type=Path)
    for name in ("make-fixtures", "hand", "candidates"):
        sub.add_parser(name).add_argument("--out", type=Path)
    sub.add_parser("fold-check")
    args = parser.parse_args()

    if args.command == "run":
        script = json.loads(args.script.read_text()) if args.script else None
        done = run(args.config.resolve(), args.cwd, args.args, script, strace=args.strace)
        print(json.dumps(done.__dict__, indent=1, ensure_ascii=False))
    elif args.command == "context":
        for f in args.files:
            print(json.dumps(write_context(f.resolve()), ensure_ascii=False), flush=True)
    elif args.command == "fold-check":
        fold_check()
    else:
        from fixtures import commands  # the session makers, beside this file

        commands[args.command](args.out)


if __name__ == "__main__":
    main()
