"""Loading a session file, the first step of the data's way.

``load_session`` reads every line once, so that a 100 MB session costs little more than one
parse and little memory. For a message it keeps only what the tree and the context need (ids,
type, a few facts) and where the message's JSON text is, never the parsed objects (six times
the size); a line in the agents' own layout is not even parsed whole, only its message, and in
a version 3 file a message before the last compaction is only validated, its facts read when
a context asks for them (``Record.facts``). Every other entry
is small and kept whole. ``Session.entries`` reads full message entries again, by offset, for
the views that want them. Versions 1 and 2 are migrated in memory as they are read
(docs/session-format.md §7); nothing here writes.
"""

from __future__ import annotations

import gc
import os
import re
import stat
import sys
from collections.abc import Callable, Hashable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

import orjson
import simdjson

from handoff_cli.document import is_handoff_prompt
from handoff_cli.errors import SessionFileError, os_reason
from handoff_cli.said import TitleRequest
from handoff_cli.sessions.js import UNDEFINED, js_key, js_string, js_truthy
from handoff_cli.sessions.jsonl import LONGEST_TEXT, Verbatim, dumps, parse_bounded, parse_line
from handoff_cli.text import one_line, text_of

Entry = dict[str, Any]
"""An entry (or header, or title slot) exactly as written in the file; unknown keys are kept."""

CURRENT_VERSION = 3
BOM = b"\xef\xbb\xbf"
READ_BUFFER = 1 << 16
READ_AHEAD = 1 << 20
"""Bytes read at once when messages are read again from the file."""
LONG_LINE = 1 << 22
"""Past this, a line is read whole by its offset (``file_lines``)."""
MAX_LINE_BYTES = 1 << 30
"""Longer than any line an agent writes (a 200 MB message is real); past it, an error rather
than memory without bound."""
TITLE_CHARS = 100


class _Lazy:
    def __repr__(self) -> str:
        return "LAZY"


LAZY: Any = _Lazy()
"""A message's facts left in its line (``Record.facts``)."""


_COMMON_ROLES = {role.encode(): role for role in ("user", "assistant", "toolResult")}
_ROLE_FIRST = re.compile(rb'\{"role":"(user|assistant|toolResult)",')


class _InLine:
    def __repr__(self) -> str:
        return "IN_LINE"


IN_LINE: Any = _InLine()
"""A record's timestamp left in its line (``Record.stamp``)."""

CallId = Hashable
"""A tool call id as the agent compares it (see ``js.js_key``)."""


class MessageFacts(NamedTuple):
    """What the tree and the context need to know of a ``message`` entry, without its payload."""

    role: str | None
    stop_reason: str | None
    provider: str | None
    """Assistant: its provider and model, as JavaScript would print them ("undefined" if absent)."""
    model: str | None
    tool_call_ids: tuple[CallId, ...]
    """Assistant: the ids of its ``toolCall`` blocks."""
    answers: CallId
    """Tool result: the ``toolCallId`` it answers."""
    custom_type: str | None = None
    """Custom message: its ``customType``."""
    flags: int = 0
    """The four yes-or-no facts below, one number: a message's facts are held for every
    message of a file, and each field is 8 bytes of each."""

    @property
    def keeps_content(self) -> bool:
        """Assistant: has a block that survives stripping tool calls (not toolCall or
        redactedThinking)."""
        return bool(self.flags & _KEEPS_CONTENT)

    @property
    def superseded(self) -> bool:
        """Left out of oh-my-pi's context: a retried or an empty failed assistant turn, or no
        message."""
        return bool(self.flags & _SUPERSEDED)

    @property
    def replays(self) -> bool:
        """Assistant: a Copilot turn whose replay data oh-my-pi drops on load."""
        return bool(self.flags & _REPLAYS)

    @property
    def no_content(self) -> bool:
        """Its ``content`` is null or missing (pi gives such a message an empty one)."""
        return bool(self.flags & _NO_CONTENT)


_KEEPS_CONTENT, _SUPERSEDED, _REPLAYS, _NO_CONTENT = 1, 2, 4, 8


_FIELD_BITS = 31
"""A line is at most ``MAX_LINE_BYTES`` long, so are its parts."""
_FIELD = (1 << _FIELD_BITS) - 1
_OFFSET_SHIFT = 3 * _FIELD_BITS


def spanning(offset: int, length: int, at: int = 0, size: int = 0) -> int:
    """``Record.span`` of a line at ``offset`` of ``length`` bytes, its message's JSON ``size``
    bytes from ``at`` on."""
    return length | at << _FIELD_BITS | size << 2 * _FIELD_BITS | offset << _OFFSET_SHIFT


