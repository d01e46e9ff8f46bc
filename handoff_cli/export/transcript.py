"""A session's branch as a transcript: the parts a reader sees, in order, for any renderer.

The branch is read one entry at a time and turned into small parts (``Part``): a turn begins,
its text, a fold (a tool call with its result, thinking, a command the user ran, context the
agent sent but never showed), a note of ours, or a mark between turns (a compaction, a handoff,
a model change). The four agents' files all reach here as the shared shape (``Session``,
messages with pi's roles and blocks), so nothing below asks which agent wrote the file.

Every string a part holds came from the session, and is masked here when a ``Redactor`` is
given, parts a batch at a time (in order, so each secret keeps its number); the renderers
escape all of them. Only the calls of one step of the agent are held, waiting for their
results, and one batch: a transcript of any length is made in one pass, in memory that does
not grow with it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple

import orjson

from handoff_cli.agents import build_context, get
from handoff_cli.agents.base import Agent
from handoff_cli.document import (
    HANDOFF_TYPE,
    is_handoff_prompt,
    is_handoff_start,
    is_handoff_start_message,
    opens_session,
    unwrap_document,
)
from handoff_cli.handoff.redact import Redactor
from handoff_cli.sessions.js import js_string
from handoff_cli.sessions.jsonl import dumps
from handoff_cli.sessions.session import Entry, Record, Session
from handoff_cli.text import one_line, text_of

SUMMARY_CHARS = 100
"""How much of a tool call's arguments its fold's one line shows."""
MOST_PENDING = 256
"""Parts of a step held at most for the results of its calls (a file whose calls never got
any would be held whole otherwise)."""
MASKED_AT_ONCE = 1 << 18
"""Characters of parts masked in one call."""
LONG_ARGUMENT = 120
"""A text argument longer than this is a block of its own in its call's fold."""
_COMMANDS = ("command", "cmd")
SYNTHETIC_MODEL = "<synthetic>"
"""The model Claude Code names for the answers it writes itself: no model change."""

USER = "user"
ASSISTANT = "assistant"
TOOL = "tool"
AGENT = "agent"
"""A turn's roles: ``TOOL`` opens a result whose call is not in the transcript, ``AGENT`` what
the agent or an extension of it put in the session (no one's words)."""

THINKING = "thinking"
TOOL_CALL = "tool"
SHELL = "shell"
CONTEXT = "context"
SUMMARY = "summary"
DOCUMENT = "document"
PROMPT = "prompt"
"""The kinds of fold."""

COMPACTION = "compaction"
HANDED_OFF = "handed-off"
HANDED_OFF_IN_PLACE = "handed-off-in-place"
HANDED_OFF_FROM = "handed-off-from"
BRANCH_SUMMARY = "branch-summary"
MODEL = "model"
THINKING_LEVEL = "thinking-level"
TITLE = "title"
ROLLBACK = "rollback"
"""The kinds of mark."""
MINOR_MARKS = frozenset({MODEL, THINKING_LEVEL, TITLE, ROLLBACK})
"""Marks that take one line; the others stand as headings, with their folds."""


class Header(NamedTuple):
    """What the transcript opens with."""

    title: str
    agent: str
    """The agent whose rules read the session, as people call it."""
    session_id: str
    cwd: str | None
    model: str | None
    """The model the agent resumes the branch on ("provider/model"), by its rules."""
    created: str | None
    last: str | None
    """The time of the branch's last entry."""
    parent: str | None
    """The session it was handed off or forked from, as its header names it."""
    entries: int
    leaf: str | None


class Turn(NamedTuple):
    """Someone speaks: what follows, up to the next turn or mark, is theirs."""

    role: str
    stamp: str | None


class Text(NamedTuple):
    """What was said, as it was written."""

    text: str


class Section(NamedTuple):
    """A part of a fold: a label of ours, and a text, as code (``code``: the fence's language)
    or as prose (None)."""

    label: str
    text: str
    code: str | None


class Fold(NamedTuple):
    """Something a reader opens when they want it: closed unless ``open``."""

    kind: str
    summary: str
    sections: tuple[Section, ...]
    failed: bool = False
    open: bool = False


class Note(NamedTuple):
    """A line of ours inside a turn: what is there but not shown (an image), how a turn ended."""

    text: str


