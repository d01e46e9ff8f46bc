"""The handoff request: the context as chat messages, then the handoff prompt.

The context (the agent's own messages) becomes OpenAI-format chat messages, which LiteLLM
translates for every provider. The conversation is made valid for the strictest providers:
each tool call is answered by results that directly follow it, and each tool result answers
such a call; anything else is kept as plain user-side text rather than dropped.

Also here: the prompt's six sections, the check of a document against them, and the wrapper
the new session carries the document in. The prompt and the focus are sent literally.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from .context import Message
from .jsonl import dumps
from .session import Record, Session
from .text import text_of

ChatMessage = dict[str, Any]
"""A message in OpenAI's chat format, as LiteLLM takes it."""

SECTIONS = (
    "Goal",
    "Constraints & Preferences",
    "Progress",
    "Key Decisions",
    "Critical Context",
    "Next Steps",
)
SECTION_LIST = ", ".join(f"`## {name}`" for name in SECTIONS)
"""The sections as the prompts name them, in order."""

HANDOFF_PROMPT = """\
Write a handoff document for the work in this conversation. A new session of the coding agent \
will continue the work with this document as its only context: it cannot see this conversation, \
the tool results, or anything said so far.

Answer with the Markdown document alone, made of exactly these six sections, in this order:

## Goal
What the user is trying to achieve, in their own terms, and the task in hand right now.

## Constraints & Preferences
Every rule, requirement and preference the user stated or the work depends on.

## Progress
### Done
### In Progress
### Pending
What is finished, what is half done (and in what state), and what has not been started.

## Key Decisions
The choices made and why, including approaches tried and abandoned.

## Critical Context
What the next session cannot work without: exact file paths, names of functions, classes and \
variables, commands and what they printed, error messages, versions, and the exact state of any \
unfinished change.

## Next Steps
A numbered list of what to do next, the most urgent first.

Be concrete: keep paths, names, commands and errors exactly as they appear, and do not invent \
anything the conversation does not show. Write nothing before the first heading or after the \
last section."""

REPAIR_PROMPT = """\
The handoff document below does not have the required structure. Rewrite it so that it \
consists of exactly these Markdown sections, in this order: {sections}. Keep every fact it \
holds and add none. Answer with the rewritten document alone.

<document>
{document}
</document>"""

WRAPPER_OPEN = "<handoff-context>\n"
WRAPPER_CLOSE = (
    "\n</handoff-context>\n\nThe above is a handoff document from a previous session. "
    "Use this context to continue the work seamlessly."
)

COMPACTION_INTRO = "The conversation before this point was condensed into this summary:"
BRANCH_INTRO = "The conversation went down another path first, which ended as summarised here:"
BASH_INTRO = "I ran this command myself:\n$ "
CUSTOM_INTRO = "[Context added by the agent: "
RESULT_INTRO = "[Result of "
FOCUS_INTRO = "\n\nAdditional focus: "


def is_handoff_prompt(text: str) -> bool:
    """Whether a user message is the handoff prompt, as recorded by an earlier handoff."""
    return text.startswith(HANDOFF_PROMPT.split("\n", 1)[0])


def handoff_prompt(focus: str | None = None) -> str:
    """The instruction sent as the last user message; ``focus`` is appended as given."""
    return HANDOFF_PROMPT + (f"{FOCUS_INTRO}{focus}" if focus else "")


def repair_prompt(document: str) -> str:
    return REPAIR_PROMPT.format(sections=SECTION_LIST, document=document)


_CLOSING_TAG = re.compile(r"<(\s*/\s*handoff-context\s*)>", re.IGNORECASE)


def wrap_document(document: str) -> str:
    """The content of the new session's handoff message, as the agent writes it. A closing
    tag inside the document is escaped, so the wrapper closes exactly once, at its end."""
    return WRAPPER_OPEN + _CLOSING_TAG.sub(r"&lt;\1&gt;", document) + WRAPPER_CLOSE


