"""The quality gate on documents it did not write (``make eval``; held by ``tests/test_check.py``).

Each folder of ``tests/fixtures/calibration/`` holds, for one real session of
``tests/fixtures/real/``, four documents written by hand by someone who read the session and
neither this program's code nor its output (``BRIEF.md`` says how): ``good.md``, ``wrong.md``
(the good one with two or three planted factual errors, each noted in ``notes.json`` with its
kind), ``incomplete.md`` (the good one without its most important fact) and ``empty.md``
(fluent, with nothing specific). Each is checked as ``handoff check --document`` checks it,
against the session's whole branch, at the default threshold.

    .venv/bin/python -m tests.calibration          # the figures
    .venv/bin/python -m tests.calibration -v       # and each document's score and flags

Sets: ``calibration`` (the development set, which the gate's rules were tuned on);
``calibration-heldout``, ``calibration-fresh`` and ``calibration-agents`` (written after them,
by other hands, and only measured; the last for Gemini CLI, Qwen Code and opencode).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from handoff_cli.agents import load_session
from handoff_cli.errors import HandoffError
from handoff_cli.handoff.check import Report, check_session
from handoff_cli.options import DEFAULT_MIN_SCORE
from handoff_cli.sessions.tree import branch, leaf

ROOT = Path(__file__).resolve().parent.parent
CALIBRATION = ROOT / "tests" / "fixtures" / "calibration"
HELDOUT = ROOT / "tests" / "fixtures" / "calibration-heldout"
"""Written the same way, after the gate's first rules were; read once measured, and three rules
made of what it showed."""
FRESH = ROOT / "tests" / "fixtures" / "calibration-fresh"
"""Written the same way after those rules, by another hand: measured, never tuned on."""
AGENTS = ROOT / "tests" / "fixtures" / "calibration-agents"
"""Written the same way for sessions of Gemini CLI, Qwen Code and opencode, once this program
read them, by another hand; measured (0 of 6 good passed), then fixes made for the classes of
what it showed (a branch whose agent kept no calls, a file named by a Windows path, a call the
user cancelled, a folder removed whole, "nothing ... committed")."""
REAL = ROOT / "tests" / "fixtures" / "real"
KINDS = ("good", "wrong", "incomplete", "empty")


@dataclass(frozen=True)
class Case:
    """One session's four documents and the note on them."""

    name: str
    folder: Path
    session: Path
    agent: str
    documents: dict[str, str]
    planted: tuple[dict[str, str], ...]


def cases(folder: Path = CALIBRATION) -> list[Case]:
    """Every folder's case whose session this program reads (the others: ``unread``)."""
    return [case for case in _all(folder) if readable(case)]


def unread(folder: Path = CALIBRATION) -> list[str]:
    """The folders whose session this program cannot read yet."""
    return [case.name for case in _all(folder) if not readable(case)]


def readable(case: Case) -> bool:
    try:
        load_session(case.session)
    except HandoffError:
        return False
    return True


def _all(folder: Path) -> list[Case]:
    found = []
    for notes_path in sorted(folder.glob("*/notes.json")):
        notes = json.loads(notes_path.read_text())
        documents = {kind: (notes_path.parent / f"{kind}.md").read_text() for kind in KINDS}
        found.append(
            Case(
                notes_path.parent.name,
                notes_path.parent,
                REAL / notes["session"],
                notes["agent"],
                documents,
                tuple(notes["planted"]),
            )
        )
    return found


_REPORTS: dict[tuple[Path, str], Report] = {}


def report(case: Case, kind: str) -> Report:
    """``kind``'s document checked against the session's branch, as ``handoff check`` does."""
    key = (case.folder, kind)
    if key not in _REPORTS:
        session = load_session(case.session)
        records = branch(session, leaf(session, None))
        _REPORTS[key] = check_session(session, records, case.documents[kind]).report
    return _REPORTS[key]


@dataclass(frozen=True)
class Figures:
    sessions: int
    passed: dict[str, int]
    """By kind: how many of its documents the gate passes."""
    good_over_wrong: int
    good_over_incomplete: int
    planted: dict[str, int]
    """The errors planted in the wrong documents, by kind."""
    caught: dict[str, int]
    """Of those, the ones a contradiction found names (its file or command is in the claim)."""


def caught(case: Case, plant: dict[str, str]) -> bool:
    """Whether a contradiction found in the wrong document is this planted error's: what it
    names (in backticks) is in the claim, or for a command, its last word (`git commit`, "not
    committed")."""
    claim = plant["claim"].casefold()
    for probe in report(case, "wrong").probes:
        names = [n.casefold() for n in probe.answer.split("`")[1::2]]
        words = [n.split()[-1] for n in names if " " in n and len(n.split()[-1]) >= 4]
        if probe.wrong and any(name in claim for name in names + words):
            return True
    return False


def figures(found: list[Case], threshold: float = DEFAULT_MIN_SCORE) -> Figures:
    passed = {kind: sum(report(c, kind).passes(threshold) for c in found) for kind in KINDS}
    over_wrong = sum(report(c, "good").overall > report(c, "wrong").overall for c in found)
    over_incomplete = sum(
        report(c, "good").overall > report(c, "incomplete").overall for c in found
    )
    planted: dict[str, int] = {}
    got: dict[str, int] = {}
    for case in found:
        for plant in case.planted:
            planted[plant["kind"]] = planted.get(plant["kind"], 0) + 1
            got[plant["kind"]] = got.get(plant["kind"], 0) + caught(case, plant)
    return Figures(len(found), passed, over_wrong, over_incomplete, planted, got)


def _lines(found: list[Case]) -> Iterator[str]:
    for case in found:
        yield f"{case.name} ({case.agent})"
        for kind in KINDS:
            result = report(case, kind)
            flags = [str(p) for p in result.probes if p.wrong]
            lacks = [str(p) for p in result.missing if not p.wrong]
            yield f"  {kind:<11} {result.overall:.3f}"
            yield from (f"      wrong: {f}" for f in flags)
            yield from (f"      lacks: {m}" for m in lacks[:4])
        for plant in case.planted:
            yield f"  planted {plant['kind']}: {plant['claim'][:100]}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="each document's score")
    args = parser.parse_args(argv)
    for title, folder in (
        ("development set", CALIBRATION),
        ("held-out set", HELDOUT),
        ("fresh set", FRESH),
        ("Gemini CLI, Qwen Code and opencode set", AGENTS),
    ):
        found = cases(folder)
        if not found:
            continue
        if args.verbose:
            print("\n".join(_lines(found)))
        _print(title, figures(found), unread(folder))
    return 0


def _print(title: str, got: Figures, left: list[str]) -> None:
    n = got.sessions
    good = got.passed["good"]
    print(
        f"Calibration, {title}: {n} real sessions, four documents each written by hand "
        f"(threshold {DEFAULT_MIN_SCORE})"
    )
    print(f"  good passed           {good:>3}/{n}   (false refusals {n - good})")
    for kind in ("wrong", "incomplete", "empty"):
        passes = got.passed[kind]
        print(f"  {kind:<10} refused    {n - passes:>3}/{n}   (false passes {passes})")
    print(f"  good above wrong      {got.good_over_wrong:>3}/{n}")
    print(f"  good above incomplete {got.good_over_incomplete:>3}/{n}")
    print("  planted errors caught, by kind:")
    for kind, count in sorted(got.planted.items()):
        print(f"    {kind:<13} {got.caught[kind]:>3}/{count}")
    if left:
        print(f"  not read by this program, so not counted: {', '.join(left)}")


if __name__ == "__main__":
    sys.exit(main())
