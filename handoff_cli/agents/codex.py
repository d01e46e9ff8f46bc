"""Codex (0.171.0): every rule of its own (docs/codex.md).

Codex keeps a session as a rollout: ``${CODEX_HOME:-~/.codex}/sessions/YYYY/MM/DD/
rollout-<local time>-<id>.jsonl``, one ``{timestamp, [ordinal,] type, payload}`` line per event,
the first a ``session_meta``. This module reads a rollout into the shared ``Session`` (``load``)
and holds how Codex rebuilds the history it sends when it resumes one (checked against the
real CLI: tests/fixtures/codex/, each rule's fixture named in the docs):

- The history is made of ``response_item`` lines only, in order; events, ``turn_context``,
  ``world_state``, unknown types and lines that are not JSON objects are not in it, and an item
  keeps only the keys Codex knows (an unknown item type is not sent at all).
- A ``compacted`` line with a ``replacement_history`` replaces everything before it with that
  list; without one (legacy), the history becomes the user messages so far and a user message
  holding its ``message``. ``event_msg/thread_rolled_back`` drops the last ``num_turns`` turns.
- A call without its output gets an output "aborted" right after it; an output without its
  call is dropped. Reasoning and encrypted items go back as written; an image is sent as the
  text Codex puts in its place for a model that takes none.
- The context leaves out what Codex makes for each request (its developer messages, the
  environment context, the AGENTS.md instructions), wherever they are.
- The model: the last ``turn_context``'s, as ``openai/<model>``.

Each item is also read as one message in the shared shape (pi's roles and blocks; Codex's shell
tools as ``bash``), which is what the facts, the conversation sent to the writer and the views
read; the context's JSON is Codex's own items (``Context.sent``).

What it writes: a new rollout and the exchange in the old one (a handoff), or, in place,
Codex's own compaction holding the document (``Codex.compaction``), as the real CLI's
``/compact`` writes one (tests/fixtures/codex/inplace/).
"""

from __future__ import annotations

import base64
import binascii
import os
import re
import shlex
import uuid
import zlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple, TypeGuard

from handoff_cli.agents.base import (
    LINEAGE_TYPE,
    NOTHING_KEPT,
    Compacted,
    Compaction,
    Glance,
    Kept,
    LineEnds,
    Mask,
    Message,
    Opening,
    OwnFormatAgent,
    Usage,
    glance_lines,
)
from handoff_cli.agents.context import Context
from handoff_cli.document import (
    HANDOFF_TYPE,
    WRAPPER_CLOSE,
    WRAPPER_OPEN,
    is_handoff_prompt,
    summarised_document,
    wrap_document,
)
from handoff_cli.errors import AlreadyCompactedError, SessionFileError, os_reason
from handoff_cli.said import TitleRequest
from handoff_cli.sessions.files import Append, Change, uuid7
from handoff_cli.sessions.js import UNDEFINED
from handoff_cli.sessions.jsonl import (
    LONGEST_TEXT,
    dumps,
    dumps_line,
    parse_bounded,
    parse_line,
    whole_size,
)
from handoff_cli.sessions.session import (
    BOM,
    CURRENT_VERSION,
    Entry,
    Record,
    Session,
    Source,
    file_lines,
    message_facts,
    open_regular,
    session_title,
    spanning,
)
from handoff_cli.text import quarter_of, quarter_tokens, text_of

NAME = "codex"
SUFFIX = ".jsonl"
HEADER_LINES = 1
"""Its ``session_meta``."""
PROVIDER = "openai"
"""LiteLLM's name for the provider of the models Codex names."""
OWNS_BYTES = 1 << 20
"""How far into a file its first line is looked for (a ``session_meta`` holds Codex's whole
base instructions)."""
VERSION = "0.171.0"
"""The version of Codex whose shapes we write, where the rollout names none."""
ABORTED = "aborted"
"""The output Codex gives a call that has none."""
IMAGE_OMITTED = "image content omitted because it could not be processed"

_KEYS = {
    "message": ("type", "id", "role", "content", "phase", "status"),
    "reasoning": ("type", "id", "summary", "content", "encrypted_content"),
    "function_call": ("type", "id", "name", "namespace", "arguments", "call_id", "status"),
    "function_call_output": ("type", "id", "call_id", "output", "status"),
    "custom_tool_call": ("type", "id", "status", "call_id", "name", "input"),
    "custom_tool_call_output": ("type", "id", "call_id", "name", "output"),
    "local_shell_call": ("type", "id", "call_id", "status", "action"),
    "web_search_call": ("type", "id", "status", "action"),
    "image_generation_call": ("type", "id", "status", "revised_prompt", "result"),
    "compaction": ("type", "encrypted_content"),
    "agent_message": ("type", "author", "recipient", "content"),
}
"""The items Codex knows, each with the keys it sends back (``written/unknown-types``)."""
_NULLS: dict[str, tuple[str, ...]] = {"reasoning": ("content", "encrypted_content")}
"""The keys Codex sends as null when an item has none (``written/reasoning``)."""
_OUTPUTS = {
    "function_call": "function_call_output",
    "local_shell_call": "function_call_output",
    "custom_tool_call": "custom_tool_call_output",
}
"""A call's type, and the type of the output that answers it."""
_OWN_CONTEXT = (
    ("<environment_context>", "</environment_context>"),
    ("# AGENTS.md instructions", "</INSTRUCTIONS>"),
)
"""The user messages Codex makes for each request (its start and end): not the user's."""
_NOT_TURNS = ("<user_shell_command>", "<turn_aborted>", "<skill>", "<subagent_notification>")
"""User messages that Codex records but that start no turn of the user's."""
_META_START = re.compile(rb'\{"timestamp": ?"[^"]*", ?(?:"ordinal": ?0, ?)?"type": ?"session_meta"')
"""How a ``session_meta`` line starts, for one longer than the head read."""
_DATA_URL = re.compile(r"data:([\w.+/-]+);base64,(.*)", re.S)
_SHELL_TOOLS = frozenset(
    {"exec_command", "shell", "local_shell", "container.exec", "shell_command"}
)
_SHELLS = frozenset(("bash", "sh", "zsh", "dash"))
_SCRIPT_FLAGS = frozenset(("-c", "-lc", "-ic"))


class Codex(OwnFormatAgent):
    """Codex's rules, as the ``Agent`` protocol asks them."""

    name = NAME
    title = "Codex"

    def sessions_folders(self, env: Mapping[str, str], home: Path, cwd: Path) -> list[Path]:
        return [home_folder(env, home) / "sessions"]

    def project_folder(self, env: Mapping[str, str], home: Path, cwd: str) -> Path | None:
        return dated(home_folder(env, home) / "sessions")

    def resume_command(self, session_id: str, path: Path, own_folder: bool) -> list[str]:
        # By its id: Codex finds a rollout in its folders before its state database knows it
        # (``candidates/results.json``); it takes no path.
        return ["codex", "resume", session_id]

    def context(self, branch: list[Record]) -> Context:
        return _context(branch)

    def compaction(self, session: Session, branch: list[Record]) -> Compaction:
        return _compaction(branch)

    def starts_turn(self, record: Record, previous: Record | None) -> bool:
        return _starts_turn(_raw(record)["payload"])  # its text's head and tail say

    def loses_model(self, branch: list[Record]) -> bool:
        return False  # the model is the configuration's, named again in each turn_context


