"""Gemini CLI (``@google/gemini-cli``, its 0.61.0 read): its rules and its storage.

Its chats are ``~/.gemini/tmp/<project>/chats/session-<YYYY-MM-DDTHH-MM>-<id8>.jsonl``
(``$GEMINI_CLI_HOME`` moves ``~``), in JSON lines, or, from older versions, ``….json``, one JSON
object (``chats``). The project folder is named by a short slug of the cwd's last folder
(``projects.json`` maps each cwd to its slug, and ``<slug>/.project_root`` names the cwd), or,
before that, by the SHA-256 of the cwd. A subagent's chat is ``chats/<parent id>/<id>.jsonl``.
``gemini --resume <id>``, run in the session's cwd, resumes it: the history it sends is made of
the user and model messages (``convertSessionToClientHistory``), a tool call's result a user
turn of ``functionResponse`` parts after the model's.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import uuid
from collections.abc import Iterator, Mapping
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path
from typing import Any

from handoff_cli.agents.base import (
    LINEAGE_TYPE,
    NOTHING_KEPT,
    Glance,
    Kept,
    Message,
    Opening,
    OwnFormatAgent,
    Usage,
    model_name,
)
from handoff_cli.agents.context import Context
from handoff_cli.agents.gemini import chats
from handoff_cli.agents.gemini.content import (
    parts_from_shared,
    parts_of,
    responses,
    shared_blocks,
    tool_call,
    tool_result,
)
from handoff_cli.document import HANDOFF_TYPE, WRAPPER_OPEN, is_handoff_prompt
from handoff_cli.errors import SessionFileError, os_reason
from handoff_cli.said import TitleRequest
from handoff_cli.sessions.files import Append, Change, Rewrite
from handoff_cli.sessions.js import UNDEFINED
from handoff_cli.sessions.jsonl import dumps, dumps_line
from handoff_cli.sessions.session import (
    CURRENT_VERSION,
    Entry,
    Record,
    Session,
    message_facts,
    open_regular,
    spanning,
)
from handoff_cli.text import text_of

NAME = "gemini"
MODEL_TYPES = frozenset(("gemini", "qwen"))
"""The type of the model's messages: ``qwen`` in the chats of Qwen Code's versions that kept
Gemini CLI's format (``~/.qwen/tmp/<hash>/chats/*.json``)."""
SUFFIX = ".json"
"""Its older chats' (its newer ones are ``.jsonl``, the shared suffix)."""
OWNS_BYTES = 4096
PROVIDER = "gemini"
"""LiteLLM's name for the Gemini API, which the CLI's models are served by."""
ACKNOWLEDGEMENT = "Understood. I will continue the work from this handoff document."
"""The model's answer to the document a new session starts with: the CLI's history then
alternates as the API wants it."""
_OPENING = re.compile(rb'\A\s*\{\s*"sessionId"\s*:\s*"[^"\\]*"\s*,\s*"projectHash"\s*:')
"""How both its formats start: the metadata, ``sessionId`` then ``projectHash``."""
_NAME = re.compile(r"session-.+\.jsonl?")
_IGNORED = ("/", "?", "<session_context>", "<hook_context>")
"""How a user message the CLI leaves out of the history it resumes starts (a command)."""


class Gemini(OwnFormatAgent):
    """Gemini CLI's rules."""

    name = NAME
    title = "Gemini CLI"

    def sessions_folders(self, env: Mapping[str, str], home: Path, cwd: Path) -> list[Path]:
        return [home_folder(env, home) / "tmp"]

    def project_folder(self, env: Mapping[str, str], home: Path, cwd: str) -> Path | None:
        return project_temp_folder(home_folder(env, home), cwd) / "chats"

    def resume_command(self, session_id: str, path: Path, own_folder: bool) -> list[str]:
        return ["gemini", "--resume", session_id]  # looked up in the cwd's project folder

    def context(self, branch: list[Record]) -> Context:
        return _context(branch)


AGENT = Gemini()


# --- where its chats are ---------------------------------------------------------------------


def home_folder(env: Mapping[str, str], home: Path) -> Path:
    """``~/.gemini``, under ``$GEMINI_CLI_HOME`` where it is set."""
    named = env.get("GEMINI_CLI_HOME")
    return (Path(named).expanduser() if named else home) / ".gemini"


