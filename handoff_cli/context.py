"""The agent's own context: the messages it would send to its model for a branch.

This is the agent's ``buildSessionContext`` (docs/session-format.md §6), with the details of
oh-my-pi's implementation that the format leaves open (which model is in force, how custom
messages are normalised, when a failed turn survives, provider payloads of compactions). What
to send is decided on the facts gathered at load time, so it stays linear and cheap on sessions
of hundreds of thousands of entries; message payloads are touched only when emitted.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from .js import UNDEFINED, UNPAIRABLE, js_key, js_time, js_truthy
from .jsonl import dumps, parse_line
from .session import CallId, Entry, Record, without_signature

Message = dict[str, Any]
"""A message in the agent's in-memory shape (what ``show --context --json`` prints)."""

# omp's internal custom messages that never reach the model.
HIDDEN_CUSTOM_TYPES = frozenset({"prewalk-plan", "vibe-mode-context"})
FAILED_STOP_REASONS = frozenset({"error", "aborted"})
# A failed turn followed by this custom message is kept: the agent shows the user what it was
# thinking when interrupted.
INTERRUPTED_THINKING = "interrupted-thinking"
DEFAULT_CUSTOM_TYPE = "custom-message"

Strips = dict[str, frozenset[CallId]]
"""For an emitted assistant entry (by id): the ids of the tool calls to strip from it."""


@dataclass(frozen=True)
class Context:
    """The context of a branch: its messages, thinking level and model."""

    summary: Message | None
    """The compaction summary that heads the context, if the branch has been compacted."""
    records: list[Record]
    """The entries whose messages follow, in order."""
    strips: Strips
    thinking_level: Any
    """The thinking level, normally a string ("off" when never set)."""
    model: str | None
    """"provider/model" in force at the leaf, if known."""

    def __len__(self) -> int:
        return len(self.records) + (self.summary is not None)

    def messages(self) -> Iterator[Message]:
        """The context's messages in order, each built only when reached."""
        if self.summary is not None:
            yield self.summary
        for record in self.records:
            yield to_message(record, self.strips.get(record.id))

    def json_size(self) -> int:
        """Characters of the context's JSON, counted without building what is kept as JSON."""
        total = len(dumps(self.summary)) if self.summary is not None else 0
        for record in self.records:
            strip = self.strips.get(record.id)
            if record.payload is not None and not strip:
                total += len(record.payload)
            else:
                total += len(dumps(to_message(record, strip)))
        return total

    def serialized(self) -> Iterator[Message | orjson.Fragment]:
        """The same messages for JSON output: a message sent unchanged is passed on in the JSON
        it was loaded as, never parsed again."""
        if self.summary is not None:
            yield self.summary
        for record in self.records:
            strip = self.strips.get(record.id)
            if record.payload is not None and not strip:
                yield orjson.Fragment(record.payload)
            else:
                yield to_message(record, strip)


def build_context(branch: list[Record]) -> Context:
    """The context the agent builds for ``branch`` (docs/session-format.md §6)."""
    thinking_level, model = _state(branch)
    compaction, window = _window(branch)
    records, strips = _strip_unanswered([r for r in window if _emits(r)])
    summary = _summary(compaction, branch) if compaction is not None else None
    return Context(summary, _drop_failed_turns(records, strips), strips, thinking_level, model)


# --- state and window ------------------------------------------------------------------------


def _state(branch: list[Record]) -> tuple[Any, str | None]:
    """The thinking level and the model in force at the end of the branch.

    The model is the last default-role ``model_change``'s (omp's ``model``, or pi's
    ``provider`` and ``modelId``), else that of the last assistant message.
    """
    thinking_level: Any = "off"
    changed: str | None = None
    answered: str | None = None
    for record in branch:
        entry = record.entry
        if record.type == "thinking_level_change" and entry is not None:
            level = entry.get("thinkingLevel")
            thinking_level = "off" if level is None else level
        elif record.type == "model_change" and entry is not None:
            changed = _model_of_change(entry) or changed
        elif record.facts is not None and record.facts.role == "assistant":
            answered = f"{record.facts.provider}/{record.facts.model}"
    return thinking_level, changed or answered


def _model_of_change(entry: Entry) -> str | None:
    if entry.get("role") not in (None, "default"):
        return None  # a model for another role (e.g. omp's "smol"), not the conversation's
    if "model" in entry:  # omp's form
        model = entry["model"]
        return model if isinstance(model, str) and model else None
    provider, model_id = entry.get("provider"), entry.get("modelId")
    if isinstance(provider, str) and isinstance(model_id, str) and provider and model_id:
        return f"{provider}/{model_id}"
    return None


def _preserved(compaction: Record, key: str) -> dict[str, Any] | None:
    preserve = compaction.entry.get("preserveData") if compaction.entry is not None else None
    value = preserve.get(key) if isinstance(preserve, dict) else None
    return value if isinstance(value, dict) else None


def _openai_history(compaction: Record) -> dict[str, Any] | None:
    """The provider payload of a compaction done by OpenAI's servers."""
    remote = _preserved(compaction, "openaiRemoteCompaction")
    if remote is None:
        return None
    provider, history = remote.get("provider"), remote.get("replacementHistory")
    if not (isinstance(provider, str) and provider and isinstance(history, list)):
        return None
    if not all(isinstance(item, dict) for item in history):
        return None
    return {"type": "openaiResponsesHistory", "provider": provider, "items": history}


