"""The handoff, start to end (docs/handoff.md): read, guard, context, prompt, writer, write.

``handoff()`` is the library's entry point; the CLI only parses options and renders its
result. The session is read once into a ``Source`` (loaded, guarded, its agent chosen, its
context built, its writer decided: ``read_source``), which becomes the ``Request`` the writer is
given (``request_for``); a rotation reads each session once this way and hands that value on,
from its selection to its estimate to its handoff. Nothing is written until the writer has
answered with a usable document. A Ctrl-C before the two writes (the new session, then the
record in the old one) leaves every file as it was, and so does one while the run waits for the
old session's lock (``files.LOCK_WAIT_S`` at most); once the lock is held, signals no longer
cancel: the run finishes and reports what it wrote. In place (``Options.in_place``), the one
write is a compaction appended to the session itself: the entry oh-my-pi's own ``/handoff``
writes, or the records Claude Code's ``/compact`` writes (``_commit_in_place``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import FrameType
from typing import Any

from handoff_cli.agents import DEFAULT, FORMATS, build_context, get, load_session, store_of
from handoff_cli.agents.base import NOTHING_KEPT, Compaction, Format, Kept, Usage
from handoff_cli.agents.choice import choose_agent
from handoff_cli.agents.context import Context
from handoff_cli.agents.omp import move_pointers
from handoff_cli.agents.places import Root, agent_of
from handoff_cli.agents.resume import (
    continued_title,
    date_after,
    last_thinking,
    loses_model,
    model_switch,
    naming_entry,
    starting_entries,
)
from handoff_cli.catalog import handoff_children, leaf_handed_off
from handoff_cli.document import (
    SECTIONS,
    files_block,
    missing_sections,
    with_files,
    wrap_document,
)
from handoff_cli.errors import (
    CancelledError,
    HandedOffError,
    NothingToHandOffError,
    SessionChangedError,
    SessionFileError,
    UnderScoreError,
    UsageError,
    WriteError,
    os_reason,
)
from handoff_cli.handoff.builtin import Builtin
from handoff_cli.handoff.check import Report, check_document, repair_prompt
from handoff_cli.handoff.conversation import Conversation
from handoff_cli.handoff.facts import Facts, facts_of
from handoff_cli.handoff.keep import family_entries, recent_turns
from handoff_cli.handoff.loop import INTERRUPTED, run_on_loop
from handoff_cli.handoff.plan import ANSWER_TOKENS, Plan, Sized
from handoff_cli.handoff.prompt import ChatMessage, handoff_prompt, required_sections
from handoff_cli.handoff.redact import Redactor
from handoff_cli.handoff.report import Reporter
from handoff_cli.handoff.writer import Answer, Writer, resolver
from handoff_cli.options import Options
from handoff_cli.sessions.files import (
    Append,
    Change,
    Held,
    Locked,
    Rewrite,
    TitleSlot,
    file_digest,
    iso_timestamp,
    lock_attempts,
    migrated_lines,
    millis,
    new_entry_id,
    new_session_bytes,
    remove_stale_temporaries,
    session_file_name,
    uuid7,
    write_new_session,
)
from handoff_cli.sessions.js import js_time
from handoff_cli.sessions.jsonl import objects
from handoff_cli.sessions.session import CURRENT_VERSION, Entry, Record, Session, open_regular
from handoff_cli.sessions.tree import branch, leaf

# The API that our OpenAI-format requests amount to, in the agents' own vocabulary.
RECORDED_API = "openai-completions"


@dataclass(frozen=True)
class Target:
    """What the caller knows of the session handed off beyond what the user said (``Options``):
    the CLI knows the agents' folders, a rotation that it must hand each session off once."""

    folder_agent: str | None = None
    """With ``--agent auto``: the agent whose sessions folder holds the file, if any; else the
    content decides."""
    terminal_sessions: Path | None = None
    """oh-my-pi's folder of terminal pointers (``places.omp_terminal_sessions``): a pointer that
    names the old session is moved to the new one. None: left alone."""
    exclusive: bool = False
    """Record only if the session is still as it was read, else take the new session back
    (``SessionChangedError``): rotation's guard against handing one session off twice."""
    project_folder: Callable[[str, str], Path | None] | None = None
    """With ``--to``: the folder an agent starts a session of a cwd in (``Agent.project_folder``
    in the environment the CLI sees); None: such a handoff cannot be placed."""
    agent_folders: tuple[Root, ...] = ()
    """The agents' own sessions folders: the agent opens a session under one of its own by id
    (``HandoffResult.resume_command``)."""


DEFAULT_TARGET = Target()
"""A session handed off with nothing known of where it is (the library's callers)."""


