"""After a handoff, the agents go on from the new session: what makes them open it.

A handoff exists so that the agent's next turn starts from the document. The agents pick the
session they continue by rules of their own (docs/handoff.md §15), and the new session must win
by each of them once it is written:

- ``--continue`` opens the newest session of the directory by modification time, in oh-my-pi
  and in pi alike; the exchange recorded in the old session makes that one the newest, so the
  new one is dated after it (``date_after``).
- oh-my-pi first opens the session its terminal last had open, whatever the files' ages: a file
  per terminal under ``terminal-sessions`` holds the cwd, then the session file, then optional
  lines. A pointer that names the old session is moved to the new one (``move_pointers``).
"""

from __future__ import annotations

import os
from pathlib import Path

from handoff_cli.options import OMP, PI
from handoff_cli.sessions.files import new_entry_id, replace_file
from handoff_cli.sessions.session import Entry, Record

LATER_NS = 1_000_000
"""How much later than the old session the new one is dated: a millisecond, more than any
filesystem's timestamps tell apart and less than any person notices."""
POINTER_BYTES = 64 * 1024
"""A pointer holds two paths and a few words; a larger file there is none of oh-my-pi's."""


def date_after(new: Path, old: Path) -> None:
    """Give ``new`` a modification time after ``old``'s, if it has none already: the clock
    that stamps files is coarse (4 ms here), and two writes within one tick tie."""
    before = os.stat(old).st_mtime_ns
    status = os.stat(new)
    if status.st_mtime_ns <= before:
        os.utime(new, ns=(status.st_atime_ns, before + LATER_NS))


def move_pointers(folder: Path, old: Path, new: Path) -> int:
    """Point every oh-my-pi terminal that remembers ``old`` at ``new`` instead (written whole,
    atomically; the other lines kept). Returns how many were moved. A pointer names the file
    as the agent held it; it is matched by the file it resolves to, and rewritten in the same
    form (the same folder, the new name)."""
    try:
        pointers = [entry for entry in os.scandir(folder) if entry.is_file(follow_symlinks=False)]
    except OSError:
        return 0  # no terminal remembers anything (or oh-my-pi never ran here)
    target = old.resolve()
    moved = 0
    for pointer in pointers:
        try:
            with open(pointer.path, "rb") as file:
                data = file.read(POINTER_BYTES + 1)
            if len(data) > POINTER_BYTES:
                continue
            lines = data.decode().strip().split("\n")
            if len(lines) < 2 or Path(lines[1]).resolve() != target:
                continue
            lines[1] = str(Path(lines[1]).with_name(new.name))
            replace_file(Path(pointer.path), ("\n".join(lines) + "\n").encode())
            moved += 1
        except (OSError, UnicodeDecodeError, ValueError):
            continue  # not a pointer of the agent's, or gone meanwhile: not ours to mend
    return moved


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
    in its own shapes (omp: ``model`` as one string; pi: ``provider`` and ``modelId``)."""
    written: list[Entry] = []
    if model:
        written.append(_model_change(agent, model, None, taken, at))
    if thinking is not None:
        parent = written[-1]["id"] if written else None
        entry: Entry = {
            "type": "thinking_level_change",
            "id": _fresh(taken),
            "parentId": parent,
            "timestamp": at,
            "thinkingLevel": thinking.get("thinkingLevel"),
        }
        if agent == OMP:
            entry["configured"] = thinking.get("configured")
        written.append(entry)
    return written


def model_switch(agent: str, model: str, parent: str, taken: set[str], at: str) -> Entry:
    """The entry the agent writes when the user switches the session's model: after the
    recorded answer, it names the session's own model again."""
    return _model_change(agent, model, parent, taken, at, switched=True)


def _model_change(
    agent: str, model: str, parent: str | None, taken: set[str], at: str, switched: bool = False
) -> Entry:
    entry: Entry = {
        "type": "model_change",
        "id": _fresh(taken),
        "parentId": parent,
        "timestamp": at,
    }
    if agent == PI:
        provider, _, model_id = model.partition("/")
        entry |= {"provider": provider, "modelId": model_id}
    else:
        entry["model"] = model
        if switched:
            entry["role"] = "default"  # a switch names its role; a session's start does not
        entry["resolvedModelIsFallback"] = False
    return entry


def naming_entry(agent: str, title: str, parent: str, taken: set[str], at: str) -> Entry:
    """The entry that names a session, as the agent writes it when a title is set (omp's
    ``title_change``, beside its title slot; pi's ``session_info``)."""
    entry: Entry = {"type": "", "id": _fresh(taken), "parentId": parent, "timestamp": at}
    if agent == PI:
        return {**entry, "type": "session_info", "name": title}
    return {**entry, "type": "title_change", "title": title, "source": "auto"}


def loses_model(agent: str, branch: list[Record]) -> bool:
    """Whether an assistant answer appended to ``branch`` would become the session's model
    when the agent resumes it: pi takes the latest of a ``model_change`` and an answer;
    oh-my-pi takes an answer's only while no ``model_change`` of its own (one ``model``
    string, the default role) came before."""
    if agent == PI:
        return True
    return not any(
        record.type == "model_change"
        and record.entry is not None
        and isinstance(record.entry.get("model"), str)
        and record.entry.get("role") in (None, "default")
        for record in branch
    )


def _fresh(taken: set[str]) -> str:
    made = new_entry_id(taken)
    taken.add(made)
    return made