AGENT = Codex()


# --- where its sessions are, and how a file is known as its ---------------------------------


def home_folder(env: Mapping[str, str], home: Path) -> Path:
    """Codex's home: ``$CODEX_HOME``, else ``~/.codex``."""
    named = env.get("CODEX_HOME")
    return Path(named).expanduser() if named else home / ".codex"


def dated(sessions: Path, moment: datetime | None = None) -> Path:
    """The folder Codex starts a rollout in today (local time): ``sessions/YYYY/MM/DD``."""
    moment = moment or datetime.now().astimezone()
    return sessions / f"{moment:%Y}" / f"{moment:%m}" / f"{moment:%d}"


def new_folder(beside: Path) -> Path:
    """Where a rollout handed off from one in ``beside`` goes: today's folder of the same
    ``sessions`` folder when ``beside`` is a date's, else ``beside`` itself."""
    parts = beside.parts[-3:]
    if len(parts) == 3 and all(p.isascii() and p.isdigit() for p in parts):  # not ² nor ٣
        return dated(beside.parent.parent.parent)
    return beside


def owns(path: Path) -> bool:
    """Whether the file at ``path`` is a rollout (``owns_head`` of its start); False for
    anything unreadable (the shared loader then says why)."""
    try:
        with open_regular(path) as file:
            head = file.read(OWNS_BYTES)
    except (OSError, SessionFileError):
        return False
    return owns_head(head)


def is_session_name(name: str) -> bool:
    return name.endswith(SUFFIX)


def owns_head(head: bytes) -> bool:
    """Whether a file starting with ``head`` is a rollout: its first line is a
    ``session_meta`` (Codex refuses a rollout without one), or, cut off by the read, starts
    as one."""
    first = head.removeprefix(BOM).split(b"\n", 1)[0]
    try:
        value = parse_line(first)
    except ValueError:
        return _META_START.match(first) is not None
    return isinstance(value, dict) and (
        (value.get("type") == "session_meta" and isinstance(value.get("payload"), dict))
        or _legacy_meta(value)
    )


def _legacy_meta(value: Entry) -> bool:
    """The first line of a rollout of Codex's 2025 format: its meta, bare (an id, a time, the
    instructions), before the items, bare too, and ``{"record_type": "state"}`` lines."""
    return (
        "type" not in value
        and "payload" not in value
        and isinstance(value.get("id"), str)
        and isinstance(value.get("timestamp"), str)
    )


LEGACY = (
    f"a Codex rollout of its 2025 format (no session_meta), which Codex {VERSION} no longer "
    "resumes: read here as a transcript"
)


def _line(value: Any, number: int) -> Any:
    """A line as this module reads it: one of the 2025 format in today's shape (its meta as a
    ``session_meta``, a bare item as a ``response_item``, its state lines as nothing)."""
    if not isinstance(value, dict) or "payload" in value:
        return value
    if number == 1 and _legacy_meta(value):
        return {"type": "session_meta", "payload": value, "timestamp": value["timestamp"]}
    if value.get("type") in _KEYS:
        return {"type": "response_item", "payload": value}
    return value


# --- loading ----------------------------------------------------------------------------------


def load(path: Path) -> Session:
    """Read a rollout into a ``Session``: the lines the history is rebuilt from as a chain of
    records in file order (items as messages in the shared shape, ``compacted`` lines as
    compaction summaries, ``turn_context`` lines naming the model, rollbacks), a header made of
    the ``session_meta`` (and of our lineage line), the last line's ordinal kept to go on from.
    Lines that are not JSON objects are listed in ``skipped_lines``.

    A text longer than ``LONGEST_TEXT`` is read as its head and tail (``parse_bounded``), which
    is all a record's facts need; the message of such a line is made again from it when it is
    read (``_Long``), never held: a line of 100 MB is never held parsed (four times its size,
    for a text with one emoji)."""
    try:
        with open_regular(path) as file:
            source = _File(path, os.dup(file.fileno()))
            session = _load(path, file, source)
    except OSError as error:
        raise SessionFileError(path, os_reason(error)) from None
    return session


def _load(path: Path, file: Any, source: _File) -> Session:
    header: Entry = {"type": "session", "version": CURRENT_VERSION, "id": path.stem}
    records: list[Record] = []
    skipped: list[int] = []
    parent: str | None = None
    model: Any = None
    names: dict[str, str] = {}
    typed: set[str] = set()
    """What the person typed, as Codex records it (``user_message`` events)."""
    legacy = False
    for number, offset, raw in file_lines(file, path):  # a long line read once, by its offset
        try:
            try:
                value = parse_bounded(raw.removeprefix(BOM) if number == 1 else raw)
            except ValueError:
                if raw.strip():
                    skipped.append(number)
                continue
            if not isinstance(value, dict):
                skipped.append(number)
                continue
            if number == 1 and _legacy_meta(value):
                legacy = True
            value = _line(value, number)
            if "ordinal" in value:
                header["ordinal"] = value["ordinal"]
            kind, payload = value.get("type"), value.get("payload")
            if not isinstance(payload, dict):
                continue
            if kind == "session_meta" and number == 1:
                _meta(header, payload)
                continue
            if kind == LINEAGE_TYPE and isinstance(payload.get("parentSession"), str):
                header["parentSession"] = payload["parentSession"]
                continue
            if kind == "turn_context":
                model = payload.get("model")
            if legacy and "cwd" not in header and kind == "response_item":
                _cwd_of(header, payload)
            if kind == "event_msg":
                typed.update(_typed(payload))
            record = _record(str(number), parent, value, model, names, offset, raw, source)
            if record is None:
                continue
            records.append(record)
            parent = record.id
        finally:
            del raw  # before the next line is read: two long lines are never held at once
    if typed:
        records = [_marked_injected(record, typed) for record in records]
    return Session(
        path=path,
        header=header,
        records=records,
        skipped_lines=tuple(skipped),
        by_id={record.id: record for record in records},
        read_as=os.fstat(file.fileno()),
        agent=NAME,
        not_resumed=LEGACY if legacy else _through_parent(header),
    )


def _folded(text: Any) -> str:
    return " ".join(text.split()) if isinstance(text, str) else ""


def _typed(event: Entry) -> Iterator[str]:
    """What an event says the person typed: a ``user_message``'s message, or a completed
    ``UserMessage`` item's text (newer releases), white space folded."""
    if event.get("type") == "user_message":
        yield _folded(event.get("message"))
    item = event.get("item") if event.get("type") == "item_completed" else None
    if isinstance(item, dict) and item.get("type") == "UserMessage":
        yield _folded(text_of(item.get("content"), "\n"))


def _marked_injected(record: Record, typed: set[str]) -> Record:
    """A user message that opens as a block of its own (a tag, a heading) and that no event
    says the person typed, as what it is: something Codex or an extension put in the
    conversation (instructions, an environment, a notice). Plain text is the person's even
    without its event: a writer of rollouts may record none. (A long text is read, and was
    folded into ``typed``, as its head and tail.)"""
    if record.facts is None or record.facts.role != "user" or not record.has_message:
        return record
    message = record.message()
    text = text_of(message.get("content"), "\n")
    if not text.lstrip().startswith(("<", "#")) or _folded(text) in typed:
        return record
    shared = _injected(text)
    facts = message_facts(shared)
    if not isinstance(record, _Long):
        return record._replace(loaded_facts=facts, kept=dumps(shared))
    assert isinstance(record.source, _File), "a long line's record is read from its file"
    record.source.injected.add(record.offset)
    # The text is the same in both shapes, cut or whole: the JSON differs by the rest alone.
    size = record.size + len(dumps(shared)) - len(dumps(message))
    return record._replace(loaded_facts=facts, span=spanning(record.offset, record.length, 0, size))


