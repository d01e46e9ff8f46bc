"""Finding sessions on disk: the catalog of the sessions folders, lineage, and ids to files.

Listing reads each file once, in large blocks, and parses only the lines it shows: the title
slot, the header, the first entry and the first user request from the head, the ``session_info``
lines (found by a byte search) and the last two, so that thousands of sessions list in a
fraction of a second. The
agents nest sessions in one folder per working directory, so folders are searched recursively.
Lineage needs only the headers: a session's ``parentSession`` (a path, or an id) names its
parent; the children of a session are those that name it.
"""

from __future__ import annotations

import io
import os
import re
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

from handoff_cli.agents import (
    FORMATS,
    STORES,
    format_head,
    format_of,
    omp,
    session_name,
    store_of,
    suffixes,
)
from handoff_cli.agents.base import Format
from handoff_cli.agents.places import Root, expand
from handoff_cli.catalog import listcache
from handoff_cli.catalog.listcache import DIGEST_BYTES, RACY_NS, Known, digest
from handoff_cli.document import is_handoff_start, opens_session
from handoff_cli.errors import SessionFileError, UsageError, os_reason
from handoff_cli.said import TitleRequest
from handoff_cli.sessions.jsonl import parse_line
from handoff_cli.sessions.session import (
    numbered,
    open_regular,
    parent_session,
    read_head,
    session_title,
)
from handoff_cli.text import text_of, visible

HEAD_BYTES = 64 * 1024
"""How much of the start of each file is read as lines: the header and the first exchange."""
TAIL_BYTES = 64 * 1024
"""How much of the end: the leaf and the entry before it."""
SCAN_BLOCK = 1 << 20
INFO_LINE_BYTES = 1 << 16
"""A ``session_info`` line longer than this is no name the agents wrote."""
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
    subagent: bool = False
    """It is the transcript of a subagent its parent session spawned."""
    agent: str | None = None
    """The agent whose folder holds it, if it is under one."""
    first_request: str | None = None
    entries: int = 0
    """Lines after the header."""
    key: str = ""
    """The file's canonical path: how two names of one file are known as one (worked out
    from ``path`` when not given)."""

    def __post_init__(self) -> None:
        if not self.key:
            object.__setattr__(self, "key", _key(self.path))


@dataclass(frozen=True, slots=True)
class Skipped:
    """A file under a sessions folder that is not a readable session."""

    path: Path
    reason: str


def summarize(path: Path, agent: str | None = None, key: str | None = None) -> SessionSummary:
    """Scan ``path`` once; ``SessionFileError`` if it is not a session. Only a few lines are
    parsed: those before the header, the first entry and the first user message in the head,
    the ``session_info`` lines (the latest name wins, as in ``show``) and the last two."""
    return _summarize(path, agent, key or _key(path), None, 0)[0]


def _summarize(
    path: Path, agent: str | None, key: str, known: Known | None, now_ns: int
) -> tuple[SessionSummary, Known | None]:
    """The summary of ``path``, and what the cache is to remember of it: ``known``, what it
    remembered, spares reading more than the head, the tail and what was appended since."""
    store = store_of(path)
    if store is not None:  # a session in a database: its rows read again (a query, no scan)
        return _own_summary(store, path, key, os.stat(path.parent), None), None
    try:
        with open_regular(path) as file:
            status = os.fstat(file.fileno())
            scan = _scan(file, status, known, now_ns)
    except OSError as error:
        raise SessionFileError(path, os_reason(error)) from None
    own = format_of(scan.head)
    if own is not None:
        return _own_summary(own, path, key, status, scan), scan.known
    chunks = list(io.BytesIO(scan.head))  # split at "\n" only, as loading does
    if status.st_size > len(scan.head) and chunks:
        chunks.pop()  # the last line is cut off by the read
    lines = numbered(chunks)
    found = read_head(path, lines)
    titled = TitleRequest()
    first_entry: Any = None  # the first after what a session's start writes
    for _, _, raw in lines:
        # A line can be a user message only if it holds "user": once the first entry is
        # known, the rest need no parse.
        wanted = first_entry is None or b'"user"' in raw
        if not wanted:
            continue
        try:
            value = parse_line(raw)
        except ValueError:
            continue
        if not isinstance(value, dict):
            continue
        if first_entry is None and not opens_session(value):
            first_entry = value
        message = value.get("message")
        if (
            isinstance(message, dict)
            and message.get("role") == "user"
            and titled.offer(text_of(message.get("content")))
        ):
            break
    first_request = titled.request
    header = found.header
    starts_from_handoff = is_handoff_start(first_entry)
    request = None if starts_from_handoff else first_request
    summary = SessionSummary(
        id=header["id"],
        path=path,
        timestamp=str(header.get("timestamp", "")),
        cwd=str(header.get("cwd", "")),
        title=session_title(found.title_slot, header, scan.name, request),
        parent_session=parent_session(header),
        size=status.st_size,
        modified=status.st_mtime,
        starts_from_handoff=starts_from_handoff,
        ends_with_handoff=ends_with_handoff(scan.tail),
        agent=agent,
        first_request=session_title(None, {}, None, first_request),
        entries=max(0, scan.known.newlines - (2 if found.title_slot is not None else 1)),
        key=key,
    )
    return summary, scan.known


