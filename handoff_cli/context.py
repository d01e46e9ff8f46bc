"""The agent's own context: the messages it would send to its model for a branch.

This is ``buildSessionContext`` of SESSION_FORMAT.md §6, with the details of oh-my-pi's
implementation that the spec leaves open (which model is in force, how custom messages are
normalised, when a failed turn survives). What to send is decided on the facts gathered at
load time, without message payloads, so it stays linear and cheap on sessions of hundreds of
thousands of entries; ``Context.messages`` then reads only the payloads it emits, one at a time.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

import orjson

from .session import Entry, Record, js_truthy, without_signature

Message = dict[str, Any]
"""A message in the agent's in-memory shape (what ``show --context --json`` prints)."""

# omp's internal custom messages that never reach the model.
HIDDEN_CUSTOM_TYPES = frozenset({"prewalk-plan", "vibe-mode-context"})
FAILED_STOP_REASONS = frozenset({"error", "aborted"})
# A failed turn followed by this custom message is kept: the agent shows the user what it was
# thinking when interrupted.
INTERRUPTED_THINKING = "interrupted-thinking"
DEFAULT_CUSTOM_TYPE = "custom-message"
# JavaScript dates end at 8.64e15 ms either side of the epoch.
_MAX_TIME_MS = 8.64e15
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


Strips = dict[str, frozenset[str | None]]
"""For an emitted assistant entry (by id): the ids of the tool calls to strip from it."""


@dataclass(frozen=True)
class Context:
    """The context of a branch: its messages (read lazily), thinking level and model."""

    records: list[Record]
    """The entries whose messages make up the context, in order."""
    strips: Strips
    thinking_level: str
    model: str | None

    def messages(self) -> Iterator[Message]:
        """The context's messages in order, each built only when reached."""
        for record in self.records:
            yield to_message(record, self.strips.get(record.id))

    def serialized(self) -> Iterator[Message | orjson.Fragment]:
        """The same messages for JSON output: a message sent unchanged is passed on in the JSON
        it was loaded as, never parsed again."""
        for record in self.records:
            strip = self.strips.get(record.id)
            if record.payload is not None and not strip:
                yield orjson.Fragment(record.payload)
            else:
                yield to_message(record, strip)


def build_context(branch: list[Record]) -> Context:
    """The context the agent builds for ``branch`` (SESSION_FORMAT.md §6)."""
    thinking_level, model = _state(branch)
    head, window = _window(branch)
    emitted = ([head] if head is not None else []) + [r for r in window if _emits(r)]
    records, strips = _strip_unanswered(emitted)
    return Context(_drop_failed_turns(records, strips), strips, thinking_level, model)


def js_time(value: Any) -> int | None:
    """``new Date(value).getTime()`` for an entry's timestamp; None where JavaScript has NaN."""
    if value is None:
        return 0
    if isinstance(value, (bool, int, float)):
        number = float(value)
        if not math.isfinite(number) or abs(number) > _MAX_TIME_MS:
            return None
        return int(number)
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        # JavaScript reads a zoneless time as local time; the agents run (and we read) in UTC.
        moment = moment.replace(tzinfo=timezone.utc)
    return (moment - _EPOCH) // timedelta(milliseconds=1)


def _state(branch: list[Record]) -> tuple[str, str | None]:
    """The thinking level and the model in force at the end of the branch.

    The model is the last default-role ``model_change``'s (omp's ``model``, or pi's
    ``provider`` and ``modelId``), else that of the last assistant message.
    """
    thinking_level = "off"
    changed: str | None = None
    answered: str | None = None
    for record in branch:
        entry = record.entry
        if record.type == "thinking_level_change" and entry is not None:
            level = entry.get("thinkingLevel")
            thinking_level = level if isinstance(level, str) else "off"
        elif record.type == "model_change" and entry is not None:
            changed = _model_of_change(entry) or changed
        elif record.facts is not None and record.facts.role == "assistant":
            answered = f"{record.facts.provider}/{record.facts.model}"
    return thinking_level, changed or answered


def _model_of_change(entry: Entry) -> str | None:
    if entry.get("role", "default") not in (None, "default"):
        return None  # a model for another role (e.g. omp's "smol"), not the conversation's
    model = entry.get("model")
    if isinstance(model, str) and model:
        return model
    provider, model_id = entry.get("provider"), entry.get("modelId")
    if isinstance(provider, str) and isinstance(model_id, str) and provider and model_id:
        return f"{provider}/{model_id}"
    return None


def _window(branch: list[Record]) -> tuple[Record | None, list[Record]]:
    """The compaction whose summary heads the context, if any, and the entries that follow it."""
    compaction = reset = -1
    for index, record in enumerate(branch):
        if record.type == "compaction":
            compaction = index
        elif record.type == "reset_boundary":
            reset = index
    if reset > compaction:
        return None, branch[reset + 1 :]
    if compaction < 0:
        return None, branch
    head = branch[compaction]
    first_kept = head.entry.get("firstKeptEntryId") if head.entry is not None else None
    kept = next((i for i in range(compaction) if branch[i].id == first_kept), compaction)
    return head, branch[kept:compaction] + branch[compaction + 1 :]


