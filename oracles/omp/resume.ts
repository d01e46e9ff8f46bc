// Oracle: what oh-my-pi (18.2.3, or the release $OMP_LIB names) offers to resume, by its own code.
//
// Usage: HOME=<a temporary copy> [TMUX_PANE=%1] [OMP_LIB=...] node_modules/.bin/bun resume.ts --cwd DIR
//            [--remember FILE] [FILE ...]
//
// --remember FILE first opens FILE as resuming it does (SessionManager.open, which points this
// terminal's pointer at it) and closes it, then the rest runs. Reads the sessions under $HOME/.omp/agent/sessions (run it on a copy: `--continue` may
// write this terminal's pointer) and prints one JSON object:
//   version       the agent's version
//   terminalId    omp's terminal id (getTerminalId: the tty, else $ZELLIJ_PANE_ID, $TMUX_PANE,
//                 $CMUX_SURFACE_ID, $KITTY_WINDOW_ID, $WEZTERM_PANE, $TERM_SESSION_ID, $WT_SESSION)
//   pointer       ~/.omp/agent/terminal-sessions/<terminalId> as the agent reads it
//                 (readTerminalBreadcrumbEntry), or null
//   picker        the sessions `--resume` (no value) lists for DIR, in order: SessionManager.list
//                 (18.2.3) or SessionManager.listForPicker (18.2.7 and later), each with the
//                 title it shows (the picker's first line, else the first user message) and why
//   continue      the file `--continue` opens in DIR (SessionManager.continueRecent), and
//                 whether it is a new session
//   files         for each FILE: the model roles and thinking level the agent's
//                 buildSessionContext gives it, and the model_change / thinking_level_change
//                 entries on its branch (what the agent restores from on resume)
import * as fs from "node:fs";
import * as path from "node:path";

// The agent's own folders come from $HOME; nothing else may redirect them.
delete process.env.PI_CODING_AGENT_DIR;
delete process.env.PI_CONFIG_DIR;
delete process.env.OMP_PROFILE;
delete process.env.PI_PROFILE;
for (const k of ["XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME"]) delete process.env[k];

const args = process.argv.slice(2);
let cwd = process.cwd();
let remember: string | undefined;
const files: string[] = [];
for (let i = 0; i < args.length; i++) {
	if (args[i] === "--cwd") cwd = args[++i]!;
	else if (args[i] === "--remember") remember = args[++i]!;
	else files.push(args[i]!);
}

const { loadOmp } = await import("./agent.ts");
const omp = await loadOmp();
const { SessionManager } = omp;

if (remember) {
	const manager = await SessionManager.open(path.resolve(remember));
	await manager.close?.();
}

const terminalId = omp.getTerminalId();
const pointer = await omp.readTerminalBreadcrumbEntry();
const picked =
	typeof SessionManager.listForPicker === "function"
		? await SessionManager.listForPicker(cwd)
		: await SessionManager.list(cwd);
const picker = picked.map((s: any) => ({
	path: s.path,
	id: s.id,
	title: s.title ?? null,
	firstMessage: s.firstMessage,
	shown: s.title || s.firstMessage,
	assistantTurns: s.assistantTurns ?? null,
	status: s.status ?? null,
	modified: s.modified.toISOString(),
}));

const continued = await SessionManager.continueRecent(cwd);
const continuedFile: string | undefined = continued.getSessionFile();
const cont = {
	path: continuedFile ?? null,
	new: !continuedFile || !fs.existsSync(continuedFile) || continued.getEntries().length === 0,
};
await continued.close?.();

const opened = [];
for (const file of files) {
	try {
		const manager = await SessionManager.open(path.resolve(file), undefined, undefined, { suppressBreadcrumb: true });
		const ctx = manager.buildSessionContext();
		const branch = manager.getBranch();
		opened.push({
			path: file,
			models: ctx.models ?? null,
			thinkingLevel: ctx.thinkingLevel ?? null,
			modelChanges: branch.filter((e: any) => e.type === "model_change"),
			thinkingLevelChanges: branch.filter((e: any) => e.type === "thinking_level_change"),
		});
		await manager.close?.();
	} catch (err) {
		opened.push({ path: file, error: err instanceof Error ? err.message : String(err) });
	}
}

const out = { version: omp.version, terminalId, pointer, picker, continue: cont, files: opened };
fs.writeSync(1, `${JSON.stringify(out)}\n`);
process.exit(0);
