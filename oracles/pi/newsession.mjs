// Oracle: the new session a handoff starts, and a model switch in an existing session, written
// by pi's own SessionManager (@earendil-works/pi-coding-agent 1.6.0), and what pi's picker,
// `--continue` and resume then make of the file.
//
// Usage: node newsession.mjs [SPEC]
//   SPEC is a JSON object, given as the argument itself ("{...}"), as a file path, or on stdin.
//   Prints one JSON object. Runs in a private HOME (spec.home: a new or empty folder, so that the
//   bytes name a fixed path; default: a temporary one, deleted at the end), with pi's agent dir
//   $HOME/.pi/agent holding models.json (the providers anthropic, openai, loopback on 127.0.0.1:9,
//   nothing is sent) and settings.json (default model loopback/default-model, as
//   oracles/agents.py configures pi).
//
// Spec, case "new" (the default):
//   cwd            the project folder C (made if missing); default /tmp/handoff-oracle-project
//   parentSession  P, the header's parentSession; or parentFile: a session file copied into C's
//                  sessions folder as the old session B (mtime an hour back), P its copy's path
//   model, thinkingLevel, text, title: M ("provider/id"), T, the handoff document, the name X
//   steps          the calls, in order; default ["model", "thinking", "custom", "title"]:
//                  "model"    sm.appendModelChange(provider, modelId)   (core/session-manager.js:872)
//                  "thinking" sm.appendThinkingLevelChange(T)            (:860)
//                  "agent"    createAgentSession({cwd, sessionManager: sm, model: M, thinkingLevel: T}):
//                             pi's sdk writes a new session's model and level itself (core/sdk.js:296-302)
//                  "custom"   sm.appendCustomMessageEntry("handoff", text, true)   (:968)
//                  "title"    sm.appendSessionInfo(X) (:935), what AgentSession.setSessionName does
//                             (agent-session.js:3351; /name, an extension's pi.setSessionName)
//                  "user"     sm.appendMessage({role: "user", ...}), spec.userText (the first message
//                             that makes pi write the file)
//   The manager is made as pi's runtime makes a new session with a parent
//   (agent-session-runtime.js:166-178): SessionManager.create(C, dir), then
//   sm.newSession({parentSession: P}). pi writes nothing until the session holds a user or
//   assistant message (_persist, session-manager.js:804); `written` says whether it did.
//   write          "rewrite" (default): when pi has written nothing, the bytes are made by pi's own
//                  whole-file writer sm._rewriteFile() (JSON.stringify of each entry and "\n", the
//                  same loop _persist writes a session's first flush with); "none": leave it
//   ablate         true: also judge variants of the written file (entries dropped)
// Spec, case "append":
//   file           a session file; a copy is put in C's sessions folder and opened
//   model          the model switched to
//   via            "agent" (default): createAgentSession on the copy, then session.setModel(model)
//                  as /model does (agent-session.js:2119: model_change, then a
//                  thinking_level_change if the level changes); "manager": sm.appendModelChange only
//
// Output: version, case, file, steps, written, bytes, lines (each line parsed, keys in order), and
//   new:    listing (SessionManager.list, continueRecent: what the picker shows), reopened (what
//           createAgentSession restores from the file), variants
//   append: appended, lines, resume (model, thinking level and fallback message pi's
//           createAgentSession gives on the copy, before and after)
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

async function readSpec() {
	const arg = process.argv[2];
	if (arg === undefined || arg === "-") {
		const chunks = [];
		for await (const c of process.stdin) chunks.push(c);
		return JSON.parse(Buffer.concat(chunks).toString("utf8"));
	}
	if (arg.trimStart().startsWith("{")) return JSON.parse(arg);
	return JSON.parse(fs.readFileSync(arg, "utf8"));
}

const spec = await readSpec();
const kind = spec.case ?? "new";

let home;
let removeHome = false;
if (spec.home) {
	home = path.resolve(spec.home);
	const there = fs.existsSync(home) ? fs.readdirSync(home).filter((n) => n !== ".bun") : [];
	if (there.length > 0) throw new Error(`spec.home ${home} is not empty: give a new folder`);
	fs.mkdirSync(home, { recursive: true });
} else {
	home = fs.mkdtempSync(path.join(os.tmpdir(), "pi-oracle-ns-"));
	removeHome = true;
}
process.env.HOME = home;
const agentDir = path.join(home, ".pi", "agent");
process.env.PI_CODING_AGENT_DIR = agentDir;
delete process.env.PI_CODING_AGENT_SESSION_DIR;

