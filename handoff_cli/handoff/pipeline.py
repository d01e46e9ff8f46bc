"""The handoff, start to end (docs/handoff.md): load, guard, context, prompt, model, write.

``handoff()`` is the library's entry point; the CLI only parses options and renders its
result. Nothing is written until the model has answered with a usable document. A Ctrl-C
before the two writes (the new session, then the record in the old one) leaves every file as it
was; once they begin, signals no longer cancel: the run finishes and reports what it wrote.
In place (``Options.in_place``), the one write is a compaction entry appended to the session
itself, as oh-my-pi's own ``/handoff`` writes it (``compaction``).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import FrameType
from typing import Any

from handoff_cli.agents import DEFAULT, build_context, get
from handoff_cli.agents.choice import choose_agent
from handoff_cli.agents.context import Context
from handoff_cli.agents.omp import Cut, compaction_entry, cut, move_pointers, with_tokens_after
from handoff_cli.agents.resume import (
    continued_title,
    date_after,
    last_thinking,
    loses_model,
    model_switch,
    naming_entry,
    starting_entries,
)
from handoff_cli.cli.output import Reporter
from handoff_cli.errors import (
    AlreadyCompactedError,
    CancelledError,
    HandedOffError,
    InPlaceRefusedError,
    ModelError,
    NoDocumentError,
    NothingToHandOffError,
    SessionChangedError,
    SessionFileError,
    WriteError,
)
from handoff_cli.handoff.conversation import Conversation
from handoff_cli.handoff.document import (
    files_block,
    missing_sections,
    with_files,
    wrap_document,
)
from handoff_cli.handoff.facts import Facts, facts_of
from handoff_cli.handoff.plan import (
    CHARS_PER_TOKEN,
    Bound,
    Budget,
    Plan,
    far_under,
    final_request,
    fold_request,
    make_plan,
    sent,
    sized_requests,
)
from handoff_cli.handoff.prompt import ChatMessage, handoff_prompt, repair_prompt
from handoff_cli.handoff.redact import Redactor
from handoff_cli.llm.model import (
    Answer,
    ContextTooLongError,
    Model,
    acomplete,
    builtin_answer,
    resolve_model,
    run,
)
from handoff_cli.options import Options
from handoff_cli.sessions.catalog import TAIL_BYTES, ends_with_handoff, handoff_children
from handoff_cli.sessions.files import (
    Locked,
    TitleSlot,
    iso_timestamp,
    locked,
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
from handoff_cli.sessions.jsonl import dumps
from handoff_cli.sessions.session import (
    CURRENT_VERSION,
    Entry,
    Record,
    Session,
    file_shape,
    load_session,
)
from handoff_cli.sessions.tree import branch, leaf

# The API that our OpenAI-format requests amount to, in the agents' own vocabulary.
RECORDED_API = "openai-completions"
DIGEST_BLOCK = 1 << 20
REPLANS = 2  # how often a provider's "too long" makes us plan again, with less room
FOCUS_SHARE = 0.25  # the most of a request's room that --focus may take
ANSWER_SHARE = 4
"""An answer is read up to this many times ``--max-doc-tokens`` (and never past the model's
window): room for a model that roughly keeps to the cap, an end for one that goes on and on."""


@dataclass(frozen=True)
class Request:
    """What is to be sent: the model, the conversation and the prompt."""

    model: Model
    conversation: Conversation
    """Measured, and built again as each request sends it (masked, like the prompt)."""
    prompt: ChatMessage
    session: Session = field(repr=False)
    leaf_id: str
    agent: str
    """Whose rules read the session: the context replayed, and the shapes written."""
    facts: Facts = field(default_factory=Facts, repr=False)
    """The branch's facts (masked): for the built-in writer, and the ``<files>`` block."""
    focus: str | None = None
    """The focus as sent: masked, and cut if it would not leave room for the conversation."""
    redacted: int = 0
    """How many distinct secrets were masked in the conversation and the prompt."""
    redactor: Redactor | None = field(default=None, repr=False, compare=False)
    """What masked them, to mask what is written the same way (None: ``--no-redact``)."""
    branch: list[Record] = field(default_factory=list, repr=False)
    """The entries from the root to the leaf handed off."""
    cut: Cut | None = None
    """In place: where the compaction cuts the branch."""
    session_model: str | None = None
    """The session's own model at the leaf, as the agent names it ("provider/model")."""
    leaf_digest: bytes = field(default=b"", repr=False)
    """A digest of the leaf's line as it was read: at commit, the file must still hold that
    line there."""


