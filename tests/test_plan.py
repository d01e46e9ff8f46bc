"""Fitting the handoff into the model's window: single, shrunk, chunked."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from handoff_cli.handoff.plan import (
    Budget,
    Plan,
    final_request,
    fold_request,
    kind_of,
    make_plan,
    sent,
    shrunk,
    sized_requests,
)
from handoff_cli.handoff.prompt import ChatMessage, handoff_prompt
from handoff_cli.llm.tokens import Counter
from handoff_cli.sessions.jsonl import dumps

PROMPT = {"role": "user", "content": handoff_prompt()}

count = Counter(lambda message: (len(json.dumps(message)) + 3) // 4)
"""A deterministic stand-in for a tokenizer: 4 characters of JSON a token."""


class Listed:
    """A conversation held as a list, as the planner reads one (``plan.Measured``)."""

    def __init__(self, messages: list[ChatMessage]) -> None:
        self.items = messages
        self.kinds = bytes(kind_of(m) for m in messages)
        self.lengths = [len(dumps(m)) for m in messages]

    def __len__(self) -> int:
        return len(self.items)

    def tokens(self, counter: Any) -> tuple[Sequence[int], Mapping[int, int]]:
        cut = {i: s for i, m in enumerate(self.items) if (s := shrunk(m)) is not None}
        return counter.each(self.items), {i: counter.each([s])[0] for i, s in cut.items()}

    def messages(self, start: int, stop: int) -> Iterator[ChatMessage]:
        return iter(self.items[start:stop])


def planned(messages: list[ChatMessage], budget: Budget) -> tuple[Plan, Listed]:
    conversation = Listed(messages)
    return make_plan(conversation, PROMPT, budget, count), conversation


def turn(number: int, output_chars: int) -> list[dict[str, Any]]:
    call = f"call{number}"
    return [
        {"role": "user", "content": f"step {number}: please run the tests"},
        {
            "role": "assistant",
            "content": f"running {number}",
            "tool_calls": [
                {"id": call, "type": "function", "function": {"name": "bash", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": call, "content": f"out{number} " + "x" * output_chars},
    ]


def conversation(turns: int, output_chars: int) -> list[dict[str, Any]]:
    return [m for n in range(turns) for m in turn(n, output_chars)]


def requests_of(plan: Plan, listed: Listed, draft: str = "D" * 400) -> list[list[dict[str, Any]]]:
    """Every request the plan makes, with a draft of a given size standing in."""
    drafts = [None] + [draft] * len(plan.chunks)
    folds = [fold_request(sent(listed, plan, c), drafts[i]) for i, c in enumerate(plan.chunks)]
    final = sent(listed, plan, plan.final)
    return [*folds, final_request(final, PROMPT, draft if plan.chunks else None)]


def sent_all(plan: Plan, listed: Listed) -> list[ChatMessage]:
    """Every message the plan sends, in order."""
    return [m for part in [*plan.chunks, plan.final] for m in sent(listed, plan, part)]


def test_small_request_is_sent_whole() -> None:
    messages = conversation(3, 100)
    plan, listed = planned(messages, Budget(128_000))
    assert (plan.strategy, plan.chunks, plan.cuts) == ("single", (), {})
    assert sent(listed, plan, plan.final) == messages


def test_long_old_outputs_are_cut_first_and_recent_turns_stay() -> None:
    messages = conversation(12, 4_000)
    budget = Budget(12_000)
    assert count([*messages, PROMPT]) > budget.tokens
    plan, listed = planned(messages, budget)
    assert plan.strategy == "shrunk"
    final = sent(listed, plan, plan.final)
    assert count([*final, PROMPT]) <= budget.tokens
    assert "characters cut" in final[2]["content"]  # the oldest output, head and tail kept
    assert final[2]["content"].startswith("out0 ")
    assert final[-9:] == messages[-9:]  # the last three turns, verbatim


def test_images_are_dropped_when_shrinking() -> None:
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "A" * 40_000}}
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "see"}, image]},
        *conversation(3, 100),
    ]
    plan, listed = planned(messages, Budget(12_000))
    assert plan.strategy == "shrunk"
    assert "left out for size" in sent(listed, plan, plan.final)[0]["content"]


def test_ten_times_the_window_is_folded_in_chunks_that_fit() -> None:
    budget = Budget(4_000)
    messages = conversation(100, 1_500)
    own = count(messages)
    assert own > 10 * budget.window
    plan, listed = planned(messages, budget)
    assert plan.strategy == "chunked"
    # The largest possible draft:
    requests = requests_of(plan, listed, draft="D" * 4 * budget.reserve)
    assert all(count(r) <= budget.tokens + budget.reserve for r in requests)
    assert all(count(r) <= budget.window for r in requests)
    # Each part of the conversation is sent once: no quadratic re-sending.
    assert sum(count(r) for r in requests_of(plan, listed)) <= 1.3 * own
    # Never a tool result without its call right before it, in any request.
    for request in requests:
        for index, message in enumerate(request):
            if message["role"] == "tool":
                before = request[index - 1]
                assert before["role"] in ("assistant", "tool")
    # Everything is in some request, in order.
    assert sent_all(plan, listed) == messages


def test_a_message_larger_than_the_window_is_cut_not_fatal() -> None:
    budget = Budget(8_000)
    messages = [*conversation(2, 100), {"role": "user", "content": "paste: " + "y" * 200_000}]
    plan, listed = planned(messages, budget)
    assert all(count(r) <= budget.window for r in requests_of(plan, listed))
    assert "characters cut" in sent(listed, plan, plan.final)[-1]["content"]


def test_sized_requests_lists_each_request_with_its_size() -> None:
    budget = Budget(8_000)
    plan, listed = planned(conversation(40, 1_500), budget)
    described = sized_requests(plan, PROMPT, count, budget.reserve, listed)
    assert len(described) == plan.requests
    assert described[-1].build()[-1] == PROMPT
    assert all(r.tokens <= budget.window for r in described)
    # Counted from the plan's numbers, as counting each request whole would count it.
    requests = requests_of(plan, listed, draft="[the draft written by the previous request]")
    drafts = [budget.reserve * (i > 0) for i in range(len(requests))]
    assert [r.tokens for r in described] == [
        count(r) + d for r, d in zip(requests, drafts, strict=True)
    ]
    assert [r.build() for r in described] == requests


def test_whatever_is_too_long_is_cut_wherever_it_is() -> None:
    """A 1.2 MB tool-call argument or assistant text: cut, as arguments that stay a JSON
    object, and the cuts kept when the plan goes on to fold chunks."""
    huge_call = {
        "role": "assistant",
        "content": "writing the fixture " + "y" * 300_000,
        "tool_calls": [
            {
                "id": "w1",
                "type": "function",
                "function": {
                    "name": "write",
                    "arguments": json.dumps({"path": "big.json", "content": "z" * 1_200_000}),
                },
            }
        ],
    }
    messages = [
        *conversation(4, 100),
        huge_call,
        {"role": "tool", "tool_call_id": "w1", "content": "ok"},
        *conversation(40, 3_000),
    ]
    budget = Budget(12_000)
    plan, listed = planned(messages, budget)
    for request in requests_of(plan, listed):
        assert count(request) <= budget.window
    every = sent_all(plan, listed)
    cut = next(m for m in every if m.get("tool_calls") and m["tool_calls"][0]["id"] == "w1")
    arguments = json.loads(cut["tool_calls"][0]["function"]["arguments"])
    assert arguments["path"] == "big.json" and "characters cut" in arguments["content"]
    assert "characters cut" in cut["content"]
