"""The real Qwen Code sessions of ``tests/fixtures/real/qwen`` resumed by Qwen Code 0.24.4.

    python3 oracles/qwen/real.py [FILE ...]   # default: every ``*.jsonl`` there

Each file is resumed by ``qwen.py next`` (a fresh home, the loopback model, the prompt
"Continue."); beside it goes ``<file>.qwen-context.json.gz``: the body of the request it sent,
gzip'd (``tests/test_gemini_qwen.py`` takes its history from it).
Qwen Code finds a session only under the folder its first record names, and these were made on
other machines (Windows among them): the copy it resumes names this machine's folder instead,
which changes nothing it sends but the system prompt. A session it refuses is named on stderr.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REAL = HERE.parent.parent / "tests/fixtures/real/qwen"
CWD = "/tmp/qwen-oracle/real"


def resume(path: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="qwen-real-") as tmp:
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        head = json.loads(lines[0]) | {"cwd": CWD}
        copy = Path(tmp, path.name)
        copy.write_text(
            json.dumps(head, ensure_ascii=False, separators=(",", ":")) + "\n" + "".join(lines[1:]),
            encoding="utf-8",
        )
        out = Path(tmp, "body.json")
        done = subprocess.run(
            [sys.executable, str(HERE / "qwen.py"), "next", "--file", str(copy), "--cwd", CWD,
             "--out", str(out)], capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        if done.returncode != 0:
            print(f"{path}: refused: {done.stderr.strip()[-300:]}", file=sys.stderr)
            return
        body = json.loads(out.read_text(encoding="utf-8"))
        record = {"agent": "qwen-code 0.24.4", "code": 0, "body": body}
        data = gzip.compress(json.dumps(record, ensure_ascii=False).encode(), mtime=0)
        path.with_name(f"{path.name}.qwen-context.json.gz").write_bytes(data)
        print(f"{path}: {len(body['messages'])} messages")


def main() -> None:
    files = [Path(a) for a in sys.argv[1:]] or sorted(REAL.rglob("*.jsonl"))
    for path in files:
        resume(path.resolve())


if __name__ == "__main__":
    main()
