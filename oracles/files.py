"""The files oh-my-pi's <files> block lists, by the agent's own code, on a set of probe paths.

    python3 oracles/files.py [--out tests/fixtures/files/omp-file-lists.json]

Each case is a small session: a user message, one assistant turn whose tool calls (read,
write, edit) name the probe paths, their results, then a last exchange; some cases open with a
compaction whose ``details`` list files (the agent takes them over). ``omp/inplace.ts`` runs the
agent's own ``prepareCompaction`` (``extractFileOpsFromMessage``, whose ``stripReadSelector`` is
``splitReadSelector``; ``isUrlSchemePath``), ``computeFileLists`` and ``upsertFileOperations`` on
every case, with ``keepRecentTokens`` 1 so that the tool calls are all summarised, for 18.3.4
(its bundle) and 18.2.3 (its sources); the two must agree. The fixture keeps each case's lines
and what the agent listed: tests/test_omp.py holds our one rule (``omp.file_operation``,
``omp.listed_files``) to it, for the in-place compaction's details and a new session's block.

Needs the oracles installed (setup.sh, or omp/node_modules and omp-bundle/18.3.4 linked).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
BUN = HERE / "omp" / "node_modules" / ".bin" / "bun"
RELEASES = {"18.3.4": HERE / "omp-bundle" / "18.3.4" / "package" / "dist" / "lib.js", "18.2.3": None}
DOCUMENT = "## Goal\nProbe the file lists."

# A read's selector: ranges, raw, conflicts, compounds, and what only looks like one.
READ_PROBES = [
    "a.py",
    "a.py:L1-L20",
    "a.py:raw",
    "a.py:1-50:raw",
    "a.py:raw:1-50",
    "a.py:raw:raw",
    "a.py:L1:L2",
    "a.py:L5",
    "a.py:L5-L9",
    "a.py:5",
    "a.py:50-200",
    "a.py:50+10",
    "a.py:5..9",
    "a.py:5-",
    "a.py:5-16,960-973",
    "a.py:RAW",
    "a.py:conflicts",
    "a.py:conflicts:raw",
    "a.py:raw:-60",
    "a.py:",
    "a.py::",
    "a.py:raw:",
    "a.py:L",
    "a.py:x",
    ":5",
    ":raw",
    "dir:with:colons/a.py",
    "dir:5/a.py",
    "dir:5/a.py:raw",
    "C:\\src\\a.py",
    "C:\\src\\a.py:L1-L2",
    "C:",
    "src/a.py:1-50:raw:raw",
]
# Resources, not files: any scheme://, also after a path.
URL_PROBES = [
    "https://example.com/a.py",
    "http://example.com/a.py:L1",
    "file:///tmp/a.py",
    "artifact://3",
    "conflict://1",
    "local://ctx.md",
    "a.py:conflict://1",
    "HTTPS://EXAMPLE.COM",
    "git+ssh://host/repo",
    "x-y.z+w://thing",
    "1http://not-a-scheme-start",
    "mailto:someone@example.com",
    "C://weird",
]


def cases() -> list[dict[str, Any]]:
    """The probes as cases: (name, tool calls, the previous compaction's details or None)."""
    made: list[dict[str, Any]] = []
    for path in READ_PROBES + URL_PROBES:
        for tool in ("read", "write", "edit"):
            made.append({"name": f"{tool} {path!r}", "calls": [[tool, path]], "details": None})
    made += [
        {"name": "empty path", "calls": [["read", ""], ["write", ""]], "details": None},
        {"name": "other tools", "calls": [["grep", "a.py"], ["Read", "b.py"]], "details": None},
        {
            "name": "read with selectors, then edited: RW",
            "calls": [["read", "a.py:L1-L20"], ["read", "a.py:raw"], ["edit", "a.py"]],
            "details": None,
        },
        {
            "name": "read a compound, written as it is",
            "calls": [["read", "b.py:1-5:raw"], ["write", "b.py:1-5:raw"]],
            "details": None,
        },
        {
            "name": "mixed",
            "calls": [
                ["read", "src/z.py"],
                ["read", "src/a.py:L1:L2"],
                ["write", "docs/B.md"],
                ["read", "https://x.org/p"],
                ["edit", "src/a.py:L1"],
                ["read", "src/é.py:raw:raw"],
            ],
            "details": None,
        },
        {
            "name": "the previous compaction's lists",
            "calls": [["read", "new.py"]],
            "details": {
                "readFiles": ["old.py:L1-L9", "old.py:raw:raw", "https://x.org/a", "keep.py"],
                "modifiedFiles": ["w.py", "artifact://2", "w.py:L1"],
            },
        },
        {
            "name": "previous lists that are not lists",
            "calls": [["read", "new.py"]],
            "details": {"readFiles": "abc", "modifiedFiles": {"x.py": 1}},
        },
    ]
    return made


def session_lines(case: dict[str, Any]) -> list[str]:
    """The session of one case, as JSON lines."""
    entries: list[dict[str, Any]] = []
    clock = [1_767_225_600_000]

    def add(kind: str, **fields: Any) -> str:
        clock[0] += 1000
        entry_id = f"{len(entries) + 1:08x}"
        parent = entries[-1]["id"] if entries else None
        stamp = f"2026-01-01T00:{len(entries):02d}:00.000Z"
        entries.append({"type": kind, "id": entry_id, "parentId": parent, "timestamp": stamp, **fields})
        return entry_id

    def message(role: str, **fields: Any) -> dict[str, Any]:
        return {"role": role, **fields, "timestamp": clock[0]}

    def text(words: str) -> list[dict[str, str]]:
        return [{"type": "text", "text": words}]

    cost = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}
    usage = {"input": 100, "output": 10, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 110, "cost": cost}
    turn = {"api": "openai-completions", "provider": "openai", "model": "gpt-4o-mini", "usage": usage}
    if case["details"] is not None:
        kept = add("message", message=message("user", content=text("before")))
        add("compaction", summary="## Goal\nearlier", firstKeptEntryId=kept, tokensBefore=100, details=case["details"])
    add("message", message=message("user", content=text("go")))
    calls = [
        {"type": "toolCall", "id": f"call{i}", "name": tool, "arguments": {"path": path}}
        for i, (tool, path) in enumerate(case["calls"])
    ]
    add("message", message=message("assistant", content=calls, **turn, stopReason="toolUse"))
    for i, (tool, _) in enumerate(case["calls"]):
        result = {"toolCallId": f"call{i}", "toolName": tool, "content": text("ok"), "isError": False}
        add("message", message=message("toolResult", **result))
    add("message", message=message("assistant", content=text("done"), **turn, stopReason="stop"))
    add("message", message=message("user", content=text("next")))
    add("message", message=message("assistant", content=text("ok"), **turn, stopReason="stop"))
    header = {"type": "session", "version": 3, "id": "probe", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/p"}
    return [json.dumps(line, ensure_ascii=False) for line in [header, *entries]]


def run(release: str, files: list[Path], document: Path) -> list[dict[str, Any]]:
    env = {**os.environ, "DOC": str(document), "KEEP": "1"}
    lib = RELEASES[release]
    if lib is not None:
        env["OMP_LIB"] = str(lib)
    out = subprocess.run(
        [str(BUN), "omp/inplace.ts", *map(str, files)], cwd=HERE, env=env, capture_output=True, text=True, check=True
    )
    return [json.loads(line) for line in out.stdout.splitlines()]


def listed(row: dict[str, Any]) -> dict[str, Any]:
    if "error" in row:
        return {"error": row["error"]}
    entry = row["entry"]
    summary = entry["summary"]
    block = summary[summary.find("<files>") :] if "<files>" in summary else ""
    return {**entry["details"], "files": block}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=HERE.parent / "tests/fixtures/files/omp-file-lists.json")
    args = parser.parse_args()
    made = cases()
    with tempfile.TemporaryDirectory() as work:
        folder = Path(work)
        document = folder / "document.md"
        document.write_text(DOCUMENT)
        files = []
        for number, case in enumerate(made):
            case["lines"] = session_lines(case)
            files.append(folder / f"case-{number:03d}.jsonl")
            files[-1].write_text("\n".join(case["lines"]) + "\n")
        results = {release: [listed(row) for row in run(release, files, document)] for release in RELEASES}
    newest, *others = RELEASES
    for release in others:
        differ = [c["name"] for c, a, b in zip(made, results[newest], results[release], strict=True) if a != b]
        if differ:
            sys.exit(f"{newest} and {release} list different files: {differ}")
    fixture = {
        "agent": f"oh-my-pi {newest} (and {', '.join(others)}, the same)",
        "document": DOCUMENT,
        "cases": [
            {"name": c["name"], "lines": c["lines"], "omp": result}
            for c, result in zip(made, results[newest], strict=True)
        ],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(fixture, indent=1, ensure_ascii=False) + "\n")
    print(f"{len(made)} cases -> {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
