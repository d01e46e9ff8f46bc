"""Drive the real opencode (npm ``opencode-ai@1.18.33``) offline against the loopback model server.

    python3 oracles/opencode/opencode.py make --out DIR
    python3 oracles/opencode/opencode.py next --data DB_DIR --cwd C --session ID [--prompt TEXT] [--model P/M | --serve P/M] --out FILE.json
    python3 oracles/opencode/opencode.py import --data DB_DIR FILE.json

Install first (once): ``cd oracles/opencode && npm ci`` (``npm i opencode-ai@1.18.33`` made
package.json and package-lock.json). The binary is the platform package's compiled Bun
executable, ``node_modules/opencode-linux-x64/bin/opencode`` (or the one ``opencode-ai``'s
postinstall linked to ``node_modules/opencode-ai/bin/opencode.exe``).

Every run gets a fresh HOME and XDG_{DATA,CONFIG,CACHE,STATE}_HOME under a temporary directory,
``PWD`` set to its cwd (opencode takes ``$PWD`` before ``process.cwd()``),
``OPENCODE_DISABLE_MODELS_FETCH=1`` (no models.dev request: the provider is declared whole in
the config), autoupdate, sharing, LSP downloads and the default plugins off, and a config
(``$XDG_CONFIG_HOME/opencode/opencode.json``) with two OpenAI-compatible providers, each on its
own ``llmlog.py`` server:

* ``loop`` (the main model): models ``m`` (context 200000), ``tiny`` and ``mid`` (small contexts,
  so the auto-compaction triggers). Its log holds the agent's turns and its compaction requests.
* ``side`` (``small_model: "side/t"``): the title generator's requests go there, so they never
  take an answer meant for the main model and never mix with its log.

make --out DIR
    In a fresh git repository (``/tmp/opencode-oracle/cwd``, one fixed commit holding
    ``notes.txt``), three sessions, each a first ``opencode run --model ...`` whose scripted
    answer calls the ``read`` tool on notes.txt and then answers in text, continued by
    ``opencode run -s ID``: ``tool`` (``loop/m``), ``compact`` (``loop/tiny``: auto-compaction,
    no tail) and ``tail`` (``loop/mid``, two turns: auto-compaction keeping a tail,
    ``tail_start_id``). DIR gets ``opencode.db`` (a clean single-file copy by the sqlite3 backup
    API, so no -wal/-shm), ``<id>.export.json`` (the real ``opencode export``),
    ``<id>.log.jsonl`` (every request the servers saw, main and side, for that session's runs) and
    ``made.json`` (the sessions, their cwd, prompts, models and request counts).

next --data DB_DIR --cwd C --session ID [--prompt TEXT] [--model P/M | --serve P/M] --out FILE.json
    Copies DB_DIR/opencode.db (and -wal/-shm if present) to a temporary data dir (the fixture is
    left unchanged), runs ``opencode run -s ID TEXT`` in C (made if missing) without ``--model``
    (opencode itself runs the session in its stored ``directory``, whatever C is), stops it once
    the request is logged, and writes the body of the FIRST main request to FILE.json (indent 2):
    the first POST to the ``loop`` server's chat/completions whose body carries a non-empty
    ``tools`` list. Title
    requests go to the ``side`` server; a compaction request goes to ``loop`` but has no tools
    (its system prompt is the compaction agent's). Exits 1 with one line when the session is
    not in the database or no main request came.

import --data DB_DIR FILE.json
    The real ``opencode import FILE.json`` with its data dir at DB_DIR (which holds opencode.db),
    run in the current directory (the imported session takes its project and directory).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
LLMLOG = HERE.parent / "llmlog.py"
VERSION = "1.18.33"
MADE_CWD = Path("/tmp/opencode-oracle/cwd")
NOTES = "hello from notes.txt: the answer is 42\n" + "".join(
    f"line {i}: filler so that reading the file adds some six hundred tokens to the context.\n"
    for i in range(2, 30)
)
TINY_CONTEXT = 3900  # usable 2900: the first turn's second step (~3200 tokens) overflows, its first (~2470) not
TINY_OUTPUT = 1000
MID_CONTEXT = 5300  # usable 4300: above the tail session's first turn (~3950), below its second (~4720)
RUN_TIMEOUT = 180


class Refusal(Exception):
    """A refusal: printed as one line, exit 1."""


def binary() -> Path:
    for rel in (
        "node_modules/opencode-linux-x64/bin/opencode",
        "node_modules/opencode-linux-x64-baseline/bin/opencode",
        "node_modules/opencode-ai/bin/opencode.exe",
    ):
        path = HERE / rel
        if path.is_file() and os.access(path, os.X_OK):
            return path
    raise Refusal(f"no opencode binary under {HERE}/node_modules: run npm ci there")


class Server:
    """One llmlog.py process: its port and its log."""

    def __init__(self, workdir: Path, name: str, script: list[dict[str, Any]]) -> None:
        self.log = workdir / f"{name}.log.jsonl"
        self.log.touch()
        script_file = workdir / f"{name}.script.json"
        script_file.write_text(json.dumps(script), encoding="utf-8")
        port_file = workdir / f"{name}.port"
        self.proc = subprocess.Popen(
            [sys.executable, str(LLMLOG), str(self.log), "--port-file", str(port_file),
             "--script", str(script_file)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 20
        while not (port_file.exists() and port_file.read_text().strip()):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                self.stop()
                raise Refusal("llmlog.py did not start")
            time.sleep(0.05)
        self.port = int(port_file.read_text().strip())

    def entries(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.log.read_text(encoding="utf-8").splitlines() if line]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


def config(main_port: int, side_port: int, served: str | None = None) -> dict[str, Any]:
    def provider(name: str, port: int, models: dict[str, Any]) -> dict[str, Any]:
        return {
            "npm": "@ai-sdk/openai-compatible",
            "name": name,
            "options": {"baseURL": f"http://127.0.0.1:{port}/v1", "apiKey": "x"},
            "models": models,
        }

    body: dict[str, Any] = {
        "$schema": "https://opencode.ai/config.json",
        "provider": {
            "loop": provider("Loop", main_port, {
                "m": {"name": "M", "tool_call": True, "limit": {"context": 200000, "output": 8000}},
                "tiny": {"name": "Tiny", "tool_call": True,
                         "limit": {"context": TINY_CONTEXT, "output": TINY_OUTPUT}},
                "mid": {"name": "Mid", "tool_call": True,
                        "limit": {"context": MID_CONTEXT, "output": TINY_OUTPUT}},
            }),
            "side": provider("Side", side_port, {
                "t": {"name": "T", "limit": {"context": 200000, "output": 4000}},
            }),
        },
        "model": "loop/m",
        "small_model": "side/t",
        "autoupdate": False,
        "share": "disabled",
    }
    if served is not None:
        # Another machine's model (``opencode/moonshotai/kimi-k2.6``) declared on the main
        # server, OpenAI-compatible: a session continued on its own model sends that model's
        # reasoning back as reasoning, where another model's would become text.
        name, model = served.split("/", 1)
        body["provider"][name] = provider(name, main_port, {
            model: {"name": model, "tool_call": True, "limit": {"context": 200000, "output": 8000}},
        })
    return body


def environment(root: Path, data_home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENCODE", "XDG_"))}
    for name in ("home", "config", "cache", "state"):
        (root / name).mkdir(parents=True, exist_ok=True)
    env.update(
        HOME=str(root / "home"),
        XDG_DATA_HOME=str(data_home),
        XDG_CONFIG_HOME=str(root / "config"),
        XDG_CACHE_HOME=str(root / "cache"),
        XDG_STATE_HOME=str(root / "state"),
        OPENCODE_DISABLE_MODELS_FETCH="1",
        OPENCODE_DISABLE_AUTOUPDATE="1",
        OPENCODE_DISABLE_LSP_DOWNLOAD="1",
        OPENCODE_DISABLE_DEFAULT_PLUGINS="1",
        OPENCODE_DISABLE_SHARE="1",
        NO_COLOR="1",
    )
    return env


def write_config(root: Path, main: Server, side: Server, served: str | None = None) -> None:
    path = root / "config" / "opencode" / "opencode.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(config(main.port, side.port, served), indent=2), encoding="utf-8")


def prompt_args(text: str) -> list[str]:
    # `opencode run` joins its message words with spaces and wraps a word holding a space in
    # double quotes; split on single spaces so the joined message is exactly TEXT.
    return text.split(" ")


def opencode(args: list[str], env: dict[str, str], cwd: Path, timeout: int = RUN_TIMEOUT
             ) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            [str(binary()), *args], env={**env, "PWD": str(cwd)}, cwd=str(cwd), capture_output=True, text=True,
            timeout=timeout, stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as exc:
        raise Refusal(f"opencode {args[0]} timed out after {timeout}s") from exc


def main_requests(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The agent's own turns: chat completions with a non-empty tools list."""
    return [
        e["body"] for e in entries
        if e["method"] == "POST" and e["path"].split("?")[0].endswith("/chat/completions")
        and isinstance(e["body"], dict) and e["body"].get("tools")
    ]