class Mark(NamedTuple):
    """Something that happened to the session between turns, with what it holds, folded."""

    kind: str
    title: str
    stamp: str | None
    folds: tuple[Fold, ...] = ()


Part = Turn | Text | Fold | Note | Mark


class Transcript(NamedTuple):
    """The header, then the parts, made as they are read."""

    header: Header
    parts: Iterator[Part]
    masked: Callable[[], int | None]
    """How many distinct secrets were masked so far (None: none are: ``--no-redact``)."""


ROLES = {USER: "User", ASSISTANT: "Assistant", TOOL: "Tool", AGENT: "Agent"}
"""What a turn's heading calls its role."""


def when(stamp: str | None, day: str | None = None) -> str:
    """A time as a heading shows it: an agent's ISO time as ``YYYY-MM-DD HH:MM:SS``, without the
    date when it is ``day``; any other text as it is."""
    if stamp is None:
        return ""
    found = _ISO.match(stamp)
    if found is None:
        return stamp
    date, clock = found.groups()
    return clock if date == day else f"{date} {clock}"


def day_of(stamp: str | None) -> str | None:
    """The date of an agent's ISO time (None for any other text)."""
    found = _ISO.match(stamp) if stamp is not None else None
    return found.group(1) if found is not None else None


_ISO = re.compile(r"(\d{4}-\d\d-\d\d)T(\d\d:\d\d:\d\d)")


def transcript_of(
    session: Session, branch: list[Record], agent: str, redactor: Redactor | None = None
) -> Transcript:
    """The transcript of ``branch`` of ``session``, read by the rules of the agent called
    ``agent`` (its name and model in the header), every text masked by ``redactor`` if given."""
    header = _header(session, branch, agent)
    if redactor is not None:
        header = _masked([header], redactor)[0]
    parts = _Walk(get(agent), session.parent).parts(branch)
    if redactor is None:
        return Transcript(header, parts, lambda: None)
    return Transcript(header, _masked_batches(parts, redactor), lambda: redactor.count)


def _header(session: Session, branch: list[Record], agent: str) -> Header:
    stamps = (r.stamp for r in reversed(branch))
    created = session.header.get("timestamp")
    cwd = session.header.get("cwd")
    return Header(
        title=session.title or f"Session {session.id}",
        agent=get(agent).title,
        session_id=session.id,
        cwd=cwd if isinstance(cwd, str) else None,
        model=build_context(branch, agent).model,  # its messages are made only when read
        created=created if isinstance(created, str) else None,
        last=next((s for s in stamps if isinstance(s, str)), None),
        parent=session.parent,
        entries=len(branch),
        leaf=branch[-1].id if branch else None,
    )


def _changed_model(entry: Entry) -> str | None:
    model = entry.get("model")
    if isinstance(model, str) and model:
        return model
    return _model_name(entry.get("provider"), entry.get("modelId"))  # pi's spelling


def _model_name(provider: Any, model: Any) -> str | None:
    if not isinstance(model, str) or model in ("", "undefined", SYNTHETIC_MODEL):
        return None
    if isinstance(provider, str) and provider not in ("", "undefined"):
        return f"{provider}/{model}"
    return model


class _Pending(NamedTuple):
    """A step of the agent whose tool calls wait for their results: its parts from the first
    call on, and where each call's fold is among them."""

    parts: list[Part]
    calls: dict[Any, int]


