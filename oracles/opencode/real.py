"""The real opencode sessions of ``tests/fixtures/real/opencode`` continued by opencode 1.18.33.

    python3 oracles/opencode/real.py

For each repository's ``storage/`` (the older store, which 1.18.33 no longer reads): its
sessions as export files (``storage.py``), imported by the real ``opencode import`` into a
fresh database, each continued (``opencode.py next``, on the config's ``loop/m``: theirs is not
served here); kept in ``<repo>/imported/``: ``opencode.db`` (a clean copy) and
``<id>.request.json`` (a session its import refuses is named and left out: opencode 0.6's
messages lack keys 1.18.33 requires). For each repository's ``opencode.db`` (the database, as
committed, its write-ahead log folded in): each session continued on a copy (which 1.18.33
migrates first) on its own last model, declared on the loopback (``opencode.py next --serve``),
``<id>.request.json`` kept beside it. A session the agent refuses is named on stderr and left
out.
"""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REAL = HERE.parent.parent / "tests/fixtures/real/opencode"
CWD = "/tmp/opencode-oracle/real"


def cont(data: Path, session: str, out: Path, model: str = "loop/m") -> None:
    """Continue ``session`` of ``data``'s database on ``model``; keep the request at ``out``."""
    served = [] if model == "loop/m" else ["--serve", model]
    done = subprocess.run(
        [sys.executable, str(HERE / "opencode.py"), "next", "--data", str(data),
         "--cwd", CWD, "--session", session, *(served or ["--model", model]),
         "--out", str(out)],
        capture_output=True, text=True, timeout=400,
    )  # fmt: skip
    print(f"{session}: {'continued' if done.returncode == 0 else done.stderr.strip()}")


def sessions(database: Path) -> list[str]:
    with sqlite3.connect(database) as connection:
        return [row[0] for row in connection.execute("SELECT id FROM session")]


def last_model(database: Path, session: str) -> str:
    """The model of the session's last answer, which it is continued on."""
    with sqlite3.connect(database) as connection:
        row = connection.execute(
            "SELECT json_extract(data, '$.providerID') || '/' || json_extract(data, '$.modelID')"
            " FROM message WHERE session_id = ? AND json_extract(data, '$.role') = 'assistant'"
            " ORDER BY time_created DESC, id DESC LIMIT 1",
            (session,),
        ).fetchone()
    return str(row[0])


def main() -> None:
    for committed in sorted(REAL.glob("*/opencode.db")):
        for session in sessions(committed):
            with tempfile.TemporaryDirectory(prefix="opencode-real-") as tmp:
                copy = Path(tmp, "opencode.db")
                shutil.copyfile(committed, copy)
                # The agent runs a session in its own folder, another machine's: the copy names
                # the oracle's instead, which changes nothing it sends but the system prompt.
                with sqlite3.connect(copy) as connection:
                    connection.execute("UPDATE session SET directory = ?", (CWD,))
                connection.close()
                kept = committed.parent / f"{session}.request.json"
                cont(Path(tmp), session, kept, last_model(committed, session))
    for storage in sorted(REAL.glob("*/storage")):
        kept = storage.parent / "imported"
        with tempfile.TemporaryDirectory(prefix="opencode-real-") as tmp:
            exports, data = Path(tmp, "exports"), Path(tmp, "data")
            data.mkdir()
            subprocess.run([sys.executable, str(HERE / "storage.py"), str(storage), str(exports)],
                           check=True, capture_output=True, timeout=60)  # fmt: skip
            imported = []
            for export in sorted(exports.glob("*.export.json")):
                done = subprocess.run(
                    [sys.executable, str(HERE / "opencode.py"), "import", "--data", str(data),
                     str(export)], capture_output=True, text=True, timeout=120, cwd=tmp,
                )  # fmt: skip
                if done.returncode != 0:  # its session row may be in, its messages are not
                    print(f"{export.name}: import refused: {done.stderr.strip()[-200:]}",
                          file=sys.stderr)  # fmt: skip
                else:
                    imported.append(export.name.removesuffix(".export.json"))
            if not imported:
                continue
            kept.mkdir(exist_ok=True)
            database = data / "opencode.db"
            for session in imported:
                cont(data, session, kept / f"{session}.request.json")
            target = sqlite3.connect(kept / "opencode.db")
            with sqlite3.connect(database) as source:
                source.backup(target)
            target.execute("PRAGMA journal_mode=DELETE")
            target.close()


if __name__ == "__main__":
    main()