def _own_summary(
    own: Format, path: Path, key: str, status: os.stat_result, scan: _Scan | None
) -> SessionSummary:
    """The summary of a session in an agent's own format, as its module glances at the head
    and the tail of its file (its lines counted by the scan, which the cache keeps); a
    session in a database (no scan) by its rows."""
    if scan is None:
        glance = own.glance(path, b"", b"", 0, 0)
    else:
        glance = own.glance(path, scan.head, scan.tail, status.st_size, scan.known.newlines)
    head = glance.opening
    return SessionSummary(
        id=head.header["id"],
        path=path,
        timestamp=str(head.header.get("timestamp", "")),
        cwd=str(head.header.get("cwd", "")),
        title=None if head.starts_from_handoff else head.first_request,
        parent_session=parent_session(head.header),
        size=status.st_size if glance.size is None else glance.size,
        modified=status.st_mtime,
        starts_from_handoff=head.starts_from_handoff,
        ends_with_handoff=glance.ends_with_handoff,
        subagent=head.header.get("subagent") is True,
        agent=own.NAME,  # its format is only that agent's, wherever the file lies
        first_request=head.first_request,
        entries=glance.entries,
        key=key,
    )


class _Scan(NamedTuple):
    head: bytes
    tail: bytes
    name: str | None
    """The latest ``session_info`` name, the last line's included."""
    known: Known


_INFO = b'"session_info"'


def _scan(file: BinaryIO, status: os.stat_result, known: Known | None, now_ns: int) -> _Scan:
    """The head and the tail of the file, its line count and its latest name: what ``known``
    says of the file up to the last line it saw ended, if the file is still that file, and a
    scan of the rest. Only the bytes up to ``status``'s size are read: a line being appended
    meanwhile is the next list's."""
    size, fd = status.st_size, file.fileno()
    head = format_head(fd, file.read(min(HEAD_BYTES, size)), size)
    tail = (
        head[-TAIL_BYTES:]
        if len(head) == size
        else os.pread(fd, TAIL_BYTES, max(0, size - TAIL_BYTES))
    )
    last = digest(tail[-DIGEST_BYTES:])
    same = known is not None and (known.device, known.inode) == (status.st_dev, status.st_ino)
    if not same or known is None:
        known = None
    elif (known.size, known.mtime_ns, known.ctime_ns, known.digest) == (
        size,
        status.st_mtime_ns,
        status.st_ctime_ns,
        last,
    ):
        known = known if known.quiet else None
    elif not (
        known.size < size
        and digest(os.pread(fd, DIGEST_BYTES, max(0, known.size - DIGEST_BYTES))) == known.digest
    ):
        known = None  # rewritten, or truncated: nothing of it is known any more
    start = 0 if known is None else known.settled
    rest = [head[start:]] if len(head) == size else _blocks(file, start, size)
    newlines, infos, last_newline = _count(rest, start)
    settled = last_newline + 1
    ended = _latest_name(file, [at for at in infos if at < settled])
    if ended is None and known is not None:
        ended = known.name
    name = _latest_name(file, [at for at in infos if at >= settled])
    remembered = Known(
        device=status.st_dev,
        inode=status.st_ino,
        size=size,
        mtime_ns=status.st_mtime_ns,
        ctime_ns=status.st_ctime_ns,
        digest=last,
        settled=settled,
        newlines=newlines + (0 if known is None else known.newlines),
        name=ended,
        quiet=now_ns - status.st_mtime_ns > RACY_NS,
    )
    return _Scan(head, tail, ended if name is None else name, remembered)


