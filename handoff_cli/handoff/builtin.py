"""The built-in extractive writer: the six-section document, made from the facts of the session.

No model, no key, no network: free, instant and reproducible (the same facts give the same
bytes). It builds from ``facts.Facts`` alone, never from prose another module rendered: the
latest summary's sections (a compaction's, or the previous handoff document's) each under its
heading, the original task and the latest request verbatim, the rules, what is done and what is
not, the files, the commands and the error still open. Every list holds at most 12 items, every
command one line, and the document stays within its token cap; a focus puts what matches it
first, and never makes the document longer.

``Builtin`` is this writer as a ``writer.Writer``, beside the models reached through LiteLLM.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from handoff_cli.document import SECTIONS, Sections
from handoff_cli.handoff.claims import finished_item
from handoff_cli.handoff.conversation import Conversation
from handoff_cli.handoff.facts import Facts, sentences
from handoff_cli.handoff.plan import (
    CHARS_PER_TOKEN,
    Plan,
    rough_count,
    rough_tokens,
    sized_requests,
)
from handoff_cli.handoff.prompt import ChatMessage, spawned
from handoff_cli.handoff.writer import Answer, Brief, Planned, Written
from handoff_cli.options import DEFAULT_DOCUMENT_TOKENS, Options
from handoff_cli.text import one_line

if TYPE_CHECKING:
    from handoff_cli.agents.context import Context
    from handoff_cli.handoff.redact import Redactor
    from handoff_cli.handoff.report import Reporter

EXTRACTIVE = "handoff/extractive"
"""The built-in writer's name, as results and notes give it (``--model extractive``)."""
LIST_ITEMS = 12
QUOTE_CHARS = 600
NOTHING = "- (none recorded)"
EARLIER_PATH = "On an earlier path, since left:"

_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")
_SUBHEADING = re.compile(r"^#{3,}\s*(.+?)\s*$")
# Items this writer derives from the facts: an earlier document's copies of them are stale,
# since the facts are computed again from the whole branch.
_DERIVED = re.compile(
    r"^(The errors? still open|Files (changed|read|written by shell)|Ran `|The latest request|"
    r"Where (the assistant|it) stopped|The user answered |Fix the error|Answer the latest request|"
    r"Finish the latest request: |Go on as the assistant planned: |The original task|Requests "
    r"since|Paths (that were )?not found|Confirm the result with the user|The work asked for is "
    r"done|The assistant's last words|Check whether the call|Ask the user how to go on|Make the "
    r"change to|Read the last result)"
)
_FITS = (  # how much of each part, loose to tight (see _Fit): the requests and rules last
    (600, 12, 600, 160, 200, 20),
    (600, 12, 300, 100, 200, 20),
    (500, 10, 240, 72, 200, 18),
    (400, 8, 200, 64, 200, 16),
    (400, 6, 160, 62, 200, 16),
    (300, 4, 120, 62, 200, 14),
    (300, 3, 100, 62, 200, 12),
    (300, 2, 80, 62, 120, 12),
    (240, 2, 80, 60, 80, 10),
    (200, 1, 80, 50, 40, 8),
    (160, 1, 60, 40, 20, 6),
)


def write_document(
    facts: Facts, focus: str | None = None, max_tokens: int = DEFAULT_DOCUMENT_TOKENS
) -> str:
    """The handoff document for ``facts``, within ``max_tokens`` (4 characters a token)."""
    draft = _Draft.of(facts, focus)
    for fit in _FITS:  # less of each list until it fits
        document = draft.render(_Fit(*fit))
        if len(document) <= max_tokens * CHARS_PER_TOKEN:
            return document
    return document[: max_tokens * CHARS_PER_TOKEN].rsplit("\n", 1)[0] + "\n"