def _anthropic_compaction(compaction: Record) -> dict[str, Any] | None:
    preserved = _preserved(compaction, "anthropicCompaction")
    if preserved is None:
        return None
    provider, content = preserved.get("provider"), preserved.get("content")
    if not (isinstance(provider, str) and provider and isinstance(content, str) and content):
        return None
    payload = {"type": "anthropicCompaction", "provider": provider, "content": content}
    for key in ("encryptedContent", "filesText"):
        value = preserved.get(key)
        if isinstance(value, str) and value:
            payload[key] = value
    return payload


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
    entry = head.entry if head.entry is not None else {}
    # A compaction done by OpenAI's servers replays their history instead of kept entries:
    # what follows is only what came after the last entry that history covers.
    key, after = (
        ("providerReplayThroughEntryId", 1)
        if _openai_history(head) is not None
        else ("firstKeptEntryId", 0)
    )
    start = next(
        (i + after for i in range(compaction) if branch[i].id == entry.get(key)), compaction
    )
    return head, branch[start:compaction] + branch[compaction + 1 :]


def _summary(compaction: Record, branch: list[Record]) -> Message:
    """The compaction-summary message, keys in the agent's order, present only when set."""
    entry = compaction.entry if compaction.entry is not None else {}
    summary: Message = {"role": "compactionSummary"}
    for key in ("summary", "shortSummary", "tokensBefore", "tokensAfter", "method"):
        if key in entry:
            summary[key] = entry[key]
    anthropic = _anthropic_compaction(compaction)
    payload = _openai_history(compaction) or anthropic
    if payload is not None:
        summary["providerPayload"] = payload
    if "warning" in entry:
        summary["warning"] = entry["warning"]
    timestamp = js_time(entry.get("timestamp"))
    if anthropic is not None:
        # Anthropic's compaction stands just before the first entry it keeps.
        kept = _first_retained(compaction, branch)
        kept_time = js_time(kept.stamp) if kept is not None else None
        timestamp = kept_time - 1 if kept_time is not None else timestamp
    summary["timestamp"] = timestamp
    return summary


def _first_retained(compaction: Record, branch: list[Record]) -> Record | None:
    index = branch.index(compaction)
    first_kept = compaction.entry.get("firstKeptEntryId") if compaction.entry else None
    before = next((r for r in branch[:index] if r.id == first_kept), None)
    return before or (branch[index + 1] if index + 1 < len(branch) else None)


# --- emission and clean-up -------------------------------------------------------------------


def _emits(record: Record) -> bool:
    if record.type == "message":
        return record.payload is not None
    entry = record.entry
    if entry is None:
        return False
    if record.type == "branch_summary":
        return js_truthy(entry.get("summary"))
    if record.type == "custom_message":
        custom_type = entry.get("customType")
        hidden = isinstance(custom_type, str) and custom_type in HIDDEN_CUSTOM_TYPES
        return not hidden and isinstance(entry.get("content"), (str, list))
    return False


def _is_result(record: Record) -> bool:
    return record.facts is not None and record.facts.role == "toolResult"


def _strip_unanswered(emitted: list[Record]) -> tuple[list[Record], Strips]:
    """Clean-up pass 1: tool calls that no tool result in the list answers are removed."""
    answered = {r.facts.answers for r in emitted if _is_result(r)}  # type: ignore[union-attr]
    answered.discard(UNPAIRABLE)
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

    results: dict[CallId, list[int]] = {}
    for index, record in enumerate(records):
        if _is_result(record):
            results.setdefault(record.facts.answers, []).append(index)  # type: ignore[union-attr]

    for index in range(count - 1, -1, -1):
        facts = records[index].facts
        if facts is None or facts.stop_reason not in FAILED_STOP_REASONS:
            continue
        following = next_alive(index + 1)
        if following < count and _is_interrupted_thinking(records[following]):
            continue
        drop(index)
        calls = set(facts.tool_call_ids) - strips.get(records[index].id, frozenset())
        calls.discard(UNPAIRABLE)
        for call in calls:
            for position in results.get(call, ()):
                if position > index:
                    drop(position)
    return [record for record, keep in zip(records, alive, strict=True) if keep]


def _is_interrupted_thinking(record: Record) -> bool:
    if record.facts is not None:
        return record.facts.role == "custom" and record.facts.custom_type == INTERRUPTED_THINKING
    return record.entry is not None and _custom_type(record.entry) == INTERRUPTED_THINKING


def _custom_type(entry: Entry) -> str:
    custom_type = entry.get("customType")
    return custom_type if isinstance(custom_type, str) and custom_type else DEFAULT_CUSTOM_TYPE


def to_message(record: Record, strip: frozenset[CallId] | None = None) -> Message:
    """The in-memory message an emitted entry becomes (its keys in the agent's order)."""
    if record.payload is not None:
        message: Message = parse_line(record.payload)
        return _strip_tool_calls(message, strip) if strip else message
    entry = record.entry
    assert entry is not None, "only message entries are stored without their entry"
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


def _strip_tool_calls(message: Message, strip: frozenset[CallId]) -> Message:
    """The message without the given tool calls; its thinking no longer matches its signature."""
    content = []
    for block in message.get("content") or []:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "redactedThinking":
            continue
        if kind == "toolCall" and js_key(block.get("id", UNDEFINED)) in strip:
            continue
        if kind == "thinking" and js_truthy(block.get("thinkingSignature")):
            block = without_signature(block)
        content.append(block)
    return {**message, "content": content}
