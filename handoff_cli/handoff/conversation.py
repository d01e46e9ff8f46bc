"""The conversation a handoff request sends: built when it is needed, the same each time.

The context's messages as chat messages (``prompt.chat_steps``), each cut first if it is far
longer than any request can send (``plan.Bound``), then masked (``redact``). A long session's
messages, parsed, are several times its size, and no request sends more than a window of them.
So they are measured once, in order, a batch at a time (which numbers each secret as masking
them all at once does), and kept as numbers only: each message's role, JSON size and tokens,
which are what a plan is made of (``plan.Measured``). The messages of a request are built again
from the session file when it is sent: cut where they were cut, and masked where they were
masked, their secrets known by then by their numbers.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from itertools import islice
from typing import NamedTuple, TypeVar

import orjson

from handoff_cli.agents.context import Context
from handoff_cli.handoff.plan import Bound, Budget, Counter, far_under, kind_of, shrunk
from handoff_cli.handoff.prompt import ChatMessage, chat_steps
from handoff_cli.handoff.redact import Redactor
from handoff_cli.sessions.jsonl import dumps

BATCH_CHARS = 1 << 17
"""Characters of JSON masked and counted at once: a scan of the masking rules and a round of
the counting threads cost much a call, and little a character."""
KEPT_FROM = 1 << 20
"""Bytes of entries from which the messages of a step, if they are a quarter of that or less,
are kept as sent rather than read again."""
HELD_CHARS = 1 << 21
"""The most JSON held while it is not yet known whether the conversation is to be counted
(past it, what was held is counted later, built again)."""
COUNTING_AHEAD = 2
"""Batches being counted on the counting threads while the next ones are built and masked
(tiktoken encodes outside Python's lock, so both go on at once, on two cores)."""


T = TypeVar("T")

Step = tuple[int, int, list[ChatMessage]]
"""Where a step of the context starts and ends, and the chat messages it makes
(``prompt.chat_steps``)."""


class _Kept(NamedTuple):
    """A step made from long lines into far less: its messages as sent, and where it ends."""

    end: int
    messages: list[ChatMessage]


class Conversation:
    """The chat messages of a handoff, measured (``measured``), and built again on demand
    (``messages``); iterating over it builds them all, in order."""

    def __init__(
        self,
        context: Context | None,
        longest: int,
        bound: Bound | None,
        redactor: Redactor | None,
    ) -> None:
        self._context = context
        self._longest = longest
        """Strings up to this long are read whole (``Context.messages``)."""
        self._bound = bound
        self._redactor = redactor
        self.kinds = bytearray()
        self.lengths: array[int] = array("q")
        self._steps: array[int] = array("i")
        """For each message, where in the context the step that makes it starts."""
        self._kept: dict[int, _Kept] = {}
        """By where they start."""
        self._cut: set[int] = set()
        self._masked: set[int] = set()
        self._tokens: array[int] = array("i")
        """The messages' tokens, from ``_counted_from`` on."""
        self._counted_from = 0
        self._shrunk: dict[int, int] = {}
        self._counting: deque[tuple[list[ChatMessage | None], Callable[[], list[int]]]] = deque()
        """The batches whose counts are not taken yet, in order: each message's cut version
        (None: none), and the counts of the messages then of their cut versions."""

    @classmethod
    def empty(cls) -> Conversation:
        """No messages: the built-in writer's, which reads the facts alone."""
        return cls(None, 0, None, None)

    @classmethod
    def measured(
        cls,
        context: Context,
        longest: int,
        bound: Bound,
        redactor: Redactor | None,
        count: Counter,
        budget: Budget,
    ) -> Conversation:
        """The conversation of ``context``, measured: counted as it is built once it is
        certain not to be far under ``budget`` (``plan.far_under``), else not yet."""
        conversation = cls(context, longest, bound, redactor)
        conversation._measure(count, budget)
        return conversation

    def __len__(self) -> int:
        return len(self.kinds)

    def __iter__(self) -> Iterator[ChatMessage]:
        return self.messages()

    def messages(self, start: int = 0, stop: int | None = None) -> Iterator[ChatMessage]:
        """The messages from ``start`` to ``stop`` (the end), built again as they were sent."""
        stop = len(self) if stop is None else stop
        if start >= stop:
            return
        position = self._steps[start]
        index = start
        while index and self._steps[index - 1] == position:  # the first of its step
            index -= 1
        for at, _, step in self._made(position):
            kept = at in self._kept
            for message in step:
                if index >= stop:
                    return
                if index >= start:
                    yield message if kept else self._sent(index, message)
                index += 1

    def tokens(self, count: Counter) -> tuple[Sequence[int], Mapping[int, int]]:
        """Each message's share of a request's tokens, and, for each message ``plan.shrunk``
        cuts, the share of the cut one; what was not counted yet is counted now."""
        if self._counted_from:
            missing = self._counted_from
            counted, self._tokens = self._tokens, array("i")
            self._counted_from = 0
            for batch in _batches((m, json_size(m)) for m in self.messages(0, missing)):
                self._count([m for m, _ in batch], count)
            self._counted()
            self._tokens.extend(counted)
        return self._tokens, self._shrunk

    # --- the first time ------------------------------------------------------------------

    def _made(self, position: int) -> Iterator[Step]:
        """The steps the context makes from ``position`` on: a kept one as it was sent, its
        entries not read again."""
        assert self._context is not None, "only a conversation with messages is built"
        kept = sorted(self._kept)
        while True:
            later = bisect_left(kept, position)
            stop = kept[later] if later < len(kept) else None
            if stop == position:
                sent = self._kept[position]
                yield position, sent.end, sent.messages
                position = sent.end
                continue
            # Up to the next kept step, which the steps before it never reach into.
            messages = self._context.messages(self._longest, position)
            made = chat_steps(messages if stop is None else islice(messages, stop - position))
            for at, end, step in made:
                yield position + at, position + end, step
            if stop is None:
                return
            position = stop

    def _sent(self, index: int, message: ChatMessage) -> ChatMessage:
        """The message at ``index``, made again, as it was sent."""
        if index in self._cut:
            assert self._bound is not None, "cut only by a bound"
            message = shrunk(message, self._bound.keep) or message
        if index in self._masked:
            assert self._redactor is not None, "masked only by a redactor"
            masked: ChatMessage = self._redactor.value(message)
            return masked
        return message

    def _measure(self, count: Counter, budget: Budget) -> None:
        size = 1  # the JSON of the messages so far as a list: "[", and a comma after each
        counting = False
        held: list[ChatMessage] | None = []  # measured, not counted yet
        held_chars = 0
        for batch in _batches(self._sized(self._made(0))):
            measured = self._measured(batch)
            chars = sum(self.lengths[-len(measured) :]) if measured else 0
            size += chars + len(measured)
            if counting:
                self._count(measured, count)
                continue
            if held is not None:
                held += measured
                held_chars += chars
                if held_chars > HELD_CHARS:
                    held = None
            if not far_under(size, budget):
                counting = True
                if held is None:
                    self._counted_from = len(self)
                else:
                    self._count(held, count)
                held = None
        if not counting:
            self._counted_from = len(self)
        self._counted()

    @staticmethod
    def _sized(steps: Iterable[Step]) -> Iterator[tuple[tuple[Step, list[int]], int]]:
        """Each step with the JSON size of each of its messages, and their sum."""
        for step in steps:
            lengths = [json_size(m) for m in step[2]]
            yield (step, lengths), sum(lengths)

    def _measured(self, batch: list[tuple[tuple[Step, list[int]], int]]) -> list[ChatMessage]:
        """The batch's messages as they are sent: cut where they are past the bound, and
        masked; their roles, sizes and steps noted, and a step made from long lines into far
        less kept."""
        assert self._bound is not None and self._context is not None, "measured in full"
        first = len(self)
        messages: list[ChatMessage] = []
        lengths: list[int] = []
        positions: list[int] = []
        kept: list[tuple[int, int, int, int]] = []  # a step's start, end, first index, messages
        for (at, end, step), sizes in (item for item, _ in batch):
            for message, length in zip(step, sizes, strict=True):
                smaller = self._bound.cut(message, length)
                if smaller is not None:
                    self._cut.add(first + len(messages))
                    message, length = smaller, json_size(smaller)
                messages.append(message)
                lengths.append(length)
                positions.append(at)
            read = self._context.read_size(at, end)
            if read >= KEPT_FROM and 4 * sum(lengths[len(lengths) - len(step) :]) <= read:
                kept.append((at, end, len(messages) - len(step), len(step)))
        if self._redactor is not None:
            masked = self._redactor.value(messages)
            for offset, (before, after) in enumerate(zip(messages, masked, strict=True)):
                if after != before:
                    self._masked.add(first + offset)
                    lengths[offset] = json_size(after)
            messages = masked
        for at, end, index, count in kept:
            self._kept[at] = _Kept(end, messages[index : index + count])
        for message, length, position in zip(messages, lengths, positions, strict=True):
            self.kinds.append(kind_of(message))
            self._steps.append(position)
            self.lengths.append(length)
        return messages

    def _count(self, messages: list[ChatMessage], count: Counter) -> None:
        """Start counting ``messages``, the next ones not counted yet, and their cut versions;
        the counts of batches ``COUNTING_AHEAD`` back are taken meanwhile (``_counted``)."""
        cuts = [shrunk(m) for m in messages]
        smaller = [m for m in cuts if m is not None]
        self._counting.append((cuts, count.later([*messages, *smaller], batch=True)))
        while len(self._counting) > COUNTING_AHEAD:
            self._take_counts()

    def _counted(self) -> None:
        """Every count started taken."""
        while self._counting:
            self._take_counts()

    def _take_counts(self) -> None:
        """The counts of the oldest batch started: its messages', then its cut versions'."""
        cuts, counts = self._counting.popleft()
        found = counts()
        first = self._counted_from + len(self._tokens)
        self._tokens.extend(found[: len(cuts)])
        rest = iter(found[len(cuts) :])
        for index, cut in enumerate(cuts, first):
            if cut is not None:
                self._shrunk[index] = next(rest)


def json_size(message: ChatMessage) -> int:
    """Characters of ``message``'s JSON as ``dumps`` writes it, at a tenth of the cost. A chat
    message holds strings, lists, dicts and nulls, never a number (``prompt.chat_steps``, and
    its cuts and masks): orjson's own text is the same then, but where only ``dumps`` can
    write it (a lone surrogate kept from a fallback parse)."""
    try:
        return len(orjson.dumps(message))
    except TypeError:
        return len(dumps(message))


def _batches(items: Iterable[tuple[T, int]]) -> Iterator[list[tuple[T, int]]]:
    """``items`` (each with its size in characters) in lists of about ``BATCH_CHARS``."""
    batch: list[tuple[T, int]] = []
    chars = 0
    for item in items:
        batch.append(item)
        chars += item[1]
        if chars >= BATCH_CHARS:
            yield batch
            batch, chars = [], 0
    if batch:
        yield batch
