"""Writing sessions, the last step of the data's way.

Every operation is built so that no reader ever sees half a line or half a file and no
session is ever damaged (docs/session-format.md §8):

- ``locked``: an existing session, open and under an exclusive advisory lock, for as long as
  a commit needs to check it and write to it. The lock is tried without blocking and waited
  for at most ``LOCK_WAIT_S`` (``lock_attempts``: the caller pauses between tries, and can be
  cancelled there), never without end. ``Locked.append`` adds whole lines in one write
  (a file left without its final newline by a crash is repaired by starting on a new line; a
  failed write takes back only its own bytes), ``Locked.replace`` rewrites an old-version file
  whole before the agents' own rule lets anything be appended to it.
- ``write_new_session``: the file is written whole to a temporary file in the target folder
  (a name that does not end in ``.jsonl``, so listings never show it), flushed to disk, then
  renamed into place. ``write_file`` writes any other file so (an export), from its pieces.

The helpers make ids, times and names in the agents' own formats.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import re
import stat
import time
from collections.abc import Container, Generator, Iterable, Iterator, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, NamedTuple, Protocol

from handoff_cli.errors import SessionChangedError, SessionLockedError
from handoff_cli.sessions.jsonl import Verbatim, dumps, dumps_line, js_numbers
from handoff_cli.sessions.session import CURRENT_VERSION, Entry, Session

TITLE_SLOT_BYTES = 256
TEMP_SUFFIX = ".tmp"
LOCK_WAIT_S = 10.0
"""How long a writer waits for a session's lock, held by another process, before it gives up
(``SessionLockedError``, exit 4). Ours hold it for a commit: milliseconds, a second or two to
rewrite a huge old-version file. Held longer, it is not ours (a backup tool's shared lock, a
process stopped while it held it), and a run in CI had rather fail in seconds, saying why, than
wait for the job's own timeout."""
LOCK_POLL_S = 0.05
"""The longest pause between two tries at the lock (the first ones come sooner)."""