class Record(NamedTuple):
    """One entry of the file, located by its byte range.

    Records (and facts) are named tuples: as immutable as a frozen dataclass, and four times
    cheaper to build, which counts when loading builds one per line. What is seldom needed is
    left in the file (its line number, a message's timestamp), and where it is in the file is
    one number (``span``): for a file of many short lines, records are most of the memory a
    command takes.
    """

    id: str
    parent_id: str | None
    type: str
    span: int
    """Where its line is (``offset``, ``length``) and, for a ``message`` entry whose message is
    an object and stays on disk, where that message's JSON is in the line (``at``, ``size``),
    in one number (``spanning``): one object for four."""
    entry: Entry | None
    """The whole entry, for every type but ``message``."""
    loaded_facts: MessageFacts | None
    """For ``message`` entries only; ``LAZY`` for a message on disk whose facts are read when
    first asked for (``facts``): a context needs those of its window and of a few more, and
    for a file of many short lines they would be half the cost of its load."""
    written_stamp: Any = None
    """The entry's ``timestamp``, as written; ``IN_LINE`` where it is read from the line when
    asked for (``stamp``), which for a file of many short lines is a sixth of their cost."""
    kept: bytes | None = None
    """For a ``message`` entry whose message is an object and had to be serialised again
    (migrated, or not written as the agents write it): its JSON."""
    source: Source | None = None

    @property
    def facts(self) -> MessageFacts | None:
        """For ``message`` entries only: what the tree and the context need of its message."""
        facts = self.loaded_facts
        if facts is not LAZY:
            return facts
        assert self.source is not None, "a message on disk has its source"
        return self.source.facts(self)

    @property
    def offset(self) -> int:
        """Where its line starts in the file."""
        return self.span >> _OFFSET_SHIFT

    @property
    def length(self) -> int:
        """Bytes of its line, with the newline."""
        return self.span & _FIELD

    @property
    def at(self) -> int:
        """Where its message's JSON starts in the line (a small number), if it is on disk."""
        return self.span >> _FIELD_BITS & _FIELD

    @property
    def size(self) -> int:
        """Bytes of its message's JSON on disk (0 where it is not): it stays there until it is
        output, passed on as it is and never parsed a second time."""
        return self.span >> 2 * _FIELD_BITS & _FIELD

    @property
    def line(self) -> int:
        """Its line number, from 1 (counted in the file: for messages)."""
        return self.source.line_at(self.offset) if self.source is not None else 0

    @property
    def stamp(self) -> Any:
        """The entry's ``timestamp``, as written."""
        if self.written_stamp is not IN_LINE:
            return self.written_stamp
        assert self.source is not None, "a message on disk has its source"
        match = _MESSAGE_LINE.match(self.source.read(self.offset, self.at, False))
        if match is None:
            raise SessionFileError(self.source.path, "changed while being read", self.line)
        return match.group(3).decode()

    @property
    def has_message(self) -> bool:
        """A ``message`` entry whose message is an object: the context can send it."""
        return self.kept is not None or self.span >> 2 * _FIELD_BITS & _FIELD > 0

    @property
    def message_size(self) -> int:
        """Bytes of its message's JSON."""
        return len(self.kept) if self.kept is not None else self.size

    def message_json(self) -> bytes:
        """Its message's JSON, migrated to version 3 (``has_message`` must hold)."""
        if self.kept is not None:
            return self.kept
        assert self.source is not None, "a message on disk has its source"
        span = self.span
        at = (span >> _OFFSET_SHIFT) + (span >> _FIELD_BITS & _FIELD)
        return self.source.read(at, span >> 2 * _FIELD_BITS & _FIELD)

    def message(self, longest: int | None = LONGEST_TEXT) -> Any:
        """Its message, parsed (``has_message`` must hold); a string longer than ``longest``
        characters is read as its head and tail (``jsonl.parse_bounded``), unless ``longest``
        is None: what is output whole (a message rebuilt by the agent's rules) or written."""
        data = self.message_json()
        return parse_line(data) if longest is None else parse_bounded(data, longest)


def with_facts(records: list[Record]) -> list[Record]:
    """``records``, each message left on disk (``LAZY``) replaced by a copy that holds its
    facts: read once, in file order, for a context's window, whose rules then ask them many
    times at the cost of a field. ``records`` itself, not a copy, where none is on disk (a
    window read whole: its copy would be a tenth of the records' memory)."""
    if all(record.loaded_facts is not LAZY for record in records):
        return records
    out: list[Record] = []
    append = out.append
    for record in records:
        if record.loaded_facts is LAZY:
            source = record.source
            assert source is not None, "a message on disk has its source"
            record = _new_record(Record, (*record[:5], source.facts(record, False), *record[6:]))
        append(record)
    return out


