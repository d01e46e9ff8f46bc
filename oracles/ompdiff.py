#!/usr/bin/env python3
"""Two oh-my-pi releases on the same sessions: where their contexts differ.

    ompdiff.py DIR [--omp N] [--pi N] [--v2 N] [--v1 N] [--first SEED] [--fixtures FOLDER]
               [--lib LIB.js] [--save FOLDER] [--ours] [--variants]

Runs ``omp/context.ts`` twice on every ``*.jsonl`` under FOLDER (default ``tests/fixtures``) and
on a generated corpus (``tests/sessiongen.py``, N files of each dialect, written into DIR): once
as 18.2.3 (its sources in ``omp/node_modules``) and once as the release whose library entry LIB
is (default ``omp-bundle/18.3.4/package/dist/lib.js``, made by ``setup.sh``). Compares each
file's printed object whole, values and the order of every object's keys; two refusals count as
equal whatever their messages say (the bundle's are minified). Prints each difference found
(the first place two contexts differ), a count of files per kind of difference, and the totals.

``--ours`` compares our own ``handoff show FILE --context --json --agent omp`` (run in this
process) with the release's instead of 18.2.3's; a ``model`` that differs where a pi-style
``model_change`` is on the branch is ours on purpose (docs/session-format.md §6.1) and is
counted apart, and so are the files the release cannot open and we read (pi's messages without
content), which have no context to compare. Exit status 1 when anything compared differs.

``--variants`` adds, for every generated omp file with a compaction, a copy whose compactions
are made Anthropic ones (``anthropic_variant``): a payload (its ``signature`` present, empty or
not a string), snapshots (``firstKeptEntryId: ""`` replaying through an ancestor, the parent,
a later entry, an entry off the branch, the compaction itself or no entry), with and without
the payload. The generator writes neither, so only the variants reach what 18.3 reads anew.

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
import random
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from compare import first_difference, js_numbers  # noqa: E402
from corpus import key_orders, ours, pi_style_model  # noqa: E402

from tests import sessiongen  # noqa: E402

BUN = HERE / "omp/node_modules/.bin/bun"
RELEASE = HERE / "omp-bundle/18.3.4/package/dist/lib.js"
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
    """Six turns, then a compaction of the kind named, then one more user message (the first
    six cases; the rest, the edges of 18.3's conditions, vary that)."""
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
        **snapshot_edge_cases(turns, signed, seven),
    }


