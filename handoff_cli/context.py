"""The agent's own context: the messages it would send to its model for a branch.

This is ``buildSessionContext`` of SESSION_FORMAT.md §6. The choice of what to send is made on
the facts gathered at load time, without message payloads, so that it stays linear and cheap
on sessions of hundreds of thousands of entries; ``Context.messages`` then reads just the
payloads it emits, one at a time.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from .session import Entry, Record, Session

Message = dict[str, Any]
"""A message in the agent's in-memory shape (what ``show --context --json`` prints)."""

# omp's internal custom messages that never reach the model.
HIDDEN_CUSTOM_TYPES = frozenset({"prewalk-plan", "vibe-mode-context"})
FAILED_STOP_REASONS = frozenset({"error", "aborted"})
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


@dataclass(frozen=True, slots=True)
class Item:
    """One message to emit: the entry it comes from, and the tool calls to strip from it."""

    record: Record
    strip: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Context:
    session: Session
    items: list[Item]
    thinking_level: str
    model: str | None

    def messages(self) -> Iterator[Message]:
        """The context's messages in order, each read from the file only when reached."""
        entries = self.session.entries(item.record for item in self.items)
        for item, entry in zip(self.items, entries):
            yield to_message(entry, item.strip)


def iso_to_millis(value: Any) -> int | None:
    """An entry's ISO-8601 timestamp as Unix milliseconds (None where JavaScript gets NaN)."""
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        return None
    return (moment - _EPOCH) // timedelta(milliseconds=1)


def _state(branch: list[Record]) -> tuple[str, str | None]:
    """The thinking level and the model in force at the end of the branch.

    The model is the last ``model_change``'s (omp's ``model`` or pi's ``provider`` and
    ``modelId``), else that of the last assistant message.
    """
    thinking_level = "off"
    changed: str | None = None
    answered: str | None = None
    for record in branch:
        if record.type == "thinking_level_change" and record.entry is not None:
            level = record.entry.get("thinkingLevel")
            thinking_level = level if isinstance(level, str) else "off"
        elif record.type == "model_change" and record.entry is not None:
            changed = _model_of_change(record.entry) or changed
        elif record.facts is not None and record.facts.role == "assistant":
            facts = record.facts
            if facts.provider and facts.model:
                answered = f"{facts.provider}/{facts.model}"
    return thinking_level, changed or answered


def _model_of_change(entry: Entry) -> str | None:
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
        summary = entry.get("summary")
        return isinstance(summary, str) and summary != ""
    if record.type == "custom_message":
        return entry.get("customType") not in HIDDEN_CUSTOM_TYPES
    return False


def build_context(session: Session, branch: list[Record]) -> Context:
    """The context the agent builds for ``branch`` (SESSION_FORMAT.md §6)."""
    thinking_level, model = _state(branch)
    head, window = _window(branch)
    emitted = ([head] if head is not None else []) + [r for r in window if _emits(r)]
    items = _clean_up(emitted)
    return Context(session, items, thinking_level, model)


def _clean_up(emitted: list[Record]) -> list[Item]:
    """omp's two passes: strip unanswered tool calls, then drop failed turns with their results."""
    answered = {
        r.facts.answers for r in emitted if r.facts is not None and r.facts.answers is not None
    }
    items: list[Item] = []
    for record in emitted:
        facts = record.facts
        if facts is None or facts.role != "assistant" or not facts.tool_call_ids:
            items.append(Item(record))
            continue
        dangling = frozenset(i for i in facts.tool_call_ids if i not in answered)
        if not dangling:
            items.append(Item(record))
        elif facts.keeps_content or any(i not in dangling for i in facts.tool_call_ids):
            items.append(Item(record, dangling))
    failed_calls: set[str] = set()
    for item in items:
        facts = item.record.facts
        if facts is not None and facts.role == "assistant" and facts.stop_reason in FAILED_STOP_REASONS:
            failed_calls.update(facts.tool_call_ids)
    return [item for item in items if not _is_failed(item.record, failed_calls)]


def _is_failed(record: Record, failed_calls: set[str]) -> bool:
    facts = record.facts
    if facts is None:
        return False
    if facts.role == "assistant":
        return facts.stop_reason in FAILED_STOP_REASONS
    return facts.role == "toolResult" and facts.answers in failed_calls


def to_message(entry: Entry, strip: frozenset[str] = frozenset()) -> Message:
    """The in-memory message an emitted entry becomes."""
    kind = entry.get("type")
    if kind == "message":
        message: Message = entry["message"]
        return _strip_tool_calls(message, strip) if strip else message
    timestamp = iso_to_millis(entry.get("timestamp"))
    if kind == "compaction":
        summary: Message = {
            "role": "compactionSummary",
            "summary": entry.get("summary"),
        }
        if "shortSummary" in entry:
            summary["shortSummary"] = entry["shortSummary"]
        summary["tokensBefore"] = entry.get("tokensBefore")
        for key in ("tokensAfter", "method", "warning"):
            if key in entry:
                summary[key] = entry[key]
        summary["timestamp"] = timestamp
        return summary
    if kind == "branch_summary":
        return {
            "role": "branchSummary",
            "summary": entry.get("summary"),
            "fromId": entry.get("fromId"),
            "timestamp": timestamp,
        }
    custom: Message = {
        "role": "custom",
        "customType": entry.get("customType"),
        "content": entry.get("content"),
        "display": entry.get("display"),
    }
    for key in ("details", "attribution"):
        if key in entry:
            custom[key] = entry[key]
    custom["timestamp"] = timestamp
    return custom


def _strip_tool_calls(message: Message, strip: frozenset[str]) -> Message:
    content = []
    for block in message.get("content") or []:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "redactedThinking" or (kind == "toolCall" and block.get("id") in strip):
            continue
        if kind == "thinking" and "thinkingSignature" in block:
            block = {k: v for k, v in block.items() if k != "thinkingSignature"}
        content.append(block)
    return {**message, "content": content}
