// Oracle: the new session a handoff starts, and a model switch in an existing session, written
// by oh-my-pi's own SessionManager (18.2.3, or the release $OMP_LIB names), and what the
// agent's picker, `--continue` and resume then make of the file.
//
// Usage: [OMP_LIB=...] node_modules/.bin/bun newsession.ts [SPEC]
//   SPEC is a JSON object, given as the argument itself ("{...}"), as a file path, or on stdin.
//   Prints one JSON object (below). Runs in a private HOME (spec.home: a new or empty folder, so
//   that the bytes name a fixed path; default: a temporary one, deleted at the end). Run it with
//   the environment's HOME set to the same folder (Bun's os.homedir() reads it at start).
//
// Spec, case "new" (the default):
//   cwd            the project folder C (made if missing); default /tmp/handoff-oracle-project
//   parentSession  P, the header's parentSession (any string); or
//   parentFile     a session file copied into C's sessions folder as the old session B, its
//                  mtime set an hour back; P is then that copy's path
//   model          M, "provider/id" (appendModelChange(M): role absent, resolvedModelIsFallback false,
//                  as the sdk writes a new session's model, sdk.ts:3767)
//   thinkingLevel  T (appendThinkingLevelChange(T, configured))
//   configured     the second argument; omitted (null in the file) as the sdk writes it for a new
//                  session (sdk.ts:3772); `/new` passes the level itself (agent-session.ts:8387)
//   serviceTier    for the step "serviceTier": appendServiceTierChange(value), default null (`/new`)
//   text           the handoff document: appendCustomMessageEntry("handoff", text, true,
//                  undefined, attribution) (attribution: spec.attribution, else the method's default)
//   title          X: await setSessionName(X, spec.titleSource ?? "auto")
//   steps          the calls, in order; default ["model", "thinking", "custom", "title"]; also
//                  "serviceTier", "rewrite" (await rewriteEntries(): a whole-file rewrite, which
//                  writes the header's title), "ensureOnDisk"
//   start          "newSession" (default): SessionManager.create(C) then
//                  await manager.newSession({parentSession: P}), as AgentSession.newSession (/new,
//                  an extension's ctx.newSession) does: the file is written at once. "create":
//                  SessionManager.create(C) only, as the sdk starts a session (no parentSession
//                  possible; nothing is written until an assistant message or ensureOnDisk)
//   ensureOnDisk   call await manager.ensureOnDisk() after the steps (default: only for "create")
//   terminal       $TMUX_PANE for the run (omp's terminal id "tmux-<terminal>"): the pointer the
//                  manager writes, and what continueRecent does with it; default none
//   rememberParent with parentFile and terminal: open B first (SessionManager.open), so that the
//                  terminal's pointer names B before N is made (pointerBefore)
//   ablate         true: also judge variants of the written file (lines dropped or changed; see
//                  VARIANTS below) with the same listing code
// Spec, case "append":
//   file           a session file; a copy of it is put in C's sessions folder and opened
//                  (SessionManager.open) as the agent resumes it
//   model          the model switched to: appendModelChange(model, role, false)
//   role           default "default", as AgentSession.setModel (`/model`, model-controls.ts:234)
//                  passes it; null: omitted, as cycling models does (model-controls.ts:439);
//                  "temporary": setModelTemporary
//   thinkingLevel  optional: then also appendThinkingLevelChange(level, level), as
//                  setThinkingLevel does when the level changes (model-controls.ts:549)
//
// Output: version, case, home, sessionDir, file (the session's path), steps (after each call:
// whether the file exists, its size), bytes (the file's text), lines (each physical line
// parsed, with its keys in order), and
//   new:    reopened (SessionManager.open of the file: its name, title source, header, context
//           models and thinking level), listing (SessionManager.list, listForPicker where the
//           version has it, isEmptySession, continueRecent, the terminal pointer), titleIndex
//           (the rows of history.db's title table), variants (with ablate)
//   append: before (bytes of the copy), appended (the new text at the end), resume (context
//           models and thinking level before and after, getLastModelChangeRole, the models
//           the agent tries to restore in order)
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

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

