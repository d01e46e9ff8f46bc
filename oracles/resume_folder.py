#!/usr/bin/env python3
"""Where each agent works when a session is resumed from another folder (issue 39, item 3).

    resume_folder.py [--out oracles/results/resume-folder.json]

Each agent resumes a session whose cwd is ``SESSION_CWD`` (made first), run from ``ELSEWHERE``
(an unrelated folder), as our resume line tells a person to; the first request it sends names
the folder it works in (Claude Code's "Working directory", Codex's ``<cwd>``, the pi family's
"Current working directory"), which is compared with both. Nothing but loopback is contacted.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(HERE / "claude"), str(HERE / "codex")]

import cc  # noqa: E402
import codex  # noqa: E402

PI_FAMILY = ("omp-18.2.3", "omp-18.3.4", "pi-1.6.0")
SESSION_CWD = "/tmp/handoff-resume-folder/project"
ELSEWHERE = Path("/tmp/handoff-resume-folder/elsewhere")
FOLDER = re.compile(
    r"(?:Working directory|working directory|Current working directory)\s*:\s*[`'\"]?([^\s`'\"<]+)"
    r"|<cwd>([^<]+)</cwd>"
)


def stated(body: Any) -> list[str]:
    """The folders a request says the agent works in."""
    text = json.dumps(body, ensure_ascii=False).replace("\\n", "\n")
    return sorted({(m.group(1) or m.group(2)).strip().rstrip(".") for m in FOLDER.finditer(text)})


def with_cwd(source: Path, target: Path, cwd: str) -> Path:
    """A copy of ``source`` whose records name ``cwd`` (its header's and each record's)."""
    lines = []
    for raw in source.read_text(encoding="utf-8").splitlines():
        value = json.loads(raw)
        if isinstance(value, dict):
            if "cwd" in value:
                value["cwd"] = cwd
            payload = value.get("payload")
            if isinstance(payload, dict) and "cwd" in payload:
                payload["cwd"] = cwd
        lines.append(json.dumps(value, ensure_ascii=False))
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return target


def claude_code(work: Path, start: Path = ELSEWHERE) -> dict[str, Any]:
    example = next((REPO / "sessions/-home-dev-projects-todo-api").glob("*.jsonl"))
    path = with_cwd(example, work / "claude" / example.name, SESSION_CWD)
    sid, _ = cc.session_id_cwd(path)
    with tempfile.TemporaryDirectory(prefix="ccfolder-") as tmp:
        root = Path(tmp)
        cc.install(root, path, sid, SESSION_CWD)
        flags = ["--fork-session", "--no-session-persistence"]
        done = cc.run(root, start, ["--resume", sid, cc.PROMPT, *flags])
    return {"agent": "Claude Code " + cc.VERSION,
            "code": done.code, "stated": stated(done.requests[:1]), "stderr": done.stderr[-300:]}


def codex_cli(work: Path, start: Path = ELSEWHERE) -> dict[str, Any]:
    example = next((REPO / "sessions/2026").rglob("rollout-*.jsonl"))
    path = with_cwd(example, work / "codex" / example.name, SESSION_CWD)
    meta = codex.rollout_meta(path)
    home = codex.fresh_home()
    codex.place(path, home / ".codex", meta)
    run = codex.run_codex(
        home, [*codex.EXEC, "resume", meta.id, codex.PROMPT], [{"text": "ok"}],
        provider=meta.provider or codex.PROVIDER, model=meta.model or codex.MODEL,
        cwd=start,
    )  # fmt: skip
    posts = [r["body"] for r in run.requests if isinstance(r.get("body"), dict)]
    return {"agent": "Codex " + codex.VERSION, "code": run.rc, "stated": stated(posts[:1]),
            "stderr": run.stderr[-300:]}  # fmt: skip


def pi_family(agent: str, work: Path) -> dict[str, Any]:
    import keep  # the pi-family session the keep oracle makes, which both agents answer from

    path = work / agent / "session.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = keep._pi_lines()
    lines[0]["cwd"] = SESSION_CWD
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    home = work / agent / "home"
    command = [sys.executable, str(HERE / "agents.py"), "next", agent, "--home", str(home),
               "--cwd", str(ELSEWHERE), "--session", str(path)]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    found = json.loads(done.stdout) if done.returncode == 0 else {}
    return {"agent": agent, "code": found.get("exit", done.returncode),
            "stated": stated(found.get("request")), "stderr": str(found.get("stderr"))[-300:]}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=HERE / "results/resume-folder.json")
    args = parser.parse_args()
    Path(SESSION_CWD).mkdir(parents=True, exist_ok=True)
    ELSEWHERE.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="resume-folder-"))
    rows = []
    inside = Path(SESSION_CWD)  # what our line's `cd DIR &&` does
    runs: list[tuple[Any, Path]] = [
        (claude_code, ELSEWHERE), (claude_code, inside), (codex_cli, ELSEWHERE),
        (codex_cli, inside), *((lambda w, s, a=a: pi_family(a, w), ELSEWHERE) for a in PI_FAMILY),
    ]  # fmt: skip
    for run, start in runs:
        try:
            row = run(work, start)
        except Exception as error:  # one agent's failure is its row, not the run's end
            row = {"agent": getattr(run, "__name__", "?"), "error": repr(error)[-500:]}
        row["session_cwd"], row["run_from"] = SESSION_CWD, str(start)
        row["works_in_session_folder"] = SESSION_CWD in row.get("stated", [])
        print(json.dumps(row, ensure_ascii=False), flush=True)
        rows.append(row)
    shutil.rmtree(work, ignore_errors=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(rows, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
