"""The real opencode sessions of ``tests/fixtures/real/opencode`` continued by opencode 1.18.33.

    python3 oracles/opencode/real.py

For each repository's ``storage/`` (the older store, which 1.18.33 no longer reads): its
sessions as export files (``storage.py``), imported by the real ``opencode import`` into a
fresh database, each continued (``opencode.py next``, on the config's ``loop/m``: theirs is not
served here); kept in ``<repo>/imported/``: ``opencode.db`` (a clean copy) and
``<id>.request.json``. A session the agent refuses is named on stderr and left out.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REAL = HERE.parent.parent / "tests/fixtures/real/opencode"


def main() -> None:
    for storage in sorted(REAL.glob("*/storage")):
        kept = storage.parent / "imported"
        kept.mkdir(exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="opencode-real-") as tmp:
            exports, data = Path(tmp, "exports"), Path(tmp, "data")
            data.mkdir()
            subprocess.run([sys.executable, str(HERE / "storage.py"), str(storage), str(exports)],
                           check=True, capture_output=True, timeout=60)  # fmt: skip
            for export in sorted(exports.glob("*.export.json")):
                done = subprocess.run(
                    [sys.executable, str(HERE / "opencode.py"), "import", "--data", str(data),
                     str(export)], capture_output=True, text=True, timeout=120, cwd=tmp,
                )  # fmt: skip
                if done.returncode != 0:
                    print(f"{export.name}: import refused: {done.stderr.strip()[-200:]}",
                          file=sys.stderr)  # fmt: skip
            database = data / "opencode.db"
            with sqlite3.connect(database) as connection:
                ids = [row[0] for row in connection.execute("SELECT id FROM session")]
            for session in ids:
                out = kept / f"{session}.request.json"
                done = subprocess.run(
                    [sys.executable, str(HERE / "opencode.py"), "next", "--data", str(data),
                     "--cwd", "/tmp/opencode-oracle/real", "--session", session,
                     "--model", "loop/m", "--out", str(out)],
                    capture_output=True, text=True, timeout=400,
                )  # fmt: skip
                print(f"{session}: {'continued' if done.returncode == 0 else done.stderr.strip()}")
            target = sqlite3.connect(kept / "opencode.db")
            with sqlite3.connect(database) as source:
                source.backup(target)
            target.execute("PRAGMA journal_mode=DELETE")
            target.close()


if __name__ == "__main__":
    main()