def slug(cwd: str) -> str:
    """The CLI's short name for a project: its folder's name, lower case, every run of other
    characters than ``[a-z0-9]`` one '-'."""
    name = re.sub(r"-+", "-", re.sub(r"[^a-z0-9]", "-", Path(cwd).name.lower())).strip("-")
    return name or "project"


def project_temp_folder(gemini: Path, cwd: str) -> Path:
    """The folder the CLI keeps ``cwd``'s chats under: the one ``projects.json`` or a
    ``.project_root`` marker names for it, else the slug it would claim (numbered on past one
    another project owns), whose marker the CLI finds when it starts there."""
    tmp = gemini / "tmp"
    named = _registry(gemini / "projects.json").get(cwd)
    if isinstance(named, str) and _owner(tmp / named) in (cwd, None):
        return tmp / named
    for marker in sorted(tmp.glob("*/.project_root")):
        if _owner(marker.parent) == cwd:
            return marker.parent
    base, number = slug(cwd), 0
    while True:
        candidate = tmp / (base if number == 0 else f"{base}-{number}")
        if (
            _owner(candidate) in (cwd, None)
            and candidate.name not in _registry(gemini / "projects.json").values()
        ):
            return candidate
        number += 1


def _registry(path: Path) -> dict[str, Any]:
    try:
        projects = json.loads(path.read_bytes()).get("projects")
    except (OSError, ValueError, AttributeError):
        return {}
    return projects if isinstance(projects, dict) else {}


def _owner(folder: Path) -> str | None:
    """The cwd a project folder's marker names, if it has one."""
    try:
        return (folder / ".project_root").read_text("utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None


@lru_cache(maxsize=64)
def _cwd_of(project: Path) -> str:
    """The cwd whose chats ``project`` holds: its marker's, else the one ``projects.json``
    maps to its name, or whose SHA-256 it is named by (the older folders); "" unknown."""
    owner = _owner(project)
    if owner:
        return owner
    for cwd, named in _registry(project.parent.parent / "projects.json").items():
        if named == project.name or hashlib.sha256(cwd.encode()).hexdigest() == project.name:
            return str(cwd)
    return ""


def is_subagent(path: Path) -> bool:
    """A subagent's chat: ``chats/<parent id>/<id>.jsonl``."""
    return path.parent.parent.name == "chats"


def is_session_name(name: str) -> bool:
    return _NAME.fullmatch(name) is not None


def owns_head(head: bytes) -> bool:
    return _OPENING.match(head) is not None


# --- loading -----------------------------------------------------------------------------------


def _read(path: Path) -> tuple[chats.Chat, Any]:
    try:
        with open_regular(path) as file:
            status = os.fstat(file.fileno())
            data = file.read()
    except OSError as error:
        raise SessionFileError(path, os_reason(error)) from None
    chat = chats.parse(data)
    if chat is None:
        raise SessionFileError(path, "not a Gemini CLI chat (no sessionId)")
    return chat, status


def _header(path: Path, chat: chats.Chat) -> Entry:
    meta = chat.metadata
    project = path.parent.parent.parent if is_subagent(path) else path.parent.parent
    header: Entry = {
        "type": "session",
        "version": CURRENT_VERSION,
        "id": str(meta.get("sessionId")),
        "timestamp": meta.get("startTime") or "",
        "cwd": _cwd_of(project) or chat.cwd or "",
        "projectHash": meta.get("projectHash"),
    }
    if isinstance(meta.get("summary"), str) and meta["summary"].strip():
        header["title"] = meta["summary"]
    if chat.parent is not None:
        header["parentSession"] = chat.parent
    if is_subagent(path) or meta.get("kind") == "subagent":
        header |= {"parentSession": path.parent.name, "subagent": True}
    answers = [m for m in chat.messages if m.get("type") in MODEL_TYPES]
    if path.suffix == ".json" and answers and not any("toolCalls" in m for m in answers):
        header["callsUnrecorded"] = True  # a version that kept the answers only
    return header


def load(path: Path) -> Session:
    """The chat at ``path`` as a ``Session``: each message a record (a model message's tool
    results each one after it), in order, each the child of the one before."""
    chat, status = _read(path)
    records: list[Record] = []
    for raw, message in _messages(chat.messages):
        entry_id = _record_id(raw, message, records)
        at = raw.get("timestamp") if isinstance(raw.get("timestamp"), str) else ""
        parent = records[-1].id if records else None
        entry = {"type": "message", "id": entry_id, "parentId": parent, "timestamp": at}
        entry |= {"message": message, "of": raw}
        records.append(
            Record(
                id=entry_id,
                parent_id=parent,
                type="message",
                span=spanning(0, 0),
                entry=entry,
                loaded_facts=message_facts(message),
                written_stamp=at,
                kept=dumps(message),
            )
        )
    session = Session(path, _header(path, chat), records, read_as=status, agent=NAME)
    session.by_id.update((record.id, record) for record in records)
    return session


def _record_id(raw: Entry, message: Message, records: list[Record]) -> str:
    """A message's record is its id; a result's, its message's and its call's."""
    if message.get("role") != "toolResult":
        return str(raw["id"])
    made = f"{raw['id']}/{message['toolCallId']}"
    return made if not records or records[-1].id != made else f"{made}/{len(records)}"


def _messages(messages: list[dict[str, Any]]) -> Iterator[tuple[dict[str, Any], Message]]:
    """Each user and model message in the shared shape, with the record it is of; a model
    message's tool results after it."""
    for index, raw in enumerate(messages):
        kind = raw.get("type")
        if kind == "user":
            parts = parts_of(raw.get("content"))
            answered = list(responses(parts))  # a history the CLI wrote back holds results so
            for response in answered:
                yield raw, tool_result(response, str(response.get("id") or ""))
            if not answered or shared_blocks(parts):
                yield raw, _user(raw, index == 0)
        elif kind in MODEL_TYPES:
            calls = [c for c in raw.get("toolCalls") or () if isinstance(c, dict)]
            yield raw, _model(raw, calls)
            for call in calls:
                for response in responses(parts_of(call.get("result"))):
                    call_id = str(response.get("id") or call.get("id") or "")
                    yield raw, tool_result(response, call_id, call.get("status") == "error")


def _user(raw: Entry, first: bool) -> Message:
    parts = parts_of(raw.get("content"))
    text = "".join(
        p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)
    )
    if first and text.startswith(
        WRAPPER_OPEN
    ):  # the document a session we handed off to starts with
        return {"role": "custom", "customType": HANDOFF_TYPE, "content": text, "display": True}
    return {"role": "user", "content": shared_blocks(parts)}