@dataclass(frozen=True)
class InPlace:
    """What an in-place handoff appended: one compaction entry."""

    entry_id: str
    first_kept_entry_id: str
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
    requests: int = 1
    strategy: str = "single"
    redacted: int = 0
    agent: str = DEFAULT
    in_place: InPlace | None = None
    """In place: the entry appended (``id`` and ``path`` are then the session's own)."""

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
            "duration_s": round(self.duration_s, 3),
            "requests": self.requests,
            "strategy": self.strategy,
            "redacted": self.redacted,
            "agent": self.agent,
        }
        if self.in_place is not None:
            done = self.in_place
            fields["entry_id"] = done.entry_id
            fields["first_kept_entry_id"] = done.first_kept_entry_id
            fields["tokens_before"] = done.tokens_before
            fields["tokens_after"] = done.tokens_after
        return fields


# --- cancellation ------------------------------------------------------------------------------

_cancellable = True
"""Until the writes begin, a signal cancels the handoff; from then on the run goes to its end
and reports what it wrote: a script that retries on exit 130 must never make a duplicate."""


def on_signal(signum: int, frame: FrameType | None) -> None:
    """SIGINT / SIGTERM handler: cancel the handoff, unless its writes have begun."""
    if _cancellable:
        raise KeyboardInterrupt


def _allow_cancel(allowed: bool) -> None:
    global _cancellable
    _cancellable = allowed


# --- the steps ---------------------------------------------------------------------------------


def prepare(path: Path, options: Options, reporter: Reporter | None = None) -> Request:
    """Steps 1 to 4: load, guard, build the context and the request, decide the model."""
    reporter = reporter or Reporter()
    named = _named_model(path, options, reporter)
    session = load_session(path)
    reporter.loaded(session)
    if options.exclusive and ends_with_handoff(_tail_as_read(session)):
        raise HandedOffError()
    tip = leaf(session, options.leaf_id)
    path_records = branch(session, tip)
    chosen = choose_agent(session, options.agent, options.folder_agent)
    where = guard(path_records, chosen.agent, options.in_place)
    if chosen.note:
        reporter.warn(chosen.note)
    assert tip is not None, "the guard leaves no empty branch"
    context = build_context(path_records, chosen.agent)
    facts = facts_of(session, path_records)
    model = named or _model(options, context.model, reporter)
    focus = _fitted_focus(options.focus, model, reporter)
    redactor = Redactor()
    if options.redact:
        facts = facts.masked(redactor.value)
    mask = redactor if options.redact else None
    budget = _budget(model)
    prompt: ChatMessage = {
        "role": "user",
        "content": handoff_prompt(focus, facts, options.max_doc_tokens),
    }
    conversation = Conversation.empty()  # the built-in writer reads the facts alone
    if budget is not None:
        bound = _bound(budget)
        since = _since_anchor(context, facts, path_records)
        read_whole = _read_whole(budget)
        # Measured (and masked) before the prompt is masked: its secrets are numbered after
        # the conversation's, as in one pass over the whole request.
        conversation = Conversation.measured(since, read_whole, bound, mask, model.count, budget)
        prompt = bound.cut(prompt, len(dumps(prompt))) or prompt
    if mask is not None:
        prompt = mask.value(prompt)
        focus = mask.text(focus) if focus else focus
    return Request(
        model=model,
        conversation=conversation,
        prompt=prompt,
        session=session,
        leaf_id=tip.id,
        agent=chosen.agent,
        facts=facts,
        focus=focus,
        redacted=redactor.count,
        redactor=redactor if options.redact else None,
        branch=path_records,
        cut=where,
        leaf_digest=_leaf_digest(session, tip),
        session_model=context.model,
    )


def _model(options: Options, session_model: str | None, reporter: Reporter) -> Model:
    return resolve_model(
        options.model,
        session_model,
        api_key=options.api_key,
        api_base=options.api_base,
        context_window=options.context_window,
        prices=options.prices,
        warn=reporter.warn,
    )


