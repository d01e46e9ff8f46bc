"""Finding sessions on disk: listing a sessions folder and resolving a session id to its file.

Listing reads only the first kilobytes of each file (title slot, header, the first entries), so
a folder of thousands of sessions lists in a fraction of a second; the agents nest sessions in
one folder per working directory, so folders are searched recursively.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import SessionFileError, UsageError, os_reason
from .jsonl import parse_line
from .session import numbered, open_regular, parent_session, read_head, session_title
from .text import text_of

HEAD_BYTES = 64 * 1024
"""How much of each file ``list`` reads: enough for the header and the first exchange."""


@dataclass(frozen=True, slots=True)
class SessionSummary:
    """What ``list`` shows of one session file."""

    id: str
    path: Path
    timestamp: str
    cwd: str
    title: str | None
    parent_session: str | None
    size: int

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "path": str(self.path),
            "timestamp": self.timestamp,
            "cwd": self.cwd,
            "title": self.title,
            "parent_session": self.parent_session,
            "size": self.size,
        }


@dataclass(frozen=True, slots=True)
class Skipped:
    """A file under the sessions folder that is not a readable session."""

    path: Path
    reason: str


def summarize(path: Path) -> SessionSummary:
    """Read the start of ``path``; raise ``SessionFileError`` if it is not a session file."""
    try:
        with open_regular(path) as file:
            head = file.read(HEAD_BYTES)
            size = os.fstat(file.fileno()).st_size
    except OSError as error:
        raise SessionFileError(path, os_reason(error)) from None
    chunks = list(io.BytesIO(head))  # split at "\n" only, as loading does
    if size > len(head) and chunks:
        chunks.pop()  # the last line is cut off by the read
    lines = numbered(chunks)
    found = read_head(path, lines)
    name: str | None = None
    first_request: str | None = None
    for _, _, raw in lines:
        try:
            value = parse_line(raw)
        except ValueError:
            continue
        if not isinstance(value, dict):
            continue
        if value.get("type") == "session_info" and isinstance(value.get("name"), str):
            name = value["name"]
        message = value.get("message")
        if first_request is None and isinstance(message, dict) and message.get("role") == "user":
            first_request = text_of(message.get("content")).strip() or None
    header = found.header
    return SessionSummary(
        id=header["id"],
        path=path,
        timestamp=str(header.get("timestamp", "")),
        cwd=str(header.get("cwd", "")),
        title=session_title(found.title_slot, header, name, first_request),
        parent_session=parent_session(header),
        size=size,
    )


def session_files(directory: Path) -> Iterator[Path]:
    """Every regular ``*.jsonl`` file under ``directory``, recursively, in a stable order. A
    FIFO or a device that happens to be named so is passed over: reading it could hang."""
    for root, dirs, files in os.walk(directory):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(".jsonl") and os.path.isfile(os.path.join(root, name)):
                yield Path(root, name)


def list_sessions(directory: Path) -> tuple[list[SessionSummary], list[Skipped]]:
    """The sessions under ``directory``, newest first, and the files that were not sessions."""
    if not directory.is_dir():
        reason = "no such folder" if not directory.exists() else "not a folder"
        raise UsageError(f"{directory}: {reason} (sessions folder)")
    sessions: list[SessionSummary] = []
    skipped: list[Skipped] = []
    for path in session_files(directory):
        try:
            sessions.append(summarize(path))
        except SessionFileError as error:
            skipped.append(Skipped(path, error.reason))
    sessions.sort(key=lambda s: (s.timestamp, str(s.path)), reverse=True)
    return sessions, skipped


def resolve_session(spec: str, directory: Path) -> Path:
    """The file ``spec`` names: a path, or a session id (or unique prefix) under ``directory``."""
    path = Path(spec)
    if path.exists() or os.sep in spec or spec.endswith(".jsonl") or not directory.is_dir():
        return path
    sessions, _ = list_sessions(directory)
    exact = [s for s in sessions if s.id == spec]
    matches = exact or [s for s in sessions if s.id.startswith(spec)]
    if len(matches) == 1:
        return matches[0].path
    if not matches:
        raise SessionFileError(spec, f"no such file, and no session with this id under {directory}")
    shown = ", ".join(f"{s.id} ({s.path})" for s in matches[:5])
    more = f" and {len(matches) - 5} more" if len(matches) > 5 else ""
    raise UsageError(f"session id prefix {spec!r} is ambiguous: {shown}{more}")
