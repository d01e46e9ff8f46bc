"""The built-in extractive writer: the six-section document, made from the facts of the session.

No model, no key, no network: free, instant and reproducible (the same facts give the same
bytes). It builds from ``facts.Facts`` alone, never from prose another module rendered: the
latest summary's sections (a compaction's, or the previous handoff document's) each under its
heading, the original task and the latest request verbatim, the rules, what is done and what is
not, the files, the commands and the error still open. Every list holds at most 12 items, every
command one line, and the document stays within its token cap; a focus puts what matches it
first, and never makes the document longer.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from .config import DEFAULT_DOCUMENT_TOKENS
from .document import SECTIONS, Sections
from .facts import Facts
from .text import one_line

LIST_ITEMS = 12
QUOTE_CHARS = 600
CHARS_PER_TOKEN = 4
NOTHING = "- (none recorded)"

_DONE_WORDS = re.compile(
    r"^(done|finished|fixed|completed?|all (?:\d+ )?tests? pass|implemented|added|merged|"
    r"works now|it works)\b",
    re.IGNORECASE,
)
_PLAN = re.compile(r"\b(next|then|I'll|I will|plan to|todo|remaining|left to)\b", re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")
_SUBHEADING = re.compile(r"^#{3,}\s*(.+?)\s*$")
# Items this writer derives from the facts: an earlier document's copies of them are stale,
# since the facts are computed again from the whole branch.
_DERIVED = re.compile(
    r"^(The error still open: |Files (changed|read): |Ran `|The latest request|Where the assistant "
    r"stopped:|The user answered |Fix the error still open|Answer the latest request: |Finish the "
    r"latest request: |Go on as the assistant planned: )"
)


def write_document(
    facts: Facts, focus: str | None = None, max_tokens: int = DEFAULT_DOCUMENT_TOKENS
) -> str:
    """The handoff document for ``facts``, within ``max_tokens`` (4 characters a token)."""
    draft = _Draft.of(facts, focus)
    for items in range(LIST_ITEMS, 0, -1):  # fewer items a list until it fits
        document = draft.render(items, QUOTE_CHARS if items > 4 else QUOTE_CHARS // 3)
        if len(document) <= max_tokens * CHARS_PER_TOKEN:
            return document
    return document[: max_tokens * CHARS_PER_TOKEN].rsplit("\n", 1)[0] + "\n"


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

    @classmethod
    def of(cls, facts: Facts, focus: str | None) -> _Draft:
        summary = _by_heading(facts.summary)
        known = {name.casefold() for name in SECTIONS}
        progress = _subsections(summary.get("progress", ""))
        draft = cls(
            goal=[],
            constraints=_unique(
                [*_items(summary.get("constraints & preferences", "")), *facts.rules]
            ),
            done=_items(progress.get("done", "")),
            in_progress=_items(progress.get("in progress", "")),
            pending=_items(progress.get("pending", "")) + _items(progress.get("", "")),
            decisions=_items(summary.get("key decisions", "")),
            critical=_items(summary.get("critical context", "")),
            next_steps=_items(summary.get("next steps", "")),
            terms=[t for t in re.findall(r"[\w./-]{3,}", (focus or "").casefold())],
        )
        for heading, body in facts.summary:
            if heading.casefold() not in known and body:
                label = f"{heading}: " if heading else ""
                draft.critical += [label + item for item in _items(body)]
        for summary_sections in facts.branch_summaries:
            draft._branch_summary(summary_sections)
        draft._goal(facts, summary.get("goal", ""), focus)
        draft._progress(facts)
        draft._context(facts)
        draft._next(facts)
        return draft

    def _branch_summary(self, sections: Sections) -> None:
        parts = _by_heading(sections)
        if set(parts) <= {""}:
            self.decisions.append(
                "An earlier path, since left: " + one_line(parts.get("", ""), 400)
            )
            return
        self.decisions += _items(parts.get("key decisions", ""))
        self.constraints = _unique(
            [*self.constraints, *_items(parts.get("constraints & preferences", ""))]
        )
        self.critical += _items(parts.get("critical context", ""))

    def _goal(self, facts: Facts, earlier: str, focus: str | None) -> None:
        # An earlier document's Goal may quote the task already: once is enough.
        goal = [part for part in earlier.split("\n\n") if not part.startswith("Focus of this")]
        said = _plain(earlier)
        if facts.original_task and _plain(facts.original_task) not in said:
            goal.append("The original task:\n" + _quote(facts.original_task))
        latest = facts.latest_request
        if latest and latest != facts.original_task and _plain(latest) not in said:
            goal.append("The latest request:\n" + _quote(latest))
        if focus:
            goal.append(f"Focus of this handoff: {one_line(focus, 300)}")
        self.goal = [part for part in goal if part.strip()]

    def _progress(self, facts: Facts) -> None:
        last: dict[str, str] = {}
        for command in facts.commands:  # each command by how it ended last
            status = "passed" if command.ok else ("failed, then fixed" if command.resolved else "")
            if status:
                last[command.text] = status
            else:
                last.pop(command.text, None)
        self.done += [f"Ran `{text}`: {status}" for text, status in last.items()]
        answer = facts.last_answer
        if facts.latest_request and not facts.answered:
            self.pending.append(
                "The latest request, not answered yet:\n" + _quote(facts.latest_request)
            )
        elif answer and not facts.open_error and _DONE_WORDS.match(answer):
            self.done.append("The latest request, as the assistant reported it:\n" + _quote(answer))
        elif answer:
            self.in_progress.append("Where the assistant stopped:\n" + _quote(answer))
        if facts.acknowledgement and facts.latest_request:
            ack = one_line(facts.acknowledgement, 40)
            self.in_progress.append(f'The user answered "{ack}" to the latest request: go ahead.')

    def _context(self, facts: Facts) -> None:
        if facts.open_error:
            command, _, output = facts.open_error.partition("\n")
            entry = f"The error still open: {command}"
            self.critical.insert(0, entry + (f"\n```\n{output}\n```" if output else ""))
        if facts.modified_files:
            self.critical.append(
                "Files changed: " + ", ".join(f"`{p}`" for p in facts.modified_files[:LIST_ITEMS])
            )
        if facts.read_files:
            self.critical.append(
                "Files read: " + ", ".join(f"`{p}`" for p in facts.read_files[:LIST_ITEMS])
            )

    def _next(self, facts: Facts) -> None:
        steps: list[str] = []
        if facts.open_error:
            steps.append("Fix the error still open (see Critical Context).")
        answer = facts.last_answer or ""
        if facts.latest_request and not facts.answered:
            steps.append("Answer the latest request: " + one_line(facts.latest_request, 300))
        elif facts.latest_request and not _DONE_WORDS.match(answer):
            steps.append("Finish the latest request: " + one_line(facts.latest_request, 300))
        plan = [s for s in _SENTENCE.split(answer) if _PLAN.search(s)]
        if plan and facts.answered:
            steps.append("Go on as the assistant planned: " + one_line(" ".join(plan), 300))
        self.next_steps = _unique([*steps, *self.next_steps])

    def render(self, items: int, quote: int) -> str:
        def bullets(found: list[str], numbered: bool = False) -> str:
            chosen = _focused(_unique(found), self.terms)[:items]
            if not chosen:
                return NOTHING
            marks = [f"{n}." if numbered else "-" for n in range(1, len(chosen) + 1)]
            return "\n".join(
                f"{m} {_shortened(item, quote)}" for m, item in zip(marks, chosen, strict=True)
            )

        goal = "\n\n".join(_shortened(part, quote) for part in self.goal) or NOTHING
        parts = {
            "Goal": goal,
            "Constraints & Preferences": bullets(self.constraints),
            "Progress": f"### Done\n{bullets(self.done)}\n\n### In Progress\n"
            f"{bullets(self.in_progress)}\n\n### Pending\n{bullets(self.pending)}",
            "Key Decisions": bullets(self.decisions),
            "Critical Context": bullets(self.critical),
            "Next Steps": bullets(self.next_steps, numbered=True),
        }
        return "\n\n".join(f"## {name}\n{parts[name]}" for name in SECTIONS) + "\n"


def _by_heading(sections: Sections) -> dict[str, str]:
    found: dict[str, str] = {}
    for heading, body in sections:
        key = heading.casefold()
        found[key] = f"{found[key]}\n{body}" if key in found else body
    return found


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
    a paragraph is one item; placeholders such as "(none)" are no items."""
    found: list[str] = []
    current: list[str] = []
    for line in body.splitlines():
        if not line.strip() or _SUBHEADING.match(line):
            if current:
                found.append("\n".join(current))
                current = []
            continue
        bullet = _BULLET.match(line)
        if bullet and current:
            found.append("\n".join(current))
            current = []
        current.append(line[bullet.end() :].strip() if bullet else line.strip())
    if current:
        found.append("\n".join(current))
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
