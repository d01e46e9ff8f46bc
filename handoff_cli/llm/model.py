"""The model: which one a handoff uses, decided once, and the call to it.

This is the one module that imports LiteLLM, lazily, because the import takes seconds; ``show``
and ``list`` never reach it, and neither does a dry run where LiteLLM's data answers: its table of
windows and prices (``model_table``) and its token counting (``tokens``) are read without it. Its
offline switches are set before the import (otherwise it fetches a price list from the network),
and its debug printing, which would go to stdout, is turned off.

``resolve_model`` decides the writer in one place: a ``Model`` (its LiteLLM name, credentials,
window, prices, token counter), or the built-in writer when there is no model to reach. A
``Model`` is a ``writer.Writer``: it fits the conversation into its window (``plan``), asks,
plans again if the provider finds a request too long, and asks once for a repair of a document
that lacks sections. ``acomplete`` streams an answer; every LiteLLM failure derives from
``openai.APIError`` and becomes a ``ModelError`` with one line naming the model. Retries (with
backoff) are ours, on rate limits, server errors and lost connections.
"""

from __future__ import annotations

import asyncio
import os
import random
import re
import threading
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import orjson

from handoff_cli.document import missing_sections
from handoff_cli.errors import ModelError, NoDocumentError, SessionFileError, UsageError
from handoff_cli.handoff.builtin import BUILTIN, EXTRACTIVE, Builtin
from handoff_cli.handoff.conversation import Conversation
from handoff_cli.handoff.loop import INTERRUPTED
from handoff_cli.handoff.plan import (
    CHARS_PER_TOKEN,
    DEFAULT_WINDOW,
    Bound,
    Budget,
    Counter,
    Plan,
    far_under,
    final_request,
    fold_request,
    make_plan,
    rough_count,
    rough_tokens,
    sent,
    sized_requests,
)
from handoff_cli.handoff.prompt import ChatMessage, repair_prompt
from handoff_cli.handoff.redact import Redactor
from handoff_cli.handoff.report import ABOUT
from handoff_cli.handoff.writer import Answer, Brief, Planned, Written
from handoff_cli.llm import table as model_table
from handoff_cli.llm import tokens
from handoff_cli.llm.table import litellm_name
from handoff_cli.sessions.jsonl import dumps
from handoff_cli.sessions.session import file_shape

if TYPE_CHECKING:
    from handoff_cli.agents.context import Context
    from handoff_cli.handoff.report import ABOUT, Reporter
    from handoff_cli.options import Options


class ContextTooLongError(ModelError):
    """The provider says the request does not fit the model's window."""

    def __init__(self, reason: str, limit: int | None = None) -> None:
        super().__init__(reason)
        self.limit = limit
        """The window the provider states, when its message says it."""


# How providers state their window when they refuse a request (OpenAI and vLLM, Anthropic,
# Gemini, Mistral, llama.cpp and others), as LiteLLM passes their words on.
_STATED_LIMITS = [
    re.compile(pattern, re.IGNORECASE)
    for pattern in (
        r"maximum context length is (\d[\d,]*)",
        r"(\d[\d,]*) maximum context length",
        r"tokens? > (\d[\d,]*)(?: tokens?)? maximum",
        r"maximum number of tokens allowed \((\d[\d,]*)\)",
        r"context (?:size|window|length) \((\d[\d,]*)(?: tokens)?\)",
        r"context (?:size|window|length) (?:of|is) (\d[\d,]*)",
        r"limit (?:of|is) (\d[\d,]*) tokens",
    )
]


def stated_limit(text: str) -> int | None:
    """The window a provider's refusal states, if it states one."""
    for pattern in _STATED_LIMITS:
        found = pattern.search(text)
        if found:
            return int(found.group(1).replace(",", ""))
    return None


T = TypeVar("T")

Progress = Callable[[int], None]
"""Called as the answer streams in, with the number of output tokens so far."""

ALIASES = {"extractive": EXTRACTIVE}
MAX_BACKOFF_S = 30.0
NO_KEY = "sk-no-key-needed"  # OpenAI's client insists on a key, which local servers ignore


class Counting(Counter, Protocol):
    """A model's token counter (``plan.Counter``), which may have a tokenizer to load."""

    def load(self) -> None:
        """Load what counting takes now, rather than at the first count."""
        ...


REPLANS = 2  # how often a provider's "too long" makes us plan again, with less room
FOCUS_SHARE = 0.25  # the most of a request's room that --focus may take
ANSWER_SHARE = 4
"""An answer is read up to this many times ``--max-doc-tokens`` (and never past the model's
window): room for a model that roughly keeps to the cap, an end for one that goes on and on."""
RECORD_BYTES = 300
"""About what loading keeps of each line of a session (``session.Record``; less for a line
that is not a message)."""
LOADING_BYTES = 30 << 20
"""What loading a tokenizer holds for a moment over what it keeps (its table of ranks: some
25 MB for o200k_base)."""