// The models pi resolves (createAgentSession), as oracles/agents.py's configure writes them.
const MODELS = { anthropic: ["claude-sonnet-4-5"], openai: ["gpt-4o-mini"], loopback: ["default-model"] };
for (const m of [spec.model].filter(Boolean)) {
	const [p, ...id] = m.split("/");
	MODELS[p] = [...new Set([...(MODELS[p] ?? []), id.join("/")])];
}
fs.mkdirSync(agentDir, { recursive: true });
const providers = Object.fromEntries(
	Object.entries(MODELS).map(([provider, ids]) => [
		provider,
		{
			baseUrl: "http://127.0.0.1:9/v1",
			apiKey: "sk-loopback",
			api: "openai-completions",
			models: ids.map((id) => ({ id, reasoning: true, input: ["text"], contextWindow: 200000, maxTokens: 16384 })),
		},
	]),
);
fs.writeFileSync(path.join(agentDir, "models.json"), `${JSON.stringify({ providers }, null, 2)}\n`);
fs.writeFileSync(
	path.join(agentDir, "settings.json"),
	`${JSON.stringify({ defaultProvider: "loopback", defaultModel: "default-model" })}\n`,
);

const here = path.dirname(fileURLToPath(import.meta.url));
const dist = path.join(here, "node_modules/@earendil-works/pi-coding-agent/dist");
const { SessionManager, getDefaultSessionDir } = await import(pathToFileURL(path.join(dist, "core/session-manager.js")).href);
const { createAgentSession } = await import(pathToFileURL(path.join(dist, "core/sdk.js")).href);
const { VERSION } = await import(pathToFileURL(path.join(dist, "config.js")).href);

const cwd = path.resolve(spec.cwd ?? "/tmp/handoff-oracle-project");
fs.mkdirSync(cwd, { recursive: true });
const sessionDir = getDefaultSessionDir(cwd);
if (!sessionDir.startsWith(`${home}/`)) throw new Error(`sessions folder ${sessionDir} is outside HOME ${home}`);
fs.mkdirSync(sessionDir, { recursive: true });

const rel = (p) => (p == null ? null : p.startsWith(`${home}/`) ? `$HOME/${p.slice(home.length + 1)}` : p);
const read = (p) => (p && fs.existsSync(p) ? fs.readFileSync(p, "utf8") : null);
const modelString = (m) => (m == null ? null : `${m.provider}/${m.id ?? m.modelId}`);

function parseLines(text) {
	if (text === null) return [];
	const lines = text.split("\n");
	if (lines[lines.length - 1] === "") lines.pop();
	return lines.map((line) => {
		try {
			const value = JSON.parse(line);
			return { bytes: Buffer.byteLength(line, "utf8") + 1, keys: Object.keys(value), value };
		} catch {
			return { bytes: Buffer.byteLength(line, "utf8") + 1, unparsed: line };
		}
	});
}

async function resumeFacts(file) {
	// What pi restores when it resumes the file (as pi/resume.mjs): createAgentSession on SessionManager.open.
	try {
		const manager = SessionManager.open(path.resolve(file));
		const ctx = manager.buildSessionContext();
		const branch = manager.getBranch();
		const facts = {
			sessionName: manager.getSessionName() ?? null,
			header: manager.getHeader?.() ?? null,
			contextModel: modelString(ctx.model),
			contextThinkingLevel: ctx.thinkingLevel ?? null,
			messages: ctx.messages.map((m) => m.role + (m.customType ? `:${m.customType}` : "")),
		};
		const before = read(file);
		const { session, modelFallbackMessage } = await createAgentSession({ cwd, sessionManager: manager });
		facts.model = modelString(session.model);
		facts.thinkingLevel = session.thinkingLevel ?? null;
		facts.modelFallbackMessage = modelFallbackMessage ?? null;
		const after = read(file);
		facts.resumeAppended = after !== null && before !== null && after.startsWith(before) ? after.slice(before.length) : after === before ? "" : after;
		session.dispose?.();
		facts.branchTypes = branch.map((e) => e.type);
		return facts;
	} catch (err) {
		return { error: err instanceof Error ? err.message : String(err) };
	}
}