def _injected(text: str) -> Message:
    return {"role": "custom", "customType": "codex-context", "content": text, "display": False}


def _meta(header: Entry, payload: Entry) -> None:
    for key in ("id", "timestamp", "cwd"):
        if isinstance(payload.get(key), str):
            header[key] = payload[key]
    for key, ours in (("cli_version", "cliVersion"), ("model_provider", "modelProvider")):
        if isinstance(payload.get(key), str):
            header[ours] = payload[key]
    spawned = payload.get("source")
    spawned = spawned.get("subagent") if isinstance(spawned, dict) else None
    spawned = spawned.get("thread_spawn") if isinstance(spawned, dict) else None
    parent = spawned.get("parent_thread_id") if isinstance(spawned, dict) else None
    if isinstance(parent, str):  # a subagent's rollout: its lineage is its parent thread's
        header["parentSession"] = parent
        header["subagent"] = True
        if payload.get("multi_agent_version") == "v2":
            header["resumedThrough"] = parent


_CWD = re.compile(r"<environment_context>\s*<cwd>([^<\n]+)</cwd>")


def _cwd_of(header: Entry, item: Entry) -> None:
    """The folder a rollout of the 2025 format was made in, which its meta does not name: the
    one its environment context gives."""
    if item.get("type") == "message" and item.get("role") == "user":
        found = _CWD.search(text_of(item.get("content"), "\n"))
        if found:
            header["cwd"] = found.group(1).strip()


def _through_parent(header: Entry) -> str | None:
    """What Codex says of a subagent's rollout it resumes only through its parent thread."""
    parent = header.get("resumedThrough")
    if not isinstance(parent, str):
        return None
    return f"Codex {VERSION} resumes this subagent's rollout only through its parent, {parent}"


def _record(
    line_id: str,
    parent: str | None,
    value: Entry,
    model: Any,
    names: dict[str, str],
    offset: int,
    raw: bytes,
    source: _File,
) -> Record | None:
    """A record of the chain; None for a line the history is not rebuilt from. A message keeps
    its JSON in the shared shape, but that of a long line (``_Long``); an entry is kept whole."""
    kind, payload = value.get("type"), value["payload"]
    entry: Entry | None = None
    shared = _message_of(value, model, names)
    if kind == "response_item":
        if shared is None:
            if len(raw) > LONGEST_TEXT:  # read with its long texts cut: kept as written
                payload = _line(parse_line(raw), 0)["payload"]
            entry = {"type": str(payload.get("type")), "payload": payload}
    elif kind == "turn_context":  # what the context needs of it, not its whole settings
        entry = {"type": kind, "timestamp": value.get("timestamp"), "model": model}
    elif kind == "event_msg" and payload.get("type") == "thread_rolled_back":
        turns = payload.get("num_turns")
        entry = {"type": "thread_rolled_back", "timestamp": value.get("timestamp")}
        entry["num_turns"] = turns
    elif shared is None:
        return None
    fields = Record(
        id=line_id,
        parent_id=parent,
        type="message" if shared is not None else entry["type"] if entry else "",
        span=spanning(offset, len(raw)),
        entry=entry,
        loaded_facts=message_facts(shared) if shared is not None else None,
        written_stamp=value.get("timestamp"),
        kept=dumps(shared) if shared is not None else None,
        source=source,
    )
    if shared is None or len(raw) <= LONGEST_TEXT:
        return fields
    output = payload.get("call_id") if kind == "response_item" else None
    source.made[offset] = (model, {output: names[output]} if output in names else {})
    size = whole_size(shared, dumps(shared))
    return _Long(*fields._replace(span=spanning(offset, len(raw), 0, size), kept=None))


def _message_of(value: Entry, model: Any, names: dict[str, str]) -> Message | None:
    """The message in the shared shape of a line, if it holds one (``names``: the calls' tools
    by id, read and written)."""
    kind, payload = value.get("type"), value.get("payload")
    if not isinstance(payload, dict):
        return None
    if kind == "response_item":
        return _shared(payload, model, names)
    if kind == "compacted":
        return {"role": "compactionSummary", "summary": text_of(payload.get("message"))}
    return None


class _File(Source):
    """A rollout, read again by byte range; with what the messages of its long lines are made
    of besides their lines, by their offsets: the model in force and the tool an output
    answers, and which are Codex's own context (``_marked_injected``)."""

    __slots__ = ("injected", "made")

    def __init__(self, path: Path, fd: int) -> None:
        super().__init__(path, fd)
        self.made: dict[int, tuple[Any, dict[str, str]]] = {}
        self.injected: set[int] = set()


class _Long(Record):
    """The message of a line longer than ``LONGEST_TEXT``: not held, but made again from the
    line each time it is read (its JSON's size, the span's ``size``, measured when it was
    loaded), its long texts as their heads and tails unless it is read whole."""

    __slots__ = ()

    def message_json(self) -> bytes:
        return dumps(self.message(None))

    def message(self, longest: int | None = LONGEST_TEXT) -> Any:
        source = self.source
        assert isinstance(source, _File), "a long line's record is read from its file"
        model, names = source.made[self.offset]
        shared = _message_of(_raw(self, longest), model, dict(names))
        if shared is None:
            raise SessionFileError(source.path, "changed while being read", self.line)
        if self.offset in source.injected:
            return _injected(text_of(shared.get("content"), "\n"))
        return shared


def _raw(record: Record, longest: int | None = LONGEST_TEXT) -> Entry:
    """The line as written in the file; its texts longer than ``longest`` characters as their
    heads and tails (``parse_bounded``), unless ``longest`` is None: what is sent or written."""
    assert record.source is not None, "a record is read from its file"
    data = record.source.read(record.offset, record.length)
    value = _line(parse_line(data) if longest is None else parse_bounded(data, longest), 0)
    if not isinstance(value, dict) or not isinstance(value.get("payload"), dict):
        raise SessionFileError(record.source.path, "changed while being read", record.line)
    return value


def opening(path: Path, values: Iterable[Any]) -> Opening:
    """What the values of a rollout's first lines (``values``, in order, None for a line that
    is no JSON) say of its session, read up to its first user request, as ``load`` would read
    them: the ``session_meta`` if it is the first, our lineage line, the first message."""
    header: Entry = {"type": "session", "version": CURRENT_VERSION, "id": path.stem}
    first_message: Message | None = None
    titled = TitleRequest()
    model: Any = None
    names: dict[str, str] = {}
    for number, read in enumerate(values, 1):
        value = _line(read, number)
        payload = value.get("payload") if isinstance(value, dict) else None
        if not isinstance(value, dict) or not isinstance(payload, dict):
            continue
        kind = value.get("type")
        if kind == "session_meta" and number == 1:
            _meta(header, payload)
        elif kind == LINEAGE_TYPE and isinstance(payload.get("parentSession"), str):
            header["parentSession"] = payload["parentSession"]
        elif kind == "turn_context":
            model = payload.get("model")
        elif kind in ("response_item", "compacted"):
            shared = (
                _shared(payload, model, names)
                if kind == "response_item"
                else {"role": "compactionSummary"}
            )
            if shared is None:
                continue
            first_message = first_message or shared
            text = text_of(shared.get("content")) if shared["role"] == "user" else ""
            if text and not is_handoff_prompt(text) and titled.offer(text):
                break
    starts = first_message is not None and first_message.get("customType") == HANDOFF_TYPE
    title = session_title(None, header, None, titled.request)
    return Opening(header, title, starts, titled.found is not None)


