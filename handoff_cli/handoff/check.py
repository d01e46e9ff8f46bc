"""The quality gate: probes drawn from a branch's facts, and whether a document holds them.

Deterministic, no model: each probe is one thing the branch shows (the original task, the
latest request, a file changed, the open error, the last failing command, a rule the user
stated, a decision an earlier summary recorded) with its answer; the document holds it when it
holds the answer's key terms (half of them at least, in any order and anywhere: a paraphrase
keeps its names and nouns), not its words verbatim. A request is judged without the rules it
states (they are probes of their own), and a rule or a decision by its own terms too, those no
other one shares (rules alike in their words are not held by one of them). Probes of what a
document gets wrong are added only when it does: a fixed failure shown as open, finished work
listed as pending, a file named that the session never touched. A score per dimension is the
share of its probes held; the overall score is their mean, and a document that misses a
required probe (the task, a file changed, the open error) scores at most ``REQUIRED_CAP``,
under the default threshold, whatever else it holds.

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
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from handoff_cli.agents import load_session
from handoff_cli.errors import HandoffError, NoDocumentHeldError, NothingToCheckError
from handoff_cli.handoff.document import (
    SECTIONS,
    Sections,
    section_list,
    sections_of,
    without_files,
)
from handoff_cli.handoff.facts import Command, Facts, facts_of
from handoff_cli.sessions.session import Record, Session, parent_session
from handoff_cli.sessions.tree import branch
from handoff_cli.text import one_line, text_of

DIMENSIONS = ("task", "artifacts", "state", "rules", "decisions", "errors")
REQUIRED_CAP = 0.5
"""The most a document that misses a required probe scores: under ``options.DEFAULT_MIN_SCORE``."""
HOLD_SHARE = 0.5
"""The share of a probe's key terms a document must hold to hold the probe."""
PENDING_SHARE = 0.7
"""The share of a finished item's terms a pending item must hold to be the same work: a
restatement, not a mere mention."""
MOST_TERMS = 16
"""The key terms a probe is judged by: the first ones of its answer (a long request is cut in
a document, and what it says first says what it is)."""
ANSWER_CHARS = 300
TERM_CHARS = 64
"""How far into a text its key terms are looked for, for each one wanted."""
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
        """Each dimension's share of probes held; None where the branch gives it none."""
        scores: dict[str, float | None] = {}
        for name in DIMENSIONS:
            mine = [p for p in self.probes if p.dimension == name]
            scores[name] = sum(p.held for p in mine) / len(mine) if mine else None
        return scores

    @property
    def overall(self) -> float:
        """The mean of the dimensions that have probes (1.0 with none), at most
        ``REQUIRED_CAP`` when a required probe is missed."""
        scored = [s for s in self.dimensions.values() if s is not None]
        mean = sum(scored) / len(scored) if scored else 1.0
        if any(p.required and not p.held for p in self.probes):
            mean = min(mean, REQUIRED_CAP)
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


def check_document(facts: Facts, document: str) -> Report:
    """The probes of ``facts`` against ``document``: what it holds, and what it gets wrong."""
    held = Terms(document)
    probes = [*_task(facts, held), *_artifacts(facts, held), *_state(facts, held)]
    probes += _said(facts.rules, "rules", "a rule the user stated", held)
    probes += _said(_decisions(facts), "decisions", "a decision recorded earlier", held)
    probes += _errors(facts, held, document)
    probes += _finished_as_pending(facts, document)
    probes += _untouched_files(facts, document)
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
        return Checked(check_document(facts_of(session, records), document), document, "given")
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
        return Checked(check_document(facts_of(session, before), text), text, kind)
    origin, written = _origin(session, text)
    return Checked(check_document(facts_of(origin, written), text), text, "start")


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


def repair_prompt(document: str, report: Report, sections: tuple[str, ...] = SECTIONS) -> str:
    """Asks once for the document again, in its ``sections``, with what the probes found
    missing or wrong."""
    lines = []
    for probe in report.missing:
        if probe.wrong:
            lines.append(f"- Correct: {probe.question}: {probe.answer}")
        else:
            lines.append(f"- Add {probe.question}: {probe.answer}")
    found = "\n".join(lines)
    return _REPAIR.format(sections=section_list(sections), found=found, document=document)


