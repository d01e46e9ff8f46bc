"""opencode (``opencode-ai``, its 1.18.33 read): its rules and its storage, a SQLite database
(``db``) holding every session: ``$XDG_DATA_HOME/opencode/opencode.db`` (``~/.local/share``
without it; ``$OPENCODE_DB`` names another). A session is named ``<database>/<session id>``.

``opencode -s <id>`` (``opencode run -s <id> …``) continues one, sending the messages since its
last compaction, each assistant step its own message, a tool call's result a ``tool`` message
after it (``oracles/opencode/NOTES.md``).
"""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
import time
from collections.abc import Iterator, Mapping
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
from handoff_cli.agents.opencode import db
from handoff_cli.document import HANDOFF_TYPE, WRAPPER_OPEN, is_handoff_prompt
from handoff_cli.errors import SessionChangedError, SessionFileError, SessionLockedError
from handoff_cli.said import TitleRequest
from handoff_cli.sessions.files import Change, Insert, iso_timestamp, millis
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

NAME = "opencode"
SUFFIX = ".db"
OWNS_BYTES = len(db.MAGIC)
STORE = True
"""One file holds many sessions, each named ``<file>/<session id>``."""
VERSION = "1.18.33"
ACKNOWLEDGEMENT = "Understood. I will continue the work from this handoff document."
COMPACTION_QUESTION = "What did we do so far?"
"""What a compaction's user message is sent as."""
_INTERRUPTED = "[Tool execution was interrupted]"
_CLEARED = "[Old tool result content cleared]"


class Opencode(OwnFormatAgent):
    """opencode's rules."""

    name = NAME
    title = "opencode"

    def sessions_folders(self, env: Mapping[str, str], home: Path, cwd: Path) -> list[Path]:
        return [data_folder(env, home)]

    def project_folder(self, env: Mapping[str, str], home: Path, cwd: str) -> Path | None:
        # It works in the session's folder, which must be a path here (not another system's).
        return database(env, home) if os.path.isabs(cwd) else None

    def resume_command(self, session_id: str, path: Path, own_folder: bool) -> list[str]:
        return ["opencode", "--session", session_id]

    def context(self, branch: list[Record]) -> Context:
        return _context(branch)


AGENT = Opencode()


def data_folder(env: Mapping[str, str], home: Path) -> Path:
    named = env.get("XDG_DATA_HOME")
    return (Path(named).expanduser() if named else home / ".local/share") / "opencode"


def database(env: Mapping[str, str], home: Path) -> Path:
    """``$OPENCODE_DB`` (a relative name under the data folder), else ``opencode.db``."""
    named = env.get("OPENCODE_DB")
    if named and named != ":memory:":
        return data_folder(env, home) / Path(named).expanduser()
    return data_folder(env, home) / "opencode.db"


def is_session_name(name: str) -> bool:
    return name.startswith("opencode") and name.endswith(SUFFIX)


def is_subagent(path: Path) -> bool:
    return False


def owns_head(head: bytes) -> bool:
    return head.startswith(db.MAGIC)


def members(path: Path) -> list[Path]:
    """The sessions the database at ``path`` holds, newest first."""
    try:
        with _reading(path) as connection:
            return [path / str(row["id"]) for row in db.sessions(connection)]
    except sqlite3.DatabaseError:
        return []


class _reading:
    def __init__(self, path: Path) -> None:
        self.path = path

    def __enter__(self) -> sqlite3.Connection:
        self.connection = db.reading(self.path)
        return self.connection

    def __exit__(self, *exc: object) -> None:
        self.connection.close()


# --- loading -------------------------------------------------------------------------------------


def _loaded(path: Path) -> db.Loaded:
    try:
        with _reading(path.parent) as connection:
            found = db.load(connection, path.name)
    except sqlite3.DatabaseError as error:
        raise SessionFileError(path, f"not an opencode database ({error})") from None
    if found is None:
        raise SessionFileError(path, "no such session in the database")
    return found


