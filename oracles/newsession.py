#!/usr/bin/env python3
"""What the agents write for a handoff's new session, and for a model switch: the issue-20 fixtures.

    python3 oracles/newsession.py [--out tests/fixtures/agents/newsession] [--whole] [AGENT ...]
    python3 oracles/newsession.py --print CASE AGENT      # one run, its output on stdout

Runs ``omp/newsession.ts`` (omp 18.2.3, and 18.2.9 / 18.3.4 with ``OMP_LIB``) and
``pi/newsession.mjs`` (pi 1.6.0) on the cases below and keeps each run's spec and output as
``OUT/<agent>/<case>.json``. Every run gets a fixed, new HOME,
``/tmp/handoff-newsession/<agent>/<case>`` (removed first), so that the bytes name the same
paths on every run; the entry ids and timestamps are the run's own. The cwd is
``/tmp/handoff-oracle-project`` (oracles/agents.py's PROJECT).

The old session B is the agent's own short session in ``tests/fixtures/agents/`` (18.3.4's for
18.2.9). ``restore-after-handoff`` starts from B after ``handoff B --model extractive`` by this
checkout's handoff_cli (``$HANDOFF_PYTHON``, else ``.venv/bin/python``): B then ends with the
recorded answer of model ``handoff/extractive``; the fixture keeps what the handoff appended.

``--whole`` also runs the agents whole (oracles/agents.py ``next``: print mode against the loopback
model) on a copy of each run's HOME: after ``new-*``, ``--continue`` (and, for ``new-terminal``,
``--continue`` in the terminal); after ``switch-*`` / ``restore-*``, ``--resume`` / ``--session``
of the file. It records which session each opened, the request's model and reasoning, and whether
the request carries the handoff document.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import agents as ag

HERE = ag.HERE
REPO = ag.REPO
ROOT = Path("/tmp/handoff-newsession")
FIXTURES = REPO / "tests/fixtures/agents"
SHORT = {
    "omp-18.2.3": "omp-18.2.3/2026-12-01T09-58-51-313Z_01a2310a-f4b1-73f4-88b3-c1b996fe6728.jsonl",
    "omp-18.2.9": "omp-18.3.4/2026-12-01T09-59-14-168Z_01a2310b-4df8-7098-a0ae-d5eeadfa578c.jsonl",
    "omp-18.3.4": "omp-18.3.4/2026-12-01T09-59-14-168Z_01a2310b-4df8-7098-a0ae-d5eeadfa578c.jsonl",
    "pi-1.6.0": "pi-1.6.0/2026-12-01T09-59-33-084Z_01a2310b-97dc-7046-8da5-a4460b9f7042.jsonl",
}

DOCUMENT = (
    "<handoff-context>\n## Goal\nRetry the HTTP client with backoff.\n\n## Progress\n"
    "- [x] Read notes.txt — 3 lines: max 3 attempts, log each retry.\n\n## Critical Context\n"
    '- `client.py` — quotes " and unicode é ✓\n\n## Next Steps\n1. Write the retry loop.\n'
    "</handoff-context>\n\nThe above is a handoff document from a previous session. "
    "Use this context to continue the work seamlessly."
)
TITLE = "Read notes.txt and tell me what it asks for. (continued)"
TITLE_NONASCII = "Übergabe: naïve café — 日本語のテスト ✓ 🚀 (continued)"
# Over 300 characters, with a tab and a newline (omp turns control characters into spaces, pi
# only line breaks) and multi-byte characters around where omp's 256-byte title slot cuts it.
TITLE_LONG = (
    "Continue the port of the handoff command\tfrom TypeScript\nto Python: "
    + "réécriture du chargeur, des entrées et du sélecteur — ✓ étape "
    + " ".join(f"n°{i} déjà faite;" for i in range(1, 25))
    + " (continued)"
)
MODEL = ag.SESSION_MODEL  # anthropic/claude-sonnet-4-5
OTHER_MODEL = "openai/gpt-4o-mini"


def new(**kw: Any) -> dict[str, Any]:
    return {
        "case": "new",
        "parentFile": "B",
        "model": MODEL,
        "thinkingLevel": "high",
        "text": DOCUMENT,
        "title": TITLE,
        **kw,
    }


# name -> (agent kinds, spec). "B" stands for the old session's file; "B+handoff" for B after
# handoff_cli's extractive handoff.
CASES: dict[str, tuple[tuple[str, ...], dict[str, Any]]] = {
    # 1. the new session a handoff starts
    "new-name-last": (("omp", "pi"), new(ablate=True)),
    "new-name-first": (("omp", "pi"), new(steps=["model", "thinking", "title", "custom"])),
    "new-nonascii-title": (("omp", "pi"), new(title=TITLE_NONASCII)),
    "new-long-title": (("omp", "pi"), new(title=TITLE_LONG)),
    "new-terminal": (("omp",), new(terminal=ag.TERMINAL, rememberParent=True)),
    # omp: a whole-file rewrite after the name (what the header then holds)
    "new-rewritten": (("omp",), new(steps=["model", "thinking", "custom", "title", "rewrite"])),
    # omp: what /new (AgentSession.newSession) writes itself: no model_change, the level with
    # configured = the level, a service_tier_change
    "new-slash-new": (
        ("omp",),
        new(steps=["thinking", "serviceTier", "custom", "title"], configured="high"),
    ),
    # omp: the sdk's own start of a session (no parentSession possible; written at ensureOnDisk)
    "new-sdk-create": (("omp",), new(start="create", parentFile=None)),
    # pi: the sdk (createAgentSession) writes the model and level; then the first user message,
    # which is when pi itself first writes the file
    "new-pi-agent": (("pi",), new(steps=["agent", "custom", "title"])),
    "new-pi-first-write": (
        ("pi",),
        new(steps=["model", "thinking", "custom", "title", "user"], userText="go on", write="none"),
    ),
    # 2. a model switch in an existing session, after an assistant message
    "switch-after-assistant": (
        ("omp", "pi"),
        {"case": "append", "file": "B", "model": OTHER_MODEL},
    ),
    "switch-role-omitted": (
        ("omp",),
        {"case": "append", "file": "B", "model": OTHER_MODEL, "role": None},
    ),
    "switch-manager-only": (
        ("pi",),
        {"case": "append", "file": "B", "model": OTHER_MODEL, "via": "manager"},
    ),
    "restore-after-handoff": (
        ("omp", "pi"),
        {"case": "append", "file": "B+handoff", "model": MODEL},
    ),
    # omp reading a pi-style session (its model_change entries have provider + modelId, which omp
    # ignores): after the handoff's recorded answer, an omp-style model_change names the model
    "restore-pi-style-after-handoff": (
        ("omp",),
        {"case": "append", "file": "piB+handoff", "model": MODEL},
    ),
    "restore-after-handoff-manager-only": (
        ("pi",),
        {"case": "append", "file": "B+handoff", "model": MODEL, "via": "manager"},
    ),
}


def handed_off(agent: ag.Agent, base: Path, work: Path) -> tuple[Path, str]:
    """B after ``handoff B --model extractive`` (this checkout's handoff_cli), and what that
    appended."""
    home = work / "handoff-home"
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    old = ag.install(agent, home, base)
    done = ag.handoff(home, agent, [str(old), "--model", "extractive"])
    if done.returncode != 0:
        raise SystemExit(f"handoff failed for {agent.name}: {done.stderr.strip()[-1000:]}")
    text = old.read_text(encoding="utf-8")
    original = base.read_text(encoding="utf-8")
    if not text.startswith(original):
        raise SystemExit(f"handoff rewrote {old} instead of appending")
    target = work / f"{agent.name}-{base.name}"
    shutil.copy2(old, target)
    return target, text[len(original) :]


def run_driver(agent: ag.Agent, spec: dict[str, Any], home: Path) -> dict[str, Any]:
    env = {"HOME": str(home), "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
    if agent.kind == "omp":
        cmd = [str(ag.BUN), str(HERE / "omp/newsession.ts")]
        if agent.lib:
            env["OMP_LIB"] = str(agent.lib)
    else:
        cmd = [str(ag.NODE), str(HERE / "pi/newsession.mjs")]
    done = subprocess.run(
        cmd,
        input=json.dumps({**spec, "home": str(home)}),
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if done.returncode != 0 or not done.stdout.strip():
        raise SystemExit(
            f"{agent.name} driver failed ({done.returncode}): {done.stderr.strip()[-3000:]}"
        )
    return json.loads(done.stdout.splitlines()[-1])


def texts(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def who(p: str, file: Path, spec: dict[str, Any], out: dict[str, Any], copy: Path) -> str:
    """How a report names a session file: N (the new one), FILE (the one appended to), B."""
    parent = Path(out.get("parentSession") or "").name
    if Path(p).name == file.name:
        return "N" if spec["case"] == "new" else "FILE"
    return "B" if parent and Path(p).name == parent else p.replace(str(copy), "$HOME")


def whole(
    agent: ag.Agent, spec: dict[str, Any], out: dict[str, Any], home: Path
) -> list[dict[str, Any]]:
    """The agent itself, in print mode, on a copy of the run's HOME."""
    runs = []
    project = ag.PROJECT
    project.mkdir(exist_ok=True)
    file = Path(out["file"].replace("$HOME", str(home)))
    probes: list[tuple[str, dict[str, Any]]] = []
    if spec["case"] == "new":
        probes.append(("--continue", {"cont": True}))
        if spec.get("terminal"):
            probes.append(
                (
                    f"--continue in terminal {spec['terminal']}",
                    {"cont": True, "terminal": spec["terminal"]},
                )
            )
            # the same with the pointer still naming B (line 2 set back to B): what a writer that
            # does not move the pointer leaves
            probes.append(
                (
                    f"--continue in terminal {spec['terminal']}, pointer set back to B",
                    {"cont": True, "terminal": spec["terminal"], "pointerToB": True},
                )
            )
    else:
        probes.append(
            ("--resume FILE" if agent.kind == "omp" else "--session FILE", {"session": str(file)})
        )
    for label, kw in probes:
        copy = Path(tempfile.mkdtemp(prefix="newsession-whole-")) / "home"
        shutil.copytree(home, copy, symlinks=True)
        # omp's terminal pointers name files by absolute path: make them name the copy's.
        for pointer in (copy / ".omp/agent/terminal-sessions").glob("*"):
            pointer.write_text(
                pointer.read_text(encoding="utf-8").replace(str(home), str(copy)), encoding="utf-8"
            )
        if kw.pop("pointerToB", False):
            for pointer in (copy / ".omp/agent/terminal-sessions").glob("*"):
                lines = pointer.read_text(encoding="utf-8").split("\n")
                lines[1] = out["parentSession"].replace(str(home), str(copy))
                pointer.write_text("\n".join(lines), encoding="utf-8")
        if "session" in kw:
            kw = {**kw, "session": kw["session"].replace(str(home), str(copy))}
        probe = ag.next_request(agent, copy, project, **kw)
        req = probe.get("request") or {}
        opened = [who(p, file, spec, out, copy) for p in probe["opened"]]
        document = "Retry the HTTP client with backoff" in texts(req.get("messages"))
        runs.append(
            {
                "command": label,
                "exit": probe["exit"],
                "opened": opened,
                "model": req.get("model"),
                "reasoning": req.get("reasoning"),
                "carriesDocument": spec["case"] == "new" and document,
                "stderr": [
                    x for x in probe["stderr"] if "restore" in x.lower() or "warn" in x.lower()
                ],
            }
        )
        shutil.rmtree(copy.parent, ignore_errors=True)
    return runs


def run_case(agent: ag.Agent, name: str, work: Path, with_whole: bool) -> dict[str, Any]:
    _kinds, template = CASES[name]
    base = REPO / "tests/fixtures/agents" / SHORT[agent.name]
    spec = dict(template)
    shown = dict(template)
    extra: dict[str, Any] = {}
    for key in ("parentFile", "file"):
        if spec.get(key) == "B":
            spec[key] = str(base)
            shown[key] = str(base.relative_to(REPO))
        elif spec.get(key) in ("B+handoff", "piB+handoff"):
            if spec[key] == "piB+handoff":
                base = REPO / "tests/fixtures/agents" / SHORT["pi-1.6.0"]
            target, appended = handed_off(agent, base, work)
            spec[key] = str(target)
            shown[key] = f"{base.relative_to(REPO)} + handoff --model extractive"
            extra["handoffAppended"] = appended
        elif key in spec and spec[key] is None:
            del spec[key]
            del shown[key]
    home = ROOT / agent.name / name
    shutil.rmtree(home, ignore_errors=True)
    home.parent.mkdir(parents=True, exist_ok=True)
    out = run_driver(agent, spec, home)
    record: dict[str, Any] = {
        "agent": agent.name,
        "case": name,
        "spec": shown,
        **extra,
        "output": out,
    }
    if with_whole:
        record["whole"] = whole(agent, spec, out, home)
    return record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=FIXTURES / "newsession")
    parser.add_argument(
        "--whole", action="store_true", help="also run the agents whole (print mode)"
    )
    parser.add_argument("--print", nargs=2, metavar=("CASE", "AGENT"))
    parser.add_argument("--case", action="append", help="only these cases")
    parser.add_argument("agents", nargs="*", help=f"default: {' '.join(ag.AGENTS)}")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="newsession-"))
    try:
        if args.print:
            name, agent = args.print
            print(
                json.dumps(
                    run_case(ag.AGENTS[agent], name, work, args.whole), ensure_ascii=False, indent=1
                )
            )
            return
        for agent_name in args.agents or ag.AGENTS:
            agent = ag.AGENTS[agent_name]
            folder = args.out / agent.name
            folder.mkdir(parents=True, exist_ok=True)
            for name, (kinds, _) in CASES.items():
                if agent.kind not in kinds or (args.case and name not in args.case):
                    continue
                record = run_case(agent, name, work, args.whole)
                path = folder / f"{name}.json"
                path.write_text(
                    json.dumps(record, ensure_ascii=False, indent=1) + "\n", encoding="utf-8"
                )
                print(
                    f"{path.relative_to(REPO) if path.is_relative_to(REPO) else path}",
                    file=sys.stderr,
                )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