def is_subagent(path: Path) -> bool:
    """A subagent's rollout is a session of its own, named by its parent (``thread_spawn``)."""
    return False


def glance(path: Path, head: bytes, tail: bytes, size: int, lines: int) -> Glance:
    """What ``list`` reads of the file at ``path`` (``Format.glance``)."""
    ended = LineEnds(ends_with_exchange, ends_with_compaction)
    return glance_lines(path, head, tail, size, lines - HEADER_LINES, opening, ended)


def starts_from_handoff(session: Session) -> bool:
    """Whether the rollout's first message is a handoff document: it was handed off to."""
    first = next((r for r in session.records if r.type == "message" and r.has_message), None)
    return first is not None and first.facts is not None and first.facts.custom_type == HANDOFF_TYPE


def ends_with_exchange(values: list[Any]) -> bool:
    """Whether the last items among ``values`` (the file's last lines, in order) are a
    recorded handoff: our prompt, then the document answering it."""
    items = [
        v["payload"]
        for v in values
        if isinstance(v, dict)
        and v.get("type") == "response_item"
        and isinstance(v.get("payload"), dict)
    ][-2:]
    if len(items) < 2:
        return False
    roles = tuple(item.get("role") for item in items)
    return roles == ("user", "assistant") and is_handoff_prompt(text_of(items[0].get("content")))


def ends_with_compaction(tail: bytes) -> bool:
    """Whether a rollout whose last bytes are ``tail`` ends with our compaction: its last line
    a ``compacted`` one whose summary is a handoff document (by how our line ends, when its
    start is not in ``tail``)."""
    line = tail.rstrip(b"\n").rsplit(b"\n", 1)[-1]
    try:
        value = parse_line(line)
    except ValueError:
        return line.endswith(_COMPACTION_END)  # cut by the tail's start, or torn
    payload = value.get("payload") if isinstance(value, dict) else None
    if not isinstance(payload, dict) or value.get("type") != "compacted":
        return False
    return summarised_document(text_of(payload.get("message"))) is not None


# --- the shared shape -------------------------------------------------------------------------


def _own_context(item: Entry) -> bool:
    """A message Codex makes for each request: a developer message, the environment context,
    the AGENTS.md instructions."""
    if item.get("type") != "message":
        return False
    if item.get("role") == "developer":
        return True
    text = _text(item.get("content")).strip()
    return item.get("role") == "user" and any(
        text.startswith(start) and text.endswith(end) for start, end in _OWN_CONTEXT
    )


def _starts_turn(item: Entry) -> bool:
    """A message of the user's own: one that starts a turn (``thread_rolled_back``) and
    that a legacy compaction keeps."""
    if item.get("type") != "message" or item.get("role") != "user" or _own_context(item):
        return False
    return not _text(item.get("content")).lstrip().startswith(_NOT_TURNS)


def _rolls_back(item: Entry) -> bool:
    """An item a turn starts from, as ``thread_rolled_back`` counts them: a message of the
    user's own, or another agent's message to this one (``agent_message``, a turn of its own
    in a team of agents)."""
    return item.get("type") == "agent_message" or _starts_turn(item)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else []
    return "".join(
        str(p.get("text")) for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)
    )


def _shared(item: Entry, model: Any, names: dict[str, str]) -> Message | None:
    """An item as one message in the shared shape; None for one that holds none. ``names``
    (the calls' tool names by id, in file order) names an output's tool."""
    kind = item.get("type")
    if kind == "message":
        text = _text(item.get("content"))
        if _own_context(item):
            return {
                "role": "custom",
                "customType": "codex-context",
                "content": text,
                "display": False,
            }
        if item.get("role") == "assistant":
            return _assistant([{"type": "text", "text": text}], model)
        if text.startswith(WRAPPER_OPEN):  # the document a rollout we handed off to starts with
            return {"role": "custom", "customType": HANDOFF_TYPE, "content": text, "display": True}
        return {"role": "user", "content": _user_blocks(item.get("content"))}
    if kind == "reasoning":
        parts = [*_list(item.get("summary")), *_list(item.get("content"))]
        return _assistant([{"type": "thinking", "thinking": _text(parts)}], model)
    if kind in _OUTPUTS:
        call = str(item.get("call_id"))
        name, arguments = _tool_call(item)
        names[call] = name
        return _assistant(
            [{"type": "toolCall", "id": call, "name": name, "arguments": arguments}], model
        )
    if kind in ("function_call_output", "custom_tool_call_output"):
        call = str(item.get("call_id"))
        output = item.get("output")
        text = output if isinstance(output, str) else _text(output)
        return {
            "role": "toolResult",
            "toolCallId": call,
            "toolName": names.get(call, ""),
            "content": [{"type": "text", "text": text}],
            "isError": False,
        }
    return None


def _assistant(content: list[Any], model: Any) -> Message:
    return {
        "role": "assistant",
        "content": content,
        "api": "openai-responses",
        "provider": PROVIDER,
        "model": model,
        "stopReason": "stop",
    }


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _user_blocks(content: Any) -> list[Any]:
    blocks: list[Any] = []
    for part in _list(content):
        if not isinstance(part, dict):
            continue
        if part.get("type") == "input_image":
            blocks.append(_image(part.get("image_url")))
        elif isinstance(part.get("text"), str):
            blocks.append({"type": "text", "text": part["text"]})
    return blocks if blocks or not isinstance(content, str) else [{"type": "text", "text": content}]


def _image(url: Any) -> Entry:
    """An image as pi holds one (its data and type), when it is a data URL; else a note."""
    found = _DATA_URL.fullmatch(url) if isinstance(url, str) else None
    if found is not None:
        try:
            base64.b64decode(found.group(2), validate=True)
        except (binascii.Error, ValueError):
            found = None
    if found is None:
        return {"type": "text", "text": "[image]"}
    return {"type": "image", "data": found.group(2), "mimeType": found.group(1)}


_PATCH_FILE = re.compile(r"^\*\*\* (?:(?:Add|Update|Delete) File|Move to): (.+?)\s*$", re.M)


def patched_files(tool: Any, arguments: Any) -> list[str]:
    """The files an ``apply_patch`` call changes: each that its patch adds, updates, deletes
    or moves to (its ``*** … File:`` and ``*** Move to:`` lines, Codex's patch grammar)."""
    patch = arguments.get("input") if isinstance(arguments, dict) else None
    if tool != "apply_patch" or not isinstance(patch, str):
        return []
    return _PATCH_FILE.findall(patch)