def snapshot_edge_cases(
    turns: list[dict[str, Any]], signed: dict[str, Any], seven: dict[str, Any]
) -> dict[str, list[dict[str, Any]]]:
    """Where 18.3's snapshot and payload rules stop: a kept entry named, the replay-through
    entry after the compaction, the compaction itself, off the branch; no ``firstKeptEntryId``;
    a payload that is not one; the snapshot as the leaf, across a reset, twice; a kept entry
    without a readable time; a signature that is empty or not a string; both providers."""

    def snapshot(through: str, payload: Any = signed, **fields: Any) -> dict[str, Any]:
        return {**_compaction("b0000007", "b0000006", 7, "", through, payload), **fields}

    off = _message("b0000009", "b0000003", "assistant", "off the branch", 9)
    reset = {
        "type": "reset_boundary",
        "id": "r0000001",
        "parentId": "b0000004",
        "timestamp": "2026-01-01T00:00:04.500Z",
    }
    across = [*turns[:4], reset, {**turns[4], "parentId": "r0000001"}, turns[5]]
    no_first_kept = snapshot("b0000004")
    del no_first_kept["firstKeptEntryId"]
    undated = [{**t, "timestamp": "not a time"} if t["id"] == "b0000005" else t for t in turns]
    both = {"anthropicCompaction": signed}
    both["openaiRemoteCompaction"] = {"provider": "openai", "replacementHistory": [{"type": "m"}]}
    return {
        "snapshot-first-kept-named": [
            *turns,
            snapshot("b0000004", firstKeptEntryId="b0000003"),
            seven,
        ],
        "snapshot-through-after": [*turns, snapshot("b0000008"), seven],
        "snapshot-through-itself": [*turns, snapshot("b0000007"), seven],
        "snapshot-through-off-branch": [*turns, off, snapshot("b0000009"), seven],
        "snapshot-first-kept-absent": [*turns, no_first_kept, seven],
        "snapshot-payload-without-content": [
            *turns,
            snapshot("b0000004", {"provider": "anthropic", "content": ""}),
            seven,
        ],
        "snapshot-at-leaf": [*turns, snapshot("b0000004")],
        "snapshot-across-reset": [*across, snapshot("b0000002"), seven],
        "snapshot-twice": [
            *turns,
            snapshot("b0000004"),
            seven,
            _message("b0000009", "b0000008", "assistant", "nine", 9),
            _message("b000000a", "b0000009", "user", "ten", 10),
            _compaction("b000000b", "b000000a", 11, "", "b0000008", signed),
            _message("b000000c", "b000000b", "user", "twelve", 12),
        ],
        "snapshot-kept-undated": [*undated, snapshot("b0000004"), seven],
        "anthropic-signature-empty": [
            *turns,
            _compaction(
                "b0000007",
                "b0000006",
                7,
                "b0000005",
                None,
                {**signed, "signature": "", "encryptedContent": "E"},
            ),
            seven,
        ],
        "anthropic-signature-not-a-string": [
            *turns,
            _compaction(
                "b0000007",
                "b0000006",
                7,
                "b0000005",
                None,
                {**signed, "signature": 5, "filesText": "F"},
            ),
            seven,
        ],
        "snapshot-both-providers": [*turns, snapshot("b0000004", preserveData=both), seven],
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
            cases = [
                {
                    "keep_recent": k,
                    **{f: v for f, v in inplace[k][str(path)].items() if f != "path"},
                }
                for k in KEEP_RECENT
            ]
            target = path.with_suffix(f"{suffix}-inplace.json")
            if not (
                target.exists()
                and _but_the_run(json.loads(target.read_text())) == _but_the_run(cases)
            ):
                write_json(target, cases)  # kept when only the run's id and time would change


def _but_the_run(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """In-place outcomes without what differs from run to run: the entry's id and time, and
    the time of the summary it makes."""
    kept = json.loads(json.dumps(cases))
    for case in kept:
        if "entry" in case:
            case["entry"] |= {"id": None, "timestamp": None}
            case["context"]["messages"][0]["timestamp"] = None
    return kept


def write_json(path: Path, value: Any) -> None:
    path.write_text(json.dumps(value, indent=1, ensure_ascii=False), encoding="utf-8")


def difference(a: dict[str, Any], b: dict[str, Any], first: str = "18.2.3") -> str | None:
    if "error" in a or "error" in b:
        return (
            None
            if "error" in a and "error" in b
            else f"refused by {first if 'error' in a else 'the release'}"
        )
    found = first_difference(a["context"], b["context"], "context")
    if found is None and key_orders(a["context"]) != key_orders(b["context"]):
        found = "context: the same values, keys in another order"
    return found


def kind(found: str) -> str:
    """A difference without its indices and values: what kind of difference it is."""
    where, _, what = found.partition(":")
    return re.sub(r"\[\d+\]", "[]", where) + ":" + what.split("!=")[0][:40]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("dir", type=Path)
    for dialect in sessiongen.DIALECTS:
        parser.add_argument(f"--{dialect}", type=int, default=0)
    parser.add_argument("--first", type=int, default=0)
    parser.add_argument("--fixtures", type=Path, default=FIXTURES)
    parser.add_argument("--lib", type=Path, default=RELEASE)
    parser.add_argument("--save", type=Path)
    parser.add_argument("--ours", action="store_true")
    parser.add_argument("--variants", action="store_true")
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
    variants = write_variants(args.dir, corpus) if args.variants else []
    files = [*fixtures, *corpus, *variants]
    new = run(files, args.lib.resolve())
    old = {str(f): our_record(f) for f in files} if args.ours else run(files, None)
    first = "ours" if args.ours else "18.2.3"
    kinds: Counter[str] = Counter()
    unequal = 0
    groups = (("fixtures", fixtures), ("corpus", corpus), ("variants", variants))
    for group, paths in groups:
        equal = refused = deliberate = opened = 0
        for path in paths:
            a, b = old[str(path)], new[str(path)]
            refused += "error" in a and "error" in b
            if args.ours and "error" in b and "error" not in a:
                opened += 1  # nothing to compare: the agent cannot build a context
                continue
            if args.ours and "context" in b:
                b = {"context": js_numbers(b["context"])}
            if args.ours and _deliberate_model(path, a, b):
                deliberate += 1
                a = {**a, "context": {**a["context"], "model": b["context"]["model"]}}
            found = difference(a, b, first)
            if found is None:
                equal += 1
            else:
                kinds[kind(found)] += 1
                print(f"DIFF {path}: {found}"[:400])
        unequal += len(paths) - opened - equal
        line = f"== {group}: equal {equal}/{len(paths) - opened} (both refuse {refused}"
        if args.ours:
            line += f"; a pi-style model read on purpose {deliberate}; the release refuses"
            line += f" what we read {opened}, not compared"
        print(line + ")")
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
    return 1 if args.ours and unequal else 0


def our_record(path: Path) -> dict[str, Any]:
    """Ours, in the oracle's shape: ``{"context": …}``, or ``{"error": …}`` on a refusal.
    Numbers compare by value: a message passed on as the file has it keeps ``0.0`` where
    JavaScript writes ``0`` (docs/session-format.md §8.2)."""
    printed = ours(path, "omp")
    return {"error": printed["error"]} if "error" in printed else {"context": js_numbers(printed)}


def _deliberate_model(path: Path, a: dict[str, Any], b: dict[str, Any]) -> bool:
    if "context" not in a or "context" not in b:
        return False
    return a["context"]["model"] != b["context"]["model"] and pi_style_model(path) is not None


def write_variants(folder: Path, corpus: list[Path]) -> list[Path]:
    """``anthropic_variant`` of every generated omp file that has a compaction, as
    ``snap-<seed>.jsonl`` beside it."""
    written = []
    for path in corpus:
        if not path.name.startswith("omp-"):
            continue
        seed = int(path.stem.split("-")[1])
        variant = anthropic_variant(path.read_bytes(), seed)
        if variant is not None:
            target = folder / f"snap-{seed:04d}.jsonl"
            target.write_bytes(variant)
            written.append(target)
    return written


def anthropic_variant(data: bytes, seed: int) -> bytes | None:
    """The session with each compaction made an Anthropic one, at random: a payload on an
    ordinary compaction, a snapshot (with or without the payload), or left as it was. None
    when the session has no compaction."""
    rng = random.Random(seed)
    lines = data.split(b"\n")  # not splitlines: a line may hold U+2028 as it is
    entries: list[Any] = []
    for text in lines:
        try:
            entries.append(json.loads(text))
        except ValueError:
            entries.append(None)  # passed on as it is
    by_id = {e["id"]: e for e in entries if isinstance(e, dict) and isinstance(e.get("id"), str)}
    changed = False
    for at, entry in enumerate(entries):
        if not (isinstance(entry, dict) and entry.get("type") == "compaction"):
            continue
        how = rng.choice(["as it was", "payload", "snapshot", "snapshot", "bare snapshot"])
        if how == "as it was":
            continue
        changed = True
        if how != "bare snapshot":
            entry["preserveData"] = {"anthropicCompaction": _payload(rng)}
        if how != "payload":
            entry["firstKeptEntryId"] = ""
            entry["providerReplayThroughEntryId"] = _through(rng, entry, entries, at, by_id)
        lines[at] = json.dumps(entry, separators=(",", ":")).encode()
    return b"\n".join(lines) if changed else None


def _payload(rng: random.Random) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "provider": rng.choice(["anthropic", "anthropic", "anthropic", ""]),
        "content": rng.choice(["The signed summary.", "C", "C", ""]),
    }
    signature = rng.choice(["sig-" + str(rng.getrandbits(32)), "", 7, None, "ABSENT"])
    if signature != "ABSENT":
        payload["signature"] = signature
    for key, value in (("encryptedContent", "E"), ("filesText", "F"), ("model", "claude")):
        if rng.random() < 0.4:
            payload[key] = rng.choice([value, ""])
    if rng.random() < 0.3:
        payload["usedTokens"] = rng.randrange(100, 9000)
    return payload


def _through(
    rng: random.Random, entry: dict[str, Any], entries: list[Any], at: int, by_id: dict[str, Any]
) -> str:
    """The entry a snapshot replays through: mostly an ancestor of the compaction."""
    ancestors: list[str] = []
    node = entry.get("parentId")
    while isinstance(node, str) and node in by_id and node not in ancestors:
        ancestors.append(node)
        node = by_id[node].get("parentId")
    others = [i for i in by_id if i not in ancestors and i != entry.get("id")]
    later = [e["id"] for e in entries[at + 1 :] if isinstance(e, dict) and e.get("id") in by_id]
    where = rng.choice(["ancestor"] * 5 + ["parent", "parent", "later", "other", "self", "none"])
    if where == "ancestor" and ancestors:
        return rng.choice(ancestors)
    if where == "parent" and ancestors:
        return ancestors[0]
    if where == "later" and later:
        return rng.choice(later)
    if where == "other" and others:
        return rng.choice(others)
    if where == "self":
        return str(entry.get("id"))
    return f"{rng.getrandbits(32):08x}"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