def load(path: Path) -> Session:
    found = _loaded(path)
    records: list[Record] = []
    for number, (info, parts) in enumerate(found.messages):
        for index, message in enumerate(_shared(info, parts, number == 0)):
            entry_id = str(info["id"]) if index == 0 else f"{info['id']}/{index}"
            parent = records[-1].id if records else None
            at = iso_timestamp(_moment(info))
            entry: Entry = {"type": "message", "id": entry_id, "parentId": parent}
            entry |= {"timestamp": at, "message": message, "of": (info, parts)}
            facts = message_facts(message)
            span = spanning(0, 0)
            records.append(
                Record(entry_id, parent, "message", span, entry, facts, at, dumps(message))
            )
    row = found.session
    header: Entry = {
        "type": "session",
        "version": CURRENT_VERSION,
        "id": row["id"],
        "timestamp": iso_timestamp(_datetime(row["time_created"])),
        "cwd": row["directory"],
        "title": None if _default_title(row["title"]) else row["title"],
    }
    if row.get("parent_id"):
        header |= {"parentSession": row["parent_id"], "subagent": True}
    lineage = _lineage(row)
    if lineage:
        header["parentSession"] = lineage
    session = Session(path, header, records, agent=NAME, stored_as=found.version)
    session.by_id.update((record.id, record) for record in records)
    return session


def _moment(info: dict[str, Any]) -> Any:
    created = (info.get("time") or {}).get("created")
    return _datetime(created if isinstance(created, (int, float)) else 0)


def _datetime(ms: Any) -> Any:
    from datetime import datetime, timezone

    return datetime.fromtimestamp((ms or 0) / 1000, timezone.utc)


def _default_title(title: Any) -> bool:
    """The title a session has until its first answer names it (``New session - <time>``)."""
    return not isinstance(title, str) or title.startswith(("New session - ", "Child session - "))


def _lineage(row: dict[str, Any]) -> str | None:
    """The session ours was handed off from, which its ``metadata`` names."""
    try:
        metadata = json.loads(row.get("metadata") or "null")
    except ValueError:
        return None
    named = metadata.get("handoffParentSession") if isinstance(metadata, dict) else None
    return named if isinstance(named, str) else None


def _texts(parts: list[dict[str, Any]]) -> list[str]:
    return [
        p["text"]
        for p in parts
        if p.get("type") == "text"
        and isinstance(p.get("text"), str)
        and p["text"]
        and not p.get("ignored")
    ]


def _shared(info: dict[str, Any], parts: list[dict[str, Any]], first: bool) -> list[Message]:
    """A message and its parts in the shared shape: a user's text (a compaction's question),
    or an answer's text, reasoning and tool calls, then each call's result."""
    if info.get("role") == "user":
        texts = _texts(parts)
        if any(p.get("type") == "compaction" for p in parts):
            return [{"role": "compactionSummary", "summary": COMPACTION_QUESTION}]
        text = "\n".join(texts)
        if first and text.startswith(WRAPPER_OPEN):
            return [
                {"role": "custom", "customType": HANDOFF_TYPE, "content": text, "display": True}
            ]
        # Text the agent adds to a user's message (``synthetic``: a file's reading for an
        # @-mention, "The following tool was executed by the user") is sent, not said.
        added = {p["text"] for p in parts if p.get("synthetic") and isinstance(p.get("text"), str)}
        said = [{"type": "text", "text": t} for t in texts if t not in added]
        found: list[Message] = [{"role": "user", "content": said}] if said or not added else []
        if added & set(texts):
            content = "\n".join(t for t in texts if t in added)
            found.append({"role": "custom", "customType": "opencode-synthetic", "content": content,
                          "display": False})  # fmt: skip
        return found
    blocks: list[Any] = []
    results: list[Message] = []
    for part in parts:
        kind = part.get("type")
        if kind == "text" and isinstance(part.get("text"), str):
            blocks.append({"type": "text", "text": part["text"]})
        elif kind == "reasoning" and isinstance(part.get("text"), str):
            blocks.append({"type": "thinking", "thinking": part["text"]})
        elif kind == "tool":
            state = part.get("state") or {}
            call = str(part.get("callID") or part.get("id"))
            blocks.append(
                {
                    "type": "toolCall",
                    "id": call,
                    "name": part.get("tool"),
                    "arguments": state.get("input") or {},
                }
            )
            output, failed = _result(state)
            # A command that exited non-zero is "completed", its code in the metadata only.
            metadata = state.get("metadata")
            code = metadata.get("exit") if isinstance(metadata, dict) else None
            failed = failed or (isinstance(code, int) and not isinstance(code, bool) and code != 0)
            results.append(
                {
                    "role": "toolResult",
                    "toolCallId": call,
                    "toolName": part.get("tool"),
                    "content": [{"type": "text", "text": output}],
                    "isError": failed,
                }
            )
    if info.get("summary") is True:
        return [{"role": "compactionSummary", "summary": text_of(blocks)}]
    answer = {
        "role": "assistant",
        "content": blocks,
        "api": "openai-completions",
        "provider": info.get("providerID"),
        "model": info.get("modelID"),
        "stopReason": "error" if info.get("error") else ("toolUse" if results else "stop"),
    }
    return [answer, *results]