Ask = Callable[[list[ChatMessage]], Awaitable[Answer]]


@dataclass(frozen=True)
class Model:
    """A model reached through LiteLLM, with everything a handoff needs to know of it: a
    ``writer.Writer``."""

    name: str
    """LiteLLM's name for it, e.g. ``openai/gpt-4o``."""
    api_key: str | None = None
    api_base: str | None = None
    window: int = DEFAULT_WINDOW
    """Input tokens a request may hold (with room for the answer)."""
    max_output: int | None = None
    missing_keys: tuple[str, ...] = ()
    """Environment variables its provider needs and does not have here."""
    count: Counting = field(default=rough_count, repr=False, compare=False)
    """Counts the tokens of messages as the provider will (near enough)."""
    prices: tuple[float, float] | None = None
    """USD a token in and out, as the user gave them; None: LiteLLM's table decides."""
    prompted: bool = True

    @property
    def budget(self) -> Budget:
        return Budget(self.window, self.max_output)

    def costs(self, input_tokens: int, output_tokens: int) -> tuple[float | None, float | None]:
        """What it charges for so many tokens in and out: at the prices the user gave, else by
        LiteLLM's price table (ours, then LiteLLM's own ``cost_per_token``); None where it is
        unknown."""
        if self.prices is not None:
            return input_tokens * self.prices[0], output_tokens * self.prices[1]
        found = _table_info(self.name)
        if found is not None and found.input_price is not None and found.output_price is not None:
            return float(input_tokens) * found.input_price, float(
                output_tokens
            ) * found.output_price
        litellm = _import_litellm()
        try:
            paid_in, paid_out = litellm.cost_per_token(
                model=self.name, prompt_tokens=input_tokens, completion_tokens=output_tokens
            )
        except Exception:  # LiteLLM cannot price every model (local ones, new ones)
            return None, None
        return float(paid_in), float(paid_out)

    def price(self, input_tokens: int, output_tokens: int) -> float | None:
        paid_in, paid_out = self.costs(input_tokens, output_tokens)
        return None if paid_in is None or paid_out is None else paid_in + paid_out

    def preload(self, path: Path) -> None:
        """The tokenizer, when it is best loaded before the session at ``path``, which will be
        counted: when the session's records will outweigh the longest line read while the
        conversation is built, the memory it takes for a moment to load comes before theirs,
        rather than on top of them; else it is loaded when first needed, after the longest lines
        (docs/handoff.md §7)."""
        try:
            if far_under(path.stat().st_size, self.budget):
                return  # not counted, most likely
            shape = file_shape(path)
        except (OSError, SessionFileError):  # loading the session says what is wrong with it
            return
        if shape.longest < shape.lines * RECORD_BYTES + LOADING_BYTES:
            self.count.load()

    def fitted_focus(self, focus: str | None, reporter: Reporter) -> str | None:
        """The focus, cut to a share of the window if it is longer (it is sent as given, but it
        must not crowd out the conversation it is about)."""
        if not focus:
            return focus
        most = int(self.budget.tokens * FOCUS_SHARE)
        tokens = self.count([{"role": "user", "content": focus}])
        if tokens <= most:
            return focus
        keep = max(1, len(focus) * most // tokens)
        reporter.warn(
            f"warning: --focus is about {tokens:,} tokens; only its first {most:,} are sent, to "
            "leave room for the conversation"
        )
        return focus[:keep] + " [… the rest of the focus was cut for size]"

    def conversation(
        self, context: Context, prompt: ChatMessage, mask: Redactor | None
    ) -> tuple[Conversation, ChatMessage]:
        """Every message far too long to be sent (several times the window) is cut already, so
        that masking and counting never read what cannot be used; the prompt too."""
        budget = self.budget
        bound = Bound.within(budget.tokens)
        read = Conversation.measured(context, bound.read_whole, bound, mask, self.count, budget)
        return read, bound.cut(prompt, len(dumps(prompt))) or prompt

    def planned(self, brief: Brief) -> Planned:
        budget = self.budget
        plan = make_plan(brief.conversation, brief.prompt, budget, self.count)
        sized = sized_requests(
            plan, brief.prompt, self.count, budget.reserve, brief.conversation, brief.sections
        )
        return Planned(plan, tuple(sized), budget.window, budget.tokens)

    async def write(self, brief: Brief, options: Options, reporter: Reporter) -> Written:
        """Ask for the document, as the plan says; if the provider finds a request too long
        after all, plan again with a quarter less room (or within the window it states), at
        most twice. Then check the sections, and ask once for a repair if they are wrong. The
        answer holds the usage of every call made."""
        if self.missing_keys:
            raise ModelError(
                f"{self.name}: no credentials: set {' or '.join(self.missing_keys)}, "
                "or pass --api-key"
            )
        reporter.stage(f"asking {self.name}")
        ask = self._asker(options, reporter, brief.sections)
        budget = self.budget
        for attempt in range(REPLANS + 1):
            plan = make_plan(brief.conversation, brief.prompt, budget, self.count)
            try:
                answer = await _send(plan, brief, ask, reporter)
                break
            except ContextTooLongError as error:
                if attempt == REPLANS:
                    hint = "; if its window is smaller, give it: --context-window"
                    hint = "" if error.limit else hint
                    raise ModelError(
                        f"{error.reason}; the conversation does not fit the model's window even "
                        f"at {budget.tokens:,} tokens a request{hint}"
                    ) from None
                if error.limit is not None and error.limit < budget.window:
                    budget = Budget(error.limit, budget.max_output)
                    said = f"its window is {budget.window:,} tokens"
                else:
                    budget = budget.narrowed(0.75)
                    said = "it counts more than we do"
                reporter.warn(
                    f"warning: {self.name} found a request too long ({said}); planning "
                    f"again with {budget.tokens:,} tokens a request"
                )
        answer = replace(answer, text=answer.text.strip())
        answer, missing = await _repaired(answer, ask, reporter, brief.sections)
        if missing:
            message = "the document lacks the sections " + ", ".join(missing)
            if options.strict:
                raise NoDocumentError(message)
            reporter.warn(f"warning: {message}")
        return Written(answer, missing, plan)

    async def revise(
        self, brief: Brief, document: str, request: str, options: Options, reporter: Reporter
    ) -> Answer | None:
        """One more turn after the final request: the conversation as it held it, the document
        as its answer, then ``request``. Where that is too long for the model, the document and
        ``request`` alone."""
        reporter.stage("asking for the document again, with what the checks found")
        ask = self._asker(options, reporter, brief.sections)
        plan = make_plan(brief.conversation, brief.prompt, self.budget, self.count)
        final = sent(brief.conversation, plan, plan.final)
        turn = [
            *final_request(final, brief.prompt, document if plan.chunks else None),
            {"role": "assistant", "content": document},
            {"role": "user", "content": request},
        ]
        try:
            answer = await ask(turn)
        except ContextTooLongError:
            alone = f"{request}\n\n<document>\n{document}\n</document>"
            answer = await ask([{"role": "user", "content": alone}])
        return replace(answer, text=answer.text.strip()) if answer.text.strip() else None

    def _asker(self, options: Options, reporter: Reporter, sections: tuple[str, ...]) -> Ask:
        """One request of the handoff: its answer read up to a bound (``_answer_bound``), and
        kept, cut there, only if it holds every one of ``sections`` by then."""
        most, why = self._answer_bound(options.max_doc_tokens)

        async def ask(messages: list[ChatMessage]) -> Answer:
            answer = await acomplete(
                messages,
                self,
                timeout=options.timeout,
                retries=options.retries,
                progress=reporter.streamed,
                warn=reporter.warn,
                most_tokens=most,
            )
            if not answer.cut_short:
                return answer
            past = f"{self.name}'s answer went on past {most:,} tokens ({why})"
            if missing_sections(answer.text, sections):
                raise NoDocumentError(f"{past} without the required sections; stopped reading it")
            reporter.warn(
                f"warning: {past}; it holds every section by then, so it is kept, cut there"
            )
            return replace(answer, text=f"{answer.text.rstrip()}\n\n[… cut: the answer went on]")

        return ask

    def _answer_bound(self, max_doc_tokens: int) -> tuple[int, str]:
        """The most tokens of an answer read, and what sets it."""
        most = ANSWER_SHARE * max_doc_tokens
        if self.window < most:
            return self.window, "the model's window"
        return most, f"{ANSWER_SHARE}x --max-doc-tokens"


async def _send(plan: Plan, brief: Brief, ask: Ask, reporter: Reporter) -> Answer:
    """Send the plan's requests: fold each chunk into the draft, then the final request; each
    request's messages built as it is sent."""
    conversation = brief.conversation
    draft: str | None = None
    spent: Answer | None = None
    for number, chunk in enumerate(plan.chunks, 1):
        reporter.stage(f"chunk {number}/{len(plan.chunks)}")
        folded = await ask(fold_request(sent(conversation, plan, chunk), draft, brief.sections))
        draft = folded.text.strip() or draft
        spent = folded if spent is None else _combined(spent, folded, folded.text)
    if plan.chunks:
        reporter.stage(f"final request ({plan.requests} in all)")
    final = sent(conversation, plan, plan.final)
    answer = await ask(final_request(final, brief.prompt, draft))
    return answer if spent is None else _combined(spent, answer, answer.text)


async def _repaired(
    answer: Answer, ask: Ask, reporter: Reporter, sections: tuple[str, ...]
) -> tuple[Answer, list[str]]:
    """The answer, or a repair of it asked for once if it lacks some of ``sections`` (kept if
    it lacks fewer); and the sections it still lacks."""
    if not answer.text:
        raise NoDocumentError()
    missing = missing_sections(answer.text, sections)
    if not missing:
        return answer, missing
    reporter.stage("asking for the document in the required structure")
    repaired = await ask([{"role": "user", "content": repair_prompt(answer.text, sections)}])
    text = repaired.text.strip()
    better = text and len(missing_sections(text, sections)) < len(missing)
    answer = _combined(answer, repaired, text if better else answer.text)
    return answer, missing_sections(answer.text, sections)


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


def _known(session_model: str | None) -> bool:
    """Whether the session names a model: what the agents print for a turn with no provider
    or model (``undefined/undefined``, ``null/...``) names none."""
    if not session_model:
        return False
    provider, _, model = session_model.partition("/")
    unknown = ("", "undefined", "null")
    return provider not in unknown and model not in unknown


def resolve_model(
    requested: str | None,
    session_model: str | None,
    *,
    api_key: str | None = None,
    api_base: str | None = None,
    context_window: int | None = None,
    prices: tuple[float, float] | None = None,
    warn: Callable[[str], None] = lambda text: None,
    planned: bool = False,
) -> Model | Builtin:
    """The writer to use: the model ``requested`` if given (it never falls back); else the
    session's own model if its credentials are at hand; else the built-in writer, with a note
    through ``warn`` saying why (what it would do, if only ``planned``). A requested model whose
    key is missing keeps ``missing_keys``, so that a dry run can still plan for it and a real
    run can refuse before calling it."""
    name = ALIASES.get(requested, requested) if requested else None
    writes = "would write" if planned else "writes"
    if name is None and not _known(session_model):
        warn(
            f"note: the session names no model, so the built-in extractive writer "
            f"({EXTRACTIVE}) {writes} the document. For an LLM, pick one with --model or "
            "$HANDOFF_MODEL."
        )
        return BUILTIN
    name = name or litellm_name(session_model or "")
    if name == EXTRACTIVE:
        return BUILTIN
    if not _known_provider(name):
        if requested:
            raise UsageError(
                f"LiteLLM knows no provider for the model {name!r}: name it as provider/model, "
                "e.g. openai/gpt-4o, anthropic/claude-sonnet-4-5, ollama_chat/llama3"
            )
        warn(
            f"note: LiteLLM knows no provider for the session's model, so the built-in "
            f"extractive writer ({EXTRACTIVE}) {writes} the document (for an LLM, pick one with "
            f"--model or $HANDOFF_MODEL){ABOUT}{name}"
        )
        return BUILTIN
    missing = _missing_keys(name, api_key, api_base)
    if missing and not requested:
        keys = " or ".join(missing)
        warn(
            f"note: no key is set for the session's model, so the built-in extractive writer "
            f"({EXTRACTIVE}) {writes} the document (for an LLM, set it, or pick a model with "
            f"--model or $HANDOFF_MODEL){ABOUT}{name} ({keys})"
        )
        return BUILTIN
    known_window, max_output = _window(name)
    return Model(
        name,
        api_key=api_key,
        api_base=api_base,
        window=context_window or known_window or DEFAULT_WINDOW,
        max_output=max_output,
        missing_keys=tuple(missing),
        count=_token_counter(name),
        prices=prices,
    )


_litellm: ModuleType | None = None
_importing = threading.Lock()


def _import_litellm() -> ModuleType:
    """LiteLLM, imported once. The import runs in a thread of its own, so that a Ctrl-C during
    its seconds interrupts the wait for it, at once and cleanly, and never the import itself:
    an exception raised inside a module's class definitions comes out as another error."""
    global _litellm
    with _importing:
        if _litellm is None:
            loaded: list[ModuleType] = []
            failed: list[BaseException] = []
            worker = threading.Thread(
                target=_load_litellm, args=(loaded, failed), name="import litellm", daemon=True
            )
            worker.start()
            worker.join()  # a signal's KeyboardInterrupt is raised here, in this thread
            if failed:
                raise failed[0]
            _litellm = loaded[0]
    return _litellm


def _litellm_environment() -> None:
    """LiteLLM's offline switches: its bundled table rather than one fetched, no downloads."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")


# LiteLLM reads these variables of its own; when one is set, its answers may differ from what
# its data says, and it is asked itself.
_ROUTING_VARIABLES = ("USE_LITELLM_PROXY",)  # every model sent through a LiteLLM proxy
_COUNTING_VARIABLES = (
    "TIKTOKEN_ENCODE_CHUNK_SIZE_CHARS",
    "TOKEN_COUNTER_MAX_EXACT_CHARS",
    "CUSTOM_TIKTOKEN_CACHE_DIR",
    # Its image rule's sizes (``tokens.image``).
    "DEFAULT_IMAGE_WIDTH",
    "DEFAULT_IMAGE_HEIGHT",
    "MAX_IMAGE_URL_DOWNLOAD_SIZE_MB",
    "MAX_SHORT_SIDE_FOR_IMAGE_HIGH_RES",
    "MAX_LONG_SIDE_FOR_IMAGE_HIGH_RES",
    "MAX_TILE_WIDTH",
    "MAX_TILE_HEIGHT",
)


def _table_info(model: str) -> model_table.ModelInfo | None:
    """What LiteLLM's table says of ``model``, when it is what LiteLLM itself would say."""
    return model_table.info(model) if _table_holds() else None


def _table_provider(model: str) -> str | None:
    return model_table.provider(model) if _table_holds() else None


def _table_holds() -> bool:
    """Whether LiteLLM reads its bundled table (rather than fetch one) and routes as usual."""
    _litellm_environment()
    offline = os.environ.get("LITELLM_OFFLINE_MODE", "").strip().lower() == "true"
    local = os.environ.get("LITELLM_LOCAL_MODEL_COST_MAP", "").lower() == "true"
    return (offline or local) and not any(v in os.environ for v in _ROUTING_VARIABLES)


def _load_litellm(loaded: list[ModuleType], failed: list[BaseException]) -> None:
    try:
        _litellm_environment()
        import litellm

        litellm.suppress_debug_info = True
        loaded.append(litellm)
    except BaseException as error:  # handed to the waiting thread, which raises it
        failed.append(error)


def _known_provider(model: str) -> bool:
    if _table_provider(model) is not None:
        return True
    litellm = _import_litellm()
    try:
        litellm.get_llm_provider(model)
    except Exception:  # LiteLLM says "LLM Provider NOT provided", with pages of help
        return False
    return True


def _missing_keys(model: str, api_key: str | None, api_base: str | None) -> list[str]:
    """The environment variables the provider of ``model`` needs and does not have."""
    if api_key or api_base:
        return []
    provider = _table_provider(model)
    keys = model_table.KEYS.get(provider) if provider else None
    if keys is not None:
        # Read where LiteLLM reads them: a provider's key is its own variable, not our option.
        present = any(all(name in os.environ for name in group) for group in keys.groups)
        return [] if present else list(keys.missing)
    litellm = _import_litellm()
    try:
        found = litellm.validate_environment(model=model)
    except Exception:  # an unknown provider: let the call itself say what is wrong
        return []
    return [] if found.get("keys_in_environment") else list(found.get("missing_keys") or [])


def _window(model: str) -> tuple[int | None, int | None]:
    """The model's input window and its longest answer, where LiteLLM knows them."""
    found = _table_info(model)
    if found is not None:
        return found.window, found.max_output
    litellm = _import_litellm()
    try:
        info = litellm.get_model_info(model)
    except Exception:  # unknown to LiteLLM's price list: the caller's default applies
        return None, None
    return info.get("max_input_tokens"), info.get("max_output_tokens")


def _token_counter(model: str) -> tokens.Counter:
    """Counts the tokens of messages as LiteLLM does for ``model``: with tiktoken where LiteLLM
    does and the table says which encoding, else with LiteLLM. Either way a request's count is
    the sum of its messages' (``tokens.Counter``), each message counted once."""

    def litellm_count(message: ChatMessage) -> int:
        litellm = _import_litellm()
        return int(litellm.token_counter(model=model, messages=[message])) - tokens.REPLY_PRIMER

    name = tokens.encoding_name(model) if _table_holds() and _counts_as_usual() else None
    if name in tokens.ENCODINGS:
        counting = tokens.Tiktoken(name, fallback=litellm_count)
        return tokens.Counter(counting, ahead=counting.ahead, load=counting.load)
    return tokens.Counter(litellm_count)


def _counts_as_usual() -> bool:
    return not any(v in os.environ for v in _COUNTING_VARIABLES)


async def acomplete(
    messages: Sequence[ChatMessage],
    model: Model,
    *,
    timeout: float,
    retries: int,
    progress: Progress | None = None,
    warn: Callable[[str], None] = lambda text: None,
    most_tokens: int | None = None,
) -> Answer:
    """Stream the model's answer to ``messages``. ``timeout`` is a deadline for each attempt
    as a whole, however the answer trickles in. What is worth retrying is retried, and said
    through ``warn``; a timeout is not (waiting as long again rarely helps). With
    ``most_tokens``, no more of the answer is read than about that many tokens (of text, at
    ``CHARS_PER_TOKEN`` a token): past it the connection is closed and the answer comes back
    ``cut``. A server that ignores ``stream`` and answers one JSON completion is read as well."""
    litellm = _import_litellm()
    import openai

    most_chars = None if most_tokens is None else most_tokens * CHARS_PER_TOKEN
    received = [0]  # pieces of the answer so far: an error after some is one mid-stream

    def counted(pieces: int) -> None:
        received[0] = pieces
        if progress is not None:
            progress(pieces)

    for attempt in range(retries + 1):
        received[0] = 0
        try:
            streamed = _stream(litellm, messages, model, counted, most_chars)
            return await asyncio.wait_for(streamed, timeout)
        except asyncio.TimeoutError:
            raise ModelError(f"{model.name}: no answer within {timeout:g} s") from None
        except openai.APIError as error:
            if INTERRUPTED.is_set():  # what the interrupt became in a library that caught it
                raise KeyboardInterrupt from None
            reason = f"{model.name}: {explain(error, timeout, received[0])}"
            if _too_long(litellm, error):
                raise ContextTooLongError(reason, stated_limit(str(error))) from None
            if attempt == retries or not _retryable(error):
                raise ModelError(reason) from None
            wait = _backoff(error, attempt)
            warn(f"warning: {reason}; trying again in {wait:.1f} s ({attempt + 1} of {retries})")
            await asyncio.sleep(wait)
    raise AssertionError("unreachable")


def _too_long(litellm: ModuleType, error: Exception) -> bool:
    """LiteLLM maps every provider's "context length exceeded" to one error class."""
    return isinstance(error, litellm.ContextWindowExceededError)


def _encodable(messages: Sequence[ChatMessage]) -> list[ChatMessage]:
    """``messages`` with every lone surrogate (half of an emoji the agent cut, which its
    JavaScript writes and reads) as U+FFFD: the HTTP client encodes the request as UTF-8, which
    has no surrogates, and would fail on the whole request for one of them."""
    try:
        orjson.dumps(messages)  # refuses exactly the strings UTF-8 cannot encode
    except TypeError:
        # Written as JavaScript writes them, each lone surrogate escaped on its own.
        escaped = dumps(list(messages))
        return list(orjson.loads(_SURROGATE_ESCAPE.sub(rb"\1\\ufffd", escaped)))
    return list(messages)


# An escape of a surrogate, not an escaped backslash followed by the letters "u d8...".
_SURROGATE_ESCAPE = re.compile(rb"(?<!\\)((?:\\\\)*)\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


async def _stream(
    litellm: ModuleType,
    messages: Sequence[ChatMessage],
    model: Model,
    progress: Progress | None,
    most_chars: int | None = None,
) -> Answer:
    response = await litellm.acompletion(
        model=model.name,
        messages=_encodable(messages),
        stream=True,
        stream_options={"include_usage": True},
        num_retries=0,
        api_key=model.api_key or (NO_KEY if model.api_base else None),
        api_base=model.api_base,
    )
    try:
        plain = _unstreamed(response)
        if plain is not None:
            text, usage, cut_short = await _read_plain(plain, most_chars)
            if progress is not None:
                progress(1)
        else:
            text, usage, cut_short = await _read_stream(
                litellm, response, messages, progress, most_chars
            )
    finally:
        # Whether it ended, failed, was cut or cancelled, close the connection now rather than
        # when it is collected: the rest of an answer cut short is never downloaded.
        await response.aclose()
    if usage is None:  # cut before the provider said: what was sent, and at least what was read
        usage = (model.count(list(messages)), rough_tokens(len(text)))
    input_tokens, output_tokens = usage
    model_name, provider, *_ = litellm.get_llm_provider(model.name)
    input_cost, output_cost = model.costs(input_tokens, output_tokens)
    if cut_short and most_chars is not None:
        text = _cut(text, most_chars)
    return Answer(
        text, provider, model_name, input_tokens, output_tokens, input_cost, output_cost, cut_short
    )


Usage = tuple[int, int]
"""Input and output tokens, as the provider reports them; None where it never did."""


async def _read_stream(
    litellm: ModuleType,
    response: Any,
    messages: Sequence[ChatMessage],
    progress: Progress | None,
    most_chars: int | None,
) -> tuple[str, Usage | None, bool]:
    """The streamed answer's text and usage, read up to ``most_chars`` of text (then: cut)."""
    chunks = []
    pieces: list[str] = []
    read = 0
    async for chunk in response:
        chunks.append(chunk)
        content = chunk.choices[0].delta.content if chunk.choices else None
        if not content:
            continue
        pieces.append(content)
        read += len(content)
        if progress is not None:
            progress(len(pieces))
        if most_chars is not None and read > most_chars:
            return "".join(pieces), None, True
    built = litellm.stream_chunk_builder(chunks, messages=list(messages))
    text = (built.choices[0].message.content or "") if built and built.choices else ""
    usage = getattr(built, "usage", None)
    counts = (getattr(usage, "prompt_tokens", 0), getattr(usage, "completion_tokens", 0))
    return text, (int(counts[0] or 0), int(counts[1] or 0)), False


def _unstreamed(response: Any) -> Any | None:
    """The HTTP response under LiteLLM's stream when the server ignored ``stream`` and sent
    one JSON document (``Content-Type: application/json``), else None. LiteLLM's OpenAI path
    hands any body to the OpenAI client's event-stream decoder, which finds no ``data:`` line
    in a JSON document and yields nothing: the answer would come out empty. Only that path
    has the response to look at; other providers' streams are read as streams."""
    http = getattr(getattr(response, "completion_stream", None), "response", None)
    headers = getattr(http, "headers", None)
    if headers is None:
        return None
    kind = str(headers.get("content-type", "")).split(";")[0].strip().lower()
    return http if kind == "application/json" or kind.endswith("+json") else None


# A character of text takes at most 6 bytes in JSON (``\uXXXX``); the rest of a completion
# (ids, usage, a refusal, log-probabilities) stays well under this.
_JSON_ENVELOPE = 64 * 1024


async def _read_plain(http: Any, most_chars: int | None) -> tuple[str, Usage | None, bool]:
    """One JSON chat completion's text and usage, the body read no further than the longest
    that can hold ``most_chars`` of text (a longer one is cut, with no text to keep)."""
    most_bytes = None if most_chars is None else most_chars * 6 + _JSON_ENVELOPE
    body = bytearray()
    async for block in http.aiter_bytes():
        body += block
        if most_bytes is not None and len(body) > most_bytes:
            return "", None, True
    try:
        completion = orjson.loads(body)
    except orjson.JSONDecodeError:
        completion = None
    text = _completion_text(completion)
    if text is None:
        raise NoDocumentError(
            "the model's server sent JSON that is not a chat completion, where a stream was asked"
        )
    reported = completion.get("usage")  # a completion: a JSON object
    counts = [reported.get(key) for key in _USAGE_KEYS] if isinstance(reported, dict) else []
    numbers = [n for n in counts if isinstance(n, int) and n >= 0]
    usage = (numbers[0], numbers[1]) if len(numbers) == 2 else None
    return text, usage, most_chars is not None and len(text) > most_chars


_USAGE_KEYS = ("prompt_tokens", "completion_tokens")


def _completion_text(completion: Any) -> str | None:
    """The text of a chat completion's first choice (a string, or a list of text parts), or
    None when it is no chat completion."""
    choices = completion.get("choices") if isinstance(completion, dict) else None
    first = choices[0] if isinstance(choices, list) and choices else None
    message = first.get("message") if isinstance(first, dict) else None
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [part.get("text") for part in content if isinstance(part, dict)]
        return "".join(text for text in texts if isinstance(text, str))
    return "" if isinstance(message, dict) and content is None else None


def _cut(text: str, chars: int) -> str:
    """``text`` cut to ``chars``, at its last line break before that when one is in the second
    half: a document cut at a line's end reads as one cut, not as one garbled."""
    head = text[:chars]
    end = head.rfind("\n")
    return head[:end] if end >= chars // 2 else head


def _retryable(error: Exception) -> bool:
    import openai

    if isinstance(error, openai.APITimeoutError):
        return False  # waiting the whole timeout again rarely helps
    unreachable = _unreachable(error)
    if unreachable is not None:
        return unreachable[1] != NOT_RESOLVED  # a name not found now is not found in a second
    if isinstance(error, openai.APIConnectionError):
        return True
    status = getattr(error, "status_code", None)
    return status == 429 or (isinstance(status, int) and status >= 500)


def _backoff(error: Exception, attempt: int) -> float:
    response = getattr(error, "response", None)
    headers = getattr(response, "headers", None) or {}
    try:
        wanted = float(headers.get("retry-after", ""))
    except (TypeError, ValueError):
        wanted = 0.0
    exponential = min(MAX_BACKOFF_S, 2.0**attempt) * (0.5 + random.random() / 2)
    return min(MAX_BACKOFF_S, max(wanted, exponential))


def explain(error: Exception, timeout: float, received: int = 0) -> str:
    """One line saying what went wrong, by what happened (not by the status LiteLLM gives it),
    without LiteLLM's prefixes; ``received`` pieces of the answer had come."""
    import openai

    litellm = _import_litellm()
    status = getattr(error, "status_code", None)
    if isinstance(error, openai.APITimeoutError):
        return f"no answer within {timeout:g} s"
    detail = str(getattr(error, "message", "") or error)
    causes = list(_causes(error))
    if isinstance(error, getattr(litellm.exceptions, "MidStreamFallbackError", ())) or received:
        return _broken_stream(causes, received)
    unreachable = _unreachable(error)
    if unreachable is not None:
        host, why = unreachable
        return f"cannot reach {host} ({why})"
    if isinstance(error, openai.APIConnectionError) or "Connection error" in detail:
        # LiteLLM reports a refused or dropped connection as a 500 "Connection error."
        return "cannot reach the model's server (connection refused or dropped)"
    if status == 401 or isinstance(error, openai.AuthenticationError):
        kind = "authentication failed"
    elif status == 429:
        kind = "rate limited"
    elif _too_long(litellm, error):
        kind = "the conversation is too long for the model"
    else:
        kind = "the model's server refused the request"
    code = f" ({status})" if isinstance(status, int) else ""
    said = _said(detail)
    return f"{kind}{code}: {said}" if said else f"{kind}{code}"


NOT_RESOLVED = "name not resolved"
_NETWORK = (
    (re.compile(r"Name or service not known|nodename nor servname|getaddrinfo failed|"
                r"Temporary failure in name resolution|No address associated", re.I), NOT_RESOLVED),
    (re.compile(r"Connection refused|ECONNREFUSED", re.I), "connection refused"),
    (re.compile(r"Network is unreachable|No route to host|ENETUNREACH|EHOSTUNREACH", re.I),
     "no route to it"),
)  # fmt: skip
"""What a failure to connect says, as the OS's resolver and sockets word it, and what it means."""
_HOST = re.compile(
    r"(?:connect to host|host=|https?://)\s*'?\[?([A-Za-z0-9.\-_:]+?)\]?(?::[0-9]+)?[/'\s]"
)


def _unreachable(error: BaseException) -> tuple[str, str] | None:
    """(the host, why) where ``error``, or what it was raised from, is a failure to connect: a
    name the resolver did not find, a refusal, no route; None for anything else."""
    texts = [str(cause) for cause in _causes(error)]
    request = getattr(error, "request", None)
    texts.append(str(getattr(request, "url", "")) + " ")
    why = next((meaning for p, meaning in _NETWORK if any(p.search(t) for t in texts)), None)
    if why is None:
        return None
    host = next((m.group(1) for t in texts if (m := _HOST.search(t + " "))), None)
    return host or "the model's server", why


def _broken_stream(causes: list[BaseException], received: int) -> str:
    """What broke an answer once it was streaming: the connection, the stream's own form, or
    LiteLLM's checks of what it carries."""
    after = f" after {received:,} pieces" if received else ""
    texts = " ".join(str(cause) for cause in causes)
    invalid = [cause for cause in causes if isinstance(cause, ValueError)]  # JSONDecodeError
    if invalid:
        said = _said(str(invalid[-1]))
        return f"the model's server sent a stream that is not valid{after}: {said}"
    if "repeating the same chunk" in texts:
        return f"LiteLLM stopped the answer{after}: the model repeated the same piece of it"
    connection = ("Connection error", "payload is not completed", "ReadError", "closed")
    if any(word in texts for word in connection):
        return f"the answer broke off{after}: the connection closed before its end"
    return f"the answer broke off{after}: {_said(texts)}"


def _causes(error: BaseException) -> Iterator[BaseException]:
    """``error`` and what it was raised from, in turn (LiteLLM wraps each error in its own)."""
    seen: set[int] = set()
    cause: BaseException | None = error
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        yield cause
        cause = cause.__cause__ or cause.__context__


SAID_CHARS = 200
"""The most of a provider's own words an error line quotes (a body can be megabytes)."""


def _said(detail: str) -> str:
    """A provider's words, on one line, masked (it may echo the key it refused), cut short."""
    detail = detail.split(" - ", 1)[-1] if " - " in detail else detail
    for prefix in ("litellm.", "MidStreamFallbackError: ", "APIConnectionError: "):
        detail = detail.replace(prefix, "")
    words = Redactor().text(" ".join(detail[: SAID_CHARS * 4].split()))
    return words if len(words) <= SAID_CHARS else words[: SAID_CHARS - 1] + "…"
