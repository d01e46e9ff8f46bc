"""Hand-written Codex rollouts: the shapes a reader must take, and candidates for a new session.

``written()`` gives the cases ``codex.py make-fixtures`` keeps in ``tests/fixtures/codex/written/``
(each resumed by the real Codex, which says what it sends), ``candidates(document)`` the
hand-written *new* sessions holding a handoff document that ``codex.py candidates`` offers to
Codex, and ``exchange(...)`` the lines an old rollout could record a handoff with.

Every case is a list of lines, each a JSON object; ``Rollout`` makes them in the shapes Codex
0.171.0 writes (``{"timestamp", "ordinal", "type", "payload"}``) or the older ones
(``{"timestamp", "type", "payload"}``, and the bare first versions). Ids and times are fixed, so
the files are the same on every run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

PROJECT = "/tmp/codex-oracle-project"
CLI_VERSION = "0.171.0"
START = datetime(2026, 11, 30, 9, 0, 0, tzinfo=timezone.utc)

Line = dict[str, Any]


def stamp(t: datetime) -> str:
    """A line's time as Codex writes it: UTC, milliseconds, ``Z``."""
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


@dataclass
class Rollout:
    """A rollout being written: its id, its first time, and its lines so far."""

    id: str
    start: datetime = START
    ordinal: bool = True
    lines: list[Line] = field(default_factory=list)

    def now(self) -> datetime:
        return self.start + timedelta(milliseconds=250 * len(self.lines))

    def add(self, kind: str, payload: Any, **extra: Any) -> Rollout:
        line: Line = {"timestamp": stamp(self.now())}
        if self.ordinal:
            line["ordinal"] = len(self.lines)
        line["type"] = kind
        line["payload"] = payload
        line.update(extra)
        self.lines.append(line)
        return self

    def raw(self, line: Any) -> Rollout:
        """A line as it is (an older shape, or not a rollout line at all)."""
        self.lines.append(line)
        return self

    def meta(self, provider: str | None = "fake", source: str = "cli", **keys: Any) -> Rollout:
        payload: dict[str, Any] = {
            "id": self.id,
            "timestamp": stamp(self.start),
            "cwd": PROJECT,
            "originator": "codex_cli_rs",
            "cli_version": CLI_VERSION,
            "source": source,
        }
        if provider is not None:
            payload["model_provider"] = provider
        payload.update(keys)
        return self.add("session_meta", payload)

    def turn_context(self, turn: str, model: str = "fake-model") -> Rollout:
        return self.add(
            "turn_context",
            {
                "turn_id": turn,
                "cwd": PROJECT,
                "approval_policy": "never",
                "sandbox_policy": {"type": "read-only"},
                "model": model,
                "summary": "none",
            },
        )

    def item(self, payload: dict[str, Any]) -> Rollout:
        return self.add("response_item", payload)

    def event(self, payload: dict[str, Any]) -> Rollout:
        return self.add("event_msg", payload)

    def user(self, text: str, events: bool = True) -> Rollout:
        self.item(user(text))
        if events:
            self.event(
                {
                    "type": "user_message",
                    "message": text,
                    "images": [],
                    "local_images": [],
                    "text_elements": [],
                }
            )
        return self

    def assistant(self, text: str, events: bool = True) -> Rollout:
        self.item(assistant(text))
        if events:
            self.event({"type": "agent_message", "message": text})
        return self

    def turn(self, turn: str, prompt: str, answer: str) -> Rollout:
        """One whole turn as Codex frames it: started, context, the exchange, complete."""
        self.event({"type": "task_started", "turn_id": turn, "model_context_window": 258400})
        self.turn_context(turn)
        self.user(prompt)
        self.assistant(answer)
        return self.event({"type": "task_complete", "turn_id": turn, "last_agent_message": answer})

    def text(self) -> str:
        return "".join(
            (line if isinstance(line, str) else json.dumps(line, ensure_ascii=False)) + "\n"
            for line in self.lines
        )