def _result(state: dict[str, Any]) -> tuple[str, bool]:
    """What a tool part's call is answered with, as the agent sends it."""
    status = state.get("status")
    if status == "completed":
        time_ = state.get("time") or {}
        return (_CLEARED if time_.get("compacted") else str(state.get("output", ""))), False
    if status == "error":
        return str(state.get("error", "")), True
    return _INTERRUPTED, True


# --- the context: what ``opencode -s`` sends -----------------------------------------------------


def _messages_of(branch: list[Record]) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    seen: set[str] = set()
    found = []
    for record in branch:
        pair = record.entry.get("of") if record.entry is not None else None
        if pair is not None and pair[0]["id"] not in seen:
            seen.add(pair[0]["id"])
            found.append(pair)
    return found


def since_compaction(
    messages: list[tuple[dict[str, Any], list[dict[str, Any]]]],
) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """The messages the agent sends (its ``filterCompacted``): from the user message its last
    finished summary answers, and, where that compaction kept recent turns, from the first of
    them, in the agent's order."""
    compacted: str | None = None
    kept: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
    tail_start: str | None = None
    for info, parts in reversed(messages):
        kept.append((info, parts))
        if (
            info.get("role") == "assistant"
            and info.get("summary") is True
            and info.get("finish")
            and not info.get("error")
        ):
            compacted = info.get("parentID")
        if compacted is not None and info["id"] == compacted:
            tail_start = next(
                (p.get("tail_start_id") for p in parts if p.get("type") == "compaction"), None
            )
            if tail_start is None:
                return kept[::-1]
        if tail_start is not None and info["id"] == tail_start:
            ordered = kept[::-1]
            start = next(i for i, (m, _) in enumerate(ordered) if m["id"] == compacted)
            summary = next(
                (
                    i
                    for i, (m, _) in enumerate(ordered)
                    if m.get("summary") is True and m.get("parentID") == compacted
                ),
                start,
            )
            tail = ordered[:start]
            return [
                ordered[start],
                ordered[summary],
                *tail,
                *[pair for i, pair in enumerate(ordered) if i > start and i != summary],
            ]
    return kept[::-1]


