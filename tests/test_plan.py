"""Fitting the handoff into the model's window: single, shrunk, chunked."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from handoff_cli.plan import (
    Budget,
    Plan,
    final_request,
    fold_request,
    make_plan,
    sized_requests,
)
from handoff_cli.prompt import handoff_prompt

PROMPT = {"role": "user", "content": handoff_prompt()}


def count(messages: Sequence[dict[str, Any]]) -> int:
    """A deterministic stand-in for a tokenizer: 4 characters a token."""
    return (len(json.dumps(list(messages))) + 3) // 4


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


def requests_of(plan: Plan, draft: str = "D" * 400) -> list[list[dict[str, Any]]]:
    """Every request the plan makes, with a draft of a given size standing in."""
    drafts = [None] + [draft] * len(plan.chunks)
    folds = [fold_request(chunk, drafts[i]) for i, chunk in enumerate(plan.chunks)]
    return [*folds, final_request(plan, PROMPT, draft if plan.chunks else None)]


def test_small_request_is_sent_whole() -> None:
    messages = conversation(3, 100)
    plan = make_plan(messages, PROMPT, Budget(128_000), count)
    assert (plan.strategy, plan.final, plan.chunks) == ("single", messages, [])


def test_long_old_outputs_are_cut_first_and_recent_turns_stay() -> None:
    messages = conversation(12, 4_000)
    budget = Budget(12_000)
    assert count([*messages, PROMPT]) > budget.tokens
    plan = make_plan(messages, PROMPT, budget, count)
    assert plan.strategy == "shrunk"
    assert count([*plan.final, PROMPT]) <= budget.tokens
    assert "characters cut" in plan.final[2]["content"]  # the oldest output, head and tail kept
    assert plan.final[2]["content"].startswith("out0 ")
    assert plan.final[-9:] == messages[-9:]  # the last three turns, verbatim


def test_images_are_dropped_when_shrinking() -> None:
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "A" * 40_000}}
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "see"}, image]},
        *conversation(3, 100),
    ]
    plan = make_plan(messages, PROMPT, Budget(12_000), count)
    assert plan.strategy == "shrunk"
    assert "left out for size" in plan.final[0]["content"]


def test_ten_times_the_window_is_folded_in_chunks_that_fit() -> None:
    budget = Budget(4_000)
    messages = conversation(100, 1_500)
    own = count(messages)
    assert own > 10 * budget.window
    plan = make_plan(messages, PROMPT, budget, count)
    assert plan.strategy == "chunked"
    requests = requests_of(plan, draft="D" * 4 * budget.reserve)  # the largest possible draft
    assert all(count(r) <= budget.tokens + budget.reserve for r in requests)
    assert all(count(r) <= budget.window for r in requests)
    # Each part of the conversation is sent once: no quadratic re-sending.
    sent = sum(count(r) for r in requests_of(plan))
    assert sent <= 1.3 * own
    # Never a tool result without its call right before it, in any request.
    for request in requests:
        for index, message in enumerate(request):
            if message["role"] == "tool":
                before = request[index - 1]
                assert before["role"] in ("assistant", "tool")
    # Everything is in some request, in order.
    seen = [m for chunk in plan.chunks for m in chunk] + plan.final
    assert seen == messages


def test_a_message_larger_than_the_window_is_cut_not_fatal() -> None:
    budget = Budget(8_000)
    messages = [*conversation(2, 100), {"role": "user", "content": "paste: " + "y" * 200_000}]
    plan = make_plan(messages, PROMPT, budget, count)
    assert all(count(r) <= budget.window for r in requests_of(plan))
    assert "characters cut" in plan.final[-1]["content"]


def test_sized_requests_lists_each_request_with_its_size() -> None:
    budget = Budget(8_000)
    plan = make_plan(conversation(40, 1_500), PROMPT, budget, count)
    described = sized_requests(plan, PROMPT, count, budget.reserve)
    assert len(described) == plan.requests
    assert all(set(r) == {"tokens", "messages"} for r in described)
    assert described[-1]["messages"][-1] == PROMPT
    assert all(r["tokens"] <= budget.window for r in described)


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
    plan = make_plan(messages, PROMPT, budget, count)
    for request in requests_of(plan):
        assert count(request) <= budget.window
    sent = [m for chunk in plan.chunks for m in chunk] + plan.final
    cut = next(m for m in sent if m.get("tool_calls") and m["tool_calls"][0]["id"] == "w1")
    arguments = json.loads(cut["tool_calls"][0]["function"]["arguments"])
    assert arguments["path"] == "big.json" and "characters cut" in arguments["content"]
    assert "characters cut" in cut["content"]
