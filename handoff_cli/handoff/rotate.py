"""Rotation: hand off every long, idle session under some folders, each exactly once.

``handoff rotate`` for CI and cron. It sits above ``pipeline`` and calls it: ``pipeline`` stays
the one handoff and knows nothing of batches, shards or budgets. Each session is read once
(``pipeline.read_source``) and that value goes on from step to step. The steps:

1. **Select** (``select``): the sessions of this shard (a stable share by id, so that a CI
   matrix of N jobs covers each session once), inside the folders named (a link to a session
   elsewhere is never written through), idle long enough (never one an agent is writing), not
   handed off already with nothing new since, and whose context is over the threshold.
2. **Estimate** (``estimate``, with ``--dry-run`` or ``--max-cost``): the planned requests and
   their cost by LiteLLM's price table; ``check_budget`` refuses a rotation over the cap.
3. **Hand off** (``rotate``): up to ``jobs`` at once on one event loop, each exactly as
   ``handoff`` does it, with ``Target.exclusive`` set: of two runs that hand off one session at
   the same moment, the later one to record takes its new session back and reports it skipped.

The CLI parses, calls ``plan_rotation`` then ``rotate``, and renders.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from handoff_cli.catalog import Catalog, SessionSummary, same_folder
from handoff_cli.errors import (
    CancelledError,
    ExitCode,
    HandedOffError,
    HandoffError,
    InPlaceRefusedError,
    ModelError,
    NothingToHandOffError,
    OverBudgetError,
    SessionChangedError,
    UnderScoreError,
    UsageError,
)
from handoff_cli.handoff.loop import run_on_loop
from handoff_cli.handoff.pipeline import (
    DEFAULT_TARGET,
    Request,
    Source,
    Target,
    ahandoff_request,
    dry_run_of,
    read_source,
    request_for,
    writer_for,
)
from handoff_cli.handoff.plan import ANSWER_TOKENS, DEFAULT_WINDOW, rough_tokens
from handoff_cli.handoff.report import ABOUT, Reporter
from handoff_cli.handoff.writer import Writer
from handoff_cli.options import DEFAULT_JOBS, Options
from handoff_cli.sessions.js import js_time

THRESHOLD_SHARE = 0.8
"""The default threshold: this share of the chosen model's window."""

HANDED_OFF = "handed_off"
SKIPPED = "skipped"
FAILED = "failed"


@dataclass(frozen=True)
class RotateOptions:
    """What to rotate, and how."""

    handoff: Options = field(default_factory=Options)
    """How each session is handed off (model, focus, timeout...), as for ``handoff``."""
    over_tokens: int | None = None
    """Hand off a session whose context is over this; None: 80% of the model's window."""
    idle_s: float = 600.0
    project: Path | None = None
    """Only the sessions of this directory."""
    jobs: int = DEFAULT_JOBS
    shard: tuple[int, int] | None = None
    """(K, N): the K-th of N stable shares of the sessions, by id."""
    max_cost: float | None = None


Notice = Callable[[Reporter], None]
"""Something reading a session had to say (a line skipped, whose rules read it), kept until
that session is handed off or estimated."""


@dataclass(frozen=True)
class Candidate:
    """A session that is to be handed off, as it was read to be chosen."""

    summary: SessionSummary
    tokens: int
    """Its context's tokens, estimated at 4 characters a token."""
    source: Source = field(repr=False)
    notices: tuple[Notice, ...] = field(default=(), repr=False)

    @property
    def writer(self) -> Writer:
        return self.source.writer


@dataclass(frozen=True)
class Estimate:
    """What handing off a candidate is planned to take."""

    candidate: Candidate
    request: Request = field(repr=False)
    """What was planned: the handoff sends it as it is."""
    strategy: str
    requests: int
    input_tokens: int
    output_tokens: int
    cost_usd: float | None

    def to_json(self) -> dict[str, Any]:
        summary = self.candidate.summary
        return {
            "id": summary.id,
            "path": str(summary.path),
            "model": self.candidate.writer.name,
            "tokens": self.candidate.tokens,
            "strategy": self.strategy,
            "requests": self.requests,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": self.cost_usd,
        }