@dataclass(frozen=True)
class Source:
    """The session as read for a handoff (steps 1 to 3): loaded, its branch guarded, its agent
    chosen, its context built, its writer decided."""

    session: Session = field(repr=False)
    leaf_id: str
    branch: list[Record] = field(repr=False)
    """The entries from the root to the leaf handed off."""
    agent: str
    """Whose rules read the session: the context replayed, and the shapes written."""
    compaction: Compaction | None
    """In place: where the agent's compaction cuts the branch."""
    context: Context = field(repr=False)
    writer: Writer
    read_digest: bytes = field(repr=False)
    """A digest of the file's bytes as they were read (``read_as.st_size`` of them): at
    commit, the file must still begin with exactly those. None taken for a dry run, which
    writes nothing."""

    @property
    def session_model(self) -> str | None:
        """The session's own model at the leaf, as the agent names it ("provider/model")."""
        return self.context.model


@dataclass(frozen=True)
class Request:
    """What the writer is given (a ``writer.Brief``): the conversation and the prompt, masked
    and fitted to it, with the session they come from."""

    source: Source
    conversation: Conversation
    """Measured, and built again as each request sends it (masked, like the prompt)."""
    prompt: ChatMessage
    facts: Facts = field(repr=False)
    """The branch's facts (masked): for the built-in writer, and the ``<files>`` block."""
    focus: str | None = None
    """The focus as sent: masked, and cut if it would not leave room for the conversation."""
    redacted: int = 0
    """How many distinct secrets were masked in the conversation and the prompt."""
    redactor: Redactor | None = field(default=None, repr=False, compare=False)
    """What masked them, to mask what is written the same way (None: ``--no-redact``)."""
    sections: tuple[str, ...] = SECTIONS
    """The sections the document must hold: the six, or a prompt file's (``--sections``)."""
    kept: Kept | None = field(default=None, repr=False)
    """The most recent whole turns, written after the document as they are (``--keep-recent``;
    None: not asked for)."""

    @property
    def writer(self) -> Writer:
        return self.source.writer


@dataclass(frozen=True)
class InPlace:
    """What an in-place handoff appended: the agent's compaction."""

    entry_id: str | None
    """None: the agent's lines have no ids (Codex's)."""
    first_kept_entry_id: str | None
    """None: the agent replaces the whole history (Codex)."""
    tokens_before: int | float | None
    tokens_after: int
    """The agent's estimate of the context from then on (its messages, without the system
    prompt and tools)."""


@dataclass(frozen=True)
class HandoffResult:
    """What a handoff did (``--json`` prints it)."""

    id: str
    path: Path
    parent_path: Path
    model: str
    focus: str | None
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    missing_sections: list[str]
    duration_s: float
    score: float | None = None
    """The probes' score of the document written (``check``)."""
    missing_probes: list[str] = field(default_factory=list)
    """The probes it does not hold, missing then wrong, each as ``question: answer``."""
    requests: int = 1
    strategy: str = "single"
    redacted: int = 0
    agent: str = DEFAULT
    in_place: InPlace | None = None
    """In place: the entry appended (``id`` and ``path`` are then the session's own)."""
    resume: tuple[str, ...] = ()
    """The command line that opens the result in the agent (``Agent.resume_command``)."""
    kept: Kept | None = None
    """With ``--keep-recent``: the turns written after the document."""
    cwd: str = ""
    """The folder the session's work is in (its header's): where the agent is to be started."""

    @property
    def resume_command(self) -> str:
        """``resume`` as one line a shell reads back as those words."""
        return shlex.join(self.resume)

    def to_json(self) -> dict[str, Any]:
        fields: dict[str, Any] = {
            "mode": "new_session" if self.in_place is None else "in_place",
            "id": self.id,
            "path": str(self.path),
            "parent_path": str(self.parent_path),
            "model": self.model,
            "focus": self.focus,
            "usage": {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens},
            "cost_usd": self.cost_usd,
            "missing_sections": self.missing_sections,
            "score": self.score,
            "missing_probes": self.missing_probes,
            "duration_s": round(self.duration_s, 3),
            "requests": self.requests,
            "strategy": self.strategy,
            "redacted": self.redacted,
            "agent": self.agent,
            "resume_command": self.resume_command,
            "cwd": self.cwd,
        }
        if self.kept is not None:
            fields |= _kept_json(self.kept)
        if self.in_place is not None:
            done = self.in_place
            fields["entry_id"] = done.entry_id
            fields["first_kept_entry_id"] = done.first_kept_entry_id
            fields["tokens_before"] = done.tokens_before
            fields["tokens_after"] = done.tokens_after
        return fields