def backup(src: Path, dst: Path) -> None:
    """A clean single-file copy (WAL content folded in), as sqlite3's backup API makes it."""
    if dst.exists():
        dst.unlink()
    source = sqlite3.connect(f"file:{src}?mode=ro", uri=True)
    target = sqlite3.connect(str(dst))
    with target:
        source.backup(target)
    target.execute("PRAGMA journal_mode=DELETE")
    target.close()
    source.close()


def session_ids(db: Path) -> list[str]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return [r[0] for r in con.execute("SELECT id FROM session ORDER BY time_created")]
    finally:
        con.close()


# --- make -----------------------------------------------------------------------------------

def sessions_to_make() -> list[tuple[str, str, list[str], list[dict[str, Any]]]]:
    """(name, model, the two prompts, the main server's script) for each session made."""
    read = {"tool": "read", "arguments": {"filePath": str(MADE_CWD / "notes.txt")}}
    first = "Read notes.txt and tell me what it says."
    second = "Thanks. What was the number again?"
    summary = {"text": "## Goal\nRead notes.txt.\n\n## Done\nRead it: it says the answer is 42."}
    return [
        # a tool call and its result, a text answer; continued with a plain question
        ("tool", "loop/m", [first, second],
         [read, {"text": "It says hello, and the answer is 42."}, {"text": "Yes: 42 again."}]),
        # the first turn's second step overflows loop/tiny: auto-compaction (no tail: one turn),
        # the synthetic "Continue if you have next steps" prompt and its answer; then continued
        ("compact", "loop/tiny", [first, second],
         [read, {"text": "It says hello, and the answer is 42."}, summary, {"text": "Yes: 42 again."}]),
        # two turns on loop/mid; the second turn overflows: the compaction keeps a tail
        # (compaction part's tail_start_id) because the recent turns exceed its 2000-token budget
        ("tail", "loop/mid", ["Read notes.txt twice and tell me what it says.",
                              "Read it once more, please."],
         [read, read, {"text": "Twice: the answer is 42."}, read, {"text": "Still 42."},
          summary, {"text": "Done: 42."}]),
    ]


