"""opencode's older session store (``storage/``: a JSON file a record) as the export files
``opencode import`` reads, so that 1.18.33, which no longer reads ``storage/`` itself, can
continue a real session people committed in that form.

    python3 oracles/opencode/storage.py STORAGE_DIR OUT_DIR

Writes ``OUT_DIR/<session id>.export.json`` for each ``session/<project>/<id>.json``:
``{"info": <its session file>, "messages": [{"info": <message file>, "parts": [<part files>]}]}``,
messages in the order of their ``time.created`` then id, parts by id, as opencode reads them;
a ``slug`` given to a session made before opencode had them, and an ``agent`` (its ``mode``) to
an answer: 1.18.33's import refuses either missing (and leaves what it inserted before it).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def _read(path: Path) -> dict[str, Any]:
    value = json.loads(path.read_text(encoding="utf-8"))
    return value if isinstance(value, dict) else {}


def export(storage: Path, info_file: Path) -> dict[str, Any]:
    info = _read(info_file)
    # 1.18.33's import requires a slug, which sessions of 1.0.x were made without.
    info.setdefault("slug", "imported-session")
    session = info_file.stem
    messages = [_read(p) for p in sorted((storage / "message" / session).glob("msg_*.json"))]
    messages.sort(key=lambda m: ((m.get("time") or {}).get("created", 0), m.get("id", "")))
    made = []
    for message in messages:
        if message.get("role") == "assistant":  # 1.0.x named only the mode, which it was
            message.setdefault("agent", message.get("mode", "build"))
        parts = sorted((storage / "part" / message["id"]).glob("prt_*.json"))
        made.append({"info": message, "parts": [_read(p) for p in parts]})
    return {"info": info, "messages": made}


def main() -> None:
    storage, out = Path(sys.argv[1]), Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    for info_file in sorted(storage.glob("session/*/ses_*.json")):
        target = out / f"{info_file.stem}.export.json"
        target.write_text(json.dumps(export(storage, info_file), indent=2, ensure_ascii=False))
        print(target)


if __name__ == "__main__":
    main()
