"""opencode's database (1.18.33): its sessions read, and a session's rows written in one
transaction, as ``opencode import`` writes them (rows only; the agent continues such a session
as one of its own: ``oracles/opencode/NOTES.md``).

A session is named by the database's path and its id: ``…/opencode.db/ses_…``. Readers never
wait (the agent keeps the database in WAL mode); a writer takes SQLite's write lock
(``BEGIN IMMEDIATE``), waits for the agent's short transactions at most ``WAIT_S``, and holds
it well under the agent's own five seconds.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any, NamedTuple

MAGIC = b"SQLite format 3\x00"
WAIT_S = 2.0
"""How long a write waits for the agent's transactions (each one short); the agent waits 5 s
for ours."""


class Loaded(NamedTuple):
    """One session's rows: the session's, and each message with its parts, in order."""

    session: dict[str, Any]
    messages: list[tuple[dict[str, Any], list[dict[str, Any]]]]
    version: tuple[int, int, int]
    """What changes when anything of the session does: its message and part counts and the
    latest ``time_updated`` of its rows."""


def reading(db: Path) -> sqlite3.Connection:
    """A read-only connection (a reader of a WAL database never waits for its writers)."""
    connection = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=WAIT_S)
    connection.row_factory = sqlite3.Row
    return connection


def writing(db: Path) -> sqlite3.Connection:
    """A connection for one write transaction, begun by the caller (``BEGIN IMMEDIATE``)."""
    connection = sqlite3.connect(str(db), timeout=WAIT_S, isolation_level=None)
    connection.row_factory = sqlite3.Row
    connection.execute("PRAGMA foreign_keys = ON")
    return connection


def sessions(connection: sqlite3.Connection) -> list[dict[str, Any]]:
    """Every session, newest first, with how many messages it holds."""
    rows = connection.execute(
        "SELECT s.*, (SELECT count(*) FROM message m WHERE m.session_id = s.id) AS messages "
        "FROM session s ORDER BY s.time_updated DESC, s.id"
    )
    return [dict(row) for row in rows]


def version(connection: sqlite3.Connection, session_id: str) -> tuple[int, int, int]:
    row = connection.execute(
        "SELECT (SELECT count(*) FROM message WHERE session_id = :id), "
        "(SELECT count(*) FROM part WHERE session_id = :id), "
        "max(coalesce((SELECT max(time_updated) FROM message WHERE session_id = :id), 0), "
        "coalesce((SELECT max(time_updated) FROM part WHERE session_id = :id), 0), "
        "coalesce((SELECT time_updated FROM session WHERE id = :id), 0))",
        {"id": session_id},
    ).fetchone()
    return (int(row[0]), int(row[1]), int(row[2]))


def load(connection: sqlite3.Connection, session_id: str) -> Loaded | None:
    """A session's rows as the agent reads them: messages by ``time_created`` then id, each
    one's parts by id; each object its ``data`` with its ids after, as ``opencode export``
    prints it."""
    row = connection.execute("SELECT * FROM session WHERE id = ?", (session_id,)).fetchone()
    if row is None:
        return None
    parts: dict[str, list[dict[str, Any]]] = {}
    for part in connection.execute(
        "SELECT id, message_id, session_id, data FROM part WHERE session_id = ? "
        "ORDER BY message_id, id",
        (session_id,),
    ):
        data = _object(part["data"])
        data |= {"id": part["id"], "sessionID": part["session_id"], "messageID": part["message_id"]}
        parts.setdefault(part["message_id"], []).append(data)
    messages = []
    for message in connection.execute(
        "SELECT id, session_id, data FROM message WHERE session_id = ? ORDER BY time_created, id",
        (session_id,),
    ):
        info = _object(message["data"]) | {"id": message["id"], "sessionID": message["session_id"]}
        messages.append((info, parts.get(message["id"], [])))
    return Loaded(dict(row), messages, version(connection, session_id))


def _object(data: str) -> dict[str, Any]:
    try:
        value = json.loads(data)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def insert(
    connection: sqlite3.Connection, table: str, row: dict[str, Any], *, or_ignore: bool = False
) -> None:
    """``row`` inserted into ``table``, its values for the columns the table has: an older
    database (opencode 1.4 has no ``session.path``) gets what that version wrote, and the
    agent's own migrations bring it up to date when it opens it."""
    known = {str(c["name"]) for c in connection.execute(f"PRAGMA table_info({table})")}
    kept = {name: value for name, value in row.items() if name in known}
    columns = ", ".join(kept)
    marks = ", ".join(f":{name}" for name in kept)
    verb = "INSERT OR IGNORE" if or_ignore else "INSERT"
    connection.execute(f"{verb} INTO {table} ({columns}) VALUES ({marks})", kept)


def insert_messages(
    connection: sqlite3.Connection, session_id: str, messages: list[dict[str, Any]]
) -> None:
    """Each ``{"info", "parts"}`` as its message row and part rows (``data`` their objects
    without their ids, as the agent stores them)."""
    for message in messages:
        info = message["info"]
        created = info["time"]["created"]
        data = {k: v for k, v in info.items() if k not in ("id", "sessionID")}
        connection.execute(
            "INSERT INTO message (id, session_id, time_created, time_updated, data) "
            "VALUES (?, ?, ?, ?, ?)",
            (info["id"], session_id, created, created, _dumped(data)),
        )
        for part in message["parts"]:
            stored = {k: v for k, v in part.items() if k not in ("id", "sessionID", "messageID")}
            connection.execute(
                "INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (part["id"], info["id"], session_id, created, created, _dumped(stored)),
            )
    if messages:
        last = messages[-1]["info"]["time"]["created"]
        connection.execute(
            "UPDATE session SET time_updated = max(time_updated, ?) WHERE id = ?",
            (last, session_id),
        )


def _dumped(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def project_for(connection: sqlite3.Connection, cwd: str) -> tuple[str, str]:
    """The project a session of ``cwd`` belongs to, as the agent would find it: the one
    whose worktree holds the cwd most closely (one it knows), else ``global`` at the root."""
    best: tuple[str, str] | None = None
    for row in connection.execute("SELECT id, worktree FROM project"):
        worktree = str(row["worktree"])
        inside = cwd == worktree or cwd.startswith(worktree.rstrip("/") + "/")
        if inside and worktree != "/" and (best is None or len(worktree) > len(best[1])):
            best = (str(row["id"]), worktree)
    return best or ("global", "/")