class _Walk:
    """The branch read in order into parts (``parts``), with what the parts so far say of
    the next: the turn open, the model and thinking level in force, our handoff prompt just
    read, and the step waiting for its results."""

    def __init__(self, agent: Agent, parent: str | None) -> None:
        self._agent = agent
        self._parent = parent
        """The session this one was handed off or forked from, as its header names it."""
        self._role: str | None = None
        self._model: str | None = None
        self._thinking: str | None = None
        self._asked: tuple[str | None, str] | None = None
        """Our handoff prompt, just read (its time and text): the next answer is its document."""
        self._pending: _Pending | None = None
        self._opening = True
        """Only what an agent writes when it starts a session has been read so far."""

    def parts(self, branch: Iterable[Record]) -> Iterator[Part]:
        for record in branch:
            if record.entry is not None:  # every entry but a message is kept whole
                yield from self._entry(record.entry, record.stamp)
            elif record.has_message:  # else nothing the agent would show
                message = record.message()  # a string past 1 MiB: its head and tail
                if isinstance(message, dict):
                    yield from self._message(message, record.stamp)
        yield from self._settle()

    # --- messages --------------------------------------------------------------------------

    def _message(self, message: dict[str, Any], stamp: Any) -> Iterator[Part]:
        stamp = stamp if isinstance(stamp, str) else None
        opening, self._opening = self._opening, False
        role = message.get("role")
        if role == "toolResult":
            yield from self._result(message, stamp)
            return
        if role != ASSISTANT:  # an answer goes on with the step (parallel calls, each its own)
            yield from self._settle()
        if role == USER:
            yield from self._user(message, stamp)
        elif role == ASSISTANT:
            yield from self._assistant(message, stamp)
        elif role == "bashExecution":
            yield from self._turn(USER, stamp)
            yield _shell(message)
        elif opening and is_handoff_start_message(message):
            yield from self._handed_off_from(message.get("content"), stamp)
        elif role in ("compactionSummary", "branchSummary"):
            kind = COMPACTION if role == "compactionSummary" else BRANCH_SUMMARY
            yield from self._summary(kind, message.get("summary"), stamp)
        else:  # custom and extension messages, a system message, roles we do not know
            yield from self._turn(AGENT, stamp)
            yield _context(message)

    def _user(self, message: dict[str, Any], stamp: str | None) -> Iterator[Part]:
        content = message.get("content")
        text = text_of(content, "\n")
        if is_handoff_prompt(text):
            self._asked = (stamp, text)  # marked with the document that answers it
            return
        parts: list[Part] = [Text(text)] if text.strip() else []
        parts += _images(content)
        if parts:
            yield from self._turn(USER, stamp)
            yield from parts

    def _assistant(self, message: dict[str, Any], stamp: str | None) -> Iterator[Part]:
        content = message.get("content")
        if self._asked is not None:  # its model is the writer's, not the session's
            asked_at, prompt = self._asked
            self._asked = None
            yield from self._handed_off(asked_at, prompt, text_of(content, "\n"))
            return
        model = _model_name(message.get("provider"), message.get("model"))
        if model is not None:
            yield from self._change_model(model, stamp)
        parts: list[Part] = []
        calls: dict[Any, int] = {}
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        for block in blocks:
            part = _block(block) if isinstance(block, dict) else None
            if part is not None:
                if block.get("type") == "toolCall":
                    calls[_call_key(block.get("id"))] = len(parts)
                parts.append(part)
        parts += _ending(message)
        if not parts:
            return
        yield from self._turn(ASSISTANT, stamp)
        pending = self._pending
        if pending is not None and len(pending.parts) < MOST_PENDING:
            at = len(pending.parts)
            pending.parts.extend(parts)
            pending.calls.update((key, index + at) for key, index in calls.items())
            return
        yield from self._flush()  # a step of calls that never had results: held no longer
        if not calls:
            yield from parts
            return
        first = min(calls.values())
        yield from parts[:first]
        self._pending = _Pending(parts[first:], {k: i - first for k, i in calls.items()})

    def _result(self, message: dict[str, Any], stamp: str | None) -> Iterator[Part]:
        """A tool's result: into its call's fold, when the call waits for it; else a fold of
        its own."""
        name = js_string(message.get("toolName", ""))
        content = message.get("content")
        failed = bool(message.get("isError"))
        texts = text_of(content, "\n")
        if any(isinstance(b, dict) and b.get("type") == "image" for b in _list(content)):
            texts += "\n[image]" if texts else "[image]"
        section = Section("error" if failed else "result", texts, "text")
        pending = self._pending
        index = pending.calls.pop(_call_key(message.get("toolCallId")), None) if pending else None
        if pending is not None and index is not None:
            fold = pending.parts[index]
            assert isinstance(fold, Fold), "a call's place holds its fold"
            sections = (*fold.sections, section)
            pending.parts[index] = fold._replace(sections=sections, failed=fold.failed or failed)
            if not pending.calls:
                yield from self._flush()
            return
        yield from self._settle()
        yield from self._turn(self._role if self._role == ASSISTANT else TOOL, stamp)
        summary = f"result of {name}" if name else "a tool's result"
        yield Fold(TOOL_CALL, summary, (section,), failed)

    # --- entries ---------------------------------------------------------------------------

    def _entry(self, entry: Entry, stamp: Any) -> Iterator[Part]:
        stamp = stamp if isinstance(stamp, str) else None
        opening = self._opening
        self._opening = opening and opens_session(entry)
        kind = entry.get("type")
        if kind == "model_change":
            model = _changed_model(entry)
            if model is not None:
                yield from self._change_model(model, stamp)
        elif kind == "thinking_level_change":
            level = js_string(entry.get("thinkingLevel", "off"))
            before, self._thinking = self._thinking, level
            if before is not None and before != level:
                yield from self._mark(Mark(THINKING_LEVEL, f"Thinking level: {level}", stamp))
        elif kind == "compaction":
            yield from self._compaction(entry, stamp)
        elif kind == "branch_summary":
            yield from self._summary(BRANCH_SUMMARY, entry.get("summary"), stamp)
        elif kind == "custom_message":
            if opening and is_handoff_start(entry):
                yield from self._handed_off_from(entry.get("content"), stamp)
            else:
                yield from self._turn(AGENT, stamp)
                yield _context(entry)
        elif kind in ("session_info", "title_change"):
            name = entry.get("name" if kind == "session_info" else "title")
            if isinstance(name, str) and name.strip():
                yield from self._mark(Mark(TITLE, f"Named: {one_line(name, 200)}", stamp))
        elif kind == "thread_rolled_back":  # Codex's: the last turns taken back
            turns = js_string(entry.get("num_turns", "?"))
            yield from self._mark(Mark(ROLLBACK, f"Rolled back: {turns} turn(s)", stamp))
        elif kind == "context_edit":  # pi's: what an extension changed of what the model sees
            yield from self._turn(AGENT, stamp)
            yield _context_edit(entry)
        elif (prompt := self._agent.queued_prompt(entry)) is not None:
            yield from self._turn(USER, stamp)
            yield Text(prompt)
            yield Note("sent while the agent was at work")
        # Labels, extension state, usage, a rollout's turn settings, Claude Code's system
        # records and what we do not know: nothing a reader of the conversation needs.

    def _compaction(self, entry: Entry, stamp: str | None) -> Iterator[Part]:
        summary = entry.get("summary")
        if entry.get("method") == HANDOFF_TYPE:  # oh-my-pi's own handoff, in place
            document = Fold(DOCUMENT, "the handoff document", _prose(summary), open=True)
            title = "Handed off in place: the document replaces what came before"
            yield from self._mark(Mark(HANDED_OFF_IN_PLACE, title, stamp, (document,)))
            return
        tokens = entry.get("tokensBefore")
        before = f" ({tokens:,} tokens before)" if isinstance(tokens, int) else ""
        system = entry.get("systemMessage")  # pi's: the prompt in force when it compacted
        kept = (_context(system),) if isinstance(system, dict) else ()
        yield from self._summary(COMPACTION, summary, stamp, before, kept)

    def _summary(
        self, kind: str, text: Any, stamp: str | None, more: str = "", kept: tuple[Fold, ...] = ()
    ) -> Iterator[Part]:
        title = "Compaction" if kind == COMPACTION else "Summary of a branch left behind"
        folds = (Fold(SUMMARY, "its summary", _prose(text)),) if isinstance(text, str) else ()
        yield from self._mark(Mark(kind, title + more, stamp, folds + kept))

    def _handed_off_from(self, content: Any, stamp: str | None) -> Iterator[Part]:
        parent = self._parent
        title = f"Handed off from {parent}" if parent else "Started from a handoff document"
        document = unwrap_document(text_of(content, "\n"))
        fold = Fold(DOCUMENT, "the handoff document", _prose(document), open=True)
        yield from self._mark(Mark(HANDED_OFF_FROM, title, stamp, (fold,)))

    def _handed_off(self, asked_at: str | None, prompt: str, document: str) -> Iterator[Part]:
        folds = (
            Fold(DOCUMENT, "the handoff document", _prose(document.strip()), open=True),
            Fold(PROMPT, "the prompt that asked for it", _prose(prompt)),
        )
        title = "Handed off: a new session starts from this document"
        yield from self._mark(Mark(HANDED_OFF, title, asked_at, folds))

    # --- what the parts so far say of the next ---------------------------------------------

    def _unanswered(self) -> Iterator[Part]:
        """Our handoff prompt, when no answer came right after it: shown as it is, folded."""
        if self._asked is not None:
            stamp, prompt = self._asked
            self._asked = None
            if self._role != USER:
                self._role = USER
                yield Turn(USER, stamp)
            yield Fold(PROMPT, "a handoff prompt, not answered", _prose(prompt))

    def _change_model(self, model: str, stamp: str | None) -> Iterator[Part]:
        before, self._model = self._model, model
        if before is not None and before != model:
            yield from self._mark(Mark(MODEL, f"Model: {before} → {model}", stamp))

    def _turn(self, role: str, stamp: str | None) -> Iterator[Part]:
        """A turn of ``role`` begins, unless it goes on; what was waiting comes first."""
        if role == self._role and role == ASSISTANT:
            return  # the step waiting for its results goes on too
        yield from self._settle()
        if role != self._role:
            self._role = role
            yield Turn(role, stamp)

    def _mark(self, mark: Mark) -> Iterator[Part]:
        yield from self._settle()
        self._role = None  # whoever speaks next opens a turn again
        yield mark

    def _settle(self) -> Iterator[Part]:
        """What waited for what comes next: the step's calls, our prompt."""
        yield from self._flush()
        yield from self._unanswered()

    def _flush(self) -> Iterator[Part]:
        """The step that waited for its results, with those that came (a call without one is
        shown so: the agent was stopped, or the file ends there)."""
        pending, self._pending = self._pending, None
        if pending is not None:
            yield from pending.parts


