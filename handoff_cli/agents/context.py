"""The agent's own context: the messages it would send to its model for a branch.

This is the agent's ``buildSessionContext`` (docs/session-format.md §6), by the rules of either
agent: oh-my-pi's (18.3.4, the release the registry gives; 18.2.3's wherever the two agree) or
upstream pi's (1.6). Both read the thinking level and the model over the whole branch, start
from the last compaction (its summary first, then the entries it kept and every entry after
it), and build messages from entries the same way; what differs is factored into two small
rule sets below:

- oh-my-pi also cuts at its ``reset_boundary``, replays provider-side compactions (and keeps
  what an Anthropic snapshot compaction leaves after the entry it replays through), hides some
  custom messages, skips retried turns, then cleans up: unanswered tool calls and failed turns
  go (§6.4, §6.5);
- pi keeps every turn as it was, sends a compaction's system message before its summary, and
  applies its ``context_edit`` entries, which leave an earlier entry out or replace its content
  (§6.8).

What to send is decided on the facts gathered at load time, so it stays linear and cheap on
sessions of hundreds of thousands of entries; message payloads are touched only when emitted.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice
from typing import Any, NamedTuple

from handoff_cli.options import OMP, PI
from handoff_cli.sessions.js import UNDEFINED, UNPAIRABLE, js_key, js_string, js_time, js_truthy
from handoff_cli.sessions.jsonl import LONGEST_TEXT, Verbatim, dumps
from handoff_cli.sessions.session import CallId, Entry, MessageFacts, Record, without_signature

Message = dict[str, Any]
"""A message in the agent's in-memory shape (what ``show --context --json`` prints)."""

# omp's internal custom messages that never reach the model.
HIDDEN_CUSTOM_TYPES = frozenset({"prewalk-plan", "vibe-mode-context"})
FAILED_STOP_REASONS = frozenset({"error", "aborted"})
# A failed turn followed by this custom message is kept: the agent shows the user what it was
# thinking when interrupted.
INTERRUPTED_THINKING = "interrupted-thinking"
DEFAULT_CUSTOM_TYPE = "custom-message"
# The roles whose content a pi context_edit replaces; other messages it can only leave out.
EDITABLE_ROLES = frozenset({"user", "assistant", "toolResult", "custom"})
# pi gives a message of these roles that has no content an empty one (a system message "").
EMPTIED_ROLES = frozenset({"system", "user", "assistant", "toolResult"})


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

    agent: str
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


def build_context(branch: list[Record], agent: str) -> Context:
    """The context ``agent`` (``omp`` or ``pi``) builds for ``branch`` (docs/session-format.md
    §6)."""
    return _pi_context(branch) if agent == PI else _omp_context(branch)


# --- shared: the window and the messages made of entries -------------------------------------


def _last(branch: list[Record], kind: str) -> int:
    """The index of the last entry of type ``kind`` on the branch, or -1."""
    return next((i for i in range(len(branch) - 1, -1, -1) if branch[i].type == kind), -1)


def _kept_from(branch: list[Record], compaction: int, entry_id: Any, after: int = 0) -> int:
    """Where the entries a compaction keeps start: at (or ``after`` past) the entry named,
    looked for only before the compaction; with none found, nothing before it is kept."""
    return next((i + after for i in range(compaction) if branch[i].id == entry_id), compaction)


def _entry_time(entry: Entry) -> int | None:
    # ``new Date(entry.timestamp)``: a missing time is NaN (null), not the epoch.
    return js_time(entry.get("timestamp", UNDEFINED))


def _branch_summary(entry: Entry) -> Message:
    message: Message = {"role": "branchSummary", "summary": entry.get("summary")}
    if "fromId" in entry:
        message["fromId"] = entry["fromId"]
    message["timestamp"] = _entry_time(entry)
    return message


def to_message(
    record: Record, agent: str, change: Change | None = None, longest: int | None = LONGEST_TEXT
) -> Message:
    """The in-memory message an emitted entry becomes by ``agent``'s rules (its keys in the
    agent's order); its strings longer than ``longest`` are read as their head and tail
    (``Record.message``), unless ``longest`` is None (for output)."""
    facts = record.facts
    if record.has_message and facts is not None:
        message: Message = record.message(longest)
        message = _pi_loaded(message, facts.role) if agent == PI else _omp_loaded(message, facts)
    else:
        entry = record.entry
        assert entry is not None, "only message entries are stored without their entry"
        if record.type == "branch_summary":
            message = _branch_summary(entry)
        else:
            message = _pi_custom(entry) if agent == PI else _omp_custom(entry)
    if change is None:
        return message
    if change.strip:
        message = _strip_tool_calls(message, change.strip)
    if change.content is not UNCHANGED:
        message = {**message, "content": change.content}
        if change.content is UNDEFINED:
            del message["content"]
    return message


# --- oh-my-pi's rules ------------------------------------------------------------------------