def iso_timestamp(moment: datetime | None = None) -> str:
    """UTC time as the agents write it: ``2026-02-16T10:20:30.000Z``."""
    moment = (moment or datetime.now(timezone.utc)).astimezone(timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def millis(iso: str) -> int:
    """Unix milliseconds of a timestamp written by ``iso_timestamp``."""
    moment = datetime.strptime(iso, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc)
    return int(moment.timestamp() * 1000 + 0.5)


def uuid7() -> str:
    """A time-ordered UUID (version 7), as current agents use for session ids."""
    stamp = time.time_ns() // 1_000_000 & (1 << 48) - 1
    # os.urandom, as the secrets module draws, without its imports (OpenSSL: 4 MB and 4 ms)
    random_bits = int.from_bytes(os.urandom(10), "big")  # 80 bits, 74 used
    value = stamp << 80 | 0x7 << 76 | (random_bits >> 62 & 0xFFF) << 64
    value |= 0b10 << 62 | random_bits & (1 << 62) - 1
    text = f"{value:032x}"
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


def new_entry_id(taken: Container[str]) -> str:
    """Eight lowercase hex characters, unique among ``taken`` (on a clash, draw again)."""
    while True:
        candidate = os.urandom(4).hex()
        if candidate not in taken:
            return candidate


def session_file_name(timestamp: str, session_id: str) -> str:
    """``<header timestamp with ':' and '.' as '-'>_<session id>.jsonl``."""
    return f"{timestamp.replace(':', '-').replace('.', '-')}_{session_id}.jsonl"


class TitleSlot(NamedTuple):
    """omp's title slot as written: the title, when it was set, and whether it was named (a
    named one says its source, ``auto``: set without the user)."""

    title: str
    updated_at: str
    named: bool = False


def title_slot_line(updated_at: str, title: str = "", source: str | None = None) -> bytes:
    """omp's fixed-width title line, exactly 256 bytes with its newline; a long title is cut
    by whole characters until the line fits."""
    while True:
        slot: dict[str, Any] = {"type": "title", "v": 1, "title": title}
        if source is not None:
            slot["source"] = source
        slot |= {"updatedAt": updated_at, "pad": ""}
        free = TITLE_SLOT_BYTES - 1 - len(dumps(slot))
        if free >= 0:
            slot["pad"] = " " * free
            return dumps_line(slot)
        title = title[:-1]


def new_session_bytes(header: Entry, entries: Sequence[Entry], slot: TitleSlot | None) -> bytes:
    """A whole session file: the title slot if any, the header, then the entries."""
    head = b""
    if slot is not None:
        head = title_slot_line(slot.updated_at, slot.title, "auto" if slot.named else None)
    return head + dumps_line(header) + b"".join(dumps_line(e) for e in entries)


def migrated_lines(session: Session) -> Iterator[bytes | memoryview]:
    """An old-version session file at version 3, piece by piece, as the agents rewrite one
    before they append to it: ``version`` set in the header (added at its end when absent),
    every entry with its id and parent, lines that are not entries left out. A line already as
    the agents write it is passed on as it is, with its numbers as JavaScript spells them: a
    file of one huge message is never held twice."""
    if session.title_slot is not None:
        yield dumps_line(session.title_slot)
    yield dumps_line({**session.header, "version": CURRENT_VERSION})
    for entry in session.entries_json(session.records):
        yield js_numbers(entry.data) if isinstance(entry, Verbatim) else dumps(entry)
        yield b"\n"


def _write_all(fd: int, data: bytes | memoryview) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class Append(NamedTuple):
    """Entries to add to a session file, as whole lines (``Locked.append``)."""

    entries: list[Entry]


class Rewrite(NamedTuple):
    """A session file's new content, written whole in place of the old (``Locked.replace``)."""

    data: bytes


class Insert(NamedTuple):
    """Rows to add to a session kept in a database (``Held.write`` of its store), in one
    transaction."""

    session_id: str
    rows: list[Entry]


Change = Append | Rewrite | Insert
"""What a commit writes to a session that exists, in the way its agent keeps it."""


class Held(Protocol):
    """A session held against every other writer of ours and checked before it is written to:
    a file under its lock (``Locked``), or a session in a database inside a write
    transaction (its store's)."""

    path: Path

    def __enter__(self) -> Held: ...

    def __exit__(self, *exc_info: object) -> None: ...

    def unchanged(self, session: Session, digest: bytes, strictly: bool) -> None:
        """``SessionChangedError`` unless the session is as ``session`` was read (``digest``
        of its file's bytes, where it has a file); ``strictly``: nothing added either."""

    def added(self, session: Session) -> bytes:
        """What others appended to the session since it was read (bytes of its file)."""

    def write(self, change: Change) -> None:
        """``change`` written."""


Span = tuple[int, int]
"""Where bytes of ours landed in a file: [start, end)."""


class Locked:
    """A session file, open for appending and exclusively locked (see ``locked``).

    Every write of ours to an existing session goes through one: what is checked under the
    lock (the file is the one read, nobody handed it off meanwhile) still holds when the lines
    land, since every writer of ours takes the same lock first.
    """

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self.fd = fd

    def __enter__(self) -> Locked:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the file, which lets go of the lock."""
        os.close(self.fd)

    def status(self) -> os.stat_result:
        return os.fstat(self.fd)

    def read(self, offset: int, length: int) -> bytes:
        """``length`` bytes at ``offset`` (fewer past the end)."""
        return os.pread(self.fd, length, offset)

    def tail(self, length: int) -> bytes:
        """The last ``length`` bytes of the file (all of it if shorter)."""
        size = self.status().st_size
        return self.read(max(0, size - length), min(size, length))

    def append(self, entries: Sequence[Entry]) -> None:
        """Append ``entries``: whole lines, one write. If the write fails half way (a full
        disk), what was written of ours is taken back, and only that: the agent appends
        without our lock, and a line it wrote in the meantime stays whole."""
        data = b"".join(dumps_line(e) for e in entries)
        size = self.status().st_size
        if size and self.read(size - 1, 1) != b"\n":
            data = b"\n" + data  # an earlier writer died mid-line: never glue onto it
        ours: list[Span] = []
        try:
            _append_all(self.fd, data, ours)
            os.fsync(self.fd)
        except OSError:
            _take_back(self.path, self.fd, ours)
            raise

    def write(self, change: Change) -> None:
        """``change``, appended or written whole."""
        if isinstance(change, Append):
            self.append(change.entries)
        elif isinstance(change, Rewrite):
            self.replace([change.data])
        else:
            raise TypeError(f"{self.path} is a file, not a database: rows cannot be inserted")

    def added(self, session: Session) -> bytes:
        read = _read_as(session).st_size
        return self.read(read, self.status().st_size - read)

    def unchanged(self, session: Session, digest: bytes, strictly: bool) -> None:
        """The file under the lock is the one read: the same file at its name, no shorter,
        beginning with the very bytes read (``digest``); ``strictly``, nothing added either
        (and, for an old version rewritten, not even touched)."""
        read_as = _read_as(session)
        now = self.status()
        try:
            named = os.stat(self.path)  # an agent that rewrites its file renames a new one in
        except FileNotFoundError:
            raise SessionChangedError(self.path, "it is gone") from None
        if read_as.st_ino != now.st_ino or (named.st_dev, named.st_ino) != (now.st_dev, now.st_ino):
            raise SessionChangedError(self.path, "it was replaced")
        if now.st_size < read_as.st_size:
            raise SessionChangedError(self.path, "it was cut short")
        if strictly and now.st_size != read_as.st_size:
            raise SessionChangedError(self.path, "it was written to")
        if file_digest(self.fd, read_as.st_size) != digest:
            raise SessionChangedError(self.path, "its entries were rewritten")
        if session.version < CURRENT_VERSION and now.st_mtime_ns != read_as.st_mtime_ns:
            raise SessionChangedError(self.path, "it was written to")

    def replace(self, data: Iterable[bytes | memoryview]) -> None:
        """Replace the file whole with ``data``, its pieces in order (docs/session-format.md
        §7): a temporary file beside it with the file's own mode, synced, locked, then renamed
        over it, so that the lock moves with the name and a writer that opens the new file
        waits for ours."""
        mode = stat.S_IMODE(self.status().st_mode)
        temporary = self.path.parent / _temporary_name(self.path.name)
        fd = _write_temporary(temporary, data, mode)
        try:
            # Nobody else's but by its name, just made: waited for all the same, never for ever.
            for pause in _flock_tries(fd, self.path, time.monotonic() + LOCK_WAIT_S):
                time.sleep(pause)
            os.replace(temporary, self.path)
        except BaseException:
            os.close(fd)
            temporary.unlink(missing_ok=True)
            raise
        _fsync_folder(self.path.parent)
        os.close(self.fd)  # the old file, and its lock
        self.fd = fd


def _read_as(session: Session) -> os.stat_result:
    assert session.read_as is not None, "a session loaded from a file knows how it was read"
    return session.read_as


DIGEST_BLOCK = 1 << 20


def file_digest(fd: int, size: int) -> bytes:
    """A digest of the first ``size`` bytes of the file open at ``fd`` (none, ``b""``, if it
    is shorter), read a block at a time into one buffer: a rewrite that keeps every size
    (a word changed in an earlier line) tells only by its bytes. Some 0.14 s a 100 MB."""
    made = hashlib.blake2b(digest_size=16)
    buffer = memoryview(bytearray(DIGEST_BLOCK))
    at = 0
    while at < size:
        read = os.preadv(fd, [buffer[: min(size - at, DIGEST_BLOCK)]], at)
        if not read:
            return b""
        made.update(buffer[:read])
        at += read
    return made.digest()


def lock_attempts(path: Path) -> Generator[float | Locked, None, None]:
    """Tries at the lock of the session file now at ``path`` (resolved: not a symlink): while
    another process holds a lock on it, how long to pause before the next try (the caller
    pauses as it can, a thread sleeping, a coroutine awaiting, and may stop there: a cancel);
    then, last, the file open for appending and exclusively locked. ``SessionLockedError``
    once ``LOCK_WAIT_S`` has passed. If another writer replaced the file while we waited (an
    old version rewritten), the file that now has the name is locked instead."""
    deadline = time.monotonic() + LOCK_WAIT_S
    flags = os.O_RDWR | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    while True:
        fd = os.open(path, flags)
        try:
            yield from _flock_tries(fd, path, deadline)
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except BaseException:
            os.close(fd)
            raise
        if same:
            yield Locked(path, fd)  # the caller's from here: closed by it, not by us
            return
        os.close(fd)
        if time.monotonic() >= deadline:  # replaced again and again: no end either
            raise SessionLockedError(path, LOCK_WAIT_S)


def _flock_tries(fd: int, path: Path, deadline: float) -> Iterator[float]:
    """Lock the file open at ``fd`` exclusively, without blocking: after each try that finds
    another process's lock, the pause before the next (a millisecond, doubling up to
    ``LOCK_POLL_S``); ``SessionLockedError`` (naming ``path``) at ``deadline``."""
    pause = 0.001
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise SessionLockedError(path, LOCK_WAIT_S) from None
        yield pause
        pause = min(2 * pause, LOCK_POLL_S)


@contextlib.contextmanager
def locked(path: Path) -> Iterator[Locked]:
    """The session file now at ``path`` (resolved: not a symlink), open for appending and
    exclusively locked while the block runs (``lock_attempts``, waited for in this thread)."""
    with contextlib.closing(lock_attempts(path)) as attempts:
        while not isinstance(attempt := next(attempts), Locked):
            time.sleep(attempt)
    with attempt:
        yield attempt


def append_entries(path: Path, entries: Sequence[Entry]) -> None:
    """Append ``entries`` to the session at ``path`` (resolved), under the lock."""
    with locked(path) as held:
        held.append(entries)


def _append_all(fd: int, data: bytes, ours: list[Span]) -> None:
    """Append ``data`` to the file open with O_APPEND at ``fd``, noting where each piece went:
    each write lands at the end of the file as it is at that moment."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        end = os.lseek(fd, 0, os.SEEK_CUR)
        ours.append((end - written, end))
        view = view[written:]