_ESCAPED_TAG = re.compile(r"&lt;(\s*/\s*handoff-context\s*)&gt;", re.IGNORECASE)


def unwrap_document(content: str) -> str:
    """The document a handoff message holds (what ``wrap_document`` wrapped)."""
    if content.startswith(WRAPPER_OPEN) and content.endswith(WRAPPER_CLOSE):
        content = content[len(WRAPPER_OPEN) : -len(WRAPPER_CLOSE)]
    return _ESCAPED_TAG.sub(r"<\1>", content).strip()


HANDOFF_TYPE = "handoff"
"""The ``customType`` of the message a handed-off session starts with, and the ``method`` of
oh-my-pi's own in-place handoff (a compaction)."""


def recorded_document(session: Session, branch: list[Record]) -> str | None:
    """The handoff document of a session: the one it starts from, else the latest one recorded
    on the branch (our exchange's answer, or the summary of an in-place handoff)."""
    first = branch[0].entry if branch else None
    if first and first.get("type") == "custom_message" and first.get("customType") == HANDOFF_TYPE:
        return unwrap_document(text_of(first.get("content"), "\n"))
    latest: str | None = None
    asked = False
    for entry in session.entries(branch):
        message = entry.get("message") if entry.get("type") == "message" else None
        message = message if isinstance(message, dict) else {}
        if asked and message.get("role") == "assistant":
            latest = text_of(message.get("content"), "\n") or latest
        elif entry.get("type") == "compaction" and entry.get("method") == HANDOFF_TYPE:
            summary = entry.get("summary")
            latest = summary if isinstance(summary, str) else latest
        content = message.get("content")
        asked = message.get("role") == "user" and is_handoff_prompt(text_of(content))
    return latest


_HEADING = re.compile(r"^##[ \t]+(.+?)[ \t]*#*[ \t]*$", re.MULTILINE)


def missing_sections(document: str) -> list[str]:
    """The required sections the document lacks, or has out of order (empty when it is right)."""
    found = [" ".join(h.rstrip(":").split()).casefold() for h in _HEADING.findall(document)]
    missing: list[str] = []
    position = 0
    for name in SECTIONS:
        try:
            position = found.index(name.casefold(), position) + 1
        except ValueError:
            missing.append(name)
    return missing


# --- the context as chat messages ------------------------------------------------------------