def _tool_call(item: Entry) -> tuple[str, Any]:
    """A call's tool and arguments, Codex's shell tools as the shared ``bash``."""
    name = str(item.get("name") or item.get("type"))
    if item.get("type") == "custom_tool_call":
        return name, {"input": item.get("input")}
    if item.get("type") == "local_shell_call":
        action = item.get("action")
        command = action.get("command") if isinstance(action, dict) else None
        return "bash", {"command": _command(command)}
    try:
        arguments = parse_line(str(item.get("arguments", "")).encode())
    except ValueError:
        arguments = {"arguments": item.get("arguments")}
    if name in _SHELL_TOOLS and isinstance(arguments, dict):
        command = arguments.get("cmd", arguments.get("command"))
        return "bash", {"command": _command(command)}
    return name, arguments


def _command(command: Any) -> str:
    """A shell call's command as one line a shell reads back: an argument vector quoted, and
    the script alone of ``["bash", "-lc", script]`` (what it runs)."""
    if isinstance(command, list):
        words = [str(word) for word in command]
        if len(words) == 3 and words[0].rsplit("/", 1)[-1] in _SHELLS and words[1] in _SCRIPT_FLAGS:
            return words[2]
        return shlex.join(words)
    return str(command) if command is not None else ""


# --- its context ------------------------------------------------------------------------------


class _Item(NamedTuple):
    """One item of the history, and the record it is read from (None: a compaction's)."""

    item: Entry | None
    """None: the compaction record that stands for a replaced history, sent as nothing."""
    record: Record | None


def _context(branch: list[Record]) -> Context:
    history, model = _history(branch)
    kept = [h for h in history if h.item is None or not _own_context(h.item)]
    return Context(
        AGENT,
        head=(),
        records=[h.record for h in kept if h.record is not None and h.record.has_message],
        changes={},
        thinking_level=UNDEFINED,
        model=f"{PROVIDER}/{model}" if isinstance(model, str) and model else None,
        sent=lambda: _sent(branch),
    )


def _sent(branch: list[Record]) -> Iterator[Entry]:
    """The items Codex sends, whole: the history read again when the context's JSON is asked
    for (what it is made of is read with long texts cut, as the rest is)."""
    history, model = _history(branch, None)
    return (
        _sent_item(h.item, model)
        for h in history
        if h.item is not None and not _own_context(h.item)
    )


def _history(branch: list[Record], longest: int | None = LONGEST_TEXT) -> tuple[list[_Item], Any]:
    """The history Codex rebuilds from ``branch`` (its own items included), and the model the
    last ``turn_context`` names; each line's texts longer than ``longest`` characters as their
    heads and tails (``_raw``), which is all the rules that choose the items read."""
    history: list[_Item] = []
    model: Any = None
    for record in branch:
        if record.type == "turn_context" and record.entry is not None:
            model = record.entry.get("model")
        elif record.type == "thread_rolled_back" and record.entry is not None:
            history = _rolled_back(history, record.entry.get("num_turns"))
        elif record.type == "message" or (record.entry is not None and "payload" in record.entry):
            value = _raw(record, longest)
            payload = value["payload"]
            if value.get("type") == "compacted":
                history = _compacted(history, payload, record)
            else:
                item = _wire(payload)
                if item is not None:
                    history.append(_Item(item, record))
    return _paired(history), model


def _wire(item: Entry) -> Entry | None:
    """An item as Codex sends it back: its known keys (an image as Codex's note); None for a
    type it does not know."""
    kind = item.get("type")
    if kind == "compaction_summary":
        kind = "compaction"
    keys = _KEYS.get(kind) if isinstance(kind, str) else None
    if keys is None:
        return None
    nulls = _NULLS.get(str(kind), ())
    wire = {key: item.get(key) for key in keys if key in item or key in nulls} | {"type": kind}
    # Its images as Codex prepares them, in a message or a tool's output of several parts.
    parts = "content" if kind == "message" else "output" if kind in _OUTPUTS.values() else None
    listed = wire.get(parts) if parts is not None else None
    if parts is not None and isinstance(listed, list):
        wire[parts] = [_prepared(part) for part in listed]
    return wire


OUTPUT_BYTES = 12_000
"""The most of a tool's output Codex sends back under a model its catalog does not know (its
fallback's 10,000 bytes and a fifth more): longer, its head and tail, half of this each, and
between them the characters left out (real rollouts of gpt-5, 5.1, 5.1-codex-max, 5.2-codex
and 5.3-codex)."""
OUTPUT_TOKENS = 12_000
"""The same under a model of its catalog, in tokens of four bytes, and the tokens left out
between them (a gpt-5.5 rollout's output made 110,890 bytes: 24,000 each side)."""
CATALOG = frozenset(
    "codex-auto-review gpt-5.5 gpt-5.6-luna gpt-5.6-sol gpt-5.6-terra gpt-6-astra gpt-6-luna "
    "gpt-6-sol gpt-6.1-sol gpt-6.1-terra gpt-6.2-astra gpt-6.2-sol gpt-daybreak-blue-latest "
    "gpt-daybreak-red-latest".split()
)
"""The models Codex 0.171.0's own catalog holds (each with its outputs kept by tokens)."""


def _sent_item(item: Entry, model: Any) -> Entry:
    """An item as Codex sends it back under ``model``: a tool's output of one text kept to
    its budget (``_kept_output``)."""
    output = item.get("output")
    if item.get("type") not in _OUTPUTS.values() or not isinstance(output, str):
        return item
    return item | {"output": _kept_output(output, model in CATALOG)}


def _kept_output(output: str, by_tokens: bool) -> str:
    """A tool's output over its budget as its head and its tail (on characters' edges), and
    between them how much was left out."""
    most = OUTPUT_TOKENS * 4 if by_tokens else OUTPUT_BYTES
    if len(output) * 4 <= most:  # within the budget whatever its characters: not encoded
        return output
    data = output.encode("utf-8", "surrogatepass")
    if len(data) <= most:
        return output
    head_end, tail_start = most // 2, len(data) - (most - most // 2)
    while head_end > 0 and data[head_end] & 0xC0 == 0x80:
        head_end -= 1
    while tail_start < len(data) and data[tail_start] & 0xC0 == 0x80:
        tail_start += 1
    head = data[:head_end].decode("utf-8", "surrogatepass")
    tail = data[tail_start:].decode("utf-8", "surrogatepass")
    if by_tokens:
        left_out = f"{quarter_of(tail_start - head_end)} tokens"
    else:
        left_out = f"{len(output) - len(head) - len(tail)} chars"
    return f"{head}\u2026{left_out} truncated\u2026{tail}"


# --- images, as Codex prepares them before it sends them -----------------------------------------

IMAGE_TOO_LARGE = (
    "image content omitted because it exceeded the supported size limit; use a smaller image"
)
IMAGE_LOW = (
    "image content omitted because detail 'low' is not supported; use 'high', 'original', or 'auto'"
)
IMAGE_REMOTE = "image content omitted because remote image URLs are not supported"
_BUDGETS = {"original": (60 << 20, 6000, 10_000)}
"""Per detail: the most bytes, the longest side and the most 32-pixel patches of an image
Codex sends as it is; any other detail (none, auto, high), ``_HIGH``."""
_HIGH = (20 << 20, 2048, 2500)
_KEPT_KINDS = ("image/png", "image/jpeg", "image/webp")
"""The kinds whose bytes Codex sends as they are, when the image fits its budget (a GIF it
sends again as a PNG)."""