@dataclass(frozen=True)
class Outcome:
    """How one selected session ended."""

    id: str
    path: Path
    status: str
    """``handed_off``, ``skipped`` or ``failed``."""
    reason: str | None = None
    new_id: str | None = None
    new_path: Path | None = None
    tokens: int | None = None
    cost_usd: float | None = None
    duration_s: float = 0.0
    entry_id: str | None = None
    """In place: the compaction entry appended (``new_id`` is then the session's own id)."""
    score: float | None = None
    """The probes' score of its document (``check``), when one was written or refused."""
    missing_probes: tuple[str, ...] = ()
    resume_command: str | None = None
    """Handed off: the command line that opens the new session in its agent."""

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "path": str(self.path),
            "status": self.status,
            "reason": self.reason,
            "new_id": self.new_id,
            "new_path": str(self.new_path) if self.new_path else None,
            "entry_id": self.entry_id,
            "tokens": self.tokens,
            "cost_usd": self.cost_usd,
            "duration_s": round(self.duration_s, 3),
            "score": self.score,
            "missing_probes": list(self.missing_probes),
            "resume_command": self.resume_command,
        }


def in_shard(session_id: str, shard: tuple[int, int] | None) -> bool:
    """Whether the session falls in shard K of N: a hash of its id, the same on every machine."""
    if shard is None:
        return True
    number, count = shard
    digest = hashlib.sha256(session_id.encode()).digest()
    return int.from_bytes(digest[:8], "big") % count == number - 1


def select(
    found: Catalog,
    options: RotateOptions,
    now: float,
    reporter: Reporter,
    target: Target = DEFAULT_TARGET,
) -> tuple[list[Candidate], list[Outcome]]:
    """The sessions to hand off, oldest first; and the ones that could not be read. Each
    writer is decided once for all the sessions that name the same model, its notes told
    ``reporter`` then; what reading a session says is kept with it (``Candidate.notices``)."""
    candidates: list[Candidate] = []
    unreadable: list[Outcome] = []
    notes = _Notes()
    decide = writer_for(options.handoff, notes)
    writers: dict[str | None, Writer] = {}

    def writer(session_model: str | None) -> Writer:
        if session_model not in writers:
            notes.model = session_model
            writers[session_model] = decide(session_model)
        return writers[session_model]

    folders = [Path(os.path.realpath(root.path)) for root in found.roots]
    for summary in sorted(found.sessions, key=lambda s: (s.timestamp, str(s.path))):
        if not in_shard(summary.id, options.shard):
            continue
        if options.project is not None and not same_folder(summary.cwd, options.project):
            continue
        # The file itself (a link's target; the catalog lists each file once, by this name):
        # a handoff writes beside it, so one outside the folders is not this rotation's.
        real = Path(summary.key)
        if not any(real.is_relative_to(folder) for folder in folders):
            reporter.warn(
                f"note: {summary.path} leads outside the folders rotated, to {real}: skipped"
            )
            continue
        if now - summary.modified < options.idle_s or _handed_off(found, summary):
            continue
        held = _Held()
        here = replace(target, folder_agent=summary.agent)
        try:
            source = read_source(real, options.handoff, here, held, writer)
        except (NothingToHandOffError, InPlaceRefusedError):
            continue  # too little to hand off, compacted already, or no in-place handoff
        except (UsageError, ModelError):
            raise  # the model named: every session's
        except HandoffError as error:
            unreadable.append(Outcome(summary.id, summary.path, SKIPPED, str(error)))
            continue
        tokens = rough_tokens(source.context.json_size())
        if tokens > _threshold(options, source.writer):
            source.session.release()  # held until its handoff: no descriptor meanwhile
            candidates.append(Candidate(summary, tokens, source, tuple(held.notices)))
    notes.tell(reporter, candidates, found.short_ids())
    return candidates, unreadable