def _named_model(path: Path, options: Options, reporter: Reporter) -> Model | None:
    """The model named (``--model``, ``$HANDOFF_MODEL``), decided before the session is read:
    it never depends on the session."""
    if not options.model:
        return None
    model = _model(options, None, reporter)
    budget = _budget(model)
    try:
        if budget is not None and _counted_first(path, budget):
            model.count.load()
    except (OSError, SessionFileError):  # loading the session says what is wrong with it
        pass
    return model


RECORD_BYTES = 300
"""About what loading keeps of each line of a session (``session.Record``; less for a line
that is not a message)."""
LOADING_BYTES = 30 << 20
"""What loading a tokenizer holds for a moment over what it keeps (its table of ranks: some
25 MB for o200k_base)."""


def _counted_first(path: Path, budget: Budget) -> bool:
    """Whether the tokenizer is best loaded before the session at ``path``, which will be
    counted: when the session's records will outweigh the longest line read while the
    conversation is built, the memory it takes for a moment to load comes before theirs,
    rather than on top of them; else it is loaded when first needed, after the longest lines
    (docs/handoff.md §7)."""
    if far_under(path.stat().st_size, budget):
        return False  # not counted, most likely
    shape = file_shape(path)
    return shape.longest < shape.lines * RECORD_BYTES + LOADING_BYTES


def guard(records: list[Record], agent: str, in_place: bool) -> Cut | None:
    """Whether the branch ``records`` can be handed off (else the error that says why); in
    place, where the compaction cuts it."""
    if sum(1 for r in records if r.type == "message") < 2:
        raise NothingToHandOffError()
    if not in_place:
        return None
    if not get(agent).compacts_in_place:
        raise InPlaceRefusedError(
            "--in-place writes oh-my-pi's compaction entry; this session is read by "
            f"{get(agent).title}'s rules (--agent omp to hand it off in place anyway)"
        )
    where = cut(records)
    if where is None:
        raise AlreadyCompactedError()
    return where


def _tail_as_read(session: Session) -> bytes:
    """The end of the file as it was read: its leaf, and the entry before it."""
    size = session.read_as.st_size if session.read_as else 0
    with session.path.open("rb") as file:
        file.seek(max(0, size - TAIL_BYTES))
        return file.read(min(size, TAIL_BYTES))


def _leaf_digest(session: Session, record: Record) -> bytes:
    with session.path.open("rb") as file:
        return _line_digest(file.fileno(), record)


def _line_digest(fd: int, record: Record) -> bytes:
    """A digest of ``record``'s line in the file open at ``fd``, read a block at a time (a
    line can be huge): enough to tell whether that line is still there, byte for byte."""
    made = hashlib.blake2b(digest_size=16)
    at, end = record.offset, record.offset + record.length
    while at < end:
        block = os.pread(fd, min(end - at, DIGEST_BLOCK), at)
        if not block:
            break
        made.update(block)
        at += len(block)
    return made.digest() if at == end else b""


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


def _read_whole(budget: Budget) -> int:
    """The longest string read whole for a request within ``budget``: a longer one makes its
    message longer than ``_bound`` lets through whole, and is read as its head and tail,
    more of each than ``_bound`` keeps (so that the request is the same)."""
    return 4 * budget.tokens * CHARS_PER_TOKEN + 200


