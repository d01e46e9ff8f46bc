"""The handoff request: the context as chat messages, the prompt, the section check."""

from __future__ import annotations

from typing import Any

import pytest

from handoff_cli.document import (
    PROMPT_OPENINGS,
    SECTIONS,
    is_handoff_prompt,
    missing_sections,
    wrap_document,
)
from handoff_cli.handoff.facts import Command, Facts
from handoff_cli.handoff.prompt import (
    FACTS_INTRO,
    HANDOFF_PROMPT,
    facts_block,
    handoff_prompt,
    handoff_request,
    repair_prompt,
    to_chat,
)


def assistant(*blocks: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": list(blocks), "stopReason": "toolUse"}


def call(call_id: str, name: str = "bash") -> dict[str, Any]:
    return {"type": "toolCall", "id": call_id, "name": name, "arguments": {"command": "ls"}}


def result(call_id: str, text: str = "a.txt", error: bool = False) -> dict[str, Any]:
    return {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": "bash",
        "content": [{"type": "text", "text": text}],
        "isError": error,
    }


def test_turns_with_tool_calls_and_results() -> None:
    chat = to_chat(
        [
            {"role": "user", "content": [{"type": "text", "text": "list"}]},
            assistant(
                {"type": "thinking", "thinking": "hidden"},
                {"type": "text", "text": "ok"},
                call("c1"),
                call("c2", "read"),
            ),
            result("c2", "file body"),
            result("c1", "boom", error=True),
        ]
    )
    assert chat == [
        {"role": "user", "content": "list"},
        {
            "role": "assistant",
            "content": "ok",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "bash", "arguments": '{"command":"ls"}'},
                },
                {
                    "id": "c2",
                    "type": "function",
                    "function": {"name": "read", "arguments": '{"command":"ls"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "c2", "content": "file body"},
        {"role": "tool", "tool_call_id": "c1", "content": "[error] boom"},
    ]


def test_calls_and_results_that_are_not_adjacent_become_text() -> None:
    chat = to_chat(
        [
            result("gone", "tail of a compacted turn"),
            assistant(call("late")),
            {"role": "user", "content": "interrupting"},
            result("late", "too late"),
        ]
    )
    assert [m["role"] for m in chat] == ["user", "assistant", "user", "user"]
    assert chat[0]["content"] == "[Result of bash call gone]\ntail of a compacted turn"
    assert "tool_calls" not in chat[1]
    assert chat[1]["content"].startswith("[Called bash (call late) with")
    assert chat[3]["content"].endswith("too late")
    # Every tool message in any request answers a call right before it.
    for index, message in enumerate(chat):
        assert message["role"] != "tool" or "tool_calls" in chat[index - 1]


def test_side_messages_are_user_text() -> None:
    chat = to_chat(
        [
            {"role": "compactionSummary", "summary": "S1", "tokensBefore": 1},
            {"role": "branchSummary", "summary": "S2", "fromId": "x"},
            {"role": "custom", "customType": "note", "content": "injected", "display": True},
            {
                "role": "bashExecution",
                "command": "make",
                "output": "err\n",
                "exitCode": 2,
                "cancelled": False,
                "truncated": False,
            },
            {
                "role": "bashExecution",
                "command": "secret",
                "output": "x",
                "exitCode": 0,
                "excludeFromContext": True,
            },
            {"role": "assistant", "content": [{"type": "thinking", "thinking": "only thinking"}]},
            {"role": "mystery"},
        ]
    )
    texts = [m["content"] for m in chat]
    assert all(m["role"] == "user" for m in chat)
    assert texts[0].endswith("<summary>\nS1\n</summary>")
    assert texts[1].endswith("<summary>\nS2\n</summary>")
    assert texts[2] == "[Context added by the agent: note]\ninjected"
    assert texts[3] == "I ran this command myself:\n$ make\n```\nerr\n```\n(exit code 2)"
    assert len(chat) == 4  # excluded run, empty assistant turn and unknown role left out


def test_images_become_image_parts_unless_stored_away() -> None:
    (message,) = to_chat(
        [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "look"},
                    {"type": "image", "data": "aGk=", "mimeType": "image/jpeg"},
                    {"type": "image", "data": "blob:sha256:" + "0" * 64, "mimeType": "image/png"},
                ],
            }
        ]
    )
    assert message["content"] == [
        {"type": "text", "text": "look"},
        {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,aGk="}},
        {"type": "text", "text": "[an image was here; it is not available]"},
    ]


def test_prompt_and_focus_are_sent_literally() -> None:
    focus = "/compact {{template}} $HOME `rm -rf`"
    request = handoff_request([{"role": "user", "content": "hi"}], focus)
    prompt = HANDOFF_PROMPT.format(tokens=2_000)
    assert request[-1] == {"role": "user", "content": f"{prompt}\n\nAdditional focus: {focus}"}
    assert handoff_prompt() == prompt and is_handoff_prompt(prompt)
    assert all(f"## {name}\n" in prompt for name in SECTIONS)
    assert "under about 500 tokens" in handoff_prompt(tokens=500)


def test_the_facts_go_with_the_prompt_as_verified() -> None:
    facts = Facts(
        requests=("Add retries to weather_cli/http.py.", "Make them configurable."),
        acknowledgement="ok",
        rules=("Never retry 4xx except 429.",),
        read_files=("README.md",),
        modified_files=("weather_cli/http.py",),
        commands=(Command("pytest -q", False, 1, resolved=True),),
        open_errors=("`ruff check` (exit code 1)",),
    )
    block = facts_block(facts)
    assert block.startswith(FACTS_INTRO)
    for fact in (
        '- The original task: "Add retries to weather_cli/http.py."',
        '- The latest request: "Make them configurable."',
        '- Then the user only said "ok", acknowledging the answer.',
        '- A rule the user stated: "Never retry 4xx except 429."',
        "- Files changed: `weather_cli/http.py`",
        "- Files read: `README.md`",
        "- Ran `pytest -q`: failed, fixed later, exit code 1",
        "- The error still open: `ruff check` (exit code 1)",
    ):
        assert fact in block
    assert handoff_prompt("x", facts).endswith(f"{block}\n\nAdditional focus: x")
    assert facts_block(Facts()) == ""


def test_an_update_starts_from_the_previous_document() -> None:
    previous = "## Goal\n- the old goal"
    prompt = handoff_prompt(None, Facts(previous_document=previous, requests=("t",)))
    assert prompt.startswith(PROMPT_OPENINGS[1]) and is_handoff_prompt(prompt)
    assert f"<document>\n{previous}\n</document>" in prompt and FACTS_INTRO in prompt


@pytest.mark.parametrize(
    ("document", "missing"),
    [
        ("\n".join(f"## {s}\ntext" for s in SECTIONS), []),
        ("\n".join(f"## {s.upper()}:\ntext" for s in SECTIONS), []),
        (
            "## Goal\nx\n## Progress\n### Done\nx",
            ["Constraints & Preferences", "Key Decisions", "Critical Context", "Next Steps"],
        ),
        ("\n".join(f"## {s}" for s in reversed(SECTIONS)), list(SECTIONS[1:])),
        ("# Goal\nnot a level-two heading", list(SECTIONS)),
    ],
)
def test_missing_sections(document: str, missing: list[str]) -> None:
    assert missing_sections(document) == missing


def test_repair_prompt_and_wrapper() -> None:
    assert "<document>\nmy doc\n</document>" in repair_prompt("my doc")
    assert wrap_document("DOC") == (
        "<handoff-context>\nDOC\n</handoff-context>\n\nThe above is a handoff document from a "
        "previous session. Use this context to continue the work seamlessly."
    )
