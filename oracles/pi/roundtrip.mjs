// Oracle: what pi (@earendil-works/pi-coding-agent 1.6.0) writes when it OPENS
// a session file and APPENDS to it.
//
// Usage: node roundtrip.mjs [--text TEXT] FILE.jsonl [FILE.jsonl ...]
//
// For each input file: copy it into a private temp folder, open the copy with
// SessionManager.open() (pi rewrites a v1/v2 file in place right away when it
// migrates it), append one user message with SessionManager.appendMessage(),
// and print one JSON line:
//   {"path": <original path>, "rewritten": <the copy's bytes after open+append, as a UTF-8 string>}
// or {"path": ..., "error": "<message>"} when opening/appending throws.
// The appended message is {"role":"user","content":[{"type":"text","text":TEXT}],"timestamp":<now ms>}
// (TEXT defaults to "roundtrip"); its entry id and timestamp are fresh each run.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const work = fs.mkdtempSync(path.join(os.tmpdir(), "pi-oracle-rt-"));
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

const args = process.argv.slice(2);
let text = "roundtrip";
const files = [];
for (let i = 0; i < args.length; i++) {
	if (args[i] === "--text") text = args[++i] ?? "";
	else files.push(args[i]);
}

let n = 0;
for (const original of files) {
	const dir = path.join(work, `f${n++}`);
	fs.mkdirSync(dir, { recursive: true });
	const copy = path.join(dir, path.basename(original));
	let line;
	try {
		fs.copyFileSync(original, copy);
		const manager = SessionManager.open(copy, dir);
		manager.appendMessage({ role: "user", content: [{ type: "text", text }], timestamp: Date.now() });
		line = { path: original, rewritten: fs.readFileSync(copy, "utf8") };
	} catch (err) {
		line = { path: original, error: err instanceof Error ? err.message : String(err) };
	}
	writeAll(`${JSON.stringify(line)}\n`);
	fs.rmSync(dir, { recursive: true, force: true });
}
fs.rmSync(work, { recursive: true, force: true });