def chat_messages(
    messages: list[tuple[dict[str, Any], list[dict[str, Any]]]], model: str | None
) -> Iterator[Message]:
    """The messages as opencode sends them to an OpenAI-compatible model (``toModelMessages``),
    continued on ``model``: an answer of that model sends its reasoning as
    ``reasoning_content`` (empty when its reasoning is: a signed, redacted thought), another
    model's as text, joined to its text in order."""
    for info, parts in messages:
        if info.get("role") == "user":
            texts = _texts(parts)
            if any(p.get("type") == "compaction" for p in parts):
                texts = [COMPACTION_QUESTION, *texts]
            if texts:
                content: Any = (
                    texts[0] if len(texts) == 1 else [{"type": "text", "text": t} for t in texts]
                )
                yield {"role": "user", "content": content}
            continue
        if info.get("error") and not _aborted_with_content(info, parts):
            continue
        same = f"{info.get('providerID')}/{info.get('modelID')}" == model
        said = [p for p in parts if p.get("type") in ("text", "reasoning") and p.get("text")]
        text = "".join(p["text"] for p in said if p["type"] == "text" or not same)
        thoughts = [p for p in parts if p.get("type") == "reasoning" and same]
        calls = [p for p in parts if p.get("type") == "tool"]
        message: Message = {"role": "assistant", "content": text}
        if calls:
            message["tool_calls"] = [_call(p) for p in calls]
        if thoughts:
            message["reasoning_content"] = "".join(str(p.get("text") or "") for p in thoughts)
        if calls or text or thoughts:
            yield message
        for part in calls:
            output, _ = _result(part.get("state") or {})
            yield {"role": "tool", "tool_call_id": part.get("callID"), "content": output}


def _aborted_with_content(info: dict[str, Any], parts: list[dict[str, Any]]) -> bool:
    error = info.get("error")
    aborted = isinstance(error, dict) and error.get("name") == "MessageAbortedError"
    return aborted and any(p.get("type") not in ("step-start", "reasoning") for p in parts)


def _call(part: dict[str, Any]) -> Message:
    arguments = (part.get("state") or {}).get("input") or {}
    return {
        "id": part.get("callID"),
        "type": "function",
        "function": {
            "name": part.get("tool"),
            "arguments": json.dumps(arguments, ensure_ascii=False, separators=(",", ":")),
        },
    }


def _context(branch: list[Record]) -> Context:
    messages = since_compaction(_messages_of(branch))
    ids = {info["id"] for info, _ in messages}
    records = [r for r in branch if r.entry is not None and r.entry["of"][0]["id"] in ids]
    model = next(
        (
            f"{i['providerID']}/{i['modelID']}"
            for i, _ in reversed(messages)
            if i.get("role") == "assistant" and i.get("providerID") and i.get("modelID")
        ),
        None,
    )
    return Context(
        AGENT, (), records, {}, UNDEFINED, model, sent=lambda: chat_messages(messages, model)
    )


# --- what ``list`` reads -------------------------------------------------------------------------


def glance(path: Path, head: bytes, tail: bytes, size: int, lines: int) -> Glance:
    session = load(path)
    messages = [r.entry["message"] for r in session.records if r.entry is not None]
    titled = TitleRequest()
    for message in messages:
        if message["role"] == "user" and titled.offer(text_of(message.get("content"))):
            break
    starts = bool(messages) and messages[0].get("customType") == HANDOFF_TYPE
    said = [m for m in messages if m["role"] in ("user", "assistant")]
    ends = (
        len(said) >= 2
        and said[-1]["role"] == "assistant"
        and is_handoff_prompt(text_of(said[-2].get("content")))
    )
    title = session.header.get("title") or titled.request
    opening = Opening(session.header, title, starts, titled.found is not None)
    size = sum(record.message_size for record in session.records)  # not the database's
    return Glance(opening, ends, len(messages), size)


# --- what a handoff writes -----------------------------------------------------------------------

_BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_last = [0, 0]


def _id(prefix: str, descending: bool = False, ms: int | None = None) -> str:
    """An id as the agent makes one: the time and a counter in 12 hex digits (inverted for a
    session, so newer ones sort first), then 14 random base-62 characters."""
    now = ms if ms is not None else int(time.time() * 1000)
    if now != _last[0]:
        _last[0], _last[1] = now, 0
    _last[1] += 1
    value = now * 4096 + _last[1]
    if descending:
        value = ~value
    tail = "".join(_BASE62[b % 62] for b in secrets.token_bytes(14))
    return f"{prefix}_{value & (2**48 - 1):012x}{tail}"