class _Notes(Reporter):
    """The notes of each writer decided (one per model the sessions name), held: each is told
    once for the run, naming the chosen sessions it is about, and not for sessions not chosen."""

    LISTED = 5

    def __init__(self) -> None:
        self.model: str | None = None
        self._texts: dict[str, set[str | None]] = {}

    def warn(self, text: str) -> None:
        self._texts.setdefault(text, set()).add(self.model)

    def tell(self, reporter: Reporter, chosen: list[Candidate], short: dict[str, str]) -> None:
        """Each cause once: what it is about (``report.ABOUT``) listed, then its sessions."""
        causes: dict[str, tuple[list[str], set[str | None]]] = {}
        for text, models in self._texts.items():
            cause, about, subject = text.partition(ABOUT)
            subjects, all_models = causes.setdefault(cause if about else text, ([], set()))
            if about and any(c.source.context.model in models for c in chosen):
                subjects.append(subject)
            all_models.update(models)
        for cause, (subjects, models) in causes.items():
            ids = [
                short.get(c.summary.id, c.summary.id)
                for c in chosen
                if c.source.context.model in models
            ]
            if ids:
                more = len(ids) - self.LISTED
                listed = ", ".join(ids[: self.LISTED]) + (f" and {more} more" if more > 0 else "")
                what = f"{ABOUT}{', '.join(subjects)}" if subjects else ""
                sessions = f"{len(ids)} session{'s' * (len(ids) != 1)}"
                reporter.warn(f"{cause}{what} ({sessions}: {listed})")


class _Held(Reporter):
    """What reading a session at selection says, held: a session that is not chosen says
    nothing, one that is says it when it is handed off or estimated."""

    def __init__(self) -> None:
        self.notices: list[Notice] = []

    def loaded(self, session: Any) -> None:
        self.notices.append(lambda reporter: reporter.loaded(session))

    def warn(self, text: str) -> None:
        self.notices.append(lambda reporter: reporter.warn(text))


def _handed_off(found: Catalog, summary: SessionSummary) -> bool:
    """Handed off with nothing new since: its leaf is a recorded handoff, or a session handed
    off to from it was made after its last write."""
    if summary.ends_with_handoff:
        return True
    for child in found.children(summary):
        made = js_time(child.timestamp)
        if child.starts_from_handoff and made is not None and made / 1000 >= summary.modified:
            return True
    return False


def _threshold(options: RotateOptions, writer: Writer) -> int:
    if options.over_tokens is not None:
        return options.over_tokens
    return int((writer.window or DEFAULT_WINDOW) * THRESHOLD_SHARE)


def estimate(candidate: Candidate, options: RotateOptions, reporter: Reporter) -> Estimate:
    """The requests a handoff of ``candidate`` would make, and what they would cost."""
    told = _Quiet(reporter, candidate.summary.id)
    for notice in candidate.notices:
        notice(told)
    request = request_for(candidate.source, options.handoff, told)
    planned = dry_run_of(request)
    candidate.source.session.release()
    input_tokens = sum(r.tokens for r in planned.requests)
    output_tokens = ANSWER_TOKENS * len(planned.requests)
    return Estimate(
        candidate,
        request,
        planned.strategy,
        len(planned.requests),
        input_tokens,
        output_tokens,
        candidate.writer.price(input_tokens, output_tokens),
    )


def estimate_all(
    candidates: list[Candidate], options: RotateOptions, reporter: Reporter
) -> tuple[list[Estimate], list[Outcome]]:
    """The estimates of ``candidates``; one whose handoff cannot be planned is no estimate but
    a skipped outcome saying why: one session never stops the others' plans."""
    estimates: list[Estimate] = []
    unplanned: list[Outcome] = []
    for candidate in candidates:
        try:
            estimates.append(estimate(candidate, options, reporter))
        except HandoffError as error:
            summary = candidate.summary
            reason = str(error)
            unplanned.append(
                Outcome(summary.id, summary.path, SKIPPED, reason, tokens=candidate.tokens)
            )
    return estimates, unplanned


@dataclass(frozen=True)
class Totals:
    sessions: int
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    """None when a model's price is unknown."""

    def to_json(self) -> dict[str, Any]:
        return {
            "sessions": self.sessions,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": self.cost_usd,
        }


def totals(estimates: list[Estimate]) -> Totals:
    costs = [e.cost_usd for e in estimates]
    return Totals(
        len(estimates),
        sum(e.input_tokens for e in estimates),
        sum(e.output_tokens for e in estimates),
        None if None in costs else sum(c for c in costs if c is not None),
    )