def _text_parts(content: Any) -> list[dict[str, Any]]:
    """Text and image blocks as chat content parts; images the agent stored away are noted."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    parts: list[dict[str, Any]] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            parts.append({"type": "text", "text": block["text"]})
        elif block.get("type") == "image":
            parts.append(_image_part(block))
    return parts


def _image_part(block: dict[str, Any]) -> dict[str, Any]:
    data, mime = block.get("data"), block.get("mimeType", "image/png")
    if not isinstance(data, str) or not data or data.startswith("blob:"):
        return {"type": "text", "text": "[an image was here; it is not available]"}
    return {"type": "image_url", "image_url": {"url": f"data:{mime};base64,{data}"}}


def _plain(parts: list[dict[str, Any]]) -> str:
    return "\n".join(p["text"] for p in parts if p["type"] == "text")


def _user(content: str | list[dict[str, Any]]) -> ChatMessage:
    if isinstance(content, list) and all(p["type"] == "text" for p in content):
        content = _plain(content)
    return {"role": "user", "content": content}


def _string(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _bash_text(message: Message) -> str:
    text = f"{BASH_INTRO}{_string(message.get('command'))}\n"
    output = _string(message.get("output"))
    text += f"```\n{output.rstrip()}\n```" if output else "(no output)"
    code = message.get("exitCode")
    if message.get("cancelled"):
        text += "\n(cancelled)"
    elif code not in (0, None):
        text += f"\n(exit code {code})"
    if message.get("truncated"):
        text += "\n(output truncated)"
    return text


def _side_text(message: Message) -> str | None:
    """User-side text for the messages that are not turns of the conversation."""
    role = message.get("role")
    if role == "compactionSummary":
        return f"{COMPACTION_INTRO}\n\n<summary>\n{message.get('summary', '')}\n</summary>"
    if role == "branchSummary":
        return f"{BRANCH_INTRO}\n\n<summary>\n{message.get('summary', '')}\n</summary>"
    if role == "bashExecution":
        return None if message.get("excludeFromContext") else _bash_text(message)
    if role == "pythonExecution":
        code, output = _string(message.get("code")), _string(message.get("output"))
        return (
            f"I ran this Python code myself:\n```python\n{code}\n```\nOutput:\n```\n{output}\n```"
        )
    text = _plain(_text_parts(message.get("content")))
    if role == "custom" and text:
        return f"{CUSTOM_INTRO}{message.get('customType', 'custom')}]\n{text}"
    return text or None


def _result_text(message: Message) -> str:
    text = _plain(_text_parts(message.get("content"))) or "(no output)"
    return f"[error] {text}" if message.get("isError") else text


def to_chat(messages: Iterable[Message]) -> list[ChatMessage]:
    """The context as chat messages that every provider accepts."""
    items = list(messages)
    chat: list[ChatMessage] = []
    index = 0
    while index < len(items):
        message = items[index]
        index += 1
        role = message.get("role")
        if role == "user":
            parts = _text_parts(message.get("content"))
            if parts:
                chat.append(_user(parts))
        elif role == "assistant":
            index = _assistant_turn(message, items, index, chat)
        elif role == "toolResult":
            # Its call is not right before it (e.g. it was summarised away): plain text then.
            name, call = message.get("toolName", "a tool"), message.get("toolCallId", "?")
            chat.append(_user(f"{RESULT_INTRO}{name} call {call}]\n{_result_text(message)}"))
        else:
            text = _side_text(message)
            if text:
                chat.append(_user(text))
    return chat


def _assistant_turn(
    message: Message, items: list[Message], index: int, chat: list[ChatMessage]
) -> int:
    """Append an assistant turn and the results that directly follow it; return the index of
    the first message not consumed."""
    content = message.get("content")
    blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
    text = "\n".join(
        b["text"] for b in blocks if b.get("type") == "text" and isinstance(b.get("text"), str)
    )
    calls = {
        b["id"]: b
        for b in blocks
        if b.get("type") == "toolCall" and isinstance(b.get("id"), str) and b["id"]
    }
    results: list[ChatMessage] = []
    answered: set[str] = set()
    while index < len(items) and items[index].get("role") == "toolResult":
        call = items[index].get("toolCallId")
        if not isinstance(call, str) or call not in calls or call in answered:
            break
        answered.add(call)
        results.append(
            {"role": "tool", "tool_call_id": call, "content": _result_text(items[index])}
        )
        index += 1
    tool_calls = [_tool_call(calls[call]) for call in calls if call in answered]
    # Calls whose results do not follow directly cannot be sent as calls: say them in words.
    for call, block in calls.items():
        if call not in answered:
            arguments = _tool_call(block)["function"]["arguments"]
            text += f"\n[Called {block.get('name', 'a tool')} (call {call}) with {arguments}]"
    text = text.strip("\n")
    if not text and not tool_calls:
        return index
    turn: ChatMessage = {"role": "assistant", "content": text or None}
    if tool_calls:
        turn["tool_calls"] = tool_calls
    chat.append(turn)
    chat.extend(results)
    return index


def _tool_call(block: dict[str, Any]) -> dict[str, Any]:
    arguments = block.get("arguments", {})
    return {
        "id": block["id"],
        "type": "function",
        "function": {
            "name": str(block.get("name", "tool")),
            "arguments": arguments if isinstance(arguments, str) else dumps(arguments).decode(),
        },
    }


def handoff_request(context_messages: Iterable[Message], focus: str | None) -> list[ChatMessage]:
    """The whole request: the context as chat messages, then the handoff prompt."""
    return [*to_chat(context_messages), {"role": "user", "content": handoff_prompt(focus)}]
