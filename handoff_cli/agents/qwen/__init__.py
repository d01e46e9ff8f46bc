"""Qwen Code (``@qwen-code/qwen-code``, its 0.24.4 read): its rules and its storage.

Its sessions are ``~/.qwen/projects/<cwd, every character but [A-Za-z0-9] a '-'>/chats/<id>.jsonl``
(``$QWEN_RUNTIME_DIR``, else ``$QWEN_HOME``, moves ``~/.qwen``): JSON lines, each a record with a
``uuid`` and its ``parentUuid``, its ``sessionId``, ``type`` (``user``, ``assistant``,
``tool_result``, ``system``) and, for the first three, a ``message`` in the Gemini API's
``Content`` shape. The branch resumed ends at the last record of the conversation; a
``chat_compression`` record's ``compressedHistory`` takes the place of all before it.
``qwen --resume <id>``, run in the session's cwd, resumes it.
"""

from __future__ import annotations

import copy
import json
import os
import re
import uuid
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
    model_name,
)
from handoff_cli.agents.context import Context
from handoff_cli.agents.gemini.content import (
    parts_from_shared,
    response_text,
    responses,
    shared_blocks,
    tool_result,
)
from handoff_cli.document import HANDOFF_TYPE, WRAPPER_OPEN, is_handoff_prompt
from handoff_cli.errors import SessionFileError, os_reason
from handoff_cli.said import TitleRequest
from handoff_cli.sessions.files import Append, Change
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

NAME = "qwen"
SUFFIX = ".jsonl"
OWNS_BYTES = 1 << 16
VERSION = "0.24.4"
"""The version of Qwen Code whose records we write, where the session names none."""
ACKNOWLEDGEMENT = "Understood. I will continue the work from this handoff document."
LINEAGE_KEY = "handoffParentSession"
"""Where the first record of a session we start names the session it was handed off from (a
key the agent keeps and passes over)."""
_TURNS = frozenset({"user", "assistant", "tool_result"})
_RECORD = re.compile(rb'"uuid"\s*:\s*"[^"]*"\s*,\s*"parentUuid"\s*:')
_CONTENT = re.compile(rb'"message"\s*:\s*\{\s*"role"\s*:\s*"(?:user|model)"\s*,\s*"parts"')


class Qwen(OwnFormatAgent):
    """Qwen Code's rules."""

    name = NAME
    title = "Qwen Code"

    def sessions_folders(self, env: Mapping[str, str], home: Path, cwd: Path) -> list[Path]:
        return [runtime_folder(env, home) / "projects"]

    def project_folder(self, env: Mapping[str, str], home: Path, cwd: str) -> Path | None:
        return runtime_folder(env, home) / "projects" / re.sub(r"[^a-zA-Z0-9]", "-", cwd) / "chats"

    def resume_command(self, session_id: str, path: Path, own_folder: bool) -> list[str]:
        return ["qwen", "--resume", session_id]  # looked up in the cwd's project folder

    def context(self, branch: list[Record]) -> Context:
        return _context(branch)


AGENT = Qwen()


def runtime_folder(env: Mapping[str, str], home: Path) -> Path:
    """``$QWEN_RUNTIME_DIR``, else ``$QWEN_HOME``, else ``~/.qwen``."""
    named = env.get("QWEN_RUNTIME_DIR") or env.get("QWEN_HOME")
    return Path(named).expanduser() if named else home / ".qwen"


def is_subagent(path: Path) -> bool:
    return False


def is_session_name(name: str) -> bool:
    return name.endswith(SUFFIX)


def owns_head(head: bytes) -> bool:
    """A record (``uuid`` then ``parentUuid``) whose message is a ``Content`` (``role``
    ``user`` or ``model`` with ``parts``), or a system record of its own, on the first line."""
    first = head.split(b"\n", 1)[0]
    return _RECORD.search(first) is not None and (
        _CONTENT.search(first) is not None or b'"type":"system"' in first
    )


# --- loading -----------------------------------------------------------------------------------