@dataclass(frozen=True)
class DryRun:
    """What a handoff would send (``--dry-run``): its plan, each request with its size."""

    writer: str
    plan: Plan
    requests: tuple[Sized, ...]
    """Each request's messages are built when asked for (``Sized.build``)."""
    window: int | None
    budget_tokens: int | None
    redacted: int
    agent: str
    compaction: Compaction | None
    """In place: where the agent's compaction would cut the branch."""
    kept: Kept | None = None
    """With ``--keep-recent``: the turns that would follow the document."""
    cost_usd: float | None = None
    """The estimate (``ANSWER_TOKENS`` of answer a request); None where no price is known."""
    goes_to: Path | None = None
    """The folder the new session would be written in (None: in place)."""
    document: str | None = None
    """The document, where the writer answers here at no cost (the built-in one)."""

    @property
    def strategy(self) -> str:
        return self.plan.strategy

    @property
    def tokens(self) -> int:
        return sum(r.tokens for r in self.requests)

    def to_json(self) -> dict[str, Any]:
        """As ``--dry-run --json`` writes it (``output.write_json``): each request's messages
        built as they are written, one request at a time."""
        where = self.compaction
        fields: dict[str, Any] = {
            "mode": "new_session" if where is None else "in_place",
            "model": self.writer,
            "strategy": self.plan.strategy,
            "window": self.window,
            "budget_tokens": self.budget_tokens,
            "messages": _streamed(self.requests[-1].build),
            "requests": objects(
                {"tokens": r.tokens, "messages": _streamed(r.build)} for r in self.requests
            ),
            "redacted": self.redacted,
            "agent": self.agent,
        }
        if self.kept is not None:
            fields |= _kept_json(self.kept)
        if where is not None:
            fields["first_kept_entry_id"] = where.first_kept_entry_id
            fields["tokens_before"] = _json_number(where.tokens_before)
            fields["kept_entries"] = where.kept
        return fields


def _kept_json(kept: Kept) -> dict[str, Any]:
    first = kept.messages[0].record.id if kept.messages else None
    return {
        "kept_messages": len(kept.messages),
        "kept_tokens": kept.tokens,
        "first_kept_entry_id": first,
    }


# --- cancellation ------------------------------------------------------------------------------

_cancellable = True
"""Until the writes draw near, a signal cancels the handoff where it lands; from then on the run
goes to its end and reports what it wrote: a script that retries on exit 130 must never make a
duplicate."""
_cancel_noted = False
"""A signal that came once the writes drew near: noted, not raised, so that it never lands half
way through them. While the run waits for the session's lock nothing is written yet, and the
wait ends in a cancel (``_lock``)."""


def on_signal(signum: int, frame: FrameType | None) -> None:
    """SIGINT / SIGTERM handler: cancel the handoff; once its writes draw near, note it."""
    global _cancel_noted
    if _cancellable:
        INTERRUPTED.set()  # whatever a library turns it into, it stays a cancel
        raise KeyboardInterrupt
    _cancel_noted = True


def _allow_cancel(allowed: bool) -> None:
    global _cancellable, _cancel_noted
    _cancel_noted = False  # first: a signal in between is raised, never forgotten
    _cancellable = allowed


# --- the steps ---------------------------------------------------------------------------------

Writers = Callable[[str | None], Writer]
"""The writer for a session whose own model is the one given (None: it names none)."""


def writer_for(options: Options, reporter: Reporter) -> Writers:
    """How the writer is decided (by the resolver handed in: ``writer.register``), its notes
    told ``reporter``."""
    resolve = resolver()

    def decide(session_model: str | None) -> Writer:
        writer = resolve(
            options.model,
            session_model,
            api_key=options.api_key,
            api_base=options.api_base,
            context_window=options.context_window,
            prices=options.prices,
            warn=reporter.warn,
            planned=options.dry_run,
        )
        if options.template is not None and not writer.prompted:
            reporter.warn(
                f"note: {writer.name} writes its own six sections from the facts: the prompt "
                f"file {options.template.path} is not used"
            )
        return writer

    return decide


def read_source(
    path: Path,
    options: Options,
    target: Target,
    reporter: Reporter | None = None,
    writers: Writers | None = None,
) -> Source:
    """Steps 1 to 3: load, guard, choose the agent, build the context, decide the writer (by
    ``writers``; else as ``writer_for`` does, a model named decided before the session is read:
    it never depends on the session)."""
    reporter = reporter or Reporter()
    named: Writer | None = None
    if writers is None:
        writers = writer_for(options, reporter)
        if options.model:
            named = writers(None)
            named.preload(path)
    session = load_session(path)
    reporter.loaded(session)
    tip = leaf(session, options.leaf_id)
    path_records = branch(session, tip)
    chosen = choose_agent(session, options.agent, target.folder_agent)
    where = guard(session, path_records, chosen.agent, options.in_place)
    if chosen.note:
        reporter.warn(chosen.note)
    assert tip is not None, "the guard leaves no empty branch"
    context = build_context(path_records, chosen.agent)
    return Source(
        session=session,
        leaf_id=tip.id,
        branch=path_records,
        agent=chosen.agent,
        compaction=where,
        context=context,
        writer=named or writers(context.model),
        read_digest=b"" if options.dry_run else _read_digest(session),
    )