_REPAIR = """\
The handoff document below misses what the session shows. Rewrite it in the same Markdown \
sections ({sections}), keeping every fact it holds, and make it hold each of these, exactly as \
given (paths, names, commands and errors verbatim):

{found}

Answer with the rewritten document alone.

<document>
{document}
</document>"""


# --- key terms --------------------------------------------------------------------------------

_STOP = frozenset(
    """a about above after again all also am an and any are as at be been before being below
    but by can could did do does doing done for from further had has have having here how i if
    in into is it its itself just let me more most my no nor not now of off on once only or
    other our out over own same she should so some such than that the their them then there
    these they this those through to too under until up us very was we were what when whenever
    where which while who why will with would you your yours please thanks want need make sure
    one two get got use used using like way also lets let's it's that's i'm i'll we'll don't
    doesn't isn't can't won't""".split()
)
_TOKEN = re.compile(r"[\w][\w./@+-]*[\w]|\w")
_SUFFIXES = ("ies", "ing", "es", "ed", "s")


def _stem(word: str) -> str:
    """A word as terms compare: lower case, a plural or tense ending off a plain word."""
    word = word.casefold()
    if not word.isalpha() or len(word) <= 4:
        return word
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


def key_terms(text: str, most: int = MOST_TERMS) -> list[str]:
    """The first ``most`` distinct terms of ``text`` a paraphrase keeps, in order: names,
    paths, numbers and content words, stemmed; not the little words. Read no further than
    ``TERM_CHARS`` a term: a request can be megabytes long, and say little new."""
    found: dict[str, None] = {}
    for match in _TOKEN.finditer(text, 0, most * TERM_CHARS):
        term = _stem(match.group().strip("."))
        if len(term) >= 2 and term not in _STOP and not (len(term) < 3 and term.isalpha()):
            found.setdefault(term, None)
            if len(found) == most:
                break
    return list(found)


class Terms:
    """The terms a document holds: each token, and each part of a path or a dotted name (a
    ``<files>`` block names a file by its folder and its name)."""

    def __init__(self, document: str) -> None:
        self.terms: set[str] = set()
        for token in _TOKEN.findall(document):
            token = token.strip(".")
            self.terms.add(_stem(token))
            for part in re.split(r"[/\\]", token):
                if part:
                    self.terms.add(_stem(part))

    def holds(self, term: str) -> bool:
        term = _stem(term)
        if term in self.terms:
            return True
        name = re.split(r"[/\\]", term)[-1]  # a path named by its file's name
        return "/" in term and "." in name and name in self.terms

    def share(self, text: str) -> float:
        """The share of the key terms of ``text`` held (1.0 when it has none)."""
        terms = key_terms(text)
        return sum(map(self.holds, terms)) / len(terms) if terms else 1.0

    def keeps(self, text: str) -> bool:
        return self.share(text) >= HOLD_SHARE


# --- the probes ---------------------------------------------------------------------------------


def _task(facts: Facts, held: Terms) -> Iterator[Probe]:
    task, latest = facts.original_task, facts.latest_request
    if task and key_terms(task, 1):
        basis = _without_rules(task, facts.rules)
        yield Probe("task", "the original task", _short(task), held.keeps(basis), True, basis=basis)
    if latest and latest != task and key_terms(latest, 1):
        basis = _without_rules(latest, facts.rules)
        yield Probe("task", "the latest request", _short(latest), held.keeps(basis), basis=basis)


def _without_rules(request: str, rules: Iterable[str]) -> str:
    """A request without the rules it states (as ``facts`` cut them out: white space folded),
    unless nothing else is left. Only its start: its key terms are looked for there."""
    rest = " ".join(request[: 4 * MOST_TERMS * TERM_CHARS].split())
    for rule in rules:
        rest = rest.replace(rule, " ")
    return rest if key_terms(rest, 1) else request


def _artifacts(facts: Facts, held: Terms) -> Iterator[Probe]:
    for path in facts.modified_files:
        if any(c in path for c in "*?["):
            continue  # a pattern a command removed by, no file's name
        found = held.holds(path) or held.holds(facts.shown(path))
        yield Probe("artifacts", "a file changed", path, found, required=True)


def _last_failure(facts: Facts) -> Command | None:
    """The last failing test, build or check (a step a reader wants the outcome of)."""
    failed = [c for c in facts.commands if not c.ok and c.milestone and c.known]
    return failed[-1] if failed else None