def check_budget(estimates: list[Estimate], max_cost: float | None) -> None:
    """``OverBudgetError`` unless the estimates are known to cost at most ``max_cost``: a cap
    that cannot be checked (a model with no known price) refuses too."""
    if max_cost is None:
        return
    unpriced = sorted({e.candidate.writer.name for e in estimates if e.cost_usd is None})
    if unpriced:
        raise OverBudgetError(
            f"--max-cost cannot be checked: no price is known for {', '.join(unpriced)}; give "
            "--price-in and --price-out (USD per million tokens); nothing started"
        )
    total = totals(estimates)
    if (total.cost_usd or 0.0) > max_cost:
        raise OverBudgetError(
            f"Over budget: the estimate is ${total.cost_usd:.4f} for {total.sessions} "
            f"sessions, over --max-cost {max_cost:g}; nothing started"
        )


Finished = Callable[[Outcome], None]


async def arotate(
    candidates: list[Candidate],
    options: RotateOptions,
    finished: Finished,
    reporter: Reporter,
    estimates: dict[str, Estimate] | None = None,
    target: Target = DEFAULT_TARGET,
) -> tuple[list[Outcome], bool]:
    """Hand off each candidate, up to ``jobs`` at once; ``finished`` is told of each outcome as
    it comes. Ctrl-C or SIGTERM cancels the handoffs in flight (nothing is written for them) and
    starts no more; what finished stays finished. Once ``max_cost`` is spent, no handoff is
    started that its estimate (in ``estimates``, by session id) does not say is free. Returns
    the outcomes and whether it was cancelled. A candidate estimated is handed off as it was
    planned; every one with ``target`` as its own (its folder's agent), and exclusive."""
    slots = asyncio.Semaphore(max(1, options.jobs))
    spent = 0.0
    stop = asyncio.Event()
    outcomes: list[Outcome] = []

    async def one(candidate: Candidate) -> None:
        nonlocal spent
        summary = candidate.summary
        async with slots:
            if stop.is_set():
                return
            known = (estimates or {}).get(summary.id)
            free = known is not None and known.cost_usd == 0
            if options.max_cost is not None and spent >= options.max_cost and not free:
                spent_all = "the budget is spent"
                outcome = Outcome(
                    summary.id, summary.path, SKIPPED, spent_all, tokens=candidate.tokens
                )
            else:
                try:
                    outcome = await _hand_off(candidate, known, options, target, reporter)
                except Exception as error:  # a bug in one handoff: told, never a lost outcome
                    reason = f"unexpected error: {type(error).__name__}: {error}"[:300]
                    outcome = Outcome(
                        summary.id, summary.path, FAILED, reason, tokens=candidate.tokens
                    )
                spent += outcome.cost_usd or 0.0
        outcomes.append(outcome)
        finished(outcome)

    loop = asyncio.get_running_loop()
    tasks = [asyncio.ensure_future(one(candidate)) for candidate in candidates]

    def cancel() -> None:
        stop.set()
        for task in tasks:
            task.cancel()

    with _signals_cancel(loop, cancel):
        await asyncio.gather(*tasks, return_exceptions=True)
    return outcomes, stop.is_set()


@contextlib.contextmanager
def _signals_cancel(loop: asyncio.AbstractEventLoop, cancel: Callable[[], None]) -> Iterator[None]:
    """Ctrl-C and SIGTERM call ``cancel`` on the loop, while it runs (main thread only); then
    the handlers from before are back (asyncio would leave Python's own, and so a silent end
    on SIGTERM)."""
    numbers: tuple[signal.Signals, ...] = (signal.SIGINT, signal.SIGTERM)
    before = {number: signal.getsignal(number) for number in numbers}
    try:
        for number in numbers:
            loop.add_signal_handler(number, cancel)
    except (RuntimeError, ValueError):  # not the main thread: the caller cancels, if anyone
        numbers = ()
    try:
        yield
    finally:
        for number in numbers:
            loop.remove_signal_handler(number)
            handler = before[number]
            if handler is not None:
                signal.signal(number, handler)


