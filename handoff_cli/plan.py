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
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .document import SECTION_LIST
from .jsonl import dumps, parse_line
from .prompt import IMAGE_LEFT_OUT, ChatMessage
from .text import cut_text, text_of

Counter = Callable[[Sequence[ChatMessage]], int]

DEFAULT_WINDOW = 128_000
MAX_RESERVE = 16_000
MARGIN = 0.12  # providers' tokenizers count differently from ours
RECENT_TURNS = 3
CUT_ABOVE_CHARS = 2_000
KEEP_CHARS = 700
CHARS_PER_TOKEN = 4
"""The cheap estimate: it lets a small request skip the real count, and stands in for a
tokenizer where there is none (the built-in writer)."""

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
    "still holds, change what they change, add what they add, in the same six sections. "
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

    def cut(self, fraction: float) -> Budget:
        """The same budget with a smaller window (when the provider counts more than we do)."""
        return Budget(int(self.window * fraction), self.max_output)


@dataclass
class Plan:
    strategy: str
    """``single``, ``shrunk`` or ``chunked``."""
    final: list[ChatMessage]
    """The conversation of the last request (without the draft and the prompt)."""
    chunks: list[list[ChatMessage]] = field(default_factory=list)
    """Older parts to fold into the draft, in order (``chunked`` only)."""

    @property
    def requests(self) -> int:
        return len(self.chunks) + 1


def _shrunk(message: ChatMessage, keep: int = KEEP_CHARS) -> ChatMessage | None:
    """The message with every long text in it cut to its head and tail, wherever it is (the
    content of any role, a tool call's arguments), and its images dropped; None if nothing
    changes."""
    shrunk = dict(message)
    content = message.get("content")
    if isinstance(content, list):
        has_image = any(p.get("type") == "image_url" for p in content)
        if has_image or len(text_of(content, "")) > CUT_ABOVE_CHARS:
            parts = [
                IMAGE_LEFT_OUT if p.get("type") == "image_url" else p.get("text", "")
                for p in content
            ]
            shrunk["content"] = cut_text("\n".join(parts), keep)
    elif isinstance(content, str) and len(content) > CUT_ABOVE_CHARS:
        shrunk["content"] = cut_text(content, keep)
    calls = message.get("tool_calls")
    if isinstance(calls, list):
        cut_calls = [_cut_call(call, keep) for call in calls]
        if any(new is not old for new, old in zip(cut_calls, calls, strict=True)):
            shrunk["tool_calls"] = cut_calls
    return shrunk if shrunk != message else None


def precut(messages: Sequence[ChatMessage], above: int, keep: int) -> list[ChatMessage]:
    """The messages, each one longer than ``above`` characters of JSON cut (``_shrunk``):
    cheap, so that nothing after it (masking, counting) reads text that cannot be sent."""
    return [(_shrunk(m, keep) or m) if len(dumps(m)) > above else m for m in messages]


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


def _units(messages: Sequence[ChatMessage]) -> list[list[ChatMessage]]:
    """Messages grouped so that no boundary falls between a tool call and its results."""
    units: list[list[ChatMessage]] = []
    for message in messages:
        if message.get("role") == "tool" and units:
            units[-1].append(message)
        else:
            units.append([message])
    return units


def _recent_start(units: list[list[ChatMessage]]) -> int:
    """Index of the first unit of the last few turns (a turn starts at a user message)."""
    starts = [i for i, unit in enumerate(units) if unit[0].get("role") == "user"]
    return starts[-RECENT_TURNS] if len(starts) >= RECENT_TURNS else 0


