"""Deterministic random session files, for differential tests and benchmarks.

``generate(seed, dialect)`` returns the bytes of one small session file (20-150 entries) that
exercises the awkward corners of the format (docs/session-format.md): branches and branch
summaries, compactions whose kept tail is on, off, after or at the compaction, omp's
``reset_boundary``, retried, failed and aborted turns, dangling tool calls and orphan tool
results, thinking signatures and redacted thinking, odd ``custom_message`` entries, model and
thinking-level changes, labels, custom and unknown entries, and omp's fixed-width title slot.

Dialects: ``omp`` and ``pi`` (version 3), ``v2`` (ids, ``hookMessage`` roles) and ``v1``
(no ids: entries chain in file order; compactions use ``firstKeptEntryIndex``). ``pi`` is pi
1.6's: ``context_edit`` entries of both kinds (on and off the branch, aimed at messages, custom
messages, compactions and entries a compaction summarised or kept), ``usage`` entries, system
messages, compactions carrying a ``systemMessage``, messages without content, and the headers
of older pi versions (``provider``, ``modelId``, ``thinkingLevel``, ``branchedFrom``).
The same seed and dialect always give the same bytes.
"""

from __future__ import annotations

import base64
import json
import random
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import orjson

Json = dict[str, Any]

DIALECTS = ("omp", "pi", "v2", "v1")
_VERSIONS = {"omp": 3, "pi": 3, "v2": 2, "v1": 1}
_WORDS = (
    "parser",
    "budget",
    "cache",
    "handoff",
    "token",
    "retry",
    "branch",
    "ünïcödé",
    "漢字",
    "emoji🙂",
    'quote"',
    "back\\slash",
    "tab\t",
    "newline\n",
    "path",
    "config",
    "session",
)
_MODELS = (
    ("anthropic", "claude-opus-4-1", "anthropic-messages"),
    ("anthropic", "claude-sonnet-4-5", "anthropic-messages"),
    ("openai", "gpt-5", "openai-responses"),
    ("google", "gemini-2.5-pro", "google-generative-ai"),
)
_UNKNOWN_TYPES = (
    "service_tier_change",
    "ttsr_injection",
    "session_init",
    "mode_change",
    "title_change",
    "model_usage",
    "frobnicate",
)
_PI_UNKNOWN_TYPES = ("frobnicate", "plugin_state")  # pi writes none of omp's own types
_CUSTOM_TYPES = (
    "prewalk-plan",
    "vibe-mode-context",
    "interrupted-thinking",
    "skill-prompt",
    "note",
    "",
    7,
    None,
    "MISSING",
)
_SENTINEL_LATER = "\0later"  # a firstKeptEntryId patched, once the file is complete, to a later id
_TITLE_WIDTH = 256


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class _Generator:
    def __init__(self, seed: int, dialect: str) -> None:
        if dialect not in DIALECTS:
            raise ValueError(f"unknown dialect {dialect!r}; expected one of {DIALECTS}")
        self.rng = random.Random(seed)
        self.dialect = dialect
        self.version = _VERSIONS[dialect]
        self.clock = datetime(2026, 1, 1, tzinfo=timezone.utc) + timedelta(
            seconds=self.rng.randrange(30_000_000), milliseconds=self.rng.randrange(1000)
        )
        self.entries: list[Json] = []
        self.leaf: str | None = None
        self.calls = 0
        self.provider, self.model, self.api = self.rng.choice(_MODELS)

    # --- small pieces -------------------------------------------------------------------

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def text(self, low: int = 2, high: int = 14) -> str:
        return " ".join(self.rng.choice(_WORDS) for _ in range(self.rng.randint(low, high)))

    def tick(self) -> str:
        self.clock += timedelta(milliseconds=self.rng.randrange(50, 200_000))
        return self.clock.isoformat(timespec="milliseconds").replace("+00:00", "Z")

    def ms(self) -> int:
        return int(self.clock.timestamp() * 1000) - self.rng.randrange(0, 5000)

    def new_id(self) -> str:
        taken = {e.get("id") for e in self.entries}
        while True:
            candidate = f"{self.rng.getrandbits(32):08x}"
            if candidate not in taken:
                return candidate

    def add(self, kind: str, fields: Json, *, tail_ids: bool = False) -> Json:
        """Append an entry under the current leaf; ``tail_ids`` puts id/parentId/timestamp last."""
        stamp = self.tick()
        if self.version == 1:
            entry: Json = {"type": kind, "timestamp": stamp, **fields}
        else:
            ids: Json = {"id": self.new_id(), "parentId": self.leaf, "timestamp": stamp}
            entry = {"type": kind, **fields, **ids} if tail_ids else {"type": kind, **ids, **fields}
            self.leaf = entry["id"]
        self.entries.append(entry)
        return entry

    def message(self, message: Json) -> Json:
        return self.add("message", {"message": message})

    # --- messages -----------------------------------------------------------------------

    def user(self) -> None:
        content: Any = self.text(3, 20)
        if self.chance(0.5):
            content = [{"type": "text", "text": content}]
            if self.chance(0.15):
                data = base64.b64encode(self.rng.randbytes(12)).decode()
                content.append({"type": "image", "data": data, "mimeType": "image/png"})
        message: Json = {"role": "user", "content": content, "timestamp": self.ms()}
        self.message(self.maybe_without_content(message))

    def maybe_without_content(self, message: Json) -> Json:
        """pi: now and then a message whose content is null or missing (a hand-edited file)."""
        if self.dialect == "pi" and self.chance(0.008):
            if self.chance(0.5):
                message["content"] = None
            else:
                del message["content"]
        return message

    def thinking(self) -> Json:
        block: Json = {"type": "thinking", "thinking": self.rng.choice([self.text(), "", "  \n"])}
        signature = self.rng.choice([None, None, f"sig{self.rng.randrange(999)}", "", " "])
        if signature is not None:
            block["thinkingSignature"] = signature
        return block

    def tool_call(self) -> Json:
        self.calls += 1
        name = self.rng.choice(["bash", "read", "edit"])
        return {
            "type": "toolCall",
            "id": f"toolu_{self.calls:04d}",
            "name": name,
            "arguments": {"path": f"src/{self.rng.choice(_WORDS[:6])}.py"},
        }

    def blocks(self, calls: int, *, sparse: bool = False) -> list[Json]:
        """Assistant content; ``sparse`` favours the near-empty content of failed turns."""
        out: list[Json] = []
        if self.chance(0.45):
            out.append(self.thinking())
        if self.chance(0.12):
            out.append({"type": "redactedThinking", "data": self.rng.choice(["opaque==", "", " "])})
        if not sparse or self.chance(0.3):
            out.append({"type": "text", "text": self.rng.choice([self.text(), self.text(), " \n"])})
        if sparse and self.chance(0.08):
            odd = [
                {"type": "fallback", "text": "x"},
                {"type": "image", "data": "AA==", "mimeType": "image/png"},
            ]
            out.append(self.rng.choice(odd))
        out.extend(self.tool_call() for _ in range(calls))
        return out

    def assistant(self, content: list[Json], stop: str, **extra: Any) -> Json:
        message: Json = {"role": "assistant", "content": content}
        if not self.chance(0.03):  # rarely no provider/model: omp names it "undefined/undefined"
            message |= {"api": self.api, "provider": self.provider, "model": self.model}
        tokens = self.rng.randrange(100, 9000), self.rng.randrange(10, 900)
        message["usage"] = {
            "input": tokens[0],
            "output": tokens[1],
            "cacheRead": 0,
            "cacheWrite": 0,
            "totalTokens": sum(tokens),
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
        }
        message["stopReason"] = stop
        message["timestamp"] = self.ms()
        if stop in ("error", "aborted"):
            message["errorMessage"] = "upstream " + stop
        message |= extra
        self.message(self.maybe_without_content(dict(message)))
        return message

    def results(self, content: list[Json]) -> None:
        calls = [b for b in content if b.get("type") == "toolCall"]
        if self.chance(0.2):
            self.rng.shuffle(calls)
        for call in calls:
            if self.chance(0.12):
                continue  # a dangling call
            self.tool_result(call["id"], call["name"])

    def tool_result(self, call_id: str, name: str) -> None:
        result: Json = {
            "role": "toolResult",
            "toolCallId": call_id,
            "toolName": name,
            "content": [{"type": "text", "text": self.text(1, 30)}],
            "isError": self.chance(0.1),
        }
        if self.chance(0.2):
            result["details"] = {"exitCode": self.rng.randrange(3)}
        result["timestamp"] = self.ms()
        self.message(self.maybe_without_content(result))

    def custom_role(self, custom_type: str) -> None:
        role = "hookMessage" if self.version < 3 and self.chance(0.7) else "custom"
        message: Json = {
            "role": role,
            "customType": custom_type,
            "content": self.text(),
            "display": self.chance(0.5),
        }
        if self.chance(0.4):
            message["details"] = {"n": self.rng.randrange(9)}
        message["timestamp"] = self.ms()
        self.message(message)

    def turn(self) -> None:
        if self.chance(0.85):
            self.user()
        for _ in range(self.rng.randint(1, 4)):
            roll = self.rng.random()
            if roll < 0.1:  # a superseded attempt, then (usually) its retry
                recovery: Any = self.rng.choice(
                    [{"attempt": 1}, {"attempt": 2}, True, {}, [], False, 0, "", None]
                )
                stop = self.rng.choice(["error", "stop", "toolUse", "aborted"])
                content = self.blocks(self.rng.randint(0, 1), sparse=stop == "error")
                self.assistant(content, stop, retryRecovery=recovery)
                if self.chance(0.5):
                    self.results(content)
            elif roll < 0.3:  # a failed turn
                stop = self.rng.choice(["error", "error", "aborted"])
                content = self.blocks(self.rng.choice([0, 0, 1, 2]), sparse=True)
                self.assistant(content, stop)
                if self.chance(0.6):
                    self.results(content)
                if self.chance(0.25):
                    self.interrupted_thinking()
            else:
                calls = self.rng.choice([0, 0, 1, 1, 2, 3])
                content = self.blocks(calls)
                self.assistant(content, "toolUse" if calls else self.rng.choice(["stop", "length"]))
                self.results(content)
            if self.chance(0.06):
                self.tool_result(f"toolu_gone{self.rng.randrange(99)}", "bash")  # call missing
            if self.chance(0.1):
                self.misc()

    def interrupted_thinking(self) -> None:
        if self.chance(0.5):
            self.custom_role("interrupted-thinking")
        else:
            self.custom_message("interrupted-thinking")

    # --- other entries ------------------------------------------------------------------

    def custom_message(self, custom_type: Any = None) -> None:
        if custom_type is None:
            custom_type = self.rng.choice(_CUSTOM_TYPES)
        fields: Json = {}
        if custom_type != "MISSING":
            fields["customType"] = custom_type
        fields["content"] = (
            self.rng.choice(
                [self.text(), [{"type": "text", "text": self.text()}], [], 42, None, {"text": "x"}]
            )
            if self.chance(0.3)
            else self.text()
        )
        if self.dialect == "pi" and self.chance(0.05):
            del fields["content"]
        display = self.rng.choice([True, False, True, "yes", 1, None, "MISSING"])
        if display != "MISSING":
            fields["display"] = display
        if self.chance(0.4):
            fields["details"] = self.rng.choice([{"k": 1}, None, [1, 2], "d"])
        attribution = self.rng.choice(["user", "agent", "MISSING", "MISSING", None, "weird"])
        if attribution != "MISSING" and self.dialect != "pi":  # omp's key
            fields["attribution"] = attribution
        self.add("custom_message", fields, tail_ids=True)

    def bash_execution(self) -> None:
        message: Json = {
            "role": "bashExecution",
            "command": "ls -la",
            "output": self.text(),
            "exitCode": self.rng.choice([0, 1, None]),
            "cancelled": self.chance(0.1),
            "truncated": self.chance(0.1),
        }
        if self.chance(0.4):
            message["excludeFromContext"] = self.chance(0.5)
        message["timestamp"] = self.ms()
        self.message(message)

    def model_change(self) -> None:
        provider, model, api = self.rng.choice(_MODELS)
        fields: Json
        if self.dialect == "omp" or (self.dialect == "v2" and self.chance(0.3)):
            fields = {"model": f"{provider}/{model}"}
            role = self.rng.choice(["MISSING", "MISSING", "default", "smol", "slow", None])
            if role != "MISSING":
                fields["role"] = role
        else:
            fields = {"provider": provider, "modelId": model}
        self.add("model_change", fields)
        if fields.get("role", "default") in ("default", None):
            self.provider, self.model, self.api = provider, model, api

    def thinking_level_change(self) -> None:
        levels = ["off", "minimal", "low", "medium", "high", "xhigh", None, "MISSING"]
        level = self.rng.choice(levels)
        self.add("thinking_level_change", {} if level == "MISSING" else {"thinkingLevel": level})

    def compaction(self) -> None:
        fields: Json = {"summary": self.rng.choice([self.text(5, 30), self.text(), ""])}
        if self.dialect == "omp" and self.chance(0.4):
            fields["shortSummary"] = self.text(2, 5)
        ordinal = len(self.entries) + 1  # this entry's index, the header being 0 (version 1)
        where = self.rng.choice(["on", "on", "on", "off", "later", "self", "unknown", "older"])
        if self.version == 1:
            index = {
                "on": self.rng.randrange(1, max(ordinal, 2)),
                "off": 0,
                "later": ordinal + 2,
                "self": ordinal,
                "unknown": ordinal + 999,
                "older": self.rng.randrange(1, max(ordinal // 2, 2)),
            }[where]
            fields["firstKeptEntryIndex"] = index
        else:
            fields["firstKeptEntryId"] = self.kept_id(where)
        fields["tokensBefore"] = self.rng.randrange(1000, 200_000)
        if self.chance(0.4):
            fields["details"] = {"readFiles": ["a.py"], "modifiedFiles": []}
        if self.chance(0.2):
            fields["fromExtension" if self.dialect == "omp" else "fromHook"] = self.chance(0.5)
        if self.dialect == "pi" and self.chance(0.5):
            fields["systemMessage"] = self.system_message(compaction=True)
        entry = self.add("compaction", fields)
        if where == "self" and self.version > 1:
            entry["firstKeptEntryId"] = entry["id"]

    def kept_id(self, where: str) -> str:
        on_branch = self.branch_ids()
        if where == "on" and on_branch:
            return str(self.rng.choice(on_branch[-12:]))
        off = [e["id"] for e in self.entries if e["id"] not in set(on_branch)]
        if where == "off" and off:
            return str(self.rng.choice(off))
        compactions = [i for i, e in enumerate(on_branch) if self.by_id(e)["type"] == "compaction"]
        if where == "older" and compactions:  # the older compaction falls in the kept range
            return str(self.rng.choice(on_branch[: compactions[-1] + 1]))
        if where == "later":
            return _SENTINEL_LATER
        return f"{self.rng.getrandbits(32):08x}"

    def by_id(self, entry_id: str) -> Json:
        return next(e for e in reversed(self.entries) if e.get("id") == entry_id)

    def branch_ids(self) -> list[str]:
        by_id = {e["id"]: e for e in self.entries}
        path: list[str] = []
        node = self.leaf
        while node is not None and node in by_id and node not in path:
            path.append(node)
            node = by_id[node]["parentId"]
        return path[::-1]

    def branch(self) -> None:
        """Go back to an earlier entry (or, rarely, to a new root) and continue from there."""
        if self.version == 1 or len(self.entries) < 2:
            return
        earlier = [e["id"] for e in self.entries[:-1]]
        old_leaf = self.leaf
        self.leaf = None if self.chance(0.05) else self.rng.choice(earlier)
        if self.chance(0.6):
            summary = self.rng.choice([self.text(4, 20), self.text(), "", "  \n", "MISSING"])
            fields: Json = {"fromId": self.rng.choice([old_leaf, old_leaf, "root"])}
            if summary != "MISSING":
                fields["summary"] = summary
            if self.chance(0.3):
                fields["details"] = {"readFiles": [], "modifiedFiles": ["b.py"]}
            self.add("branch_summary", fields)

    def misc(self) -> None:
        actions: list[tuple[float, Callable[[], None]]] = [
            (3, self.model_change),
            (3, self.thinking_level_change),
            (2, self.compaction),
            (3, self.branch),
            (2, self.custom_message),
            (1, self.bash_execution),
            (1, self.label),
            (1, self.custom),
            (1, self.unknown),
        ]
        if self.dialect == "omp":
            actions.append((1.5, lambda: self.other("reset_boundary", {})))
        if self.dialect == "pi":
            actions += [
                (1, lambda: self.other("session_info", {"name": self.text(1, 3)})),
                (4, self.context_edit),
                (1, self.usage),
                (0.7, self.system),
            ]
        if self.version < 3:
            actions.append((1, lambda: self.custom_role(self.rng.choice(["note", "reminder"]))))
        weights = [w for w, _ in actions]
        self.rng.choices([a for _, a in actions], weights)[0]()

    def label(self) -> None:
        if self.version == 1 or not self.entries:
            return
        fields: Json = {"targetId": self.rng.choice(self.entries)["id"]}
        if self.chance(0.7):
            fields["label"] = self.text(1, 2)
        self.add("label", fields)

    def context_edit(self) -> None:
        """pi's edit of an earlier entry's contribution: ``null`` leaves it out, a content
        replaces its content. Aimed mostly at editable entries on the branch, but also at ones
        off it, before a compaction, at compactions, summaries and entries that emit nothing."""
        if not self.entries:
            return
        on_branch = self.branch_ids()
        editable = [i for i in on_branch if self.editable(self.by_id(i))]
        kinds = ("compaction", "branch_summary", "custom_message")
        odd = [i for i in on_branch if self.by_id(i)["type"] in kinds]
        where = self.rng.choice(["editable"] * 6 + ["branch", "anywhere", "unknown", "odd", "odd"])
        if where == "editable" and editable:
            target = self.rng.choice(editable[-15:] if self.chance(0.7) else editable)
        elif where == "odd" and odd:
            target = self.rng.choice(odd)
        elif where == "branch" and on_branch:
            target = self.rng.choice(on_branch)
        elif where == "unknown":
            target = f"{self.rng.getrandbits(32):08x}"
        else:
            target = self.rng.choice(self.entries)["id"]
        replacement: Any = None
        if self.chance(0.65):
            replacement = {
                "content": self.rng.choice(
                    [
                        self.text(),
                        [{"type": "text", "text": self.text()}],
                        [
                            {"type": "text", "text": self.text()},
                            {"type": "image", "data": "AA==", "mimeType": "image/png"},
                        ],
                        "",
                        [],
                    ]
                )
            }
        self.add("context_edit", {"targetId": target, "replacement": replacement})

    @staticmethod
    def editable(entry: Json) -> bool:
        if entry["type"] == "custom_message":
            return True
        message = entry.get("message") or {}
        return entry["type"] == "message" and message.get("role") in (
            "user",
            "assistant",
            "toolResult",
            "custom",
        )

    def usage(self) -> None:
        """pi's usage of the model outside the conversation: in the tree, never in the context."""
        fields: Json = {
            "kind": self.rng.choice(["cache_warm", "title"]),
            "provider": self.provider,
            "model": self.model,
            "usage": {"input": self.rng.randrange(100), "output": 0, "totalTokens": 1},
        }
        if self.chance(0.3):
            fields["note"] = self.text(1, 3)
        self.add("usage", fields)

    def system(self) -> None:
        self.message(self.system_message())

    def system_message(self, compaction: bool = False) -> Json:
        """pi 1.6's system message: the prompt, its sections and the tools, as of a point."""
        content: Any = self.rng.choice([self.text(5, 20), [{"type": "text", "text": self.text()}]])
        if not compaction and self.chance(0.1):
            content = None
        message: Json = {"role": "system", "content": content}
        if self.chance(0.4):
            message["sections"] = {"rules": self.text(), "gone": None}
        if self.chance(0.4):
            message["toolsAdded"] = [{"name": "bash", "description": "run", "parameters": {}}]
        message["timestamp"] = self.ms()
        if content is None and self.chance(0.5):
            del message["content"]
        return message

    def custom(self) -> None:
        data = {"state": self.rng.randrange(100)}
        self.add(
            "custom",
            {"customType": self.rng.choice(["todo", "plan-state"]), "data": data},
            tail_ids=True,
        )

    def unknown(self) -> None:
        """An entry that emits nothing: omp's other types (with the fields omp reads), or junk."""
        kind = self.rng.choice(_PI_UNKNOWN_TYPES if self.dialect == "pi" else _UNKNOWN_TYPES)
        known: dict[str, Json] = {
            "ttsr_injection": {"injectedRules": ["no-todo"]},  # omp crashes without the list
            "service_tier_change": {"serviceTier": self.rng.choice(["priority", "flex", None])},
            "mode_change": {"mode": self.rng.choice(["plan", "none"]), "data": {"n": 1}},
        }
        self.other(kind, known.get(kind, {"value": self.rng.randrange(10)}))

    def other(self, kind: str, fields: Json) -> None:
        self.add(kind, fields)

    # --- the file -----------------------------------------------------------------------

    def header(self) -> Json:
        stamp = self.clock.isoformat(timespec="milliseconds").replace("+00:00", "Z")
        session_id = str(uuid.UUID(int=self.rng.getrandbits(128), version=4))
        header: Json = {"type": "session"}
        if self.version > 1:
            header["version"] = self.version
        cwd = f"/home/u/proj-{self.rng.randrange(9)}"
        header |= {"id": session_id, "timestamp": stamp, "cwd": cwd}
        if self.version == 1 or (self.dialect == "pi" and self.chance(0.3)):
            header |= {"provider": self.provider, "modelId": self.model, "thinkingLevel": "off"}
        if self.dialect == "pi" and self.chance(0.2):
            parent = f"/home/u/.pi/agent/sessions/--home-u--/{self.rng.getrandbits(32):08x}.jsonl"
            header["branchedFrom" if self.chance(0.5) else "parentSession"] = parent
        return header

    def title_slot(self, updated_at: str) -> str:
        title = self.rng.choice(["", self.text(1, 4), self.text(30, 50)]).replace("\n", " ")
        source = self.rng.choice(["auto", "user", None])
        while True:
            slot: Json = {"type": "title", "v": 1, "title": title}
            if source is not None:
                slot["source"] = source
            slot |= {"updatedAt": updated_at, "pad": ""}
            room = _TITLE_WIDTH - 1 - len(_dumps(slot).encode())
            if room >= 0:
                slot["pad"] = " " * room
                return _dumps(slot) + "\n"
            title = title[:-1]

    def build(self) -> bytes:
        header = self.header()
        target = self.rng.randint(20, 150)
        while len(self.entries) < target:
            if self.chance(0.3):
                self.misc()
            self.turn()
        for entry in self.entries:  # firstKeptEntryId naming an entry after its compaction
            if entry.get("firstKeptEntryId") == _SENTINEL_LATER:
                later = self.entries[self.entries.index(entry) + 1 :]
                entry["firstKeptEntryId"] = (
                    self.rng.choice(later)["id"] if later else f"{self.rng.getrandbits(32):08x}"
                )
        lines = [_dumps(header) + "\n", *(_dumps(e) + "\n" for e in self.entries)]
        if self.dialect == "omp" and self.chance(0.7):
            lines.insert(0, self.title_slot(header["timestamp"]))
        return "".join(lines).encode()


def generate(seed: int, dialect: str) -> bytes:
    """The whole session file for ``seed`` in ``dialect`` ("omp", "pi", "v2" or "v1")."""
    return _Generator(seed, dialect).build()


# --- one long text that never repeats, in each agent's format ----------------------------------

LONG_TEXT_AGENTS = ("omp", "claude", "codex")


def unrepeated_text(size: int, rng: random.Random) -> str:
    """About ``size`` bytes of text that never repeats: words drawn from 50,000 made up and
    ``_WORDS`` (other scripts, an emoji: a str of it is four bytes a character), a line break
    after one in ten. A block repeated over and over compresses and shares what a text of real
    work does not."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    made = ["".join(rng.choices(letters, k=rng.randint(2, 12))) for _ in range(50_000)]
    vocabulary = made + [w.strip() for w in _WORDS if w.strip()]
    pieces: list[str] = []
    written = 0
    while written < size:
        words = rng.choices(vocabulary, k=50_000)
        breaks = rng.choices(" \n", weights=(9, 1), k=50_000)
        piece = "".join(w + b for w, b in zip(words, breaks, strict=True))
        pieces.append(piece)
        written += len(piece.encode())
    return "".join(pieces)


def long_text_session(path: Any, agent: str, megabytes: float, seed: int = 1) -> Any:
    """A session of about ``megabytes`` MB in ``agent``'s format (``LONG_TEXT_AGENTS``), nearly
    all of it one user message of ``unrepeated_text`` between short turns (Codex writes what the
    person typed twice: half as much text); ``path`` (a ``Path``), written."""
    share = 2 if agent == "codex" else 1
    text = unrepeated_text(int(megabytes * 1_000_000) // share, random.Random(seed))
    turns = [("start on the parser", "ok"), (text, "read it"), ("and now?", "done")]
    turns += [(f"step {n}: go on", f"did {n}") for n in range(30)]
    lines = {"omp": _omp_lines, "claude": _claude_lines, "codex": _codex_lines}[agent](turns)
    with open(path, "wb") as out:
        for line in lines:
            out.write(orjson.dumps(line) + b"\n")
    return path


_STAMP = "2026-01-01T00:00:00.000Z"


def _omp_lines(turns: list[tuple[str, str]]) -> list[Json]:
    header = {"type": "session", "version": 3, "id": "0199aaaa-0000-7000-8000-0000000long"}
    lines: list[Json] = [header | {"timestamp": _STAMP, "cwd": "/home/u/proj"}]
    for prompt, answer in turns:
        for message in (
            {"role": "user", "content": [{"type": "text", "text": prompt}]},
            {
                "role": "assistant",
                "content": [{"type": "text", "text": answer}],
                "provider": "anthropic",
                "model": "claude-sonnet-4-5",
                "stopReason": "stop",
            },
        ):
            at = len(lines)
            parent = f"{at - 1:08x}" if at > 1 else None
            entry = {"type": "message", "id": f"{at:08x}", "parentId": parent}
            lines.append(entry | {"timestamp": _STAMP, "message": message})
    return lines


def _claude_lines(turns: list[tuple[str, str]]) -> list[Json]:
    lines: list[Json] = []
    tail = {"cwd": "/home/u/proj", "sessionId": "c8e5e286-ae88-42dd-9175-7a7482e56fde"}
    for n, (prompt, answer) in enumerate(turns):
        for message in (
            {"role": "user", "content": prompt},
            {
                "id": f"msg_{n}",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-6",
                "content": [{"type": "text", "text": answer}],
                "stop_reason": "end_turn",
            },
        ):
            at = len(lines)
            parent = f"00000000-0000-4000-8000-{at - 1:012d}" if at else None
            record = {"parentUuid": parent, "isSidechain": False, "type": message["role"]}
            uuid_ = f"00000000-0000-4000-8000-{at:012d}"
            lines.append(record | {"message": message, "uuid": uuid_, "timestamp": _STAMP} | tail)
    return lines


def _codex_lines(turns: list[tuple[str, str]]) -> list[Json]:
    meta = {"id": "01a2356b-0000-7000-8000-00000000long", "timestamp": _STAMP}
    meta |= {"cwd": "/home/u/proj", "originator": "codex_cli_rs", "cli_version": "0.171.0"}
    payloads: list[tuple[str, Json]] = [
        ("session_meta", meta),
        ("turn_context", {"cwd": "/home/u/proj", "model": "gpt-5"}),
    ]
    for prompt, answer in turns:  # the person's words as Codex records them: twice
        payloads.append(("event_msg", {"type": "user_message", "message": prompt}))
        for role, said in (("user", prompt), ("assistant", answer)):
            content = [{"type": "input_text" if role == "user" else "output_text", "text": said}]
            item = {"type": "message", "role": role, "content": content}
            payloads.append(("response_item", item))
    return [{"timestamp": _STAMP, "type": kind, "payload": payload} for kind, payload in payloads]