# --- a message's parts ------------------------------------------------------------------------


def _block(block: dict[str, Any]) -> Part | None:
    """An assistant block's part; None for one with nothing to show."""
    kind = block.get("type")
    if kind == "thinking":
        thinking = block.get("thinking")
        if not isinstance(thinking, str) or not thinking.strip():
            return None
        return Fold(THINKING, "thinking", _prose(thinking))
    if kind == "redactedThinking":
        return Note("thinking, kept encrypted by the provider")
    if kind == "toolCall":
        name = js_string(block.get("name", "?"))
        return _call(name, block.get("arguments"))
    if kind == "image":
        return _image_note(block)
    text = block.get("text")
    if isinstance(text, str) and text.strip():  # text, and blocks of other kinds that hold it
        return Text(text)
    return None


def _call(name: str, arguments: Any) -> Fold:
    """A tool call: each argument as it reads best (a command as a command, a long or
    multi-line text as a block of its own, the short ones together, nested values as JSON)."""
    if not isinstance(arguments, dict):
        return Fold(TOOL_CALL, name, (Section("arguments", _json(arguments), "json"),))
    short: list[str] = []
    commands: list[Section] = []
    own: list[Section] = []
    for key, value in arguments.items():
        if key in _COMMANDS and isinstance(value, str):
            commands.append(Section(key, value, "sh"))
        elif isinstance(value, str) and ("\n" in value or len(value) > LONG_ARGUMENT):
            own.append(Section(key, value, "text"))
        elif isinstance(value, (dict, list)):
            own.append(Section(key, _json(value), "json"))
        else:
            short.append(f"{key}: {value if isinstance(value, str) else _json(value)}")
    sections = (Section("arguments", "\n".join(short), "text"),) if short else ()
    command = next((arguments[k] for k in _COMMANDS if isinstance(arguments.get(k), str)), None)
    excerpt = one_line(command, SUMMARY_CHARS) if command is not None else _excerpt(arguments)
    summary = f"{name}: {excerpt}" if excerpt else name
    return Fold(TOOL_CALL, summary, (*commands, *sections, *own))


