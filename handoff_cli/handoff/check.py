"""The quality gate: what a document holds of a branch's facts, and what it gets wrong.

Deterministic, no model. Each probe is one thing the branch shows (the original task, the
latest request, the files changed, the open error, the last failing command, a rule the user
stated, a decision an earlier summary recorded) with its answer; the document holds it when it
holds the answer's key terms (``terms``: half of them, in any order and anywhere; in another
language than the answer's, half its identifiers), not its words verbatim. A request is judged
without the rules it states (they are probes of their own), and a rule or a decision by its own
terms too, those no other one shares. Then the document's claims (``claims``): a file said to be
changed that was only read, finished work listed as to do, a failure said to be fixed that
still fails, a command said to have run that never ran, a file named that the branch never
names, a fixed failure shown as open. A score per dimension is the share of its probes held;
the overall score is their mean; a document that misses a required probe (the task, the files
changed, the open error) scores at most ``REQUIRED_CAP``, and one the branch contradicts at most
``CONTRADICTED_CAP``: both under the default threshold, whatever else it holds.

``check_document`` is the library's entry; the pipeline checks every document it writes
(``--min-score``), and ``handoff check`` any document a session holds, or one given
(``read_document``).
"""

from __future__ import annotations

import math
import os
import re
import stat
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from handoff_cli.agents import load_session
from handoff_cli.document import SECTIONS, section_list
from handoff_cli.errors import HandoffError, NoDocumentHeldError, NothingToCheckError
from handoff_cli.handoff.claims import (
    Said,
    base,
    contradictions,
    document_items,
    items_of,
    named_files,
    said_failing,
    said_unknown,
    spans_of,
)
from handoff_cli.handoff.facts import Command, Facts, facts_of, sentences
from handoff_cli.handoff.terms import (
    HOLD_SHARE,
    MOST_TERMS,
    TERM_CHARS,
    Terms,
    key_terms,
)
from handoff_cli.said import prompt_file
from handoff_cli.sessions.session import Record, Session, parent_session
from handoff_cli.sessions.tree import branch
from handoff_cli.text import one_line, text_of

DIMENSIONS = ("task", "artifacts", "state", "rules", "decisions", "errors")
REQUIRED_CAP = 0.5
"""The most a document that misses a required probe scores: under ``options.DEFAULT_MIN_SCORE``."""
CONTRADICTED_CAP = 0.4
"""The most a document the branch contradicts scores: under one that only misses something."""
FILES_SHARE = 0.5
"""The share of the files changed a document must name (a long list is summed up by its
important ones)..."""
FILES_ENOUGH = 8
"""... or this many of them."""
RULES_ENOUGH = 6
"""The rules a document must hold for its rules to score in full (a spec of twenty is summed
up, not copied)."""
ANSWER_CHARS = 300
MAX_DOCUMENT_BYTES = 1 << 20
"""The longest document ``read_document`` reads: some 130 times a document of the default
``--max-doc-tokens``. What is longer is no handoff document, and what never ends (a device, a
stream) must not be read to its end."""