class Source:
    """The file a session was read from, read again by byte range.

    It holds a descriptor of the file as it was opened: an agent's append changes nothing read
    through it, and a file renamed over it (an old file rewritten) leaves it as it was. Only a
    file rewritten in place can change the bytes, which is found and reported.
    """

    __slots__ = ("_alike", "_at", "_calls", "_facts", "_fd", "_file", "_window", "path")

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd = fd
        status = os.fstat(fd)
        self._file = (status.st_dev, status.st_ino)
        self._at = 0
        self._window = b""
        """The bytes last read ahead, from ``_at``: output reads messages in file order."""
        self._facts: dict[int, MessageFacts] = {}
        """The facts of its messages read so far, by ``Record.span``."""
        self._alike: dict[MessageFacts, MessageFacts] = {}
        """Equal facts of assistant turns (most are), held once."""
        self._calls: dict[str, str] = {}
        """The ids of tool calls read and not answered yet (``message_facts``)."""

    def __del__(self) -> None:
        self.release()

    def release(self) -> None:
        """Close the file until it is read again, then opened by its path, and only if that is
        still the same file (else ``SessionFileError``): a rotation holds many sessions read,
        and never more descriptors than it reads at once."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        self._window = b""

    def read(self, offset: int, length: int, whole: bool = True) -> bytes:
        """``length`` bytes at ``offset``: a JSON object when it was loaded (or, not
        ``whole``, what precedes a message in its line)."""
        start = offset - self._at
        if start >= 0 and start + length <= len(self._window):
            data = self._window[start : start + length]
        elif length >= READ_AHEAD:  # read alone, and not kept: never held twice
            data = self._pread(length, offset)
        else:
            self._window = self._pread(READ_AHEAD, offset)
            self._at = offset
            data = self._window[:length]
        end = len(data)
        while whole and end and data[end - 1] in _LINE_END:  # a newline, without a copy
            end -= 1
        if len(data) != length or (whole and (not end or data[end - 1] != _CLOSING_BRACE)):
            raise SessionFileError(self.path, "changed while being read", self.line_at(offset))
        return data

    def facts(self, record: Record, keep: bool = True) -> MessageFacts:
        """The facts of a message on disk (``Record.facts``), read from the file once if
        ``keep``."""
        facts = self._facts.get(record.span)
        if facts is not None:
            return facts
        try:
            message = orjson.loads(record.message_json())
        except orjson.JSONDecodeError:  # validated at load: other bytes now
            raise SessionFileError(self.path, "changed while being read", record.line) from None
        facts = self.shared(message_facts(message, self._calls))
        if keep:
            self._facts[record.span] = facts
        return facts

    def roles(self, records: Iterable[Record]) -> Iterator[str | None]:
        """The role of each of ``records``' messages (None for other entries), in one pass in
        file order: without its facts where its JSON begins with a common role and nothing
        after could be a "role" key, which JSON.parse would take instead (another one, or one
        spelt with escapes: any ``\\u00``). For a file of many short lines, a fifth of the cost
        of their facts: what tells one agent's messages from another's."""
        first = _ROLE_FIRST.match
        for record in records:
            facts = record.loaded_facts
            if facts is not LAZY:
                yield facts.role if facts is not None else None
                continue
            span = record.span
            at = (span >> _OFFSET_SHIFT) + (span >> _FIELD_BITS & _FIELD)
            end = at + (span >> 2 * _FIELD_BITS & _FIELD)
            if end - self._at > len(self._window) or at < self._at:
                self.read(at, end - at)  # the window now holds it, if it is not too long
            window, start, stop = self._window, at - self._at, end - self._at
            match = first(window, start, stop) if start >= 0 and stop <= len(window) else None
            if match is not None and window[stop - 1] == _CLOSING_BRACE:
                after = match.end()
                if (
                    window.find(b'"role"', after, stop) < 0
                    and window.find(b"\\u00", after, stop) < 0
                ):
                    yield _COMMON_ROLES[match.group(1)]
                    continue
            yield self.facts(record).role

    def shared(self, facts: MessageFacts) -> MessageFacts:
        """``facts``, held once where equal ones already are: most assistant turns without
        tool calls have the same."""
        if facts.role == "assistant" and not facts.tool_call_ids:
            return self._alike.setdefault(facts, facts)
        return facts

    def line_at(self, offset: int) -> int:
        """The number of the line that holds byte ``offset`` (for a message: the file is read
        up to it)."""
        return self.lines_at([offset])[0]

    def lines_at(self, offsets: list[int]) -> list[int]:
        """``line_at`` of each of ``offsets`` (in order), the file read once up to the last."""
        numbers: list[int] = []
        lines, at = 1, 0
        for offset in offsets:
            while at < offset:
                chunk = self._pread(min(READ_AHEAD, offset - at), at)
                if not chunk:
                    break
                lines += chunk.count(b"\n")
                at += len(chunk)
            numbers.append(lines)
        return numbers

    def _pread(self, length: int, offset: int) -> bytes:
        try:
            if self._fd < 0:
                self._reopen()
            return os.pread(self._fd, length, offset)
        except OSError as error:
            raise SessionFileError(self.path, os_reason(error)) from None

    def _reopen(self) -> None:
        fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        status = os.fstat(fd)
        if (status.st_dev, status.st_ino) != self._file:
            os.close(fd)
            raise SessionFileError(self.path, "replaced since it was read")
        self._fd = fd


@dataclass(frozen=True)
class Session:
    """A loaded session: its header and every entry, in file order."""

    path: Path
    header: Entry
    records: list[Record]
    title_slot: Entry | None = None
    skipped_lines: tuple[int, ...] = ()
    """Line numbers (1-based) of lines that could not be read as entries."""
    duplicate_ids: tuple[str, ...] = ()
    by_id: dict[str, Record] = field(default_factory=dict, repr=False)
    """Each id's entry; a later entry with the same id replaces the earlier one, as in the
    agents' index."""
    read_as: os.stat_result | None = field(default=None, repr=False)
    """The file as it was when read to its end: a rewrite checks that nothing changed since."""
    agent: str | None = None
    """The agent whose own format the file is in, when only one agent writes that format
    (Claude Code's, read by ``agents.claude``): the file has no header of ours then."""
    leaf_id: str | None = None
    """The leaf that agent resumes, when it is not the last entry (Claude Code's rule)."""
    stored_as: Any = None
    """What a session kept in a database was read as (its rows' counts and latest change), for
    a write to check that nothing moved: ``read_as`` is a file's."""
    not_resumed: str | None = None
    """Why that agent itself would not resume the file as it is, when it would not (it is read
    here as a transcript all the same)."""

    @property
    def id(self) -> str:
        return str(self.header["id"])

    @property
    def version(self) -> int:
        return header_version(self.header)

    @property
    def title(self) -> str | None:
        """The session's title, by the rule ``list`` uses too (``session_title``)."""
        infos = (r.entry for r in reversed(self.records) if r.type == "session_info" and r.entry)
        name = next((i["name"] for i in infos if isinstance(i.get("name"), str)), None)
        return session_title(self.title_slot, self.header, name, self._first_request())

    def _first_request(self) -> str | None:
        found = TitleRequest()
        for record in self.records:
            if record.facts and record.facts.role == "user" and record.has_message:
                text = text_of(record.message().get("content"))
                if not is_handoff_prompt(text) and found.offer(text):  # ours aside
                    break
        return found.request

    @property
    def parent(self) -> str | None:
        return parent_session(self.header)

    def release(self) -> None:
        """Close the file until an entry is read from it again (``Source.release``)."""
        if self._source is not None:
            self._source.release()

    def roles(self) -> Iterator[str | None]:
        """The role of each record's message (None for other entries), in file order, read
        without the facts of most (``Source.roles``)."""
        if self._source is None:
            return (r.facts.role if r.facts is not None else None for r in self.records)
        return self._source.roles(self.records)

    @property
    def _source(self) -> Source | None:
        return next((r.source for r in self.records if r.source is not None), None)

    def entries(self, records: Iterable[Record], longest: int | None = None) -> Iterator[Entry]:
        """The full entries of ``records`` as in the file (migrated to version 3), in order.

        Message entries are read again from the file, one line each; with ``longest``, each of
        their strings longer than that is read as its head and tail (for views).
        """
        for record in records:
            yield record.entry if record.entry is not None else self._read(record, longest)

    def entries_json(self, records: Iterable[Record]) -> Iterator[Entry | Verbatim]:
        """``entries``, but an entry written as the agents write one is passed on as the JSON
        it is in the file, never parsed: ``show --json`` of a 100 MB line holds it once."""
        for record in records:
            if record.written_stamp is IN_LINE:  # loaded by the fast path: read as it is
                yield Verbatim(self._line(record))
            else:
                yield record.entry if record.entry is not None else self._read(record, None)

    def entry(self, record: Record) -> Entry:
        return next(self.entries([record]))

    def _line(self, record: Record) -> bytes | memoryview:
        """The record's line, without its newline (and without a copy)."""
        assert record.source is not None, "an entry not kept is on disk"
        data = record.source.read(record.offset, record.length)
        end = len(data)
        while data[end - 1] in _LINE_END:
            end -= 1
        return data if end == len(data) else memoryview(data)[:end]

    def _read(self, record: Record, longest: int | None) -> Entry:
        raw = self._line(record)
        try:
            if record.written_stamp is IN_LINE:
                # A line as the agents write it: split as it was loaded, the message parsed
                # alone, which is as deep as orjson reads (the whole line is one level more).
                entry = _split_entry(raw, longest)
            else:
                entry = parse_line(raw) if longest is None else parse_bounded(raw, longest)
        except ValueError:
            entry = None
        if not isinstance(entry, dict):
            raise SessionFileError(self.path, "changed while being read", record.line)
        return _migrate(entry, record, self.version)