async function readSpec(): Promise<any> {
	const arg = process.argv[2];
	if (arg === undefined || arg === "-") return JSON.parse(await Bun.stdin.text());
	if (arg.trimStart().startsWith("{")) return JSON.parse(arg);
	return JSON.parse(fs.readFileSync(arg, "utf8"));
}

const spec = await readSpec();
const kind: string = spec.case ?? "new";

// --- isolation: a private HOME, no terminal unless the spec names one ------------------------------
let home: string;
let removeHome = false;
if (spec.home) {
	home = path.resolve(spec.home);
	// Bun may have made $HOME/.bun already when HOME is this folder; anything else is refused.
	const there = fs.existsSync(home) ? fs.readdirSync(home).filter(n => n !== ".bun") : [];
	if (there.length > 0) throw new Error(`spec.home ${home} is not empty: give a new folder`);
	fs.mkdirSync(home, { recursive: true });
} else {
	home = fs.mkdtempSync(path.join(os.tmpdir(), "omp-oracle-ns-"));
	removeHome = true;
}
// Bun's os.homedir() does not follow a HOME changed at run time, so the agent dir is named too.
process.env.HOME = home;
process.env.PI_CODING_AGENT_DIR = path.join(home, ".omp", "agent");
for (const k of [
	"PI_CONFIG_DIR",
	"OMP_PROFILE",
	"PI_PROFILE",
	"XDG_DATA_HOME",
	"XDG_STATE_HOME",
	"XDG_CACHE_HOME",
	"XDG_CONFIG_HOME",
	"ZELLIJ_PANE_ID",
	"ZELLIJ_SESSION_NAME",
	"TMUX_PANE",
	"CMUX_SURFACE_ID",
	"KITTY_WINDOW_ID",
	"WEZTERM_PANE",
	"TERM_SESSION_ID",
	"WT_SESSION",
])
	delete process.env[k];
if (spec.terminal) process.env.TMUX_PANE = String(spec.terminal);

const { loadOmp } = await import("./agent.ts");
const omp = await loadOmp();
const { SessionManager } = omp;

const cwd = path.resolve(spec.cwd ?? "/tmp/handoff-oracle-project");
fs.mkdirSync(cwd, { recursive: true });
const sessionDir: string = SessionManager.getDefaultSessionDir(cwd);
if (!sessionDir.startsWith(`${home}/`)) throw new Error(`sessions folder ${sessionDir} is outside HOME ${home}`);
fs.mkdirSync(sessionDir, { recursive: true });

const rel = (p: string | null | undefined) =>
	p == null ? null : p.startsWith(`${home}/`) ? `$HOME/${p.slice(home.length + 1)}` : p;
const read = (p: string) => (fs.existsSync(p) ? fs.readFileSync(p, "utf8") : null);

function parseLines(text: string | null): any[] {
	if (text === null) return [];
	const out: any[] = [];
	const lines = text.split("\n");
	if (lines[lines.length - 1] === "") lines.pop();
	for (const line of lines) {
		try {
			const value = JSON.parse(line);
			out.push({ bytes: Buffer.byteLength(line, "utf8") + 1, keys: Object.keys(value), value });
		} catch {
			out.push({ bytes: Buffer.byteLength(line, "utf8") + 1, unparsed: line });
		}
	}
	return out;
}

// The agent's own getRestorableSessionModels (session-context.ts:125) for 18.2.3; the bundles do not
// export it, and its source is the same in 18.2.9 and 18.3.4 (this copy of it).
function restorable(models: Record<string, string>, role: string | undefined): string[] {
	if (omp.getRestorableSessionModels) return omp.getRestorableSessionModels(models, role);
	const defaultModel = models.default;
	if (!role || role === "default" || role === "fallback") return defaultModel ? [defaultModel] : [];
	const roleModel = models[role];
	if (!roleModel) return defaultModel ? [defaultModel] : [];
	if (!defaultModel || roleModel === defaultModel) return [roleModel];
	return [roleModel, defaultModel];
}