async function listing(dir, names, sessionDirArg) {
	const tag = (p) => (p == null ? null : (names[path.resolve(p)] ?? rel(p)));
	const picker = (await SessionManager.list(cwd, sessionDirArg)).map((s) => ({
		session: tag(s.path),
		name: s.name ?? null,
		firstMessage: s.firstMessage,
		shown: s.name ?? s.firstMessage,
		messageCount: s.messageCount,
		modified: s.modified.toISOString(),
	}));
	const continued = SessionManager.continueRecent(cwd, sessionDirArg);
	const file = continued.getSessionFile();
	return {
		picker,
		continue: { session: file && fs.existsSync(file) ? tag(file) : "(a new session)", sessionName: continued.getSessionName() ?? null },
	};
}

function dropEntries(text, drop) {
	const entries = text.split("\n").filter((l) => l !== "").map((l) => JSON.parse(l));
	const parentOf = new Map();
	for (const e of entries) if (e.type !== "session" && drop(e)) parentOf.set(e.id, e.parentId ?? null);
	const resolve = (id) => {
		while (id !== null && parentOf.has(id)) id = parentOf.get(id);
		return id;
	};
	return entries
		.filter((e) => e.type === "session" || !drop(e))
		.map((e) => (e.type !== "session" && parentOf.has(e.parentId) ? { ...e, parentId: resolve(e.parentId) } : e))
		.map((e) => `${JSON.stringify(e)}\n`)
		.join("");
}

const VARIANTS = {
	"as written": () => false,
	"no session_info": (e) => e.type === "session_info",
	"no custom_message": (e) => e.type === "custom_message",
	"no model_change, no thinking_level_change": (e) => e.type === "model_change" || e.type === "thinking_level_change",
	"header only": (e) => e.type !== "session",
};

let n = 0;
async function judgeVariants(text, parent) {
	const out = [];
	for (const [name, drop] of Object.entries(VARIANTS)) {
		const body = dropEntries(text, drop);
		const dir = path.join(home, "variants", String(n++));
		fs.mkdirSync(dir, { recursive: true });
		const names = {};
		if (parent) {
			const b = path.join(dir, path.basename(parent));
			fs.copyFileSync(parent, b);
			const old = new Date(Date.now() - 3600_000);
			fs.utimesSync(b, old, old);
			names[path.resolve(b)] = "B";
		}
		const file = path.join(dir, "2099-01-01T00-00-00-000Z_variant.jsonl");
		fs.writeFileSync(file, body);
		names[path.resolve(file)] = "N";
		const facts = await listing(dir, names, dir);
		const row = facts.picker.find((r) => r.session === "N");
		const opened = await resumeFacts(file);
		out.push({
			variant: name,
			types: body.split("\n").filter(Boolean).map((l) => JSON.parse(l).type),
			listed: !!row,
			shown: row?.shown ?? null,
			continue: facts.continue.session,
			resumes: opened.error
				? { error: opened.error }
				: { model: opened.model, thinkingLevel: opened.thinkingLevel, modelFallbackMessage: opened.modelFallbackMessage },
		});
	}
	return out;
}