def header_version(header: Entry) -> int:
    version = header.get("version")
    if isinstance(version, (int, float)) and not isinstance(version, bool):
        return int(version)
    return 1


def is_header(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and value.get("type") == "session"
        and isinstance(value.get("id"), str)
    )


def is_title_slot(value: Any) -> bool:
    """omp's title slot, recognised (as omp does) by its content rather than its width."""
    return (
        isinstance(value, dict)
        and value.get("type") == "title"
        and value.get("v") == 1
        and all(isinstance(value.get(k), str) for k in ("title", "updatedAt", "pad"))
        and value.get("source", "auto") in ("auto", "user")
    )


def parent_session(header: Entry) -> str | None:
    """The session this one was forked or handed off from (older files say ``branchedFrom``)."""
    parent = header.get("parentSession", header.get("branchedFrom"))
    return parent if isinstance(parent, str) else None


def session_title(
    title_slot: Entry | None, header: Entry, name: Any, first_request: str | None
) -> str | None:
    """The one rule for what a session is called, in ``show`` and ``list`` alike: the first
    non-blank of omp's title slot, the header's ``title``, pi's latest ``session_info`` name,
    and the first user request; on one line."""
    candidates = (
        title_slot.get("title") if title_slot else None,
        header.get("title"),
        name,
        first_request,
    )
    title = next((c for c in candidates if isinstance(c, str) and c.strip()), None)
    return one_line(title, TITLE_CHARS) if title else None


def _migrate(entry: Entry, record: Record, version: int) -> Entry:
    """Bring one entry up to version 3, as the agents do when they open an old file."""
    if version < 2 and entry.get("type") != "session":
        # JavaScript adds new keys at the end of an object, and so do we.
        entry["id"] = record.id
        entry["parentId"] = record.parent_id
    if entry.get("type") == "message":
        _migrate_message(entry.get("message"), version)
    return entry


def _migrate_message(message: Any, version: int) -> None:
    # Version 3 renamed the role of extension messages; only older files are migrated.
    if version < 3 and isinstance(message, dict) and message.get("role") == "hookMessage":
        message["role"] = "custom"


def _v1_id(ordinal: int) -> str:
    # Version 1 entries have no ids. Ids derived from the position are unique, and let a
    # compaction's firstKeptEntryIndex (which counts parsed lines, header = 0) name its entry.
    return f"{ordinal:08x}"


def _migrate_v1_compaction(entry: Entry, ordinal: int, idless: set[int]) -> None:
    # Only an earlier entry can be kept: the index of the compaction itself or of a later
    # entry names nothing yet when the agent migrates, so nothing is kept.
    index = entry.pop("firstKeptEntryIndex", None)
    if isinstance(index, float) and index.is_integer():
        index = int(index)
    valid = isinstance(index, int) and not isinstance(index, bool)
    if valid and 0 < index < ordinal and index not in idless:
        entry["firstKeptEntryId"] = _v1_id(index)


def _has_text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _block_has_content(block: Any, signatures_count: bool) -> bool:
    """omp's test of whether a block makes a failed turn worth keeping."""
    if not isinstance(block, dict):
        return True
    kind = block.get("type")
    if kind == "text":
        return _has_text(block.get("text"))
    if kind == "thinking":
        return _has_text(block.get("thinking")) or (
            signatures_count and _has_text(block.get("thinkingSignature"))
        )
    if kind == "redactedThinking":
        return _has_text(block.get("data"))
    return kind != "fallback"  # tool calls, images and unknown blocks count


def without_signature(block: Any) -> Any:
    """A thinking block without its signature (which no longer matches an edited turn)."""
    if isinstance(block, dict) and block.get("type") == "thinking" and "thinkingSignature" in block:
        return {k: v for k, v in block.items() if k != "thinkingSignature"}
    return block


def replays_openai_history(message: dict[str, Any]) -> bool:
    """A Copilot turn whose replay metadata omp discards on load (payload, signatures)."""
    payload = message.get("providerPayload")
    return (
        message.get("provider") == "github-copilot"
        and isinstance(payload, dict)
        and payload.get("type") == "openaiResponsesHistory"
    )


_NO_MESSAGE = MessageFacts(None, None, None, None, (), None, None, _SUPERSEDED)


def _plain_facts(role: Any) -> MessageFacts:
    return MessageFacts(role if isinstance(role, str) else None, None, None, None, (), None)


_USER = _plain_facts("user")


def message_facts(message: Any, calls: dict[str, str] | None = None) -> MessageFacts:
    """The facts of one message object that the context rules depend on. With ``calls``, the
    ids of tool calls read and not answered yet: a result's id is then held once, as its
    call's (a string each, for a file of many short lines, is 4% of its size)."""
    if not isinstance(message, dict):
        return _NO_MESSAGE  # nothing the agent could send: left out of the context
    role = message.get("role")
    if role == "assistant":
        return _assistant_facts(message, calls)
    if role == "user":
        facts = _USER
    elif role == "toolResult":
        answers = js_key(message.get("toolCallId", UNDEFINED))
        if calls is not None and type(answers) is str:
            answers = calls.pop(answers, answers)
        facts = MessageFacts("toolResult", None, None, None, (), answers)
    elif role == "custom":
        custom_type = message.get("customType")
        facts = _plain_facts("custom")
        facts = facts._replace(custom_type=custom_type) if isinstance(custom_type, str) else facts
    else:
        facts = _plain_facts(role)
    if message.get("content") is None:
        return facts._replace(flags=facts.flags | _NO_CONTENT)
    return facts


