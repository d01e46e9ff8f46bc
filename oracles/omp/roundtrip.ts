// Oracle: what oh-my-pi (@oh-my-pi/pi-coding-agent 18.2.3, or the release $OMP_LIB names)
// writes when it OPENS a session file and APPENDS to it.
//
// Usage: [OMP_LIB=...] node_modules/.bin/bun roundtrip.ts [--text TEXT] FILE.jsonl [FILE.jsonl ...]
//
// For each input file: copy it into a private temp folder, open the copy with
// SessionManager.open(), append one user message with the agent's own
// SessionManager.appendMessage() (the call the agent loop uses to record a
// user turn), close the manager (flushes the writer), and print one JSON line:
//   {"path": <original path>, "rewritten": <the copy's bytes after open+append, as a UTF-8 string>}
// or {"path": ..., "error": "<message>"} when opening/appending throws.
// The appended message is {"role":"user","content":[{"type":"text","text":TEXT}],"timestamp":<now ms>}
// (TEXT defaults to "roundtrip"); its entry id and timestamp are fresh each run.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

const work = fs.mkdtempSync(path.join(os.tmpdir(), "omp-oracle-rt-"));
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

const args = process.argv.slice(2);
let text = "roundtrip";
const files: string[] = [];
for (let i = 0; i < args.length; i++) {
	if (args[i] === "--text") text = args[++i] ?? "";
	else files.push(args[i]!);
}

let n = 0;
for (const original of files) {
	const dir = path.join(work, `f${n++}`);
	fs.mkdirSync(dir, { recursive: true });
	const copy = path.join(dir, path.basename(original));
	let line: Record<string, unknown>;
	let manager: any;
	try {
		fs.copyFileSync(original, copy);
		manager = await SessionManager.open(copy, dir, undefined, { suppressBreadcrumb: true });
		manager.appendMessage({ role: "user", content: [{ type: "text", text }], timestamp: Date.now() });
		await manager.flush();
		await manager.close();
		manager = undefined;
		line = { path: original, rewritten: fs.readFileSync(copy, "utf8") };
	} catch (err) {
		line = { path: original, error: err instanceof Error ? err.message : String(err) };
	}
	try {
		await manager?.close();
	} catch {}
	writeAll(`${JSON.stringify(line)}\n`);
	fs.rmSync(dir, { recursive: true, force: true });
}
fs.rmSync(work, { recursive: true, force: true });
process.exit(0);