def _take_back(path: Path, fd: int, ours: list[Span]) -> None:
    """Undo a failed append, latest piece first: a piece at the end of the file is cut off;
    one that another writer's lines follow is blanked in place (spaces, its newlines kept), as
    readers skip blank lines and read past leading spaces, so their lines stay whole."""
    end = os.fstat(fd).st_size
    for start, stop in reversed(ours):
        if stop >= end:
            os.ftruncate(fd, start)
            end = start
            continue
        # pwrite on an O_APPEND descriptor appends on Linux: blank through a second one.
        blank_fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            piece = os.pread(fd, stop - start, start)
            os.pwrite(blank_fd, bytes(b if b == 0x0A else 0x20 for b in piece), start)
        finally:
            os.close(blank_fd)


def write_new_session(folder: Path, name: str, data: bytes) -> Path:
    """Write ``data`` as ``folder/name`` atomically (temp file, fsync, rename), mode 0600.

    The temporary file's name starts with a dot and does not end in ``.jsonl``, so listings
    never show it; it carries the writer's process id, so that the next run can remove one a
    killed process left behind.
    """
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except FileExistsError:  # a file of that name: mkdir's own words would say "File exists"
        raise NotADirectoryError(errno.ENOTDIR, "not a folder", str(folder)) from None
    remove_stale_temporaries(folder)
    return _replace(folder, name, (data,), 0o600)


