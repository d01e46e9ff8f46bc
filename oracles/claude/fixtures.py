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
from collections.abc import Callable, Sequence
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
            [
                {
                    "content": [
                        signed("Two steps: edit, then test."),
                        {"type": "text", "text": "1. Edit. 2. Test."},
                    ]
                }
            ],
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
        m.turn(
            ["Try another way.", "--resume", tools, "--fork-session", "--session-id", fork],
            [{"text": "Another way: sed."}],
        )
        kept.append(m.keep(fork, "fork", out))
        # compact: two turns, /compact in print mode, a turn after.
        compact = m.session(
            "compact",
            [
                ("Remember the word lantern.", [{"text": "Noted: lantern."}]),
                ("And the number 42.", [{"text": "Noted: 42."}]),
            ],
        )
        m.turn(
            ["/compact", "--resume", compact],
            [{"text": "<summary>The user asked to remember lantern and 42.</summary>"}],
        )
        m.turn(["What were they?", "--resume", compact], [{"text": "lantern and 42."}])
        kept.append(m.keep(compact, "compact", out))
        # subagent: the Agent tool runs a general-purpose subagent in the foreground (so the
        # script's answers come in order) that reads notes.txt.
        sub = fixed_id("subagent")
        notes = str(cc.PROJECT / "notes.txt")
        m.turn(
            ["Have a subagent read notes.txt.", "--session-id", sub],
            [
                {
                    "tool": "Agent",
                    "arguments": {
                        "description": "Read notes",
                        "prompt": "Read notes.txt and report its words.",
                        "subagent_type": "general-purpose",
                        "run_in_background": False,
                    },
                },
                {"tool": "Read", "arguments": {"file_path": notes}},
                {"text": "The words are one, two, three."},
                {"text": "The subagent found: one, two, three."},
            ],
        )
        kept.append(m.keep(sub, "subagent", out))
        (out / "made.log.json").write_text(json.dumps(m.log, indent=1) + "\n")
    for path in kept:
        print(path.relative_to(cc.REPO))


# --- hand-written sessions ---------------------------------------------------------------------

HAND = cc.REPO / "tests/fixtures/claude/hand"
MODEL = "claude-sonnet-4-6"  # not the CLI's default (claude-opus-5-5): a request shows which wins


class Writer:
    """Records in Claude Code's shapes and key order (as 2.1.332 writes them, the optional keys
    left out), with fixed uuids and timestamps, so a rerun writes the same bytes."""

    def __init__(self, name: str, cwd: Path = cc.PROJECT) -> None:
        self.name = name
        self.sid = fixed_id(f"hand/{name}")
        self.cwd = str(cwd)
        self.records: list[dict[str, Any]] = []
        self.n = 0
        self.last: str | None = None  # the uuid the next chained record hangs from

    def _uuid(self) -> str:
        self.n += 1
        return str(uuid.uuid5(uuid.NAMESPACE_URL, f"{self.sid}/{self.n}"))

    def _time(self) -> str:
        return f"2026-11-30T10:{self.n // 60:02d}:{self.n % 60:02d}.000Z"

    def _tail(self) -> dict[str, Any]:
        return {
            "userType": "external",
            "entrypoint": "sdk-cli",
            "cwd": self.cwd,
            "sessionId": self.sid,
            "version": cc.VERSION,
            "gitBranch": "HEAD",
        }

    def chained(
        self, kind: str, body: dict[str, Any], parent: str | bool | None = True, **extra: Any
    ) -> str:
        """A record in the tree: parentUuid (the last one, unless given), isSidechain, body."""
        uid = self._uuid()
        record: dict[str, Any] = {
            "parentUuid": self.last if parent is True else parent,
            "isSidechain": extra.pop("isSidechain", False),
        }
        if kind == "user":
            record |= {"type": "user", **body, "uuid": uid, "timestamp": self._time()}
        else:
            record |= {**body, "type": kind, "uuid": uid, "timestamp": self._time()}
        record |= extra
        record |= self._tail()
        self.records.append(record)
        self.last = uid
        return uid

    def user(self, content: Any, **extra: Any) -> str:
        return self.chained("user", {"message": {"role": "user", "content": content}}, **extra)

    def assistant(self, blocks: list[dict[str, Any]], model: str = MODEL, **extra: Any) -> str:
        """One API message, one record a block, as the CLI writes them (one message id)."""
        mid = f"msg_{self.sid[:8]}{self.n:04d}"
        for block in blocks:
            message = {
                "id": mid,
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [block],
                "stop_reason": "tool_use" if block["type"] == "tool_use" else "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": 10, "output_tokens": 5},
            }
            self.chained("assistant", {"message": message}, **extra)
        assert self.last is not None
        return self.last

    def text(self, text: str, **extra: Any) -> str:
        return self.assistant([{"type": "text", "text": text}], **extra)

    def plain(self, record: dict[str, Any]) -> None:
        """A record outside the tree (no uuid), with the session id."""
        self.records.append({**record, "sessionId": self.sid})

    def write(self, out: Path, raw_lines: Sequence[str] = ()) -> Path:
        path = out / f"{self.name}.jsonl"
        lines = [json.dumps(r, ensure_ascii=False, separators=(",", ":")) for r in self.records]
        path.write_text("\n".join([*lines, *raw_lines]) + "\n", encoding="utf-8")
        return path


