"""A Gemini CLI chat file read as the CLI reads it (its ``loadConversationRecord``, 0.61.0).

Two formats. The one it writes: JSON lines, the first the session's metadata (``sessionId``,
``projectHash``, ``startTime``, ``lastUpdated``, ``kind``), then each message record as it is
recorded and again each time it changes (the last record of an id wins, where the first put
it), ``{"$set": {...}}`` patches of the metadata (``messages`` among them replaces them all:
a compression) and ``{"$rewindTo": id}`` (that message and every later one dropped). The older
one, which it still reads: one JSON object, the metadata and its ``messages``.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

from handoff_cli.agents.base import LINEAGE_TYPE


class Chat(NamedTuple):
    """What a chat file holds, as the CLI loads it."""

    metadata: dict[str, Any]
    messages: list[dict[str, Any]]
    lines: bool
    """It is in JSON lines (else one JSON object)."""
    parent: str | None
    """The session it was handed off from (our lineage line), if any."""
    cwd: str | None = None
    """The cwd our lineage line names (a project folder the CLI has not marked yet)."""


def parse(data: bytes) -> Chat | None:
    """The chat in ``data``; None where the CLI would find no session in it."""
    metadata: dict[str, Any] = {}
    messages: dict[str, dict[str, Any]] = {}
    parent = cwd = None
    for raw in data.split(b"\n"):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except ValueError:
            continue  # a line the CLI's JSON.parse refuses is passed over
        if not isinstance(record, dict):
            continue
        if isinstance(record.get("$rewindTo"), str):
            _rewind(messages, record["$rewindTo"])
        elif isinstance(record.get("id"), str):
            messages[record["id"]] = record
        elif isinstance(record.get("$set"), dict):
            patch = record["$set"]
            if isinstance(patch.get("messages"), list):
                messages = {m["id"]: m for m in patch["messages"] if _has_id(m)}
            metadata |= patch
        elif isinstance(record.get("sessionId"), str) and isinstance(
            record.get("projectHash"), str
        ):
            metadata |= record
            for message in record.get("messages") or ():
                if _has_id(message):
                    messages[message["id"]] = message
        elif record.get("type") == LINEAGE_TYPE and isinstance(record.get("parentSession"), str):
            parent = record["parentSession"]
            cwd = record.get("cwd") if isinstance(record.get("cwd"), str) else None
    if metadata.get("sessionId") and metadata.get("projectHash"):
        metadata.pop("messages", None)
        return Chat(metadata, list(messages.values()), True, parent, cwd)
    return _legacy(data)


def _has_id(message: Any) -> bool:
    return isinstance(message, dict) and isinstance(message.get("id"), str)


def _rewind(messages: dict[str, dict[str, Any]], to: str) -> None:
    """``$rewindTo``: the message ``to`` and all after it gone; all of them if it is none."""
    if to not in messages:
        messages.clear()
        return
    ids = list(messages)
    for found in ids[ids.index(to) :]:
        del messages[found]


def _legacy(data: bytes) -> Chat | None:
    """The older format: one JSON object with a ``sessionId``."""
    try:
        value = json.loads(data)
    except ValueError:
        return None
    if not isinstance(value, dict) or "sessionId" not in value:
        return None
    messages = value.get("messages")
    found = [m for m in messages if isinstance(m, dict)] if isinstance(messages, list) else []
    metadata = {k: v for k, v in value.items() if k != "messages"}
    return Chat(metadata, found, False, None)
