// omp 18.2.9 / 18.3.4's bundles import a few names from the native add-on that 18.2.3's add-on
// (the one installed in ../../omp/node_modules) does not have. Everything else is 18.2.3's.
// The stand-ins below are enough for what the oracles run (sessions, print mode without a
// virtual file system, no Apple on-device model, no Mermaid rendering, no text prediction):
// a call that reaches one throws, so a result never silently depends on a stand-in.
export * from "../../omp/node_modules/@oh-my-pi/pi-natives/native/index.js";

function missing(name) {
	return () => {
		throw new Error(`${name} is not in the oracle's native add-on (18.2.3)`);
	};
}

// The ShellFs* enums are compared by value only; any member reads as its own name.
const enumStandIn = () => new Proxy({}, { get: (_, key) => (typeof key === "string" ? key : undefined) });
export const ShellFsFileType = enumStandIn();
export const ShellFsMissing = enumStandIn();
export const ShellFsOp = enumStandIn();
export const ShellFsResolve = enumStandIn();

export class TextPredictor {
	constructor() {
		missing("TextPredictor")();
	}
}
export const appleFmAvailability = missing("appleFmAvailability");
export const appleFmCancel = missing("appleFmCancel");
export const appleFmGenerate = missing("appleFmGenerate");
export const renderMermaidAscii = missing("renderMermaidAscii");