def _prepared(part: Any) -> Any:
    """A part as Codex sends it: an ``input_image`` of a data URL it can read is sent as it is,
    named by the kind its bytes are; one it cannot read (not base64, no image, a PNG that does
    not decode), too large, at detail ``low`` or at a web address is its note instead. What
    Codex makes again (a GIF as a PNG, an image over the budget scaled down) is sent as it
    was: its encoder's bytes cannot be made here."""
    if not isinstance(part, dict) or part.get("type") != "input_image":
        return part
    url, detail = part.get("image_url"), part.get("detail")
    if not isinstance(url, str):
        return _note(IMAGE_OMITTED)
    if url.partition(":")[0].lower() in ("http", "https"):
        return _note(IMAGE_REMOTE)
    if url[:5].lower() != "data:":
        return part
    if detail == "low":
        return _note(IMAGE_LOW)
    most, side, patches = _BUDGETS.get(str(detail), _HIGH)
    header, comma, payload = url.partition(",")
    if not comma or not header.lower().endswith(";base64"):
        return _note(IMAGE_OMITTED)
    if len(payload) // 4 * 3 > most + 2:  # too large, whatever it holds: not decoded
        return _note(IMAGE_TOO_LARGE)
    try:
        data = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        return _note(IMAGE_OMITTED)
    if len(data) > most:
        return _note(IMAGE_TOO_LARGE)
    read = image_header(data)
    if read is None:
        return _note(IMAGE_OMITTED)
    kind, width, height = read
    fits = max(width, height) <= side and -(-width // 32) * -(-height // 32) <= patches
    if fits and kind in _KEPT_KINDS:
        return part | {"image_url": f"data:{kind};base64,{base64.b64encode(data).decode()}"}
    return part


def _note(text: str) -> Entry:
    return {"type": "input_text", "text": text}


_PNG = b"\x89PNG\r\n\x1a\n"
_COLOURS = frozenset({0, 2, 3, 4, 6})
"""A PNG's colour types."""


def image_header(data: bytes) -> tuple[str, int, int] | None:
    """The kind, width and height of an image Codex reads (PNG, JPEG, WebP, GIF), from its
    header; None for data that is no such image. A PNG, the kind most sent, is read whole
    (its chunks and their checksums)."""
    if data.startswith(_PNG):
        return _png(data)
    if data.startswith(b"\xff\xd8\xff"):
        return _jpeg(data)
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return _webp(data)
    if data[:6] in (b"GIF87a", b"GIF89a") and len(data) >= 10:
        width, height = int.from_bytes(data[6:8], "little"), int.from_bytes(data[8:10], "little")
        return ("image/gif", width, height) if width and height else None
    return None


def _png(data: bytes) -> tuple[str, int, int] | None:
    """A PNG's size, if its chunks are whole and their checksums right, from its header to its
    end, with the pixels' compressed stream begun as zlib begins one (not inflated: a
    screenshot's would be megabytes each time its context is built)."""
    at, header, stream, palette = 8, b"", b"", False
    while at + 12 <= len(data):
        length = int.from_bytes(data[at : at + 4], "big")
        kind, body = data[at + 4 : at + 8], data[at + 8 : at + 8 + length]
        crc = data[at + 8 + length : at + 12 + length]
        if len(body) != length or len(crc) != 4:
            return None
        if zlib.crc32(body, zlib.crc32(kind)) != int.from_bytes(crc, "big"):
            return None
        if not header and kind != b"IHDR":
            return None
        header = body if kind == b"IHDR" else header
        palette |= kind == b"PLTE"
        stream = stream or (body[:2] if kind == b"IDAT" else b"")
        if kind == b"IEND":
            break
        at += 12 + length
    else:
        return None
    if len(header) != 13 or len(stream) < 2:
        return None
    width, height = int.from_bytes(header[0:4], "big"), int.from_bytes(header[4:8], "big")
    colour = header[9]
    if not width or not height or colour not in _COLOURS or (colour == 3 and not palette):
        return None
    deflated = stream[0] & 0x0F == 8 and int.from_bytes(stream, "big") % 31 == 0  # zlib's header
    return ("image/png", width, height) if deflated else None


_NOT_A_FRAME = (0xC4, 0xC8, 0xCC)
"""Markers from 0xC0 to 0xCF that start no frame (Huffman and arithmetic-coding tables)."""


def _jpeg(data: bytes) -> tuple[str, int, int] | None:
    at = 2
    while at + 4 <= len(data):
        if data[at] != 0xFF:
            return None
        marker = data[at + 1]
        if marker == 0xFF:
            at += 1
            continue
        length = int.from_bytes(data[at + 2 : at + 4], "big")
        if 0xC0 <= marker <= 0xCF and marker not in _NOT_A_FRAME:
            frame = data[at + 5 : at + 9]
            if len(frame) < 4:
                return None
            height, width = int.from_bytes(frame[0:2], "big"), int.from_bytes(frame[2:4], "big")
            return ("image/jpeg", width, height) if width and height else None
        at += 2 + length
    return None


def _webp(data: bytes) -> tuple[str, int, int] | None:
    chunk = data[12:16]
    if chunk == b"VP8X" and len(data) >= 30:
        width = int.from_bytes(data[24:27], "little") + 1
        height = int.from_bytes(data[27:30], "little") + 1
    elif chunk == b"VP8 " and len(data) >= 30:
        width = int.from_bytes(data[26:28], "little") & 0x3FFF
        height = int.from_bytes(data[28:30], "little") & 0x3FFF
    elif chunk == b"VP8L" and len(data) >= 25:
        bits = int.from_bytes(data[21:25], "little")
        width, height = (bits & 0x3FFF) + 1, (bits >> 14 & 0x3FFF) + 1
    else:
        return None
    return ("image/webp", width, height) if width and height else None


def _compacted(history: list[_Item], payload: Entry, record: Record) -> list[_Item]:
    """The history after a ``compacted`` line: its replacement history, else (legacy) the
    user's messages so far and one holding the summary (``written/compacted-*``)."""
    replacement = payload.get("replacement_history")
    if isinstance(replacement, list):
        items = (_wire(i) for i in replacement if isinstance(i, dict))
        return [_Item(None, record), *(_Item(i, None) for i in items if i is not None)]
    users = [h for h in history if h.item is not None and _starts_turn(h.item)]
    summary = {
        "type": "message",
        "role": "user",
        "content": [{"type": "input_text", "text": text_of(payload.get("message"))}],
    }
    return [*users, _Item(summary, record)]


def _rolled_back(history: list[_Item], turns: Any) -> list[_Item]:
    """The history without its last ``turns`` turns, each from a message of the user's on."""
    if not isinstance(turns, int) or isinstance(turns, bool) or turns <= 0:
        return history
    starts = [i for i, h in enumerate(history) if h.item is not None and _rolls_back(h.item)]
    if len(starts) < turns:  # more turns than there are: all of them
        return history[: starts[0]] if starts else history
    return history[: starts[-turns]]


def _paired(history: list[_Item]) -> list[_Item]:
    """Every call followed by its output somewhere (else an output "aborted" right after it);
    outputs without their call dropped (``written/orphan-calls``)."""
    calls = {h.item.get("call_id") for h in history if h.item and h.item.get("type") in _OUTPUTS}
    answered = {
        h.item.get("call_id")
        for h in history
        if h.item and h.item.get("type") in _OUTPUTS.values() and h.item.get("call_id") in calls
    }
    paired: list[_Item] = []
    for h in history:
        kind = h.item.get("type") if h.item else None
        if kind in _OUTPUTS.values() and h.item and h.item.get("call_id") not in calls:
            continue
        paired.append(h)
        if kind in _OUTPUTS and h.item and h.item.get("call_id") not in answered:
            output = {"type": _OUTPUTS[kind], "call_id": h.item.get("call_id"), "output": ABORTED}
            paired.append(_Item(output, None))
    return paired


# --- its compaction, holding a handoff (``--in-place``) -------------------------------------

SUMMARY_PREFIX = (
    "Another language model started to solve this problem and produced a summary of its "
    "thinking process. You also have access to the state of the tools that were used by that "
    "language model. Use this to build on the work that has already been done and avoid "
    "duplicating work. Here is the summary produced by the other language model, use the "
    "information in this summary to assist with your own analysis:"
)
"""What Codex writes before a compaction's summary, on a line of its own (``made/compact``),
and by which it knows a summary among the user's messages."""
KEPT_USER_TOKENS = 20_000
"""How many tokens of the user's messages a compaction keeps, the newest first."""
_COMPACTION_END = dumps(WRAPPER_CLOSE)[1:] + b"}]}]}}"
"""How our compaction's line ends: its summary, the document wrapped, is its last item (a
line we can know by its end, however much longer than a file's tail it is)."""


@dataclass(frozen=True)
class _Compaction:
    """Codex's own compaction of a branch (``Agent.compaction``): a ``compacted`` line whose
    replacement history is the user's messages (the newest, up to ``KEPT_USER_TOKENS``) and
    the summary, which is the document (``inplace/``: each rule against the real CLI's own
    ``/compact`` of the same rollout)."""

    history: tuple[Entry, ...] = field(repr=False)
    """The history as Codex would send it, its own context included."""
    first_kept_entry_id: None = None
    kept: int = 0

    @property
    def tokens_before(self) -> int:
        return _estimate(i for i in self.history if not _own_context(i))

    def write(self, document: str, at: str, mask: Mask) -> Compacted:
        summary = f"{SUMMARY_PREFIX}\n{wrap_document(document)}"
        replacement = [*_replacement(self.history), _with_id(_message("user", summary))]
        # The line alone: a line of a type Codex does not know, or an event of its own beside
        # it, makes Codex warn as it reads a paginated rollout (``inplace/results.json``).
        line = ("compacted", {"message": summary, "replacement_history": replacement})
        after = _estimate(replacement)
        return Compacted(_lines([line], at, None), None, after)


def _compaction(branch: list[Record]) -> _Compaction:
    """Where Codex compacts ``branch``: all of its history, if anything of the conversation
    came after its last compaction."""
    history, _ = _history(branch, None)  # written
    since = max((i for i, h in enumerate(history) if h.item is None), default=-1)
    # What the rollout's lines added since (not the history its compaction put back).
    added = (h.item for h in history[since + 1 :] if h.item is not None and h.record is not None)
    if since >= 0 and all(_own_context(i) for i in added):
        raise AlreadyCompactedError()
    return _Compaction(tuple(h.item for h in history if h.item is not None))


def _replacement(history: Iterable[Entry]) -> list[Entry]:
    """The history a compaction leaves, but its summary: the user's messages, the newest
    first up to ``KEPT_USER_TOKENS`` (the one that does not fit cut in its middle), as they
    were. Not Codex's own context, which Codex makes again for its configuration as it
    compacts, and which it so makes when it resumes a compaction without it: a file cannot
    know the skills, permissions and environment that will be."""
    users = [
        item
        for item in history
        if _starts_turn(item) and not _text(item.get("content")).startswith(SUMMARY_PREFIX + "\n")
    ]
    kept: list[Entry] = []
    left = KEPT_USER_TOKENS
    for item in reversed(users):
        if left == 0:
            break
        text = _text(item.get("content"))
        tokens = quarter_tokens(text)
        if tokens > left:
            kept.append(_with_id(_cut_middle(item, text, left)))
            break
        kept.append(_with_id(item))
        left -= tokens
    kept.reverse()
    return kept


def _cut_middle(item: Entry, text: str, tokens: int) -> Entry:
    """A user's message cut to ``tokens``: its head and its tail, each half of that in bytes
    (on a character's edge), and between them a part saying how many tokens were cut."""
    data = text.encode("utf-8", "surrogatepass")
    half = tokens * 4 // 2
    head_end, tail_start = half, len(data) - (tokens * 4 - half)
    while head_end > 0 and data[head_end] & 0xC0 == 0x80:
        head_end -= 1
    while tail_start < len(data) and data[tail_start] & 0xC0 == 0x80:
        tail_start += 1
    parts = (
        data[:head_end],
        f"\u2026{quarter_of(tail_start - head_end)} tokens truncated\u2026".encode(),
        data[tail_start:],
    )
    content = [{"type": "input_text", "text": p.decode("utf-8", "surrogatepass")} for p in parts]
    return item | {"content": content}


def _message(role: str, text: str) -> Entry:
    return {"type": "message", "role": role, "content": [{"type": "input_text", "text": text}]}


def _with_id(item: Entry) -> Entry:
    """``item`` with an id after its type, a new one (as Codex gives one) if it has none."""
    if isinstance(item.get("id"), str):
        return item
    return {"type": item.get("type"), "id": f"msg_{uuid7()}"} | item


def _estimate(items: Iterable[Entry]) -> int:
    """Codex's estimate of items: each one's JSON, a quarter of its bytes."""
    return sum(quarter_of(len(dumps(item))) for item in items)


# --- what it writes: a new rollout holding a handoff, and the exchange in the old one -------

ACKNOWLEDGEMENT = "Understood. I will continue the work from this handoff document."
"""The answer the new rollout's document gets: a whole turn, as Codex writes one
(``candidates/whole-turn``)."""


def new_uuid() -> str:
    """A rollout's id: a UUID v7, as Codex makes them."""
    return uuid7()


def file_name(session_id: str, moment: datetime | None = None) -> str:
    """A rollout's file: ``rollout-<local time>-<id>.jsonl``."""
    moment = moment or datetime.now().astimezone()
    return f"rollout-{moment:%Y-%m-%dT%H-%M-%S}-{session_id}.jsonl"


def new_path(folder: Path, session_id: str) -> Path:
    """Where a rollout started beside ``folder`` is written: today's folder (``new_folder``)."""
    return new_folder(folder) / file_name(session_id)


def session_model(model: str | None) -> str | None:
    """The model a turn we write names: the session's own (``openai/`` taken off, as the
    context adds it); None for another provider's (Codex's configuration then decides)."""
    provider, _, name = (model or "").partition("/")
    return name if provider == PROVIDER and name else None


def new_session(
    old: Session,
    new_id: str,
    parent: Path,
    model: str | None,
    wrapped: str,
    at: str,
    kept: Kept = NOTHING_KEPT,
) -> bytes:
    """The new rollout: its ``session_meta`` (``source: cli``, so that the picker lists it),
    our lineage line, and one whole turn holding the document as the user's prompt and an
    acknowledgement, in Codex's shapes (``candidates/whole-turn``); then the ``kept`` turns."""
    cwd = str(old.header.get("cwd", ""))
    meta = {
        "id": new_id,
        "timestamp": at,
        "cwd": cwd,
        "originator": "codex_cli_rs",
        "cli_version": str(old.header.get("cliVersion", VERSION)),
        "source": "cli",
    }
    provider = old.header.get("modelProvider")
    if isinstance(provider, str):  # Codex refuses a rollout naming a provider it lacks
        meta["model_provider"] = provider
    turn = uuid.uuid4().hex
    lines: list[tuple[str, Entry]] = [
        ("session_meta", meta),
        (LINEAGE_TYPE, {"parentSession": str(parent)}),
        ("event_msg", {"type": "task_started", "turn_id": turn}),
    ]
    context: Entry = {"turn_id": turn, "cwd": cwd}
    named = session_model(model)
    if named is not None:
        context["model"] = named
    lines.append(("turn_context", context))
    lines += _turn(wrapped, ACKNOWLEDGEMENT)
    lines.append(
        (
            "event_msg",
            {"type": "task_complete", "turn_id": turn, "last_agent_message": ACKNOWLEDGEMENT},
        )
    )
    for items in _kept_turns(kept):
        lines += _whole_turn(items, context)
    return b"".join(dumps_line(line) for line in _lines(lines, at, 0))


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
    """The handoff as Codex records a turn it resumes: the prompt as a user item and its
    ``user_message`` event, the document as an assistant item and its ``agent_message``
    (``candidates/results.json``, ``exchange``), numbered when appended (``continued``).
    Codex appends at the end whatever the leaf; so do we."""
    turn = _turn(prompt, document)
    return [*_lines(turn[:2], asked_at, None), *_lines(turn[2:], answered_at, None)]


def recorded(lines: list[Entry], old: Session, since: bytes) -> Change:
    """``lines`` appended in the rollout's own line shape: its ordinals continued from its last
    line's (one another writer appended since it was read, among ``since``, else the last
    read), none where it has none. Decided under the lock, so that two writers of ours never
    give one ordinal twice."""
    last = _last_ordinal(since)
    if last is None:
        last = old.header.get("ordinal")
    if not _is_ordinal(last):
        return Append(lines)
    numbered = enumerate(lines, 1)
    return Append([{"timestamp": li["timestamp"], "ordinal": last + n} | li for n, li in numbered])


def _last_ordinal(data: bytes) -> int | None:
    """The ordinal of the last line in ``data`` that is a rollout line with one."""
    for raw in reversed(data.split(b"\n")):
        try:
            value = parse_line(raw)
        except ValueError:
            continue
        if isinstance(value, dict) and _is_ordinal(value.get("ordinal")):
            return int(value["ordinal"])
    return None


def _is_ordinal(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _turn(prompt: str, answer: str) -> list[tuple[str, Entry]]:
    user = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt}]}
    assistant = {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": answer}],
    }
    return [
        ("response_item", user),
        (
            "event_msg",
            {
                "type": "user_message",
                "message": prompt,
                "images": [],
                "local_images": [],
                "text_elements": [],
            },
        ),
        ("response_item", assistant),
        ("event_msg", {"type": "agent_message", "message": answer}),
    ]


