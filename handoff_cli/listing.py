"""Finding sessions on disk: the catalog of the sessions folders, lineage, and ids to files.

Listing reads the head of each file (title slot, header, the first entries) and its tail (the
leaf), never the whole file, so that thousands of sessions list in a fraction of a second. The
agents nest sessions in one folder per working directory, so folders are searched recursively.
Lineage needs only the headers: a session's ``parentSession`` (a path, or an id) names its
parent; the children of a session are those that name it.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .document import HANDOFF_TYPE, is_handoff_prompt
from .errors import SessionFileError, UsageError, os_reason
from .jsonl import parse_line
from .places import Root, expand
from .session import numbered, open_regular, parent_session, read_head, session_title
from .text import text_of

HEAD_BYTES = 64 * 1024
"""How much of the start of each file ``list`` reads: the header and the first exchange."""
TAIL_BYTES = 64 * 1024
"""How much of the end: the leaf and the entry before it."""
COUNT_BLOCK = 1 << 23
CONTINUES = "↳ "


@dataclass(frozen=True, slots=True)
class SessionSummary:
    """What ``list`` knows of one session file, from its head and its tail."""

    id: str
    path: Path
    timestamp: str
    cwd: str
    title: str | None
    """Its own title (``session_title``); for a session handed off to, only one given to it
    (a continued session is better called by its parent's title than by its first request).
    ``Catalog.title`` is the one shown."""
    parent_session: str | None
    """The header's ``parentSession`` (or older ``branchedFrom``): a path or an id."""
    size: int
    modified: float = 0.0
    starts_from_handoff: bool = False
    """Its first entry is a handoff document: it was handed off to."""
    ends_with_handoff: bool = False
    """Its leaf is a recorded handoff: it was handed off, and nothing came after."""
    agent: str | None = None
    """The agent whose folder holds it, if it is under one."""
    first_request: str | None = None

    def entries(self) -> int:
        """Lines after the header: read in large blocks, only when asked for."""
        try:
            with open_regular(self.path, 0) as file:
                count = 0
                while block := file.read(COUNT_BLOCK):
                    count += block.count(b"\n")
        except (OSError, SessionFileError):
            return 0
        return max(0, count - _head_lines(self.path))


def _head_lines(path: Path) -> int:
    with open_regular(path) as file:
        first = file.readline()
        return 2 if first.startswith(b'{"type":"title"') else 1


@dataclass(frozen=True, slots=True)
class Skipped:
    """A file under a sessions folder that is not a readable session."""

    path: Path
    reason: str


def summarize(path: Path, agent: str | None = None) -> SessionSummary:
    """Read the head and the tail of ``path``; ``SessionFileError`` if it is not a session."""
    try:
        with open_regular(path) as file:
            status = os.fstat(file.fileno())
            head = file.read(HEAD_BYTES)
            tail = head
            if status.st_size > HEAD_BYTES:
                file.seek(max(HEAD_BYTES, status.st_size - TAIL_BYTES))
                tail = file.read(TAIL_BYTES)
    except OSError as error:
        raise SessionFileError(path, os_reason(error)) from None
    chunks = list(io.BytesIO(head))  # split at "\n" only, as loading does
    if status.st_size > len(head) and chunks:
        chunks.pop()  # the last line is cut off by the read
    lines = numbered(chunks)
    found = read_head(path, lines)
    name: str | None = None
    first_request: str | None = None
    first_entry: Any = None
    for _, _, raw in lines:
        try:
            value = parse_line(raw)
        except ValueError:
            continue
        if not isinstance(value, dict):
            continue
        if first_entry is None:
            first_entry = value
        if value.get("type") == "session_info" and isinstance(value.get("name"), str):
            name = value["name"]
        message = value.get("message")
        if first_request is None and isinstance(message, dict) and message.get("role") == "user":
            first_request = text_of(message.get("content")).strip() or None
    header = found.header
    starts_from_handoff = _is_handoff_start(first_entry)
    request = None if starts_from_handoff else first_request
    return SessionSummary(
        id=header["id"],
        path=path,
        timestamp=str(header.get("timestamp", "")),
        cwd=str(header.get("cwd", "")),
        title=session_title(found.title_slot, header, name, request),
        parent_session=parent_session(header),
        size=status.st_size,
        modified=status.st_mtime,
        starts_from_handoff=starts_from_handoff,
        ends_with_handoff=_ends_with_handoff(tail),
        agent=agent,
        first_request=session_title(None, {}, None, first_request),
    )


def _is_handoff_start(entry: Any) -> bool:
    return (
        isinstance(entry, dict)
        and entry.get("type") == "custom_message"
        and entry.get("customType") == HANDOFF_TYPE
    )


def _ends_with_handoff(tail: bytes) -> bool:
    """Whether the leaf is a recorded handoff: our exchange (the handoff prompt, then the
    answer), or oh-my-pi's own in-place handoff (a compaction of method ``handoff``)."""
    lines = [line for line in tail.split(b"\n")[1:] if line.strip()][-2:]
    try:
        entries = [parse_line(line) for line in lines]
    except ValueError:
        return False
    if not entries or not all(isinstance(e, dict) for e in entries):
        return False
    leaf = entries[-1]
    if leaf.get("type") == "compaction":
        return bool(leaf.get("method") == HANDOFF_TYPE)
    if len(entries) < 2 or leaf.get("parentId") != entries[0].get("id"):
        return False
    asked, answered = (e.get("message") for e in entries)
    if not (isinstance(asked, dict) and isinstance(answered, dict)):
        return False
    roles = (asked.get("role"), answered.get("role"))
    return roles == ("user", "assistant") and is_handoff_prompt(text_of(asked.get("content")))


def session_files(directory: Path) -> Iterator[Path]:
    """Every regular ``*.jsonl`` file under ``directory``, recursively, in a stable order. A
    FIFO or a device that happens to be named so is passed over: reading it could hang."""
    for root, dirs, files in os.walk(directory):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(".jsonl") and os.path.isfile(os.path.join(root, name)):
                yield Path(root, name)


@dataclass
class Catalog:
    """The sessions under some folders, newest first, with what links them."""

    sessions: list[SessionSummary]
    skipped: list[Skipped]
    roots: list[Root]
    _by_path: dict[str, SessionSummary] = field(default_factory=dict, repr=False)
    _by_id: dict[str, SessionSummary] = field(default_factory=dict, repr=False)
    _children: dict[str, list[SessionSummary]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        for summary in reversed(self.sessions):  # the newest of two with one id wins
            self._by_path[_key(summary.path)] = summary
            self._by_id[summary.id] = summary
        for summary in reversed(self.sessions):  # children oldest first
            parent = self.parent(summary)
            if parent is not None:
                self._children.setdefault(_key(parent.path), []).append(summary)

    def at(self, path: Path) -> SessionSummary | None:
        """The session of the file at ``path``, if it is in the catalog."""
        return self._by_path.get(_key(path))

    def parent(self, summary: SessionSummary) -> SessionSummary | None:
        """The session ``summary`` came from, if it is in the catalog."""
        named = summary.parent_session
        if not named:
            return None
        found = self._by_path.get(_key(Path(named))) or self._by_id.get(named)
        return found if found is not summary else None

    def children(self, summary: SessionSummary) -> list[SessionSummary]:
        """The sessions handed off or forked from ``summary``, oldest first."""
        return self._children.get(_key(summary.path), [])

    def handed_off(self, summary: SessionSummary) -> bool:
        """A child starts from a handoff document, or the exchange is recorded at its leaf."""
        return summary.ends_with_handoff or any(
            child.starts_from_handoff for child in self.children(summary)
        )

    def generation(self, summary: SessionSummary) -> int:
        """How many handoffs lie up the chain to ``summary``."""
        count, seen, node = 0, {_key(summary.path)}, summary
        while (parent := self.parent(node)) is not None and _key(parent.path) not in seen:
            count += node.starts_from_handoff
            seen.add(_key(parent.path))
            node = parent
        return count

    def title(self, summary: SessionSummary) -> str | None:
        """The title shown: its own, else, for a session handed off to, its parent's, marked
        as continued (``↳ Retry with backoff``); the file is never rewritten for it."""
        if summary.title or not summary.starts_from_handoff:
            return summary.title
        parent = self.parent(summary)
        inherited = self.title(parent) if parent is not None else None
        if inherited:
            return CONTINUES + inherited.removeprefix(CONTINUES)
        return summary.first_request

    def to_json(self, summary: SessionSummary) -> dict[str, Any]:
        parent = self.parent(summary)
        named = summary.parent_session
        return {
            "id": summary.id,
            "path": str(summary.path),
            "agent": summary.agent,
            "timestamp": summary.timestamp,
            "modified": summary.modified,
            "cwd": summary.cwd,
            "title": self.title(summary),
            "parent": None
            if named is None
            else {
                "id": parent.id if parent else (None if _is_path(named) else named),
                "path": str(parent.path) if parent else (named if _is_path(named) else None),
            },
            "children": [child.id for child in self.children(summary)],
            "handed_off": self.handed_off(summary),
            "generation": self.generation(summary),
            "entries": summary.entries(),
            "size": summary.size,
        }

    def find(self, spec: str, cwd: Path | None = None) -> SessionSummary:
        """The session whose id is ``spec``, or starts with it, uniquely; the sessions of the
        project in ``cwd`` are looked in first (as the agents' own ``--session`` does)."""
        exact = [s for s in self.sessions if s.id == spec]
        matches = exact or [s for s in self.sessions if s.id.startswith(spec)]
        if cwd is not None and len(matches) > 1:
            here = [s for s in matches if same_folder(s.cwd, cwd)]
            matches = here or matches
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise SessionFileError(
                spec, f"no such file, and no session with this id under {self.searched()}"
            )
        shown = ", ".join(f"{s.id} ({s.path})" for s in matches[:5])
        more = f" and {len(matches) - 5} more" if len(matches) > 5 else ""
        raise UsageError(f"session id prefix {spec!r} is ambiguous: {shown}{more}")

    def searched(self) -> str:
        """The folders searched, for messages."""
        if not self.roots:
            return "any folder (none of the agents' sessions folders exists here)"
        return ", ".join(str(root.path) for root in self.roots)


def same_folder(recorded: str, cwd: Path) -> bool:
    """Whether a header's ``cwd`` is the folder ``cwd``, both canonicalised."""
    return bool(recorded) and os.path.realpath(recorded) == os.path.realpath(cwd)


def _key(path: Path) -> str:
    return os.path.realpath(path)


def _is_path(named: str) -> bool:
    return os.sep in named or named.endswith(".jsonl")


def catalog(where: Path | Sequence[Root], missing_ok: bool = False) -> Catalog:
    """The sessions under a folder, or under each of ``roots``, each file once. A folder that
    does not exist is a usage error, or, with ``missing_ok``, passed over."""
    roots = [Root(where)] if isinstance(where, Path) else list(where)
    for root in roots:
        if not root.path.is_dir() and not (missing_ok and not root.path.exists()):
            reason = "no such folder" if not root.path.exists() else "not a folder"
            raise UsageError(f"{root.path}: {reason} (sessions folder)")
    sessions: list[SessionSummary] = []
    skipped: list[Skipped] = []
    seen: set[str] = set()
    for root in roots:
        if not root.path.is_dir():
            continue
        for path in session_files(root.path):
            key = _key(path)
            if key in seen:
                continue
            seen.add(key)
            try:
                sessions.append(summarize(path, root.agent))
            except SessionFileError as error:
                skipped.append(Skipped(path, error.reason))
    sessions.sort(key=lambda s: (s.timestamp, str(s.path)), reverse=True)
    return Catalog(sessions, skipped, roots)


def list_sessions(where: Path | Sequence[Root]) -> tuple[list[SessionSummary], list[Skipped]]:
    """The sessions under ``where``, newest first, and the files that were not sessions."""
    found = catalog(where)
    return found.sessions, found.skipped


def resolve_session(spec: str, where: Path | Sequence[Root], cwd: Path | None = None) -> Path:
    """The file ``spec`` names: a path (``~`` expanded), or a session id or a unique prefix of
    one, looked up under ``where`` (the project in ``cwd`` first)."""
    if not spec.strip():
        raise UsageError("SESSION is empty: give a session file, or a session id or prefix")
    path = expand(spec)
    roots = [Root(where)] if isinstance(where, Path) else list(where)
    if path.exists() or os.sep in spec or spec.endswith(".jsonl"):
        return path
    return catalog(roots, missing_ok=True).find(spec, cwd).path