def git_init(cwd: Path) -> None:
    """A repository with one commit, dated and signed fixedly, so its root commit (which
    opencode takes for the project id) is the same on every make."""
    env = {**os.environ, "GIT_AUTHOR_NAME": "oracle", "GIT_AUTHOR_EMAIL": "oracle@example.invalid",
           "GIT_COMMITTER_NAME": "oracle", "GIT_COMMITTER_EMAIL": "oracle@example.invalid",
           "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z"}
    for args in (["init", "-q", "-b", "main"], ["add", "notes.txt"],
                 ["-c", "commit.gpgsign=false", "commit", "-q", "-m", "notes"]):
        subprocess.run(["git", *args], cwd=cwd, env=env, check=True, timeout=30,
                       capture_output=True)


def make(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    if MADE_CWD.exists():
        shutil.rmtree(MADE_CWD)
    MADE_CWD.mkdir(parents=True)
    (MADE_CWD / "notes.txt").write_text(NOTES, encoding="utf-8")
    git_init(MADE_CWD)
    work = Path(tempfile.mkdtemp(prefix="opencode-make-"))
    data_home = work / "data"
    made: dict[str, Any] = {"opencode": VERSION, "cwd": str(MADE_CWD), "sessions": []}
    try:
        for name, model, prompts, main_script in sessions_to_make():
            main = Server(work, f"{name}-main", main_script)
            side = Server(work, f"{name}-side", [{"text": "Reading notes.txt"}])
            try:
                write_config(work, main, side)
                env = environment(work, data_home)
                db = data_home / "opencode" / "opencode.db"
                before = set(session_ids(db)) if db.exists() else set()
                r1 = opencode(["run", "--model", model, *prompt_args(prompts[0])], env, MADE_CWD)
                if r1.returncode != 0:
                    raise Refusal(f"opencode run failed: {r1.stderr.strip()[-300:]}")
                new = [s for s in session_ids(db) if s not in before]
                if len(new) != 1:
                    raise Refusal(f"expected one new session, found {new}")
                sid = new[0]
                r2 = opencode(["run", "-s", sid, *prompt_args(prompts[1])], env, MADE_CWD)
                if r2.returncode != 0:
                    raise Refusal(f"opencode run -s failed: {r2.stderr.strip()[-300:]}")
                exported = opencode(["export", sid], env, MADE_CWD, timeout=60)
                if exported.returncode != 0:
                    raise Refusal(f"opencode export failed: {exported.stderr.strip()[-300:]}")
                (out / f"{sid}.export.json").write_text(exported.stdout, encoding="utf-8")
                log = [{"server": "main", **e} for e in main.entries()] + \
                      [{"server": "side", **e} for e in side.entries()]
                with open(out / f"{sid}.log.jsonl", "w", encoding="utf-8") as f:
                    for e in log:
                        f.write(json.dumps(e, ensure_ascii=False) + "\n")
                made["sessions"].append({
                    "name": name, "id": sid, "model": model, "prompts": prompts,
                    "main_requests": len(main_requests(main.entries())),
                    "all_main_posts": len([e for e in main.entries() if e["method"] == "POST"]),
                    "side_posts": len([e for e in side.entries() if e["method"] == "POST"]),
                    "stdout": [r1.stdout, r2.stdout],
                })
            finally:
                main.stop()
                side.stop()
        backup(data_home / "opencode" / "opencode.db", out / "opencode.db")
        (out / "made.json").write_text(json.dumps(made, indent=2) + "\n", encoding="utf-8")
    finally:
        shutil.rmtree(work, ignore_errors=True)


# --- next -----------------------------------------------------------------------------------

def next_request(data: Path, cwd: Path, session: str, prompt: str, out: Path,
                 model: str | None = None, served: str | None = None) -> None:
    src = data / "opencode.db"
    if not src.is_file():
        raise Refusal(f"no opencode.db in {data}")
    if session not in session_ids(src):
        raise Refusal(f"session {session} is not in {src}")
    work = Path(tempfile.mkdtemp(prefix="opencode-next-"))
    try:
        dest = work / "data" / "opencode"
        dest.mkdir(parents=True)
        for suffix in ("", "-wal", "-shm"):
            if (data / f"opencode.db{suffix}").exists():
                shutil.copy2(data / f"opencode.db{suffix}", dest / f"opencode.db{suffix}")
        cwd.mkdir(parents=True, exist_ok=True)
        main = Server(work, "main", [
            {"text": "## Goal\nContinue.\n\n## Done\nNothing yet."},  # used only by a compaction
        ])
        side = Server(work, "side", [{"text": "A title"}])
        try:
            write_config(work, main, side, served)
            env = environment(work, work / "data")
            model = served or model
            requests, note = run_until_main_request(
                ["run", "-s", session, *(["--model", model] if model else []), *prompt_args(prompt)],
                env, cwd, main, work)
        finally:
            main.stop()
            side.stop()
        if not requests:
            raise Refusal(f"opencode sent no main request ({note})")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(requests[0], indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run_until_main_request(args: list[str], env: dict[str, str], cwd: Path, main: Server,
                           work: Path) -> tuple[list[dict[str, Any]], str]:
    """Run opencode until its first main request is logged, then end it (it is a copy).

    ``run -s`` started in a directory other than the session's own runs the session in the
    session's directory and then never exits (it waits for an idle event of the other
    instance), so the driver does not wait for the exit once it has the request.
    """
    out, err = open(work / "run.stdout", "w"), open(work / "run.stderr", "w")
    proc = subprocess.Popen([str(binary()), *args], env={**env, "PWD": str(cwd)}, cwd=str(cwd),
                            stdin=subprocess.DEVNULL, stdout=out, stderr=err)
    deadline = time.monotonic() + RUN_TIMEOUT
    requests: list[dict[str, Any]] = []
    try:
        while time.monotonic() < deadline:
            requests = main_requests(main.entries())
            if requests or proc.poll() is not None:
                break
            time.sleep(0.2)
        requests = requests or main_requests(main.entries())
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        out.close()
        err.close()
    tail = (work / "run.stderr").read_text(errors="replace").strip().splitlines()[-1:]
    note = f"exit {proc.returncode}" + (f": {tail[0]}" if tail else "")
    if not requests and time.monotonic() >= deadline:
        note = f"timed out after {RUN_TIMEOUT}s"
    return requests, note


# --- import ---------------------------------------------------------------------------------

def import_file(data: Path, file: Path) -> int:
    work = Path(tempfile.mkdtemp(prefix="opencode-import-"))
    try:
        data.mkdir(parents=True, exist_ok=True)
        link = work / "data" / "opencode"
        link.parent.mkdir(parents=True)
        link.symlink_to(data.resolve(), target_is_directory=True)
        env = environment(work, work / "data")
        result = opencode(["import", str(file.resolve())], env, Path.cwd(), timeout=60)
        sys.stdout.write(result.stdout)
        sys.stderr.write(result.stderr)
        return result.returncode
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main_cli(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("make")
    p.add_argument("--out", required=True, type=Path)
    p = sub.add_parser("next")
    p.add_argument("--data", required=True, type=Path)
    p.add_argument("--cwd", required=True, type=Path)
    p.add_argument("--session", required=True)
    p.add_argument("--prompt", default="Please continue.")
    p.add_argument("--model", help="a model of the config's (loop/m): a session crossed from "
                   "another agent names that agent's, which this config does not serve")
    p.add_argument("--serve", metavar="PROVIDER/MODEL", help="declare this model on the loopback "
                   "and continue on it: a real session's own model")
    p.add_argument("--out", required=True, type=Path)
    p = sub.add_parser("import")
    p.add_argument("--data", required=True, type=Path)
    p.add_argument("file", type=Path)
    args = parser.parse_args(argv)
    try:
        if args.cmd == "make":
            make(args.out)
        elif args.cmd == "next":
            next_request(args.data, args.cwd, args.session, args.prompt, args.out, args.model,
                         args.serve)
        else:
            return import_file(args.data, args.file)
    except Refusal as exc:
        print(f"opencode.py: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main_cli())