def _blocks(file: BinaryIO, start: int, size: int) -> Iterator[bytes]:
    """The bytes of ``file`` from ``start`` to ``size``, in large blocks."""
    file.seek(start)
    left = size - start
    while left > 0 and (block := file.read(min(SCAN_BLOCK, left))):
        left -= len(block)
        yield block


def _count(blocks: Iterable[bytes], start: int) -> tuple[int, list[int], int]:
    """The newlines in ``blocks`` (read from ``start``, where a line starts), where the lines
    that may name the session start, and where the last newline is (``start - 1`` if there is
    none); a mark split between two blocks is looked for across their edge."""
    newlines, infos = 0, []
    last_newline, base, previous = start - 1, start, b""
    reach = len(_INFO) - 1
    for block in blocks:
        newlines += block.count(b"\n")
        if previous and _INFO in previous[-reach:] + block[:reach]:
            edge = previous[-reach * 2 :]
            infos += _marks(edge + block[:reach], base - len(edge), last_newline)
        infos += _marks(block, base, last_newline)
        newline = block.rfind(b"\n")
        last_newline = base + newline if newline >= 0 else last_newline
        base += len(block)
        previous = block
    return newlines, sorted(set(infos)), last_newline


def _marks(data: bytes, base: int, last_newline: int) -> list[int]:
    """Where the lines holding ``_INFO`` in ``data`` (at ``base`` in the file) start; the last
    newline before ``data`` is at ``last_newline``."""
    found = []
    at = data.find(_INFO)
    while at >= 0:
        newline = data.rfind(b"\n", 0, at)
        found.append(base + newline + 1 if newline >= 0 else last_newline + 1)
        at = data.find(_INFO, at + len(_INFO))
    return found


def _latest_name(file: BinaryIO, starts: list[int]) -> str | None:
    """The name of the latest ``session_info`` entry among the lines at ``starts``."""
    for start in reversed(starts):
        file.seek(start)
        raw = file.readline(INFO_LINE_BYTES)
        try:
            value = parse_line(raw)
        except ValueError:
            continue
        if isinstance(value, dict) and value.get("type") == "session_info":
            name = value.get("name")
            if isinstance(name, str):
                return name
    return None


def ends_with_handoff(tail: bytes) -> bool:
    """Whether the leaf of a file in the pi family's format, whose last bytes are ``tail``, is
    a recorded handoff: our exchange (the handoff prompt, then the answer, then perhaps the
    session's model named again), or an in-place handoff (a compaction of oh-my-pi's of
    method ``handoff``)."""
    lines = [line for line in tail.rsplit(b"\n", 6)[1:] if line.strip()][-3:]
    try:
        entries = [parse_line(line) for line in lines]
    except ValueError:
        return False
    if not entries or not all(isinstance(e, dict) for e in entries):
        return False
    return omp.ends_with_exchange(entries)


def leaf_handed_off(path: Path, fd: int, size: int) -> bool:
    """Whether the session file open at ``fd`` (``size`` bytes: what was read, or all there
    is under the lock) ends with a recorded handoff, in whichever format it is."""
    tail = os.pread(fd, min(size, TAIL_BYTES), max(0, size - TAIL_BYTES))
    head = format_head(fd, os.pread(fd, min(size, HEAD_BYTES), 0), size)
    own = format_of(head)
    if own is None:
        return ends_with_handoff(tail)
    return own.glance(path, head, tail, size, 0).ends_with_handoff


