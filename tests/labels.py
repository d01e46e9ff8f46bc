"""What real sessions' documents are worth, by labels written by people (``make eval``).

Each session under ``tests/fixtures/real/`` has a label file beside it, written by reading the
session (never from this program's output): the user's requests, the task's key terms, text
injected into user messages that is not the task, the files changed, the paths that failed,
whether the work was finished, the errors left open, the non-zero exits that are harmless, the
user's constraints. Every label is checked twice: against the document the built-in writer
hands off (``handoff SESSION --model extractive``, then ``show NEW --document``) and against
what ``handoff show SESSION --facts --json`` says.

This checker shares no code with the writer it checks: it runs the command line, and reads the
document with its own small Markdown reading (sections, the ``<files>`` tree). Text is compared
with case and white space folded, and without Markdown's quote marks and backticks.
"""

from __future__ import annotations

import argparse
import json
import posixpath
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
REAL = ROOT / "tests" / "fixtures" / "real"
LABELS = ".labels.json"
FLOOR = 0.95
"""The share of the checks the built-in writer's documents must pass."""

CLASSES = (
    ("task", "the real task's key terms in the Goal"),
    ("injected", "injected text not in the Goal"),
    ("requests", "every request of the user's"),
    ("changed", "every file changed, as changed"),
    ("failed", "a failed path not listed as a file"),
    ("finished", "done or not, as it ended"),
    ("errors", "the errors left open"),
    ("harmless", "a harmless exit not called an error"),
    ("constraints", "the user's constraints"),
)


@dataclass(frozen=True)
class Check:
    kind: str
    item: str
    document: bool
    facts: bool


def folded(text: str) -> str:
    """Text as compared: no quote marks at line starts, no backticks, case and spaces folded."""
    text = re.sub(r"(?m)^[ \t]*>[ \t]?", "", text).replace("`", "")
    return " ".join(text.casefold().split())


# --- the document, read on its own --------------------------------------------------------


@dataclass(frozen=True)
class Document:
    sections: dict[str, str]
    """Each ``## `` section's body, by its heading (casefolded)."""
    progress: dict[str, str]
    """Each ``### `` part of Progress, by its heading (casefolded)."""
    files: dict[str, str]
    """The ``<files>`` block's paths and their marks (Read, Write, RW)."""
    body: str
    """The document without its ``<files>`` block."""

    @classmethod
    def read(cls, text: str) -> Document:
        block = re.search(r"<files>\n(.*?)\n</files>", text, re.S)
        body = text[: block.start()] + text[block.end() :] if block else text
        sections = _parts(body, "## ")
        progress = _parts(sections.get("progress", ""), "### ")
        return cls(sections, progress, _files(block.group(1)) if block else {}, body)

    def section(self, name: str) -> str:
        return self.sections.get(name, "")


def _parts(text: str, mark: str) -> dict[str, str]:
    parts: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        if line.startswith(mark):
            current = parts.setdefault(line[len(mark) :].strip().casefold(), [])
        elif current is not None:
            current.append(line)
    return {name: "\n".join(lines).strip() for name, lines in parts.items()}


def _files(block: str) -> dict[str, str]:
    """oh-my-pi's folded tree: ``# a/b/`` opens a folder at the depth of its ``#``s, a bare
    line ``name (Mark)`` is a file in the folder open."""
    found: dict[str, str] = {}
    folders: list[str] = []
    for line in block.splitlines():
        heading = re.match(r"(#+) (.*)/$", line)
        if heading:
            depth = len(heading.group(1))
            folders = [*folders[: depth - 1], heading.group(2)]
            continue
        entry = re.match(r"(.*) \((Read|Write|RW)\)$", line)
        if entry:
            found["/".join([*folders, entry.group(1)])] = entry.group(2)
    return found


def same_path(label: str, listed: str, cwd: str | None) -> bool:
    """The same file: a relative path is taken from the session's ``cwd``."""
    return _absolute(label, cwd) == _absolute(listed, cwd)


