#!/usr/bin/env python3
"""Compare what an oracle printed (JSON lines of ``context.ts`` / ``context.mjs``).

    compare.py fixtures OUT.jsonl [SUFFIX]   each file's messages against the *.context.json
                                             (or SUFFIX, e.g. .pi-context.json) beside it
    compare.py oracles A.jsonl B.jsonl   two oracles' outputs, file by file

Exit status 0 when every compared file's ``messages`` are equal.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def first_difference(a: Any, b: Any, where: str = "messages") -> str | None:
    """Where ``a`` and ``b`` first differ, or None when they are equal."""
    if type(a) is not type(b):
        return f"{where}: {json.dumps(a)[:150]} != {json.dumps(b)[:150]}"
    if isinstance(a, dict):
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b:
                return f"{where}.{key}: only in {'the second' if key not in a else 'the first'}"
            found = first_difference(a[key], b[key], f"{where}.{key}")
            if found:
                return found
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{where}: length {len(a)} != {len(b)}"
        for index, (x, y) in enumerate(zip(a, b)):
            found = first_difference(x, y, f"{where}[{index}]")
            if found:
                return found
        return None
    return None if a == b else f"{where}: {json.dumps(a)[:150]} != {json.dumps(b)[:150]}"


def js_numbers(value: Any) -> Any:
    """``value`` with integral floats as integers: JavaScript writes ``0.0`` as ``0``."""
    if isinstance(value, dict):
        return {k: js_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [js_numbers(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def read(path: str) -> dict[str, Any]:
    with open(path) as lines:
        return {record["path"]: record for record in map(json.loads, lines)}


def compare(pairs: list[tuple[str, Any, Any]]) -> int:
    equal = 0
    for path, first, second in pairs:
        if "error" in first or "error" in second:
            both = "error" in first and "error" in second
            equal += both
            if not both:
                print(f"DIFF {path}: {first.get('error')!r} / {second.get('error')!r}"[:400])
            continue
        found = first_difference(first["context"]["messages"], second["context"]["messages"])
        if found:
            print(f"DIFF {path}: {found}"[:400])
        else:
            equal += 1
        for key in ("thinkingLevel", "model"):
            if first["context"].get(key) != second["context"].get(key):
                print(f"  {key}: {first['context'].get(key)!r} / {second['context'].get(key)!r}")
    print(f"messages equal: {equal}/{len(pairs)}")
    return 0 if equal == len(pairs) else 1


def main(args: list[str]) -> int:
    if args[:1] == ["fixtures"] and len(args) in (2, 3):
        suffix = args[2] if len(args) == 3 else ".context.json"
        pairs = []
        for path, record in read(args[1]).items():
            expected = Path(path).with_suffix(suffix)
            if expected.exists():
                pairs.append((path, record, {"context": json.loads(expected.read_text())}))
        return compare(pairs)
    if args[:1] == ["oracles"] and len(args) == 3:
        first, second = read(args[1]), read(args[2])
        return compare([(p, first[p], second[p]) for p in first if p in second])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