def _excerpt(arguments: Any) -> str:
    """A call's arguments on one line: the first text among them, as its tool's reader would
    want it (a path, a pattern)."""
    if isinstance(arguments, dict):
        first = next((v for v in arguments.values() if isinstance(v, str) and v.strip()), "")
        return one_line(first, SUMMARY_CHARS)
    return ""


def _json(value: Any) -> str:
    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()
    except TypeError:  # what orjson cannot write (an integer past 64 bits, a lone surrogate)
        return dumps(value).decode(errors="replace")


def _ending(message: dict[str, Any]) -> list[Part]:
    """How a failed turn ended, in its own words."""
    stop = message.get("stopReason")
    if stop not in ("error", "aborted"):
        return []
    error = message.get("errorMessage")
    said = f": {one_line(error, 500)}" if isinstance(error, str) and error.strip() else ""
    return [Note(f"the turn stopped ({stop}){said}")]


def _images(content: Any) -> list[Part]:
    blocks = _list(content)
    return [_image_note(b) for b in blocks if isinstance(b, dict) and b.get("type") == "image"]


def _image_note(block: dict[str, Any]) -> Note:
    """An image, named, not shown: a transcript carries no one's pictures unasked."""
    mime = block.get("mimeType")
    data = block.get("data")
    size = f", {len(data) * 3 // 4:,} bytes" if isinstance(data, str) else ""
    return Note(f"an image ({mime if isinstance(mime, str) else 'unknown type'}{size})")