def names_path(label: str, listed: str, cwd: str | None) -> bool:
    """``same_path``, or a label written relative to a folder the session went to (``cd``)
    that ends the listed path: a folder and a name, not a bare name."""
    if same_path(label, listed, cwd):
        return True
    tail = label.replace("\\", "/").removeprefix("./")
    return "/" in tail and _absolute(listed, cwd).endswith("/" + tail)


def _absolute(path: str, cwd: str | None) -> str:
    path = path.replace("\\", "/")
    if cwd and not re.match(r"[/~$]|[A-Za-z]:/", path):
        path = cwd.replace("\\", "/").rstrip("/") + "/" + path
    return posixpath.normpath(path)


def _empty(part: str) -> bool:
    items = [line for line in part.splitlines() if line.strip()]
    return not items or all(
        re.fullmatch(r"[-*\d.)\s]*\(?(none|nothing)\b.*", i, re.I) for i in items
    )


_LISTING = re.compile(r"\b(read|changed|modified|written|wrote|edited|created)\b", re.I)
_MISSING = re.compile(r"not found|no such|missing|does not exist|doesn't exist|failed", re.I)


def _listed_in_body(document: Document, path: str, changed: bool, cwd: str | None) -> bool:
    same = names_path if changed else same_path
    """Whether a line of the document outside ``<files>`` lists ``path`` as a file (read or,
    with ``changed``, changed) and not as one that is missing."""
    for line in document.body.splitlines():
        words = re.findall(r"`([^`]+)`", line) + re.findall(r"[^\s`,;()'\"]+", line)
        if not any(same(path, w.rstrip(".:"), cwd) for w in words if "/" in w or "." in w):
            continue
        found = _LISTING.search(line)
        if found is None or _MISSING.search(line):
            continue
        if not changed or found.group(1).casefold() != "read":
            return True
    return False


def document_checks(
    labels: dict[str, Any], text: str, cwd: str | None
) -> Iterator[tuple[str, str, bool]]:
    doc = Document.read(text)
    goal = folded(doc.section("goal"))
    whole = folded(doc.body)
    terms = labels.get("task_terms") or []
    if terms:
        yield "task", ", ".join(terms), all(folded(t) in goal for t in terms)
    for snippet in labels.get("injected") or []:
        yield "injected", snippet, folded(snippet) not in goal
    for request in labels.get("requests") or []:
        yield "requests", request, folded(request) in whole
    for path in [*labels.get("files_changed", []), *labels.get("files_changed_via_shell", [])]:
        marked = any(names_path(path, p, cwd) and m != "Read" for p, m in doc.files.items())
        yield "changed", path, marked or _listed_in_body(doc, path, True, cwd)
    for path in labels.get("failed_paths") or []:
        listed = any(same_path(path, p, cwd) for p in doc.files)
        listed = listed or _listed_in_body(doc, path, False, cwd)
        yield "failed", path, not listed
    steps = folded(doc.section("next steps"))
    # A request handed back as a step: its first words in Next Steps (a short one, "C" or
    # "push it", could be in any sentence).
    handed_back = any(
        len(folded(r)) >= 12 and folded(r)[:40] in steps for r in labels.get("requests") or []
    )
    if labels.get("finished"):
        done = not _empty(doc.progress.get("done", ""))
        yield "finished", "finished", done and not handed_back
    else:
        open_work = not (
            _empty(doc.progress.get("in progress", "")) and _empty(doc.progress.get("pending", ""))
        )
        yield "finished", "unfinished", open_work and not _empty(doc.section("next steps"))
    for snippet in labels.get("open_errors") or []:
        yield "errors", snippet, folded(snippet) in whole
    for snippet in labels.get("harmless_exits") or []:
        called = any(
            folded(snippet) in folded(line) and re.search(r"error|fail", line, re.I)
            for line in doc.body.splitlines()
        )
        yield "harmless", snippet, not called
    constraints = folded(doc.section("constraints & preferences"))
    for snippet in labels.get("constraints") or []:
        yield "constraints", snippet, folded(snippet) in constraints