def request_for(source: Source, options: Options, reporter: Reporter | None = None) -> Request:
    """Step 4: the facts, the prompt and the conversation, fitted to the writer and masked."""
    reporter = reporter or Reporter()
    writer = source.writer
    facts = facts_of(source.session, source.branch)
    focus = writer.fitted_focus(options.focus, reporter)
    redactor = Redactor()
    if options.redact:
        facts = facts.masked(redactor.value)
    mask = redactor if options.redact else None
    prompt: ChatMessage = {
        "role": "user",
        "content": handoff_prompt(
            focus, facts, options.max_doc_tokens, options.template, writer.window
        ),
    }
    # Measured (and masked) before the prompt is masked: its secrets are numbered after the
    # conversation's, as in one pass over the whole request.
    since = _since_anchor(source.context, facts, source.branch)
    conversation, prompt = writer.conversation(since, prompt, mask)
    if mask is not None:
        prompt = mask.value(prompt)
        focus = mask.text(focus) if focus else focus
    return Request(
        source=source,
        conversation=conversation,
        prompt=prompt,
        facts=facts,
        focus=focus,
        redacted=redactor.count,
        redactor=mask,
        sections=required_sections(options.template),
        kept=_kept(since, source, options, reporter),
    )


def _kept(since: Context, source: Source, options: Options, reporter: Reporter) -> Kept | None:
    """``--keep-recent``: the most recent whole turns of what the document replaces
    (``keep``), read as they are, never masked: the new session goes on with them as the old
    one had them."""
    budget = options.keep_recent
    if budget <= 0 or source.compaction is not None:
        return None
    recent = recent_turns(since, source.agent, budget, source.session_model)
    if recent.last_turn is not None:
        reporter.warn(
            f"note: the last turn is {recent.last_turn:,} tokens, more than --keep-recent "
            f"{budget:,}: no turn is kept, the new session holds the document alone"
        )
    return recent.kept


def prepare(
    path: Path,
    options: Options,
    reporter: Reporter | None = None,
    *,
    target: Target = DEFAULT_TARGET,
) -> Request:
    """Steps 1 to 4 (``read_source``, then ``request_for``)."""
    return request_for(read_source(path, options, target, reporter), options, reporter)


def guard(session: Session, records: list[Record], agent: str, in_place: bool) -> Compaction | None:
    """Whether the branch ``records`` of ``session`` can be handed off (else the error that
    says why); in place, where the agent's compaction cuts it (``Agent.compaction``)."""
    if sum(1 for r in records if r.type == "message") < 2:
        raise NothingToHandOffError()
    return get(agent).compaction(session, records) if in_place else None


def _handed_off_since(session: Session) -> bool:
    """Whether the session's file now ends with a recorded handoff (another run's, since it
    was read): then it is not this run's to hand off, and the writer is never asked. A
    session in a database: its rows as they are now say it."""
    if session.stored_as is not None:
        return _ends_handed_off(session.path)
    try:
        with open_regular(session.path) as file:  # not what a FIFO swapped in would wait for
            return leaf_handed_off(session.path, file.fileno(), os.fstat(file.fileno()).st_size)
    except FileNotFoundError:
        raise SessionChangedError(session.path, "it is gone") from None
    except OSError as error:
        raise SessionFileError(session.path, os_reason(error)) from None


def _read_digest(session: Session) -> bytes:
    """``_digest`` of the session's file as it was read, just after: what a commit finds it
    begins with, if nobody wrote to it but to append. A file replaced meanwhile has none (its
    commit finds it replaced)."""
    read_as = session.read_as
    if read_as is None:  # a session in a database: its store checks its rows instead
        return b""
    try:
        with open_regular(session.path, buffering=0) as file:
            if os.fstat(file.fileno()).st_ino != read_as.st_ino:
                return b""
            return file_digest(file.fileno(), read_as.st_size)
    except OSError as error:
        raise SessionFileError(session.path, os_reason(error)) from None


def _since_anchor(context: Context, facts: Facts, branch: list[Record]) -> Context:
    """The context without our own recorded exchanges, and, when the branch holds a handoff
    document already, only what came after it: the update starts from that document."""
    records = context.records
    if facts.skipped:
        records = [r for r in records if r.id not in facts.skipped]
    after = -1 if facts.anchor is None else facts.anchor
    if after >= 0:
        # The ids on the smaller side of the document (a branch's ids are distinct): a set of
        # a long branch's, every one, would cost more than its records.
        if after < len(branch) // 2:
            before = {r.id for r in branch[: after + 1]}
            records = [r for r in records if r.id not in before]
        else:
            since = {r.id for r in branch[after + 1 :]}
            records = [r for r in records if r.id in since]
    compactions = [i for i, r in enumerate(branch) if r.type == "compaction"]
    head = context.head if compactions and compactions[-1] > after else ()
    return replace(context, records=records, head=head)


def dry_run(
    path: Path,
    options: Options,
    reporter: Reporter | None = None,
    *,
    target: Target = DEFAULT_TARGET,
) -> DryRun:
    """The plan, each request with its size, what it would cost and where the new session would
    go (``--dry-run``): nothing is called or written. The built-in writer, which answers here
    at no cost, says what it would write."""
    request = prepare(path, options, reporter, target=target)
    planned = dry_run_of(request)
    writer, source = request.writer, request.source
    to = options.to or source.agent
    folder = options.out_dir or _folder_of(request, to, target, source.session.path.resolve())
    document = None
    if isinstance(writer, Builtin):
        answer = run_on_loop(writer.write(request, options, Reporter()))[0]
        document = _as_written(request, answer).text
    return replace(
        planned,
        cost_usd=writer.price(planned.tokens, ANSWER_TOKENS * len(planned.requests)),
        goes_to=None if source.compaction is not None else folder,
        document=document,
    )