def _assistant_facts(message: dict[str, Any], calls: dict[str, str] | None) -> MessageFacts:
    content = message.get("content")
    blocks = content if isinstance(content, list) else []
    tool_call_ids: list[CallId] = []
    keeps_content = False
    for block in blocks:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "toolCall":
            call = js_key(block.get("id", UNDEFINED))
            if calls is not None and type(call) is str:
                calls[call] = call
            tool_call_ids.append(call)
        elif kind != "redactedThinking":
            keeps_content = True
    stop_reason = message.get("stopReason")
    replays = replays_openai_history(message)
    empty_error = stop_reason == "error" and not any(
        _block_has_content(b, not replays) for b in blocks
    )
    retried = "retryRecovery" in message and js_truthy(message["retryRecovery"])
    return MessageFacts(  # positional: built once per assistant line, and faster so
        "assistant",
        # Held once however many turns name them (interned): 8 MB of 100 MB of short lines.
        sys.intern(stop_reason) if type(stop_reason) is str else None,
        sys.intern(js_string(message.get("provider", UNDEFINED))),
        sys.intern(js_string(message.get("model", UNDEFINED))),
        tuple(tool_call_ids),
        None,
        None,
        (keeps_content and _KEEPS_CONTENT)
        | ((retried or empty_error) and _SUPERSEDED)
        | (replays and _REPLAYS)
        | (content is None and _NO_CONTENT),
    )


@contextmanager
def gc_paused(kept: bool = True) -> Iterator[None]:
    """The cyclic GC off while a file is read: parsing allocates many containers and makes no
    cycles, and the GC would only rescan them (a tenth of the time of a handoff's facts). With
    ``kept``, what was made (records, which live as long as the command) is moved out of its
    sight for good."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if kept:
            gc.freeze()
        if enabled:
            gc.enable()


# A message line exactly as the agents write it: its message can be parsed (and kept) on its own,
# with no parse of the whole line and no serialising again. Ids and times are plain printable
# ASCII there (no quote, no backslash); anything else, invalid UTF-8 included, takes the long way.
_PLAIN = rb"[\x20\x21\x23-\x5b\x5d-\x7e]"
_MESSAGE_LINE = re.compile(
    rb'\{"type":"message","id":"(' + _PLAIN + rb'+)","parentId":(?:null|"(' + _PLAIN + rb'*)"),'
    rb'"timestamp":"(' + _PLAIN + rb'*)","message":'
)
_LINE_END = b" \t\r\n"
_SPACES = b" \t\r"
_CLOSING_BRACE = ord("}")
_OPENING_BRACE = ord("{")
_NEWLINE = ord("\n")
_new_record = tuple.__new__


def _message_span(raw: bytes | memoryview) -> tuple[re.Match[bytes], int, int] | None:
    """Where the message is in a message line as the agents write it (``_MESSAGE_LINE``):
    the match of what precedes it, and the span of its JSON; None for any other line.

    What follows ``"message":`` up to the line's last brace parses as one JSON value only if
    the line holds exactly these five keys, so that value is the message.
    """
    match = _MESSAGE_LINE.match(raw)
    if match is None:
        return None
    if raw[-3:] == b"}}\n":
        end = len(raw) - 2
    else:
        end = len(raw)
        while end and raw[end - 1] in _LINE_END:
            end -= 1
        if raw[end - 1] != _CLOSING_BRACE:
            return None
        end -= 1
    return match, match.end(), end


def _split_entry(raw: bytes | memoryview, longest: int | None) -> Entry | None:
    """A message line as the agents write it, read back as its entry: its message parsed
    alone (bounded by ``longest``, unless None), the rest taken from the line as it is."""
    split = _message_span(raw)
    if split is None:
        return None
    match, begin, end = split
    entry_id, parent_id, stamp = match.groups()
    data = memoryview(raw)[begin:end]
    return {
        "type": "message",
        "id": entry_id.decode(),
        "parentId": parent_id.decode() if parent_id is not None else None,
        "timestamp": stamp.decode(),
        "message": parse_line(data) if longest is None else parse_bounded(data, longest),
    }


def _parent(parent_id: bytes | None, by_id: dict[str, Record]) -> str | None:
    """A record's parent id, as the string of the parent's own record when it is known: one
    string held for both, not two alike."""
    if parent_id is None:
        return None
    parent = parent_id.decode()
    known = by_id.get(parent)
    return known.id if known is not None else parent


def _message_record(
    raw: bytes, start: int, source: Source, by_id: dict[str, Record]
) -> Record | None:
    """A message line as the agents write it (version 2 or 3, its message not one that the
    migration changes) as a record, split without parsing it whole; None for any other line.

    The message is parsed here once, for its facts and to know it is valid, and then
    dropped; its text is where it is in the file. A long one is parsed with its longest
    strings read in part (``jsonl.parse_bounded``), so that the line is never held twice.
    What many records hold alike is held once: a parent's id is the parent's own, and equal
    facts are one tuple (``Source.shared``).
    """
    split = _message_span(raw)
    if split is None:
        return None
    match, begin, end = split
    read = _read_message(memoryview(raw)[begin:end], source)
    if read is None:
        return None
    message = read[0]
    if isinstance(message, dict) and message.get("role") == "hookMessage":
        return None  # renamed, in version 3 only if the file is older: the long way decides
    entry_id, parent_id, _ = match.groups()
    parent = _parent(parent_id, by_id)
    size = end - begin if isinstance(message, dict) else 0
    # Built as a plain tuple: once per message line, and twice as fast as through __new__.
    return _new_record(
        Record,
        (
            entry_id.decode(),
            parent,
            "message",
            len(raw) | begin << _FIELD_BITS | size << 2 * _FIELD_BITS | start << _OFFSET_SHIFT,
            None,
            read[1],
            IN_LINE,
            None,
            source,
        ),
    )


def _read_message(data: memoryview, source: Source) -> tuple[Any, MessageFacts] | None:
    """The message whose JSON is ``data``, parsed (a long one with its longest strings read
    in part, ``jsonl.parse_bounded``), and its facts; None if orjson refuses it (invalid UTF-8,
    lone surrogates, more keys than a message line has: the long way decides)."""
    try:
        if len(data) <= LONGEST_TEXT:
            message = orjson.loads(data)
        else:
            message = parse_bounded(data, loads=orjson.loads)
    except orjson.JSONDecodeError:
        return None
    return message, source.shared(message_facts(message, source._calls))


def _exact(data: bytes) -> bytes:
    # orjson's output keeps spare capacity; a copy the exact size holds a third of the memory.
    return bytes(memoryview(data))


def load_session(path: Path | str) -> Session:
    """Read a session file (any dialect, any version) into a ``Session``.

    Raises ``SessionFileError`` (exit code 4) when the file cannot be read or has no valid
    header. Malformed lines after the header are skipped and listed in ``skipped_lines``,
    as the agents skip them.
    """
    path = Path(path)
    try:
        # A larger buffer than the default 8 KiB halves the cost of splitting long lines.
        with open_regular(path, READ_BUFFER) as file, gc_paused():
            source = Source(path, os.dup(file.fileno()))
            lines = file_lines(file, path)
            head = read_head(path, lines)
            if head.version >= 3:
                body = _read_blocks(source, file, _last_window(file.fileno()))
            else:
                body = _read_entries(source, head.version, lines)
            read_as = os.fstat(file.fileno())
    except OSError as error:
        raise SessionFileError(path, os_reason(error)) from None
    return Session(
        path=path,
        header=head.header,
        records=body.records,
        title_slot=head.title_slot,
        skipped_lines=(*head.skipped, *body.skipped),
        duplicate_ids=tuple(dict.fromkeys(body.duplicates)),
        by_id=body.by_id,
        read_as=read_as,
    )


class Shape(NamedTuple):
    """A session file's lines, counted without reading them as entries."""

    lines: int
    longest: int
    """Bytes of its longest line, where that is past ``READ_AHEAD`` (else less than that)."""