def _lines(lines: Iterable[tuple[str, Entry]], at: str, ordinal: int | None) -> list[Entry]:
    """Rollout lines, numbered from ``ordinal`` (None: a rollout without ordinals)."""
    made: list[Entry] = []
    for kind, payload in lines:
        line: Entry = {"timestamp": at}
        if ordinal is not None:
            line["ordinal"] = ordinal + len(made)
        made.append(line | {"type": kind, "payload": payload})
    return made


# --- the turns kept after the document (--keep-recent) ---------------------------------------


def _kept_turns(kept: Kept) -> Iterator[list[Entry]]:
    """The kept messages as the items of whole turns: a rollout's own items as they were;
    another agent's messages in Codex's shapes, their thinking left out (a reasoning item is
    only its own provider's to read back)."""
    turn: list[Entry] = []
    if kept.agent == NAME:
        for message in kept.messages:
            if message.starts_turn and turn:
                yield turn
                turn = []
            turn.append(_raw(message.record, None)["payload"])
    else:
        for shared in kept.shared:
            items = _items(shared)
            if shared.get("role") == "user" and turn and turn[-1].get("role") != "user":
                yield turn
                turn = []
            turn += items
    if turn:
        yield turn


def _items(message: Message) -> list[Entry]:
    """A message of the shared shape as Codex's items."""
    role, content = message.get("role"), message.get("content")
    blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
    if role == "toolResult":
        parts = [_input_part(b) for b in blocks]
        texts = [p for p in parts if p["type"] == "input_text"]
        output: Any = "\n".join(p["text"] for p in texts) if len(texts) == len(parts) else parts
        return [{"type": "function_call_output", "call_id": str(message.get("toolCallId")),
                 "output": output}]  # fmt: skip
    if role != "assistant":
        parts = [_input_part(b) for b in blocks]
        if isinstance(content, str):
            parts = [{"type": "input_text", "text": content}]
        return [{"type": "message", "role": "user", "content": parts}] if parts else []
    items: list[Entry] = []
    for block in blocks:
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            text = {"type": "output_text", "text": block["text"]}
            if items and items[-1]["type"] == "message":
                items[-1]["content"].append(text)
            else:
                items.append({"type": "message", "role": "assistant", "content": [text]})
        elif kind == "toolCall":
            arguments = block.get("arguments")
            items.append({
                "type": "function_call",
                "name": str(block.get("name")),
                "arguments": arguments if isinstance(arguments, str) else dumps(arguments).decode(),
                "call_id": str(block.get("id")),
            })  # fmt: skip
    return items