def user(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def assistant(text: str, **keys: Any) -> dict[str, Any]:
    return {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text}],
        **keys,
    }


def developer(text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "role": "developer",
        "content": [{"type": "input_text", "text": text}],
    }


def environment(cwd: str = PROJECT) -> dict[str, Any]:
    text = (
        f"<environment_context>\n  <cwd>{cwd}</cwd>\n  <shell>bash</shell>\n</environment_context>"
    )
    return user(text)


def call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "function_call",
        "name": name,
        "arguments": json.dumps(arguments),
        "call_id": call_id,
    }


def output(call_id: str, text: str) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": text}


def reasoning(
    summary: str | None, encrypted: str | None = None, content: str | None = None
) -> dict[str, Any]:
    item: dict[str, Any] = {
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": summary}] if summary else [],
    }
    item["content"] = [{"type": "reasoning_text", "text": content}] if content else None
    if encrypted is not None:
        item["encrypted_content"] = encrypted
    return item


def uuid_for(n: int) -> str:
    """A fixed, valid session id (UUID v7 layout) for case ``n``."""
    return f"019ad000-0000-7000-8000-{n:012x}"


# --- the cases a reader must take --------------------------------------------------------------


def written() -> dict[str, Rollout]:
    cases: dict[str, Rollout] = {}

    r = Rollout(uuid_for(1)).meta()
    r.turn("t1", "Say hello.", "Hello.")
    r.turn("t2", "Say it again.", "Hello again.")
    cases["basic-ordinal"] = r

    r = Rollout(uuid_for(2), ordinal=False).meta(source="cli", instructions=None)
    r.turn("t1", "Say hello.", "Hello.")
    r.turn("t2", "Say it again.", "Hello again.")
    cases["basic-legacy"] = r

    # The oldest shape: a bare session header and bare response items (no timestamp/type/payload).
    r = Rollout(uuid_for(3))
    r.raw({"id": r.id, "timestamp": stamp(r.start), "instructions": None})
    r.raw(user("Say hello."))
    r.raw(assistant("Hello."))
    cases["bare-first-version"] = r

    r = Rollout(uuid_for(4)).meta()
    r.event({"type": "task_started", "turn_id": "t1"}).turn_context("t1")
    r.user("How many lines does notes.txt have?")
    r.item(reasoning("I should count the lines.", encrypted="gAAAA-opaque-1"))
    r.item(call("call_a", "exec_command", {"cmd": "wc -l notes.txt"}))
    r.item(output("call_a", "Process exited with code 0\nOutput:\n3 notes.txt\n"))
    r.item(call("call_b", "shell", {"command": ["cat", "notes.txt"]}))
    r.item(call("call_c", "exec_command", {"cmd": "head -1 notes.txt"}))
    r.item(output("call_b", "alpha\nbeta\ngamma\n"))
    r.item(
        {
            "type": "function_call_output",
            "call_id": "call_c",
            "output": [{"type": "input_text", "text": "alpha"}],
        }
    )
    r.item(
        {
            "type": "custom_tool_call",
            "call_id": "call_d",
            "name": "apply_patch",
            "input": "*** Begin Patch\n*** Add File: x.txt\n+x\n*** End Patch\n",
        }
    )
    r.item(
        {
            "type": "custom_tool_call_output",
            "call_id": "call_d",
            "output": "Success. Updated the following files:\nA x.txt\n",
        }
    )
    r.assistant("It has 3 lines.")
    r.event({"type": "task_complete", "turn_id": "t1"})
    cases["function-calls"] = r

    r = Rollout(uuid_for(5)).meta()
    r.turn_context("t1").user("Run two things.")
    r.item(call("call_lost", "exec_command", {"cmd": "sleep 100"}))
    r.assistant("I stopped waiting.")
    r.item(output("call_nowhere", "an output whose call is not in the history"))
    r.user("Go on.")
    r.assistant("Done.")
    cases["orphan-calls"] = r

    r = Rollout(uuid_for(6)).meta()
    r.turn_context("t1").user("Think.")
    r.item(reasoning(None, encrypted="gAAAA-only-encrypted"))
    r.item(reasoning("A summary only."))
    r.item(
        reasoning("Summary and raw.", encrypted="gAAAA-both", content="the raw chain of thought")
    )
    r.assistant("Thought.")
    cases["reasoning"] = r

    r = Rollout(uuid_for(7)).meta()
    r.turn("t1", "First question.", "First answer.")
    r.turn("t2", "Second question.", "Second answer.")
    r.add(
        "compacted",
        {
            "message": "SUMMARY-R: two questions were answered.",
            "replacement_history": [
                developer("<permissions instructions>old</permissions instructions>"),
                environment(),
                user("First question."),
                user("Second question."),
                user("SUMMARY-R: two questions were answered."),
            ],
        },
    )
    r.turn("t3", "Third question.", "Third answer.")
    cases["compacted-replacement"] = r

    r = Rollout(uuid_for(8)).meta()
    r.turn("t1", "First question.", "First answer.")
    r.turn("t2", "Second question.", "Second answer.")
    r.add("compacted", {"message": "SUMMARY-L: two questions were answered."})
    r.turn("t3", "Third question.", "Third answer.")
    cases["compacted-legacy"] = r

    r = Rollout(uuid_for(9)).meta()
    r.turn("t1", "First question.", "First answer.")
    r.add("compacted", {"message": "SUMMARY-1"})
    r.turn("t2", "Second question.", "Second answer.")
    r.add(
        "compacted",
        {
            "message": "SUMMARY-2",
            "replacement_history": [user("Second question."), user("SUMMARY-2")],
        },
    )
    r.turn("t3", "Third question.", "Third answer.")
    r.add("compacted", {"message": "SUMMARY-3"})
    r.turn("t4", "Fourth question.", "Fourth answer.")
    cases["compacted-three-times"] = r

    # A remote compaction (OpenAI's /responses/compact): the history it returns holds an opaque item.
    r = Rollout(uuid_for(10)).meta()
    r.turn("t1", "First question.", "First answer.")
    r.add(
        "compacted",
        {
            "message": "",
            "replacement_history": [
                user("First question."),
                {"type": "compaction", "encrypted_content": "gAAAA-remote-compaction"},
            ],
        },
    )
    r.turn("t2", "Second question.", "Second answer.")
    cases["compacted-remote"] = r

    r = Rollout(uuid_for(11)).meta()
    r.turn("t1", "First question.", "First answer.")
    r.add("future_record", {"anything": [1, 2, 3]})
    r.item({"type": "future_item", "payload": "x"})
    r.event({"type": "future_event", "x": 1})
    r.raw("{not json")
    r.raw("")
    r.raw(42)
    r.raw({"timestamp": stamp(r.now()), "type": "response_item"})
    r.item({**user("Second question."), "future_key": True})
    r.assistant("Second answer.")
    cases["unknown-types"] = r

    r = Rollout(uuid_for(12)).meta()
    r.turn("t1", "First question.", "First answer.")
    r.turn("t2", "A question to take back.", "An answer taken back.")
    r.event({"type": "thread_rolled_back", "num_turns": 1})
    r.turn("t3", "Third question.", "Third answer.")
    cases["rolled-back"] = r

    r = Rollout(uuid_for(13)).meta()
    r.item(developer("<permissions instructions>persisted</permissions instructions>"))
    r.item(environment("/elsewhere"))
    r.item(
        user(
            "# AGENTS.md instructions for /tmp/codex-oracle-project\n\n<INSTRUCTIONS>\nBe brief.\n</INSTRUCTIONS>"
        )
    )
    r.turn("t1", "First question.", "First answer.")
    r.item(user("<turn_aborted>\nThe user interrupted.\n</turn_aborted>"))
    r.item(user("<user_shell_command>\nls\n</user_shell_command>"))
    r.turn("t2", "Second question.", "Second answer.")
    cases["contextual-items"] = r

    r = Rollout(uuid_for(14)).meta()
    r.turn_context("t1", model="other-model")
    r.add("world_state", {"full": True, "state": {}})
    r.user("First question.")
    r.item(assistant("Working on it.", phase="commentary"))
    r.item(assistant("First answer.", phase="final_answer"))
    r.add(
        "token_usage_record",
        {"usage": {"input_tokens": 10, "output_tokens": 2, "total_tokens": 12}},
    )
    r.item(
        {
            "type": "message",
            "role": "user",
            "content": [
                {"type": "input_text", "text": "Look at this:"},
                {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="},
            ],
        }
    )
    r.assistant("A picture.")
    cases["mixed-records"] = r

    # Prompts worth more than the 20,000 tokens a compaction keeps of the user's messages: the
    # oldest dropped, the next cut in its middle (across its two parts, on a character's edge),
    # the newest kept; Codex's own context in the history, as Codex writes it first.
    r = Rollout(uuid_for(15)).meta()
    r.item(developer("<permissions instructions>kept</permissions instructions>"))
    r.item(environment())
    r.turn("t1", ("Parse the logs in order. " * 1200)[:30000], "First answer.")
    r.turn_context("t2")
    r.item(
        {
            "type": "message",
            "role": "user",
            "content": [
                {"type": "input_text", "text": "\u00e9" * 20000},
                {"type": "input_text", "text": "q" * 20000},
            ],
        }
    )
    r.assistant("Second answer.")
    r.turn("t3", ("Render the report table. " * 1600)[:40000] + " the end", "Third answer.")
    cases["long-prompts"] = r

    return cases


# --- candidate new sessions holding a handoff document ----------------------------------------


def candidates(document: str, today: datetime) -> dict[str, Rollout]:
    """New rollouts that start from ``document``, from the least a reader needs to all Codex writes."""
    out: dict[str, Rollout] = {}
    base = today.replace(microsecond=0)

    def new(n: int) -> Rollout:
        return Rollout(f"019ad100-0000-7000-8000-{n:012x}", start=base + timedelta(seconds=n))

    r = new(1).meta()
    r.user(document, events=False)
    out["user-item-only"] = r

    r = new(2).meta()
    r.user(document)
    out["user-item-and-event"] = r

    r = new(3).meta(source="exec")
    r.user(document)
    out["source-exec"] = r

    r = new(4).meta(provider=None)
    r.user(document)
    out["no-provider"] = r

    r = new(5).meta()
    r.event({"type": "task_started", "turn_id": "h1", "model_context_window": 258400})
    r.turn_context("h1")
    r.user(document)
    r.assistant("I have the handoff document and will continue from it.")
    r.event(
        {
            "type": "task_complete",
            "turn_id": "h1",
            "last_agent_message": "I have the handoff document.",
        }
    )
    out["whole-turn"] = r

    r = new(6).meta()
    r.item(developer(document))
    out["developer-item"] = r

    r = new(7).meta()
    r.event(
        {
            "type": "user_message",
            "message": document,
            "images": [],
            "local_images": [],
            "text_elements": [],
        }
    )
    out["event-only"] = r

    r = new(8)
    r.ordinal = False
    r.meta().user(document)
    out["legacy-lines"] = r

    r = new(9).meta(forked_from_id=uuid_for(1))
    r.user(document)
    out["forked-from"] = r
    return out


def exchange(rollout_lines: list[Line], request: str, answer: str, start: datetime) -> list[Line]:
    """Lines an old rollout could record a handoff with: the request and the answer, as items and
    as the events Codex shows, in the line shape the rollout already uses."""
    ordinal = any("ordinal" in line for line in rollout_lines if isinstance(line, dict))
    r = Rollout("", start=start, ordinal=ordinal)
    r.lines = [{}] * len(rollout_lines)  # so ordinals and times continue after the old lines
    r.user(request)
    r.assistant(answer)
    return r.lines[len(rollout_lines) :]
