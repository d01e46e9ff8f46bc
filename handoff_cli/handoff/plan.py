"""Fitting the handoff into the model's window: one request if it fits, else shrink, else fold.

People hand off exactly when a session has grown too long, so a request larger than the model's
window is the common case. In order, stopping as soon as every request fits:

1. ``single``: the whole conversation and the prompt, as they are.
2. ``shrunk``: the oldest long texts (tool results, command outputs, assistant text, tool-call
   arguments) cut to their head and tail, images dropped, oldest first; the last turns stay
   verbatim.
3. ``chunked``: the older conversation, split at turn boundaries (never between a tool call
   and its results), is folded chunk by chunk into a running draft of the document; the last
   request is the draft, the recent turns verbatim, and the handoff prompt. Each chunk is sent
   once, so the tokens sent stay close to the session's own.

A single message larger than the window is cut too, never fatal. Planning is pure: the token
counter is passed in, and the drafts are made by the caller, one request at a time.

A plan is made of numbers, never of the messages themselves: a long session's, parsed, are
several times its size. The conversation (``Measured``) says each message's role, JSON size
and tokens, measured once; a plan names its requests' messages by their positions, with the
few that are sent cut, and the messages of a request are built again when it is sent
(``sent``). A message's tokens do not depend on the messages beside it (``Counter``), so each
is counted once, and a request's count is their sum.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any, NamedTuple, Protocol

from handoff_cli.document import SECTIONS, section_list
from handoff_cli.handoff.prompt import IMAGE_LEFT_OUT, ChatMessage
from handoff_cli.sessions.jsonl import dumps, parse_line
from handoff_cli.text import cut_text, text_of


class Counter(Protocol):
    """Counts tokens as the provider will (near enough): a request's count is a fixed overhead
    (``count([])``) and each message's share (``each``), whatever the messages beside it."""

    def __call__(self, messages: Sequence[ChatMessage], /) -> int: ...

    def each(self, messages: Sequence[ChatMessage], /) -> list[int]: ...

    def later(
        self, messages: Sequence[ChatMessage], /, batch: bool = False
    ) -> Callable[[], list[int]]:
        """``each``, started now; the answer is given when asked for. ``batch``: a batch of a
        long conversation's messages, worth counting on threads however few they are."""
        ...


USER, ASSISTANT, TOOL = b"uat"
"""A message's role, as ``Measured.kinds`` holds it (every other role sends as ``ASSISTANT``
would: it neither starts a turn nor joins the one before)."""


def kind_of(message: ChatMessage) -> int:
    role = message.get("role")
    return USER if role == "user" else TOOL if role == "tool" else ASSISTANT


class Measured(Protocol):
    """A conversation as the planner reads it: each message measured once, built again for the
    requests that send it."""

    @property
    def kinds(self) -> Sequence[int]:
        """Each message's role (``kind_of``)."""
        ...

    @property
    def lengths(self) -> Sequence[int]:
        """Characters of each message's JSON."""
        ...

    def __len__(self) -> int: ...

    def tokens(self, count: Counter) -> tuple[Sequence[int], Mapping[int, int]]:
        """Each message's share of a request's tokens, and, for each one ``shrunk`` cuts, the
        share of the cut one: counted once, now if not yet."""
        ...

    def messages(self, start: int, stop: int) -> Iterator[ChatMessage]:
        """The messages from ``start`` to ``stop``, built again, in order."""
        ...


DEFAULT_WINDOW = 128_000
ANSWER_TOKENS = 2_000
"""What one request's answer is expected to take, for an estimate: about a document."""
MAX_RESERVE = 16_000
MARGIN = 0.12  # providers' tokenizers count differently from ours
RECENT_TURNS = 3
CUT_ABOVE_CHARS = 2_000
KEEP_CHARS = 700
CHARS_PER_TOKEN = 4
"""The cheap estimate, the one of the package: it lets a small request skip the real count,
stands in for a tokenizer where there is none (the built-in writer, whose cap it also
measures), and bounds how much of an answer is read."""