def _omp_context(branch: list[Record]) -> Context:
    thinking_level, model = _omp_state(branch)
    compaction, window = _omp_window(branch)
    records, changes = _strip_unanswered([r for r in window if _omp_emits(r)])
    head = (_omp_summary(compaction, branch),) if compaction is not None else ()
    return Context(OMP, head, _drop_failed_turns(records, changes), changes, thinking_level, model)


def _omp_state(branch: list[Record]) -> tuple[Any, str | None]:
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
    for key in ("signature", "encryptedContent", "filesText"):
        value = preserved.get(key)
        if isinstance(value, str) and value:
            payload[key] = value
    return payload


def _omp_window(branch: list[Record]) -> tuple[Record | None, list[Record]]:
    """The compaction whose summary heads the context, if any, and the entries that follow it."""
    compaction, reset = _last(branch, "compaction"), _last(branch, "reset_boundary")
    if reset > compaction:
        return None, branch[reset + 1 :]
    if compaction < 0:
        return None, branch
    head = branch[compaction]
    entry = head.entry if head.entry is not None else {}
    # A compaction done by OpenAI's servers replays their history instead of kept entries:
    # what follows is only what came after the last entry that history covers.
    if _openai_history(head) is not None:
        start = _kept_from(branch, compaction, entry.get("providerReplayThroughEntryId"), 1)
    else:
        start = _kept_from(branch, compaction, entry.get("firstKeptEntryId"))
        through = snapshot_through(entry)
        # An Anthropic snapshot's signed block covers only up to the entry it replays through:
        # what was appended while it ran, up to the compaction, is kept (18.3).
        if start == compaction and through is not None and _anthropic_compaction(head) is not None:
            start = _kept_from(branch, compaction, through, 1)
    return head, branch[start:compaction] + branch[compaction + 1 :]


def snapshot_through(compaction: Entry) -> Any:
    """The entry a snapshot compaction (``firstKeptEntryId`` ``""``) replays through, or None
    for any other compaction."""
    through = compaction.get("providerReplayThroughEntryId")
    snapshot = compaction.get("firstKeptEntryId") == "" and js_truthy(through)
    return through if snapshot else None


def _omp_summary(compaction: Record, branch: list[Record]) -> Message:
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
    if anthropic is not None:
        # History is rewritten just before the first entry kept: a later mark would make the
        # agent strip the signed thinking of the turns it keeps.
        kept = _first_retained(branch, branch.index(compaction))
        kept_time = js_time(kept.stamp) if kept is not None else None
        if kept_time is not None:
            summary["historyRewriteAt"] = kept_time - 1
    summary["timestamp"] = _entry_time(entry)
    return summary


def _first_retained(branch: list[Record], compaction: int) -> Record | None:
    """The first entry an Anthropic compaction keeps: its ``firstKeptEntryId`` before it, else
    a snapshot's entry after the one it replays through, else the entry after it."""
    entry = branch[compaction].entry or {}
    kept = _kept_from(branch, compaction, entry.get("firstKeptEntryId"))
    through = snapshot_through(entry)
    if kept == compaction and through is not None:
        kept = _kept_from(branch, compaction, through, 1)
    if kept < compaction:
        return branch[kept]
    return branch[compaction + 1] if compaction + 1 < len(branch) else None


def _omp_emits(record: Record) -> bool:
    if record.type == "message":
        facts = record.facts
        return record.has_message and facts is not None and not facts.superseded
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


def _strip_unanswered(emitted: list[Record]) -> tuple[list[Record], dict[str, Change]]:
    """Clean-up pass 1: tool calls that no tool result in the list answers are removed.

    Also notes, in the same walk, the Copilot turns that change as omp loads them.
    """
    answered = {r.facts.answers for r in emitted if _is_result(r)}  # type: ignore[union-attr]
    answered.discard(UNPAIRABLE)
    kept: list[Record] = []
    changes: dict[str, Change] = {}
    for record in emitted:
        facts = record.facts
        calls = facts.tool_call_ids if facts is not None else ()
        unanswered = frozenset(c for c in calls if c not in answered) if calls else None
        if unanswered:
            assert facts is not None
            if not facts.keeps_content and unanswered.issuperset(calls):
                continue  # nothing would be left of the message
            changes[record.id] = Change(strip=unanswered)
        elif facts is not None and facts.replays:
            changes[record.id] = Change()
        kept.append(record)
    return kept, changes


def _drop_failed_turns(records: list[Record], changes: dict[str, Change]) -> list[Record]:
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
        change = changes.get(records[index].id)
        calls = set(facts.tool_call_ids) - (change.strip if change else frozenset())
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


def _omp_loaded(message: Message, facts: MessageFacts) -> Message:
    """A message as omp holds it after loading: a Copilot turn's replay data dropped."""
    if not facts.replays:
        return message
    loaded = {k: v for k, v in message.items() if k != "providerPayload"}
    if isinstance(loaded.get("content"), list):
        loaded["content"] = [without_signature(block) for block in loaded["content"]]
    return loaded


def _omp_custom(entry: Entry) -> Message:
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
    custom["timestamp"] = _entry_time(entry)
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