def new_uuid() -> str:
    return _id("ses", descending=True)


def new_path(folder: Path, session_id: str) -> Path:
    """In the database: ``folder`` is the database (the old session's, or the agent's)."""
    return (folder if folder.suffix == SUFFIX else database(os.environ, Path.home())) / session_id


def _model(model: str | None) -> tuple[str, str]:
    provider, _, name = (model or "").partition("/")
    return (provider, name) if name else ("opencode", model or "unknown")


def _user(session_id: str, text: str, at: int, model: tuple[str, str]) -> dict[str, Any]:
    message_id = _id("msg", ms=at)
    info: Entry = {
        "role": "user",
        "time": {"created": at},
        "agent": "build",
        "model": {"providerID": model[0], "modelID": model[1]},
        "id": message_id,
        "sessionID": session_id,
    }
    return {"info": info, "parts": [_text_part(session_id, message_id, text, at, timed=False)]}


def _assistant(
    session_id: str,
    parent: str,
    text: str,
    at: int,
    model: tuple[str, str],
    cwd: str,
    usage: Usage | None = None,
) -> dict[str, Any]:
    used = usage or Usage()
    tokens = {
        "total": used.input_tokens + used.output_tokens,
        "input": used.input_tokens,
        "output": used.output_tokens,
        "reasoning": 0,
        "cache": {"write": 0, "read": 0},
    }
    message_id = _id("msg", ms=at)
    info: Entry = {
        "parentID": parent,
        "role": "assistant",
        "mode": "build",
        "agent": "build",
        "path": {"cwd": cwd, "root": cwd},
        "cost": 0,
        "tokens": tokens,
        "modelID": model[1],
        "providerID": model[0],
        "time": {"created": at, "completed": at},
        "finish": "stop",
        "id": message_id,
        "sessionID": session_id,
    }
    return {"info": info, "parts": [_text_part(session_id, message_id, text, at, timed=True)]}


def _text_part(session_id: str, message_id: str, text: str, at: int, timed: bool) -> Entry:
    """A text part as the agent stores one: an answer's with the time it was written."""
    part: Entry = {"type": "text", "text": text}
    if timed:
        part["time"] = {"start": at, "end": at}
    return part | {"id": _id("prt", ms=at), "sessionID": session_id, "messageID": message_id}


def new_session(
    old: Session,
    new_id: str,
    parent: Path,
    model: str | None,
    wrapped: str,
    at: str,
    kept: Kept = NOTHING_KEPT,
) -> bytes:
    """The new session as ``opencode export`` prints one (what the database's writer inserts):
    the document as the user's first message, the model's acknowledgement."""
    when = millis(at)
    cwd = str(old.header.get("cwd", ""))
    chosen = _model(model)
    first = _user(new_id, wrapped, when, chosen)
    answer = _assistant(new_id, first["info"]["id"], ACKNOWLEDGEMENT, when, chosen, cwd)
    messages = [first, answer]
    for message in kept.shared:
        text = text_of(message.get("content"))
        if not text:
            continue
        if message.get("role") == "assistant":
            messages.append(_assistant(new_id, messages[-1]["info"]["id"], text, when, chosen, cwd))
        else:
            messages.append(_user(new_id, text, when, chosen))
    title = old.title
    info = {
        "id": new_id,
        "directory": cwd,
        "title": f"Handoff: {title}" if title else f"New session - {at}",
        "model": {"id": chosen[1], "providerID": chosen[0]},
        "time": {"created": when, "updated": when},
        "metadata": {"handoffParentSession": str(parent)},
    }
    return json.dumps({"info": info, "messages": messages}, ensure_ascii=False).encode()


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
    """The handoff as a turn of the session's: our prompt, the document answering it in the
    session's model."""
    chosen = _model(model)
    asked = _user(old.id, prompt, millis(asked_at), chosen)
    cwd = str(old.header.get("cwd", ""))
    answered = _assistant(
        old.id, asked["info"]["id"], document, millis(answered_at), chosen, cwd, usage
    )
    return [asked, answered]