def _state(facts: Facts, held: Terms) -> Iterator[Probe]:
    command = _last_failure(facts)
    if command is not None and (command.resolved or not facts.open_error):  # else: the error
        how = "failed, then fixed" if command.resolved else "failed, still open"
        answer = f"`{command.text}` {how}"
        yield Probe("state", "the last failing command", answer, held.keeps(command.text))


def _said(texts: Iterable[str], dimension: str, question: str, held: Terms) -> Iterator[Probe]:
    said = [(text, key_terms(text)) for text in texts]
    counts = Counter(term for _, terms in said for term in set(terms))
    for text, terms in said:
        own = [term for term in terms if counts[term] == 1]
        kept = held.keeps(text) and (not own or sum(map(held.holds, own)) / len(own) >= HOLD_SHARE)
        if terms:
            yield Probe(dimension, question, _short(text), kept)


def _decisions(facts: Facts) -> list[str]:
    """The items of every Key Decisions section of the summaries the branch holds."""
    found: list[str] = []
    for sections in (facts.summary, *facts.branch_summaries):
        for heading, body in sections:
            if re.search(r"decision", heading, re.IGNORECASE):
                found += [i for i in items_of(body) if i not in found]
    return found


def _errors(facts: Facts, held: Terms, document: str) -> Iterator[Probe]:
    if facts.open_error:
        first = facts.open_error.partition("\n")[0]
        yield Probe("errors", "the open error", _short(first), held.keeps(first), required=True)
    lines = without_files(document).splitlines()
    still_open = facts.open_error.partition("\n")[0] if facts.open_error else ""
    shown: set[str] = set()
    for command in facts.commands:
        text = command.text
        if not command.resolved or text in shown or text in still_open:
            continue
        if any(text in line and _OPEN.search(line) and not _FIXED.search(line) for line in lines):
            shown.add(text)
            answer = f"`{text}` failed, then passed: the document shows it open"
            yield Probe("errors", "a fixed failure shown as open", answer, False, wrong=True)


_OPEN = re.compile(
    r"still (?:open|fail|broken|red)|\bfail(?:s|ing)\b|error still open|unresolved|not (?:yet )?"
    r"fixed|\bbroken\b|\bopen error\b",
    re.IGNORECASE,
)
_FIXED = re.compile(r"\bfixed\b|\bpass(?:es|ed)?\b|\bresolved\b|\bgreen\b|\bnow works\b", re.I)


# --- finished work listed as pending -------------------------------------------------------------

_BULLET = re.compile(r"^\s*(?:[-*•+]|\d+[.)])\s+(?:\[[ xX]\]\s*)?")
_CHECKED = re.compile(r"^\s*(?:[-*•+]|\d+[.)])\s+\[[xX]\]")
_DONE_VERB = re.compile(
    r"\b(?:done|finished|fixed|completed?|implemented|added|merged|wrote|written|created|"
    r"updated|removed|renamed|moved|refactored|replaced|extracted|converted|passed|passing|"
    r"pass|passes|works)\b",
    re.IGNORECASE,
)
_NOT_YET = re.compile(r"\b(?:not|to|needs?|should|will|must|todo|pending|yet|still)\b", re.I)
_SUBHEADING = re.compile(r"^#{3,}\s*(.+?)\s*$")
_PENDING = re.compile(r"pending|\bto ?do\b|remaining|not started", re.IGNORECASE)
_DONE = re.compile(r"\bdone\b|complet|finish|accomplish", re.IGNORECASE)


def items_of(body: str) -> list[str]:
    """A section's items: each bullet or numbered line with the lines that continue it, or a
    paragraph; placeholders such as "(none)" are none."""
    found: list[list[str]] = []
    for line in body.splitlines():
        bullet = _BULLET.match(line)
        if not line.strip() or _SUBHEADING.match(line):
            found.append([])
        elif bullet:
            found.append([line[bullet.end() :]])
        elif found:
            found[-1].append(line.strip())
        else:
            found.append([line])
    items = (" ".join(part.strip() for part in item).strip() for item in found)
    return [i for i in items if i and not re.fullmatch(r"\(?(?:none|nothing|n/a)[^)]*\)?\.?", i)]