def facts_checks(labels: dict[str, Any], facts: dict[str, Any]) -> Iterator[tuple[str, str, bool]]:
    cwd = facts.get("cwd")
    requests = [folded(r) for r in facts.get("requests") or []]
    first = requests[0] if requests else ""
    terms = labels.get("task_terms") or []
    if terms:
        yield "task", ", ".join(terms), all(folded(t) in first for t in terms)
    for snippet in labels.get("injected") or []:
        yield "injected", snippet, folded(snippet) not in first
    for request in labels.get("requests") or []:
        yield "requests", request, any(folded(request) in r for r in requests)
    changed = facts.get("modified_files") or []
    for path in [*labels.get("files_changed", []), *labels.get("files_changed_via_shell", [])]:
        yield "changed", path, any(names_path(path, p, cwd) for p in changed)
    read = [*(facts.get("read_files") or []), *(facts.get("read_set") or []), *changed]
    for path in labels.get("failed_paths") or []:
        yield "failed", path, not any(same_path(path, p, cwd) for p in read)
    finished = bool(labels.get("finished"))
    yield "finished", "finished" if finished else "unfinished", facts.get("finished") is finished
    errors = [folded(e) for e in facts.get("open_errors") or []]
    for snippet in labels.get("open_errors") or []:
        yield "errors", snippet, any(folded(snippet) in e for e in errors)
    commands = facts.get("commands") or []
    for snippet in labels.get("harmless_exits") or []:
        key = folded(snippet)
        # A failure put right later is reported as such, not as an error.
        failed = any(
            key in folded(c.get("text", "")) and not c.get("ok") and not c.get("resolved")
            for c in commands
        )
        yield "harmless", snippet, not failed and not any(key in e for e in errors)
    rules = [folded(r) for r in facts.get("rules") or []]
    for snippet in labels.get("constraints") or []:
        yield "constraints", snippet, any(folded(snippet) in r for r in rules)


# --- running the command line ----------------------------------------------------------------


Cli = Callable[[Path, list[str]], str]
"""Runs ``handoff ARGS`` with HOME and the working folder at the given folder: its stdout; a
RuntimeError when it fails."""


