#!/usr/bin/env python3
"""``--to`` across the agents with Codex, each new session read by the real agent it is for.

    HANDOFF_PYTHON=.venv/bin/python crossings.py [--only NAME ...]

Each crossing hands a session of the fixtures off with our CLI (this checkout's, ``--model
extractive``) in a fresh home, ``--to`` another agent, and keeps the new session in the
fixtures with what that agent made of it:

- ``to-omp``, ``to-pi``: Codex's ``made/tools`` rollout to oh-my-pi 18.2.3 and pi 1.6.0
  (``tests/fixtures/codex/handoff/to-omp-new.jsonl``, ``to-pi-new.jsonl``): the agent's own
  context of the file (``*.context.json`` by ``omp/context.ts``, ``*.pi-context.json`` by
  ``pi/context.mjs``, which the test suite holds ours to), and the first request of the whole
  agent resuming it in print mode against the loopback model (``*.agent-request.json``:
  ``agents.py``'s ``next``);
- ``to-claude``: the same rollout to Claude Code 2.1.332
  (``tests/fixtures/claude/handoff/from-codex-new.jsonl``), resumed by ``claude/cc.py``'s
  context oracle (``*.claude-request.json``, ``*.claude-context.json``);
- ``from-omp``, ``from-claude``: a session oh-my-pi 18.2.3 made (``tests/fixtures/agents/``) and
  one Claude Code made (``claude/made/tools``) to Codex 0.171.0
  (``tests/fixtures/codex/handoff/from-omp-new.jsonl``, ``from-claude-new.jsonl``), resumed by
  ``codex/codex.py context`` (``*.codex-request.json``, ``*.codex-context.json``). pi's is
  ``from-pi-new``, made with the Codex driver (issue 25);
- ``from-pi-to-gemini``, ``-qwen``, ``-opencode``: pi 1.6.0's session to Gemini CLI 0.61.0, Qwen
  Code 0.24.4 and opencode 1.18.33, continued by each (``from_pi``).

Printed: one JSON line a crossing, saying whether the agent accepted the file and sent the
document.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import agents

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
FIXTURES = REPO / "tests/fixtures"
CODEX_TOOLS = (
    FIXTURES / "codex/made/sessions/2026/12/01"
    / "rollout-2026-12-01T13-43-14-01a231d8-6485-70d0-866d-03e1c0f10e57.jsonl"
)  # fmt: skip
CODEX_CWD = Path("/tmp/codex-oracle-project")
OMP_SOURCE = (
    FIXTURES
    / "agents/omp-18.2.3/2026-12-01T09-58-51-313Z_01a2310a-f4b1-73f4-88b3-c1b996fe6728.jsonl"
)
CLAUDE_SOURCE = FIXTURES / "claude/made/tools.jsonl"
DOCUMENT_START = "<handoff-context>"


def hand_off(home: Path, source: Path, to: str) -> Path:
    """Our handoff of ``source`` (placed in its agent's folder of ``home``) ``--to`` an agent:
    the new session's file."""
    python = os.environ.get("HANDOFF_PYTHON") or sys.executable
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "PYTHONPATH": str(REPO)}
    env["HANDOFF_SESSIONS_DIR"] = ""
    command = [python, "-m", "handoff_cli", str(source), "--to", to, "--model", "extractive"]
    done = subprocess.run([*command, "--json", "-q"], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{source.name} --to {to}: {done.stderr}")
    return Path(json.loads(done.stdout)["path"])


def placed(home: Path, source: Path, folder: str) -> Path:
    target = home / folder / source.name
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    return target


def carries_document(messages: Any) -> bool:
    return DOCUMENT_START in json.dumps(messages, ensure_ascii=False)


def to_pi_family(name: str, agent: str, to: str, kept: Path) -> dict[str, Any]:
    """Codex's ``made/tools`` handed off to oh-my-pi or pi, read and resumed by the agent."""
    with tempfile.TemporaryDirectory(prefix="crossing-") as tmp:
        home = Path(tmp) / "home"
        source = placed(home, CODEX_TOOLS, ".codex/sessions/2026/12/01")
        new = hand_off(home, source, to)
        shutil.copyfile(new, kept)
        agents.write_contexts([kept])
        write_omp183_context(kept)
        CODEX_CWD.mkdir(parents=True, exist_ok=True)
        run_home = Path(tmp) / "run"
        copy = placed(run_home, kept, new.parent.relative_to(home).as_posix())
        got = agents.next_request(agents.AGENTS[agent], run_home, CODEX_CWD, session=str(copy))
    request = got["request"] or {}
    record = {"agent": agent, "exit": got["exit"], "stderr": got["stderr"], "request": request}
    write_json(kept.with_suffix(".agent-request.json"), record)
    return {
        "crossing": name,
        "folder": new.parent.name,
        "exit": got["exit"],
        "document_sent": carries_document(request.get("messages")),
        "model": request.get("model"),
    }


OMP183_LIB = HERE / "omp-bundle/18.3.4/package/dist/lib.js"


def write_omp183_context(kept: Path) -> None:
    """oh-my-pi 18.3.4's context of a fixture, where the suite keeps the release's
    (``tests/fixtures/omp183/<its path>.omp183-context.json``, as ``ompdiff.py --save``)."""
    env = {**os.environ, "OMP_LIB": str(OMP183_LIB)}
    done = subprocess.run(
        [str(agents.BUN), str(HERE / "omp/context.ts"), str(kept)],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    record = json.loads(done.stdout.splitlines()[0])
    target = FIXTURES / "omp183" / kept.relative_to(FIXTURES).with_suffix(".omp183-context.json")
    target.parent.mkdir(parents=True, exist_ok=True)
    write_json(target, record["context"])


def to_claude(kept: Path) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="crossing-") as tmp:
        home = Path(tmp) / "home"
        source = placed(home, CODEX_TOOLS, ".codex/sessions/2026/12/01")
        new = hand_off(home, source, "claude")
        shutil.copyfile(new, kept)
    done = subprocess.run(
        [sys.executable, str(HERE / "claude/cc.py"), "context", str(kept)],
        capture_output=True,
        text=True,
    )
    context = json.loads(kept.with_suffix(".claude-context.json").read_text(encoding="utf-8"))
    return {
        "crossing": "to-claude",
        "folder": new.parent.name,
        "driver": done.stdout.strip().splitlines()[-1:],
        "document_sent": carries_document(context),
    }


def to_codex(name: str, source: Path, folder: str, kept: Path) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="crossing-") as tmp:
        home = Path(tmp) / "home"
        new = hand_off(home, placed(home, source, folder), "codex")
        shutil.copyfile(new, kept)
    done = subprocess.run(
        [sys.executable, str(HERE / "codex/codex.py"), "context", str(kept)],
        capture_output=True,
        text=True,
    )
    request = json.loads(kept.with_name(kept.name + ".codex-request.json").read_text("utf-8"))
    context_file = kept.with_name(kept.name + ".codex-context.json")
    context = json.loads(context_file.read_text("utf-8")) if context_file.exists() else {}
    sent = context.get("context", [])
    return {
        "crossing": name,
        "rc": request["rc"],
        "warnings": request["stderr"],
        "driver": done.stdout.strip().splitlines()[-1:],
        "document_first": bool(sent) and carries_document(sent[0]),
    }