async function openFacts(file: string): Promise<any> {
	const before = read(file);
	try {
		const manager = await SessionManager.open(file, undefined, undefined, { suppressBreadcrumb: true });
		const ctx = manager.buildSessionContext();
		const facts = {
			sessionName: manager.getSessionName() ?? null,
			titleSource: manager.titleSource ?? null,
			header: manager.getHeader?.() ?? null,
			models: ctx.models ?? null,
			thinkingLevel: ctx.thinkingLevel ?? null,
			lastModelChangeRole: manager.getLastModelChangeRole?.() ?? null,
			messages: ctx.messages.map((m: any) => m.role + (m.customType ? `:${m.customType}` : "")),
		};
		await manager.close();
		return { ...facts, rewrote: read(file) !== before };
	} catch (err) {
		return { error: err instanceof Error ? err.message : String(err) };
	}
}

// What the picker and `--continue` say about the sessions in `dir` for cwd.
async function listing(dir: string, names: Record<string, string>): Promise<any> {
	const tag = (p: string | null | undefined) => (p == null ? null : (names[path.resolve(p)] ?? rel(p)));
	const rows = (sessions: any[]) =>
		sessions.map((s: any) => ({
			session: tag(s.path),
			title: s.title ?? null,
			firstMessage: s.firstMessage,
			shown: s.title || s.firstMessage,
			assistantTurns: s.assistantTurns ?? null,
			status: s.status ?? null,
			messageCount: s.messageCount,
			empty: omp.isEmptySession ? omp.isEmptySession(s) : null,
		}));
	const list = rows(await SessionManager.list(cwd, dir));
	const picker =
		typeof SessionManager.listForPicker === "function"
			? rows(await SessionManager.listForPicker(cwd, dir))
			: list; // 18.2.3: `--resume` lists SessionManager.list (main.ts:1953)
	const continued = await SessionManager.continueRecent(cwd, dir);
	const file = continued.getSessionFile();
	const cont = {
		session: file && fs.existsSync(file) ? tag(file) : "(a new session)",
		sessionName: continued.getSessionName() ?? null,
	};
	await continued.close();
	return {
		pickerCall: typeof SessionManager.listForPicker === "function" ? "listForPicker" : "list",
		list,
		picker,
		continue: cont,
	};
}

function titleIndex(): any {
	const { Database } = require("bun:sqlite");
	const found: any[] = [];
	const walk = (d: string) => {
		for (const e of fs.readdirSync(d, { withFileTypes: true })) {
			const p = path.join(d, e.name);
			if (e.isDirectory()) walk(p);
			else if (e.name.endsWith(".db")) found.push(p);
		}
	};
	walk(home);
	return found.map(p => {
		const db = new Database(p, { readonly: true });
		try {
			const tables = db
				.query("SELECT name FROM sqlite_master WHERE type='table'")
				.all()
				.map((r: any) => r.name as string);
			const titled = tables.filter(t => /title|session/i.test(t));
			return {
				db: rel(p),
				tables,
				rows: Object.fromEntries(
					titled.map(t => [t, db.query(`SELECT * FROM "${t}"`).all().map(({ updated_at, ...r }: any) => r)]),
				),
			};
		} finally {
			db.close();
		}
	});
}

// --- variants of a written file, for what the listing needs ----------------------------------------
const SLOT_BYTES = 256;
// serializeTitleSlot (session-title-slot.ts), for the variants only; checked against the agent's
// own slot line below.
function slotLine(title: string, source: string | undefined, updatedAt: string): string {
	const make = (pad: string) =>
		`${JSON.stringify(source ? { type: "title", v: 1, title, source, updatedAt, pad } : { type: "title", v: 1, title, updatedAt, pad })}\n`;
	const padBytes = SLOT_BYTES - Buffer.byteLength(make(""), "utf8");
	return make(" ".repeat(padBytes));
}