# --- pi's rules -----------------------------------------------------------------------------


def _pi_context(branch: list[Record]) -> Context:
    thinking_level, model = _pi_state(branch)
    compaction, window = _pi_window(branch)
    # An entry's latest edit within the window counts, wherever the entry it aims at is.
    edits: dict[str, Any] = {}
    for record in window:
        entry = record.entry
        if record.type == "context_edit" and entry is not None:
            target = entry.get("targetId")
            if isinstance(target, str):
                edits[target] = entry.get("replacement", UNDEFINED)
    head: tuple[Message, ...] = ()
    if compaction is not None and edits.get(compaction.id, UNDEFINED) is not None:
        head = _pi_summary(compaction)
    records: list[Record] = []
    changes: dict[str, Change] = {}
    for record in window:
        replacement = edits.get(record.id, UNDEFINED)
        if replacement is None or not _pi_emits(record):
            continue  # null: the edit leaves the entry out
        facts = record.facts
        role = facts.role if facts is not None else _ENTRY_ROLES.get(record.type)
        # An edit without a replacement makes pi fail on such a message; it is passed over.
        if replacement is not UNDEFINED and role in EDITABLE_ROLES:
            changes[record.id] = Change(content=_replacement(replacement, role))
        elif facts is not None and facts.no_content and role in EMPTIED_ROLES:
            changes[record.id] = Change()
        records.append(record)
    return Context(PI, head, records, changes, thinking_level, model)


def _pi_state(branch: list[Record]) -> tuple[Any, str | None]:
    """The thinking level and the model in force at the end of the branch: the last
    ``thinking_level_change``'s level as it is, and the model of the last ``model_change`` or
    assistant message, whichever is later."""
    thinking_level: Any = "off"
    model: str | None = None
    for record in branch:
        entry = record.entry
        if record.type == "thinking_level_change" and entry is not None:
            thinking_level = entry.get("thinkingLevel", UNDEFINED)
        elif record.type == "model_change" and entry is not None:
            provider, model_id = entry.get("provider", UNDEFINED), entry.get("modelId", UNDEFINED)
            model = f"{js_string(provider)}/{js_string(model_id)}"
        elif record.facts is not None and record.facts.role == "assistant":
            model = f"{record.facts.provider}/{record.facts.model}"
    return thinking_level, model


def _pi_window(branch: list[Record]) -> tuple[Record | None, list[Record]]:
    """The last compaction, if any, and the entries after it: those it kept (but system
    messages, which its own system message replaces), then every later one."""
    compaction = _last(branch, "compaction")
    if compaction < 0:
        return None, branch
    head = branch[compaction]
    first_kept = head.entry.get("firstKeptEntryId") if head.entry is not None else None
    kept = branch[_kept_from(branch, compaction, first_kept) : compaction]
    kept = [r for r in kept if r.facts is None or r.facts.role != "system"]
    return head, kept + branch[compaction + 1 :]


def _pi_summary(compaction: Record) -> tuple[Message, ...]:
    """The system message a compaction holds, if any, and its summary."""
    entry = compaction.entry if compaction.entry is not None else {}
    summary: Message = {"role": "compactionSummary"}
    for key in ("summary", "tokensBefore"):
        if key in entry:
            summary[key] = entry[key]
    summary["timestamp"] = _entry_time(entry)
    system = entry.get("systemMessage")
    return (system, summary) if isinstance(system, dict) else (summary,)


def _pi_emits(record: Record) -> bool:
    # An older compaction in the kept part adds nothing: only the newest one is summarised.
    if record.type == "message":
        return record.has_message
    entry = record.entry
    if record.type == "branch_summary":
        return entry is not None and js_truthy(entry.get("summary"))
    return record.type == "custom_message" and entry is not None


_ENTRY_ROLES = {"custom_message": "custom", "branch_summary": "branchSummary"}
"""The role of the message an entry that is not a ``message`` becomes."""


def _replacement(replacement: Any, role: str | None) -> Any:
    """The content a pi edit puts in place: a string becomes one text block for assistant
    messages and tool results; a replacement that is not an object has no content."""
    content = replacement.get("content", UNDEFINED) if isinstance(replacement, dict) else UNDEFINED
    if isinstance(content, str) and role in ("assistant", "toolResult"):
        return [{"type": "text", "text": content}]
    return content


def _pi_loaded(message: Message, role: str | None) -> Message:
    """A message as pi holds it after loading: one without content given an empty one."""
    if message.get("content") is None and role in EMPTIED_ROLES:
        return {**message, "content": "" if role == "system" else []}
    return message


def _pi_custom(entry: Entry) -> Message:
    """A custom message as pi makes one: the entry's fields as they are, absent ones left out."""
    custom: Message = {"role": "custom"}
    if "customType" in entry:
        custom["customType"] = entry["customType"]
    content = entry.get("content")
    custom["content"] = [] if content is None else content
    for key in ("display", "details"):
        if key in entry:
            custom[key] = entry[key]
    custom["timestamp"] = _entry_time(entry)
    return custom
