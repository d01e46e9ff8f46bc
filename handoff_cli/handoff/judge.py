"""The Factory-style judgement (``handoff check --probe-model M``): a model answers the probes'
questions from the document alone, and its answers are compared with the facts.

The deterministic probes (``check``) stay the default and the gate; this asks what a fresh
session could actually tell from the document. The model is sent the document and the
questions, never the answers: one question a kind of probe ("which files were changed?"), its
answers a numbered list. A probe is held when the model's answer to its question holds the
fact's key terms, as ``check`` holds a document to them.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from handoff_cli.handoff.check import Probe, Report, enough_files
from handoff_cli.handoff.terms import Terms

if TYPE_CHECKING:
    from handoff_cli.handoff.writer import Answer
    from handoff_cli.llm.table import ChatMessage

Ask = Callable[[list["ChatMessage"]], Awaitable["Answer"]]
"""A model asked one request, its answer awaited."""

QUESTIONS = {
    "the original task": "What task did the user first give? State it as fully as the "
    "document does.",
    "the latest request": "What is the user's latest request?",
    "a file changed": "Which files were changed (written or edited)? List every path.",
    "the last failing command": "Which test, build or check command failed last, and has it "
    "been fixed since? Give the command.",
    "a rule the user stated": "Which rules, constraints or preferences did the user state? "
    "List each.",
    "a decision recorded earlier": "Which decisions were made, and why? List each.",
    "the open error": "Which error is still open, unresolved? Quote its command or message.",
    "the call with no result": "Which command did the session end on with no result recorded, "
    "and is its outcome known? Give the command.",
    "the failing check": "Which test, build or check failed and has not passed since? Give the "
    "command.",
}
"""The question each kind of probe is asked as (those of what a document gets wrong are not:
nothing in a document answers them)."""

_PROMPT = """\
Below is a handoff document: all a new session of a coding agent will know of the work. \
Answer each question from the document alone; where it does not say, answer "not stated". \
Quote paths, commands, names and errors exactly as the document gives them.

<document>
{document}
</document>

{questions}

Answer with a numbered list, one answer per question, in the same order."""

_NUMBERED = re.compile(r"^\s*(?:\*\*)?(\d+)[.)](?:\*\*)?\s*", re.MULTILINE)


@dataclass(frozen=True)
class Judgement:
    """The model's answers, and the probes as they judge the document."""

    model: str
    questions: tuple[str, ...]
    answers: tuple[str, ...]
    report: Report
    usage: tuple[int, int, float | None] = (0, 0, 0.0)
    """What the one request cost: input tokens, output tokens, US dollars (None: unknown)."""

    def to_json(self) -> dict[str, Any]:
        asked = [
            {"question": q, "answer": a} for q, a in zip(self.questions, self.answers, strict=True)
        ]
        tokens_in, tokens_out, cost = self.usage
        usage = {"input_tokens": tokens_in, "output_tokens": tokens_out, "cost_usd": cost}
        return {"model": self.model, **self.report.to_json(), "answers": asked, "usage": usage}


def questions_of(report: Report) -> list[str]:
    """The kinds of probe the report has, each once, in order."""
    return list(dict.fromkeys(p.question for p in report.probes if p.question in QUESTIONS))


def probe_request(document: str, kinds: list[str]) -> str:
    numbered = "\n".join(f"{n}. {QUESTIONS[kind]}" for n, kind in enumerate(kinds, 1))
    return _PROMPT.format(document=document, questions=numbered)


def answers_of(text: str, count: int) -> list[str]:
    """The numbered answers of ``text``, by their numbers; "" for those it lacks."""
    found = [""] * count
    marks = list(_NUMBERED.finditer(text))
    for index, mark in enumerate(marks):
        number = int(mark.group(1))
        end = marks[index + 1].start() if index + 1 < len(marks) else len(text)
        if 1 <= number <= count and not found[number - 1]:
            found[number - 1] = text[mark.end() : end].strip()
    return found


def judged(report: Report, kinds: list[str], answers: list[str]) -> Report:
    """The report with each probe held as the model's answer to its question holds it; the
    probes of what the document gets wrong are as ``check`` found them."""
    said = {kind: Terms(answer) for kind, answer in zip(kinds, answers, strict=True)}

    def held(probe: Probe) -> Probe:
        terms = said.get(probe.question)
        if terms is None:
            return probe
        if probe.question == "a file changed":
            return replace(probe, held=terms.holds(probe.answer))
        kept = terms.keeps(probe.basis or probe.answer)
        return probe if kept is None else replace(probe, held=kept)

    probes = [held(p) for p in report.probes]
    files = [p.held for p in probes if p.question == "a file changed"]
    if files:  # the files changed, as many as the answer names
        enough = enough_files(files)
        probes = [
            replace(p, held=enough) if p.question == "the files changed" else p for p in probes
        ]
    return Report(tuple(probes))


async def ajudge(report: Report, document: str, name: str, ask: Ask) -> Judgement:
    """Ask the model called ``name``, by ``ask`` (the command line hands in its call), the
    questions of ``report``'s probes about ``document``."""
    kinds = questions_of(report)
    if not kinds:
        return Judgement(name, (), (), report)
    answer = await ask([{"role": "user", "content": probe_request(document, kinds)}])
    answers = answers_of(answer.text, len(kinds))
    asked = tuple(QUESTIONS[kind] for kind in kinds)
    usage = (answer.input_tokens, answer.output_tokens, answer.cost_usd)
    return Judgement(name, asked, tuple(answers), judged(report, kinds, answers), usage)