def tool_exchange(w: Writer, name: str, arguments: dict[str, Any], result: str) -> None:
    tid = f"toolu_{w.sid[:8]}{w.n:04d}"
    w.assistant([{"type": "tool_use", "id": tid, "name": name, "input": arguments}])
    w.user(
        [{"tool_use_id": tid, "type": "tool_result", "content": result}],
        toolUseResult={"stdout": result, "stderr": "", "interrupted": False},
    )


def compacted(w: Writer, before: str) -> None:
    """A compaction that keeps nothing, after ``before``: its boundary (no parent, the old leaf
    its logicalParentUuid, in the CLI's key order), then the summary."""
    boundary = w.chained(
        "system",
        {"subtype": "compact_boundary", "content": "Conversation compacted", "isMeta": False},
        parent=None,
        logicalParentUuid=before,
        level="info",
        compactMetadata={"trigger": "manual", "preTokens": 100},
    )
    w.records[-1] = {
        k: w.records[-1][k]
        for k in [
            "parentUuid",
            "logicalParentUuid",
            *[k for k in w.records[-1] if k not in ("parentUuid", "logicalParentUuid")],
        ]
    }
    assert boundary
    w.user(
        "This session is being continued from a previous conversation. Summary: lantern.",
        isCompactSummary=True,
        isVisibleInTranscriptOnly=True,
    )


