#!/usr/bin/env python3
"""The in-place handoff against the real oh-my-pi: our compaction entry and the agent's.

    inplace.py DIR [--omp N] [--v2 N] [--v1 N] [--first SEED] [--keep-recent K ...]
               [--fixtures] [--variants] [--save FOLDER] [--oracles DIR]

For every session (the ``*.jsonl`` under ``tests/fixtures`` with ``--fixtures``, but the
``inplace`` cases themselves; ``N`` generated files of each dialect, ``tests/sessiongen.py``,
written into DIR; with ``--variants``, the Anthropic and snapshot variant of each generated omp
file with a compaction, ``ompdiff.anthropic_variant``) and every
``keepRecentTokens`` given (default 20,000, the agent's), with one document
(``tests/fixtures/inplace/document.md``):

1. the omp oracle ``omp/inplace.ts`` runs the agent's own ``prepareCompaction`` and appends
   the entry its ``/handoff`` would append; we compute ours (``compaction.cut`` and
   ``compaction_entry``) and append it to a copy. Both must refuse alike, or give the same
   entry: every field and the order of the keys, ``id`` and ``timestamp`` aside (8 hex
   characters, an ISO time), ``parentId`` the leaf, entries named by their place on the
   branch (a version-1 file's ids are the agent's random ones, our positional ones).
   ``tokensAfter`` is ours (the messages alone; the agent's also counts its framing of the
   summary, docs/handoff.md §16): its place is compared, and how far it is from the agent's
   is counted apart (the largest shortfall).
2. the omp oracle ``omp/context.ts`` opens each copy we appended to (as the handoff appends:
   an old version rewritten at version 3 first): its context must equal
   ours (``handoff show --context --json``), key order included.

``--save FOLDER`` keeps each distinct case (a session and the agent's entry for it) as a
fixture: ``NAME.jsonl`` and ``NAME.expected.json`` (``{"keep_recent", "branch", "entry"}`` or
``{"keep_recent", "error"}``). Run from the repository with the project's venv. With
``OMP_LIB`` naming a release's ``lib.js`` (``omp-bundle/``), both drivers are that release's.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from compare import first_difference, js_numbers  # noqa: E402
from corpus import key_orders, ours, pi_style_model  # noqa: E402
from ompdiff import write_variants  # noqa: E402

from handoff_cli.agents.omp import (  # noqa: E402
    KEEP_RECENT_TOKENS,
    compaction_entry,
    cut,
    with_tokens_after,
)
from handoff_cli.sessions.files import iso_timestamp, locked, migrated_lines, new_entry_id  # noqa: E402
from handoff_cli.sessions.session import CURRENT_VERSION, load_session  # noqa: E402
from handoff_cli.sessions.tree import branch, leaf  # noqa: E402
from tests import sessiongen  # noqa: E402

FIXTURES = HERE.parent / "tests" / "fixtures"
DOCUMENT = FIXTURES / "inplace" / "document.md"
_ID = re.compile(r"[0-9a-f]{8}")
_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")


def our_entry(path: Path, document: str, keep_recent: int) -> tuple[list[str], Any]:
    """(the branch's ids, our entry) for the session at ``path``, or ([], the refusal)."""
    session = load_session(path)
    records = branch(session, leaf(session))
    if sum(1 for r in records if r.type == "message") < 2:
        return [], "Nothing to hand off (no messages yet)"
    where = cut(records, keep_recent)
    if where is None:
        return [], "Nothing to hand off (already compacted)"
    tip = records[-1].id
    entry = compaction_entry(where, document, new_entry_id(session.by_id), tip, iso_timestamp())
    return [r.id for r in records], with_tokens_after(records, entry)


def same_entry(agent: dict[str, Any], mine: dict[str, Any], ids: list[str]) -> str | None:
    """Where our entry differs from the agent's (``tokensAfter``'s value aside), or None.
    Entries are named by their place on the branch: the agents give a version-1 file's entries
    random ids where we number them."""
    theirs = agent["entry"]
    for entry, branch_ids in ((theirs, agent["branch"]), (mine, ids)):
        if not (_ID.fullmatch(str(entry.get("id"))) and _TIME.fullmatch(str(entry["timestamp"]))):
            return f"id or timestamp: {entry.get('id')} {entry.get('timestamp')}"
        if entry.get("parentId") != branch_ids[-1]:
            return f"parentId {entry.get('parentId')} is not the leaf {branch_ids[-1]}"
    at = agent["branch"].index(theirs["firstKeptEntryId"])
    if len(ids) != len(agent["branch"]) or ids.index(mine["firstKeptEntryId"]) != at:
        return f"first kept entry: #{at} {theirs['firstKeptEntryId']} != {mine['firstKeptEntryId']}"
    fixed = {**mine, "id": theirs["id"], "timestamp": theirs["timestamp"]}
    fixed |= {"parentId": theirs["parentId"], "firstKeptEntryId": theirs["firstKeptEntryId"]}
    fixed |= {"tokensAfter": theirs.get("tokensAfter")}
    if key_orders(fixed) != key_orders(theirs):
        return f"key order: {list(fixed)} != {list(theirs)}"
    return first_difference(theirs, fixed, "entry")


def append_as_the_handoff(path: Path, entry: dict[str, Any]) -> None:
    """``entry`` appended to the session at ``path`` as the in-place handoff commits it: under
    the lock, an old version rewritten at version 3 first."""
    session = load_session(path)
    with locked(path) as held:
        if session.version < CURRENT_VERSION:
            held.replace(migrated_lines(session))
        held.append([entry])


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("dir", type=Path)
    for dialect in ("omp", "v2", "v1"):
        parser.add_argument(f"--{dialect}", type=int, default=0)
    parser.add_argument("--first", type=int, default=0)
    parser.add_argument("--keep-recent", type=int, nargs="+", default=[KEEP_RECENT_TOKENS])
    parser.add_argument("--fixtures", action="store_true")
    parser.add_argument("--variants", action="store_true")
    parser.add_argument("--save", type=Path)
    parser.add_argument("--oracles", type=Path, default=HERE)
    args = parser.parse_args(argv)
    args.dir.mkdir(parents=True, exist_ok=True)
    files = sorted(FIXTURES.rglob("*.jsonl")) if args.fixtures else []
    files = [f for f in files if f.parent != FIXTURES / "inplace"]
    generated = []
    for dialect in ("omp", "v2", "v1"):
        for seed in range(args.first, args.first + getattr(args, dialect)):
            target = args.dir / f"{dialect}-{seed:04d}.jsonl"
            target.write_bytes(sessiongen.generate(seed, dialect))
            generated.append(target)
    files += generated
    if args.variants:
        files += write_variants(args.dir, generated)
    document = DOCUMENT.read_text()
    bun = str(args.oracles / "omp/node_modules/.bin/bun")
    counts = {"files": len(files), "compared": 0, "entry equal": 0, "refused alike": 0}
    counts |= {"agent failed": 0, "context equal": 0, "pi-style model": 0, "tokensAfter": 0}
    counts["unequal"] = 0
    saved: set[tuple[str, str]] = set()
    for keep_recent in args.keep_recent:
        out = args.dir / f"inplace-{keep_recent}.jsonl"
        environment = {**os.environ, "DOC": str(DOCUMENT), "KEEP": str(keep_recent)}
        with out.open("w") as sink:
            for start in range(0, len(files), 200):
                batch = [str(f) for f in files[start : start + 200]]
                command = [bun, str(args.oracles / "omp/inplace.ts"), *batch]
                subprocess.run(command, stdout=sink, check=True, env=environment)
        agent = {r["path"]: r for r in map(json.loads, out.open())}
        scratch = Path(tempfile.mkdtemp(dir=args.dir))
        appended: list[Path] = []
        for number, path in enumerate(files):
            theirs = agent[str(path)]
            counts["compared"] += 1
            ids, mine = our_entry(path, document, keep_recent)
            if not ids or "error" in theirs:
                if theirs.get("error") == mine:
                    counts["refused alike"] += 1
                elif not str(theirs.get("error")).startswith("Nothing to hand off"):
                    counts["agent failed"] += 1  # its own code throws on this file
                    print(f"{path} (keep {keep_recent}): the agent fails: {theirs['error']}")
                else:
                    counts["unequal"] += 1
                    print(f"{path} (keep {keep_recent}): {theirs.get('error')!r} != {mine!r}")
                _save(args.save, path, keep_recent, theirs, saved)
                continue
            difference = same_entry(theirs, mine, ids)
            if difference:
                counts["unequal"] += 1
                print(f"{path} (keep {keep_recent}): {difference}")
                continue
            counts["entry equal"] += 1
            shortfall = theirs["entry"].get("tokensAfter", 0) - mine["tokensAfter"]
            counts["tokensAfter"] = max(counts["tokensAfter"], shortfall)
            copy = scratch / f"{number:05d}-{path.name}"
            shutil.copyfile(path, copy)
            append_as_the_handoff(copy, mine)
            appended.append(copy)
            _save(args.save, path, keep_recent, theirs, saved)
        out = args.dir / f"context-{keep_recent}.jsonl"
        with out.open("w") as sink:
            for start in range(0, len(appended), 200):
                batch = [str(f) for f in appended[start : start + 200]]
                command = [bun, str(args.oracles / "omp/context.ts"), *batch]
                subprocess.run(command, stdout=sink, check=True)
        contexts = {r["path"]: r for r in map(json.loads, out.open())}
        for copy in appended:
            theirs, mine = contexts[str(copy)].get("context"), ours(copy, "omp")
            theirs, mine = js_numbers(theirs), js_numbers(mine)
            if mine and theirs and mine["model"] != theirs["model"] and pi_style_model(copy):
                counts["pi-style model"] += 1  # read on purpose (docs/session-format.md §6.1)
                mine["model"] = theirs["model"]
            difference = first_difference(theirs, mine) or (
                None if key_orders(theirs) == key_orders(mine) else "key order"
            )
            if difference:
                counts["unequal"] += 1
                print(f"{copy}: context: {difference}")
            else:
                counts["context equal"] += 1
        shutil.rmtree(scratch)
    print(json.dumps(counts))
    return 1 if counts["unequal"] else 0


def _save(
    folder: Path | None,
    path: Path,
    keep_recent: int,
    theirs: dict[str, Any],
    saved: set[tuple[str, str]],
) -> None:
    """Keep the case as a fixture, unless one of its kind (its outcome) is kept already."""
    if folder is None:
        return
    kind = theirs.get("error") or "entry"
    name = f"{path.parent.name}-{path.stem}-{keep_recent}"
    if (kind, name) in saved:
        return
    saved.add((kind, name))
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(path, folder / f"{name}.jsonl")
    expected: dict[str, Any] = {"keep_recent": keep_recent}
    if "error" in theirs:
        expected["error"] = theirs["error"]
    else:
        expected |= {"branch": theirs["branch"], "entry": theirs["entry"]}
    text = json.dumps(expected, indent=1, ensure_ascii=False) + "\n"
    (folder / f"{name}.expected.json").write_text(text)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