def _model(raw: Entry, calls: list[dict[str, Any]]) -> Message:
    thoughts = [
        {"type": "thinking", "thinking": _thought(t)}
        for t in raw.get("thoughts") or ()
        if isinstance(t, dict)
    ]
    blocks = thoughts + shared_blocks(parts_of(raw.get("content")))
    blocks += [tool_call(call) for call in calls]
    return {
        "role": "assistant",
        "content": blocks,
        "api": "google-generative-ai",
        "provider": PROVIDER,
        "model": raw.get("model"),
        "stopReason": "toolUse" if calls else "stop",
    }


def _thought(thought: dict[str, Any]) -> str:
    """A thought as the CLI sends it back: ``**subject** description``."""
    subject, description = thought.get("subject"), thought.get("description", "")
    return f"**{subject}** {description}" if subject else str(description)


# --- the context: what ``gemini --resume`` sends -----------------------------------------------


def _context(branch: list[Record]) -> Context:
    raws = list(_raw_messages(branch))
    kept = {id(raw) for raw in raws if _resumed(raw)}
    records = [r for r in branch if r.entry is not None and id(_raw_of(r)) in kept]
    model = next(
        (
            raw["model"]
            for raw in reversed(raws)
            if raw.get("type") in MODEL_TYPES and isinstance(raw.get("model"), str)
        ),
        None,
    )
    return Context(
        AGENT,
        head=(),
        records=records,
        changes={},
        thinking_level=UNDEFINED,
        model=f"{PROVIDER}/{model}" if model else None,
        sent=lambda: iter(history(raws)),
    )


def _raw_of(record: Record) -> Any:
    assert record.entry is not None, "a Gemini CLI record keeps its entry"
    return record.entry.get("of")


def _raw_messages(branch: list[Record]) -> Iterator[dict[str, Any]]:
    """The chat's messages under the branch's records, each once, in order."""
    seen: set[int] = set()
    for record in branch:
        raw = record.entry.get("of") if record.entry is not None else None
        if isinstance(raw, dict) and id(raw) not in seen:
            seen.add(id(raw))
            yield raw


def _resumed(raw: dict[str, Any]) -> bool:
    kind = raw.get("type")
    if kind == "user":
        return not _ignored(raw)
    return kind in MODEL_TYPES