def hand_sessions() -> list[tuple[Writer, list[str]]]:
    made: list[tuple[Writer, list[str]]] = []

    w = Writer("tool-result")
    w.user("Read notes.txt.")
    tool_exchange(w, "Read", {"file_path": str(cc.PROJECT / "notes.txt")}, "1\tone\n2\ttwo")
    tool_exchange(w, "Bash", {"command": "false", "description": "Fail"}, "Exit code 1")
    w.text("Read it; the command failed.")
    made.append((w, []))

    w = Writer("thinking")
    w.user("Think, then answer.")
    w.assistant(
        [
            signed("First thought."),
            {"type": "redacted_thinking", "data": "ZmFrZQ=="},
            {"type": "text", "text": "Answer."},
        ]
    )
    w.user("Again.")
    w.assistant(
        [
            {"type": "thinking", "thinking": "Unsigned.", "signature": ""},
            {"type": "text", "text": "Second."},
        ]
    )
    made.append((w, []))

    w = Writer("compact")
    w.user("Remember lantern.")
    compacted(w, w.text("Noted."))
    w.user("What was it?")
    w.text("lantern.")
    made.append((w, []))

    # A compaction after a last-prompt naming the leaf before it, and no last-prompt since:
    # the CLI reads the file from the boundary on, so that last-prompt is not read.
    w = Writer("last-prompt-compacted")
    w.user("Remember lantern.")
    before = w.text("Noted.")
    w.plain({"type": "last-prompt", "lastPrompt": "Remember lantern.", "leafUuid": before})
    compacted(w, before)
    made.append((w, []))

    for name, order in (("branch", "later-last"), ("branch-order", "later-first")):
        w = Writer(name)
        w.user("Start.")
        fork = w.text("Started.")
        arms = []
        for arm in ("A", "B"):
            w.last = fork
            w.user(f"Arm {arm}.")
            arms.append(w.text(f"Arm {arm} done."))
        if order == "later-first":  # arm B (the later times) written first in the file
            w.records[2:6] = w.records[4:6] + w.records[2:4]
        made.append((w, []))

    w = Writer("summary-leaf")
    w.user("Start.")
    fork = w.text("Started.")
    w.user("Arm A.")
    arm_a = w.text("Arm A done.")
    w.last = fork
    w.user("Arm B.")
    w.text("Arm B done.")
    w.plain({"type": "summary", "summary": "Arm A", "leafUuid": arm_a})
    w.records.insert(0, w.records.pop())
    made.append((w, []))

    w = Writer("last-prompt-leaf")
    w.user("Start.")
    fork = w.text("Started.")
    w.user("Arm A.")
    arm_a = w.text("Arm A done.")
    w.last = fork
    w.user("Arm B.")
    w.text("Arm B done.")
    w.plain({"type": "last-prompt", "lastPrompt": "Arm A.", "leafUuid": arm_a})
    made.append((w, []))

    for name, target in (("last-prompt-ancestor", "fork"), ("last-prompt-missing", "missing")):
        w = Writer(name)  # last-prompt names the fork point, or nothing in the file
        w.user("Start.")
        fork = w.text("Started.")
        w.user("Arm A.")
        w.text("Arm A done.")
        w.last = fork
        w.user("Arm B.")
        w.text("Arm B done.")
        w.records[2:4], w.records[4:6] = w.records[4:6], w.records[2:4]  # B first, A last
        leaf = fork if target == "fork" else fixed_id("missing")
        w.plain({"type": "last-prompt", "lastPrompt": "Start.", "leafUuid": leaf})
        made.append((w, []))

    w = Writer("last-prompt-inner")  # last-prompt names arm A's prompt; arm B is last in file
    w.user("Start.")
    fork = w.text("Started.")
    inner = w.user("Arm A.")
    w.text("Arm A done.")
    w.last = fork
    w.user("Arm B.")
    w.text("Arm B done.")
    w.plain({"type": "last-prompt", "lastPrompt": "Arm A.", "leafUuid": inner})
    made.append((w, []))

    w = Writer("last-prompt-root")  # last-prompt names the first prompt, two arms below it
    root = w.user("Start.")
    fork = w.text("Started.")
    w.user("Arm A.")
    w.text("Arm A done.")
    w.last = fork
    w.user("Arm B.")
    w.text("Arm B done.")
    w.plain({"type": "last-prompt", "lastPrompt": "Start.", "leafUuid": root})
    made.append((w, []))

    w = Writer("sidechain")
    w.user("Main one.")
    main = w.text("Main one done.")
    w.user("Side prompt.", isSidechain=True)
    w.text("Side answer.", isSidechain=True)
    w.last = main
    w.user("Main two.")
    w.text("Main two done.")
    w.user("Side at the end.", isSidechain=True)
    w.text("Side end answer.", isSidechain=True)
    made.append((w, []))

    w = Writer("meta")
    w.user("<local-command-caveat>Caveat.</local-command-caveat>", isMeta=True)
    w.user("Hello.")
    w.text("Hi.")
    w.user([{"type": "text", "text": "A meta note."}], isMeta=True)
    w.user("Next.")
    w.text("Done.")
    made.append((w, []))

    w = Writer("attachments")
    w.user("Hello.")
    for att in (
        {"type": "date", "date": "2026-11-30"},
        {"type": "queued_command", "prompt": "queued text", "commandMode": "prompt"},
        {"type": "wibble", "text": "an attachment type no one knows"},
    ):
        w.chained("attachment", {"attachment": att})
    w.chained(
        "attachment",
        {"attachment": {"type": "date", "date": "2026-11-30"}},
        rendered=[{"content": "<system-reminder>\nToday is 2026-11-30.\n</system-reminder>"}],
        renderedRole="system",
    )
    w.text("Hi.")
    made.append((w, []))

    w = Writer("records")  # the records outside the tree, and unknown ones
    w.plain(
        {
            "type": "queue-operation",
            "operation": "enqueue",
            "timestamp": "2026-11-30T09:59:00.000Z",
            "content": "Hello.",
        }
    )
    w.plain(
        {"type": "queue-operation", "operation": "dequeue", "timestamp": "2026-11-30T09:59:00.001Z"}
    )
    first = w.user("Hello.")
    w.records.append(
        {
            "type": "file-history-snapshot",
            "messageId": first,
            "snapshot": {
                "messageId": first,
                "trackedFileBackups": {},
                "timestamp": "2026-11-30T10:00:00.000Z",
            },
            "isSnapshotUpdate": False,
        }
    )
    w.text("Hi.")
    w.plain({"type": "cost-state", "totalCostUSD": 0})
    w.plain({"type": "wibble", "payload": {"x": 1}})
    w.user("Next.")
    w.text("Done.")
    w.plain({"type": "last-prompt", "lastPrompt": "Next.", "leafUuid": w.last})
    made.append((w, ["not json at all", "[1, 2]", ""]))

    w = Writer("unknown-in-tree")  # a record of an unknown type inside the chain
    w.user("Hello.")
    w.text("Hi.")
    w.chained("wobble", {"content": "an unknown type inside the tree"})
    w.user("Next.")
    w.text("Done.")
    made.append((w, []))

    w = Writer("last-prompt-twice")  # each turn writes one: the last in the file counts?
    w.user("Start.")
    fork = w.text("Started.")
    w.user("Arm A.")
    arm_a = w.text("Arm A done.")
    w.plain({"type": "last-prompt", "lastPrompt": "Arm A.", "leafUuid": arm_a})
    w.last = fork
    w.user("Arm B.")
    arm_b = w.text("Arm B done.")
    w.plain({"type": "last-prompt", "lastPrompt": "Arm B.", "leafUuid": arm_b})
    w.plain({"type": "last-prompt", "lastPrompt": "Arm A.", "leafUuid": arm_a})
    made.append((w, []))

    w = Writer("adjacent-users")  # two user records in a row, neither meta
    w.user("First.")
    w.user("Second.")
    w.user([{"type": "text", "text": "Third, a block."}])
    w.text("Three at once.")
    made.append((w, []))

    w = Writer("mid-tool-result")  # ends on a tool result: the prompt joins it
    w.user("Run it.")
    tool_exchange(w, "Bash", {"command": "true", "description": "Run"}, "")
    made.append((w, []))

    w = Writer("single-user")
    w.user("Only this.")
    made.append((w, []))

    w = Writer("model")
    w.user("Hello.")
    w.text("Hi.", model="claude-haiku-4-5")
    w.user("Again.")
    w.text("Hi again.", model=MODEL)
    made.append((w, []))
    return made