def subprocess_cli(home: Path, args: list[str]) -> str:
    """The command line as a user runs it, in a process of its own."""
    done = subprocess.run(
        [sys.executable, "-m", "handoff_cli", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8"},
        cwd=home,
    )
    if done.returncode != 0:
        raise RuntimeError(f"handoff {' '.join(args)}: {done.stderr.strip()[-300:]}")
    return done.stdout


def labelled(root: Path = REAL) -> list[Path]:
    """The sessions that have labels under ``root``, in order."""
    return sorted(_session_of(p) for p in root.rglob("*" + LABELS))


def _session_of(label: Path) -> Path:
    """The file a label file is named after; or, for an opencode session (rows of the database
    beside the labels), ``<database>/<session id>``."""
    named = label.with_name(label.name.removesuffix(LABELS))
    database = label.parent / "opencode.db"
    return database / named.name if not named.exists() and database.is_file() else named


def _folder(session: Path) -> Path:
    """The folder holding a session: its file's, or its database's."""
    return session.parent.parent if session.parent.is_file() else session.parent


def checks_of(session: Path, work: Path, cli: Cli = subprocess_cli) -> list[Check]:
    """Every label of ``session`` checked against the built-in writer's document and the
    facts, on copies in ``work`` (a subagent's transcripts beside it copied too)."""
    folder = _folder(session)
    labels = json.loads((folder / (session.name + LABELS)).read_text("utf-8"))
    work.mkdir(parents=True)
    copy = work / session.relative_to(folder.parent)
    shutil.copytree(folder, work / folder.name, dirs_exist_ok=True)
    facts = json.loads(cli(work, ["show", str(copy), "--facts", "--json"]))
    done = json.loads(cli(work, [str(copy), "--model", "extractive", "--json"]))
    document = json.loads(cli(work, ["show", done["path"], "--document", "--json"]))["document"]
    on_document = list(document_checks(labels, document, facts.get("cwd")))
    on_facts = list(facts_checks(labels, facts))
    assert [c[:2] for c in on_document] == [c[:2] for c in on_facts]
    return [
        Check(kind, item, ok, facts_ok)
        for (kind, item, ok), (_, _, facts_ok) in zip(on_document, on_facts, strict=True)
    ]


def table(results: dict[Path, list[Check]]) -> str:
    lines = [f"{'class':<13}{'checks':>8}{'document':>10}{'facts':>8}  what is checked"]
    found = counts(results)
    for kind, what in CLASSES:
        row = found[kind]
        lines.append(f"{kind:<13}{row['checks']:>8}{row['document']:>10}{row['facts']:>8}  {what}")
    total = {k: sum(row[k] for row in found.values()) for k in ("checks", "document", "facts")}
    lines.append(f"{'all':<13}{total['checks']:>8}{total['document']:>10}{total['facts']:>8}")
    if total["checks"]:
        share = (
            f"{total['document'] / total['checks']:.1%} / {total['facts'] / total['checks']:.1%}"
        )
        lines.append(f"passed (document / facts): {share} of {total['checks']} checks")
    return "\n".join(lines)


def misses(results: dict[Path, list[Check]], root: Path = REAL) -> Iterator[str]:
    for session, checks in results.items():
        for check in checks:
            if not (check.document and check.facts):
                where = [
                    n for n, ok in (("document", check.document), ("facts", check.facts)) if not ok
                ]
                name = session.relative_to(root)
                yield f"  {name}: {check.kind} {check.item!r} ({', '.join(where)})"


def run_all(
    cli: Cli = subprocess_cli, root: Path = REAL
) -> tuple[dict[Path, list[Check]], dict[Path, str]]:
    """Every labelled session's checks; and those the command line refused, with its error."""
    results: dict[Path, list[Check]] = {}
    refused: dict[Path, str] = {}
    with tempfile.TemporaryDirectory() as work:
        for number, session in enumerate(labelled(root)):
            try:
                results[session] = checks_of(session, Path(work) / str(number), cli)
            except RuntimeError as error:
                refused[session] = str(error)
    return results, refused


def counts(results: dict[Path, list[Check]]) -> dict[str, dict[str, int]]:
    """Per class: the checks, and how many the document and the facts pass."""
    every = [c for checks in results.values() for c in checks]
    found: dict[str, dict[str, int]] = {}
    for kind, _ in CLASSES:
        mine = [c for c in every if c.kind == kind]
        found[kind] = {
            "checks": len(mine),
            "document": sum(c.document for c in mine),
            "facts": sum(c.facts for c in mine),
        }
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", nargs="?", type=Path, default=REAL, help="labelled sessions")
    parser.add_argument("--misses", action="store_true", help="list every check missed")
    args = parser.parse_args(argv)
    results, refused = run_all(root=args.root)
    print(
        f"Labels of {len(results)} real sessions ({args.root}), checked on the built-in "
        "writer's document and on show --facts"
    )
    print(table(results))
    for session, error in refused.items():
        print(f"not read: {session.relative_to(args.root)}: {error.splitlines()[-1]}")
    missed = list(misses(results, args.root)) if args.misses else []
    if missed:
        print("\nmissed:")
        print("\n".join(missed))
    found = counts(results)
    passed = sum(row["document"] for row in found.values())
    checks = sum(row["checks"] for row in found.values())
    verdict = "met" if passed >= FLOOR * checks else "NOT MET"
    print(
        f"the built-in writer's documents pass {passed / checks:.1%} against {FLOOR:.0%}: {verdict}"
    )
    return 0 if passed >= FLOOR * checks else 1


if __name__ == "__main__":
    sys.exit(main())
