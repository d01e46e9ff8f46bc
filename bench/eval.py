"""What the documents are worth (``make eval``): the probes' scores (``handoff check``) of the
built-in writer's documents and of a loopback model's, over the test corpus (every session of
``tests/fixtures`` that can be handed off, the real ones aside) and the example sessions of
``sessions/``; then the real sessions' labels (``tests/labels.py``); then the gate on documents
written by hand for real sessions (``tests/calibration.py``).

Each session is copied and handed off for real (``handoff``, its exchange recorded in the
copy), then the document it recorded is checked against the facts of the branch before it, as
``handoff check`` does. The loopback model is ``tests/fakellm.py``'s server, over HTTP through
LiteLLM, answering as a model that keeps the prompt's verified facts and nothing else: each
fact under the section it belongs in (the earlier document an update starts from, for one, it
leaves out); and, for the range of the scale, as one that answers the six headings and
nothing under them. Its figures move when the prompt gives the model more or less; the
built-in writer's when the writer changes. The built-in writer must score at least ``FLOOR`` overall
(the mean over the sessions); the run exits 1 when it does not.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

from handoff_cli.agents import load_session
from handoff_cli.document import SECTIONS
from handoff_cli.errors import HandoffError
from handoff_cli.handoff.check import DIMENSIONS, Report, check_session
from handoff_cli.handoff.pipeline import handoff
from handoff_cli.handoff.prompt import FACTS_INTRO
from handoff_cli.handoff.report import Reporter
from handoff_cli.handoff.writer import register
from handoff_cli.llm.model import resolve_model
from handoff_cli.options import Options
from handoff_cli.sessions.tree import branch, leaf
from tests import calibration, labels
from tests.fakellm import FakeLLMServer, RecordedRequest, Reply

ROOT = Path(__file__).resolve().parent.parent
CORPUS = (ROOT / "tests" / "fixtures", ROOT / "sessions")
FLOOR = 0.95
LOOPBACK = "openai/gpt-4o-mini"

register(resolve_model)  # the writer decided as the command line decides it


Answering = Callable[[RecordedRequest], Reply]


class Scored(NamedTuple):
    name: str
    report: Report


class _Quiet(Reporter):
    """Nothing on stderr: the notes of eighty handoffs are not the figures."""

    def loaded(self, session: object) -> None:
        pass

    def warn(self, text: str) -> None:
        pass


def corpus() -> Iterator[Path]:
    for folder in CORPUS:
        yield from sorted(p for p in folder.rglob("*.jsonl") if labels.REAL not in p.parents)


def score(paths: list[Path], options: Options, work: Path) -> tuple[list[Scored], int]:
    """Each session copied into ``work``, handed off with ``options``, its document checked;
    and how many could not be handed off (too short, unreadable: the corpus tests those)."""
    scored: list[Scored] = []
    refused = 0
    for number, path in enumerate(paths):
        copy = work / f"{number:03d}" / path.name
        copy.parent.mkdir(parents=True)
        shutil.copyfile(path, copy)
        try:
            done = handoff(copy, options, _Quiet())
            session = load_session(copy)
            checked = check_session(session, branch(session, leaf(session, None)))
        except HandoffError:
            refused += 1
            continue
        assert done.score == checked.report.overall, path  # what the gate saw
        scored.append(Scored(str(path.relative_to(ROOT)), checked.report))
    return scored, refused


_PLACES = (
    ("The original task", "Goal"),
    ("The requests since", "Goal"),
    ("The latest request", "Goal"),
    ("A rule the user stated", "Constraints & Preferences"),
    ("Done or not", "Progress"),
    ("Ran `", "Progress"),
    ("A decision", "Key Decisions"),
    ("The error still open", "Critical Context"),
    ("Files ", "Critical Context"),
    ("Paths not found", "Critical Context"),
)


def facts_model(request: RecordedRequest) -> Reply:
    """The loopback model: the prompt's verified facts, each under its section."""
    prompt = str(request.messages[-1]["content"])
    _, _, block = prompt.partition(FACTS_INTRO)
    parts: dict[str, list[str]] = {name: [] for name in SECTIONS}
    for line in block.splitlines():
        if line.startswith("- "):
            fact = line[2:]
            place = next((s for opening, s in _PLACES if fact.startswith(opening)), None)
            parts[place or "Next Steps"].append(line)
    body = {name: "\n".join(lines) or "- (none)" for name, lines in parts.items()}
    return Reply("\n\n".join(f"## {name}\n{body[name]}" for name in SECTIONS))


def headings_model(request: RecordedRequest) -> Reply:
    """The loopback model at its worst: the six headings, nothing under them."""
    return Reply("\n\n".join(f"## {name}\n- (none)" for name in SECTIONS))


def table(rows: list[tuple[str, list[Scored], int]]) -> str:
    head = f"{'writer':<27}{'sessions':>9}" + "".join(f"{d:>11}" for d in DIMENSIONS)
    lines = [head + f"{'overall':>9}{'lowest':>8}"]
    for name, scored, refused in rows:
        cells = []
        for dimension in DIMENSIONS:
            found = [s.report.dimensions[dimension] for s in scored]
            values = [v for v in found if v is not None]
            cells.append(f"{sum(values) / len(values):>11.3f}" if values else f"{'-':>11}")
        overall = [s.report.overall for s in scored]
        mean = sum(overall) / len(overall)
        counted = f"{len(scored)}" + (f"+{refused}" if refused else "")
        lines.append(
            f"{name:<27}{counted:>9}" + "".join(cells) + f"{mean:>9.3f}{min(overall):>8.3f}"
        )
    return "\n".join(lines)


def below(scored: list[Scored], floor: float, most: int) -> Iterator[str]:
    """The sessions under ``floor``, lowest first, each with the probes it misses."""
    for row in sorted(
        (s for s in scored if s.report.overall < floor), key=lambda s: s.report.overall
    )[:most]:
        yield f"  {row.report.overall:.3f} {row.name}"
        for probe in row.report.missing[:4]:
            yield f"      {probe.dimension}: {probe}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--show", type=int, default=3, help="sessions under the floor shown")
    args = parser.parse_args(argv)
    paths = list(corpus())
    rows = []
    with FakeLLMServer() as server, tempfile.TemporaryDirectory() as temporary:
        model = Options(model=LOOPBACK, api_base=server.base_url, api_key="sk-loopback")
        runs: list[tuple[str, Options, Answering | None]] = [
            ("built-in (extractive)", Options(model="extractive"), None),
            ("loopback model (facts)", model, facts_model),
            ("loopback model (headings)", model, headings_model),
        ]
        for number, (name, options, answering) in enumerate(runs):
            if answering is not None:
                server.default = answering
            work = Path(temporary) / str(number)
            work.mkdir()
            rows.append((name, *score(paths, options, work)))
    print(f"Probes (handoff check) over {len(paths)} sessions of the corpus; +N: not handed off")
    print(table(rows))
    for name, scored, _ in rows[:2]:  # the headings-only model is under the floor everywhere
        shown = list(below(scored, FLOOR, args.show))
        if shown:
            print(f"\n{name}: under {FLOOR}")
            print("\n".join(shown))
    builtin = [s.report.overall for s in rows[0][1]]
    mean = sum(builtin) / len(builtin)
    verdict = "met" if mean >= FLOOR else "NOT MET"
    print(f"\nthe built-in writer's overall {mean:.3f} against the floor {FLOOR}: {verdict}")
    print()
    real = labels.main([])  # the real sessions, by their labels
    print()
    calibration.main([])  # the gate on documents written by hand for real sessions
    return 0 if mean >= FLOOR and real == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