def _bound(budget: Budget) -> Bound:
    """Every message far too long to be sent (several times the model's window) is cut
    already, so that masking and counting never read what cannot be used."""
    keep = max(200, (budget.tokens // 4) * CHARS_PER_TOKEN // 2)
    return Bound(4 * budget.tokens * CHARS_PER_TOKEN, keep)


def _fitted_focus(focus: str | None, model: Model, reporter: Reporter) -> str | None:
    """The focus, cut to a share of the model's window if it is longer (it is sent as given,
    but it must not crowd out the conversation it is about)."""
    budget = _budget(model)
    if not focus or budget is None:
        return focus
    most = int(budget.tokens * FOCUS_SHARE)
    tokens = model.count([{"role": "user", "content": focus}])
    if tokens <= most:
        return focus
    keep = max(1, len(focus) * most // tokens)
    reporter.warn(
        f"warning: --focus is about {tokens:,} tokens; only its first {most:,} are sent, to "
        "leave room for the conversation"
    )
    return focus[:keep] + " [… the rest of the focus was cut for size]"


def _budget(model: Model) -> Budget | None:
    return Budget(model.window, model.max_output) if model.window else None


def _plan(request: Request, budget: Budget | None) -> Plan:
    conversation = request.conversation
    if budget is None:
        return Plan("single", range(len(conversation)))
    return make_plan(conversation, request.prompt, budget, request.model.count)


def dry_run(path: Path, options: Options, reporter: Reporter | None = None) -> dict[str, Any]:
    """The plan, each request with its size (``--dry-run``): nothing is called or written.
    The requests' ``messages`` are iterators, each request's built as it is read: the JSON
    writer streams them (``output.write_json``)."""
    request = prepare(path, options, reporter)
    model = request.model
    budget = _budget(model)
    plan = _plan(request, budget)
    draft_tokens = budget.reserve if budget else 0
    conversation = request.conversation
    requests = sized_requests(plan, request.prompt, model.count, draft_tokens, conversation)
    where = request.cut
    return {
        "mode": "new_session" if where is None else "in_place",
        "model": model.name,
        "strategy": plan.strategy,
        "window": budget.window if budget else None,
        "budget_tokens": budget.tokens if budget else None,
        "messages": _streamed(requests[-1].build),
        "requests": [{"tokens": r.tokens, "messages": _streamed(r.build)} for r in requests],
        "redacted": request.redacted,
        "agent": request.agent,
    } | (
        {}
        if where is None
        else {
            "first_kept_entry_id": where.first_kept_entry_id,
            "tokens_before": _json_number(where.tokens_before),
            "kept_entries": where.kept,
        }
    )


def _streamed(build: Callable[[], list[ChatMessage]]) -> Iterator[ChatMessage]:
    yield from build()


def _json_number(value: int | float) -> int | float | None:
    return None if value != value else value  # NaN (a usage without counts) is null in JSON


def handoff(path: Path, options: Options, reporter: Reporter | None = None) -> HandoffResult:
    """Hand the session at ``path`` over to a new session; return what was written."""
    _allow_cancel(True)
    try:
        return run(ahandoff(path, options, reporter))
    except KeyboardInterrupt:
        raise CancelledError() from None


async def ahandoff(path: Path, options: Options, reporter: Reporter | None = None) -> HandoffResult:
    """``handoff``, for an event loop: many can run at once (``rotate``). Cancelling it before
    its writes leaves every file as it was; its writes are never interrupted (they do not
    await)."""
    reporter = reporter or Reporter()
    started = time.monotonic()
    try:
        request = prepare(path, options, reporter)
        latest = request.session.records[-1].id
        if (options.record or options.in_place) and request.leaf_id != latest:
            written = "compaction is appended" if options.in_place else "exchange is recorded"
            reporter.warn(
                f"note: --leaf {request.leaf_id} is not the session's latest entry ({latest}); "
                f"the {written} on that branch, so the agent will resume there"
            )
        model = request.model
        if model.missing_keys:
            raise ModelError(
                f"{model.name}: no credentials: set {' or '.join(model.missing_keys)}, "
                "or pass --api-key"
            )
        reporter.stage(f"asking {model.name}")
        answer, missing, plan = await _generate(request, options, reporter)
        if request.redactor is not None:  # the model may quote a secret the session holds
            answer = replace(answer, text=request.redactor.text(answer.text))
        reporter.stage("writing")
        _allow_cancel(False)
        done: InPlace | None = None
        if request.cut is not None:
            done = _commit_in_place(request, request.cut, options, answer, path)
            new_id, new_path = request.session.id, path.resolve()
        else:
            new_id, new_path = _commit(request, options, answer, path)
    except (KeyboardInterrupt, asyncio.CancelledError):
        raise CancelledError() from None
    return HandoffResult(
        id=new_id,
        path=new_path,
        parent_path=path.resolve(),
        model=request.model.name,
        focus=request.focus,
        input_tokens=answer.input_tokens,
        output_tokens=answer.output_tokens,
        cost_usd=answer.cost_usd,
        missing_sections=missing,
        duration_s=time.monotonic() - started,
        requests=plan.requests,
        strategy=plan.strategy,
        redacted=request.redactor.count if request.redactor else request.redacted,
        agent=request.agent,
        in_place=done,
    )


async def _generate(
    request: Request, options: Options, reporter: Reporter
) -> tuple[Answer, list[str], Plan]:
    """Ask for the document, as the plan says; if the provider finds a request too long after
    all, plan again with a quarter less room, at most twice. Then check the sections, and ask
    once for a repair if they are wrong. The answer holds the usage of every call made."""

    most, why = _answer_bound(request.model, options.max_doc_tokens)

    async def ask(messages: list[ChatMessage]) -> Answer:
        answer = await acomplete(
            messages,
            request.model,
            timeout=options.timeout,
            retries=options.retries,
            progress=reporter.streamed,
            warn=reporter.warn,
            most_tokens=most,
        )
        if not answer.cut:
            return answer
        past = f"{request.model.name}'s answer went on past {most:,} tokens ({why})"
        if missing_sections(answer.text):
            raise NoDocumentError(f"{past} without the required sections; stopped reading it")
        reporter.warn(f"warning: {past}; it holds every section by then, so it is kept, cut there")
        return replace(answer, text=f"{answer.text.rstrip()}\n\n[… cut: the answer went on]")

    if request.model.builtin:  # in this process: no LiteLLM, no request
        facts, focus = request.facts, request.focus
        answer = builtin_answer(facts, focus, options.max_doc_tokens, [request.prompt])
        return _with_files(answer, request.facts), [], Plan("single", range(0))
    budget = _budget(request.model)
    for attempt in range(REPLANS + 1):
        plan = _plan(request, budget)
        try:
            answer = await _run(plan, request, ask, reporter)
            break
        except ContextTooLongError as error:
            if budget is None:
                raise
            if attempt == REPLANS:
                hint = (
                    "" if error.limit else "; if its window is smaller, give it: --context-window"
                )
                raise ModelError(
                    f"{error.reason}; the conversation does not fit the model's window even at "
                    f"{budget.tokens:,} tokens a request{hint}"
                ) from None
            if error.limit is not None and error.limit < budget.window:
                budget = Budget(error.limit, budget.max_output)
                said = f"its window is {budget.window:,} tokens"
            else:
                budget = budget.cut(0.75)
                said = "it counts more than we do"
            reporter.warn(
                f"warning: {request.model.name} found a request too long ({said}); planning "
                f"again with {budget.tokens:,} tokens a request"
            )
    answer = replace(answer, text=answer.text.strip())
    if not answer.text:
        raise NoDocumentError()
    missing = missing_sections(answer.text)
    if missing:
        reporter.stage("asking for the document in the required structure")
        repaired = await ask([{"role": "user", "content": repair_prompt(answer.text)}])
        text = repaired.text.strip()
        better = text and len(missing_sections(text)) < len(missing)
        answer = _combined(answer, repaired, text if better else answer.text)
        missing = missing_sections(answer.text)
    if missing:
        message = "the document lacks the sections " + ", ".join(missing)
        if options.strict:
            raise NoDocumentError(message)
        reporter.warn(f"warning: {message}")
    return _with_files(answer, request.facts), missing, plan


def _answer_bound(model: Model, max_doc_tokens: int) -> tuple[int, str]:
    """The most tokens of an answer read, and what sets it."""
    most = ANSWER_SHARE * max_doc_tokens
    if model.window is not None and model.window < most:
        return model.window, "the model's window"
    return most, f"{ANSWER_SHARE}x --max-doc-tokens"


def _with_files(answer: Answer, facts: Facts) -> Answer:
    """The document with the ``<files>`` block at its end, as oh-my-pi ends its handoff
    summaries: the block the model wrote, if any, replaced by the exact one."""
    block = files_block(facts.read_files, facts.modified_files, facts.read_set)
    return replace(answer, text=with_files(answer.text, block))


async def _run(
    plan: Plan,
    request: Request,
    ask: Callable[[list[ChatMessage]], Awaitable[Answer]],
    reporter: Reporter,
) -> Answer:
    """Send the plan's requests: fold each chunk into the draft, then the final request; each
    request's messages built as it is sent."""
    conversation = request.conversation
    draft: str | None = None
    spent: Answer | None = None
    for number, chunk in enumerate(plan.chunks, 1):
        reporter.stage(f"chunk {number}/{len(plan.chunks)}")
        folded = await ask(fold_request(sent(conversation, plan, chunk), draft))
        draft = folded.text.strip() or draft
        spent = folded if spent is None else _combined(spent, folded, folded.text)
    if plan.chunks:
        reporter.stage(f"final request ({plan.requests} in all)")
    final = sent(conversation, plan, plan.final)
    answer = await ask(final_request(final, request.prompt, draft))
    return answer if spent is None else _combined(spent, answer, answer.text)


def _combined(first: Answer, second: Answer, text: str) -> Answer:
    def total(a: float | None, b: float | None) -> float | None:
        return None if a is None or b is None else a + b

    return replace(
        first,
        text=text,
        input_tokens=first.input_tokens + second.input_tokens,
        output_tokens=first.output_tokens + second.output_tokens,
        input_cost_usd=total(first.input_cost_usd, second.input_cost_usd),
        output_cost_usd=total(first.output_cost_usd, second.output_cost_usd),
    )


def _commit(request: Request, options: Options, answer: Answer, source: Path) -> tuple[str, Path]:
    """Write the new session, then record the exchange in the old one; both under the old
    one's lock, once it is found to be the file that was read (else nothing is written). Then
    the agents are turned to the new session (``resume``): it is dated after the old one, and
    a terminal of oh-my-pi's that remembered the old one remembers the new one."""
    old = source.resolve()  # written through a symlink only once resolved
    recorded = _exchange(request, answer) if options.record else []
    # Dated after the exchange, the new session is the newer one in every agent's order.
    new_id, created = uuid7(), iso_timestamp()
    folder = options.out_dir or old.parent
    target = folder / session_file_name(created, new_id)
    data = _new_session(request, answer, new_id, created, old)
    if not options.record:
        new_path = _write_new(target, data)
    else:
        with _holding(request, old, options.exclusive, folder) as held:
            new_path = _write_new(target, data)
            try:
                _append(held, recorded)
            except BaseException:
                new_path.unlink(missing_ok=True)
                raise
    _turn_to(new_path, old, options)
    return new_id, new_path


def _new_session(request: Request, answer: Answer, new_id: str, created: str, old: Path) -> bytes:
    """The new session, as the agent writes a session it starts: its model and thinking
    level, the handoff document, and its name, the old session's continued."""
    session, agent = request.session, request.agent
    header: Entry = {
        "type": "session",
        "version": CURRENT_VERSION,
        "id": new_id,
        "timestamp": created,
        "cwd": session.header.get("cwd", ""),
        "parentSession": str(old),
    }
    taken: set[str] = set()
    thinking = last_thinking(request.branch)
    entries = starting_entries(agent, request.session_model, thinking, taken, created)
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
    if not slot:
        return new_session_bytes(header, entries, None)
    return new_session_bytes(header, entries, TitleSlot(title or "", created, title is not None))


def _turn_to(new_path: Path, old: Path, options: Options) -> None:
    """After the writes: the agents continue from the new session (``resume``). Best effort:
    the handoff is done, and a pointer that cannot be moved is the agent's to find stale."""
    try:
        if options.record:
            date_after(new_path, old)
        if options.terminal_sessions is not None and new_path.parent == old.parent:
            move_pointers(options.terminal_sessions, old, new_path)
    except OSError:
        pass


def _write_new(target: Path, data: bytes) -> Path:
    try:
        return write_new_session(target.parent, target.name, data)
    except NotADirectoryError as error:  # the folder (or one above it) is a file
        raise WriteError(target.parent, error) from None
    except OSError as error:
        raise WriteError(target, error) from None


def _commit_in_place(
    request: Request, where: Cut, options: Options, answer: Answer, source: Path
) -> InPlace:
    """Append the compaction entry to the session itself, chained from the leaf: one whole
    line under the lock (an old version migrated first, as for a record)."""
    session = request.session
    entry = compaction_entry(
        where, answer.text, new_entry_id(session.by_id), request.leaf_id, iso_timestamp()
    )
    entry = with_tokens_after(request.branch, entry)
    if request.redactor is not None:  # its <files> block and details: paths of the session
        entry["summary"] = request.redactor.text(entry["summary"])
        if "details" in entry:
            entry["details"] = request.redactor.value(entry["details"])
    old = source.resolve()
    with _holding(request, old, options.exclusive, old.parent) as held:
        _append(held, [entry])
    return InPlace(
        entry_id=entry["id"],
        first_kept_entry_id=where.first_kept_entry_id,
        tokens_before=_json_number(where.tokens_before),
        tokens_after=entry["tokensAfter"],
    )


@contextlib.contextmanager
def _holding(request: Request, path: Path, exclusive: bool, folder: Path) -> Iterator[Locked]:
    """The session's file (resolved) under its lock, once it is found to be the file that was
    read and, for an old version, rewritten at version 3 as the agents do before they append
    to one. With ``exclusive`` (rotation), ``HandedOffError`` if another run handed it off
    meanwhile, and ``SessionChangedError`` if anything was added since it was read."""
    session = request.session
    remove_stale_temporaries(path.parent)  # a killed run's, beside the file (ours only)
    with contextlib.ExitStack() as stack:
        try:
            held = stack.enter_context(locked(path))
        except FileNotFoundError:
            raise SessionChangedError(path, "it is gone") from None
        except OSError as error:
            raise WriteError(path, error) from None
        try:
            if exclusive:
                _not_handed_off(held, session, folder)
            _unchanged(held, request, strictly=exclusive or session.version < CURRENT_VERSION)
            if session.version < CURRENT_VERSION:
                held.replace(migrated_lines(session))
        except OSError as error:
            raise WriteError(path, error) from None
        yield held


def _not_handed_off(held: Locked, session: Session, folder: Path) -> None:
    """Rotation's exactly-once rule, decided on the file as it is under the lock: its leaf is
    no recorded handoff, and no handoff of it newer than its last entry exists."""
    if ends_with_handoff(held.tail(TAIL_BYTES)):
        raise HandedOffError()
    last = js_time(session.records[-1].stamp) if session.records else None
    since = last if last is not None else int(held.status().st_mtime * 1000)
    for place in dict.fromkeys((folder, held.path.parent)):
        if handoff_children(place, held.path, session.id, since):
            raise HandedOffError()


def _unchanged(held: Locked, request: Request, strictly: bool) -> None:
    """The file under the lock is the one read: the same file, no shorter, the leaf's line
    still where it was; ``strictly``, nothing added either (and, for a rewrite, not even
    touched)."""
    read_as = request.session.read_as
    assert read_as is not None, "a loaded session knows how it was read"
    now = held.status()
    tip = request.session.by_id[request.leaf_id]
    if now.st_ino != read_as.st_ino:
        raise SessionChangedError(held.path, "it was replaced")
    if now.st_size < read_as.st_size:
        raise SessionChangedError(held.path, "it was cut short")
    if _line_digest(held.fd, tip) != request.leaf_digest:
        raise SessionChangedError(held.path, "its entries were rewritten")
    if strictly and now.st_size != read_as.st_size:
        raise SessionChangedError(held.path, "it was written to")
    if request.session.version < CURRENT_VERSION and now.st_mtime_ns != read_as.st_mtime_ns:
        raise SessionChangedError(held.path, "it was written to")


def _append(held: Locked, entries: list[Entry]) -> None:
    try:
        held.append(entries)
    except OSError as error:
        raise WriteError(held.path, error) from None


def _exchange(request: Request, answer: Answer) -> list[Entry]:
    """The prompt and the answer as the agent records a turn, chained from the leaf; then, if
    the agent would otherwise resume the session on the model that wrote the answer, the
    session's own model named again, as a model switch."""
    taken = set(request.session.by_id)
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
    model = request.session_model
    switch = (
        [model_switch(request.agent, model, answered_id, taken, answered_at)]
        if model and loses_model(request.agent, request.branch)
        else []
    )
    return [
        {
            "type": "message",
            "id": asked_id,
            "parentId": request.leaf_id,
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
