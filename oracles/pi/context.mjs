// Oracle: pi (@earendil-works/pi-coding-agent 1.6.0) session context.
//
// Usage: node context.mjs FILE.jsonl [FILE.jsonl ...]
//
// For each input file: copy it into a private temp folder (opening may migrate
// and rewrite it), open the copy with pi's own SessionManager.open(), call
// buildSessionContext() and print one JSON line:
//   {"path": <original path>, "context": {"messages": [...], "thinkingLevel": ..., "model": "provider/modelId" | null}}
// or {"path": ..., "error": "<message>"} when opening throws.
//
// pi's context gives `model` as {provider, modelId} (or null); it is printed
// as the string `${provider}/${modelId}`.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const work = fs.mkdtempSync(path.join(os.tmpdir(), "pi-oracle-"));
// Keep pi's agent dir out of the user's home (read when modules load).
process.env.PI_CODING_AGENT_DIR = path.join(work, "agent");
delete process.env.PI_CODING_AGENT_SESSION_DIR;

// Write to stdout synchronously and completely (stdout may be a non-blocking pipe).
function writeAll(text) {
	const buf = Buffer.from(text, "utf8");
	let off = 0;
	while (off < buf.length) {
		try {
			off += fs.writeSync(1, buf, off, buf.length - off);
		} catch (err) {
			if (err.code === "EAGAIN") {
				Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1);
				continue;
			}
			throw err;
		}
	}
}

const smPath = path.join(here, "node_modules/@earendil-works/pi-coding-agent/dist/core/session-manager.js");
const { SessionManager } = await import(pathToFileURL(smPath).href);

const modelString = (m) => (m == null ? null : `${m.provider}/${m.modelId}`);

let n = 0;
const out = [];
for (const original of process.argv.slice(2)) {
	const dir = path.join(work, `f${n++}`);
	fs.mkdirSync(dir, { recursive: true });
	const copy = path.join(dir, path.basename(original));
	let line;
	try {
		fs.copyFileSync(original, copy);
		const manager = SessionManager.open(copy, dir);
		const ctx = manager.buildSessionContext();
		line = {
			path: original,
			context: { messages: ctx.messages, thinkingLevel: ctx.thinkingLevel, model: modelString(ctx.model) },
		};
	} catch (err) {
		line = { path: original, error: err instanceof Error ? err.message : String(err) };
	}
	out.push(`${JSON.stringify(line)}\n`);
	if (out.length >= 64) {
		writeAll(out.join(""));
		out.length = 0;
	}
	fs.rmSync(dir, { recursive: true, force: true });
}
if (out.length) writeAll(out.join(""));
fs.rmSync(work, { recursive: true, force: true });