def hand(out: Path | None) -> None:
    out = out or HAND
    out.mkdir(parents=True, exist_ok=True)
    for w, raw in hand_sessions():
        print(w.write(out, raw).relative_to(cc.REPO))


# --- candidate files: a new session holding a handoff document; an exchange in an old one ---------

CANDIDATES = cc.HERE / "sessions/candidates"
DOCUMENT = (
    "<handoff-context>\n# Goal\nCount the lines of notes.txt.\n\n# Done\nRead it: three words."
    "\n</handoff-context>\n\nThe above is a handoff document from a previous session. "
    "Use this context to continue the work seamlessly."
)
HANDOFF_PROMPT = "Write a handoff document for a fresh session."


def only(record: dict[str, Any], keys: list[str]) -> dict[str, Any]:
    return {k: record[k] for k in keys if k in record}


def new_sessions() -> list[tuple[Writer, list[str]]]:
    made: list[tuple[Writer, list[str]]] = []

    w = Writer("new-user-text")  # one user record, as the CLI writes a prompt
    w.user(DOCUMENT)
    made.append((w, []))

    w = Writer("new-user-blocks")
    w.user([{"type": "text", "text": DOCUMENT}])
    made.append((w, []))

    w = Writer("new-user-assistant")  # the document, then an acknowledgement in the old model
    w.user(DOCUMENT)
    w.text("Understood.")
    made.append((w, []))

    w = Writer("new-compact-summary")  # as /compact leaves a session: boundary, then the summary
    w.chained(
        "system",
        {"subtype": "compact_boundary", "content": "Conversation compacted", "isMeta": False},
        parent=None,
        level="info",
        compactMetadata={"trigger": "manual", "preTokens": 0},
    )
    w.user(DOCUMENT, isCompactSummary=True, isVisibleInTranscriptOnly=True)
    made.append((w, []))

    w = Writer("new-summary-only")  # a summary record and nothing in the tree
    w.plain({"type": "summary", "summary": DOCUMENT, "leafUuid": fixed_id("nowhere")})
    made.append((w, []))

    w = Writer("new-summary-user")
    w.user(DOCUMENT)
    w.plain({"type": "summary", "summary": "Handoff", "leafUuid": w.last})
    made.append((w, []))

    w = Writer("new-minimal-keys")  # type, message, uuid, parentUuid, sessionId, timestamp
    w.user(DOCUMENT)
    w.records[-1] = only(
        w.records[-1], ["parentUuid", "type", "message", "uuid", "timestamp", "sessionId"]
    )
    made.append((w, []))

    w = Writer("new-bare-keys")  # type, message, uuid only
    w.user(DOCUMENT)
    w.records[-1] = only(w.records[-1], ["type", "message", "uuid"])
    made.append((w, []))

    w = Writer("new-no-uuid")
    w.user(DOCUMENT)
    del w.records[-1]["uuid"]
    made.append((w, []))

    w = Writer("new-other-session-id")  # the records name another session than the file
    w.user(DOCUMENT)
    w.records[-1]["sessionId"] = fixed_id("someone-else")
    made.append((w, []))
    return made