def make_plan(
    conversation: Sequence[ChatMessage],
    prompt: ChatMessage,
    budget: Budget,
    count: Counter,
) -> Plan:
    """The requests that hand off ``conversation`` within ``budget`` (see the module's doc)."""
    messages = list(conversation)
    if rough_tokens(len(dumps([*messages, prompt]))) < budget.tokens / 2:
        return Plan("single", messages)  # far under: no need to count
    room = budget.tokens - count([prompt])
    keep = max(200, (room // 4) * CHARS_PER_TOKEN // 2)
    # Far too long even by the rough count: cut before a tokenizer reads all of it.
    messages = precut(messages, 4 * room * CHARS_PER_TOKEN, keep)
    count(messages)  # all at once first: a counter may count many faster together (ours does)
    sizes = [count([m]) for m in messages]
    if sum(sizes) <= room:
        return Plan("single", messages)

    # Any one message that could never fit is cut first, wherever it is, and stays cut in
    # every later stage.
    for index, size in enumerate(sizes):
        if size > room // 2:
            messages[index] = _shrunk(messages[index], keep) or messages[index]
            sizes[index] = count([messages[index]])
    fitted = list(messages)

    units = _units(messages)
    older = sum(len(u) for u in units[: _recent_start(units)])
    total = sum(sizes)  # kept up to date: summing again at each step is quadratic
    for index in range(older):  # oldest first; the recent turns stay verbatim
        if total <= room:
            return Plan("shrunk", messages)
        smaller = _shrunk(messages[index])
        if smaller is not None:
            messages[index] = smaller
            size = count([smaller])
            total += size - sizes[index]
            sizes[index] = size
    if total <= room:
        return Plan("shrunk", messages)
    return _chunked(fitted, budget, count, room)


def _chunked(messages: list[ChatMessage], budget: Budget, count: Counter, room: int) -> Plan:
    """Fold the older part in chunks; keep as many recent turns as fit beside the draft."""
    units = _units(messages)
    sizes = [count(unit) for unit in units]
    final_room = room - budget.reserve - count([{"role": "user", "content": FINAL_OPEN}])
    start = len(units)
    used = 0
    recent_floor = _recent_start(units)
    while start > 0 and used + sizes[start - 1] <= final_room // 2:
        start -= 1
        used += sizes[start]
        if start <= recent_floor:
            break
    chunk_room = room - budget.reserve - count([{"role": "user", "content": UPDATE_OPEN}])
    chunks: list[list[ChatMessage]] = []
    current: list[ChatMessage] = []
    current_size = 0
    for unit, size in zip(units[:start], sizes[:start], strict=True):
        if size > chunk_room:  # one turn larger than a chunk: its long outputs are cut
            unit = [_shrunk(m, _keep_for(chunk_room, len(unit))) or m for m in unit]
            size = count(unit)
        if current and current_size + size > chunk_room:
            chunks.append(current)
            current, current_size = [], 0
        current.extend(unit)
        current_size += size
    if current:
        chunks.append(current)
    final = [m for unit in units[start:] for m in unit]
    return Plan("chunked", final, chunks)


def _keep_for(room: int, messages: int) -> int:
    return max(200, room * CHARS_PER_TOKEN // (2 * max(1, messages)) - 100)


def fold_request(chunk: list[ChatMessage], draft: str | None) -> list[ChatMessage]:
    """The request that starts the draft from the first chunk, or updates it with the next."""
    body = (
        chunk
        if chunk[0].get("role") == "user"
        else [{"role": "user", "content": CONTINUES}, *chunk]
    )
    if draft is None:
        return [*body, {"role": "user", "content": DRAFT_PROMPT.format(sections=SECTION_LIST)}]
    return [
        {"role": "user", "content": UPDATE_OPEN.format(draft=draft)},
        *body,
        {"role": "user", "content": UPDATE_PROMPT},
    ]


def final_request(plan: Plan, prompt: ChatMessage, draft: str | None) -> list[ChatMessage]:
    """The last request: the draft (if any), the recent conversation, the handoff prompt."""
    head: list[ChatMessage] = []
    if draft is not None:
        head = [{"role": "user", "content": FINAL_OPEN.format(draft=draft)}]
        if plan.final and plan.final[0].get("role") != "user":
            head.append({"role": "user", "content": CONTINUES})
    return [*head, *plan.final, prompt]


def sized_requests(
    plan: Plan, prompt: ChatMessage, count: Counter, draft_tokens: int
) -> list[dict[str, Any]]:
    """Each request of the plan with its size, drafts standing in as placeholders."""
    placeholder = "[the draft written by the previous request]"
    requests: list[list[ChatMessage]] = []
    for index, chunk in enumerate(plan.chunks):
        requests.append(fold_request(chunk, None if index == 0 else placeholder))
    requests.append(final_request(plan, prompt, placeholder if plan.chunks else None))
    extra = [draft_tokens if (i > 0 and plan.chunks) else 0 for i in range(len(requests))]
    return [{"tokens": count(r) + e, "messages": r} for r, e in zip(requests, extra, strict=True)]