PI_SOURCE = (
    FIXTURES
    / "agents/pi-1.6.0/2026-12-01T09-59-33-084Z_01a2310b-97dc-7046-8da5-a4460b9f7042.jsonl"
)
PI_CWD = Path("/tmp/handoff-oracle-project")
NEW_AGENTS = FIXTURES / "agents"


def from_pi(to: str) -> dict[str, Any]:
    """pi 1.6.0's session handed off to Gemini CLI, Qwen Code or opencode, continued by it:
    ``<to>/handoffs/from-pi.jsonl`` with what the agent sent (its driver's ``next``), or for
    opencode a session added to ``opencode/crossings/opencode.db``, ``<id>.request.json``."""
    with tempfile.TemporaryDirectory(prefix="crossing-") as tmp:
        home = Path(tmp) / "home"
        source = placed(home, PI_SOURCE, ".pi/agent/sessions/--tmp-handoff-oracle-project--")
        crossings = NEW_AGENTS / "opencode/crossings"
        if to == "opencode":
            placed(home, crossings / "opencode.db", ".local/share/opencode")
        new = hand_off(home, source, to)
        PI_CWD.mkdir(parents=True, exist_ok=True)
        python = sys.executable
        if to == "opencode":
            session = new.name
            kept = crossings / f"{session}.request.json"
            command = [python, str(HERE / "opencode/opencode.py"), "next", "--data",
                       str(new.parent.parent), "--cwd", str(PI_CWD), "--session", session,
                       "--model", "loop/m", "--out", str(kept)]  # fmt: skip
        else:
            kept = NEW_AGENTS / to / "handoffs/from-pi.jsonl"
            shutil.copyfile(new, kept)
            out = kept.with_name(f"{kept.name}.{to}-request.json")
            command = [python, str(HERE / to / f"{to}.py"), "next", "--file", str(kept),
                       "--cwd", str(PI_CWD), "--out", str(out)]  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            raise RuntimeError(f"{to} refused {new.name}: {done.stderr.strip()[-300:]}")
        if to == "opencode":
            shutil.copyfile(new.parent, crossings / "opencode.db")
            sent = json.loads(kept.read_text(encoding="utf-8"))["messages"][1:-1]
        elif to == "qwen":
            body = json.loads(out.read_text(encoding="utf-8"))
            sent = body["messages"][1:-1]
            record = {"model": body.get("model"), "session": new.stem, "code": 0,
                      "messages": body["messages"]}  # fmt: skip
            write_json(out, record)
        else:
            sent = json.loads(out.read_text(encoding="utf-8"))["sent"]
    return {"crossing": f"from-pi-to-{to}", "document_sent": carries_document(sent[:1])}