def exchange(old: Path, name: str, *, model: str, parent: str, last_prompt: bool) -> Writer:
    """The old session with the handoff's exchange appended: our request, the document."""
    records = [json.loads(line) for line in old.read_text().splitlines()]
    w = Writer(name)
    w.sid = records[0]["sessionId"]
    w.cwd = next(r["cwd"] for r in records if "cwd" in r)
    chained = [r for r in records if r.get("uuid") and r.get("parentUuid", "x") != "x"]
    assistants = [r for r in chained if r["type"] == "assistant" and not r.get("isSidechain")]
    w.last = assistants[-1]["uuid"] if parent == "assistant" else chained[-1]["uuid"]
    w.records = records
    w.user(HANDOFF_PROMPT)
    w.text(DOCUMENT, model=model)
    if last_prompt:
        w.plain({"type": "last-prompt", "lastPrompt": HANDOFF_PROMPT, "leafUuid": w.last})
    return w


def exchanges() -> list[Writer]:
    old = MADE / "tools.jsonl"
    opus = "claude-opus-5-5"  # the tools session's own model
    return [
        exchange(old, "exchange-plain", model=opus, parent="assistant", last_prompt=False),
        exchange(old, "exchange-last-prompt", model=opus, parent="assistant", last_prompt=True),
        exchange(old, "exchange-chain-end", model=opus, parent="chain-end", last_prompt=False),
        exchange(old, "exchange-other-model", model=MODEL, parent="assistant", last_prompt=True),
        exchange(
            old, "exchange-synthetic", model="<synthetic>", parent="assistant", last_prompt=True
        ),
    ]


def brief(messages: list[dict[str, Any]]) -> list[str]:
    def text(c: Any) -> str:
        return (
            c if isinstance(c, str) else " | ".join(b.get("text") or b.get("type", "?") for b in c)
        )

    return [f"{m['role']}: {text(m['content'])[:70]}" for m in messages]


def line(record: dict[str, Any]) -> str:
    """A written record in short: its type, an assistant's model, a message's content."""
    kind = str(record["type"])
    if kind == "assistant":
        kind += ":" + record["message"]["model"]
    if "message" in record:
        kind += " " + json.dumps(record["message"]["content"])[:60]
    return kind


def try_candidate(path: Path, sid: str) -> dict[str, Any]:
    """Resumed twice: untouched (--fork-session --no-session-persistence) for what is sent, and
    plainly (the file kept) for what the CLI then writes into it."""
    got = cc.resume(path, sid=sid)
    row: dict[str, Any] = {
        "file": path.name,
        "accepted": got["code"] == 0 and bool(got["requests"]),
    }
    if row["accepted"]:
        request = got["requests"][0]
        row |= {"model": request["model"], "context": brief(cc.context_of(request))}
    else:
        row["error"] = (got["stderr"] or got["stdout"]).strip().splitlines()[-1:]
    plain = cc.resume(path, flags=[], sid=sid)
    lines_before = len(path.read_text().splitlines())
    after = (plain["file_after"] or "").splitlines()[lines_before:]
    written = [json.loads(x) for x in after]
    row["plain_resume"] = {
        "code": plain["code"],
        "appended": [line(r) for r in written if not r["type"].startswith("api-request")],
    }
    return row


def candidates(out: Path | None) -> None:
    out = out or CANDIDATES
    out.mkdir(parents=True, exist_ok=True)
    rows = [try_candidate(w.write(out), w.sid) for w, _ in new_sessions()]
    old_lines = len((MADE / "tools.jsonl").read_text().splitlines())
    for w in exchanges():
        # Tried whole, kept as the lines appended to made/tools.jsonl (the rest is that file).
        whole = w.write(out)
        rows.append(try_candidate(whole, w.sid))
        appended = whole.read_text().splitlines(keepends=True)[old_lines:]
        whole.with_suffix(".appended.jsonl").write_text("".join(appended))
        whole.unlink()
    for row in rows:
        print(json.dumps(row, ensure_ascii=False))
    (out / "results.json").write_text(json.dumps(rows, indent=1, ensure_ascii=False) + "\n")


commands: dict[str, Callable[[Path | None], None]] = {
    "make-fixtures": make_fixtures,
    "hand": hand,
    "candidates": candidates,
}