def session_files(directory: Path, subagents: bool = False) -> Iterator[tuple[Path, str]]:
    """Every regular session file (named as ``agents.suffixes``) under ``directory``,
    recursively, in a stable order, with its canonical path (resolved once a folder, not once a
    file); subagents' transcripts (``Format.is_subagent``) only with ``subagents``. A FIFO or a
    device that happens to be named so is passed over: reading it could hang. Linked folders
    are not followed."""
    pending = [(str(directory), os.path.realpath(directory))]
    while pending:
        folder, real = pending.pop()
        try:
            with os.scandir(folder) as found:
                entries = sorted(found, key=lambda entry: entry.name)
        except OSError:
            continue
        folders = []
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    folders.append((entry.path, os.path.join(real, entry.name)))
                elif (
                    session_name(entry.name)
                    and entry.is_file()
                    and (subagents or not _subagent(Path(entry.path)))
                ):
                    linked = entry.is_symlink()
                    key = os.path.realpath(entry.path) if linked else os.path.join(real, entry.name)
                    held = _members(Path(entry.path))
                    if held is None:
                        yield Path(entry.path), key
                    else:  # a database: each session in it
                        yield from ((member, os.path.join(key, member.name)) for member in held)
            except OSError:
                continue
        pending += reversed(folders)


def _members(path: Path) -> list[Path] | None:
    """The sessions a store's file holds (``base.Store``); None for a file of one session."""
    for store in STORES.values():
        if store.is_session_name(path.name):
            try:
                with open_regular(path) as file:
                    if store.owns_head(file.read(store.OWNS_BYTES)):
                        return store.members(path)
            except (OSError, SessionFileError):
                return None
    return None


def _subagent(path: Path) -> bool:
    """Whether the file at ``path`` is where an agent keeps a subagent's transcript."""
    return any(own.is_subagent(path) for own in FORMATS.values())


