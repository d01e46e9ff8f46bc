"""The agents' own context: the messages an agent would send to its model for a branch.

This is the agents' ``buildSessionContext`` (docs/session-format.md §6): oh-my-pi's
(``agents/omp.py``) and upstream pi's (``agents/pi.py``) both read the thinking level and the
model over the whole branch, start from the last compaction (its summary first, then the
entries it kept and every entry after it), and build messages from entries the same way. What
they share is here: the ``Context`` they return, the window's helpers, and the messages made of
entries, which ask the agent (``Agent.loaded``, ``Agent.custom``) where the two differ.

What to send is decided on each message's facts (``Record.facts``): those before the last
compaction are read only when asked for, and a context reads them for its window at once
(``session.with_facts``), so it stays linear and cheap on sessions of hundreds of thousands
of entries; message payloads are touched only when emitted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import islice
from typing import Any, NamedTuple

from handoff_cli.agents.base import Agent
from handoff_cli.agents.base import Message as Message
from handoff_cli.sessions.js import UNDEFINED, js_key, js_time, js_truthy
from handoff_cli.sessions.jsonl import LONGEST_TEXT, Verbatim, dumps
from handoff_cli.sessions.session import CallId, Entry, Record, without_signature

FAILED_STOP_REASONS = frozenset({"error", "aborted"})
"""The stop reasons of an assistant turn that failed."""


class _Unchanged:
    def __repr__(self) -> str:
        return "UNCHANGED"


UNCHANGED: Any = _Unchanged()
"""A content left as it was (``UNDEFINED`` would remove it)."""


class Change(NamedTuple):
    """How an emitted message differs from the payload it was loaded with. A record with a
    change is rebuilt by its agent's rules; one without is passed on as it was loaded."""

    strip: frozenset[CallId] = frozenset()
    """oh-my-pi: the tool calls nobody answered, to be removed."""
    content: Any = UNCHANGED
    """pi: the content a ``context_edit`` puts in its place."""


@dataclass(frozen=True)
class Context:
    """The context of a branch, by one agent's rules: its messages, thinking level and model."""

    agent: Agent
    head: tuple[Message, ...]
    """What the compaction the context starts from adds before the entries: its summary (and,
    for pi, the system message in force then)."""
    records: list[Record]
    """The entries whose messages follow, in order."""
    changes: dict[str, Change]
    """By record id: the emitted messages that differ from what was loaded."""
    thinking_level: Any
    """The thinking level, normally a string ("off" when never set; pi: ``UNDEFINED`` when
    its last change names none, which JSON leaves out)."""
    model: str | None
    """"provider/model" in force at the leaf, if known."""
    sent: Callable[[], Iterator[Message]] | None = None
    """The messages in the agent's own wire shape, where that is not the shared one the
    records are read in (Claude Code's: Anthropic's, its records joined): what JSON shows,
    each built when reached."""

    def __len__(self) -> int:
        return len(self.records) + len(self.head)

    def messages(self, longest: int = LONGEST_TEXT, start: int = 0) -> Iterator[Message]:
        """The context's messages in order, from the one at ``start``, each built only when
        reached; a string longer than ``longest`` characters is read as its head and tail
        (``Record.message``)."""
        yield from self.head[start:]
        for record in islice(self.records, max(0, start - len(self.head)), None):
            yield to_message(record, self.agent, self.changes.get(record.id), longest)

    def read_size(self, start: int, stop: int) -> int:
        """Bytes of the file its messages from ``start`` to ``stop`` are read from."""
        first = len(self.head)
        records = self.records[max(0, start - first) : max(0, stop - first)]
        return sum(record.message_size for record in records)

    def json_size(self) -> int:
        """Characters of the context's JSON, counted without building what is kept as JSON."""
        total = sum(len(dumps(message)) for message in self.head)
        changes = self.changes
        for record in self.records:
            if record.has_message and record.id not in changes:
                total += record.message_size
            else:
                total += len(dumps(to_message(record, self.agent, changes.get(record.id))))
        return total

    def serialized(self) -> Iterator[Message | Verbatim]:
        """The same messages for JSON output: a message sent as it was loaded is passed on in
        the JSON it was loaded as, never parsed again (docs/session-format.md §8.2)."""
        if self.sent is not None:
            yield from self.sent()
            return
        yield from self.head
        changes = self.changes
        for record in self.records:
            if record.has_message and record.id not in changes:
                yield Verbatim(record.message_json())
            else:
                yield to_message(record, self.agent, changes.get(record.id), longest=None)

    def to_json(self) -> dict[str, Any]:
        """The agent's own context object, streamed: ``messages``, ``thinkingLevel``, ``model``."""
        fields: dict[str, Any] = {"messages": self.serialized()}
        if self.thinking_level is not UNDEFINED:
            fields["thinkingLevel"] = self.thinking_level
        fields["model"] = self.model
        return fields


# --- the window and the messages made of entries ---------------------------------------------


def kept_where(records: list[Record], keep: Callable[[Record], bool]) -> list[Record]:
    """The records that ``keep``; ``records`` itself, not a copy, where that is all of them
    (most windows: a copy of a long one would be a tenth of its records' memory)."""
    for position, record in enumerate(records):
        if not keep(record):
            return records[:position] + [r for r in islice(records, position + 1, None) if keep(r)]
    return records


def last_index(branch: list[Record], kind: str) -> int:
    """The index of the last entry of type ``kind`` on the branch, or -1."""
    return next((i for i in range(len(branch) - 1, -1, -1) if branch[i].type == kind), -1)


def kept_from(branch: list[Record], compaction: int, entry_id: Any, after: int = 0) -> int:
    """Where the entries a compaction keeps start: at (or ``after`` past) the entry named,
    looked for only before the compaction; with none found, nothing before it is kept."""
    return next((i + after for i in range(compaction) if branch[i].id == entry_id), compaction)


def entry_time(entry: Entry) -> int | None:
    # ``new Date(entry.timestamp)``: a missing time is NaN (null), not the epoch.
    return js_time(entry.get("timestamp", UNDEFINED))


def branch_summary(entry: Entry) -> Message:
    message: Message = {"role": "branchSummary", "summary": entry.get("summary")}
    if "fromId" in entry:
        message["fromId"] = entry["fromId"]
    message["timestamp"] = entry_time(entry)
    return message


def to_message(
    record: Record, agent: Agent, change: Change | None = None, longest: int | None = LONGEST_TEXT
) -> Message:
    """The in-memory message an emitted entry becomes by ``agent``'s rules (its keys in the
    agent's order); its strings longer than ``longest`` are read as their head and tail
    (``Record.message``), unless ``longest`` is None (for output)."""
    facts = record.facts
    if record.has_message and facts is not None:
        message: Message = record.message(longest)
        message = agent.loaded(message, facts)
    else:
        entry = record.entry
        assert entry is not None, "only message entries are stored without their entry"
        kind = record.type
        message = branch_summary(entry) if kind == "branch_summary" else agent.custom(entry)
    if change is None:
        return message
    if change.strip:
        message = _strip_tool_calls(message, change.strip)
    if change.content is not UNCHANGED:
        message = {**message, "content": change.content}
        if change.content is UNDEFINED:
            del message["content"]
    return message


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