def recorded(lines: list[Entry], old: Session, since: bytes) -> Change:
    return Insert(old.id, lines)


# --- the database's writer (``files.Store``) -----------------------------------------------------


def insert_new(connection: sqlite3.Connection, data: bytes) -> None:
    """A new session (``new_session``'s bytes) inserted: its project (the one the database
    knows for its cwd, else ``global``), its row, its messages."""
    made = json.loads(data)
    info = made["info"]
    project, worktree = db.project_for(connection, info["directory"])
    if project == "global":
        created = info["time"]["created"]
        place = {"id": "global", "worktree": "/", "vcs": None, "sandboxes": "[]"}
        place |= {"time_created": created, "time_updated": created}
        db.insert(connection, "project", place, or_ignore=True)
    relative = os.path.relpath(info["directory"], worktree) if info["directory"] else ""
    row = {
        "id": info["id"],
        "project_id": project,
        "slug": _slug(),
        "directory": info["directory"],
        "path": "" if relative == "." else relative.replace("\\", "/"),
        "title": info["title"],
        "version": VERSION,
        "metadata": json.dumps(info["metadata"]),
        "agent": "build",
        "model": json.dumps(info["model"], separators=(",", ":")),
        "time_created": info["time"]["created"],
        "time_updated": info["time"]["updated"],
    }
    db.insert(connection, "session", row)
    db.insert_messages(connection, info["id"], made["messages"])


_ADJECTIVES = ("brave", "calm", "clever", "cosmic", "crisp", "curious", "eager", "gentle", "quiet")
_NOUNS = ("cabin", "canyon", "comet", "falcon", "harbor", "meadow", "otter", "river", "wolf")


def _slug() -> str:
    return f"{secrets.choice(_ADJECTIVES)}-{secrets.choice(_NOUNS)}"


# --- the store: its sessions held and written in transactions (``base.Store``) -------------------


class Holding:
    """A session of the database held for a write: a write transaction begun, committed when
    left without an error, rolled back otherwise (nothing written on a failure or a cancel)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self.connection = db.writing(path.parent)
            self.connection.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as error:
            raise SessionLockedError(path.parent, db.WAIT_S) from error

    def __enter__(self) -> Holding:
        return self

    def __exit__(self, kind: object, *exc_info: object) -> None:
        try:
            self.connection.execute("COMMIT" if kind is None else "ROLLBACK")
        finally:
            self.connection.close()

    def unchanged(self, session: Session, digest: bytes, strictly: bool) -> None:
        now = db.version(self.connection, session.id)
        if now[:2] == (0, 0) and session.stored_as[:2] != (0, 0):
            raise SessionChangedError(self.path, "it is gone")
        if now != session.stored_as:
            raise SessionChangedError(self.path, "it was written to")

    def added(self, session: Session) -> bytes:
        return b""  # what is added is rows, and the check above refuses any

    def write(self, change: Change) -> None:
        if not isinstance(change, Insert):
            raise TypeError(f"{self.path} is in a database: it takes rows, not lines")
        db.insert_messages(self.connection, change.session_id, change.rows)

    def insert_new(self, data: bytes) -> None:
        insert_new(self.connection, data)


def hold(path: Path) -> Holding:
    return Holding(path)


def write_new(path: Path, data: bytes, held: Any) -> Path:
    """The new session's rows: in ``held``'s transaction where it holds this database, else
    in a transaction of their own."""
    if isinstance(held, Holding) and held.path.parent == path.parent:
        held.insert_new(data)
        return path
    with Holding(path) as own:
        own.insert_new(data)
    return path


def take_back(path: Path) -> None:
    """The new session's rows deleted again (its messages and parts go with it)."""
    with Holding(path) as own:
        own.connection.execute("DELETE FROM session WHERE id = ?", (path.name,))