def file_shape(path: Path) -> Shape:
    """How many lines ``path`` has and how long the longest is: at the speed of reading it,
    for a guess at what loading it will cost before it is loaded."""
    lines = longest = run = 0  # ``run``: the bytes since the last newline
    with open_regular(path, buffering=0) as file:
        while chunk := file.read(READ_AHEAD):
            first = chunk.find(b"\n")
            if first < 0:
                run += len(chunk)
                continue
            longest = max(longest, run + first)
            lines += chunk.count(b"\n")
            run = len(chunk) - chunk.rfind(b"\n") - 1
    return Shape(lines + (run > 0), max(longest, run))


def open_regular(path: Path, buffering: int = -1) -> BinaryIO:
    """Open a session file for reading. Only a regular file: a FIFO would block, a device such
    as /dev/zero would never end."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise SessionFileError(path, "is a directory, not a session file")
        if not stat.S_ISREG(mode):
            raise SessionFileError(path, "not a regular file")
        return open(fd, "rb", buffering=buffering)
    except BaseException:
        os.close(fd)
        raise


def file_lines(file: BinaryIO, path: Path) -> Iterator[Line]:
    """The lines of ``file``, numbered, with where each starts; one longer than
    ``MAX_LINE_BYTES`` is an error.

    A line longer than ``LONG_LINE`` is read once more, whole, by its offset: a buffered
    reader builds a long line from its parts and holds it twice while it does.
    """
    piece = min(LONG_LINE, MAX_LINE_BYTES + 1)
    readline = partial(file.readline, piece)
    offset = number = 0
    # Not enumerate: its result, kept for the next, would hold a long line's first piece.
    for raw in iter(readline, b""):
        number += 1  # noqa: SIM113
        size = len(raw)
        if size == piece:  # as long as a piece: longer, perhaps, or too long
            ends = raw[-1] == _NEWLINE
            raw = b""
            raw, size = _whole_line(file, readline, partial(int, number), offset, size, ends, path)
        yield number, offset, raw
        offset += size


def _whole_line(
    file: BinaryIO,
    readline: Callable[[], bytes],
    number: Callable[[], int],
    offset: int,
    size: int,
    ends: bool,
    path: Path,
) -> tuple[bytes, int]:
    """The line at ``offset`` whose first ``size`` bytes were read (ending it if ``ends``):
    the rest read past, none of it kept, then the line read whole by its offset; ``number``
    tells its number, for the error."""
    while not ends and size <= MAX_LINE_BYTES and (more := readline()):
        size += len(more)
        ends = more[-1] == _NEWLINE
    if size > MAX_LINE_BYTES:
        raise _too_long(path, number())
    try:
        return os.pread(file.fileno(), size, offset), size
    except OSError as error:
        raise SessionFileError(path, os_reason(error)) from None


def _too_long(path: Path, number: int) -> SessionFileError:
    limit = f"{MAX_LINE_BYTES >> 20:,} MiB"
    return SessionFileError(path, f"a line longer than {limit}: not a session file", number)


Line = tuple[int, int, bytes]
"""A line of a file: its number (from 1), its byte offset, and its bytes with the newline."""


def numbered(lines: Iterable[bytes], first_offset: int = 0) -> Iterator[Line]:
    """Number the lines of a file and note where each starts."""
    offset = first_offset
    for number, raw in enumerate(lines, 1):
        yield number, offset, raw
        offset += len(raw)


class Head(NamedTuple):
    """What precedes the entries: omp's optional title slot, then the session header."""

    title_slot: Entry | None
    header: Entry
    skipped: tuple[int, ...]
    """Unreadable lines before the header, which the agents skip too."""

    @property
    def version(self) -> int:
        return header_version(self.header)


