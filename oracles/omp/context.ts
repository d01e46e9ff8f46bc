// Oracle: oh-my-pi (@oh-my-pi/pi-coding-agent 18.2.3, or the release $OMP_LIB names) session context.
//
// Usage: [OMP_LIB=../omp-bundle/18.3.4/package/dist/lib.js] node_modules/.bin/bun context.ts FILE.jsonl [FILE.jsonl ...]
//
// For each input file: copy it into a private temp folder (opening may migrate
// and rewrite it), open the copy with omp's own SessionManager.open(), call
// buildSessionContext() and print one JSON line:
//   {"path": <original path>, "context": {"messages": [...], "thinkingLevel": ..., "model": "provider/id" | null}}
// or {"path": ..., "error": "<message>"} when opening throws.
//
// `model` is `context.models.default` (omp's SessionContext keeps the model as
// a role map of "provider/modelId" strings); null when there is none.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

// Keep omp's own state (agent dir, sessions, blobs, breadcrumbs, logs) out of
// the user's home: everything goes into a throw-away folder. Must be set before
// omp's modules are loaded (they read the environment at import time), hence
// the dynamic import below.
const work = fs.mkdtempSync(path.join(os.tmpdir(), "omp-oracle-"));
const home = path.join(work, "home");
fs.mkdirSync(home, { recursive: true });
process.env.HOME = home;
process.env.PI_CODING_AGENT_DIR = path.join(home, ".omp", "agent");
delete process.env.PI_CONFIG_DIR;
delete process.env.OMP_PROFILE;
delete process.env.PI_PROFILE;
for (const k of ["XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME"]) delete process.env[k];

// Write to stdout synchronously and completely (stdout may be a pipe; a plain
// process.stdout.write followed by process.exit can lose buffered output).
function writeAll(text: string): void {
	const buf = Buffer.from(text, "utf8");
	let off = 0;
	while (off < buf.length) {
		try {
			off += fs.writeSync(1, buf, off, buf.length - off);
		} catch (err) {
			if ((err as NodeJS.ErrnoException).code === "EAGAIN") {
				Bun.sleepSync(1);
				continue;
			}
			throw err;
		}
	}
}

const { loadOmp } = await import("./agent.ts");
const { SessionManager } = await loadOmp();

let n = 0;
const out: string[] = [];
const flushOut = () => {
	if (out.length) {
		writeAll(out.join(""));
		out.length = 0;
	}
};

for (const original of process.argv.slice(2)) {
	const dir = path.join(work, `f${n++}`);
	fs.mkdirSync(dir, { recursive: true });
	const copy = path.join(dir, path.basename(original));
	let line: Record<string, unknown>;
	let manager: any;
	try {
		fs.copyFileSync(original, copy);
		manager = await SessionManager.open(copy, dir, undefined, { suppressBreadcrumb: true });
		const ctx = manager.buildSessionContext();
		line = {
			path: original,
			context: {
				messages: ctx.messages,
				thinkingLevel: ctx.thinkingLevel,
				model: ctx.models?.default ?? null,
			},
		};
	} catch (err) {
		line = { path: original, error: err instanceof Error ? err.message : String(err) };
	}
	try {
		await manager?.close();
	} catch {}
	out.push(`${JSON.stringify(line)}\n`);
	if (out.length >= 64) flushOut();
	fs.rmSync(dir, { recursive: true, force: true });
}
flushOut();
fs.rmSync(work, { recursive: true, force: true });
process.exit(0);
