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
from collections.abc import Callable, Iterator
from pathlib import Path

import cc

sys.path.insert(0, str(cc.ORACLES))
import agents  # oracles/agents.py: the pi family's agents whole

SOURCES = {"tools": cc.REPO / "tests/fixtures/claude/made/tools.jsonl",
           "thinking": cc.REPO / "tests/fixtures/claude/hand/thinking.jsonl"}  # fmt: skip
OUT = cc.REPO / "tests/fixtures/claude/handoff"
OMP = agents.AGENTS["omp-18.2.3"]
OMP_SOURCE = min((cc.REPO / "tests/fixtures/agents/omp-18.2.3").glob("*.jsonl"),
                 key=lambda p: p.stat().st_size)  # fmt: skip
"""The short session oh-my-pi 18.2.3 made itself: a read, a bash call, a plan."""
OMP_CONTEXT = cc.ORACLES / "omp/context.ts"
OMP183_LIB = cc.ORACLES / "omp-bundle/18.3.4/package/dist/lib.js"


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
    row = {"file": kept.name, "folder": written.parent.name, "messages": len(context["messages"])}
    return row | opened_whole(agents.AGENTS["pi-1.6.0"], root / "home", Path(cwd), written, kept)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("parts", nargs="*", help=f"of {', '.join(PARTS)} (default: all)")
    args = parser.parse_args()
    unknown = [part for part in args.parts if part not in PARTS]
    if unknown:
        parser.error(f"no part {unknown[0]}")
    args.out.mkdir(parents=True, exist_ok=True)
    for part in args.parts or PARTS:
        for row in PARTS[part](args.out):
            print(json.dumps(row), flush=True)


def handoffs(out: Path) -> Iterator[dict[str, object]]:
    for name, source in SOURCES.items():
        with tempfile.TemporaryDirectory(prefix="cchandoff-") as tmp:
            old, new = hand_off(Path(tmp) / "config", source)
            for kind, path in (("old", old), ("new", new)):
                kept = out / f"{name}-{kind}.jsonl"
                shutil.copyfile(path, kept)
                yield {**cc.write_context(kept), **plain_resume(kept)}


def in_place(out: Path) -> Iterator[dict[str, object]]:
    for name, source in SOURCES.items():
        with tempfile.TemporaryDirectory(prefix="cchandoff-") as tmp:
            compacted, _ = hand_off(Path(tmp) / "config", source, "--in-place")
            kept = out / f"{name}-inplace.jsonl"
            shutil.copyfile(compacted, kept)
            yield {**cc.write_context(kept), **plain_resume(kept)}


def from_pi(out: Path) -> Iterator[dict[str, object]]:
    with tempfile.TemporaryDirectory(prefix="cchandoff-") as tmp:
        kept = out / "from-pi-new.jsonl"
        shutil.copyfile(hand_over_from_pi(Path(tmp)), kept)
        yield {**cc.write_context(kept), **plain_resume(kept)}


def to_pi(out: Path) -> Iterator[dict[str, object]]:
    with tempfile.TemporaryDirectory(prefix="cchandoff-") as tmp:
        yield hand_over_to_pi(Path(tmp), out)


def from_omp(out: Path) -> Iterator[dict[str, object]]:
    """A session oh-my-pi 18.2.3 made (``tests/fixtures/agents``) handed off ``--to claude``:
    ``from-omp-new``, resumed by the CLI as the others."""
    with tempfile.TemporaryDirectory(prefix="cchandoff-") as tmp:
        root = Path(tmp)
        source = agents.install(OMP, root / "home", OMP_SOURCE)
        done = our_cli(root, ["handoff", str(source), "--to", "claude"], agents.PROJECT)
        folder = root / "config/projects" / cc.fold(str(agents.PROJECT))
        kept = out / "from-omp-new.jsonl"
        shutil.copyfile(folder / f"{done.stdout.strip()}.jsonl", kept)
        yield {**cc.write_context(kept), **plain_resume(kept)}


def to_omp(out: Path) -> Iterator[dict[str, object]]:
    """``made/tools`` handed off ``--to omp``: the oh-my-pi session written (``to-omp-new``),
    its context by 18.2.3's and 18.3.4's own code (``*.context.json``,
    ``tests/fixtures/omp183/claude/handoff/*.omp183-context.json``), and oh-my-pi 18.2.3 whole
    on it (``opened_whole``)."""
    with tempfile.TemporaryDirectory(prefix="cchandoff-") as tmp:
        root = Path(tmp)
        sid, cwd = cc.session_id_cwd(SOURCES["tools"])
        cc.install(root, SOURCES["tools"], sid, cwd)
        done = our_cli(root, ["handoff", sid, "--to", "omp"], Path(cwd))
        home = root / "home"
        (written,) = (home / ".omp/agent/sessions").glob(f"*/*_{done.stdout.strip()}.jsonl")
        kept = out / "to-omp-new.jsonl"
        shutil.copyfile(written, kept)
        contexts(kept)
        row = {"file": kept.name, "folder": written.parent.name}
        yield row | opened_whole(OMP, home, Path(cwd), written, kept)