def _input_part(block: Entry) -> Entry:
    if block.get("type") == "image":
        url = f"data:{block.get('mimeType')};base64,{block.get('data')}"
        return {"type": "input_image", "image_url": url}
    return {"type": "input_text", "text": str(block.get("text", ""))}


def _whole_turn(items: list[Entry], context: Entry) -> list[tuple[str, Entry]]:
    """A turn's items as Codex writes a turn: begun, in the session's turn context, the user's
    prompt and each answer's text also as the events the picker and the history show, ended."""
    turn = uuid.uuid4().hex
    lines: list[tuple[str, Entry]] = [
        ("event_msg", {"type": "task_started", "turn_id": turn}),
        ("turn_context", context | {"turn_id": turn}),
    ]
    said: str | None = None
    for item in items:
        lines.append(("response_item", item))
        if item.get("type") != "message":
            continue
        text = _text(item.get("content"))
        if item.get("role") == "user" and _starts_turn(item):
            lines.append(("event_msg", {"type": "user_message", "message": text, "images": [],
                          "local_images": [], "text_elements": []}))  # fmt: skip
        elif item.get("role") == "assistant":
            lines.append(("event_msg", {"type": "agent_message", "message": text}))
            said = text
    lines.append(
        ("event_msg", {"type": "task_complete", "turn_id": turn, "last_agent_message": said})
    )
    return lines