def finished_item(item: str) -> bool:
    """Whether a progress item says its work is finished ("Export command added", "Done:
    ...", "all tests pass"), in its first clause, and not as what is still to be done."""
    clause = re.split(r"[.;:(](?:\s|$)", item, maxsplit=1)[0]
    verb = _DONE_VERB.search(clause)
    return verb is not None and _NOT_YET.search(clause[: verb.start()]) is None


def _progress_parts(sections: Sections) -> list[tuple[str, str]]:
    """The parts of a Progress section: (``### `` heading, its text); a heading that carries an
    item after a colon (``### Pending: export added``) gives that item to its part."""
    parts: list[tuple[str, list[str]]] = []
    for heading, body in sections:
        if heading.casefold() != "progress":
            continue
        parts.append(("", []))
        for line in body.splitlines():
            sub = _SUBHEADING.match(line)
            if sub:
                name, _, inline = sub.group(1).partition(":")
                parts.append((name.strip(), [f"- {inline.strip()}"] if inline.strip() else []))
            else:
                parts[-1][1].append(line)
    return [(name, "\n".join(lines)) for name, lines in parts]


def _finished(facts: Facts) -> list[str]:
    """The work the summaries the branch holds call finished: their Done items, and the items
    of a plain Progress list that say they are done (checked, or "added ...")."""
    done: list[str] = []
    for name, body in _progress_parts(facts.summary):
        if name and _DONE.search(name) and not _PENDING.search(name):
            done += items_of(body)
        elif not name:
            lines = [line for line in body.splitlines() if _BULLET.match(line)]
            done += [
                item
                for line in lines
                for item in items_of(line)
                if _CHECKED.match(line) or finished_item(item)
            ]
    return done


def _finished_as_pending(facts: Facts, document: str) -> Iterator[Probe]:
    finished = [item for item in _finished(facts) if len(key_terms(item)) >= 2]
    if not finished:
        return
    pending = [
        item
        for name, body in _progress_parts(sections_of(document))
        if name and _PENDING.search(name)
        for item in items_of(body)
    ]
    for item in finished:
        terms = key_terms(item)
        for listed in pending:
            there = set(key_terms(listed, len(listed)))
            if sum(t in there for t in terms) / len(terms) >= PENDING_SHARE:
                answer = f"{_short(item)}: finished, and the document lists it as pending"
                yield Probe("state", "finished work listed as pending", answer, False, wrong=True)
                break


# --- files never touched ------------------------------------------------------------------------

_EXTENSIONS = (
    "py pyi js mjs cjs jsx ts tsx json jsonl toml yaml yml md rst txt rs go java kt c h cc cpp "
    "hpp cs rb php sh bash zsh css scss html sql ini cfg conf xml swift vue svelte lua ex exs "
    "zig dart scala gradle lock env proto tf"
).split()
_FILE = re.compile(
    r"(?<![\w/.@:-])((?:[\w.-]+/)*[\w][\w.-]*\.(?:" + "|".join(_EXTENSIONS) + r"))(?![\w/-])"
)


def _named_files(text: str) -> set[str]:
    return {m.group(1) for m in _FILE.finditer(text) if "://" not in m.group(1)}


def _untouched_files(facts: Facts, document: str) -> Iterator[Probe]:
    """A file the document names that the session neither read nor changed, nor named
    anywhere the facts hold (a request, a command, an error, a summary)."""
    known = set(facts.read_set) | set(facts.modified_files)
    names = {path.replace("\\", "/").rsplit("/", 1)[-1] for path in known}
    for path in sorted(_named_files(without_files(document))):
        name = path.rsplit("/", 1)[-1]
        if path in known or name in names:
            continue
        # Looked for as text, only for a name not touched: a fact can be megabytes long.
        if not any(name in text for text in _fact_texts(facts)):
            answer = f"`{path}` is named, but the session never read, changed or named it"
            yield Probe("artifacts", "a file the session never touched", answer, False, wrong=True)


def _fact_texts(facts: Facts) -> Iterator[str]:
    yield from (facts.original_task or "", facts.latest_request or "", facts.open_error or "")
    yield from (facts.last_answer or "", facts.previous_document or "")
    yield from facts.rules
    yield from (c.text for c in facts.commands)
    for sections in (facts.summary, *facts.branch_summaries):
        for heading, body in sections:
            yield heading
            yield body


def _short(text: str) -> str:
    return one_line(text, ANSWER_CHARS)