def _shell(message: dict[str, Any]) -> Fold:
    """A command the user ran themselves (pi's ``!command``)."""
    command = js_string(message.get("command", ""))
    code = message.get("exitCode")
    failed = code not in (0, None) or bool(message.get("cancelled"))
    status = " (cancelled)" if message.get("cancelled") else f" (exit {code})" if failed else ""
    hidden = " (not sent to the model)" if message.get("excludeFromContext") else ""
    output = message.get("output")
    sections = (
        Section("command", command, "sh"),
        Section("output", output if isinstance(output, str) else "", "text"),
    )
    return Fold(SHELL, f"$ {one_line(command, SUMMARY_CHARS)}{status}{hidden}", sections, failed)


def _context(message: dict[str, Any]) -> Fold:
    """A message the agent sent or kept that is no one's words: an extension's, one of its own
    context (Codex's environment, Claude Code's caveats), a system message."""
    role = message.get("role")
    custom = message.get("customType")
    what = js_string(custom) if custom is not None else js_string(role or message.get("type"))
    shown = message.get("display", True) is not False
    summary = f"{what} message" + ("" if shown else " (not shown by the agent)")
    sections = list(_prose(text_of(message.get("content"), "\n")))
    named = message.get("sections")  # pi's system message, in its parts
    if isinstance(named, dict):
        sections += [Section(str(k), v, None) for k, v in named.items() if isinstance(v, str)]
    return Fold(CONTEXT, summary, tuple(s for s in sections if s.text.strip()))


def _context_edit(entry: Entry) -> Fold:
    """An earlier message changed for the model (not in the file): replaced, or left out."""
    replacement = entry.get("replacement")
    if not isinstance(replacement, dict):
        return Fold(CONTEXT, "context edit: an earlier message left out of the model's view", ())
    content = text_of(replacement.get("content"), "\n")
    summary = "context edit: an earlier message, as the model sees it from here on"
    return Fold(CONTEXT, summary, _prose(content))


def _prose(text: Any) -> tuple[Section, ...]:
    return (Section("", text, None),) if isinstance(text, str) and text.strip() else ()


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _call_key(value: Any) -> Any:
    """A call's id as its result names it (compared as JSON: an id may be any value)."""
    return value if isinstance(value, str) else dumps(value)


# --- masking and readability ------------------------------------------------------------------


def _masked_batches(parts: Iterable[Part], redactor: Redactor) -> Iterator[Part]:
    """``parts`` masked a batch at a time: one call for many short messages costs a fraction
    of one call each."""
    batch: list[Part] = []
    size = 0
    for part in parts:
        batch.append(part)
        size += sum(map(len, _strings(part))) + 100  # a part's own weight, however short
        if size >= MASKED_AT_ONCE:
            yield from _masked(batch, redactor)
            batch, size = [], 0
    yield from _masked(batch, redactor)


def _masked(parts: list[Any], redactor: Redactor) -> list[Any]:
    """``parts`` with every string in them masked, in one call, in order."""
    texts = [text for part in parts for text in _strings(part)]
    masked = iter(redactor.value(texts))
    return [_rebuilt(part, masked) for part in parts]


def _strings(value: tuple[Any, ...]) -> Iterator[str]:
    for item in value:
        if isinstance(item, str):
            yield item
        elif isinstance(item, tuple):
            yield from _strings(item)


def _rebuilt(value: tuple[Any, ...], texts: Iterator[str]) -> Any:
    items = [
        next(texts) if isinstance(item, str) else _rebuilt(item, texts)
        if isinstance(item, tuple) else item
        for item in value
    ]  # fmt: skip
    return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