def _emits(record: Record) -> bool:
    if record.type == "message":
        return record.facts is not None and not record.facts.superseded
    entry = record.entry
    if entry is None:
        return False
    if record.type == "branch_summary":
        return js_truthy(entry.get("summary"))
    if record.type == "custom_message":
        return entry.get("customType") not in HIDDEN_CUSTOM_TYPES and isinstance(
            entry.get("content"), (str, list)
        )
    return False


def _strip_unanswered(emitted: list[Record]) -> tuple[list[Record], Strips]:
    """Clean-up pass 1: tool calls that no tool result in the list answers are removed."""
    answered = {r.facts.answers for r in emitted if r.facts is not None and r.facts.answers}
    kept: list[Record] = []
    strips: Strips = {}
    for record in emitted:
        facts = record.facts
        calls = facts.tool_call_ids if facts is not None else ()
        unanswered = frozenset(c for c in calls if c not in answered) if calls else None
        if unanswered:
            assert facts is not None
            if not facts.keeps_content and unanswered.issuperset(calls):
                continue  # nothing would be left of the message
            strips[record.id] = unanswered
        kept.append(record)
    return kept, strips


def _drop_failed_turns(records: list[Record], strips: Strips) -> list[Record]:
    """Clean-up pass 2: failed assistant turns go, with the later results of their tool calls.

    Walked from the end, as the agent does, so that "the next message" is the next one still
    in the list.
    """
    count = len(records)
    alive = [True] * count
    skip = list(range(count + 1))  # skip[i] leads towards the first alive index >= i

    def next_alive(index: int) -> int:
        root = index
        while root < count and not alive[root]:
            root = skip[root]
        while index < count and skip[index] != root:  # path compression
            skip[index], index = root, skip[index]
        return root

    def drop(index: int) -> None:
        alive[index] = False
        skip[index] = index + 1

    results: dict[str, list[int]] = {}
    for index, record in enumerate(records):
        answers = record.facts.answers if record.facts is not None else None
        if answers is not None:
            results.setdefault(answers, []).append(index)

    for index in range(count - 1, -1, -1):
        facts = records[index].facts
        if facts is None or facts.stop_reason not in FAILED_STOP_REASONS:
            continue
        following = next_alive(index + 1)
        if following < count and _is_interrupted_thinking(records[following]):
            continue
        drop(index)
        for call in set(facts.tool_call_ids) - strips.get(records[index].id, frozenset()):
            for position in results.get(call, ()) if call is not None else ():
                if position > index:
                    drop(position)
    return [record for record, keep in zip(records, alive, strict=False) if keep]


def _is_interrupted_thinking(record: Record) -> bool:
    if record.facts is not None:
        return record.facts.role == "custom" and record.facts.custom_type == INTERRUPTED_THINKING
    return record.entry is not None and _custom_type(record.entry) == INTERRUPTED_THINKING


def _custom_type(entry: Entry) -> str:
    custom_type = entry.get("customType")
    return custom_type if isinstance(custom_type, str) and custom_type else DEFAULT_CUSTOM_TYPE


def to_message(record: Record, strip: frozenset[str | None] | None = None) -> Message:
    """The in-memory message an emitted entry becomes (its keys in the agent's order)."""
    if record.payload is not None:
        message: Message = orjson.loads(record.payload)
        return _strip_tool_calls(message, strip) if strip else message
    entry = record.entry
    assert entry is not None, "only message entries are stored without their entry"
    if record.type == "compaction":
        summary: Message = {"role": "compactionSummary"}
        for key in ("summary", "shortSummary", "tokensBefore", "tokensAfter", "method", "warning"):
            if key in entry:
                summary[key] = entry[key]
        summary["timestamp"] = js_time(entry.get("timestamp"))
        return summary
    if record.type == "branch_summary":
        branch_summary: Message = {"role": "branchSummary", "summary": entry.get("summary")}
        if "fromId" in entry:
            branch_summary["fromId"] = entry["fromId"]
        branch_summary["timestamp"] = js_time(entry.get("timestamp"))
        return branch_summary
    display = entry.get("display")
    custom: Message = {
        "role": "custom",
        "customType": _custom_type(entry),
        "content": entry.get("content"),
        "display": display if isinstance(display, bool) else False,
    }
    if "details" in entry:
        custom["details"] = entry["details"]
    if "attribution" in entry:
        custom["attribution"] = "user" if entry["attribution"] == "user" else "agent"
    custom["timestamp"] = js_time(entry.get("timestamp"))
    return custom


def _strip_tool_calls(message: Message, strip: frozenset[str | None]) -> Message:
    """The message without the given tool calls; its thinking no longer matches its signature."""
    content = []
    for block in message.get("content") or []:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "redactedThinking":
            continue
        if kind == "toolCall":
            call_id = block.get("id")
            if (call_id if isinstance(call_id, str) else None) in strip:
                continue
        if kind == "thinking" and js_truthy(block.get("thinkingSignature")):
            block = without_signature(block)
        content.append(block)
    return {**message, "content": content}