@dataclass(frozen=True)
class Probe:
    """One question a document must answer from itself, with the branch's answer."""

    dimension: str
    question: str
    answer: str
    held: bool
    required: bool = False
    wrong: bool = False
    """A probe of a mistake found in the document (then never held): what it says is wrong."""
    basis: str = ""
    """The text whose key terms it is judged by, when not ``answer`` (a request without the
    rules it states)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "dimension": self.dimension,
            "question": self.question,
            "answer": self.answer,
            "held": self.held,
            "required": self.required,
            "wrong": self.wrong,
        }

    def __str__(self) -> str:
        return f"{self.question}: {one_line(self.answer, 120)}"


@dataclass(frozen=True)
class Report:
    """The probes of one document, and its scores."""

    probes: tuple[Probe, ...]

    @property
    def dimensions(self) -> dict[str, float | None]:
        """Each dimension's share of probes held (of rules, ``RULES_ENOUGH`` held is all: a
        long list is summed up by its main ones); None where the branch gives it none."""
        scores: dict[str, float | None] = {}
        for name in DIMENSIONS:
            mine = [p for p in self.probes if p.dimension == name]
            most = min(len(mine), RULES_ENOUGH) if name == "rules" else len(mine)
            scores[name] = min(1.0, sum(p.held for p in mine) / most) if mine else None
        return scores

    @property
    def overall(self) -> float:
        """The mean of the dimensions that have probes (1.0 with none), at most
        ``REQUIRED_CAP`` when a required probe is missed, and ``CONTRADICTED_CAP`` when the
        branch contradicts the document."""
        scored = [s for s in self.dimensions.values() if s is not None]
        mean = sum(scored) / len(scored) if scored else 1.0
        if any(p.required and not p.held for p in self.probes):
            mean = min(mean, REQUIRED_CAP)
        if any(p.wrong for p in self.probes):
            mean = min(mean, CONTRADICTED_CAP)
        return math.floor(mean * 1000) / 1000  # never rounded up past a threshold

    @property
    def missing(self) -> tuple[Probe, ...]:
        """The probes not held: what is missing, then what is wrong."""
        return tuple(p for p in self.probes if not p.held and not p.wrong) + tuple(
            p for p in self.probes if p.wrong
        )

    def passes(self, min_score: float) -> bool:
        return self.overall >= min_score

    def to_json(self) -> dict[str, Any]:
        return {
            "score": self.overall,
            "dimensions": self.dimensions,
            "probes": [p.to_json() for p in self.probes],
            "missing": [str(p) for p in self.missing],
        }


def check_document(facts: Facts, document: str, branch: Sequence[Record] = ()) -> Report:
    """The probes of ``facts`` against ``document``: what it holds, and what it gets wrong
    (``branch``, the records the facts were read from: what it holds anywhere, as text)."""
    held = Terms(document)
    said = Said(branch, facts)
    known = {base(path) for path in (*facts.read_set, *facts.modified_files)}
    names = {base(path) for path in named_files(document)} - known
    said.look_for([*names, *(span.strip() for span in spans_of(document))])  # one read for all
    probes = [*_task(facts, held), *_artifacts(facts, held), *_state(facts, held, document)]
    probes += _said(facts.rules, "rules", "a rule the user stated", held)
    probes += _said(_decisions(facts), "decisions", "a decision recorded earlier", held)
    probes += _errors(facts, held)
    probes += (
        Probe(c.dimension, c.question, c.answer, False, wrong=True)
        for c in contradictions(facts, said, document)
    )
    probes += _untouched_files(facts, said, document)
    return Report(tuple(probes))


@dataclass(frozen=True)
class Checked:
    """A document a session holds, checked against the facts of the branch it was written from."""

    report: Report
    document: str
    source: str
    """What it is: ``handoff``, ``compaction``, ``start`` (the one the session starts from, its
    facts read from the session it was handed off from) or ``given``."""


def read_document(source: Path | BinaryIO) -> str:
    """The text of a document to check: the regular file at a path (a FIFO, whose open would
    wait for a writer, and a device, which may never end, are refused), or a stream read to its
    end (stdin); at most ``MAX_DOCUMENT_BYTES`` of either, UTF-8. ``ValueError`` says what is
    wrong, ``OSError`` what could not be read."""
    if isinstance(source, Path):
        fd = os.open(source, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            mode = os.fstat(fd).st_mode
            if not stat.S_ISREG(mode):
                raise ValueError("is a folder" if stat.S_ISDIR(mode) else "not a regular file")
            with open(fd, "rb", closefd=False) as file:
                data = file.read(MAX_DOCUMENT_BYTES + 1)
        finally:
            os.close(fd)
    else:
        data = source.read(MAX_DOCUMENT_BYTES + 1)
    if len(data) > MAX_DOCUMENT_BYTES:
        raise ValueError(f"longer than {MAX_DOCUMENT_BYTES >> 20} MiB: no handoff document")
    try:
        return data.decode()
    except UnicodeDecodeError:
        raise ValueError("not UTF-8 text") from None


def check_session(session: Session, records: list[Record], document: str | None = None) -> Checked:
    """``document`` (or, None, the latest the branch ``records`` holds: a recorded handoff, a
    compaction's summary, or the one it starts from) against the facts of the branch before it
    (of the session it was handed off from, for the one it starts from)."""
    if document is not None:
        facts = facts_of(session, records)
        return Checked(check_document(facts, document, records), document, "given")
    facts = facts_of(session, records)
    found: tuple[int, str, str] | None = None
    if facts.previous_document is not None and facts.anchor is not None:
        found = (facts.anchor, facts.previous_document, "handoff")
    for index in range(len(records) - 1, (found[0] if found else -1), -1):
        entry = records[index].entry
        if records[index].type == "compaction" and entry is not None:
            summary = entry.get("summary")
            if isinstance(summary, str) and summary.strip():
                found = (index, summary.strip(), "compaction")
                break
    if found is None:
        raise NoDocumentHeldError(session.path)
    index, text, kind = found
    before = records[:index]
    if any(r.type == "message" for r in before):
        return Checked(check_document(facts_of(session, before), text, before), text, kind)
    origin, written = _origin(session, text)
    return Checked(check_document(facts_of(origin, written), text, written), text, "start")


def _origin(session: Session, document: str) -> tuple[Session, list[Record]]:
    """The session a document was handed off from, and its branch up to the answer that wrote
    it (the recorded exchange); else the error that says to check that session instead."""
    named = parent_session(session.header)
    if named is None:
        raise NothingToCheckError(f"{session.path} starts from a document of no known session")
    path = Path(named).expanduser()
    if not path.is_absolute():
        path = session.path.parent / path
    try:
        parent = load_session(path)
    except HandoffError:
        raise NothingToCheckError(
            f"{session.path} starts from a document of {named}, which cannot be read: check "
            "that session, or give the document and its session (--document)"
        ) from None
    for record in parent.records:
        if record.facts is None or record.facts.role != "assistant":
            continue
        if text_of(record.message().get("content"), "\n").strip() == document:
            return parent, branch(parent, record)[:-1]
    raise NothingToCheckError(
        f"{session.path} starts from a document that {named} does not record: check that "
        "session, or give the document and its session (--document)"
    )


def repair_prompt(report: Report, sections: tuple[str, ...] = SECTIONS) -> str:
    """Asks once for the document again, written from the conversation: what the probes found
    missing, named by kind and never by its answer (a rewrite must find it in the conversation,
    not copy it from the check), and what the branch contradicts, with what it shows."""
    lines = []
    for probe in report.missing:
        if probe.wrong:
            lines.append(f"- It is wrong: {probe.answer}.")
        else:
            lines.append(f"- It does not give {probe.question}.")
    found = "\n".join(dict.fromkeys(lines))
    return _REPAIR.format(sections=section_list(sections), found=found)


_REPAIR = """\
A check of the handoff document you wrote against this conversation found:

{found}

Write the document again from the conversation, in the same Markdown sections ({sections}): \
state what the conversation shows, correct what it contradicts, keep everything else that is \
true, and add nothing it does not show. Answer with the document alone."""


# --- the probes ---------------------------------------------------------------------------------


def _task(facts: Facts, held: Terms) -> Iterator[Probe]:
    """The original task (the first request that is no prompt file's text; held too when a
    later request that restates it is: people often say what they want better the second
    time) and the latest request."""
    own = [r for r in facts.requests if not prompt_file(r)]
    task, latest = (own[0] if own else None), facts.latest_request
    for text, question, required in (
        (task, "the original task", True),
        (latest, "the latest request", False),
    ):
        if not text or not key_terms(text, 1) or (not required and text == task):
            continue
        basis = _without_rules(text, facts.rules)
        kept = held.keeps(basis)
        if required and not kept:
            kept = any(held.keeps(r) for r in own[1:] if len(key_terms(r)) >= 3) or kept
        if kept is not None:  # else: in another language, with no name to hold it by
            yield Probe("task", question, _short(text), kept, required, basis=basis)


def _without_rules(request: str, rules: Iterable[str]) -> str:
    """A request without the rules it states (as ``facts`` cut them out: white space folded),
    unless nothing else is left. Only its start: its key terms are looked for there."""
    rest = " ".join(request[: 4 * MOST_TERMS * TERM_CHARS].split())
    for rule in rules:
        rest = rest.replace(rule, " ")
    return rest if key_terms(rest, 1) else request


def _artifacts(facts: Facts, held: Terms) -> Iterator[Probe]:
    """Each file changed, and (required) the files changed: most of them named."""
    paths = [p for p in facts.modified_files if not any(c in p for c in "*?[")]  # no patterns
    # A file counts by its folder too, when the folder is its own (`pipeline/`).
    named = [
        held.holds(path) or held.holds(facts.shown(path)) or _folder_named(path, held)
        for path in paths
    ]
    for path, found in zip(paths, named, strict=True):
        yield Probe("artifacts", "a file changed", path, found)
    if paths:
        answer = ", ".join(facts.shown(path) for path in paths)
        yield Probe(
            "artifacts", "the files changed", _short(answer), enough_files(named), required=True
        )


def enough_files(named: Sequence[bool]) -> bool:
    """Whether enough of the files changed are named: half of them, or a long list's
    ``FILES_ENOUGH``."""
    return sum(named) >= min(len(named) * FILES_SHARE, FILES_ENOUGH)


def _folder_named(path: str, held: Terms) -> bool:
    parts = path.replace("\\", "/").split("/")
    folder = parts[-2] if len(parts) > 1 else ""
    return len(folder) >= 4 and folder.casefold() not in _GENERIC_FOLDERS and held.holds(folder)


_GENERIC_FOLDERS = frozenset(
    "src lib app apps test tests spec specs docs doc scripts bin pkg cmd internal components "
    "pages utils util commands packages public assets config configs static core common".split()
)
"""Folders too common to stand for the files in them."""


def _last_failure(facts: Facts) -> Command | None:
    """The last failing test, build or check (a step a reader wants the outcome of)."""
    failed = [c for c in facts.commands if not c.ok and c.milestone and c.known]
    return failed[-1] if failed else None


def _state(facts: Facts, held: Terms, document: str) -> Iterator[Probe]:
    """Where the work stands: the call the branch ends on with no result (required: said to be
    of unknown outcome, or to check), and the last failing check (required while it still
    fails, and no open error says so: said to fail)."""
    if facts.unanswered:
        answer = (
            f"`{one_line(facts.unanswered, ANSWER_CHARS)}` has no result: its outcome is unknown"
        )
        yield Probe(
            "state",
            "the call with no result",
            answer,
            said_unknown(document, facts.unanswered),
            required=True,
        )
    command = _last_failure(facts)
    if command is None or (facts.open_error and not command.resolved):
        return  # none; or the open error, a required probe of its own
    if command.resolved:
        kept = held.keeps(command.text)
        if kept is not None:
            answer = f"`{command.text}` failed, then fixed"
            yield Probe("state", "the last failing command", answer, kept)
    else:
        answer = f"`{command.text}` failed, and never passed after"
        yield Probe(
            "state",
            "the failing check",
            answer,
            said_failing(document, command.text),
            required=True,
        )


def _said(texts: Iterable[str], dimension: str, question: str, held: Terms) -> Iterator[Probe]:
    said = [(text, key_terms(text)) for text in texts]
    counts = Counter(term for _, terms in said for term in set(terms))
    for text, terms in said:
        own = [term for term in terms if counts[term] == 1]
        kept = held.keeps(text)
        if terms and kept is not None:
            own_held = not own or sum(map(held.holds, own)) / len(own) >= HOLD_SHARE
            yield Probe(dimension, question, _short(text), kept and own_held)


def _decisions(facts: Facts) -> list[str]:
    """The items of every Key Decisions section of the summaries the branch holds."""
    found: list[str] = []
    for sections in (facts.summary, *facts.branch_summaries):
        for heading, body in sections:
            if re.search(r"decision", heading, re.IGNORECASE):
                found += [i for i in items_of(body) if i not in found]
    return found


def _errors(facts: Facts, held: Terms) -> Iterator[Probe]:
    if facts.open_error:
        first = facts.open_error.partition("\n")[0]
        kept = held.keeps(first)
        if kept is not None:
            yield Probe("errors", "the open error", _short(first), kept, required=True)


# --- files never touched ------------------------------------------------------------------------


_TO_COME = re.compile(
    r"\b(?:will|would|should|could|plan(?:ned|s)?|propos(?:e|ed|al)|suggest(?:ed|s)?|consider|"
    r"later|next|todo|to be (?:added|created|written))\b|将|建议|计划|予定|提案|検討|예정|제안",
    re.IGNORECASE,
)
"""What is said of work to come, not of what the session did."""
_NOT_THIS = re.compile(
    r"\b(?:not|rather than|instead of|never|without)\b|而不是|而非|不是|ではなく|대신|вместо|"
    r"em vez de|en lugar de|en vez de|statt|anstatt|au lieu de|plutôt que|thay vì|بدلا من",
    re.IGNORECASE,
)
"""Where a clause turns to what was not done: the files named after it are no claim."""
_INSTRUCTIONS = frozenset(("AGENTS.md", "CLAUDE.md", "GEMINI.md", "AGENTS.override.md"))
"""The instructions files the agents read by themselves, named in no call."""


def _untouched_files(facts: Facts, said: Said, document: str) -> Iterator[Probe]:
    """A file the document names, but for one still to write, that the branch never read,
    changed or named anywhere: not in a request, a call, an output, a written file or the
    assistant's words."""
    known = {base(path) for path in (*facts.read_set, *facts.modified_files)}
    said_done = "\n".join(
        _NOT_THIS.split(clause, 1)[0]  # "in MEMORY.md, not in `~/.x/CLAUDE.md`": not a claim
        for item in document_items(document)
        if item.place != "pending"
        for clause in sentences(item.text)
        if not _TO_COME.search(clause)  # a file to write later, in any section
    )
    for path in sorted(named_files(said_done)):
        name = base(path)
        if name not in known and name not in _INSTRUCTIONS and not said.names(name):
            answer = f"`{path}` is named, but the session never read, changed or named it"
            yield Probe("artifacts", "a file the session never touched", answer, False, wrong=True)


def _short(text: str) -> str:
    return one_line(text, ANSWER_CHARS)
