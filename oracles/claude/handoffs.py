#!/usr/bin/env python3
"""Our handoffs of Claude Code sessions, resumed by the real Claude Code 2.1.332.

    HANDOFF_PYTHON=.venv/bin/python handoffs.py [--out tests/fixtures/claude/handoff]

For each source session (``made/tools``: tools and signed thinking; ``hand/thinking``:
redacted and unsigned thinking, another model), installed in a project folder of a fresh
config under its own session id, ``handoff SESSION --model extractive`` (our CLI, from this
checkout) writes the new session and records the exchange in the old one. Both files are then
resumed by ``cc.py``'s resume (``--bare --fork-session --no-session-persistence``, the file
left untouched): each must be accepted, and what the CLI sent is kept beside the file as
``<name>.claude-request.json`` and ``<name>.claude-context.json``; then each is resumed plainly
(``--bare``), which must keep the file as a prefix, stay on the session's model and append no
synthetic turn. Each is also handed off ``--in-place`` (``<name>-inplace``: the compaction
appended to it), resumed the same ways. Then pi's example session is handed off ``--to claude``
(``from-pi-new``), resumed the same ways, and ``made/tools`` ``--to pi`` (``to-pi-new``), read
by the real pi 1.6.0 (``oracles/pi/context.mjs``; its context kept as
``to-pi-new.pi-context.json``). Printed: one line a file. ``HANDOFF_PYTHON``: the interpreter
our CLI runs in.
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

import cc

SOURCES = {"tools": cc.REPO / "tests/fixtures/claude/made/tools.jsonl",
           "thinking": cc.REPO / "tests/fixtures/claude/hand/thinking.jsonl"}  # fmt: skip
OUT = cc.REPO / "tests/fixtures/claude/handoff"


def hand_off(config: Path, source: Path, *flags: str) -> tuple[Path, Path]:
    """Our CLI's handoff of ``source`` installed in ``config``: the old file and the new one
    (the old one itself, ``--in-place``)."""
    sid, cwd = cc.session_id_cwd(source)
    old = cc.install(config.parent, source, sid, cwd)
    env = {**os.environ, "PYTHONPATH": str(cc.REPO), "HOME": str(config.parent / "home"),
           "CLAUDE_CONFIG_DIR": str(config), "HANDOFF_SESSIONS_DIR": ""}  # fmt: skip
    python = os.environ.get("HANDOFF_PYTHON", sys.executable)
    command = [python, "-m", "handoff_cli", "handoff", sid, "--model", "extractive", "-q"]
    done = subprocess.run(
        [*command, *flags], cwd=cwd, env=env, capture_output=True, text=True, check=True
    )
    return old, old.with_name(f"{done.stdout.strip()}.jsonl")


PI_SOURCE = next((cc.REPO / "sessions").glob("--home-dev-projects-notes-app--/*.jsonl"))


def hand_over_from_pi(root: Path) -> Path:
    """The pi example session (its cwd made the fixtures' project) handed off ``--to claude``:
    the Claude Code session written."""
    lines = PI_SOURCE.read_text(encoding="utf-8").splitlines(keepends=True)
    header = json.loads(lines[0]) | {"cwd": str(cc.PROJECT)}
    folder = root / "home/.pi/agent/sessions/--pi-source--"
    folder.mkdir(parents=True)
    source = folder / PI_SOURCE.name
    source.write_text(json.dumps(header) + "\n" + "".join(lines[1:]), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(cc.REPO), "HOME": str(root / "home"),
           "CLAUDE_CONFIG_DIR": str(root / "config"), "HANDOFF_SESSIONS_DIR": ""}  # fmt: skip
    python = os.environ.get("HANDOFF_PYTHON", sys.executable)
    command = [python, "-m", "handoff_cli", "handoff", str(source), "--to", "claude"]
    command += ["--model", "extractive", "-q"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    folder = root / "config/projects" / cc.fold(str(cc.PROJECT))
    return folder / f"{done.stdout.strip()}.jsonl"


PI_CONTEXT = cc.ORACLES / "pi/context.mjs"


def hand_over_to_pi(root: Path, out: Path) -> dict[str, object]:
    """``made/tools`` handed off ``--to pi``: the pi session written, kept as
    ``to-pi-new.jsonl`` with the real pi's context of it beside it (``*.pi-context.json``)."""
    config = root / "config"
    sid, cwd = cc.session_id_cwd(SOURCES["tools"])
    cc.install(root, SOURCES["tools"], sid, cwd)
    env = {**os.environ, "PYTHONPATH": str(cc.REPO), "HOME": str(root / "home"),
           "CLAUDE_CONFIG_DIR": str(config), "HANDOFF_SESSIONS_DIR": ""}  # fmt: skip
    python = os.environ.get("HANDOFF_PYTHON", sys.executable)
    command = [python, "-m", "handoff_cli", "handoff", sid, "--to", "pi"]
    command += ["--model", "extractive", "-q"]
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=True)
    (written,) = (root / "home/.pi/agent/sessions").glob(f"*/*_{done.stdout.strip()}.jsonl")
    kept = out / "to-pi-new.jsonl"
    shutil.copyfile(written, kept)
    pi = subprocess.run(["node", str(PI_CONTEXT), str(kept)], capture_output=True, text=True)
    context = json.loads(pi.stdout)["context"]
    text = json.dumps(context, indent=1, ensure_ascii=False)
    kept.with_suffix(".pi-context.json").write_text(text, encoding="utf-8")
    return {"file": kept.name, "folder": written.parent.name, "messages": len(context["messages"])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    out: Path = parser.parse_args().out
    out.mkdir(parents=True, exist_ok=True)
    for name, source in SOURCES.items():
        with tempfile.TemporaryDirectory(prefix="cchandoff-") as tmp:
            old, new = hand_off(Path(tmp) / "config", source)
            for kind, path in (("old", old), ("new", new)):
                kept = out / f"{name}-{kind}.jsonl"
                shutil.copyfile(path, kept)
                row = {**cc.write_context(kept), **plain_resume(kept)}
                print(json.dumps(row), flush=True)
    for name, source in SOURCES.items():
        with tempfile.TemporaryDirectory(prefix="cchandoff-") as tmp:
            compacted, _ = hand_off(Path(tmp) / "config", source, "--in-place")
            kept = out / f"{name}-inplace.jsonl"
            shutil.copyfile(compacted, kept)
            print(json.dumps({**cc.write_context(kept), **plain_resume(kept)}), flush=True)
    with tempfile.TemporaryDirectory(prefix="cchandoff-") as tmp:
        kept = out / "from-pi-new.jsonl"
        shutil.copyfile(hand_over_from_pi(Path(tmp)), kept)
        print(json.dumps({**cc.write_context(kept), **plain_resume(kept)}), flush=True)
    with tempfile.TemporaryDirectory(prefix="cchandoff-") as tmp:
        print(json.dumps(hand_over_to_pi(Path(tmp), out)), flush=True)


def plain_resume(path: Path) -> dict[str, object]:
    """A plain resume (``--bare`` only, the file written to): whether it kept the file as a
    prefix, the model it used, and the messages it appended (no synthetic turn expected)."""
    got = cc.resume(path, flags=["--bare"])
    before = path.read_text(encoding="utf-8")
    after = got["file_after"] or ""
    added = [json.loads(line) for line in after[len(before) :].splitlines()]
    turns = [
        f"{r['type']}:{(r.get('message') or {}).get('model', '')}"
        for r in added
        if r.get("type") in ("user", "assistant")
    ]
    return {
        "plain_code": got["code"],
        "prefix_kept": after.startswith(before),
        "plain_model": got["requests"][0]["model"] if got["requests"] else None,
        "appended": turns,
    }


if __name__ == "__main__":
    main()
