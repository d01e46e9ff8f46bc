// Oracle: what pi (@earendil-works/pi-coding-agent 1.6.0) offers to resume, by its own code.
//
// Usage: HOME=<a temporary copy> node resume.mjs --cwd DIR [FILE ...]
//
// Reads the sessions under $HOME/.pi/agent/sessions (run it on a copy: opening a session may
// rewrite it) and prints one JSON object:
//   version   the agent's version
//   picker    the sessions `--resume` lists for DIR, in order (SessionManager.list), each with the
//             text the picker shows (its session_info name, else the first user message)
//   continue  the file `--continue` opens in DIR (SessionManager.continueRecent: the newest file
//             by mtime), and whether it is a new session
//   files     for each FILE: what pi's createAgentSession restores when it resumes it (the
//             model, the thinking level, and its "Could not restore model" message), with the
//             context's model and thinking level and the branch's model_change /
//             thinking_level_change entries it reads them from
// The models and defaults come from $HOME/.pi/agent/models.json and settings.json.
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

delete process.env.PI_CODING_AGENT_DIR;
delete process.env.PI_CODING_AGENT_SESSION_DIR;

const here = path.dirname(fileURLToPath(import.meta.url));
const dist = path.join(here, "node_modules/@earendil-works/pi-coding-agent/dist");
const { SessionManager } = await import(pathToFileURL(path.join(dist, "core/session-manager.js")).href);
const { createAgentSession } = await import(pathToFileURL(path.join(dist, "core/sdk.js")).href);
const { VERSION } = await import(pathToFileURL(path.join(dist, "config.js")).href);

const args = process.argv.slice(2);
let cwd = process.cwd();
const files = [];
for (let i = 0; i < args.length; i++) {
	if (args[i] === "--cwd") cwd = args[++i];
	else files.push(args[i]);
}

const picker = (await SessionManager.list(cwd)).map((s) => ({
	path: s.path,
	id: s.id,
	name: s.name ?? null,
	firstMessage: s.firstMessage,
	shown: s.name ?? s.firstMessage,
	messageCount: s.messageCount,
	modified: s.modified.toISOString(),
}));

const continued = SessionManager.continueRecent(cwd);
const continuedFile = continued.getSessionFile();
const cont = {
	path: continuedFile ?? null,
	new: !continuedFile || !fs.existsSync(continuedFile) || continued.getEntries().length === 0,
};

const modelString = (m) => (m == null ? null : `${m.provider}/${m.id ?? m.modelId}`);
const opened = [];
for (const file of files) {
	try {
		const manager = SessionManager.open(path.resolve(file));
		const ctx = manager.buildSessionContext();
		const branch = manager.getBranch();
		const entry = {
			path: file,
			contextModel: modelString(ctx.model),
			contextThinkingLevel: ctx.thinkingLevel ?? null,
			modelChanges: branch.filter((e) => e.type === "model_change"),
			thinkingLevelChanges: branch.filter((e) => e.type === "thinking_level_change"),
		};
		const { session, modelFallbackMessage } = await createAgentSession({ cwd, sessionManager: manager });
		entry.model = modelString(session.model);
		entry.thinkingLevel = session.thinkingLevel ?? null;
		entry.modelFallbackMessage = modelFallbackMessage ?? null;
		session.dispose?.();
		opened.push(entry);
	} catch (err) {
		opened.push({ path: file, error: err instanceof Error ? err.message : String(err) });
	}
}

fs.writeSync(1, `${JSON.stringify({ version: VERSION, picker, continue: cont, files: opened })}\n`);
process.exit(0);
