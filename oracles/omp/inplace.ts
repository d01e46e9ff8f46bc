// Oracle: oh-my-pi (@oh-my-pi/pi-coding-agent 18.2.3, or the release $OMP_LIB names) in-place handoff.
//
// Usage: [OMP_LIB=...] DOC=document.md [KEEP=20000] node_modules/.bin/bun inplace.ts FILE.jsonl [...]
//
// For each input file, what the agent's own `/handoff` (SessionMaintenance.handoff) would
// append, given the document in $DOC: copy the file into a private temp folder, open the copy
// with omp's SessionManager, run the agent's prepareCompaction on the branch with the handoff
// method's settings (keepRecentTokens $KEEP, default 20,000; no model, so its byte estimate),
// build the summary and details as handoffSummaryFromDocument does (computeFileLists,
// upsertFileOperations), project tokensAfter as #projectCompactionContextTokens does (no
// system prompt, no tools), append with the manager's own appendCompaction, and print:
//   {"path", "leaf": <leaf id before>, "branch": [<ids, root to leaf>], "entry": <the line
//    the agent wrote>, "context": <its buildSessionContext after>}
// or {"path", "error": "<the agent's message>"} ("Nothing to hand off (...)" among them).
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
const {
	SessionManager,
	buildSessionContext,
	convertToLlm,
	resolveMethodSettings,
	prepareCompaction,
	DEFAULT_COMPACTION_SETTINGS,
	computeFileLists,
	upsertFileOperations,
	Tokenizer,
} = await loadOmp();

const document = fs.readFileSync(process.env.DOC ?? "", "utf8");
const keepRecentTokens = Number(process.env.KEEP ?? "20000");
const settings = resolveMethodSettings({ ...DEFAULT_COMPACTION_SETTINGS, keepRecentTokens } as never, "handoff");

let n = 0;
const out: string[] = [];
for (const original of process.argv.slice(2)) {
	const dir = path.join(work, `f${n++}`);
	fs.mkdirSync(dir, { recursive: true });
	const copy = path.join(dir, path.basename(original));
	let line: Record<string, unknown>;
	let manager: any;
	try {
		fs.copyFileSync(original, copy);
		manager = await SessionManager.open(copy, dir, undefined, { suppressBreadcrumb: true });
		const branch = manager.getBranch();
		if (branch.filter((e: any) => e.type === "message").length < 2) throw new Error("Nothing to hand off (no messages yet)");
		const preparation = prepareCompaction(branch, settings);
		if (!preparation) throw new Error("Nothing to hand off (already compacted)");
		const { readFiles, modifiedFiles } = computeFileLists(preparation.fileOps);
		const summary = upsertFileOperations(document, readFiles, modifiedFiles, preparation.fileOps.read);
		const details = { readFiles, modifiedFiles };
		const leaf = branch.at(-1);
		const pending = {
			type: "compaction",
			id: `${leaf?.id}:compaction-tokens-projection`,
			parentId: leaf?.id ?? null,
			timestamp: new Date().toISOString(),
			summary,
			shortSummary: undefined,
			firstKeptEntryId: preparation.firstKeptEntryId,
			tokensBefore: preparation.tokensBefore,
			method: "handoff",
			details,
			preserveData: undefined,
			providerReplayThroughEntryId: undefined,
		};
		const rebuilt = buildSessionContext([...branch, pending] as never);
		const tokensAfter = new Tokenizer().countMessages(convertToLlm(rebuilt.messages), {
			excludeEncryptedReasoning: true,
		});
		manager.appendCompaction(summary, undefined, preparation.firstKeptEntryId, preparation.tokensBefore, {
			details,
			fromExtension: false,
			preserveData: undefined,
			method: "handoff",
			providerReplayThroughEntryId: undefined,
			tokensAfter,
		});
		const ctx = manager.buildSessionContext();
		await manager.close();
		manager = undefined;
		const lines = fs.readFileSync(copy, "utf8").split("\n").filter(l => l.trim());
		line = {
			path: original,
			leaf: leaf?.id ?? null,
			branch: branch.map((e: any) => e.id),
			entry: JSON.parse(lines[lines.length - 1]),
			context: { messages: ctx.messages, thinkingLevel: ctx.thinkingLevel, model: ctx.models?.default ?? null },
		};
	} catch (err) {
		line = { path: original, error: err instanceof Error ? err.message : String(err) };
	}
	try {
		await manager?.close();
	} catch {}
	out.push(`${JSON.stringify(line)}\n`);
	if (out.length >= 64) {
		writeAll(out.join(""));
		out.length = 0;
	}
	fs.rmSync(dir, { recursive: true, force: true });
}
writeAll(out.join(""));
fs.rmSync(work, { recursive: true, force: true });
process.exit(0);
