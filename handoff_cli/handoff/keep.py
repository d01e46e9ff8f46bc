"""``--keep-recent TOKENS``: the most recent whole turns of a branch, kept verbatim after a new
session's document (docs/handoff.md §17).

The turns are the context's own messages after what the document replaces (the last
compaction's summary, or a handoff document the branch holds already), our recorded exchanges
left out. A turn opens where the agent's own compaction may cut and still keep whole turns
(``Agent.starts_turn``: pi's and oh-my-pi's ``isTurnStartEntry``; a prompt of the user's for
Claude Code and Codex), so a tool call is never parted from its result. From the leaf back,
whole turns are kept while their tokens fit; a turn begun before the window (a compaction
that kept part of one) is never whole. Tokens are counted as a request counts them: the chat
messages ``prompt.to_chat`` makes of the turn, by LiteLLM's rule with the tiktoken encoding of
the session's own model (``llm.tokens``; o200k_base where LiteLLM counts another way), so the
cut depends on the session alone, never on the writer, and LiteLLM is never imported. Each
turn is read whole, from the end, until one does not fit: one turn more than what is kept.

What is kept is written in the new session's own format: ``family_entries`` for the pi
family's, the agents' modules (``claude.new_session``, ``codex.new_session``) for theirs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple

from handoff_cli.agents import PI_FAMILY, get
from handoff_cli.agents.base import Kept, KeptMessage, Message
from handoff_cli.agents.context import Context, to_message
from handoff_cli.handoff.conversation import json_size
from handoff_cli.handoff.plan import rough_tokens
from handoff_cli.handoff.prompt import ChatMessage, side_text, to_chat
from handoff_cli.llm import tokens
from handoff_cli.llm.table import litellm_name
from handoff_cli.sessions.files import millis, new_entry_id
from handoff_cli.sessions.jsonl import Verbatim
from handoff_cli.sessions.session import Entry, Record

FALLBACK_ENCODING = "o200k_base"
"""The encoding for a model LiteLLM counts with another tokenizer, or for none."""
_ZERO_USAGE = {
    "input": 0,
    "output": 0,
    "cacheRead": 0,
    "cacheWrite": 0,
    "totalTokens": 0,
    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
}
"""What an answer converted from another agent's file reports it took: it was not asked here."""


class Recent(NamedTuple):
    """The turns kept, and why none were."""

    kept: Kept
    last_turn: int | None = None
    """The newest turn's tokens, when it alone is over the budget (then nothing is kept)."""


def recent_turns(context: Context, agent: str, budget: int, model: str | None) -> Recent:
    """The most recent whole turns of ``context`` (read by ``agent``'s rules) within ``budget``
    tokens, counted for ``model`` ("provider/model", the session's own)."""
    rules = get(agent)
    count = counter(model)
    records = context.records
    turns: list[list[KeptMessage]] = []  # newest first
    total = 0
    end = len(records)
    last: int | None = None
    while end > 0:
        start = end - 1
        while start >= 0 and not rules.starts_turn(records[start], _before(records, start)):
            start -= 1
        if start < 0:
            break  # the rest began before the window: no whole turn
        turn = [_kept_message(context, r, r is records[start]) for r in records[start:end]]
        tokens_of_turn = sum(count(chat) for chat in to_chat(m.message for m in turn))
        if total + tokens_of_turn > budget:
            last = tokens_of_turn if not turns else None
            break
        turns.append(turn)
        total += tokens_of_turn
        end = start
    kept = [message for turn in reversed(turns) for message in turn]
    return Recent(_kept(agent, kept, total), last)


def _kept_message(context: Context, record: Record, first: bool) -> KeptMessage:
    """A record of the context as it sends it, whole."""
    change = context.changes.get(record.id)
    message = to_message(record, context.agent, change, longest=None)
    return KeptMessage(record, message, first, change is not None)


def _kept(agent: str, messages: list[KeptMessage], tokens: int) -> Kept:
    turns = (_as_turn(m.message) for m in messages)
    shared = tuple(joined_answers(m for m in turns if m is not None))
    return Kept(agent, tuple(messages), shared, tokens)


_TURN_ROLES = ("user", "assistant", "toolResult")


def _as_turn(message: Message) -> Message | None:
    """A message another agent's file holds as it is, else a user's text saying it, as a
    request says it (``prompt.side_text``); None for one a request leaves out."""
    if message.get("role") in _TURN_ROLES:
        return message
    text = side_text(message)
    return {"role": "user", "content": [{"type": "text", "text": text}]} if text else None


def _before(records: list[Record], index: int) -> Record | None:
    return records[index - 1] if index > 0 else None


def counter(model: str | None) -> Callable[[ChatMessage], int]:
    """One chat message's tokens, as LiteLLM counts them for ``model`` with tiktoken."""
    name = tokens.encoding_name(litellm_name(model)) if model else None
    encoding = name if name in tokens.ENCODINGS else FALLBACK_ENCODING
    return tokens.Tiktoken(encoding, fallback=lambda m: rough_tokens(json_size(m)))


# --- written in the pi family's format --------------------------------------------------------


def family_entries(kept: Kept, parent: str | None, taken: set[str], at: str) -> list[Entry]:
    """The kept messages as the entries of a pi-family session, chained from ``parent`` with
    fresh ids (in ``taken``): a pi-family branch's entries as they were (their times too: a
    custom message's is the message's), their messages byte for byte where the context sends
    them as stored; another agent's messages in the shared shape, an answer's records joined
    into one message, at ``at``."""
    entries: list[Entry] = []
    for entry in _family_values(kept, at):
        made = new_entry_id(taken)
        taken.add(made)
        fresh = {"id": made, "parentId": parent}
        entries.append({k: fresh.get(k, v) for k, v in entry.items()} | fresh)
        parent = made
    return entries


def _family_values(kept: Kept, at: str) -> Iterator[Entry]:
    """Each kept message's entry, its id and parent still to be made fresh."""
    if kept.agent in PI_FAMILY:
        for message in kept.messages:
            record = message.record
            if record.type != "message":
                assert record.entry is not None, "only a message is stored without its entry"
                edited = message.changed and "content" in message.message  # pi's context_edit
                yield record.entry | ({"content": message.message["content"]} if edited else {})
            else:  # as the context sends it: changed (a tool call nobody answered, an edit)
                sent = message.message if message.changed else Verbatim(record.message_json())
                yield _message_entry(sent, record.stamp)
        return
    for shared in kept.shared:
        converted = dict(shared)
        converted.setdefault("timestamp", millis(at))
        if converted.get("role") == "assistant":
            converted.setdefault("usage", _ZERO_USAGE)
        yield _message_entry(converted, at)


def _message_entry(message: Any, stamp: Any) -> Entry:
    head: Entry = {"type": "message", "id": None, "parentId": None}
    return head | ({"timestamp": stamp} if isinstance(stamp, str) else {}) | {"message": message}


def joined_answers(messages: Iterable[Message]) -> Iterator[Message]:
    """The messages with each run of assistant messages joined into one (their blocks in
    order): one answer, as another agent's file holds it in several records (Claude Code's
    one a block, Codex's one an item)."""
    answer: Message | None = None
    for message in messages:
        if message.get("role") == "assistant":
            if answer is None:
                answer = dict(message)
            else:
                answer["content"] = [*_blocks(answer), *_blocks(message)]
            continue
        if answer is not None:
            yield answer
            answer = None
        yield message
    if answer is not None:
        yield answer


def _blocks(message: Message) -> list[Any]:
    content = message.get("content")
    return list(content) if isinstance(content, list) else []
