"""Which agent's rules read a session: the one asked for, else the one whose folder holds it,
else the one its content points to (docs/session-format.md §6.9).

The agents write the same format with a few entries, keys and header fields of their own
(each agent's module says which: ``Agent.wrote_header``, ``Agent.wrote``). A file that holds
several agents' marks (one agent opened what another wrote) belongs to the agent that wrote
last: the later mark wins.
"""

from __future__ import annotations

from typing import NamedTuple

from handoff_cli.agents import DEFAULT, FORMATS, REGISTERED
from handoff_cli.errors import UsageError
from handoff_cli.options import AUTO
from handoff_cli.sessions.session import Record, Session


class Choice(NamedTuple):
    """The agent whose rules read a session, and why."""

    agent: str
    reason: str
    """Why: ``--agent``, ``its folder``, ``its content``, or what the content left open."""
    note: str | None = None
    """What to tell the user on stderr: the content was not clear."""


def choose_agent(session: Session, asked: str = AUTO, folder: str | None = None) -> Choice:
    """The agent whose rules read ``session``: ``asked`` if it names one, else ``folder`` (the
    agent whose sessions folder holds the file), else the content's. A file in the format of
    one agent only (Claude Code's, Codex's) is that agent's: asked for another, a ``UsageError``."""
    own = session.agent
    if own is not None or asked in FORMATS or folder in FORMATS:
        return _one_format(session, asked, folder)
    if asked in REGISTERED:
        return Choice(asked, "--agent")
    if folder in REGISTERED:
        return Choice(folder, "its folder")
    return _by_content(session)


def _one_format(session: Session, asked: str, folder: str | None) -> Choice:
    """The agent of a format only it writes, or, for a file in the pi family's format, the
    agent its content points to (wherever it lies)."""
    own = session.agent
    if asked in REGISTERED and asked != own:
        title = REGISTERED[own].title if own is not None else "the pi family"
        raise UsageError(
            f"{session.path} is a session in {title}'s format: --agent {asked} cannot read it"
        )
    if own is None:
        return _by_content(session)
    if asked == own:
        return Choice(own, "--agent")
    return Choice(own, "its folder" if folder == own else "its content")


def _by_content(session: Session) -> Choice:
    latest = next((a.name for a in REGISTERED.values() if a.wrote_header(session)), None)
    marks = {latest} - {None}
    by_role = {role: agent.name for agent in REGISTERED.values() for role in agent.roles}
    for record, role in zip(session.records, session.roles(), strict=True):
        mark = _mark(record) if role is None else by_role.get(role)
        if mark is not None:
            latest = mark
            marks.add(mark)
    if latest is None:
        note = (
            f"note: {session.path}: nothing in it says which agent wrote it; "
            f"reading it by {REGISTERED[DEFAULT].title}'s rules (--agent to choose)"
        )
        return Choice(DEFAULT, "by default: nothing in it names its agent", note)
    title = REGISTERED[latest].title
    if len(marks) > 1:
        note = (
            f"note: {session.path}: both agents wrote to it; reading it by "
            f"{title}'s rules, as it wrote last (--agent to choose)"
        )
        return Choice(latest, f"both agents wrote to it, {title} last", note)
    return Choice(latest, "its content")


def _mark(record: Record) -> str | None:
    """The agent that only ``record``, an entry other than a message, could have come from."""
    return next((agent.name for agent in REGISTERED.values() if agent.wrote(record)), None)