async def _hand_off(
    candidate: Candidate,
    planned: Estimate | None,
    options: RotateOptions,
    target: Target,
    reporter: Reporter,
) -> Outcome:
    summary = candidate.summary
    began = time.monotonic()
    told = _Quiet(reporter, summary.id)
    exclusive = replace(target, folder_agent=summary.agent, exclusive=True)
    try:
        if planned is not None:
            request = planned.request  # its notices told when it was estimated
        else:
            for notice in candidate.notices:
                notice(told)
            request = request_for(candidate.source, options.handoff, told)
        result = await ahandoff_request(request, options.handoff, exclusive, told)
    except CancelledError:
        return Outcome(summary.id, summary.path, SKIPPED, "cancelled", tokens=candidate.tokens)
    except HandedOffError:
        reason = "handed off by another run"
        return Outcome(summary.id, summary.path, SKIPPED, reason, tokens=candidate.tokens)
    except SessionChangedError as error:
        # Not this run's to hand off any more: the agent, or a person, got there first.
        reason = f"it changed while it was handed off ({error.detail}): nothing written"
        return Outcome(summary.id, summary.path, SKIPPED, reason, tokens=candidate.tokens)
    except NothingToHandOffError as error:
        return Outcome(summary.id, summary.path, SKIPPED, str(error), tokens=candidate.tokens)
    except HandoffError as error:
        under = error if isinstance(error, UnderScoreError) else None  # its score told too
        return Outcome(
            summary.id,
            summary.path,
            FAILED,
            str(error),
            tokens=candidate.tokens,
            duration_s=time.monotonic() - began,
            score=under.score if under else None,
            missing_probes=tuple(under.missing) if under else (),
        )
    finally:
        candidate.source.session.release()  # kept in the rotation: no descriptor from now on
    return Outcome(
        id=summary.id,
        path=summary.path,
        status=HANDED_OFF,
        new_id=result.id,
        new_path=result.path,
        tokens=candidate.tokens,
        cost_usd=result.cost_usd,
        duration_s=time.monotonic() - began,
        entry_id=result.in_place.entry_id if result.in_place else None,
        score=result.score,
        missing_probes=tuple(result.missing_probes),
        resume_command=result.resume_command,
    )


class _Quiet(Reporter):
    """A handoff's own reporting, within a rotation: its warnings only, named by session."""

    def __init__(self, outer: Reporter, session_id: str) -> None:
        self._outer = outer
        self._name = session_id  # whole: the first digits of ids made in one minute are alike

    def loaded(self, session: Any) -> None:
        self._outer.loaded(session)

    def warn(self, text: str) -> None:
        self._outer.warn(f"{self._name}: {text}")


# --- the command's two steps ---------------------------------------------------------------------


@dataclass(frozen=True)
class Rotation:
    """What a rotation is to do, decided before any handoff starts."""

    candidates: list[Candidate]
    skipped: list[Outcome]
    """The sessions that could not be read or planned."""
    estimates: list[Estimate]
    """One for each candidate, when asked for (``--dry-run``, ``--max-cost``); else none."""

    @property
    def total(self) -> Totals:
        return totals(self.estimates)


def plan_rotation(
    found: Catalog,
    options: RotateOptions,
    now: float,
    reporter: Reporter,
    target: Target,
    estimated: bool,
) -> Rotation:
    """The sessions of ``found`` to hand off (``select``) and, if ``estimated``, what each
    would cost (``estimate_all``): a candidate that cannot be planned is skipped."""
    candidates, skipped = select(found, options, now, reporter, target)
    if not estimated:
        return Rotation(candidates, skipped, [])
    estimates, unplanned = estimate_all(candidates, options, reporter)
    return Rotation([e.candidate for e in estimates], skipped + unplanned, estimates)


@dataclass(frozen=True)
class Rotated:
    """How a rotation ended."""

    outcomes: list[Outcome]
    cancelled: bool

    @property
    def exit_code(self) -> int | None:
        """130 if cancelled, 1 if a handoff failed; else None (0)."""
        if self.cancelled:
            return ExitCode.CANCELLED
        return ExitCode.FAILED if any(o.status == FAILED for o in self.outcomes) else None


def rotate(
    rotation: Rotation,
    options: RotateOptions,
    target: Target,
    finished: Finished,
    reporter: Reporter,
) -> Rotated:
    """Hand off the rotation's candidates (``arotate``), on this thread's event loop."""
    by_id = {e.candidate.summary.id: e for e in rotation.estimates}
    work = arotate(rotation.candidates, options, finished, reporter, by_id, target)
    outcomes, cancelled = run_on_loop(work)
    return Rotated(outcomes, cancelled)