let result;
if (kind === "new") {
	const names = {};
	let parentSession = spec.parentSession;
	let parentCopy = null;
	if (spec.parentFile) {
		parentCopy = path.join(sessionDir, path.basename(spec.parentFile));
		fs.copyFileSync(spec.parentFile, parentCopy);
		const old = new Date(Date.now() - 3600_000);
		fs.utimesSync(parentCopy, old, old);
		parentSession = parentCopy;
		names[path.resolve(parentCopy)] = "B";
	}
	const [provider, ...rest] = spec.model.split("/");
	const modelId = rest.join("/");
	const sm = SessionManager.create(cwd, sessionDir);
	const file = sm.newSession({ parentSession });
	names[path.resolve(file)] = "N";
	const size = () => (fs.existsSync(file) ? fs.statSync(file).size : null);
	const steps = [{ call: "SessionManager.create(cwd, dir); newSession({parentSession})", exists: fs.existsSync(file), size: size() }];
	const record = (call) => steps.push({ call, exists: fs.existsSync(file), size: size() });
	const disposers = [];
	for (const step of spec.steps ?? ["model", "thinking", "custom", "title"]) {
		if (step === "model") {
			sm.appendModelChange(provider, modelId);
			record(`appendModelChange(${JSON.stringify(provider)}, ${JSON.stringify(modelId)})`);
		} else if (step === "thinking") {
			sm.appendThinkingLevelChange(spec.thinkingLevel);
			record(`appendThinkingLevelChange(${JSON.stringify(spec.thinkingLevel)})`);
		} else if (step === "agent") {
			const probe = await createAgentSession({ cwd, sessionManager: SessionManager.inMemory(cwd) });
			const model = probe.session.modelRuntime.getModel(provider, modelId);
			probe.session.dispose?.();
			const { session } = await createAgentSession({ cwd, sessionManager: sm, model, thinkingLevel: spec.thinkingLevel });
			disposers.push(() => session.dispose?.());
			record(`createAgentSession({cwd, sessionManager, model: ${spec.model}, thinkingLevel: ${JSON.stringify(spec.thinkingLevel)}})`);
		} else if (step === "custom") {
			sm.appendCustomMessageEntry("handoff", spec.text, true);
			record('appendCustomMessageEntry("handoff", text, true)');
		} else if (step === "title") {
			sm.appendSessionInfo(spec.title);
			record("appendSessionInfo(title)");
		} else if (step === "user") {
			sm.appendMessage({ role: "user", content: [{ type: "text", text: spec.userText ?? "go on" }], timestamp: Date.now() });
			record("appendMessage(user)");
		} else throw new Error(`unknown step ${step}`);
	}
	for (const d of disposers) d();
	const written = fs.existsSync(file);
	const listingAsLeft = await listing(sessionDir, names);
	if (!written && (spec.write ?? "rewrite") === "rewrite") {
		sm._rewriteFile();
		record("_rewriteFile()");
	}
	const bytes = read(file);
	result = {
		version: VERSION,
		case: kind,
		home,
		sessionDir: rel(sessionDir),
		file: rel(file),
		parentSession: parentSession ?? null,
		steps,
		written,
		entries: sm.getEntries().length + 1,
		bytes,
		lines: parseLines(bytes),
		listingAsLeft: written ? undefined : listingAsLeft,
		listing: bytes === null ? null : await listing(sessionDir, names),
		reopened: bytes === null ? null : await resumeFacts(file),
	};
	if (spec.ablate && bytes !== null) result.variants = await judgeVariants(bytes, parentCopy);
} else if (kind === "append") {
	const copy = path.join(sessionDir, path.basename(spec.file));
	fs.copyFileSync(spec.file, copy);
	const original = read(copy);
	const pre = await resumeFacts(copy);
	const before = read(copy); // pi's resume may have appended a thinking_level_change already
	const [provider, ...rest] = spec.model.split("/");
	const modelId = rest.join("/");
	const via = spec.via ?? "agent";
	const calls = [];
	if (via === "agent") {
		const sm = SessionManager.open(copy);
		const { session } = await createAgentSession({ cwd, sessionManager: sm });
		const model = session.modelRuntime.getModel(provider, modelId);
		if (!model) throw new Error(`no model ${spec.model}`);
		calls.push(`createAgentSession({sessionManager: open(copy)}) (model ${modelString(session.model)}, thinking ${session.thinkingLevel})`);
		await session.setModel(model);
		calls.push(`session.setModel(${spec.model})`);
		session.dispose?.();
	} else {
		const sm = SessionManager.open(copy);
		sm.appendModelChange(provider, modelId);
		calls.push(`appendModelChange(${JSON.stringify(provider)}, ${JSON.stringify(modelId)})`);
	}
	const after = read(copy);
	const post = await resumeFacts(copy);
	result = {
		version: VERSION,
		case: kind,
		home,
		sessionDir: rel(sessionDir),
		file: rel(copy),
		via,
		calls,
		beforeSize: Buffer.byteLength(original, "utf8"),
		resumeBeforeAppended: before.startsWith(original) ? before.slice(original.length) : null,
		prefixKept: after.startsWith(before),
		appended: after.startsWith(before) ? after.slice(before.length) : null,
		bytes: after.startsWith(before) ? null : after,
		lines: parseLines(after.startsWith(before) ? after.slice(before.length) : after),
		resume: { before: pre, after: post },
	};
} else {
	throw new Error(`unknown case ${kind}`);
}

fs.writeSync(1, `${JSON.stringify(result)}\n`);
if (removeHome) fs.rmSync(home, { recursive: true, force: true });
process.exit(0);
