"""Real sessions resumed by the real agents: what Claude Code and Codex send for each file.

    python3 oracles/real.py claude [FILE ...]   # Claude Code 2.1.332 (default: every session of
                                                # tests/fixtures/real/claude, subagents aside)
    python3 oracles/real.py codex [FILE ...]    # Codex 0.171.0 (every rollout of .../real/codex)

Each file is resumed as ``cc.py context`` and ``codex.py context`` do (a fresh home, the loopback
model, the prompt "continue"; a Claude Code session from an unrelated folder, as the CLI finds it
by its id anywhere), and beside it go ``<file>.<agent>-resume.json`` (the exit code, the model
sent, the count of messages, the agent's last words when it refuses, the version) and, when it
resumed, ``<file>.<agent>-context.json.gz`` (the context: the request's messages without the
agent's own additions and the prompt, gzip'd: real sessions are large).
``tests/test_real_resume.py`` holds ``handoff show FILE --context --json`` to them.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path
from typing import Any

ORACLES = Path(__file__).resolve().parent
REAL = ORACLES.parent / "tests" / "fixtures" / "real"
sys.path[:0] = [str(ORACLES / "claude"), str(ORACLES / "codex")]

import cc  # noqa: E402
import codex  # noqa: E402

UNRELATED = "/tmp/handoff-oracle-real/elsewhere"
"""Where Claude Code is started: not the session's folder, which is another machine's."""


def claude_files() -> list[Path]:
    return sorted(p for p in (REAL / "claude").rglob("*.jsonl") if "subagents" not in p.parts)


def codex_files() -> list[Path]:
    return sorted((REAL / "codex").rglob("rollout-*.jsonl"))


def keep(path: Path, agent: str, record: dict[str, Any], context: Any) -> None:
    (path.with_name(f"{path.name}.{agent}-resume.json")).write_text(
        json.dumps(record, ensure_ascii=False, indent=1) + "\n", encoding="utf-8"
    )
    zipped = path.with_name(f"{path.name}.{agent}-context.json.gz")
    if context is None:
        zipped.unlink(missing_ok=True)
        return
    data = json.dumps(context, ensure_ascii=False).encode()
    zipped.write_bytes(gzip.compress(data, mtime=0))


def claude(path: Path) -> dict[str, Any]:
    got = cc.resume(path, cwd=UNRELATED)
    record: dict[str, Any] = {"agent": "claude-code", "version": cc.VERSION, "code": got["code"]}
    context = None
    if got["code"] == 0 and got["requests"]:
        request = got["requests"][0]
        context = cc.context_of(request)
        record |= {"model": request["model"], "messages": len(context)}
    else:
        record["said"] = (got["stderr"].strip() or got["stdout"].strip())[-400:]
    keep(path, "claude", record, context)
    return record


def codex_one(path: Path) -> dict[str, Any]:
    codex.project()
    got, context = codex.resume_oracle(path)
    posts = [r for r in got["requests"] if r.get("input") and r["input"][-1].get("role") == "user"]
    record: dict[str, Any] = {
        "agent": "codex",
        "version": codex.VERSION,
        "code": got["rc"],
        "provider": got["provider"],
        "before_the_turn": got["before_the_turn"],
    }
    if context is not None:
        record |= {
            "model": posts[0].get("model"),
            "messages": len(context["context"]),
            "dropped": context["dropped"],
        }
    else:
        record["said"] = got["stderr"][-6:]
    keep(path, "codex", record, None if context is None else context["context"])
    return record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("agent", choices=("claude", "codex"))
    parser.add_argument("files", nargs="*", type=Path)
    args = parser.parse_args()
    files = args.files or (claude_files() if args.agent == "claude" else codex_files())
    run = claude if args.agent == "claude" else codex_one
    for path in files:
        record = run(path.resolve())
        shown = {k: v for k, v in record.items() if k in ("code", "model", "messages", "said")}
        print(json.dumps({"file": str(path), **shown}, ensure_ascii=False)[:600], flush=True)


if __name__ == "__main__":
    main()