def dry_run_of(request: Request) -> DryRun:
    """The plan of a request prepared already (``prepare``, ``request_for``)."""
    planned = request.writer.planned(request)
    return DryRun(
        writer=request.writer.name,
        plan=planned.plan,
        requests=planned.requests,
        window=planned.window,
        budget_tokens=planned.budget_tokens,
        redacted=request.redacted,
        agent=request.source.agent,
        compaction=request.source.compaction,
        kept=request.kept,
    )


def _streamed(build: Callable[[], list[ChatMessage]]) -> Iterator[ChatMessage]:
    yield from build()


def _json_number(value: int | float) -> int | float | None:
    """A number as our JSON gives it: NaN (a usage without counts, as JavaScript adds it up)
    is null."""
    return None if value != value else value


def handoff(
    path: Path,
    options: Options,
    reporter: Reporter | None = None,
    *,
    target: Target = DEFAULT_TARGET,
) -> HandoffResult:
    """Hand the session at ``path`` over to a new session; return what was written."""
    _allow_cancel(True)
    try:
        return run_on_loop(ahandoff(path, options, reporter, target=target))
    except KeyboardInterrupt:
        raise CancelledError() from None
    finally:
        INTERRUPTED.clear()  # this handoff's: never a later one's in the same process


async def ahandoff(
    path: Path,
    options: Options,
    reporter: Reporter | None = None,
    *,
    target: Target = DEFAULT_TARGET,
) -> HandoffResult:
    """``handoff``, for an event loop: many can run at once (``rotate``). Cancelling it before
    its writes leaves every file as it was; its writes are never interrupted (they do not
    await)."""
    started = time.monotonic()
    try:
        request = prepare(path, options, reporter, target=target)
    except KeyboardInterrupt:
        raise CancelledError() from None
    done = await ahandoff_request(request, options, target, reporter)
    return replace(done, duration_s=time.monotonic() - started)


async def ahandoff_request(
    request: Request, options: Options, target: Target, reporter: Reporter | None = None
) -> HandoffResult:
    """Steps 5 and 6 for a request prepared already: the writer asked, then the writes."""
    reporter = reporter or Reporter()
    started = time.monotonic()
    source = request.source
    path = source.session.path
    try:
        if target.exclusive and _handed_off_since(source.session):
            raise HandedOffError()
        if options.to is not None and options.out_dir is None:
            _folder_of(request, options.to, target, path.resolve())  # refused before it is written
        latest = source.session.records[-1].id
        if (options.record or options.in_place) and source.leaf_id != latest:
            written = "compaction is appended" if options.in_place else "exchange is recorded"
            reporter.warn(
                f"note: --leaf {source.leaf_id} is not the session's latest entry ({latest}); "
                f"the {written} on that branch, so the agent will resume there"
            )
        answer, missing, plan = await request.writer.write(request, options, reporter)
        answer = _as_written(request, answer)
        answer, missing, report = await _gated(request, answer, missing, options, reporter)
        reporter.stage("writing")
        if INTERRUPTED.is_set():  # a cancel a library swallowed on the way still cancels
            raise KeyboardInterrupt
        _allow_cancel(False)
        old = path.resolve()  # written through a symlink only once resolved
        done: InPlace | None = None
        with contextlib.ExitStack() as stack:
            held = None
            if source.compaction is not None or options.record:
                held = stack.enter_context(await _lock(old))
            if _cancel_noted:  # before the lock was held: nothing is written yet
                raise KeyboardInterrupt
            if source.compaction is not None:
                assert held is not None, "in place, the session is written to"
                done = _commit_in_place(request, source.compaction, target, answer, held)
                new_id, new_path = source.session.id, old
            else:
                new_id, new_path = _commit(request, options, target, answer, old, held)
    except (KeyboardInterrupt, asyncio.CancelledError):
        raise CancelledError() from None
    return HandoffResult(
        id=new_id,
        path=new_path,
        parent_path=old,
        model=request.writer.name,
        focus=request.focus,
        input_tokens=answer.input_tokens,
        output_tokens=answer.output_tokens,
        cost_usd=answer.cost_usd,
        missing_sections=missing,
        duration_s=time.monotonic() - started,
        score=report.overall,
        missing_probes=[str(p) for p in report.missing],
        requests=plan.requests,
        strategy=plan.strategy,
        redacted=request.redactor.count if request.redactor else request.redacted,
        agent=source.agent,
        in_place=done,
        kept=request.kept,
        resume=_resume(options.to or source.agent, new_id, new_path, target),  # --to A: A's
        cwd=str(source.session.header.get("cwd", "")),
    )