def opened_whole(
    agent: agents.Agent, home: Path, cwd: Path, written: Path, kept: Path
) -> dict[str, object]:
    """The agent whole on the session we wrote for it from ``made/tools``: what its resume
    picker lists and what it restores (``agents.py resume``), and one print-mode turn by the
    file's path and one by ``--continue`` in its cwd (``agents.py next``), each on the same
    files: what it opened, its model, whether the request holds the document and none of the
    old answers. The first request by path is kept beside the file (``*.<agent>-request.json``:
    ``omp``, ``pi``)."""
    snapshot = home.with_name("snapshot")
    shutil.copytree(home, snapshot, symlinks=True)
    listed = agents.resume_facts(agent, home, cwd, [str(written)])
    turns = {}
    for how, given in (("path", {"session": str(written)}), ("continue", {"cont": True})):
        agents.restore(home, snapshot)
        turns[how] = agents.next_request(agent, home, cwd, **given)
    cc.dump(kept.with_suffix(f".{agent.kind}-request.json"), turns["path"]["request"])
    document = agents.document_of(written, SOURCES["tools"])
    restored = listed["files"][0]
    return {
        "agent": agent.name,
        "picker": [row.get("shown", row.get("name")) for row in listed["picker"]],
        "restores": restored.get("models", restored.get("model")),
        **{
            how: {
                "exit": got["exit"],
                "opened": [Path(p).name for p in got["opened"]],
                "model": got["request"] and got["request"]["model"],
                "holds_document": agents.carries(got["request"], document),
                "old_answers_sent": old_answers_sent(got["request"], SOURCES["tools"], document),
                "stderr": got["stderr"],
            }
            for how, got in turns.items()
        },
    }


def old_answers_sent(request: dict[str, object] | None, old: Path, document: str) -> list[str]:
    """The old session's answers (its assistant records' texts) that a request holds, but
    those the document quotes: none when it starts from the document."""
    said = [
        block["text"]
        for record in map(json.loads, old.read_text(encoding="utf-8").splitlines())
        if record.get("type") == "assistant"
        for block in record["message"]["content"]
        if block.get("type") == "text"
    ]
    sent = "\n".join(agents.texts(request["messages"])) if request else ""
    return [text for text in said if text in sent and text not in document]


def our_cli(root: Path, args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """Our CLI (``HANDOFF_PYTHON``), with ``root``'s home and Claude Code config, the built-in
    writer: stdout is the new session's id."""
    env = {**os.environ, "PYTHONPATH": str(cc.REPO), "HOME": str(root / "home"),
           "CLAUDE_CONFIG_DIR": str(root / "config"), "HANDOFF_SESSIONS_DIR": ""}  # fmt: skip
    python = os.environ.get("HANDOFF_PYTHON", sys.executable)
    command = [python, "-m", "handoff_cli", *args, "--model", "extractive", "-q"]
    cwd.mkdir(parents=True, exist_ok=True)
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=True)


def contexts(path: Path) -> None:
    """oh-my-pi's own contexts of ``path``: 18.2.3's beside it, 18.3.4's in ``omp183/`` (or
    beside it too, for a file outside the fixtures)."""
    fixtures = cc.REPO / "tests/fixtures"
    inside = path.is_relative_to(fixtures)
    omp183 = fixtures / "omp183" / path.relative_to(fixtures) if inside else path
    for lib, target in ((None, path.with_suffix(".context.json")),
                        (OMP183_LIB, omp183.with_suffix(".omp183-context.json"))):  # fmt: skip
        env = {**os.environ, **({"OMP_LIB": str(lib)} if lib else {})}
        done = subprocess.run([str(agents.BUN), str(OMP_CONTEXT), str(path)], env=env,
                              capture_output=True, text=True, check=True)  # fmt: skip
        target.parent.mkdir(parents=True, exist_ok=True)
        cc.dump(target, json.loads(done.stdout)["context"])


PARTS: dict[str, Callable[[Path], Iterator[dict[str, object]]]] = {
    "handoffs": handoffs,
    "in-place": in_place,
    "from-pi": from_pi,
    "to-pi": to_pi,
    "from-omp": from_omp,
    "to-omp": to_omp,
}


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
