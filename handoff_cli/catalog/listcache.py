"""What ``list`` needs from the whole of a session file, remembered between runs.

A session's line count and its latest ``session_info`` name can be anywhere in the file; the
rest of a listing comes from its head and its tail. This cache keeps those two, and where the
file was scanned up to, so that the next ``list`` reads only what the agents appended since.
It is a pure accelerator: an entry is used only while the file is the one it describes (the
same device, inode, size, mtime and ctime, and the same last block), else the file is scanned
again; a cache that cannot be read, parsed or written is passed over, and ``list`` is as it
would be without one. It is written as a new session file is (``files.write_new_session``:
a temporary file, 0600, renamed over the old), so two lists at once leave one of their caches,
never a mixture.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import NamedTuple

import orjson

from handoff_cli import __version__
from handoff_cli.sessions.files import write_new_session

FILE_NAME = "list.json"
FORMAT = f"1:{__version__}"
"""A cache from another format or release is rebuilt rather than trusted."""
DIGEST_BYTES = 4096
RACY_NS = 2_000_000_000
"""A file changed this recently before the scan may change again within its mtime's tick
(coarse on some filesystems) without its size or mtime showing it: it is scanned again."""


class Known(NamedTuple):
    """One file as it was scanned."""

    device: int
    inode: int
    size: int
    mtime_ns: int
    ctime_ns: int
    digest: str
    """Of the ``DIGEST_BYTES`` before ``size``."""
    settled: int
    """Where the last line not yet ended by a newline starts (``size`` if there is none)."""
    newlines: int
    """The newlines before ``settled``."""
    name: str | None
    """The latest ``session_info`` name among the lines before ``settled``."""
    quiet: bool
    """Its mtime was older than ``RACY_NS`` when it was scanned: an unchanged size, mtime and
    ctime mean unchanged bytes."""


def digest(block: bytes) -> str:
    import hashlib  # here: it loads OpenSSL, 4 MB and 4 ms that a command listing nothing spends

    return hashlib.blake2b(block, digest_size=16).hexdigest()


class Cached:
    """The entries cached, by canonical path, as read: each checked when it is asked for, as a
    listing asks for the files it finds only (a cache of many folders is mostly others')."""

    def __init__(self, raw: dict[str, object] | None = None) -> None:
        self.raw = raw or {}

    def get(self, key: str) -> Known | None:
        """The entry of ``key``, if there is one of the right shape."""
        value = self.raw.get(key)
        try:
            return _entry(value) if value is not None else None
        except ValueError:
            return None


def load(folder: Path) -> Cached:
    """The entries cached in ``folder``; none if there is no readable cache of this format."""
    try:
        with open(folder / FILE_NAME, "rb") as file:
            data = orjson.loads(file.read())
        if isinstance(data, dict) and data.get("format") == FORMAT:
            sessions = data["sessions"]
            return Cached(sessions if isinstance(sessions, dict) else None)
    except (OSError, ValueError, KeyError):
        pass
    return Cached()


_FIELDS: tuple[tuple[type, bool], ...] = (
    *[(int, False)] * 5,  # device, inode, size, mtime_ns, ctime_ns
    (str, False),
    (int, False),
    (int, False),
    (str, True),
    (bool, False),
)
"""Each field of ``Known``: its type, and whether it may be null."""


def _entry(value: object) -> Known:
    if not isinstance(value, list) or len(value) != len(_FIELDS):
        raise ValueError("not a cache entry")
    for item, (kind, optional) in zip(value, _FIELDS, strict=True):
        if not (isinstance(item, kind) or (optional and item is None)):
            raise ValueError("not a cache entry")
    return Known(*value)


def _encodable(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def save(folder: Path, entries: Mapping[str, Known], old: Cached, roots: Iterable[str]) -> None:
    """Write ``entries`` and those of ``old`` outside the folders just searched (a file under
    them that was not found is gone) whose folder is still there (a temporary one's entries
    would be kept for ever), if the searched folders changed anything; failing silently."""
    prefixes = tuple(os.path.join(root, "") for root in roots)
    # A lone surrogate (in a name, or a path that is not UTF-8) has no JSON spelling: that
    # file is just read again next time.
    fresh = {
        key: list(known)
        for key, known in entries.items()
        if _encodable(key) and (known.name is None or _encodable(known.name))
    }
    raw = old.raw
    gone = any(key.startswith(prefixes) and key not in fresh for key in raw)
    if not gone and all(raw.get(key) == value for key, value in fresh.items()):
        return
    there = functools.cache(os.path.isdir)
    kept = {
        key: value
        for key, value in raw.items()
        if not key.startswith(prefixes) and there(key.rpartition(os.sep)[0])
    }
    merged = {**kept, **fresh}
    body = orjson.dumps({"format": FORMAT, "sessions": merged})
    with contextlib.suppress(OSError):
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        write_new_session(folder, FILE_NAME, body)  # whole, by rename: two lists leave one