@dataclass(frozen=True)
class Builtin:
    """The built-in writer: it reads the facts alone, so no conversation, no window, no
    request, no cost; it answers in this process."""

    name: str = EXTRACTIVE
    window: int | None = None
    prompted: bool = False

    def price(self, input_tokens: int, output_tokens: int) -> float:
        return 0.0

    def preload(self, path: Path) -> None:
        """Nothing to load."""

    def fitted_focus(self, focus: str | None, reporter: Reporter) -> str | None:
        return focus  # it only orders what it writes, never lengthens it

    def conversation(
        self, context: Context, prompt: ChatMessage, mask: Redactor | None
    ) -> tuple[Conversation, ChatMessage]:
        return Conversation.empty(), prompt

    def planned(self, brief: Brief) -> Planned:
        plan = _NO_PLAN
        sized = sized_requests(plan, brief.prompt, rough_count, 0, brief.conversation)
        return Planned(plan, tuple(sized), None, None)

    async def write(self, brief: Brief, options: Options, reporter: Reporter) -> Written:
        reporter.stage(f"asking {self.name}")
        document = write_document(brief.facts, brief.focus, options.max_doc_tokens)
        provider, _, model = self.name.partition("/")
        asked, answered = rough_count([brief.prompt]), rough_tokens(len(document))
        return Written(Answer(document, provider, model, asked, answered, 0.0, 0.0), [], _NO_PLAN)

    async def revise(
        self, brief: Brief, document: str, request: str, options: Options, reporter: Reporter
    ) -> None:
        """The same facts give the same document: nothing to ask again."""


_NO_PLAN = Plan("single", range(0))
"""The one request it stands for: the prompt, no conversation."""

BUILTIN = Builtin()


class _Fit(NamedTuple):
    """How much of each part a rendering holds."""

    quote: int
    """The characters of the first and the latest request."""
    items: int
    """The items of a list."""
    item: int
    """The characters of an item."""
    request: int
    """The characters of each request between the first and the latest."""
    requests: int
    """How many of those are shown (the latest ones)."""
    rules: int
    """How many of the user's rules are shown."""