@dataclass
class Catalog:
    """The sessions under some folders, newest first, with what links them.

    Lineage is a graph the headers draw, and nothing stops two sessions from naming each
    other: each loop is cut at its oldest session, which is walked as a root (its parent is
    still the one its header names). The walks (generations, continued titles, the tree) are
    iterative and remembered, so any depth of chain costs time linear in the sessions."""

    sessions: list[SessionSummary]
    skipped: list[Skipped]
    roots: list[Root]
    loops: list[tuple[SessionSummary, ...]] = field(default_factory=list, init=False)
    """Each loop once, from the session where it is cut; each names the next as its parent."""
    _by_path: dict[str, SessionSummary] = field(default_factory=dict, repr=False)
    _by_id: dict[str, SessionSummary] = field(default_factory=dict, repr=False)
    _parents: dict[str, SessionSummary | None] = field(default_factory=dict, repr=False)
    _children: dict[str, list[SessionSummary]] = field(default_factory=dict, repr=False)
    _loop_of: dict[str, int] = field(default_factory=dict, repr=False)
    """For each session whose chain of parents runs into a loop, that loop's index."""
    _cut: set[str] = field(default_factory=set, repr=False)
    _generations: dict[str, int] = field(default_factory=dict, repr=False)
    _titles: dict[str, str | None] = field(default_factory=dict, repr=False)
    _short: dict[str, str] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        for summary in reversed(self.sessions):  # the newest of two with one id wins
            self._by_path[summary.key] = summary
            self._by_id[summary.id] = summary
        for summary in reversed(self.sessions):  # children oldest first
            parent = self._named_parent(summary)
            self._parents[summary.key] = parent
            if parent is not None and parent is not summary:  # naming itself makes no child
                self._children.setdefault(parent.key, []).append(summary)
        self._find_loops()

    def _named_parent(self, summary: SessionSummary) -> SessionSummary | None:
        named = summary.parent_session
        if not named:
            return None
        return self._by_path.get(_key(named)) or self._by_id.get(named)

    def _find_loops(self) -> None:
        """Each session has at most one parent, so following parents from every session, and
        stopping at any session already followed, finds every loop once, in linear time."""
        walking = -1
        reached: dict[str, int | None] = {}  # session -> the loop its chain runs into, if any
        for start in self.sessions:
            walk: list[SessionSummary] = []  # up the chain, from ``start``
            node: SessionSummary | None = start
            while node is not None and node.key not in reached:
                reached[node.key] = walking
                walk.append(node)
                node = self._parents.get(node.key)
            loop = None if node is None else reached[node.key]
            if node is not None and loop == walking:  # this walk closed a loop, from ``node`` on
                members = walk[walk.index(node) :]
                oldest = min(range(len(members)), key=lambda i: by_age(members[i]))
                self.loops.append(tuple(members[oldest:] + members[:oldest]))
                self._cut.add(members[oldest].key)
                loop = len(self.loops) - 1
            for each in walk:
                reached[each.key] = loop
                if loop is not None:
                    self._loop_of[each.key] = loop

    def at(self, path: Path) -> SessionSummary | None:
        """The session of the file at ``path``, if it is in the catalog."""
        return self._by_path.get(_key(path))

    def parent(self, summary: SessionSummary) -> SessionSummary | None:
        """The session ``summary``'s header names as its parent, if it is in the catalog
        (perhaps ``summary`` itself, or one of its descendants: see ``loops``)."""
        return self._parents.get(summary.key)

    def children(self, summary: SessionSummary) -> list[SessionSummary]:
        """The sessions whose header names ``summary`` as their parent, oldest first."""
        return self._children.get(summary.key, [])

    def tree_parent(self, summary: SessionSummary) -> SessionSummary | None:
        """Its parent in the tree that lineage is walked as: none where a loop is cut."""
        return None if summary.key in self._cut else self._parents.get(summary.key)

    def tree_children(self, summary: SessionSummary) -> list[SessionSummary]:
        """Its children in that tree, oldest first."""
        return [child for child in self.children(summary) if child.key not in self._cut]

    def cuts_loop(self, summary: SessionSummary) -> bool:
        """Whether a loop is cut at ``summary``: a root of the tree though it has a parent."""
        return summary.key in self._cut

    def loop_of(self, summary: SessionSummary) -> tuple[SessionSummary, ...] | None:
        """The loop that ``summary`` is in, or that its chain of parents runs into."""
        index = self._loop_of.get(summary.key)
        return None if index is None else self.loops[index]

    def handed_off(self, summary: SessionSummary) -> bool:
        """A child starts from a handoff document, or the exchange is recorded at its leaf."""
        return summary.ends_with_handoff or any(
            child.starts_from_handoff for child in self.children(summary)
        )

    def generation(self, summary: SessionSummary) -> int:
        """How many handoffs lie up the chain to ``summary`` (up to where its loop is cut)."""
        known = self._generations
        chain, node = [], summary  # what is left to work out, nearest first
        while node.key not in known and (parent := self.tree_parent(node)) is not None:
            chain.append(node)
            node = parent
        count = known.get(node.key, 0)
        for node in reversed(chain):
            count += node.starts_from_handoff
            known[node.key] = count
        return count

    def title(self, summary: SessionSummary) -> str | None:
        """The title shown: its own, else, for a session handed off to, its parent's, marked
        as continued (``↳ Retry with backoff``); the file is never rewritten for it."""
        known = self._titles
        chain: list[SessionSummary] = []  # what inherits its title, nearest first
        node: SessionSummary | None = summary
        while node is not None and node.key not in known:
            if node.title or not node.starts_from_handoff:
                break
            chain.append(node)
            node = self.tree_parent(node)
        title = None if node is None else known.get(node.key, node.title)
        for node in reversed(chain):
            title = CONTINUES + title.removeprefix(CONTINUES) if title else node.first_request
            known[node.key] = title
        return title

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
                "subagent": summary.subagent,
            },
            "children": [child.id for child in self.children(summary)],
            "handed_off": self.handed_off(summary),
            "generation": self.generation(summary),
            "entries": summary.entries,
            "size": summary.size,
        }

    def short_ids(self) -> dict[str, str]:
        """Each session's id as ``list`` shows it: its shortest prefix no other session's id
        starts with (``unique_prefixes``), worked out once."""
        if self._short is None:
            self._short = unique_prefixes([s.id for s in self.sessions])
        return self._short

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
        raise UsageError(self._ambiguous(spec, matches))

    def _ambiguous(self, spec: str, matches: list[SessionSummary]) -> str:
        """The candidates of an ambiguous prefix, newest first, one a line: the shortest id
        that tells each apart, its date and its title, at most ``SHOWN_CANDIDATES``."""
        short = unique_prefixes([s.id for s in matches])
        lines = [
            f"  {visible(short[s.id])}  {s.timestamp[:16].replace('T', ' ')}  "
            f"{visible(self.title(s) or '(untitled)')[:60]}"
            for s in matches[:SHOWN_CANDIDATES]
        ]
        if len(matches) > SHOWN_CANDIDATES:
            lines.append(f"  and {len(matches) - SHOWN_CANDIDATES} more")
        head = f"session id prefix {spec!r} is ambiguous: {len(matches)} sessions start with it"
        return "\n".join([head, *lines])

    def searched(self) -> str:
        """The folders searched, for messages."""
        if not self.roots:
            return "any folder (none of the agents' sessions folders exists here)"
        return ", ".join(str(root.path) for root in self.roots)