def read_head(path: Path, lines: Iterator[Line]) -> Head:
    """Read lines up to and including the header; raise ``SessionFileError`` if there is none.

    The iterator is left at the first entry, so loading and listing both go on from there.
    """
    title_slot: Entry | None = None
    skipped: list[int] = []
    for number, _, raw in lines:
        if number == 1 and raw.startswith(BOM):
            raw = raw[len(BOM) :]  # the agents read past a byte-order mark
        try:
            value = parse_line(raw)
        except ValueError:
            if not raw.strip():
                continue  # blank lines are not entries, nor errors
            skipped.append(number)
            continue
        if number == 1 and is_title_slot(value):
            title_slot = value
        elif is_header(value):
            return Head(title_slot, value, tuple(skipped))
        else:
            raise SessionFileError(
                path, "not a session file: no session header (a 'session' line with an id)", number
            )
    if skipped:
        raise SessionFileError(path, "not valid JSON, and no session header follows", skipped[0])
    raise SessionFileError(path, "empty file, not a session")


class _Body(NamedTuple):
    records: list[Record]
    by_id: dict[str, Record]
    skipped: list[int]
    duplicates: list[str]


class _Version1Ids:
    """Version 1 entries have no ids: each gets one from its position and is chained to the
    entry before it, as the agents migrate such a file when they open it."""

    def __init__(self) -> None:
        self.previous: str | None = None
        self.idless: set[int] = set()
        """Ordinals of values that get no id (they are not entries)."""

    def link(self, value: Entry, ordinal: int) -> tuple[str, str | None]:
        entry_id, parent_id = _v1_id(ordinal), self.previous
        self.previous = entry_id
        if value.get("type") == "compaction":
            _migrate_v1_compaction(value, ordinal, self.idless)
        return entry_id, parent_id


def _read_entries(source: Source, version: int, lines: Iterator[Line]) -> _Body:
    """Every line after the header as a record; what cannot be an entry is skipped."""
    records: list[Record] = []
    by_id: dict[str, Record] = {}
    skipped: list[int] = []
    duplicates: list[str] = []
    fast = version >= 2  # version 1 entries have no ids: each is given one, the long way
    version_1 = _Version1Ids() if version < 2 else None
    ordinal = 0  # parsed values after the header, as version 1's firstKeptEntryIndex counts them
    for number, start, raw in lines:
        record = _message_record(raw, start, source, by_id) if fast else None
        if record is None:
            try:
                value = parse_line(raw)
            except ValueError:
                if raw.strip():
                    skipped.append(number)
                continue  # not a value: the agents do not count it among the entries either
            ordinal += 1
            record = _record(value, version, version_1, ordinal, start, len(raw), source)
            if record is None:
                skipped.append(number)
                continue
        if record.id in by_id:
            duplicates.append(record.id)
        records.append(record)
        by_id[record.id] = record
    return _Body(records, by_id, skipped, duplicates)


BLOCK = 1 << 16
"""Bytes read at once by ``_blocks``: a block this small is allocated again where the last
one was, where a large one costs the kernel a fresh page each 4 kB."""


def _blocks(file: BinaryIO, source: Source) -> Iterator[tuple[int, bytes]]:
    """The rest of ``file`` as blocks of whole lines (the last may lack its newline), each
    with the offset where it starts. A line longer than ``LONG_LINE`` is a block of its own,
    read whole by its offset once its end is found, never held twice (``_whole_line``)."""
    offset = file.tell()
    pending: list[bytes] = []  # the start of a line that has not ended yet
    waiting = 0  # its bytes
    long_line = min(LONG_LINE, MAX_LINE_BYTES + 1)
    while chunk := file.read(BLOCK):
        cut = chunk.rfind(b"\n") + 1
        if not cut:
            pending.append(chunk)
            waiting += len(chunk)
            if waiting >= long_line:
                pending = []
                readline = partial(file.readline, LONG_LINE)
                number = partial(source.line_at, offset)
                line, size = _whole_line(
                    file, readline, number, offset, waiting, False, source.path
                )
                file.seek(offset + size)
                yield offset, line
                offset += size
                waiting = 0
            continue
        block = chunk if cut == len(chunk) else chunk[:cut]
        if pending:
            block = b"".join([*pending, block])
        yield offset, block
        offset += len(block)
        pending = [chunk[cut:]] if cut < len(chunk) else []
        waiting = len(chunk) - cut
    if pending:
        yield offset, b"".join(pending)


_NOT_A_VALUE: Any = object()

_WINDOW_START = re.compile(rb'\n\{"type":"(?:compaction|reset_boundary)"')
"""A line where a context may start, as the agents write it."""
_SCAN = 1 << 20
"""Bytes searched at once by ``_last_window``."""


