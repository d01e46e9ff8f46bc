"""Make a library entry from an oh-my-pi release bundle (dist/cli.js of the npm tarball).

    python3 make-lib.py DIST/cli.js OUT/lib.js

The bundle is one minified ES module: its own modules are lazily initialised closures
(``var INIT=b(()=>{...})``), and every module that some code imports dynamically has an export
namespace object built as ``P(NS,{Name:()=>minified,...})`` (the helper's name varies) and
loaded as ``(INIT(),NS)``.
Those namespaces give the minified name of each export we want. ``lib.js`` is the bundle
followed by the initialisers of the modules that hold them and an ``export {minified as Name}``
of each. Importing it does not start the CLI: the bundle runs its main only when it is
``import.meta.main``.
"""

from __future__ import annotations

import re
import sys

WANTED = (
    "SessionManager",
    "buildSessionContext",
    "convertToLlm",
    "resolveMethodSettings",
    "prepareCompaction",
    "DEFAULT_COMPACTION_SETTINGS",
    "computeFileLists",
    "upsertFileOperations",
    "Tokenizer",
    "findMostRecentNonEmptySession",
    "isEmptySession",
    "listSessions",
    "getTerminalId",
    "readTerminalBreadcrumbEntry",
)
IDENT = r"[\w$]+"


def find(bundle: str, name: str) -> tuple[str, str] | None:
    """(minified name, the initialiser to call first) of one export, from a namespace the
    bundle loads dynamically; None when no such namespace exports it."""
    for m in re.finditer(r"[{,]" + re.escape(name) + r":\(\)=>(" + IDENT + ")", bundle):
        # The namespace object is flat, so its "{" is the last one before the match; the
        # helper that fills it is minified differently in each release (P, F, ...).
        brace = bundle.rfind("{", 0, m.start() + 1)
        ns = re.search(IDENT + r"\((" + IDENT + r"),$", bundle[max(0, brace - 80) : brace])
        if ns is None:
            continue
        init = re.search(r"\(\s*(" + IDENT + r")\(\),\s*" + re.escape(ns.group(1)) + r"\)", bundle)
        if init:
            return m.group(1), init.group(1)
    return None


def main() -> None:
    src, out = sys.argv[1], sys.argv[2]
    with open(src, encoding="utf-8") as f:
        bundle = f.read()
    inits: list[str] = []
    exports: list[str] = []
    for name in WANTED:
        found = find(bundle, name)
        if found is None:
            print(f"make-lib: {name} not found in {src} (left out)", file=sys.stderr)
            continue
        minified, init = found
        if init not in inits:
            inits.append(init)
        exports.append(f"{minified} as {name}")
    tail = "".join(f"{init}();" for init in inits) + "export{" + ",".join(exports) + "};\n"
    with open(out, "w", encoding="utf-8") as f:
        f.write(bundle.rstrip("\n") + "\n" + tail)
    print(f"make-lib: {out}: {len(exports)} exports", file=sys.stderr)


if __name__ == "__main__":
    main()