type Line = { raw: string; value: any };
function splitFile(text: string): Line[] {
	return text
		.split("\n")
		.filter(l => l !== "")
		.map(raw => ({ raw, value: JSON.parse(raw) }));
}
function join(lines: Line[]): string {
	return lines.map(l => `${l.raw}\n`).join("");
}
function dropEntries(lines: Line[], drop: (v: any) => boolean): Line[] {
	// Drop entries, re-parenting their children to the dropped entry's parent (the branch stays whole).
	const parentOf = new Map<string, string | null>();
	for (const l of lines) if (l.value.id && drop(l.value) && l.value.type !== "session") parentOf.set(l.value.id, l.value.parentId ?? null);
	const resolve = (id: string | null): string | null => {
		while (id !== null && parentOf.has(id)) id = parentOf.get(id)!;
		return id;
	};
	return lines
		.filter(l => !(l.value.type !== "session" && l.value.type !== "title" && drop(l.value)))
		.map(l => {
			if (l.value.type === "session" || l.value.type === "title" || !parentOf.has(l.value.parentId)) return l;
			const value = { ...l.value, parentId: resolve(l.value.parentId) };
			return { raw: JSON.stringify(value), value };
		});
}
function setSlot(lines: Line[], title: string, source: string | undefined): Line[] {
	return lines.map(l => {
		if (l.value.type !== "title") return l;
		const raw = slotLine(title, source, l.value.updatedAt).slice(0, -1);
		return { raw, value: JSON.parse(raw) };
	});
}
function setHeaderTitle(lines: Line[], title: string | undefined, source: string | undefined): Line[] {
	return lines.map(l => {
		if (l.value.type !== "session") return l;
		const { title: _t, titleSource: _s, ...rest } = l.value;
		const value = title === undefined ? rest : { ...rest, title, titleSource: source };
		return { raw: JSON.stringify(value), value };
	});
}

const VARIANTS: Record<string, (lines: Line[], title: string, source: string | undefined) => Line[]> = {
	"as written": l => l,
	"no title_change": l => dropEntries(l, v => v.type === "title_change"),
	"slot emptied": l => setSlot(l, "", undefined),
	"slot emptied, no title_change": l => setSlot(dropEntries(l, v => v.type === "title_change"), "", undefined),
	"slot emptied, header title": (l, t, s) => setHeaderTitle(setSlot(l, "", undefined), t, s),
	"no slot, header title": (l, t, s) => setHeaderTitle(l.filter(x => x.value.type !== "title"), t, s),
	"no slot, no title": l =>
		setHeaderTitle(
			dropEntries(
				l.filter(x => x.value.type !== "title"),
				v => v.type === "title_change",
			),
			undefined,
			undefined,
		),
	"no custom_message": l => dropEntries(l, v => v.type === "custom_message"),
	"no model_change, no thinking_level_change": l =>
		dropEntries(l, v => v.type === "model_change" || v.type === "thinking_level_change"),
	"title only (slot, header, title_change)": l =>
		dropEntries(l, v => !["session", "title", "title_change"].includes(v.type)),
	"no title: header, model, thinking, custom_message (slot emptied)": l =>
		setSlot(dropEntries(l, v => v.type === "title_change"), "", undefined),
	"bare: header and custom_message (slot emptied)": l =>
		setSlot(
			dropEntries(l, v => !["session", "title", "custom_message"].includes(v.type)),
			"",
			undefined,
		),
};

let n = 0;
async function judgeVariants(text: string, title: string, source: string | undefined, parent: string | null) {
	const out: any[] = [];
	for (const [name, make] of Object.entries(VARIANTS)) {
		const body = join(make(splitFile(text), title, source));
		const dir = path.join(home, "variants", String(n++));
		fs.mkdirSync(dir, { recursive: true });
		const names: Record<string, string> = {};
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
		const facts = await listing(dir, names);
		const row = facts.list.find((r: any) => r.session === "N");
		const opened = await openFacts(file);
		out.push({
			variant: name,
			types: splitFile(body).map(l => l.value.type),
			listed: facts.picker.some((r: any) => r.session === "N"),
			empty: row?.empty ?? null,
			shown: row?.shown ?? null,
			continue: facts.continue.session,
			resumes: opened.error
				? { error: opened.error }
				: { sessionName: opened.sessionName, models: opened.models, thinkingLevel: opened.thinkingLevel },
		});
	}
	return out;
}