def same_folder(recorded: str, cwd: Path) -> bool:
    """Whether a header's ``cwd`` is the folder ``cwd``, both canonicalised."""
    return bool(recorded) and os.path.realpath(recorded) == os.path.realpath(cwd)


@lru_cache(maxsize=4096)
def _key(path: Path | str) -> str:
    return os.path.realpath(path)


def by_age(summary: SessionSummary) -> tuple[str, str]:
    """The order of ``list --tree`` and of a loop's sessions: oldest first."""
    return summary.timestamp, str(summary.path)


def loop_warning(loop: Sequence[SessionSummary]) -> str:
    """The line that reports a loop: its sessions, each naming the next as its parent, their
    ids safe to print."""
    ids = [visible(summary.id) for summary in loop]
    if len(ids) == 1:
        return f"warning: session {ids[0]} names itself as its parent; taken as a root"
    return (
        f"warning: sessions name each other as parents in a loop: {' → '.join([*ids, ids[0]])}; "
        f"{ids[0]}, the oldest, is taken as its root"
    )


def _is_path(named: str) -> bool:
    return os.sep in named or named.endswith(suffixes())


SHOWN_CANDIDATES = 10
"""The most sessions an ambiguous prefix's error lists."""
SHORTEST_ID = 8
"""The fewest characters of an id ``list`` shows: the first block of a UUID."""


def unique_prefixes(ids: Sequence[str], shortest: int = SHORTEST_ID) -> dict[str, str]:
    """Each id's shortest prefix (at least ``shortest`` characters, never ending at a ``-``)
    that no other id starts with: the first 8 hex digits of a UUIDv7 change only every ~65 s,
    so sessions made within a minute share them. An id another one starts with (or equals)
    has no such prefix: it is given whole."""
    ordered = sorted(set(ids))
    found: dict[str, str] = {}
    for index, this in enumerate(ordered):
        near = ordered[max(0, index - 1) : index] + ordered[index + 1 : index + 2]
        length = max([shortest, *(_common(this, other) + 1 for other in near)])
        while length < len(this) and this[length - 1] == "-":
            length += 1
        found[this] = this[:length]
    return found


def _common(one: str, other: str) -> int:
    """How many leading characters ``one`` and ``other`` share."""
    pairs = zip(one, other, strict=False)  # up to the shorter one's end
    return next((i for i, (a, b) in enumerate(pairs) if a != b), min(len(one), len(other)))


