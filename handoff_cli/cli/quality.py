"""``handoff check`` for people: the scores and the probes not held, as lines on stderr.

Apart from ``render`` (the rich views), as ``output`` is: plain lines, no colour, so that a CI
log shows them as a terminal does.
"""

from __future__ import annotations

from handoff_cli.cli.output import notice
from handoff_cli.handoff.check import Checked, Report
from handoff_cli.handoff.judge import Judgement

_SOURCES = {
    "handoff": "the latest handoff document it records",
    "compaction": "its latest compaction summary",
    "start": "the document it starts from (its facts: the session handed off from)",
    "given": "the document given",
}


def show_check(checked: Checked, min_score: float, judgement: Judgement | None = None) -> None:
    report = checked.report
    verdict = "passes" if report.passes(min_score) else "fails"
    notice(f"{_SOURCES[checked.source]}: {report.overall:.3f} ({verdict} {min_score:g})")
    _show_report(report)
    if judgement is not None:
        notice(
            f"answered by {judgement.model} from the document alone: {judgement.report.overall:.3f}"
        )
        _show_report(judgement.report)
        tokens_in, tokens_out, cost = judgement.usage
        spent = "cost unknown" if cost is None else f"${cost:.4f}"
        notice(f"  one request: {tokens_in:,} tokens in, {tokens_out:,} out, {spent}")


def _show_report(report: Report) -> None:
    for name, score in report.dimensions.items():
        mine = [p for p in report.probes if p.dimension == name]
        shown = "   -" if score is None else f"{score:.2f}"
        counted = f"  {sum(p.held for p in mine)}/{len(mine)} probes" if mine else ""
        notice(f"  {name:<10} {shown}{counted}")
    missing = [p for p in report.missing if not p.wrong]
    wrong = [p for p in report.missing if p.wrong]
    for title, probes in (("missing", missing), ("wrong", wrong)):
        if probes:
            notice(f"{title}:")
        for probe in probes:
            mark = " (required)" if probe.required else ""
            notice(f"  {probe.dimension}: {probe}{mark}")