@dataclass
class _Draft:
    """The document's parts, before caps."""

    goal: list[str]
    constraints: list[str]
    done: list[str]
    in_progress: list[str]
    pending: list[str]
    decisions: list[str]
    critical: list[str]
    next_steps: list[str]
    terms: list[str]
    facts: Facts = field(default_factory=Facts)
    focus: str | None = None
    changed: str = ""
    """Every file changed, in one line: whole, and never one of a list's capped items (a
    reader of the document needs each of them: ``check``'s required probes)."""

    @classmethod
    def of(cls, facts: Facts, focus: str | None) -> _Draft:
        draft = cls([], [], [], [], [], [], [], [], [], facts, focus)
        draft.terms = re.findall(r"[\w./-]{3,}", (focus or "").casefold())
        goal = draft._summary(facts.summary)
        for sections in facts.branch_summaries:
            draft._summary(sections, earlier_path=True)
        draft.goal = [p for p in goal.split("\n\n") if p and not p.startswith("Focus of this")]
        draft.constraints = _unique([*draft.constraints, *facts.rules])
        draft.decisions = _unique([*draft.decisions, *facts.decisions])
        draft._progress(facts)
        draft._context(facts)
        draft._next(facts)
        return draft

    def _summary(self, sections: Sections, earlier_path: bool = False) -> str:
        """Each section of a summary into the part its heading names (an unknown heading
        under Critical Context, as one item); returns its Goal. A branch summary tells of a
        path since left: what it did or meant to do is said to be from there."""
        goal: list[str] = []
        for heading, body in sections:
            part = _part_of(heading)
            if not body:
                continue
            if part == "goal" and earlier_path:
                self.critical.append(f"{EARLIER_PATH} it aimed at: {body}")
            elif part == "goal":
                goal.append(body)
            if part == "goal":
                continue
            if part == "progress":
                # A plain list under Progress (no ### parts) is neither all done nor all to
                # do: what says it is finished is Done, the rest In Progress.
                found = []
                for name, text in _subsections(body).items():
                    if name:
                        found.append((_part_of(name), name, text))
                    else:
                        found += [
                            ("done" if finished_item(item) else "in_progress", "", item)
                            for item in _items(text)
                        ]
            else:
                found = [(part, "", body)]
            for into, name, text in found:
                items = _items(text)
                if into == "critical" and heading.casefold() != "critical context":
                    items = [_nested(name or heading, items)] if items else []
                elif not earlier_path and heading.casefold() not in _STANDARD and items:
                    items[0] = f"{heading}: {items[0]}"  # a heading such as "Current Task: X"
                if earlier_path and into not in ("constraints", "decisions"):
                    into, items = "critical", [f"{EARLIER_PATH} {item}" for item in items]
                getattr(self, into).extend(items)
        return "\n\n".join(goal)

    def _progress(self, facts: Facts) -> None:
        last: dict[str, str] = {}
        milestones = (c for c in facts.commands if c.milestone and c.known)
        for command in milestones:  # each by how it ended last
            status = "passed" if command.ok else ("failed, then fixed" if command.resolved else "")
            if status:
                last[command.text] = status
            else:
                last.pop(command.text, None)
        ran = [f"Ran `{text}`: {status}" for text, status in last.items()]
        answer = facts.last_answer
        if facts.finished:
            report = _report(answer or "")
            self.done = [
                "The work asked for is done; the assistant's report:",
                *report,
                *ran,
                *self.done,
            ]
        else:
            self.done = [*ran, *self.done]
            if facts.stopped:
                self.in_progress.insert(0, f"Where it stopped: {facts.stopped}")
            if answer and facts.answered:
                self.in_progress.insert(1, "The assistant's last words:\n" + _quote(answer))
        if facts.latest_request and not facts.answered:
            self.pending.insert(0, "The latest request, not answered yet (see Goal).")
        if facts.acknowledgement and facts.go_ahead:
            ack = one_line(facts.acknowledgement, 40)
            self.in_progress.append(f'The user answered "{ack}" to the proposal above: go ahead.')

    def _context(self, facts: Facts) -> None:
        errors = []
        for error in facts.open_errors:
            command, _, output = error.partition("\n")
            errors.append(
                f"The error still open: {command}" + (f"\n```\n{output}\n```" if output else "")
            )
        self.critical[:0] = [spawned(facts.spawned_by)] if facts.spawned_by else []
        self.critical[:0] = errors

        def paths(found: Iterable[str]) -> str:
            return ", ".join(f"`{facts.shown(p)}`" for p in found)

        shell = set(facts.shell_files)
        tools = [p for p in facts.modified_files if p not in shell]
        lines = []
        if tools:
            lines.append(f"Files changed: {paths(tools)}")
        if shell:
            written = paths(facts.shell_files)
            lines.append(
                f"Files written by shell commands (read from the command lines): {written}"
            )
        self.changed = "\n- ".join(lines)
        if facts.missing_files:
            self.critical.append(
                f"Paths not found (they do not exist): {paths(facts.missing_files[:LIST_ITEMS])}"
            )
        if facts.read_files:
            self.critical.append(f"Files read: {paths(facts.read_files[:LIST_ITEMS])}")

    def _next(self, facts: Facts) -> None:
        steps: list[str] = []
        if facts.open_errors:
            steps.append("Fix the error still open (see Critical Context).")
        if facts.finished:
            steps.append("Confirm the result with the user, or wait for their next request.")
        elif facts.latest_request and not facts.answered:
            steps.append("Answer the latest request (see Goal).")
        elif facts.stopped and facts.stopped.startswith("A call to"):
            steps.append(
                "Check whether the call that had no result ran, then go on with the latest request."
            )
        elif facts.stopped and facts.stopped.startswith("The user"):
            steps.append("Ask the user how to go on: they stopped the work.")
        elif facts.stopped and facts.stopped.startswith("Changing"):
            steps.append(
                "Make the change to "
                + facts.stopped.removeprefix("Changing ").split(" failed")[0]
                + " that failed."
            )
        elif facts.stopped and facts.stopped.startswith("The last turn ended"):
            steps.append("Read the last result again, then go on with the latest request.")
        elif facts.latest_request:
            plan = [s for s in sentences(facts.last_answer or "") if _PLAN.search(s)]
            steps.append(
                "Go on as the assistant planned: " + one_line(" ".join(plan), 300)
                if plan
                else "Finish the latest request (see Goal)."
            )
        self.next_steps = _unique([*steps, *self.next_steps])

    def render(self, fit: _Fit) -> str:
        def bullets(found: list[str], numbered: bool = False, most: int = fit.items) -> str:
            chosen = _focused(_unique(found), self.terms)[:most]
            if not chosen:
                return NOTHING
            marks = [f"{n}." if numbered else "-" for n in range(1, len(chosen) + 1)]
            return "\n".join(
                f"{m} {_shortened(item, fit.item)}" for m, item in zip(marks, chosen, strict=True)
            )

        goal = "\n\n".join(self._goal(fit)) or NOTHING
        critical = bullets(self.critical)
        if self.changed:
            listed = f"- {self.changed}"
            critical = listed if critical == NOTHING else f"{critical}\n{listed}"
        done = bullets(self.done) if not self.facts.finished else self._done(fit)
        parts = {
            "Goal": goal,
            "Constraints & Preferences": bullets(self.constraints, most=fit.rules),
            "Progress": f"### Done\n{done}\n\n### In Progress\n"
            f"{bullets(self.in_progress)}\n\n### Pending\n{bullets(self.pending)}",
            "Key Decisions": bullets(self.decisions),
            "Critical Context": critical,
            "Next Steps": bullets(self.next_steps, numbered=True),
        }
        return "\n\n".join(f"## {name}\n{parts[name]}" for name in SECTIONS) + "\n"

    def _goal(self, fit: _Fit) -> list[str]:
        """The summary's goal, then the user's requests: the first and the latest quoted, those
        between a line each (the latest of them, as many as ``fit`` holds)."""
        facts = self.facts
        said = _plain("\n\n".join(self.goal))
        parts = [_shortened(p, fit.item) for p in self.goal]
        requests = [r for r in facts.requests if _plain(r) not in said]
        if requests and facts.original_task in requests:
            parts.append("The original task:\n" + _quote(requests.pop(0), fit.quote))
        latest = requests.pop() if requests else None
        between = requests[-fit.requests :] if fit.requests else []
        if between:
            left = len(requests) - len(between) + facts.requests_left_out
            lines = [f"- {one_line(r, fit.request)}" for r in between]
            if left:
                lines.insert(0, f"- ({left} earlier requests left out)")
            parts.append("Requests since, in order:\n" + "\n".join(lines))
        if latest is not None:
            parts.append("The latest request:\n" + _quote(latest, fit.quote))
        if self.focus:
            parts.append(f"Focus of this handoff: {one_line(self.focus, 300)}")
        return parts

    def _done(self, fit: _Fit) -> str:
        """Done, for finished work: the report's items whole, the rest of Done capped."""
        head, *rest = self.done
        report = [r for r in rest if r.startswith("  ")][: fit.items]
        others = [r for r in rest if not r.startswith("  ")][: fit.items // 2 + 1]
        lines = [f"- {head}", *(f"  - {_shortened(r.strip(), fit.item)}" for r in report)]
        return "\n".join(lines + [f"- {_shortened(o, fit.item)}" for o in _unique(others)])


def _report(answer: str) -> list[str]:
    """What a final answer reports, in its words: its list items, else its sentences; each
    marked as the report's (two spaces)."""
    lines = [line for line in answer.splitlines() if line.strip()]
    items = [line[m.end() :].strip() for line in lines if (m := _BULLET.match(line))]
    if len(items) < 2:
        items = [s for s in sentences(answer) if len(s) > 1]
    return [f"  {one_line(item, 300)}" for item in items if item]


_PLAN = re.compile(
    r"\b(next,? I|I'll|I will|I'm going to|I am going to|plan to|still (?:need|have) to|"
    r"remaining|left to do)\b",
    re.IGNORECASE,
)


_STANDARD = frozenset(name.casefold() for name in SECTIONS)
_PARTS = (  # a summary's heading, as its writer may have put it, to the part it belongs in
    ("progress", re.compile(r"^progress$", re.I)),
    ("constraints", re.compile(r"constraint|preference|rule|requirement|convention", re.I)),
    ("decisions", re.compile(r"decision", re.I)),
    ("next_steps", re.compile(r"\bnext\b", re.I)),
    ("pending", re.compile(r"pending|\bto ?do\b|remaining|open (?:question|issue)|block", re.I)),
    ("in_progress", re.compile(r"in progress|current|ongoing|status", re.I)),
    ("done", re.compile(r"complet|\bdone\b|finish|accomplish", re.I)),
    ("goal", re.compile(r"\bgoal|objective|purpose", re.I)),
)


def _part_of(heading: str) -> str:
    """The draft's list for a summary heading; unknown ones go to Critical Context."""
    return next((part for part, pattern in _PARTS if pattern.search(heading)), "critical")


def _nested(heading: str, items: list[str]) -> str:
    """A section with a heading of its own, as one item: its items under its name."""
    if not heading:
        return "\n".join(items)
    if len(items) == 1:
        return f"{heading}: {items[0]}"
    lines = [f"{heading}:"]
    for item in items:
        first, *rest = item.splitlines()
        lines += [f"  - {first}", *(f"    {line}" for line in rest)]
    return "\n".join(lines)


def _subsections(body: str) -> dict[str, str]:
    """``### `` parts of a section's body, by heading; text before the first under ''."""
    parts: dict[str, list[str]] = {"": []}
    current = ""
    for line in body.splitlines():
        heading = _SUBHEADING.match(line)
        if heading:
            current = heading.group(1).rstrip(":").casefold()
            parts.setdefault(current, [])
        else:
            parts[current].append(line)
    return {key: "\n".join(lines).strip() for key, lines in parts.items()}


def _items(body: str) -> list[str]:
    """A section's body as items: each bullet or numbered line with the lines that continue it;
    a paragraph, a table or a code block is one item, a ``###`` heading another; placeholders
    such as "(none)" are no items."""
    found: list[str] = []
    current: list[str] = []
    fenced = False
    label = ""

    def close() -> None:
        if current:
            found.append("\n".join(current))
            current.clear()

    for line in body.splitlines():
        if fenced or line.lstrip().startswith("```"):
            if line.lstrip().startswith("```"):
                fenced = not fenced
            if label and not current:
                current.append(f"{label}:")
                label = ""
            current.append(line)
            continue
        heading = _SUBHEADING.match(line)
        if not line.strip() or heading:
            close()
            if heading:
                label = heading.group(1).rstrip(":")
            continue
        bullet = _BULLET.match(line)
        if bullet:
            close()
        text = line[bullet.end() :].strip() if bullet else line.strip().lstrip("# ")
        if label and not current:  # a ### heading names the item after it
            text, label = f"{label}: {text}", ""
        current.append(text)
    if label:
        current.append(label)
    close()
    return [
        item
        for item in found
        if not re.fullmatch(r"\(?(none|nothing|n/a)[^)]*\)?\.?", item, re.I)
        and not _DERIVED.match(item)
    ]


def _plain(text: str) -> str:
    """Text as compared: quote marks, case and white space aside."""
    return " ".join(re.sub(r"(?m)^\s*>\s?|\s>\s", " ", text).casefold().split())


def _unique(items: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    kept: list[str] = []
    for item in items:
        key = _plain(item)
        if item and key not in seen:
            seen.add(key)
            kept.append(item)
    return kept


def _focused(items: list[str], terms: list[str]) -> list[str]:
    """Items that mention the focus first, each group in its own order."""
    if not terms:
        return items
    hits = [i for i in items if any(t in i.casefold() for t in terms)]
    return hits + [i for i in items if i not in hits]


def _quote(text: str, limit: int = QUOTE_CHARS) -> str:
    text = text.strip()
    if len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    return "\n".join(f"> {line}" if line else ">" for line in text.splitlines())


def _shortened(item: str, limit: int) -> str:
    """An item within about ``limit`` characters; a code block cut short is closed again."""
    if len(item) <= limit:
        return item
    cut = item[: limit - 1].rstrip() + "…"
    return cut + "\n```" if cut.count("```") % 2 else cut