def _ignored(raw: dict[str, Any]) -> bool:
    text = "".join(_part_strings(raw.get("content"))).strip()
    return not text or text.startswith(_IGNORED)


def _part_strings(content: Any) -> Iterator[str]:
    """A content's text as the CLI's ``partListUnionToString`` reads it for this test (its
    other parts' placeholders are never empty)."""
    for part in parts_of(content):
        if not isinstance(part, dict):
            continue
        if isinstance(part.get("text"), str):
            yield part["text"]
        elif part:
            yield "[part]"


def history(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ``contents`` the CLI resumes ``messages`` with (``convertSessionToClientHistory``,
    then ``ensureStableToolIds``)."""
    turns: list[tuple[str, dict[str, Any]]] = []
    for raw in messages:
        kind, turn_id = raw.get("type"), str(raw.get("id"))
        if kind == "user":
            if not _ignored(raw):
                turns.append((turn_id, {"role": "user", "parts": parts_of(raw.get("content"))}))
        elif kind in MODEL_TYPES:
            turns += _model_turns(raw, turn_id)
    _stable_ids(turns)
    unthought = (_without_thoughts(content) for _, content in turns)
    sent = _merged([_unprefixed(content) for content in unthought if content["parts"]])
    if sent and sent[-1]["role"] == "user" and any(responses(sent[-1]["parts"])):
        # The next prompt is kept a turn of its own (``closeUnansweredToolResponseTurn``).
        sent.append({"role": "model", "parts": [{"text": INTERRUPTED}]})
    return sent


INTERRUPTED = "[The previous response was interrupted before it completed.]"


_SYNTHETIC_SIGNATURE = "skip_thought_signature_validator"


def _without_thoughts(content: dict[str, Any]) -> dict[str, Any]:
    """A turn as a Gemini 2 model is sent it (``stripThoughts``): a turn that held thoughts
    without them, its first call then signed with the CLI's stand-in signature."""
    parts = content["parts"]
    if not any(isinstance(p, dict) and p.get("thought") for p in parts):
        return content
    kept = [p for p in parts if not (isinstance(p, dict) and p.get("thought"))]
    if content["role"] == "model":
        first = next(
            (i for i, p in enumerate(kept) if isinstance(p, dict) and p.get("functionCall")), None
        )
        if first is not None and not kept[first].get("thoughtSignature"):
            kept[first] = {**kept[first], "thoughtSignature": _SYNTHETIC_SIGNATURE}
    return {**content, "parts": kept}


def _merged(contents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Turns of one role in a row as one, their parts in order, as the request sends them."""
    merged: list[dict[str, Any]] = []
    for content in contents:
        if merged and merged[-1]["role"] == content["role"]:
            merged[-1] = {**merged[-1], "parts": [*merged[-1]["parts"], *content["parts"]]}
        else:
            merged.append(content)
    return merged


def _unprefixed(content: dict[str, Any]) -> dict[str, Any]:
    """A turn as sent: a call's or a response's id without the ``<tool>__`` the CLI keeps it
    under (``stripToolCallIdPrefixes``)."""
    parts = []
    for part in content["parts"]:
        for kind in ("functionCall", "functionResponse"):
            found = part.get(kind) if isinstance(part, dict) else None
            if isinstance(found, dict):
                prefix = f"{found.get('name')}__"
                if isinstance(found.get("id"), str) and found["id"].startswith(prefix):
                    part = {**part, kind: {**found, "id": found["id"][len(prefix) :]}}
        parts.append(part)
    return {**content, "parts": parts}


def _model_turns(raw: dict[str, Any], turn_id: str) -> list[tuple[str, dict[str, Any]]]:
    parts = parts_of(raw.get("content")) if raw.get("content") else []
    calls = [c for c in raw.get("toolCalls") or () if isinstance(c, dict)]
    own = any(isinstance(p, dict) and (p.get("functionCall") or p.get("thought")) for p in parts)
    if own:
        sent = list(parts)
    else:
        sent = [
            {"text": _thought(t), "thought": True}
            for t in raw.get("thoughts") or ()
            if isinstance(t, dict)
        ]
        sent += parts
        sent += [
            {
                "functionCall": _defined(
                    {"id": c.get("id"), "name": c.get("name"), "args": c.get("args")}
                )
            }
            for c in calls
        ]
    if not sent:
        return []
    turns = [(turn_id, {"role": "model", "parts": sent})]
    answers: list[Any] = []
    for call in calls:
        result = call.get("result")
        if not result:
            continue
        if isinstance(result, str):
            response = {
                "id": call.get("id"),
                "name": call.get("name"),
                "response": {"output": result},
            }
            answers.append({"functionResponse": _defined(response)})
        elif isinstance(result, list):
            answers += parts_of(result)
        else:
            answers.append(result)
    if answers:
        turns.append((f"{turn_id}_response", {"role": "user", "parts": answers}))
    return turns


def _defined(value: dict[str, Any]) -> dict[str, Any]:
    """``JSON.stringify``'s object: keys whose value is undefined left out."""
    return {k: v for k, v in value.items() if v is not None}


def _stable_ids(turns: list[tuple[str, dict[str, Any]]]) -> None:
    """Ids for the calls and responses that have none, paired as the CLI pairs them."""
    for index, (turn_id, content) in enumerate(turns):
        for at, part in enumerate(content.get("parts") or ()):
            if not isinstance(part, dict):
                continue
            call = part.get("functionCall")
            if isinstance(call, dict) and not call.get("id"):
                name = call.get("name")
                following = turns[index + 1][1] if index + 1 < len(turns) else None
                match = _unpaired(following, "user", "functionResponse", name)
                if match is not None:
                    paired = f"synth_{name}_{_stable([turn_id, str(index), str(at)])}"
                    call["id"] = match["id"] = paired
                if not call.get("id"):
                    call["id"] = f"synth_{name}_{_stable([turn_id, str(index), str(at)])}"
            response = part.get("functionResponse")
            if isinstance(response, dict) and not response.get("id"):
                name = response.get("name")
                before = turns[index - 1] if index > 0 else None
                match = _unpaired(before[1] if before else None, "model", "functionCall", name)
                if match is not None and before is not None:
                    paired = f"synth_{name}_{_stable([before[0], str(index - 1), str(at)])}"
                    match["id"] = response["id"] = paired
                if not response.get("id"):
                    response["id"] = f"synth_orph_{name}_{_stable([turn_id, str(index), str(at)])}"


def _unpaired(content: dict[str, Any] | None, role: str, kind: str, name: Any) -> Any:
    if content is None or content.get("role") != role:
        return None
    for part in content.get("parts") or ():
        found = part.get(kind) if isinstance(part, dict) else None
        if isinstance(found, dict) and found.get("name") == name and not found.get("id"):
            return found
    return None


def _stable(ids: list[str]) -> str:
    return hashlib.sha256("|".join(sorted(ids)).encode()).hexdigest()[:32]


# --- what ``list`` reads -------------------------------------------------------------------------


def glance(path: Path, head: bytes, tail: bytes, size: int, lines: int) -> Glance:
    """What ``list`` reads of a chat: read whole, as the CLI's own list reads each."""
    chat, _ = _read(path)
    header = _header(path, chat)
    said = [m for m in chat.messages if m.get("type") in ("user", *MODEL_TYPES)]
    first = said[0] if said else None
    starts = (
        first is not None and first.get("type") == "user" and _text(first).startswith(WRAPPER_OPEN)
    )
    titled = TitleRequest()
    for message in said:
        if message.get("type") == "user" and not _ignored(message) and titled.offer(_text(message)):
            break
    title = header.get("title") or titled.request
    opening = Opening(header, title, starts, titled.found is not None)
    return Glance(opening, _ends_with_exchange(said), len(said))


def _text(raw: dict[str, Any]) -> str:
    return text_of(shared_blocks(parts_of(raw.get("content"))))


def _ends_with_exchange(said: list[dict[str, Any]]) -> bool:
    if len(said) < 2:
        return False
    asked, answered = said[-2:]
    return (
        asked.get("type") == "user"
        and answered.get("type") in MODEL_TYPES
        and is_handoff_prompt(_text(asked))
    )


# --- what a handoff writes ---------------------------------------------------------------------


def new_uuid() -> str:
    return str(uuid.uuid4())


def new_path(folder: Path, session_id: str) -> Path:
    """``session-<YYYY-MM-DDTHH-MM>-<id8>.jsonl``, the minute UTC, as the CLI names a chat."""
    minute = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H-%M")
    return folder / f"session-{minute}-{session_id[:8]}.jsonl"


def new_session(
    old: Session,
    new_id: str,
    parent: Path,
    model: str | None,
    wrapped: str,
    at: str,
    kept: Kept = NOTHING_KEPT,
) -> bytes:
    """The chat the CLI resumes with the document first: its metadata, our lineage (a line
    it passes over), the document as the user's, the model's acknowledgement, the ``kept``
    messages, each recorded as the CLI records one."""
    cwd = str(old.header.get("cwd", ""))
    project = old.header.get("projectHash") if old.agent == NAME else None
    metadata = {
        "sessionId": new_id,
        "projectHash": project or hashlib.sha256(cwd.encode()).hexdigest(),
        "startTime": at,
        "lastUpdated": at,
        "kind": "main",
    }
    lineage = {"type": LINEAGE_TYPE, "parentSession": str(parent), "cwd": cwd}
    lines: list[Entry] = [metadata, lineage]
    lines += _recorded_turn(_message("user", [{"text": wrapped}], at), at)
    answer = _message("gemini", [{"text": ACKNOWLEDGEMENT}], at, model_name(model))
    lines += _recorded_turn(answer, at)
    for message in _kept_messages(kept, model_name(model), at):
        lines += _recorded_turn(message, at)
    return b"".join(dumps_line(line) for line in lines)


def _message(
    kind: str, content: list[Any], at: str, model: str | None = None, usage: Usage | None = None
) -> Entry:
    """A message as the CLI's ``recordMessage`` makes one (a model's with its thoughts,
    tokens and model after the rest)."""
    message: Entry = {"id": new_uuid(), "timestamp": at, "type": kind, "content": content}
    if kind == "gemini":
        tokens = None
        if usage is not None:
            total = usage.input_tokens + usage.output_tokens
            tokens = {"input": usage.input_tokens, "output": usage.output_tokens, "cached": 0,
                      "thoughts": 0, "tool": 0, "total": total}  # fmt: skip
        message |= {"thoughts": [], "tokens": tokens}
        if model is not None:
            message["model"] = model
    return message


def _recorded_turn(message: Entry, at: str) -> list[Entry]:
    """A message and the metadata patch the CLI writes after each one it records."""
    return [message, {"$set": {"lastUpdated": at}}]


def _kept_messages(kept: Kept, model: str | None, at: str) -> Iterator[Entry]:
    """The turns kept after the document, as messages: a result recorded in its call."""
    pending: dict[str, Entry] = {}
    for message in kept.shared:
        role = message.get("role")
        if role == "assistant":
            parts = [p for p in parts_from_shared(message.get("content")) if "text" in p]
            calls = [
                p["functionCall"]
                for p in parts_from_shared(message.get("content"))
                if "functionCall" in p
            ]
            made = _message("gemini", parts, at, model)
            if calls:
                made["toolCalls"] = [
                    {
                        "id": c["id"],
                        "name": c["name"],
                        "args": c["args"] or {},
                        "status": "success",
                        "timestamp": at,
                    }
                    for c in calls
                ]
                pending.update((c["id"], made) for c in calls)
            yield made
        elif role == "toolResult":
            owner = pending.get(str(message.get("toolCallId")))
            if owner is not None:
                call = next(c for c in owner["toolCalls"] if c["id"] == message.get("toolCallId"))
                output = text_of(message.get("content"))
                call["result"] = [
                    {
                        "functionResponse": {
                            "id": call["id"],
                            "name": call["name"],
                            "response": {"output": output},
                        }
                    }
                ]
                if message.get("isError"):
                    call["status"] = "error"
        else:
            yield _message("user", parts_from_shared(message.get("content")), at)


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
    """The handoff recorded as the CLI records a turn: the prompt, the document as the
    model's answer in the session's model, each followed by its ``lastUpdated``."""
    asked = _message("user", [{"text": prompt}], asked_at)
    answered = _message("gemini", [{"text": document}], answered_at, model_name(model), usage)
    return _recorded_turn(asked, asked_at) + _recorded_turn(answered, answered_at)


def recorded(lines: list[Entry], old: Session, since: bytes) -> Change:
    """Appended to a chat in JSON lines; an older chat, one JSON object, rewritten whole with
    the messages added, as the versions that wrote it rewrote it each turn."""
    chat, _ = _read(old.path)
    if chat.lines:
        return Append(lines)
    document: Any = json.loads(old.path.read_bytes())  # the pipeline checked it unchanged
    messages = [line for line in lines if "id" in line]
    document["messages"] = [*(document.get("messages") or []), *messages]
    document["lastUpdated"] = messages[-1]["timestamp"]
    return Rewrite(json.dumps(document, indent=2, ensure_ascii=False).encode())