// --- the cases ------------------------------------------------------------------------------------
let result: any;
if (kind === "new") {
	const names: Record<string, string> = {};
	let parentSession: string | undefined = spec.parentSession;
	let parentCopy: string | null = null;
	if (spec.parentFile) {
		parentCopy = path.join(sessionDir, path.basename(spec.parentFile));
		fs.copyFileSync(spec.parentFile, parentCopy);
		const old = new Date(Date.now() - 3600_000);
		fs.utimesSync(parentCopy, old, old);
		parentSession = parentCopy;
		names[path.resolve(parentCopy)] = "B";
	}
	// rememberParent: open B first as resuming it does (SessionManager.open points this terminal's
	// pointer at it), as when the handoff is made from the session the user was in.
	let pointerBefore: any = null;
	if (spec.rememberParent && parentCopy) {
		const b = await SessionManager.open(parentCopy);
		await b.close();
		const crumb = await omp.readTerminalBreadcrumbEntry();
		pointerBefore = crumb ? { ...crumb, sessionFile: names[path.resolve(crumb.sessionFile)] ?? rel(crumb.sessionFile) } : null;
	}
	const start: string = spec.start ?? "newSession";
	const manager = SessionManager.create(cwd);
	let file: string;
	if (start === "newSession") file = await manager.newSession({ parentSession });
	else if (start === "create") file = manager.getSessionFile();
	else throw new Error(`unknown start ${start}`);
	names[path.resolve(file)] = "N";
	const size = () => (fs.existsSync(file) ? fs.statSync(file).size : null);
	const steps: any[] = [{ call: start, exists: fs.existsSync(file), size: size() }];
	const record = (call: string, extra?: any) =>
		steps.push({ call, ...(extra ?? {}), exists: fs.existsSync(file), size: size() });
	for (const step of spec.steps ?? ["model", "thinking", "custom", "title"]) {
		if (step === "model") {
			manager.appendModelChange(spec.model);
			record(`appendModelChange(${JSON.stringify(spec.model)})`);
		} else if (step === "thinking") {
			manager.appendThinkingLevelChange(spec.thinkingLevel, spec.configured ?? undefined);
			record(
				`appendThinkingLevelChange(${JSON.stringify(spec.thinkingLevel)}${spec.configured != null ? `, ${JSON.stringify(spec.configured)}` : ""})`,
			);
		} else if (step === "serviceTier") {
			manager.appendServiceTierChange(spec.serviceTier ?? null);
			record(`appendServiceTierChange(${JSON.stringify(spec.serviceTier ?? null)})`);
		} else if (step === "custom") {
			if (spec.attribution !== undefined)
				manager.appendCustomMessageEntry("handoff", spec.text, true, undefined, spec.attribution);
			else manager.appendCustomMessageEntry("handoff", spec.text, true);
			record(`appendCustomMessageEntry("handoff", text, true${spec.attribution !== undefined ? `, undefined, ${JSON.stringify(spec.attribution)}` : ""})`);
		} else if (step === "title") {
			const applied = await manager.setSessionName(spec.title, spec.titleSource ?? "auto");
			record(`await setSessionName(title, ${JSON.stringify(spec.titleSource ?? "auto")})`, { applied });
		} else if (step === "rewrite") {
			await manager.rewriteEntries();
			record("await rewriteEntries()");
		} else if (step === "ensureOnDisk") {
			await manager.ensureOnDisk();
			record("await ensureOnDisk()");
		} else throw new Error(`unknown step ${step}`);
	}
	if (spec.ensureOnDisk ?? start === "create") {
		await manager.ensureOnDisk();
		record("await ensureOnDisk()");
	}
	await manager.flush();
	await manager.close();
	record("await flush(); await close()");
	const bytes = read(file);
	const lines = parseLines(bytes);
	// The variants re-serialise the slot with a copy of serializeTitleSlot: check it is the agent's.
	const slot = lines[0]?.value?.type === "title" ? lines[0].value : null;
	const slotCopyEqual = slot
		? slotLine(slot.title, slot.source, slot.updatedAt) === `${bytes!.split("\n")[0]}\n`
		: null;
	let pointer: any = null;
	try {
		const crumb = await omp.readTerminalBreadcrumbEntry();
		pointer = crumb ? { ...crumb, cwd: crumb.cwd, sessionFile: names[path.resolve(crumb.sessionFile)] ?? rel(crumb.sessionFile) } : null;
	} catch (err) {
		pointer = { error: String(err) };
	}
	const terminalId = omp.getTerminalId() ?? null;
	const pointerFile = terminalId ? path.join(home, ".omp/agent/terminal-sessions", terminalId) : null;
	result = {
		version: omp.version,
		case: kind,
		home,
		sessionDir: rel(sessionDir),
		file: rel(file),
		parentSession: parentSession ?? null,
		steps,
		bytes,
		lines,
		slotCopyEqual,
		reopened: bytes === null ? null : await openFacts(file),
		listing: await listing(sessionDir, names),
		terminalId,
		pointerBefore,
		pointer,
		pointerText: pointerFile && fs.existsSync(pointerFile) ? fs.readFileSync(pointerFile, "utf8").split(home).join("$HOME") : null,
		titleIndex: titleIndex(),
	};
	if (spec.ablate && bytes !== null)
		result.variants = await judgeVariants(bytes, spec.title, spec.titleSource ?? "auto", parentCopy);
} else if (kind === "append") {
	const copy = path.join(sessionDir, path.basename(spec.file));
	fs.copyFileSync(spec.file, copy);
	const before = read(copy)!;
	const pre = await openFacts(copy);
	const manager = await SessionManager.open(copy, undefined, undefined, { suppressBreadcrumb: true });
	const role = spec.role === undefined ? "default" : (spec.role ?? undefined);
	manager.appendModelChange(spec.model, role, false);
	const calls = [`appendModelChange(${JSON.stringify(spec.model)}, ${role === undefined ? "undefined" : JSON.stringify(role)}, false)`];
	if (spec.thinkingLevel) {
		manager.appendThinkingLevelChange(spec.thinkingLevel, spec.thinkingLevel);
		calls.push(`appendThinkingLevelChange(${JSON.stringify(spec.thinkingLevel)}, ${JSON.stringify(spec.thinkingLevel)})`);
	}
	await manager.flush();
	await manager.close();
	const after = read(copy)!;
	const post = await openFacts(copy);
	result = {
		version: omp.version,
		case: kind,
		home,
		sessionDir: rel(sessionDir),
		file: rel(copy),
		calls,
		prefixKept: after.startsWith(before),
		before,
		appended: after.startsWith(before) ? after.slice(before.length) : null,
		bytes: after.startsWith(before) ? null : after,
		lines: parseLines(after.startsWith(before) ? after.slice(before.length) : after),
		resume: {
			before: { models: pre.models, thinkingLevel: pre.thinkingLevel, lastModelChangeRole: pre.lastModelChangeRole, restores: pre.models ? restorable(pre.models, pre.lastModelChangeRole ?? undefined) : null },
			after: { models: post.models, thinkingLevel: post.thinkingLevel, lastModelChangeRole: post.lastModelChangeRole, restores: post.models ? restorable(post.models, post.lastModelChangeRole ?? undefined) : null },
		},
	};
	// keep the output small: the copy's original bytes are the input file's
	delete result.before;
	result.beforeSize = Buffer.byteLength(before, "utf8");
} else {
	throw new Error(`unknown case ${kind}`);
}

writeAll(`${JSON.stringify(result)}\n`);
if (removeHome) fs.rmSync(home, { recursive: true, force: true });
process.exit(0);
