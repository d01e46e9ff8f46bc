"""After a handoff, the agents go on from the new session: what makes them open it.

A handoff exists so that the agent's next turn starts from the document. The agents pick the
session they continue by rules of their own (docs/handoff.md §15), and the new session must win
by each of them once it is written:

- ``--continue`` opens the newest session of the directory by modification time, in oh-my-pi
  and in pi alike; the exchange recorded in the old session makes that one the newest, so the
  new one is dated after it (``date_after``).
- oh-my-pi first opens the session its terminal last had open, whatever the files' ages: a file
  per terminal under ``terminal-sessions`` holds the cwd, then the session file, then optional
  lines. A pointer that names the old session is moved to the new one (``omp.move_pointers``).

What the new session starts with is written in the agent's own shapes (``Agent.model_change``
and the like); the ids, parents and times are made here.
"""

from __future__ import annotations

import os
from pathlib import Path

from handoff_cli.agents import get
from handoff_cli.sessions.files import new_entry_id
from handoff_cli.sessions.session import Entry, Record

LATER_NS = 1_000_000
"""How much later than the old session the new one is dated: a millisecond, more than any
filesystem's timestamps tell apart and less than any person notices."""


def date_after(new: Path, old: Path) -> None:
    """Give ``new`` a modification time after ``old``'s, if it has none already: the clock
    that stamps files is coarse (4 ms here), and two writes within one tick tie."""
    before = os.stat(old).st_mtime_ns
    status = os.stat(new)
    if status.st_mtime_ns <= before:
        os.utime(new, ns=(status.st_atime_ns, before + LATER_NS))


# --- what the new session starts with, and what the old one is left naming ---------------------

CONTINUED = "↳ "
"""How a session handed off to is titled: its parent's title, continued (as ``list`` shows it)."""


def continued_title(title: str | None) -> str | None:
    """The new session's title: the old one's, marked continued once (a chain of handoffs
    keeps one mark)."""
    if not title:
        return None
    base = title.removeprefix(CONTINUED).strip()
    return CONTINUED + base if base else None


def last_thinking(branch: list[Record]) -> Entry | None:
    """The branch's last ``thinking_level_change``: the level the agent resumes it at (none:
    the agent's own default)."""
    changes = (r.entry for r in reversed(branch) if r.type == "thinking_level_change")
    return next((entry for entry in changes if entry is not None), None)


def starting_entries(
    agent: str, model: str | None, thinking: Entry | None, taken: set[str], at: str
) -> list[Entry]:
    """What the agent writes first in a session it starts: its model, then its thinking level,
    in its own shapes."""
    rules = get(agent)
    written: list[Entry] = []
    if model:
        written.append(rules.model_change(_entry("model_change", None, taken, at), model, False))
    if thinking is not None:
        parent = written[-1]["id"] if written else None
        stamp = _entry("thinking_level_change", parent, taken, at)
        written.append(rules.thinking_change(stamp, thinking))
    return written


def model_switch(agent: str, model: str, parent: str, taken: set[str], at: str) -> Entry:
    """The entry the agent writes when the user switches the session's model: after the
    recorded answer, it names the session's own model again."""
    return get(agent).model_change(_entry("model_change", parent, taken, at), model, True)


def naming_entry(agent: str, title: str, parent: str, taken: set[str], at: str) -> Entry:
    """The entry that names a session, as the agent writes it when a title is set."""
    return get(agent).naming(_entry("", parent, taken, at), title)


def loses_model(agent: str, branch: list[Record]) -> bool:
    """Whether an assistant answer appended to ``branch`` would become the session's model
    when the agent resumes it."""
    return get(agent).loses_model(branch)


def _entry(kind: str, parent: str | None, taken: set[str], at: str) -> Entry:
    """An entry's first keys, as every agent writes them: its type, a fresh id, its parent and
    its time."""
    made = new_entry_id(taken)
    taken.add(made)
    return {"type": kind, "id": made, "parentId": parent, "timestamp": at}