def catalog(
    where: Path | Sequence[Root],
    missing_ok: bool = False,
    cache: Path | None = None,
    subagents: bool = False,
) -> Catalog:
    """The sessions under a folder, or under each of ``roots``, each file once (and with
    ``subagents``, the transcripts of Claude Code's subagents, each its session's child). A
    folder that does not exist is a usage error, or, with ``missing_ok``, passed over. With
    ``cache`` (a folder), what each file's whole holds is remembered there (``listcache``)."""
    roots = [Root(where)] if isinstance(where, Path) else list(where)
    for root in roots:
        if not root.path.is_dir() and not (missing_ok and not root.path.exists()):
            reason = "no such folder" if not root.path.exists() else "not a folder"
            raise UsageError(f"{root.path}: {reason} (sessions folder)")
    sessions: list[SessionSummary] = []
    skipped: list[Skipped] = []
    seen: set[str] = set()
    old = listcache.Cached() if cache is None else listcache.load(cache)
    remembered: dict[str, Known] = {}
    now_ns = time.time_ns()  # before any file is looked at: see ``listcache.RACY_NS``
    for root in roots:
        if not root.path.is_dir():
            continue
        for path, key in session_files(root.path, subagents):
            if key in seen:
                continue
            seen.add(key)
            try:
                summary, known = _summarize(path, root.agent, key, old.get(key), now_ns)
                if known is not None:
                    remembered[key] = known
            except SessionFileError as error:
                skipped.append(Skipped(path, error.reason))
                continue
            sessions.append(summary)
    if cache is not None:
        searched = [_key(root.path) for root in roots if root.path.is_dir()]
        listcache.save(cache, remembered, old, searched)
    sessions.sort(key=by_age, reverse=True)
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
    if path.exists() or os.sep in spec or spec.endswith(suffixes()):
        return path
    return catalog(roots, missing_ok=True).find(spec, cwd).path


# A session file's name as the agents make it: its header's timestamp, then its id.
_TIMED_NAME = re.compile(r"([0-9]{4}(?:-[0-9]{2}){2}T[0-9]{2}(?:-[0-9]{2}){2}-[0-9]{3}Z)_.+\.jsonl")


def handoff_children(folder: Path, parent: Path, parent_id: str, since_ms: int) -> list[Path]:
    """The sessions in ``folder`` (not below it) that start from a handoff of the session at
    ``parent`` (its path, resolved, or its id) and were made at ``since_ms`` or later: a handoff
    of it that is newer than its last entry. Only files that can be that new are opened, and
    only their first lines are read."""
    since = iso_name_stamp(since_ms)
    found = []
    try:
        names = [entry for entry in os.scandir(folder) if session_name(entry.name)]
    except OSError:
        return []
    for entry in names:
        timed = _TIMED_NAME.fullmatch(entry.name)
        try:
            if timed is not None:
                if timed.group(1) < since:
                    continue
            elif entry.stat().st_mtime * 1000 < since_ms:
                continue
            head = _handoff_head(Path(entry.path))
        except (OSError, SessionFileError):
            continue
        if head is not None and (head == parent_id or _key(head) == _key(parent)):
            found.append(Path(entry.path))
    return found


def iso_name_stamp(ms: int) -> str:
    """Unix milliseconds as a session file's name spells its time."""
    moment = datetime.fromtimestamp(max(0, ms) / 1000, timezone.utc)
    return moment.strftime("%Y-%m-%dT%H-%M-%S-") + f"{moment.microsecond // 1000:03d}Z"


def _handoff_head(path: Path) -> str | None:
    """The parent a session names, if it starts from a handoff document; else None: in a
    pi-family header, or our lineage line in a file of an agent's own format."""
    with open_regular(path) as file:
        size = os.fstat(file.fileno()).st_size
        head = format_head(file.fileno(), file.read(HEAD_BYTES), size)
    own = format_of(head)
    if own is not None:
        opening = own.glance(path, head, head[-TAIL_BYTES:], size, 0).opening
        return parent_session(opening.header) if opening.starts_from_handoff else None
    lines = numbered(io.BytesIO(head))
    found = read_head(path, lines)
    for _, _, raw in lines:
        try:
            first = parse_line(raw)
        except ValueError:
            continue
        if not opens_session(first):
            return parent_session(found.header) if is_handoff_start(first) else None
    return None