DRAFT_PROMPT = (
    "The conversation above is the first part of a long coding session. Write a draft handoff "
    "document of it, with exactly these Markdown sections, in this order: {sections}. Later "
    "parts of the conversation will be used to update the draft. Be concrete: keep paths, "
    "names, commands and errors exactly as they appear. Answer with the draft alone."
)
UPDATE_OPEN = (
    "The draft handoff document of the coding session so far:\n\n<draft>\n{draft}\n</draft>"
)
UPDATE_PROMPT = (
    "The messages after the draft continue the session. Update the draft with them: keep what "
    "still holds, change what they change, add what they add, in the same {same}. "
    "Answer with the updated draft alone."
)
FINAL_OPEN = (
    "A draft handoff document of the earlier part of this coding session (the conversation "
    "itself is too long to repeat):\n\n<draft>\n{draft}\n</draft>\n\nThe most recent part of "
    "the conversation follows."
)
CONTINUES = "[The conversation continues.]"


def rough_tokens(chars: int) -> int:
    """Tokens in ``chars`` characters of text or JSON, estimated."""
    return -(-chars // CHARS_PER_TOKEN)


class _Rough:
    """Tokens estimated from the JSON's size, for a writer with no tokenizer."""

    def __call__(self, messages: Sequence[ChatMessage]) -> int:
        return rough_tokens(len(dumps(list(messages))))

    def each(self, messages: Sequence[ChatMessage]) -> list[int]:
        return [rough_tokens(len(dumps(m))) for m in messages]

    def later(
        self, messages: Sequence[ChatMessage], batch: bool = False
    ) -> Callable[[], list[int]]:
        found = self.each(messages)
        return lambda: found

    def load(self) -> None:
        """Nothing to load."""


rough_count = _Rough()


def far_under(chars: int, budget: Budget) -> bool:
    """Whether a request of ``chars`` characters of JSON fits ``budget`` so surely, by the rough
    estimate, that it need not be counted."""
    return rough_tokens(chars) < budget.tokens / 2


@dataclass(frozen=True)
class Budget:
    """How many input tokens one request may hold."""

    window: int
    max_output: int | None = None

    @property
    def reserve(self) -> int:
        """Room left for the answer (also the most a draft can take)."""
        return min(MAX_RESERVE, self.max_output or MAX_RESERVE, self.window // 4)

    @property
    def tokens(self) -> int:
        return int(self.window * (1 - MARGIN)) - self.reserve

    def narrowed(self, fraction: float) -> Budget:
        """The same budget with a smaller window (when the provider counts more than we do)."""
        return Budget(int(self.window * fraction), self.max_output)


@dataclass(frozen=True)
class Plan:
    """The requests that hand a conversation off, by its messages' positions."""

    strategy: str
    """``single``, ``shrunk`` or ``chunked``."""
    final: range
    """The conversation of the last request (without the draft and the prompt)."""
    chunks: tuple[range, ...] = ()
    """Older parts to fold into the draft, in order (``chunked`` only)."""
    cuts: Mapping[int, tuple[int, ...]] = field(default_factory=dict)
    """The messages sent cut: for each, the ``keep`` of every ``shrunk`` it is sent through,
    in order."""
    tokens: tuple[int, ...] | None = None
    """The tokens of each part's messages (the chunks', then the final's), where counted."""

    @property
    def requests(self) -> int:
        return len(self.chunks) + 1


def shrunk(message: ChatMessage, keep: int = KEEP_CHARS) -> ChatMessage | None:
    """The message with every long text in it cut to its head and tail, wherever it is (the
    content of any role, a tool call's arguments), and its images dropped; None if nothing
    changes."""
    cut = dict(message)
    content = message.get("content")
    if isinstance(content, list):
        has_image = any(p.get("type") == "image_url" for p in content)
        if has_image or len(text_of(content, "")) > CUT_ABOVE_CHARS:
            parts = [
                IMAGE_LEFT_OUT if p.get("type") == "image_url" else p.get("text", "")
                for p in content
            ]
            cut["content"] = cut_text("\n".join(parts), keep)
    elif isinstance(content, str) and len(content) > CUT_ABOVE_CHARS:
        cut["content"] = cut_text(content, keep)
    calls = message.get("tool_calls")
    if isinstance(calls, list):
        cut_calls = [_cut_call(call, keep) for call in calls]
        if any(new is not old for new, old in zip(cut_calls, calls, strict=True)):
            cut["tool_calls"] = cut_calls
    return cut if cut != message else None


def _cut_call(call: ChatMessage, keep: int) -> ChatMessage:
    """A tool call with its long arguments cut; the arguments stay a JSON object, as providers
    that read them back (Anthropic's tool input) require."""
    function = call.get("function")
    if not isinstance(function, dict):
        return call
    raw = function.get("arguments")
    if not isinstance(raw, str) or len(raw) <= CUT_ABOVE_CHARS:
        return call
    try:
        arguments = parse_line(raw.encode(errors="surrogatepass"))
    except ValueError:
        arguments = None
    cut = dumps(_cut_strings(arguments, keep)).decode() if isinstance(arguments, dict) else ""
    if not cut or len(cut) > 2 * CUT_ABOVE_CHARS + 4 * keep:
        cut = dumps({"arguments (cut)": cut_text(raw, keep)}).decode()
    return {**call, "function": {**function, "arguments": cut}}


def _cut_strings(value: Any, keep: int) -> Any:
    """``value`` with its long strings cut, at any depth (a stack of its own, no recursion)."""
    top: list[Any] = [value]
    stack: list[tuple[Any, list[Any] | dict[Any, Any], Any]] = [(value, top, 0)]
    while stack:
        item, into, key = stack.pop()
        if isinstance(item, str):
            into[key] = cut_text(item, keep) if len(item) > CUT_ABOVE_CHARS else item
        elif isinstance(item, list):
            copy: list[Any] = [None] * len(item)
            into[key] = copy
            stack.extend((member, copy, index) for index, member in enumerate(item))
        elif isinstance(item, dict):
            made: dict[Any, Any] = dict.fromkeys(item)
            into[key] = made
            stack.extend((member, made, name) for name, member in item.items())
        else:
            into[key] = item
    return top[0]


class Bound(NamedTuple):
    """A message longer than ``above`` characters of JSON is cut to ``keep`` before anything
    reads it (masking, counting): it holds far more than a request can send."""

    above: int
    keep: int

    @classmethod
    def within(cls, tokens: int) -> Bound:
        """The bound for requests of ``tokens``: past four times what one can hold, by the
        rough count, a message is cut to a share of it (the one formula of the pre-cut, for
        reading the conversation and for planning it)."""
        return cls(4 * tokens * CHARS_PER_TOKEN, max(200, (tokens // 4) * CHARS_PER_TOKEN // 2))

    @property
    def read_whole(self) -> int:
        """The longest string read whole: a longer one makes its message longer than the
        bound lets through whole, and is read as its head and tail, more of each than the
        bound keeps (so that the request is the same)."""
        return self.above + 200

    def cut(self, message: ChatMessage, length: int) -> ChatMessage | None:
        """``message`` (``length`` characters of JSON) cut, if it is past the bound and cutting
        changes it; else None."""
        return shrunk(message, self.keep) if length > self.above else None


def sent(conversation: Measured, plan: Plan, part: range) -> list[ChatMessage]:
    """The messages of one part of ``plan`` as they are sent: built again, cut where it says."""
    messages: list[ChatMessage] = []
    for index, message in zip(part, conversation.messages(part.start, part.stop), strict=True):
        for keep in plan.cuts.get(index, ()):
            message = shrunk(message, keep) or message
        messages.append(message)
    return messages


class _Versions:
    """The messages as a plan has them so far, by their tokens: most as measured, a few cut
    (built again from the conversation to be cut, then counted). The measured tokens are
    copied only once one changes."""

    def __init__(self, conversation: Measured, count: Counter, tokens: Sequence[int]) -> None:
        self.conversation = conversation
        self.count = count
        self.tokens = tokens
        self._copied: array[int] | None = None
        self.cuts: dict[int, tuple[int, ...]] = {}

    def copy(self) -> _Versions:
        copied = _Versions(self.conversation, self.count, self.tokens)
        copied.cuts = dict(self.cuts)
        self._copied = None  # shared from now on
        return copied

    def _set(self, index: int, tokens: int) -> None:
        if self._copied is None:
            self.tokens = self._copied = array("i", self.tokens)
        self._copied[index] = tokens

    def _built(self, start: int, stop: int) -> Iterator[tuple[int, ChatMessage]]:
        for index, message in zip(
            range(start, stop), self.conversation.messages(start, stop), strict=True
        ):
            for keep in self.cuts.get(index, ()):
                message = shrunk(message, keep) or message
            yield index, message

    def cut(self, start: int, stop: int, keep: int) -> None:
        """Each message from ``start`` to ``stop`` cut (``shrunk``) as it is now."""
        for index, message in self._built(start, stop):
            smaller = shrunk(message, keep)
            if smaller is not None:
                self.cuts[index] = (*self.cuts.get(index, ()), keep)
                self._set(index, self.count.each([smaller])[0])

    def shrink(self, index: int, measured: Mapping[int, int]) -> None:
        """The message at ``index`` cut to ``KEEP_CHARS``: counted already if it is as measured."""
        if index in self.cuts:
            self.cut(index, index + 1, KEEP_CHARS)
        elif index in measured:
            self.cuts[index] = (KEEP_CHARS,)
            self._set(index, measured[index])

    def plan(self, strategy: str) -> Plan:
        whole = range(len(self.tokens))
        return Plan(strategy, whole, (), dict(self.cuts), (sum(self.tokens),))


def _unit_bounds(kinds: Sequence[int]) -> array[int]:
    """Where each unit of messages starts, a unit made so that no boundary falls between a tool
    call and its results; then where the last one ends."""
    bounds = array("i")
    for index, kind in enumerate(kinds):
        if kind != TOOL or not bounds:
            bounds.append(index)
    bounds.append(len(kinds))
    return bounds


def _recent_start(bounds: Sequence[int], kinds: Sequence[int]) -> int:
    """Index of the first unit of the last few turns (a turn starts at a user message)."""
    found = 0
    for unit in range(len(bounds) - 2, -1, -1):
        if kinds[bounds[unit]] == USER:
            found += 1
            if found == RECENT_TURNS:
                return unit
    return 0


def make_plan(conversation: Measured, prompt: ChatMessage, budget: Budget, count: Counter) -> Plan:
    """The requests that hand off ``conversation`` within ``budget`` (see the module's doc)."""
    total = len(conversation)
    if far_under(2 + sum(conversation.lengths) + total + len(dumps(prompt)), budget):
        return Plan("single", range(total))  # far under: no need to count
    overhead = count([])
    room = budget.tokens - count([prompt])
    bound = Bound.within(room)
    keep = bound.keep
    tokens, measured = conversation.tokens(count)
    now = _Versions(conversation, count, tokens)
    # Far too long even by the rough count: cut first, as sent.
    for index, length in enumerate(conversation.lengths):
        if length > bound.above:
            now.cut(index, index + 1, keep)
    if total * overhead + sum(now.tokens) <= room:
        return now.plan("single")

    # Any one message that could never fit is cut first, wherever it is, and stays cut in
    # every later stage.
    for index in range(total):
        if overhead + now.tokens[index] > room // 2:
            now.cut(index, index + 1, keep)
    fitted = now.copy()

    bounds = _unit_bounds(conversation.kinds)
    recent = _recent_start(bounds, conversation.kinds)
    older = bounds[recent]
    size = total * overhead + sum(now.tokens)  # kept up to date: summing again is quadratic
    for index in range(older):  # oldest first; the recent turns stay verbatim
        if size <= room:
            return now.plan("shrunk")
        before = now.tokens[index]
        now.shrink(index, measured)
        size += now.tokens[index] - before
    if size <= room:
        return now.plan("shrunk")
    return _chunked(fitted, bounds, recent, budget, room)


def _chunked(now: _Versions, bounds: Sequence[int], recent: int, budget: Budget, room: int) -> Plan:
    """Fold the older part in chunks; keep as many recent turns as fit beside the draft."""
    count = now.count
    overhead = count([])
    sizes = array("i", (overhead + sum(now.tokens[a:b]) for a, b in pairwise(bounds)))
    final_room = room - budget.reserve - count([{"role": "user", "content": FINAL_OPEN}])
    start = len(sizes)
    used = 0
    while start > 0 and used + sizes[start - 1] <= final_room // 2:
        start -= 1
        used += sizes[start]
        if start <= recent:
            break
    chunk_room = room - budget.reserve - count([{"role": "user", "content": UPDATE_OPEN}])
    chunks: list[range] = []
    tokens: list[int] = []
    first = current = current_size = 0  # the chunk being filled: where it starts, its sizes
    for unit in range(start):
        begin, end = bounds[unit], bounds[unit + 1]
        size = sizes[unit]
        if size > chunk_room:  # one turn larger than a chunk: its long outputs are cut
            now.cut(begin, end, _keep_for(chunk_room, end - begin))
            size = overhead + sum(now.tokens[begin:end])
        if begin > first and current_size + size > chunk_room:
            chunks.append(range(first, begin))
            tokens.append(current)
            first, current, current_size = begin, 0, 0
        current += size - overhead
        current_size += size
    if bounds[start] > first:
        chunks.append(range(first, bounds[start]))
        tokens.append(current)
    final = range(bounds[start], len(now.tokens))
    tokens.append(sum(now.tokens[final.start :]))
    return Plan("chunked", final, tuple(chunks), dict(now.cuts), tuple(tokens))


def _keep_for(room: int, messages: int) -> int:
    return max(200, room * CHARS_PER_TOKEN // (2 * max(1, messages)) - 100)


def _fold_frame(
    first: ChatMessage, draft: str | None, sections: tuple[str, ...]
) -> tuple[list[ChatMessage], list[ChatMessage]]:
    """What a fold request sends before and after its chunk, which begins with ``first``: the
    draft asked for in the document's ``sections``."""
    head: list[ChatMessage] = (
        [] if first.get("role") == "user" else [{"role": "user", "content": CONTINUES}]
    )
    if draft is None:
        asked = DRAFT_PROMPT.format(sections=section_list(sections))
        return head, [{"role": "user", "content": asked}]
    same = "six sections" if sections == SECTIONS else f"sections ({section_list(sections)})"
    return (
        [{"role": "user", "content": UPDATE_OPEN.format(draft=draft)}, *head],
        [{"role": "user", "content": UPDATE_PROMPT.format(same=same)}],
    )


def fold_request(
    chunk: list[ChatMessage], draft: str | None, sections: tuple[str, ...] = SECTIONS
) -> list[ChatMessage]:
    """The request that starts the draft from the first chunk, or updates it with the next."""
    head, tail = _fold_frame(chunk[0], draft, sections)
    return [*head, *chunk, *tail]


def _final_head(first: ChatMessage | None, draft: str | None) -> list[ChatMessage]:
    """What the last request sends before its conversation, which begins with ``first``."""
    if draft is None:
        return []
    head = [{"role": "user", "content": FINAL_OPEN.format(draft=draft)}]
    if first is not None and first.get("role") != "user":
        head.append({"role": "user", "content": CONTINUES})
    return head


def final_request(
    final: list[ChatMessage], prompt: ChatMessage, draft: str | None
) -> list[ChatMessage]:
    """The last request: the draft (if any), the recent conversation, the handoff prompt."""
    return [*_final_head(final[0] if final else None, draft), *final, prompt]


class Sized(NamedTuple):
    """A request of a plan: its tokens, and how to build its messages."""

    tokens: int
    build: Callable[[], list[ChatMessage]]


def sized_requests(
    plan: Plan,
    prompt: ChatMessage,
    count: Counter,
    draft_tokens: int,
    conversation: Measured,
    sections: tuple[str, ...] = SECTIONS,
) -> list[Sized]:
    """Each request of the plan with its size, drafts standing in as placeholders: counted from
    the plan's numbers where it has them, none of its messages built until asked for."""
    placeholder = "[the draft written by the previous request]"
    requests: list[Sized] = []
    for index, part in enumerate(plan.chunks):
        draft = None if index == 0 else placeholder
        head, tail = _fold_frame(_first(conversation, part), draft, sections)
        assert plan.tokens is not None, "a chunked plan is counted"
        tokens = count([*head, *tail]) + plan.tokens[index] + (draft_tokens if index else 0)
        requests.append(Sized(tokens, _folded(conversation, plan, part, draft, sections)))
    draft = placeholder if plan.chunks else None
    build = _finished(conversation, plan, prompt, draft)
    if plan.tokens is None:  # far under the window: small, counted as built
        tokens = count(build())
    else:
        first = _first(conversation, plan.final) if plan.final else None
        tokens = count([*_final_head(first, draft), prompt]) + plan.tokens[-1]
    requests.append(Sized(tokens + (draft_tokens if plan.chunks else 0), build))
    return requests


def _first(conversation: Measured, part: range) -> ChatMessage:
    """A stand-in for the first message of ``part``, as the frames of a request read it."""
    return {"role": "user" if conversation.kinds[part.start] == USER else "assistant"}


def _folded(
    conversation: Measured, plan: Plan, part: range, draft: str | None, sections: tuple[str, ...]
) -> Callable[[], list[ChatMessage]]:
    return lambda: fold_request(sent(conversation, plan, part), draft, sections)


def _finished(
    conversation: Measured, plan: Plan, prompt: ChatMessage, draft: str | None
) -> Callable[[], list[ChatMessage]]:
    return lambda: final_request(sent(conversation, plan, plan.final), prompt, draft)
