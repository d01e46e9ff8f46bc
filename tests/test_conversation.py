"""The conversation's measures: each message's JSON size, as ``dumps`` writes its JSON."""

from __future__ import annotations

import pytest

from handoff_cli.agents import OMP, PI
from handoff_cli.errors import HandoffError
from handoff_cli.handoff.conversation import json_size
from handoff_cli.handoff.pipeline import prepare
from handoff_cli.handoff.prompt import ChatMessage
from handoff_cli.options import Options
from handoff_cli.sessions.jsonl import dumps

from .conftest import EXAMPLES, fixture_files

SESSIONS = sorted(
    p for p in [*fixture_files(), *EXAMPLES.glob("*.jsonl")] if "golden" not in p.parts
)


def numbers(value: object) -> list[object]:
    """The numbers anywhere in ``value`` (a stack, no recursion)."""
    found: list[object] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, bool | int | float):
            found.append(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


@pytest.mark.parametrize("agent", [OMP, PI])
def test_every_chat_message_is_measured_as_dumps_writes_it(agent: str) -> None:
    """Over every session of the fixtures and the examples, masked and cut as they are sent:
    no chat message holds a number (which orjson could spell otherwise than ``dumps``), and
    each one's size is the length of its ``dumps``."""
    options = Options(model="openai/gpt-4o", api_key="sk-test", agent=agent, context_window=8_000)
    measured = 0
    for path in SESSIONS:
        try:
            request = prepare(path, options)
        except HandoffError:  # too little to hand off, or not a session: nothing measured
            continue
        for message in request.conversation:
            assert numbers(message) == [], path
            assert json_size(message) == len(dumps(message)), path
            measured += 1
    assert measured > 1_000


def test_a_lone_surrogate_is_measured_as_dumps_writes_it() -> None:
    message: ChatMessage = {"role": "user", "content": "before \ud800 after"}
    assert (
        json_size(message)
        == len(dumps(message))
        == len(b'{"role":"user","content":"before \\ud800 after"}')
    )