def _resume(agent: str, session_id: str, path: Path, target: Target) -> tuple[str, ...]:
    own = agent_of(path, list(target.agent_folders)) == agent
    return tuple(get(agent).resume_command(session_id, path, own))


def _as_written(request: Request, answer: Answer) -> Answer:
    """The answer as the document is written: its ``<files>`` block, its secrets masked (the
    model may quote one the session holds)."""
    answer = _with_files(answer, request.facts)
    if request.redactor is not None:
        answer = replace(answer, text=request.redactor.text(answer.text))
    return answer


async def _gated(
    request: Request, answer: Answer, missing: list[str], options: Options, reporter: Reporter
) -> tuple[Answer, list[str], Report]:
    """The document's probes (``check``), and with ``--min-score`` the gate: a document under
    it is asked for once more, from the conversation, naming what it misses and what the branch
    contradicts (kept if none of its claims is contradicted, it scores higher, and it lacks no
    more sections), and refused if it is still under."""
    report = check_document(request.facts, answer.text, request.source.branch)
    floor = options.min_score
    if floor is None or report.passes(floor):
        return answer, missing, report
    asked = repair_prompt(report, request.sections)
    revised = await request.writer.revise(request, answer.text, asked, options, reporter)
    if revised is not None:
        text = _as_written(request, revised).text
        again = check_document(request.facts, text, request.source.branch)
        lacks = missing_sections(text, request.sections)
        checks_out = not any(p.wrong for p in again.probes)  # no claim the branch contradicts
        kept = checks_out and again.overall > report.overall and len(lacks) <= len(missing)
        answer = answer.then(replace(revised, text=text if kept else answer.text))
        if kept:
            missing, report = lacks, again
    if not report.passes(floor):
        raise UnderScoreError(report.overall, floor, [str(p) for p in report.missing])
    return answer, missing, report


def _with_files(answer: Answer, facts: Facts) -> Answer:
    """The document with the ``<files>`` block at its end, as oh-my-pi ends its handoff
    summaries: the block the model wrote, if any, replaced by the exact one. It lists the files
    the branch read and changed: a call that found no file (a read of ``README.md#intro``,
    which oh-my-pi's read tool has no section for) lists none, where the agent's own block, in
    place, counts every call."""
    block = files_block(facts.read_files, facts.modified_files, facts.read_set)
    return replace(answer, text=with_files(answer.text, block))


def _commit(
    request: Request,
    options: Options,
    target: Target,
    answer: Answer,
    old: Path,
    held: Held | None,
) -> tuple[str, Path]:
    """Write the new session, then record the exchange in the old one (at ``old``, resolved,
    ``held`` under its lock: None, ``--no-record``); both once it is found to be the file that
    was read (else nothing is written). Then the agents are turned to the new session
    (``resume``): it is dated after the old one, and a terminal of oh-my-pi's that remembered
    the old one remembers the new one."""
    to = options.to or request.source.agent
    folder = options.out_dir or _folder_of(request, to, target, old)
    recorded: list[Entry] = []
    own = FORMATS.get(request.source.agent)
    if options.record:
        recorded = _own_exchange(own, request, answer) if own else _exchange(request, answer)
    # Dated after the exchange, the new session is the newer one in every agent's order.
    written = FORMATS.get(to)
    if written is not None:
        new_id, created = written.new_uuid(), iso_timestamp()
        new_file = written.new_path(folder, new_id)
        data = _own_session(written, request, answer, new_id, created, old)
    else:
        new_id, created = uuid7(), iso_timestamp()
        new_file = folder / session_file_name(created, new_id)
        data = _new_session(request, answer, new_id, created, old, to)
    if held is None:
        new_path = _write_new(new_file, data, None)
    else:
        # The folder the new session goes to, where another run's would be too (a rollout's
        # is today's, not the folder named).
        _check_held(request, held, target.exclusive, new_file.parent)
        new_path = _write_new(new_file, data, held)
        try:
            _write(held, _recorded(own, request, held, recorded))
        except BaseException:
            _take_back(new_path)
            raise
    _turn_to(new_path, old, options, target)
    return new_id, new_path


def _folder_of(request: Request, to: str, target: Target, old: Path) -> Path:
    """Where the new session goes: beside the old one, or, ``--to`` another agent, in that
    agent's folder for the session's cwd."""
    if to == request.source.agent:
        return old.parent
    cwd = str(request.source.session.header.get("cwd", ""))
    folder = target.project_folder(to, cwd) if target.project_folder and cwd else None
    if folder is None:
        raise UsageError(f"--to {to}: no folder of {get(to).title}'s for the cwd {cwd!r}")
    return folder


def _own_exchange(own: Format, request: Request, answer: Answer) -> list[Entry]:
    """The exchange in a session of an agent's own format, in its shapes (``exchange``)."""
    source = request.source
    usage = Usage(answer.input_tokens, answer.output_tokens)
    asked_at, answered_at = iso_timestamp(), iso_timestamp()
    prompt = request.prompt["content"]
    return own.exchange(
        source.session, source.leaf_id, source.session_model, prompt, answer.text, usage,
        asked_at, answered_at,
    )  # fmt: skip


