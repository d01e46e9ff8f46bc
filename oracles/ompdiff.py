#!/usr/bin/env python3
"""Two oh-my-pi releases on the same sessions: where their contexts differ.

    ompdiff.py DIR [--omp N] [--pi N] [--v2 N] [--v1 N] [--first SEED] [--fixtures FOLDER]
               [--lib LIB.js] [--save FOLDER]

Runs ``omp/context.ts`` twice on every ``*.jsonl`` under FOLDER (default ``tests/fixtures``) and
on a generated corpus (``tests/sessiongen.py``, N files of each dialect, written into DIR): once
as 18.2.3 (its sources in ``omp/node_modules``) and once as the release whose library entry LIB
is (default ``omp-bundle/18.3.4/package/dist/lib.js``, made by ``setup.sh``). Compares each
file's printed object whole, values and the order of every object's keys; two refusals count as
equal whatever their messages say (the bundle's are minified). Prints each difference found
(the first place two contexts differ), a count of files per kind of difference, and the totals.

``--save FOLDER`` (``tests/fixtures/omp183``) keeps what the release gives, in the shape of the
fixtures' own ``*.context.json`` (indent 1):

* for every fixture it opens, its context as ``FOLDER/<the fixture's path under
  tests/fixtures, .jsonl replaced by .omp183-context.json>``;
* ``FOLDER/snapshot/``: small sessions written here (``SNAPSHOT_CASES``) for what 18.3 reads
  anew, the snapshot compaction (``firstKeptEntryId: ""`` with ``providerReplayThroughEntryId``)
  and the Anthropic payload's ``signature``; beside each, the release's context
  (``.omp183-context.json``), 18.2.3's (``.omp1823-context.json``), and both versions'
  in-place handoff (``omp/inplace.ts``, ``.omp183-inplace.json`` and ``.omp1823-inplace.json``:
  one object per ``keepRecentTokens`` in ``KEEP_RECENT``, the document
  ``tests/fixtures/inplace/document.md``).

Run from the repository with the project's venv (it imports ``tests.sessiongen``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from compare import first_difference  # noqa: E402
from corpus import key_orders  # noqa: E402

from tests import sessiongen  # noqa: E402

BUN = HERE / "omp/node_modules/.bin/bun"
FIXTURES = HERE.parent / "tests/fixtures"


KEEP_RECENT = (20000, 5)
DOCUMENT = FIXTURES / "inplace/document.md"


def run(
    files: list[Path], lib: Path | None, driver: str = "context.ts", **env_extra: str
) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k != "OMP_LIB"} | env_extra
    if lib is not None:
        env["OMP_LIB"] = str(lib)
    records: dict[str, Any] = {}
    for start in range(0, len(files), 200):
        batch = [str(f) for f in files[start : start + 200]]
        out = subprocess.run(
            [str(BUN), str(HERE / "omp" / driver), *batch],
            env=env,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        records.update((r["path"], r) for r in map(json.loads, out.splitlines()))
    return records


def _message(
    entry_id: str, parent: str | None, role: str, text: str, second: int
) -> dict[str, Any]:
    message: dict[str, Any] = {
        "role": role,
        "content": text,
        "timestamp": 1767225600000 + second * 1000,
    }
    if role == "assistant":
        message.update(
            content=[{"type": "text", "text": text}],
            api="anthropic-messages",
            provider="anthropic",
            model="claude-sonnet-4-5",
            stopReason="stop",
            usage={
                "input": 10,
                "output": 5,
                "cacheRead": 0,
                "cacheWrite": 0,
                "totalTokens": 15,
                "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
            },
        )
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": f"2026-01-01T00:00:{second:02d}.000Z",
        "message": message,
    }


def _compaction(
    entry_id: str,
    parent: str,
    second: int,
    first_kept: str,
    through: str | None,
    payload: dict[str, Any] | None,
    summary: str = "S",
) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "type": "compaction",
        "id": entry_id,
        "parentId": parent,
        "timestamp": f"2026-01-01T00:00:{second:02d}.000Z",
        "summary": summary,
        "firstKeptEntryId": first_kept,
        "tokensBefore": 50,
    }
    if through is not None:
        entry["providerReplayThroughEntryId"] = through
    if payload is not None:
        entry["preserveData"] = {"anthropicCompaction": payload}
    return entry


def snapshot_cases() -> dict[str, list[dict[str, Any]]]:
    """Six turns, then a compaction of the kind named, then one more user message."""
    turns = [
        _message(
            f"b000000{i}",
            f"b000000{i - 1}" if i > 1 else None,
            "user" if i % 2 else "assistant",
            word,
            i,
        )
        for i, word in enumerate(("one", "two", "three", "four", "five", "six"), 1)
    ]
    signed = {"provider": "anthropic", "content": "C", "signature": "sig-1"}
    seven = _message("b0000008", "b0000007", "user", "seven", 8)
    return {
        # Replays through b0000004: 18.3 keeps five and six, 18.2.3 keeps nothing.
        "snapshot-compaction": [
            *turns,
            _compaction("b0000007", "b0000006", 7, "", "b0000004", signed),
            seven,
        ],
        "snapshot-through-last": [
            *turns,
            _compaction("b0000007", "b0000006", 7, "", "b0000006", signed),
            seven,
        ],
        "snapshot-through-missing": [
            *turns,
            _compaction("b0000007", "b0000006", 7, "", "zzzzzzzz", signed),
            seven,
        ],
        # Without an Anthropic payload the replay-through entry keeps nothing.
        "snapshot-without-payload": [
            *turns,
            _compaction("b0000007", "b0000006", 7, "", "b0000004", None),
            seven,
        ],
        "anthropic-compaction-signature": [
            *turns,
            _compaction(
                "b0000007", "b0000006", 7, "b0000005", None, {**signed, "encryptedContent": "E"}
            ),
            seven,
        ],
        "snapshot-then-compaction": [
            *turns,
            _compaction("b0000007", "b0000006", 7, "", "b0000004", signed),
            seven,
            _message("b0000009", "b0000008", "assistant", "eight", 9),
            _compaction("b000000a", "b0000009", 10, "b0000008", None, None, "S2"),
        ],
    }


def write_snapshot_cases(folder: Path, lib: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    files = []
    for number, (name, entries) in enumerate(snapshot_cases().items()):
        header = {
            "type": "session",
            "version": 3,
            "id": f"0190e0a0-0000-7000-8000-0000000001{number:02d}",
            "timestamp": "2026-01-01T00:00:00.000Z",
            "cwd": "/p",
        }
        path = folder / f"{name}.jsonl"
        path.write_text(
            "".join(json.dumps(e, separators=(",", ":")) + "\n" for e in [header, *entries])
        )
        files.append(path)
    for suffix, version in ((".omp183", lib), (".omp1823", None)):
        contexts = run(files, version)
        inplace = {
            k: run(files, version, "inplace.ts", DOC=str(DOCUMENT), KEEP=str(k))
            for k in KEEP_RECENT
        }
        for path in files:
            write_json(path.with_suffix(f"{suffix}-context.json"), contexts[str(path)]["context"])
            write_json(
                path.with_suffix(f"{suffix}-inplace.json"),
                [
                    {
                        "keep_recent": k,
                        **{f: v for f, v in inplace[k][str(path)].items() if f != "path"},
                    }
                    for k in KEEP_RECENT
                ],
            )


def write_json(path: Path, value: Any) -> None:
    path.write_text(json.dumps(value, indent=1, ensure_ascii=False), encoding="utf-8")


def difference(a: dict[str, Any], b: dict[str, Any]) -> str | None:
    if "error" in a or "error" in b:
        return (
            None
            if "error" in a and "error" in b
            else f"refused by {'18.2.3' if 'error' in a else 'the other'}"
        )
    found = first_difference(a["context"], b["context"], "context")
    if found is None and key_orders(a["context"]) != key_orders(b["context"]):
        found = "context: the same values, keys in another order"
    return found


def kind(found: str) -> str:
    """A difference without its indices and values: what kind of difference it is."""
    return (
        re.sub(r"\[\d+\]", "[]", found.split(":")[0])
        + ":"
        + found.split(":", 1)[1].split("!=")[0][:40]
    )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("dir", type=Path)
    for dialect in sessiongen.DIALECTS:
        parser.add_argument(f"--{dialect}", type=int, default=0)
    parser.add_argument("--first", type=int, default=0)
    parser.add_argument("--fixtures", type=Path, default=FIXTURES)
    parser.add_argument("--lib", type=Path, default=HERE / "omp-bundle/18.3.4/package/dist/lib.js")
    parser.add_argument("--save", type=Path)
    args = parser.parse_args(argv)

    save = args.save.resolve() if args.save else None
    fixtures = sorted(
        p
        for p in args.fixtures.resolve().rglob("*.jsonl")
        if save is None or not p.is_relative_to(save)
    )
    args.dir.mkdir(parents=True, exist_ok=True)
    corpus: list[Path] = []
    for dialect in sessiongen.DIALECTS:
        for seed in range(args.first, args.first + getattr(args, dialect)):
            path = args.dir / f"{dialect}-{seed:04d}.jsonl"
            path.write_bytes(sessiongen.generate(seed, dialect))
            corpus.append(path)
    files = [*fixtures, *corpus]
    old, new = run(files, None), run(files, args.lib.resolve())
    kinds: Counter[str] = Counter()
    for group, paths in (("fixtures", fixtures), ("corpus", corpus)):
        equal = refused = 0
        for path in paths:
            a, b = old[str(path)], new[str(path)]
            refused += "error" in a and "error" in b
            found = difference(a, b)
            if found is None:
                equal += 1
            else:
                kinds[kind(found)] += 1
                print(f"DIFF {path}: {found}"[:400])
        print(f"== {group}: equal {equal}/{len(paths)} (both refuse {refused})")
    for what, count in kinds.most_common():
        print(f"  {count:5d}  {what}")
    if save:
        for path in fixtures:
            record = new[str(path)]
            if "error" in record:
                continue
            target = save / path.relative_to(args.fixtures.resolve()).with_suffix(
                ".omp183-context.json"
            )
            target.parent.mkdir(parents=True, exist_ok=True)
            write_json(target, record["context"])
        write_snapshot_cases(save / "snapshot", args.lib.resolve())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
