"""Toy: an agent that exists only to hold the house to its word, registered as a plugin would
be (the entry point group ``handoff_cli.agents``, or ``agents.register``), with no module of
handoff_cli changed for it.

It keeps each session as one JSON document, indented over many lines (no JSONL), that it
rewrites whole after each turn:

    {"toy": 1, "id": ..., "created": ..., "cwd": ..., "model": "provider/model",
     "parent": <path or null>,
     "turns": [{"id": ..., "role": "user" | "assistant" | "handoff", "text": ..., "at": ...}]}

so a handoff records its exchange by rewriting the file, under the pipeline's lock and checks.
Its sessions are ``~/.toy/sessions/<id>.toy.json`` (``$TOY_HOME`` moves ``~/.toy``).
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from handoff_cli.agents.base import (
    NOTHING_KEPT,
    Glance,
    Kept,
    Message,
    Opening,
    OwnFormatAgent,
    Usage,
)
from handoff_cli.agents.context import Context
from handoff_cli.document import HANDOFF_TYPE, is_handoff_prompt
from handoff_cli.errors import SessionFileError
from handoff_cli.sessions.files import Change, Rewrite, millis
from handoff_cli.sessions.js import UNDEFINED
from handoff_cli.sessions.jsonl import dumps
from handoff_cli.sessions.session import (
    CURRENT_VERSION,
    Entry,
    Record,
    Session,
    message_facts,
    spanning,
)
from handoff_cli.text import text_of

NAME = "toy"
SUFFIX = ".toy.json"
OWNS_BYTES = 64
_MARK = b'{\n  "toy": 1,'


class Toy(OwnFormatAgent):
    name = NAME
    title = "Toy"

    def sessions_folders(self, env: Mapping[str, str], home: Path, cwd: Path) -> list[Path]:
        return [_home(env, home) / "sessions"]

    def project_folder(self, env: Mapping[str, str], home: Path, cwd: str) -> Path | None:
        return _home(env, home) / "sessions"

    def resume_command(self, session_id: str, path: Path, own_folder: bool) -> list[str]:
        return ["toy", "--resume", session_id]

    def context(self, branch: list[Record]) -> Context:
        model = next((r.entry["model"] for r in reversed(branch) if _said_model(r)), None)
        return Context(self, (), [r for r in branch if r.has_message], {}, UNDEFINED, model)

    def starts_turn(self, record: Record, previous: Record | None) -> bool:
        return record.facts is not None and record.facts.role == "user"

    def loses_model(self, branch: list[Record]) -> bool:
        return False


AGENT = Toy()


def _home(env: Mapping[str, str], home: Path) -> Path:
    named = env.get("TOY_HOME")
    return Path(named) if named else home / ".toy"


def _said_model(record: Record) -> bool:
    return record.entry is not None and isinstance(record.entry.get("model"), str)


# --- the storage seam (``base.Format``) ---------------------------------------------------------


def is_session_name(name: str) -> bool:
    return name.endswith(SUFFIX)


def owns_head(head: bytes) -> bool:
    return head.startswith(_MARK)


def is_subagent(path: Path) -> bool:
    return False


def load(path: Path) -> Session:
    try:
        with open(path, "rb") as file:
            status = os.fstat(file.fileno())
            document = json.loads(file.read())
    except (OSError, ValueError) as error:
        raise SessionFileError(path, str(error)) from None
    header: Entry = {"type": "session", "version": CURRENT_VERSION, "id": document["id"]}
    header |= {"timestamp": document["created"], "cwd": document["cwd"]}
    if document.get("parent"):
        header["parentSession"] = document["parent"]
    records, parent = [], None
    for turn in document["turns"]:
        message = _message(turn, document["model"])
        entry = {"type": "message", "id": turn["id"], "parentId": parent, "timestamp": turn["at"]}
        entry |= {"message": message, "model": turn.get("model", document["model"])}
        records.append(
            Record(
                id=turn["id"],
                parent_id=parent,
                type="message",
                span=spanning(0, 0),
                entry=entry,
                loaded_facts=message_facts(message),
                written_stamp=turn["at"],
                kept=dumps(message),
            )
        )
        parent = turn["id"]
    session = Session(path, header, records, read_as=status, agent=NAME)
    session.by_id.update((record.id, record) for record in records)
    return session


def _message(turn: Entry, model: str) -> Message:
    """A turn as a message in the shared shape."""
    at = millis(turn["at"])
    if turn["role"] == "handoff":
        return {
            "role": "custom",
            "customType": HANDOFF_TYPE,
            "content": turn["text"],
            "display": True,
            "timestamp": at,
        }
    content = [{"type": "text", "text": turn["text"]}]
    if turn["role"] == "user":
        return {"role": "user", "content": content, "timestamp": at}
    provider, _, name = turn.get("model", model).partition("/")
    return {
        "role": "assistant",
        "content": content,
        "provider": provider,
        "model": name,
        "stopReason": "stop",
        "timestamp": at,
    }


def glance(path: Path, head: bytes, tail: bytes, size: int, lines: int) -> Glance:
    session = load(path)  # a toy's files are small: read whole
    turns = [r.entry["message"] for r in session.records if r.entry is not None]
    first = next((text_of(t["content"]) for t in turns if t["role"] == "user"), None)
    starts = bool(turns) and turns[0]["role"] == "custom"
    ends = len(turns) >= 2 and is_handoff_prompt(text_of(turns[-2].get("content")))
    opening = Opening(session.header, first, starts)
    return Glance(opening, ends, len(turns))


def new_uuid() -> str:
    return str(uuid.uuid4())


def new_path(folder: Path, session_id: str) -> Path:
    return folder / f"{session_id}{SUFFIX}"


def new_session(
    old: Session,
    new_id: str,
    parent: Path,
    model: str | None,
    wrapped: str,
    at: str,
    kept: Kept = NOTHING_KEPT,
) -> bytes:
    turns = [{"id": "t1", "role": "handoff", "text": wrapped, "at": at}]
    for number, message in enumerate(kept.shared, 2):
        role = "assistant" if message.get("role") == "assistant" else "user"
        turns.append(
            {"id": f"t{number}", "role": role, "text": text_of(message.get("content")), "at": at}
        )
    document = {
        "toy": 1,
        "id": new_id,
        "created": at,
        "cwd": old.header.get("cwd", ""),
        "model": model or "openai/gpt-4o",
        "parent": str(parent),
        "turns": turns,
    }
    return _dumped(document)


def exchange(
    old: Session,
    leaf_id: str,
    model: str | None,
    prompt: str,
    document: str,
    usage: Usage,
    asked_at: str,
    answered_at: str,
) -> list[Entry]:
    number = len(old.records)
    return [
        {"id": f"t{number + 1}", "role": "user", "text": prompt, "at": asked_at},
        {
            "id": f"t{number + 2}",
            "role": "assistant",
            "text": document,
            "at": answered_at,
            "model": "handoff/writer",
        },
    ]


def recorded(lines: list[Entry], old: Session, since: bytes) -> Change:
    """The file rewritten whole with the turns added, as the toy writes every turn."""
    document: Any = json.loads(old.path.read_bytes())  # the pipeline checked it unchanged
    document["turns"] += lines
    return Rewrite(_dumped(document))


def _dumped(document: Entry) -> bytes:
    return json.dumps(document, indent=2, ensure_ascii=False).encode() + b"\n"