def _lines(path: Path) -> tuple[list[dict[str, Any]], Any, list[int]]:
    try:
        with open_regular(path) as file:
            status = os.fstat(file.fileno())
            data = file.read()
    except OSError as error:
        raise SessionFileError(path, os_reason(error)) from None
    values, skipped = [], []
    for number, raw in enumerate(data.split(b"\n"), 1):
        if not raw.strip():
            continue
        try:
            value = json.loads(raw)
        except ValueError:
            skipped.append(number)
            continue
        if isinstance(value, dict) and isinstance(value.get("uuid"), str):
            values.append(value)
        else:
            skipped.append(number)
    return values, status, skipped


def branch_of(values: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records the agent resumes: from the last of the conversation back by
    ``parentUuid`` (a record written again in pieces is the first with its uuid)."""
    by_uuid: dict[str, dict[str, Any]] = {}
    leaf = None
    for value in values:
        by_uuid.setdefault(value["uuid"], value)
        if value.get("type") in _TURNS or value.get("type") == "system":
            leaf = value["uuid"]
    chain: list[dict[str, Any]] = []
    seen: set[str] = set()
    while leaf is not None and leaf in by_uuid and leaf not in seen:
        seen.add(leaf)
        chain.append(by_uuid[leaf])
        parent = by_uuid[leaf].get("parentUuid")
        leaf = parent if isinstance(parent, str) else None
    return chain[::-1]


def load(path: Path) -> Session:
    """The session at ``path``: the records of the branch it resumes, each message of theirs
    in the shared shape, chained as they are."""
    values, status, skipped = _lines(path)
    chain = branch_of(values)
    records: list[Record] = []
    pending: dict[str, str] = {}  # each call not answered yet, by its name and arguments: its id
    for value in chain:
        messages = _shared(value, not records) or _cancelled(value, pending)
        for message in messages:
            _follow(message, pending)
        for index, message in enumerate(messages):
            entry_id = value["uuid"] if index == 0 else f"{value['uuid']}/{index}"
            parent = records[-1].id if records else None
            at = value.get("timestamp") if isinstance(value.get("timestamp"), str) else ""
            entry = {"type": "message", "id": entry_id, "parentId": parent, "timestamp": at}
            entry |= {"message": message, "of": value}
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
    session = Session(
        path, _header(path, values), records, skipped_lines=tuple(skipped), read_as=status,
        agent=NAME,
    )  # fmt: skip
    session.by_id.update((record.id, record) for record in records)
    return session


def _header(path: Path, values: list[dict[str, Any]]) -> Entry:
    first = values[0] if values else {}
    header: Entry = {
        "type": "session",
        "version": CURRENT_VERSION,
        "id": str(first.get("sessionId") or path.stem),
        "timestamp": first.get("timestamp") or "",
        "cwd": next((v["cwd"] for v in values if isinstance(v.get("cwd"), str)), ""),
    }
    title = _custom_title(values)
    if title:
        header["title"] = title
    if isinstance(first.get(LINEAGE_KEY), str):
        header["parentSession"] = first[LINEAGE_KEY]
    return header


def _custom_title(values: list[dict[str, Any]]) -> str | None:
    """The latest title a ``custom_title`` record gives the session (a rename), if any."""
    title = None
    for value in values:
        payload = value.get("systemPayload")
        if value.get("subtype") == "custom_title" and isinstance(payload, dict):
            named = payload.get("customTitle") or payload.get("title")
            title = named if isinstance(named, str) else title
    return title


def _shared(value: dict[str, Any], first: bool) -> list[Message]:
    """A record's messages in the shared shape: a user's prompt, an answer, the results a
    tool result record holds, a compression's summary."""
    kind = value.get("type")
    if kind == "system":
        if value.get("subtype") == "chat_compression":
            return [{"role": "compactionSummary", "summary": _summary(value)}]
        return []
    message = value.get("message")
    parts = message.get("parts") if isinstance(message, dict) else None
    parts = parts if isinstance(parts, list) else []
    if kind == "assistant":
        blocks = shared_blocks(parts)
        calls = any(b.get("type") == "toolCall" for b in blocks)
        model = value.get("model")
        return [{
            "role": "assistant", "content": blocks, "api": "openai-completions",
            "provider": provider_of(model), "model": model,
            "stopReason": "toolUse" if calls else "stop",
        }]  # fmt: skip
    results = [tool_result(r, str(r.get("id") or "")) for r in responses(parts)]
    blocks = shared_blocks(parts)
    text = text_of(blocks)
    if first and text.startswith(WRAPPER_OPEN):
        return [{"role": "custom", "customType": HANDOFF_TYPE, "content": text, "display": True}]
    if value.get("subtype") in ("notification", "cron"):
        return [*results, {"role": "custom", "customType": "qwen-notification",
                           "content": text, "display": False}]  # fmt: skip
    return [*results, {"role": "user", "content": blocks}] if blocks else results


def _call_key(name: Any, arguments: Any) -> str:
    return f"{name}\n{json.dumps(arguments, sort_keys=True, ensure_ascii=False)}"


def _follow(message: Message, pending: dict[str, str]) -> None:
    """Keep ``pending`` (the calls not answered yet) as ``message`` is read."""
    if message.get("role") == "assistant":
        for block in message.get("content") or ():
            if block.get("type") == "toolCall":
                pending[_call_key(block.get("name"), block.get("arguments"))] = str(block["id"])
    elif message.get("role") == "toolResult":
        answered = message.get("toolCallId")
        for key in [k for k, v in pending.items() if v == answered]:
            del pending[key]


def _cancelled(value: dict[str, Any], pending: dict[str, str]) -> list[Message]:
    """A call the user cancelled, as its result: the CLI records no result for it, only its
    telemetry (which names the call by its tool and arguments)."""
    payload = value.get("systemPayload") if value.get("subtype") == "ui_telemetry" else None
    event = payload.get("uiEvent") if isinstance(payload, dict) else None
    if not isinstance(event, dict) or event.get("event.name") != "qwen-code.tool_call":
        return []
    said = event.get("error")
    if not isinstance(said, str) or "canceled by the user" not in said:
        return []
    call = pending.get(_call_key(event.get("function_name"), event.get("function_args")))
    if call is None:
        return []
    return [{"role": "toolResult", "toolCallId": call, "toolName": event.get("function_name"),
             "content": [{"type": "text", "text": said}], "isError": True}]  # fmt: skip


def _summary(value: dict[str, Any]) -> str:
    payload = value.get("systemPayload")
    history = payload.get("compressedHistory") if isinstance(payload, dict) else None
    first = history[0] if isinstance(history, list) and history else {}
    return text_of(shared_blocks(first.get("parts") or [])) if isinstance(first, dict) else ""


def provider_of(model: Any) -> str:
    """LiteLLM's provider for a model Qwen Code names: DashScope's for Qwen's models (its own
    service), else an OpenAI-compatible one."""
    return "dashscope" if isinstance(model, str) and model.startswith("qwen") else "openai"


# --- the context: what ``qwen --resume`` sends ---------------------------------------------------


def _context(branch: list[Record]) -> Context:
    values = list(_values(branch))
    start = max((i for i, v in enumerate(values) if _compression(v) is not None), default=0)
    kept = {id(v) for v in values[start:]}
    records = [r for r in branch if r.entry is not None and id(r.entry.get("of")) in kept]
    model = next(
        (v["model"] for v in reversed(values)
         if v.get("type") == "assistant" and isinstance(v.get("model"), str)),
        None,
    )  # fmt: skip
    return Context(
        AGENT,
        head=(),
        records=records,
        changes={},
        thinking_level=UNDEFINED,
        model=f"{provider_of(model)}/{model}" if model else None,
        sent=lambda: iter(chat_messages(history(values))),
    )


def _values(branch: list[Record]) -> Iterator[dict[str, Any]]:
    seen: set[int] = set()
    for record in branch:
        value = record.entry.get("of") if record.entry is not None else None
        if isinstance(value, dict) and id(value) not in seen:
            seen.add(id(value))
            yield value


def _compression(value: dict[str, Any]) -> list[Any] | None:
    payload = value.get("systemPayload")
    if value.get("type") != "system" or value.get("subtype") != "chat_compression":
        return None
    history = payload.get("compressedHistory") if isinstance(payload, dict) else None
    return history if isinstance(history, list) else None


def history(values: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The API history the agent resumes with (its ``SessionApiHistoryAccumulator``): each
    record's message in order, a compression's history in place of all before
    it, a message the user sent mid-turn joined to the results before it."""
    contents: list[dict[str, Any]] = []
    for value in values:
        compressed = _compression(value)
        if compressed is not None:
            contents = [copy.deepcopy(c) for c in compressed if isinstance(c, dict)]
            continue
        message = value.get("message")
        if value.get("type") == "system" or not isinstance(message, dict):
            continue
        if value.get("subtype") == "realtime_message":
            continue
        message = copy.deepcopy(message)
        if (
            value.get("subtype") == "mid_turn_user_message"
            and contents
            and contents[-1].get("role") == "user"
        ):
            contents[-1]["parts"] = [*contents[-1].get("parts", []), *message.get("parts", [])]
            continue
        if message.get("role") == "user" and contents and contents[-1].get("role") == "user":
            # a user's turns in a row are sent as one
            contents[-1]["parts"] = [*contents[-1].get("parts", []), *message.get("parts", [])]
            continue
        contents.append(message)
    return contents


def chat_messages(contents: list[dict[str, Any]]) -> list[Message]:
    """The history as the OpenAI-compatible chat messages the agent sends it as: a model turn
    an assistant message (its text, its thoughts as the reasoning, its calls as
    ``tool_calls``), a user turn its results as ``tool`` messages, then its text parts as a
    user message; a call nobody answered answered by the agent's note that it was not."""
    messages: list[Message] = []
    pending: list[str] = []
    for content in contents:
        parts = [p for p in content.get("parts") or [] if isinstance(p, dict)]
        said = [p for p in parts if isinstance(p.get("text"), str)]
        texts = [p["text"] for p in said if not p.get("thought")]
        answers = list(responses(parts))
        answered = {r.get("id") for r in answers}
        if content.get("role") == "model" or texts:
            messages += _unanswered([c for c in pending if c not in answered])
            pending = []
        if content.get("role") == "model":
            calls = [p["functionCall"] for p in parts if isinstance(p.get("functionCall"), dict)]
            message: Message = {"role": "assistant", "content": "".join(texts) if said else None}
            if calls:
                message["tool_calls"] = [_tool_call(call) for call in calls]
            thoughts = [p["text"] for p in said if p.get("thought")]
            if thoughts:  # sent back as the reasoning, under both names providers read
                message["reasoning_content"] = message["reasoning"] = "".join(thoughts)
            messages.append(message)
            pending = [str(call.get("id")) for call in calls]
            continue
        for response in answers:
            text, _ = response_text(response)
            messages.append({"role": "tool", "tool_call_id": response.get("id"),
                             "content": [{"type": "text", "text": text}]})  # fmt: skip
        pending = [c for c in pending if c not in answered]
        if texts:
            messages.append(
                {"role": "user", "content": [{"type": "text", "text": t} for t in texts]}
            )
    return messages + _unanswered(pending)


NOT_RECORDED = (
    "Tool execution result was not recorded \u2014 likely interrupted by network failure, abort, "
    "or process exit. Treat as failure and retry if needed."
)


def _unanswered(calls: list[str]) -> list[Message]:
    note = [{"type": "text", "text": NOT_RECORDED}]
    return [{"role": "tool", "tool_call_id": call, "content": note} for call in calls]


def _tool_call(call: dict[str, Any]) -> Message:
    arguments = json.dumps(call.get("args") or {}, ensure_ascii=False, separators=(",", ":"))
    return {"id": call.get("id"), "type": "function",
            "function": {"name": call.get("name"), "arguments": arguments}}  # fmt: skip


# --- what ``list`` reads -------------------------------------------------------------------------


def glance(path: Path, head: bytes, tail: bytes, size: int, lines: int) -> Glance:
    values, _, _ = _lines(path)
    chain = branch_of(values)
    header = _header(path, values)
    titled = TitleRequest()
    messages = [m for v in chain for m in _shared(v, v is chain[0])]
    for message in messages:
        if message["role"] == "user" and titled.offer(text_of(message.get("content"))):
            break
    starts = bool(messages) and messages[0].get("customType") == HANDOFF_TYPE
    said = [v for v in chain if v.get("type") in ("user", "assistant")]
    ends = (
        len(said) >= 2
        and said[-1].get("type") == "assistant"
        and is_handoff_prompt(
            text_of(shared_blocks((said[-2].get("message") or {}).get("parts") or []))
        )
    )
    opening = Opening(
        header, header.get("title") or titled.request, starts, titled.found is not None
    )
    return Glance(opening, ends, len(chain))


# --- what a handoff writes ---------------------------------------------------------------------


def new_uuid() -> str:
    return str(uuid.uuid4())


def new_path(folder: Path, session_id: str) -> Path:
    return folder / f"{session_id}{SUFFIX}"


def _base(old: Session, session_id: str, kind: str, parent: str | None, at: str) -> Entry:
    """The keys every record starts with (its ``createBaseRecord``), the cwd, version and
    branch the old session's last record names."""
    last = next(
        (r.entry.get("of") for r in reversed(old.records) if r.entry and old.agent == NAME), None
    )
    last = last if isinstance(last, dict) else {}
    provenance = {
        "user": "real_user",
        "assistant": "assistant_output",
        "tool_result": "tool_result",
    }.get(kind, "system")
    record: Entry = {
        "uuid": new_uuid(), "parentUuid": parent, "sessionId": session_id, "timestamp": at,
        "type": kind, "provenance": provenance, "cwd": str(old.header.get("cwd", "")),
        "version": last.get("version") if isinstance(last.get("version"), str) else VERSION,
    }  # fmt: skip
    if isinstance(last.get("gitBranch"), str):
        record["gitBranch"] = last["gitBranch"]
    return record


def _user(old: Session, session_id: str, parts: list[Any], parent: str | None, at: str) -> Entry:
    record = _base(old, session_id, "user", parent, at)
    return record | {"message": {"role": "user", "parts": parts}}


def _assistant(
    old: Session, session_id: str, parts: list[Any], model: str | None, parent: str, at: str,
    usage: Usage | None = None,
) -> Entry:  # fmt: skip
    record = _base(old, session_id, "assistant", parent, at)
    record |= {"model": model or "unknown", "message": {"role": "model", "parts": parts}}
    if usage is not None:
        total = usage.input_tokens + usage.output_tokens
        record["usageMetadata"] = {"promptTokenCount": usage.input_tokens,
                                   "candidatesTokenCount": usage.output_tokens,
                                   "totalTokenCount": total}  # fmt: skip
    return record


def new_session(
    old: Session,
    new_id: str,
    parent: Path,
    model: str | None,
    wrapped: str,
    at: str,
    kept: Kept = NOTHING_KEPT,
) -> bytes:
    """The session the agent resumes with the document first, then the model's
    acknowledgement and the ``kept`` messages; its first record names the old session."""
    document = _user(old, new_id, [{"text": wrapped}], None, at) | {LINEAGE_KEY: str(parent)}
    answer = _assistant(
        old, new_id, [{"text": ACKNOWLEDGEMENT}], model_name(model), document["uuid"], at
    )
    records = [document, answer]
    for message in kept.shared:
        parts = parts_from_shared(message.get("content"))
        leaf = records[-1]["uuid"]
        if message.get("role") == "assistant":
            records.append(_assistant(old, new_id, parts, model_name(model), leaf, at))
        elif message.get("role") == "toolResult":
            response = {"id": message.get("toolCallId"), "name": message.get("toolName"),
                        "response": {"output": text_of(message.get("content"))}}  # fmt: skip
            result = _base(old, new_id, "tool_result", leaf, at)
            records.append(
                result | {"message": {"role": "user", "parts": [{"functionResponse": response}]}}
            )
        elif parts:
            records.append(_user(old, new_id, parts, leaf, at))
    return b"".join(dumps_line(r) for r in records)


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
    """The handoff as the agent records a turn: the prompt from the leaf's record, the
    document as the answer in the session's model."""
    leaf = old.by_id[leaf_id].entry if leaf_id in old.by_id else None
    parent = leaf["of"]["uuid"] if leaf is not None else None
    asked = _user(old, old.id, [{"text": prompt}], parent, asked_at)
    answered = _assistant(
        old, old.id, [{"text": document}], model_name(model), asked["uuid"], answered_at, usage
    )
    return [asked, answered]


def recorded(lines: list[Entry], old: Session, since: bytes) -> Change:
    return Append(lines)
