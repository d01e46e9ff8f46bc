"""pi (upstream, 1.6): every rule of its own (docs/session-format.md §6.8).

- Its sessions: ``~/.pi/agent/sessions``; ``PI_CODING_AGENT_DIR`` (``~`` expanded) replaces
  ``~/.pi/agent``; ``PI_CODING_AGENT_SESSION_DIR`` and the ``sessionDir`` of pi's settings
  (the project's ``.pi/settings.json``, when it names a folder inside the project, else the
  agent folder's ``settings.json``) name a flat folder of their own (§2).
- What only pi writes: ``session_info``, ``context_edit`` and ``usage`` entries,
  ``model_change`` as ``provider`` and ``modelId``, a compaction's ``systemMessage``, system
  messages, and the ``provider``, ``modelId``, ``thinkingLevel`` or ``branchedFrom`` of older
  headers.
- Its context keeps every turn as it was, sends a compaction's system message before its
  summary, and applies its ``context_edit`` entries, which leave an earlier entry out or
  replace its content (§6.8).
- What it writes in a session it starts: ``model_change`` as ``provider`` and ``modelId``, no
  omp key in the handoff message and no title slot (pi cannot open a file that starts with
  one), ``session_info`` for its name; an answer appended is the model it resumes on.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from handoff_cli.agents.base import Compaction, Message, refuse_in_place
from handoff_cli.agents.context import Change, Context, entry_time, kept_from, last_index
from handoff_cli.document import HANDOFF_TYPE
from handoff_cli.errors import SessionFileError
from handoff_cli.sessions.js import UNDEFINED, js_string, js_truthy
from handoff_cli.sessions.session import (
    Entry,
    MessageFacts,
    Record,
    Session,
    open_regular,
    with_facts,
)

NAME = "pi"
SETTINGS_BYTES = 1 << 20
"""The longest settings file read (pi's are a few hundred bytes): a project's is whoever wrote
the repository's, and a device linked there would never end."""

# The roles whose content a context_edit replaces; other messages it can only leave out.
EDITABLE_ROLES = frozenset({"user", "assistant", "toolResult", "custom"})
# pi gives a message of these roles that has no content an empty one (a system message "").
EMPTIED_ROLES = frozenset({"system", "user", "assistant", "toolResult"})

_HEADER_KEYS = frozenset({"provider", "modelId", "thinkingLevel", "branchedFrom"})
_TYPES = frozenset({"session_info", "context_edit", "usage"})
_TURN_ROLES = frozenset({"user", "bashExecution", "custom", "branchSummary", "compactionSummary"})
"""The roles of the messages that open a turn (``isTurnStartMessage``)."""


class Pi:
    """pi's rules, as the ``Agent`` protocol asks them."""

    name = NAME
    title = "pi"
    title_slot = False
    works_in_session_folder = True  # its --session works in the header's cwd
    roles = frozenset({"system"})

    def sessions_folders(self, env: Mapping[str, str], home: Path, cwd: Path) -> list[Path]:
        return sessions_folders(env, home, cwd)

    def project_folder(self, env: Mapping[str, str], home: Path, cwd: str) -> Path | None:
        folders = sessions_folders(env, home, Path(cwd))
        if len(folders) > 1:
            return folders[1]  # a flat folder its settings name holds every new session
        return folders[0] / f"--{separated(cwd.removeprefix('/'))}--"

    def wrote_header(self, session: Session) -> bool:
        return not _HEADER_KEYS.isdisjoint(session.header)

    def wrote(self, record: Record) -> bool:
        entry = record.entry
        if record.type in _TYPES:
            return True
        if entry is None:
            return False
        if record.type == "model_change":
            return "model" not in entry and "provider" in entry and "modelId" in entry
        return record.type == "compaction" and "systemMessage" in entry

    def context(self, branch: list[Record]) -> Context:
        return _context(branch)

    def compaction(self, session: Session, branch: list[Record]) -> Compaction:
        refuse_in_place(self.title, " (--agent omp to hand it off in place anyway)")

    def loaded(self, message: Message, facts: MessageFacts) -> Message:
        return _loaded(message, facts.role)

    def custom(self, entry: Entry) -> Message:
        return _custom(entry)

    def starts_turn(self, record: Record, previous: Record | None) -> bool:
        # ``isTurnStartEntry``: a custom message and a branch summary are sent as such roles.
        if record.type in ("custom_message", "branch_summary"):
            return True
        facts = record.facts
        return record.type == "message" and facts is not None and facts.role in _TURN_ROLES

    def model_change(self, entry: Entry, model: str, switched: bool) -> Entry:
        provider, _, model_id = model.partition("/")
        return entry | {"provider": provider, "modelId": model_id}

    def thinking_change(self, entry: Entry, thinking: Entry) -> Entry:
        return entry | {"thinkingLevel": thinking.get("thinkingLevel")}

    def naming(self, entry: Entry, title: str) -> Entry:
        return {**entry, "type": "session_info", "name": title}

    def handoff_message(self, content: str, entry_id: str, parent: str | None, at: str) -> Entry:
        return {
            "type": "custom_message",
            "customType": HANDOFF_TYPE,
            "content": content,
            "display": True,
            "id": entry_id,
            "parentId": parent,
            "timestamp": at,
        }

    def header_title(self, title: str) -> Entry:
        return {}  # pi names a session by its session_info entry only

    def loses_model(self, branch: list[Record]) -> bool:
        return True  # the latest of a model_change and an answer is the model

    def queued_prompt(self, entry: Entry) -> str | None:
        return None  # a prompt sent mid-turn is a message entry like any other

    def resume_command(self, session_id: str, path: Path, own_folder: bool) -> list[str]:
        return ["pi", "--session", str(path)]  # a path: it opens any file, wherever it is


AGENT = Pi()


# --- where its sessions are -------------------------------------------------------------------


def sessions_folders(env: Mapping[str, str], home: Path, cwd: Path) -> list[Path]:
    """pi's sessions folders: its agent folder's, and any flat one its settings name."""
    override = env.get("PI_CODING_AGENT_DIR")
    agent = _expand_from(override, home) if override else home / ".pi" / "agent"
    folders = [agent / "sessions"]
    named = env.get("PI_CODING_AGENT_SESSION_DIR")
    # The project's settings override the agent folder's, as pi merges them; but a repository's
    # file is whoever wrote it: it names no folder outside the project for us to read and write.
    project = _setting(cwd / ".pi" / "settings.json", "sessionDir")
    inside = cwd / _expand_from(project, home) if project else None
    if named:
        folders.append(_expand_from(named, home))
    elif inside is not None and _inside(inside, cwd):
        folders.append(inside)
    elif user := _setting(agent / "settings.json", "sessionDir"):
        folders.append(_expand_from(user, home))
    return folders


def _inside(path: Path, folder: Path) -> bool:
    """Whether ``path`` (its links followed) is ``folder`` or below it."""
    return Path(os.path.realpath(path)).is_relative_to(os.path.realpath(folder))


def separated(path: str) -> str:
    """A path's separators (and a drive's colon) as '-', as pi and oh-my-pi name a folder."""
    return re.sub(r"[/\\:]", "-", path)


def _expand_from(value: str, home: Path) -> Path:
    return home / value[2:] if value == "~" or value.startswith("~/") else Path(value)


def _setting(path: Path, key: str) -> str | None:
    """The text ``key`` holds in the settings file at ``path``; None when there is none, or no
    regular file of at most ``SETTINGS_BYTES`` (a FIFO would wait for a writer)."""
    try:
        with open_regular(path, buffering=0) as file:
            data = file.read(SETTINGS_BYTES + 1)
        value = json.loads(data).get(key) if len(data) <= SETTINGS_BYTES else None
    except (OSError, SessionFileError, ValueError, AttributeError):
        return None
    return value if isinstance(value, str) and value else None


# --- its context ------------------------------------------------------------------------------


def _context(branch: list[Record]) -> Context:
    thinking_level, model = _state(branch)
    compaction, window = _window(branch)
    window = with_facts(window)
    # An entry's latest edit within the window counts, wherever the entry it aims at is.
    edits: dict[str, Any] = {}
    for record in window:
        entry = record.entry
        if record.type == "context_edit" and entry is not None:
            target = entry.get("targetId")
            if isinstance(target, str):
                edits[target] = entry.get("replacement", UNDEFINED)
    head: tuple[Message, ...] = ()
    if compaction is not None and edits.get(compaction.id, UNDEFINED) is not None:
        head = _summary(compaction)
    records: list[Record] = []
    changes: dict[str, Change] = {}
    for record in window:
        replacement = edits.get(record.id, UNDEFINED)
        if replacement is None or not _emits(record):
            continue  # null: the edit leaves the entry out
        facts = record.facts
        role = facts.role if facts is not None else _ENTRY_ROLES.get(record.type)
        # An edit without a replacement makes pi fail on such a message; it is passed over.
        if replacement is not UNDEFINED and role in EDITABLE_ROLES:
            changes[record.id] = Change(content=_replacement(replacement, role))
        elif facts is not None and facts.no_content and role in EMPTIED_ROLES:
            changes[record.id] = Change()
        records.append(record)
    return Context(AGENT, head, records, changes, thinking_level, model)


def _state(branch: list[Record]) -> tuple[Any, str | None]:
    """The thinking level and the model in force at the end of the branch: the last
    ``thinking_level_change``'s level as it is, and the model of the last ``model_change`` or
    assistant message, whichever is later."""
    # From the end: only the last of each counts, and a message's facts are read only until
    # the model is found (``Record.facts``).
    thinking_level: Any = _UNSEEN
    model: str | None = None
    for record in reversed(branch):
        entry = record.entry
        if record.type == "thinking_level_change" and entry is not None:
            if thinking_level is _UNSEEN:
                thinking_level = entry.get("thinkingLevel", UNDEFINED)
        elif model is not None:
            pass
        elif record.type == "model_change" and entry is not None:
            provider, model_id = entry.get("provider", UNDEFINED), entry.get("modelId", UNDEFINED)
            model = f"{js_string(provider)}/{js_string(model_id)}"
        elif record.type == "message":
            facts = record.facts
            if facts is not None and facts.role == "assistant":
                model = f"{facts.provider}/{facts.model}"
        if thinking_level is not _UNSEEN and model is not None:
            break
    return "off" if thinking_level is _UNSEEN else thinking_level, model


_UNSEEN: Any = object()
"""No thinking level change seen yet."""


def _window(branch: list[Record]) -> tuple[Record | None, list[Record]]:
    """The last compaction, if any, and the entries after it: those it kept (but system
    messages, which its own system message replaces), then every later one."""
    compaction = last_index(branch, "compaction")
    if compaction < 0:
        return None, branch
    head = branch[compaction]
    first_kept = head.entry.get("firstKeptEntryId") if head.entry is not None else None
    kept = branch[kept_from(branch, compaction, first_kept) : compaction]
    kept = [r for r in kept if r.facts is None or r.facts.role != "system"]
    return head, kept + branch[compaction + 1 :]


def _summary(compaction: Record) -> tuple[Message, ...]:
    """The system message a compaction holds, if any, and its summary."""
    entry = compaction.entry if compaction.entry is not None else {}
    summary: Message = {"role": "compactionSummary"}
    for key in ("summary", "tokensBefore"):
        if key in entry:
            summary[key] = entry[key]
    summary["timestamp"] = entry_time(entry)
    system = entry.get("systemMessage")
    return (system, summary) if isinstance(system, dict) else (summary,)


def _emits(record: Record) -> bool:
    # An older compaction in the kept part adds nothing: only the newest one is summarised.
    if record.type == "message":
        return record.has_message
    entry = record.entry
    if record.type == "branch_summary":
        return entry is not None and js_truthy(entry.get("summary"))
    return record.type == "custom_message" and entry is not None


_ENTRY_ROLES = {"custom_message": "custom", "branch_summary": "branchSummary"}
"""The role of the message an entry that is not a ``message`` becomes."""


def _replacement(replacement: Any, role: str | None) -> Any:
    """The content a pi edit puts in place: a string becomes one text block for assistant
    messages and tool results; a replacement that is not an object has no content."""
    content = replacement.get("content", UNDEFINED) if isinstance(replacement, dict) else UNDEFINED
    if isinstance(content, str) and role in ("assistant", "toolResult"):
        return [{"type": "text", "text": content}]
    return content


def _loaded(message: Message, role: str | None) -> Message:
    """A message as pi holds it after loading: one without content given an empty one."""
    if message.get("content") is None and role in EMPTIED_ROLES:
        return {**message, "content": "" if role == "system" else []}
    return message


def _custom(entry: Entry) -> Message:
    """A custom message as pi makes one: the entry's fields as they are, absent ones left out."""
    custom: Message = {"role": "custom"}
    if "customType" in entry:
        custom["customType"] = entry["customType"]
    content = entry.get("content")
    custom["content"] = [] if content is None else content
    for key in ("display", "details"):
        if key in entry:
            custom[key] = entry[key]
    custom["timestamp"] = entry_time(entry)
    return custom