def write_json(path: Path, value: Any) -> None:
    path.write_text(json.dumps(value, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


CODEX_HANDOFF = FIXTURES / "codex/handoff"
CROSSINGS: dict[str, Callable[[], dict[str, Any]]] = {
    "to-omp": lambda: to_pi_family("to-omp", "omp-18.2.3", "omp", CODEX_HANDOFF / "to-omp-new.jsonl"),
    "to-pi": lambda: to_pi_family("to-pi", "pi-1.6.0", "pi", CODEX_HANDOFF / "to-pi-new.jsonl"),
    "to-claude": lambda: to_claude(FIXTURES / "claude/handoff/from-codex-new.jsonl"),
    "from-omp": lambda: to_codex(
        "from-omp", OMP_SOURCE, ".omp/agent/sessions/-tmp-handoff-oracle-project",
        CODEX_HANDOFF / "from-omp-new.jsonl",
    ),
    "from-claude": lambda: to_codex(
        "from-claude", CLAUDE_SOURCE, ".claude/projects/-tmp-handoff-oracle-claude-my-proj-v2",
        CODEX_HANDOFF / "from-claude-new.jsonl",
    ),
    "from-pi-to-gemini": lambda: from_pi("gemini"),
    "from-pi-to-qwen": lambda: from_pi("qwen"),
    "from-pi-to-opencode": lambda: from_pi("opencode"),
}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", choices=sorted(CROSSINGS))
    args = parser.parse_args()
    for name, cross in CROSSINGS.items():
        if not args.only or name in args.only:
            print(json.dumps(cross(), ensure_ascii=False), flush=True)


if __name__ == "__main__":
    main()