def _recorded(own: Format | None, request: Request, held: Held, lines: list[Entry]) -> Change:
    """How ``lines`` are written to the session held, under its lock: appended, or, in an
    agent's own format, as its module says (``Format.recorded``), told what others appended
    since it was read. A file its agent rewrites whole is rewritten only if nothing was."""
    if own is None:
        return Append(lines)
    session = request.source.session
    since = held.added(session)
    change = own.recorded(lines, session, since)
    if isinstance(change, Rewrite) and since:
        raise SessionChangedError(held.path, "it was written to")
    return change


def _own_session(
    own: Format, request: Request, answer: Answer, new_id: str, created: str, old: Path
) -> bytes:
    """The new session in an agent's own format (``new_session``)."""
    source = request.source
    wrapped = wrap_document(answer.text)
    kept = request.kept or NOTHING_KEPT
    return own.new_session(
        source.session, new_id, old, source.session_model, wrapped, created, kept
    )


def _new_session(
    request: Request, answer: Answer, new_id: str, created: str, old: Path, agent: str
) -> bytes:
    """The new session, as ``agent`` (of the pi family) writes a session it starts: its model
    and thinking level, the handoff document, and its name, the old session's continued."""
    session = request.source.session
    header: Entry = {
        "type": "session",
        "version": CURRENT_VERSION,
        "id": new_id,
        "timestamp": created,
        "cwd": session.header.get("cwd", ""),
        "parentSession": str(old),
    }
    taken: set[str] = set()
    thinking = last_thinking(request.source.branch)
    entries = starting_entries(agent, request.source.session_model, thinking, taken, created)
    rules = get(agent)
    parent = entries[-1]["id"] if entries else None
    document = rules.handoff_message(
        wrap_document(answer.text), new_entry_id(taken), parent, created
    )
    taken.add(document["id"])
    entries.append(document)
    title = continued_title(session.title)
    if title is not None and request.redactor is not None:  # a first request may hold one
        title = request.redactor.text(title)
    slot = session.title_slot is not None and rules.title_slot
    if title is not None:
        entries.append(naming_entry(agent, title, document["id"], taken, created))
        if not slot:
            header |= rules.header_title(title)
    if request.kept is not None:  # after the document and its name, the leaf the last of them
        entries += family_entries(request.kept, entries[-1]["id"], taken, created)
    if not slot:
        return new_session_bytes(header, entries, None)
    return new_session_bytes(header, entries, TitleSlot(title or "", created, title is not None))


def _turn_to(new_path: Path, old: Path, options: Options, target: Target) -> None:
    """After the writes: the agents continue from the new session (``resume``). Best effort:
    the handoff is done, and a pointer that cannot be moved is the agent's to find stale."""
    try:
        if options.record:
            date_after(new_path, old)
        if target.terminal_sessions is not None and new_path.parent == old.parent:
            move_pointers(target.terminal_sessions, old, new_path)
    except OSError:
        pass


def _write_new(target: Path, data: bytes, held: Held | None) -> Path:
    """The new session written: a file by temporary file and rename, or, in a database, its
    rows inserted by its store (in the transaction ``held`` is, where that is the same
    database's)."""
    store = store_of(target)
    if store is not None:
        return store.write_new(target, data, held)
    try:
        return write_new_session(target.parent, target.name, data)
    except NotADirectoryError as error:  # the folder (or one above it) is a file
        raise WriteError(target.parent, error) from None
    except OSError as error:
        raise WriteError(target, error) from None


def _take_back(path: Path) -> None:
    """A new session removed again: its file, or its rows."""
    store = store_of(path)
    if store is not None:
        store.take_back(path)
    else:
        path.unlink(missing_ok=True)


def _commit_in_place(
    request: Request, where: Compaction, target: Target, answer: Answer, held: Held
) -> InPlace:
    """Append the agent's compaction to the session itself, ``held`` under its lock: whole
    lines (an old version migrated first, as for a record), numbered on as the file is then."""
    mask = request.redactor.value if request.redactor is not None else _unmasked
    made = where.write(answer.text, iso_timestamp(), mask)
    own = FORMATS.get(request.source.agent)
    _check_held(request, held, target.exclusive, held.path.parent)
    _write(held, _recorded(own, request, held, made.lines))
    return InPlace(
        entry_id=made.entry_id,
        first_kept_entry_id=where.first_kept_entry_id,
        tokens_before=_json_number(where.tokens_before),
        tokens_after=made.tokens_after,
    )


def _unmasked(value: Any) -> Any:
    return value  # --no-redact


