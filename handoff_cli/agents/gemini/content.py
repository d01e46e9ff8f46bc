"""Gemini's ``Content`` parts (``{"text"}``, ``{"functionCall"}``, ``{"functionResponse"}``,
``{"inlineData"}``, a thought's ``{"text", "thought": true}``) in the shared shape and back: what
Gemini CLI and Qwen Code, which keep their messages as the Gemini API's parts, share."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from handoff_cli.agents.base import Message
from handoff_cli.sessions.js import js_truthy


def parts_of(content: Any) -> list[Any]:
    """A ``PartListUnion`` as a list of parts (its ``ensurePartArray``): a string is one text
    part, a list's strings each one, an object a list of itself."""
    if isinstance(content, list):
        return [{"text": part} if isinstance(part, str) else part for part in content]
    if isinstance(content, str):
        return [{"text": content}]
    return [content] if content is not None else []


def shared_blocks(parts: Iterable[Any]) -> list[Any]:
    """The blocks of the shared shape for ``parts``, responses left out (they become results):
    text, thinking, tool calls, images."""
    blocks: list[Any] = []
    for part in parts:
        if not isinstance(part, dict):
            continue
        if isinstance(part.get("text"), str):
            if js_truthy(part.get("thought")):
                blocks.append({"type": "thinking", "thinking": part["text"]})
            else:
                blocks.append({"type": "text", "text": part["text"]})
        elif isinstance(part.get("functionCall"), dict):
            blocks.append(tool_call(part["functionCall"]))
        elif isinstance(part.get("inlineData"), dict):
            data = part["inlineData"]
            blocks.append(
                {"type": "image", "data": data.get("data"), "mimeType": data.get("mimeType")}
            )
    return blocks


def tool_call(call: dict[str, Any], call_id: Any = None) -> Message:
    """A ``functionCall`` (or a recorded tool call) as a shared ``toolCall`` block."""
    arguments = call.get("args")
    return {
        "type": "toolCall",
        "id": str(call.get("id") or call_id or ""),
        "name": call.get("name"),
        "arguments": arguments if isinstance(arguments, dict) else {},
    }


def responses(parts: Iterable[Any]) -> Iterator[dict[str, Any]]:
    """The ``functionResponse`` objects among ``parts``."""
    for part in parts:
        if isinstance(part, dict) and isinstance(part.get("functionResponse"), dict):
            yield part["functionResponse"]


def response_text(response: dict[str, Any]) -> tuple[str, bool]:
    """What a ``functionResponse`` says, and whether it is an error: its ``output`` (or
    ``error``), else its whole ``response`` as JSON."""
    body = response.get("response")
    if isinstance(body, dict):
        if isinstance(body.get("error"), str):
            return body["error"], True
        if isinstance(body.get("output"), str):
            return body["output"], False
        if isinstance(body.get("content"), str):
            return body["content"], False
    return json.dumps(body, ensure_ascii=False), False


def tool_result(response: dict[str, Any], call_id: str, failed: bool = False) -> Message:
    """A ``functionResponse`` as a shared ``toolResult`` message."""
    text, error = response_text(response)
    return {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": response.get("name"),
        "content": [{"type": "text", "text": text}],
        "isError": error or failed,
    }


def parts_from_shared(blocks: Any) -> list[dict[str, Any]]:
    """A shared message's blocks as parts: text, and tool calls as ``functionCall``s (what
    we write of a message kept after a document)."""
    if isinstance(blocks, str):
        return [{"text": blocks}] if blocks else []
    parts: list[dict[str, Any]] = []
    for block in blocks if isinstance(blocks, list) else []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            parts.append({"text": block["text"]})
        elif block.get("type") == "toolCall":
            call = {
                "id": block.get("id"),
                "name": block.get("name"),
                "args": block.get("arguments"),
            }
            parts.append({"functionCall": call})
    return parts