def replace_file(path: Path, data: bytes) -> None:
    """Replace the small file at ``path`` (not a session: no lock) whole, atomically, with
    its own mode."""
    _replace(path.parent, path.name, (data,), stat.S_IMODE(os.stat(path).st_mode))


def write_file(path: Path, pieces: Iterable[bytes], mode: int = 0o600) -> None:
    """Write the file at ``path`` (not a session) whole from ``pieces``, in order, as they
    come, atomically: it appears, or replaces what was there, only complete. A new file gets
    ``mode``, an existing one keeps its own; a temporary file of the same name that a killed
    writer left is removed first. If the pieces fail (an error, a signal), nothing is left."""
    with contextlib.suppress(FileNotFoundError):
        mode = stat.S_IMODE(os.stat(path).st_mode)
    remove_stale_temporaries(path.parent, path.name)
    _replace(path.parent, path.name, pieces, mode)


def _replace(folder: Path, name: str, data: Iterable[bytes | memoryview], mode: int) -> Path:
    """Write ``folder/name`` whole, atomically: temporary file, fsync, rename, fsync folder."""
    target = folder / name
    temporary = folder / _temporary_name(name)
    os.close(_write_temporary(temporary, data, mode))
    try:
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    _fsync_folder(folder)
    return target


def _write_temporary(temporary: Path, data: Iterable[bytes | memoryview], mode: int) -> int:
    """Create ``temporary`` with exactly ``data`` (its pieces, in order) and ``mode``, synced;
    its descriptor, open. On failure it is removed."""
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(temporary, flags, mode)
    try:
        os.fchmod(fd, mode)  # exactly this mode, whatever the umask
        for piece in data:
            _write_all(fd, piece)
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        temporary.unlink(missing_ok=True)
        raise
    return fd


def _temporary_name(name: str) -> str:
    return f".{name}.{os.getpid()}.{os.urandom(4).hex()}{TEMP_SUFFIX}"


# Exactly the names ``_temporary_name`` makes, of session files: nobody else's files.
_OUR_TEMPORARY = re.compile(r"\.[^/]+\.jsonl\.(\d{1,10})\.[0-9a-f]{8}" + re.escape(TEMP_SUFFIX))


def _temporaries_of(name: str) -> re.Pattern[str]:
    """Exactly the names ``_temporary_name`` makes for the file called ``name``."""
    return re.compile(re.escape(f".{name}.") + r"(\d{1,10})\.[0-9a-f]{8}" + re.escape(TEMP_SUFFIX))


def remove_stale_temporaries(folder: Path, name: str | None = None) -> None:
    """Remove the temporary files of writers that no longer run (killed mid-write): regular
    files of our own exact naming only (of session files, or with ``name`` of that file's),
    never a link or anything else that merely looks alike."""
    ours = _OUR_TEMPORARY if name is None else _temporaries_of(name)
    for path in folder.glob(f".*{TEMP_SUFFIX}"):
        match = ours.fullmatch(path.name)
        if match is None:
            continue
        pid = int(match.group(1))
        try:
            regular = stat.S_ISREG(path.lstat().st_mode)
        except OSError:
            continue
        if regular and pid != os.getpid() and not _running(pid):
            path.unlink(missing_ok=True)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    return True


def _fsync_folder(folder: Path) -> None:
    # Makes the rename itself durable; some filesystems cannot open folders, which is fine.
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