async def _lock(path: Path) -> Held:
    """The session's file at ``path`` (resolved) under its lock (``files.lock_attempts``),
    waited for without holding up the loop: a rotation's other handoffs go on meanwhile, and
    its cancel lands here. Nothing is written yet, so a signal (noted: ``on_signal``) ends the
    wait in a cancel too. A session in a database is held by its store (a write transaction,
    waited for a bounded while)."""
    store = store_of(path)
    if store is not None:
        return store.hold(path)
    try:
        with contextlib.closing(lock_attempts(path)) as attempts:
            while not isinstance(attempt := next(attempts), Locked):
                if _cancel_noted:
                    raise KeyboardInterrupt
                await asyncio.sleep(attempt)
    except FileNotFoundError:
        raise SessionChangedError(path, "it is gone") from None
    except OSError as error:
        raise WriteError(path, error) from None
    return attempt


def _check_held(request: Request, held: Held, exclusive: bool, folder: Path) -> None:
    """Under the lock, before anything is written: the file ``held`` is the file that was
    read, and nothing was added to it where nothing may come between (rotation, in place, an
    old version); an old version is then rewritten at version 3, as the agents do before they
    append to one. With ``exclusive`` (rotation), ``HandedOffError`` if another run handed it
    off meanwhile; ``SessionChangedError`` if it changed."""
    session = request.source.session
    remove_stale_temporaries(held.path.parent)  # a killed run's, beside the file (ours only)
    old_version = session.version < CURRENT_VERSION
    # In place, a compaction hangs from the leaf read: anything after it (another run's
    # compaction, the agent's next turn) would be left on a branch of its own.
    strictly = exclusive or request.source.compaction is not None or old_version
    try:
        if exclusive:
            _not_handed_off(held, session, folder)
        _unchanged(held, request, strictly)
        if old_version:
            assert isinstance(held, Locked), "an old version is the pi family's file"
            held.replace(migrated_lines(session))
    except OSError as error:
        raise WriteError(held.path, error) from None


def _not_handed_off(held: Held, session: Session, folder: Path) -> None:
    """Rotation's exactly-once rule, decided on the file as it is under the lock: its leaf is
    no recorded handoff, and no handoff of it newer than its last entry exists. A database
    (whose session's rows are held unchanged) says it of its own rows."""
    if not isinstance(held, Locked):
        if load_session(held.path).records and _ends_handed_off(held.path):
            raise HandedOffError()
        return
    if leaf_handed_off(held.path, held.fd, held.status().st_size):
        raise HandedOffError()
    last = js_time(session.records[-1].stamp) if session.records else None
    since = last if last is not None else int(held.status().st_mtime * 1000)
    for place in dict.fromkeys((folder, held.path.parent)):
        if handoff_children(place, held.path, session.id, since):
            raise HandedOffError()


def _ends_handed_off(path: Path) -> bool:
    own = FORMATS[load_session(path).agent or ""]
    return own.glance(path, b"", b"", 0, 0).ends_with_handoff


def _unchanged(held: Held, request: Request, strictly: bool) -> None:
    """The session under the lock is the one read (``Held.unchanged``)."""
    held.unchanged(request.source.session, request.source.read_digest, strictly)


def _write(held: Held, change: Change) -> None:
    try:
        held.write(change)
    except OSError as error:
        raise WriteError(held.path, error) from None


def _exchange(request: Request, answer: Answer) -> list[Entry]:
    """The prompt and the answer as the agent records a turn, chained from the leaf; then, if
    the agent would otherwise resume the session on the model that wrote the answer, the
    session's own model named again, as a model switch."""
    source = request.source
    taken = set(source.session.by_id)
    asked_id = new_entry_id(taken)
    taken.add(asked_id)
    answered_id = new_entry_id(taken)
    taken.add(answered_id)
    asked_at, answered_at = iso_timestamp(), iso_timestamp()
    prompt = request.prompt["content"]
    cost = {
        "input": answer.input_cost_usd or 0,
        "output": answer.output_cost_usd or 0,
        "cacheRead": 0,
        "cacheWrite": 0,
        "total": answer.cost_usd or 0,
    }
    model = source.session_model
    switch = (
        [model_switch(source.agent, model, answered_id, taken, answered_at)]
        if model and loses_model(source.agent, source.branch)
        else []
    )
    return [
        {
            "type": "message",
            "id": asked_id,
            "parentId": source.leaf_id,
            "timestamp": asked_at,
            "message": {
                "role": "user",
                "content": [{"type": "text", "text": prompt}],
                "timestamp": millis(asked_at),
            },
        },
        {
            "type": "message",
            "id": answered_id,
            "parentId": asked_id,
            "timestamp": answered_at,
            "message": {
                "role": "assistant",
                "api": RECORDED_API,
                "provider": answer.provider,
                "model": answer.model,
                "content": [{"type": "text", "text": answer.text}],
                "usage": {
                    "input": answer.input_tokens,
                    "output": answer.output_tokens,
                    "cacheRead": 0,
                    "cacheWrite": 0,
                    "totalTokens": answer.input_tokens + answer.output_tokens,
                    "cost": cost,
                },
                "stopReason": "stop",
                "timestamp": millis(answered_at),
            },
        },
        *switch,
    ]