def _last_window(fd: int) -> int:
    """Where the last line that may start a context (a compaction, a reset) begins, if it is
    in the file's last quarter, found from the end; else 0: a context of most of the file asks
    the facts of most of its messages."""
    size = os.fstat(fd).st_size
    overlap = len(b'\n{"type":"reset_boundary"')
    buffer = bytearray(_SCAN + overlap)  # one buffer: a fresh one would be fresh pages
    end = size
    while end > 0 and end >= size - max(size // 4, _SCAN):
        start = max(0, end - _SCAN)
        read = os.preadv(fd, [memoryview(buffer)[: end - start + overlap]], start)
        starts = [m.start() for m in _WINDOW_START.finditer(buffer, 0, read)]
        if starts:
            return start + starts[-1] + 1
        end = start
    return 0


def _read_blocks(source: Source, file: BinaryIO, lazy_before: int) -> _Body:
    """``_read_entries`` of a version 3 file (whose messages no migration changes), from where
    ``file`` is on, a block of lines at a time.

    No message is migrated in version 3: ``hookMessage`` is a role like any other, and a
    message line as the agents write it (``_MESSAGE_LINE``) is split as ``_message_record``
    splits it, whatever its role. One before ``lazy_before`` is not
    parsed: its message, an object of up to ``LONGEST_TEXT`` bytes, is validated by simdjson,
    at several times orjson's speed with nothing built, and its facts are read when first
    asked for (``Record.facts``). simdjson accepts nothing orjson refuses but a leading
    byte-order mark, which the brace first rules out; whatever it refuses (lone surrogates,
    integers past 64 bits, deep nesting) takes the way of any other line. From
    ``lazy_before`` on (the last compaction, where a context most likely starts: its window
    asks the facts of every message), messages are parsed as they are read, for their facts.
    """
    records: list[Record] = []
    append = records.append
    by_id: dict[str, Record] = {}
    duplicates: list[str] = []
    validate = simdjson.Parser().parse
    match_line = _MESSAGE_LINE.match
    longest = MAX_LINE_BYTES
    skipped_at: list[int] = []  # the offsets of lines skipped: numbered at the end
    for at, block in _blocks(file, source):
        find = block.find
        size = len(block)
        lazy_end = lazy_before - at  # lines that start before it are validated only
        position = 0
        while position < size:
            end = find(b"\n", position)  # the line without its newline
            stop = end + 1
            if end < 0:
                end = stop = size
            if stop - position > longest:
                raise _too_long(source.path, source.line_at(at + position))
            match = match_line(block, position)
            if match is not None and position < lazy_end:
                begin, last = match.end(), end - 1
                if block[last] != _CLOSING_BRACE:  # white space after it, perhaps
                    while last > begin and block[last] in _SPACES:
                        last -= 1
                if (
                    block[last] == _CLOSING_BRACE
                    and block[begin] == _OPENING_BRACE
                    and last - begin <= LONGEST_TEXT
                ):
                    try:
                        validate(block[begin:last])  # a copy: simdjson reads a memoryview slowly
                    except (ValueError, RuntimeError):
                        pass
                    else:
                        entry_id, parent_id, _ = match.groups()
                        entry_id = entry_id.decode()
                        parent = _parent(parent_id, by_id)
                        record = _new_record(
                            Record,
                            (
                                entry_id,
                                parent,
                                "message",
                                stop - position
                                | (begin - position) << _FIELD_BITS
                                | (last - begin) << 2 * _FIELD_BITS
                                | (at + position) << _OFFSET_SHIFT,
                                None,
                                LAZY,
                                IN_LINE,
                                None,
                                source,
                            ),
                        )
                        if entry_id in by_id:
                            duplicates.append(entry_id)
                        append(record)
                        by_id[entry_id] = record
                        position = stop
                        continue
            found = _line_record(block, position, stop, end, match, at, source, by_id)
            if found is None:
                skipped_at.append(at + position)
            elif found is not _BLANK:
                if found.id in by_id:
                    duplicates.append(found.id)
                append(found)
                by_id[found.id] = found
            position = stop
    return _Body(records, by_id, source.lines_at(skipped_at), duplicates)


_BLANK: Any = object()
"""``_line_record``'s answer for a blank line: not an entry, nor an error."""


def _line_record(
    block: bytes,
    position: int,
    stop: int,
    end: int,
    match: re.Match[bytes] | None,
    at: int,
    source: Source,
    by_id: dict[str, Record],
) -> Record | None:
    """The record of the line of ``block`` from ``position`` to ``stop`` (``end`` without its
    newline) of a version 3 file, ``_MESSAGE_LINE``'s ``match`` of it, parsed: only its
    message if it is a message line as the agents write it, else whole; None if it is no
    entry, ``_BLANK`` if it is blank."""
    if match is not None:
        begin, last = match.end(), end - 1
        if block[last] != _CLOSING_BRACE:  # white space after it, perhaps
            while last > begin and block[last] in _SPACES:
                last -= 1
        is_split = block[last] == _CLOSING_BRACE  # the line's last brace
        read = _read_message(memoryview(block)[begin:last], source) if is_split else None
        if read is not None:
            entry_id, parent_id, _ = match.groups()
            parent = _parent(parent_id, by_id)
            length = last - begin if isinstance(read[0], dict) else 0
            span = stop - position | (begin - position) << _FIELD_BITS
            span |= length << 2 * _FIELD_BITS | (at + position) << _OFFSET_SHIFT
            fields = (entry_id.decode(), parent, "message", span, None, read[1], IN_LINE, None)
            return _new_record(Record, (*fields, source))  # as _message_record builds it
    raw = block if stop - position == len(block) else block[position:stop]
    try:
        value = parse_line(raw)
    except ValueError:
        return _BLANK if not raw.strip() else None
    return _record(value, 3, None, 0, at + position, len(raw), source)


def _record(
    value: Any,
    version: int,
    version_1: _Version1Ids | None,
    ordinal: int,
    start: int,
    length: int,
    source: Source,
) -> Record | None:
    """A parsed line as a record, migrated to version 3; None if it cannot be an entry."""
    if not isinstance(value, dict):
        # The agents load these as harmless non-entries; we report them instead.
        if version_1 is not None:
            version_1.idless.add(ordinal)
        return None
    kind = value.get("type")
    entry_id: Any
    parent_id: Any
    if version_1 is not None and kind != "session":
        entry_id, parent_id = version_1.link(value, ordinal)
    else:
        if kind == "session" and version_1 is not None:
            version_1.idless.add(ordinal)
        entry_id, parent_id = value.get("id"), value.get("parentId")
    if not isinstance(entry_id, str):
        return None
    entry: Entry | None = value
    facts: MessageFacts | None = None
    kept: bytes | None = None
    if kind == "message":
        message = value.get("message")
        _migrate_message(message, version)
        entry, facts = None, message_facts(message)
        if isinstance(message, dict):
            kept = _exact(dumps(message))
    record = Record(
        id=entry_id,
        parent_id=parent_id if isinstance(parent_id, str) else None,
        type=kind if isinstance(kind, str) else "",
        span=spanning(start, length),
        entry=entry,
        loaded_facts=facts,
        written_stamp=value.get("timestamp"),
        kept=kept,
        source=source,
    )
    if entry is not None:
        _migrate(entry, record, version)
    return record
