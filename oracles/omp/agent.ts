// Which oh-my-pi the drivers run: 18.2.3 from its TypeScript sources (installed in
// node_modules), or, when $OMP_LIB names one, a release bundle's library entry
// (omp-bundle/<version>/package/dist/lib.js, made by setup.sh and make-lib.py).
// Import this module only after the environment is set: omp reads it when its
// modules load.
import * as fs from "node:fs";
import * as path from "node:path";

export interface Omp {
	version: string;
	// The agent's own classes and functions; their types differ between versions.
	SessionManager: any;
	buildSessionContext: any;
	convertToLlm: any;
	resolveMethodSettings: any;
	prepareCompaction: any;
	DEFAULT_COMPACTION_SETTINGS: any;
	computeFileLists: any;
	upsertFileOperations: any;
	Tokenizer: any;
	getTerminalId: any;
	readTerminalBreadcrumbEntry: any;
	// Session listing (newsession.ts). isEmptySession and findMostRecentNonEmptySession exist
	// from 18.2.7 on (undefined for 18.2.3); getRestorableSessionModels only from 18.2.3's
	// sources (the bundles' lib.js does not export it).
	listSessions?: any;
	isEmptySession?: any;
	findMostRecentNonEmptySession?: any;
	getRestorableSessionModels?: any;
}

export async function loadOmp(): Promise<Omp> {
	const lib = process.env.OMP_LIB;
	if (lib) {
		const m = await import(path.resolve(lib));
		const pkg = JSON.parse(fs.readFileSync(path.join(path.dirname(path.resolve(lib)), "..", "package.json"), "utf8"));
		return { ...m, version: pkg.version } as Omp;
	}
	const [sm, ctx, msgs, methods, compaction, utils, tok, ttyid, paths, listing] = await Promise.all([
		import("@oh-my-pi/pi-coding-agent/session/session-manager"),
		import("@oh-my-pi/pi-coding-agent/session/session-context"),
		import("@oh-my-pi/pi-coding-agent/session/messages"),
		import("@oh-my-pi/pi-coding-agent/session/compaction-methods"),
		import("@oh-my-pi/pi-agent-core/compaction/compaction"),
		import("@oh-my-pi/pi-agent-core/compaction/utils"),
		import("@oh-my-pi/pi-agent-core/tokenizer"),
		import("@oh-my-pi/pi-tui/ttyid"),
		import("@oh-my-pi/pi-coding-agent/session/session-paths"),
		import("@oh-my-pi/pi-coding-agent/session/session-listing"),
	]);
	const pkg = JSON.parse(
		fs.readFileSync(path.join(import.meta.dir, "node_modules/@oh-my-pi/pi-coding-agent/package.json"), "utf8"),
	);
	return {
		version: pkg.version,
		SessionManager: sm.SessionManager,
		buildSessionContext: ctx.buildSessionContext,
		convertToLlm: msgs.convertToLlm,
		resolveMethodSettings: methods.resolveMethodSettings,
		prepareCompaction: compaction.prepareCompaction,
		DEFAULT_COMPACTION_SETTINGS: compaction.DEFAULT_COMPACTION_SETTINGS,
		computeFileLists: utils.computeFileLists,
		upsertFileOperations: utils.upsertFileOperations,
		Tokenizer: tok.Tokenizer,
		getTerminalId: ttyid.getTerminalId,
		readTerminalBreadcrumbEntry: paths.readTerminalBreadcrumbEntry,
		listSessions: listing.listSessions,
		isEmptySession: (listing as any).isEmptySession,
		findMostRecentNonEmptySession: (listing as any).findMostRecentNonEmptySession,
		getRestorableSessionModels: ctx.getRestorableSessionModels,
	};
}
