"""Which agent's rules read a session: the one asked for, else the one whose folder holds it,
else the one its content points to (docs/session-format.md §6.9).

pi and oh-my-pi write the same format with a few entries, keys and header fields of their own.
What only oh-my-pi writes: its title slot, its header's title and workspace fields, its own
entry types, ``attribution`` on custom messages, ``model_change`` as one ``model`` string,
its compactions' extra fields. What only pi writes: ``session_info``, ``context_edit`` and
``usage`` entries, ``model_change`` as ``provider`` and ``modelId``, a compaction's
``systemMessage``, system messages, and the ``provider``, ``modelId``, ``thinkingLevel`` or
``branchedFrom`` of older headers. A file that holds both agents' marks (one agent opened what
the other wrote) belongs to the agent that wrote last: the later mark wins.
"""

from __future__ import annotations

from typing import NamedTuple

from handoff_cli.options import AGENTS, AUTO, OMP, PI
from handoff_cli.sessions.session import Entry, Record, Session

NAMES = {OMP: "oh-my-pi", PI: "pi"}

_OMP_HEADER_KEYS = frozenset(
    "title titleSource additionalDirectories previousSessionFiles providerPromptCacheKey".split()
)
_PI_HEADER_KEYS = frozenset({"provider", "modelId", "thinkingLevel", "branchedFrom"})
_OMP_TYPES = frozenset(
    "reset_boundary model_usage service_tier_change ttsr_injection credential_pin session_init "
    "mode_change title_change".split()
)
_PI_TYPES = frozenset({"session_info", "context_edit", "usage"})
_OMP_COMPACTION_KEYS = frozenset(
    "shortSummary tokensAfter method preserveData fromExtension "
    "providerReplayThroughEntryId".split()
)
_OMP_ROLES = frozenset({"developer", "pythonExecution", "fileMention"})
_PI_ROLES = frozenset({"system"})


class Choice(NamedTuple):
    """The agent whose rules read a session, and why."""

    agent: str
    reason: str
    """Why: ``--agent``, ``its folder``, ``its content``, or what the content left open."""
    note: str | None = None
    """What to tell the user on stderr: the content was not clear."""


def choose_agent(session: Session, asked: str = AUTO, folder: str | None = None) -> Choice:
    """The agent whose rules read ``session``: ``asked`` (``omp``, ``pi``) if it names one,
    else ``folder`` (the agent whose sessions folder holds the file), else the content's."""
    if asked in AGENTS:
        return Choice(asked, "--agent")
    if folder in AGENTS:
        return Choice(folder, "its folder")
    return _by_content(session)


def _by_content(session: Session) -> Choice:
    latest = _head_mark(session)
    marks = {latest} - {None}
    for record in session.records:
        mark = _mark(record)
        if mark is not None:
            latest = mark
            marks.add(mark)
    if latest is None:
        note = (
            f"note: {session.path}: nothing in it says which agent wrote it; "
            f"reading it by {NAMES[OMP]}'s rules (--agent to choose)"
        )
        return Choice(OMP, "by default: nothing in it names its agent", note)
    if len(marks) > 1:
        note = (
            f"note: {session.path}: both agents wrote to it; reading it by "
            f"{NAMES[latest]}'s rules, as it wrote last (--agent to choose)"
        )
        return Choice(latest, f"both agents wrote to it, {NAMES[latest]} last", note)
    return Choice(latest, "its content")


def _head_mark(session: Session) -> str | None:
    if session.title_slot is not None or not _OMP_HEADER_KEYS.isdisjoint(session.header):
        return OMP
    return PI if not _PI_HEADER_KEYS.isdisjoint(session.header) else None


def _mark(record: Record) -> str | None:
    """The agent that only ``record`` could have come from, if any."""
    facts = record.facts
    if facts is not None:
        role = facts.role
        return OMP if role in _OMP_ROLES else PI if role in _PI_ROLES else None
    kind, entry = record.type, record.entry
    if kind in _OMP_TYPES:
        return OMP
    if kind in _PI_TYPES:
        return PI
    if entry is None:
        return None
    if kind == "model_change":
        return _model_change_mark(entry)
    if kind == "custom_message":
        return OMP if "attribution" in entry else None
    if kind == "compaction":
        if "systemMessage" in entry:
            return PI
        return OMP if not _OMP_COMPACTION_KEYS.isdisjoint(entry) else None
    return None


def _model_change_mark(entry: Entry) -> str | None:
    if "model" in entry:
        return OMP
    return PI if "provider" in entry and "modelId" in entry else None
