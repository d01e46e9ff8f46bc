"""The session files for the Claude Code oracle: made by the CLI itself, or written by hand.

``make_fixtures`` drives ``claude -p`` turn by turn in cc.PROJECT, the loopback model scripted
to call tools, and keeps what the CLI wrote (tests/fixtures/claude/made/<name>.jsonl, and
<name>/subagents/ beside it when it made some). Ids are fixed (``--session-id``), so a rerun
makes the same files but for timestamps, message ids and tool ids.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import cc

MADE = cc.REPO / "tests/fixtures/claude/made"
NOTES = "one\ntwo\nthree\n"
TOOLS = ["--allowedTools", "Read,Bash"]


def fixed_id(name: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"handoff-oracle-claude/{name}"))


def signed(thinking: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": thinking, "signature": f"sig-{len(thinking)}-fake"}


def turns_tools() -> list[tuple[str, list[dict[str, Any]]]]:
    notes = str(cc.PROJECT / "notes.txt")
    return [
        (
            "Read notes.txt and tell me what it says.",
            [{"tool": "Read", "arguments": {"file_path": notes}}, {"text": "Three words."}],
        ),
        (
            "How many lines does it have? Use bash.",
            [
                {
                    "content": [
                        signed("wc -l counts them."),
                        {
                            "type": "tool_use",
                            "name": "Bash",
                            "input": {"command": "wc -l notes.txt", "description": "Count lines"},
                        },
                    ]
                },
                {"text": "3 lines."},
            ],
        ),
        (
            "Plan the change in two steps.",
            [{"content": [signed("Two steps: edit, then test."), {"type": "text", "text": "1. Edit. 2. Test."}]}],
        ),
    ]


class Maker:
    """One config folder in which the CLI makes sessions, turn by turn."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.log: list[dict[str, Any]] = []

    def turn(self, args: list[str], script: list[dict[str, Any]]) -> cc.Run:
        done = cc.run(self.root, cc.PROJECT, [*args, *TOOLS], script)
        self.log.append(
            {"args": args, "code": done.code, "requests": len(done.requests), "stdout": done.stdout}
        )
        if done.code != 0:
            raise SystemExit(f"claude {args}: {done.code}\n{done.stdout}\n{done.stderr[-1500:]}")
        return done

    def session(self, name: str, turns: list[tuple[str, list[dict[str, Any]]]]) -> str:
        sid = fixed_id(name)
        for n, (text, script) in enumerate(turns):
            self.turn([text, "--session-id" if n == 0 else "--resume", sid], script)
        return sid

    def keep(self, sid: str, name: str, out: Path) -> Path:
        folder = cc.project_dir(self.root, cc.PROJECT)
        target = out / f"{name}.jsonl"
        shutil.copyfile(folder / f"{sid}.jsonl", target)
        side = folder / sid
        if side.is_dir():
            shutil.rmtree(out / name, ignore_errors=True)
            shutil.copytree(side, out / name)
        return target


def make_fixtures(out: Path | None) -> None:
    out = out or MADE
    out.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(cc.PROJECT, ignore_errors=True)
    cc.PROJECT.mkdir(parents=True)
    (cc.PROJECT / "notes.txt").write_text(NOTES)
    with tempfile.TemporaryDirectory(prefix="ccmake-") as tmp:
        m = Maker(Path(tmp))
        kept = []
        # tools: Read, thinking + Bash, thinking + text; three runs, one file.
        tools = m.session("tools", turns_tools())
        kept.append(m.keep(tools, "tools", out))
        # fork: the tools session resumed with --fork-session, one more turn, in a new file.
        fork = fixed_id("fork")
        m.turn(["Try another way.", "--resume", tools, "--fork-session", "--session-id", fork], [{"text": "Another way: sed."}])
        kept.append(m.keep(fork, "fork", out))
        # compact: two turns, /compact in print mode, a turn after.
        compact = m.session(
            "compact",
            [("Remember the word lantern.", [{"text": "Noted: lantern."}]),
             ("And the number 42.", [{"text": "Noted: 42."}])],
        )
        m.turn(["/compact", "--resume", compact], [{"text": "<summary>The user asked to remember lantern and 42.</summary>"}])
        m.turn(["What were they?", "--resume", compact], [{"text": "lantern and 42."}])
        kept.append(m.keep(compact, "compact", out))
        # subagent: the Agent tool runs a general-purpose subagent in the foreground (so the
        # script's answers come in order) that reads notes.txt.
        sub = fixed_id("subagent")
        notes = str(cc.PROJECT / "notes.txt")
        m.turn(
            ["Have a subagent read notes.txt.", "--session-id", sub],
            [
                {"tool": "Agent", "arguments": {"description": "Read notes", "prompt": "Read notes.txt and report its words.", "subagent_type": "general-purpose", "run_in_background": False}},
                {"tool": "Read", "arguments": {"file_path": notes}},
                {"text": "The words are one, two, three."},
                {"text": "The subagent found: one, two, three."},
            ],
        )
        kept.append(m.keep(sub, "subagent", out))
        (out / "made.log.json").write_text(json.dumps(m.log, indent=1) + "\n")
    for path in kept:
        print(path.relative_to(cc.REPO))


commands: dict[str, Callable[[Path | None], None]] = {"make-fixtures": make_fixtures}
