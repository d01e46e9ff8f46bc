"""The tree of entries: which entry is the leaf, and the branch from the root to it.

Entries point at their parent by ``parentId``; the leaf is the last entry in file order unless
the user picks another. A ``parentId`` naming no entry ends the walk (docs/session-format.md §3).
"""

from __future__ import annotations

from handoff_cli.errors import SessionFileError, UsageError
from handoff_cli.sessions.session import Record, Session


def find_entry(session: Session, entry_id: str) -> Record:
    """The entry whose id is ``entry_id`` or, failing that, starts with it (if unique)."""
    exact = session.by_id.get(entry_id)
    if exact is not None:
        return exact
    matches = [r for r in session.by_id.values() if r.id.startswith(entry_id)] if entry_id else []
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise UsageError(f"no entry {entry_id!r} in {session.path}")
    names = ", ".join(sorted(r.id for r in matches)[:10])
    raise UsageError(f"entry id {entry_id!r} is ambiguous in {session.path}: {names}")


def leaf(session: Session, leaf_id: str | None = None) -> Record | None:
    """The chosen leaf: ``leaf_id`` if given, else the one its agent resumes (the last entry,
    unless the agent's loader chose another); None for an empty session."""
    if leaf_id is not None:
        return find_entry(session, leaf_id)
    if session.leaf_id is not None:
        return session.by_id[session.leaf_id]
    return session.records[-1] if session.records else None


def branch(session: Session, tip: Record | None) -> list[Record]:
    """The entries from the root down to ``tip``; a ``parentId`` cycle is a SessionFileError."""
    path: list[Record] = []
    by_id = session.by_id
    node = tip
    while node is not None:
        if len(path) > len(by_id):  # more entries than there are: one came again
            raise _cycle(session, path)
        path.append(node)
        parent = node.parent_id
        node = by_id.get(parent) if parent is not None else None
    path.reverse()
    return path


def _cycle(session: Session, path: list[Record]) -> SessionFileError:
    """The error for the ``parentId`` cycle that ``path`` (from the tip up) runs into. Found
    only now: a set of every id on the way would cost as much as the records."""
    first: dict[str, int] = {}
    for index, node in enumerate(path):
        if node.id in first:
            cycle = [r.id for r in path[first[node.id] : index]] + [node.id]
            return SessionFileError(
                session.path, "parentId cycle through entries " + " -> ".join(cycle), node.line
            )
        first[node.id] = index
    raise AssertionError("a path longer than the entries repeats one")


def forks(session: Session) -> dict[str, int]:
    """How many children each entry with more than one has (as ``children`` counts them),
    without a list for every entry."""
    once: set[str] = set()
    counts: dict[str, int] = {}
    for record in session.records:
        parent = record.parent_id
        if parent is None or parent not in session.by_id or session.by_id[record.id] is not record:
            continue
        if parent in once:
            counts[parent] = counts.get(parent, 1) + 1
        else:
            once.add(parent)
    return counts


def children(session: Session) -> dict[str | None, list[Record]]:
    """Each entry's children in file order, keyed by parent id; roots (and orphans) under None."""
    kids: dict[str | None, list[Record]] = {}
    for record in session.records:
        if session.by_id[record.id] is not record:
            continue  # shadowed by a later entry with the same id
        parent = record.parent_id if record.parent_id in session.by_id else None
        kids.setdefault(parent, []).append(record)
    return kids
