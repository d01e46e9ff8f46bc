"""The model, decided once, and the call to it: names, fallback, window, errors, retries."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import httpx2 as httpx  # the HTTP client openai builds its errors from
import pytest

from handoff_cli.document import SECTIONS
from handoff_cli.errors import ModelError, UsageError
from handoff_cli.handoff.builtin import BUILTIN, EXTRACTIVE, Builtin, write_document
from handoff_cli.handoff.conversation import Conversation
from handoff_cli.handoff.facts import Facts, facts_of_messages
from handoff_cli.handoff.loop import INTERRUPTED, run_on_loop
from handoff_cli.handoff.plan import DEFAULT_WINDOW, rough_count
from handoff_cli.handoff.prompt import ChatMessage, handoff_prompt
from handoff_cli.handoff.report import Reporter
from handoff_cli.handoff.writer import Answer
from handoff_cli.llm import model as model_module
from handoff_cli.llm.model import (
    MAX_BACKOFF_S,
    ContextTooLongError,
    Model,
    acomplete,
    explain,
    resolve_model,
    stated_limit,
)
from handoff_cli.llm.table import litellm_name
from handoff_cli.options import Options

from .fakellm import Error, FakeLLMServer, Reply

pytestmark = pytest.mark.litellm  # its handoffs call the model in this process

DOCUMENT = "\n\n".join(f"## {name}\n- {name.lower()}" for name in SECTIONS)
MESSAGES = [
    {"role": "user", "content": "Make the retries configurable."},
    {"role": "assistant", "content": "Done: --retries N."},
    {"role": "user", "content": handoff_prompt()},
]
REQUEST = httpx.Request("POST", "http://127.0.0.1/v1/chat/completions")
PROMPT: ChatMessage = MESSAGES[-1]


@dataclass(frozen=True)
class Brief:
    """What a writer is given (``writer.Brief``): here, no conversation."""

    prompt: ChatMessage
    facts: Facts = field(default_factory=Facts)
    focus: str | None = None
    conversation: Conversation = field(default_factory=Conversation.empty)
    sections: tuple[str, ...] = SECTIONS


def complete_now(messages: Any, model: Model, **options: Any) -> Answer:
    return run_on_loop(acomplete(messages, model, **options))


def writer(requested: str | None, session: str | None = None, **kwargs: Any) -> Model | Builtin:
    return resolve_model(requested, session, **kwargs)


def resolved(requested: str | None, session: str | None = None, **kwargs: Any) -> Model:
    found = writer(requested, session, **kwargs)
    assert isinstance(found, Model)
    return found


@pytest.mark.parametrize(
    ("written", "litellm"),
    [
        ("anthropic/claude-sonnet-4-5", "anthropic/claude-sonnet-4-5"),
        ("google/gemini-2.5-pro", "gemini/gemini-2.5-pro"),
        ("amazon-bedrock/anthropic.claude-3", "bedrock/anthropic.claude-3"),
        ("github-copilot/gpt-4o", "github_copilot/gpt-4o"),
        ("no-slash", "no-slash"),
    ],
)
def test_litellm_names_for_the_agents_providers(written: str, litellm: str) -> None:
    assert litellm_name(written) == litellm


def test_the_builtin_writer_needs_nothing() -> None:
    for requested in ("extractive", EXTRACTIVE):
        assert writer(requested) is BUILTIN
    assert BUILTIN.window is None and BUILTIN.price(10**6, 10**6) == 0  # no key, no window, free


def test_no_model_known_falls_back_with_one_note() -> None:
    notes: list[str] = []
    assert writer(None, None, warn=notes.append) is BUILTIN
    (note,) = notes
    assert "names no model" in note and "--model" in note


def test_the_sessions_model_without_its_key_falls_back_naming_the_variable() -> None:
    notes: list[str] = []
    assert writer(None, "anthropic/claude-sonnet-4-5", warn=notes.append) is BUILTIN
    (note,) = notes
    assert "ANTHROPIC_API_KEY" in note and "anthropic/claude-sonnet-4-5" in note


def test_the_sessions_model_with_its_key_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    notes: list[str] = []
    chosen = writer(None, "anthropic/claude-sonnet-4-5", warn=notes.append)
    assert isinstance(chosen, Model)
    assert (chosen.name, chosen.missing_keys, notes) == ("anthropic/claude-sonnet-4-5", (), [])


def test_a_requested_model_never_falls_back() -> None:
    notes: list[str] = []
    chosen = writer("openai/gpt-4o", "anthropic/claude-sonnet-4-5", warn=notes.append)
    assert isinstance(chosen, Model) and chosen.name == "openai/gpt-4o"
    assert chosen.missing_keys == ("OPENAI_API_KEY",) and notes == []


def test_a_key_or_a_server_means_no_missing_keys() -> None:
    assert resolved("openai/gpt-4o", api_key="sk-x").missing_keys == ()
    with_base = resolved("openai/local", api_base="http://127.0.0.1:1/v1")
    assert (with_base.missing_keys, with_base.api_base) == ((), "http://127.0.0.1:1/v1")


def test_the_window_as_known_overridden_or_defaulted() -> None:
    known = resolved("openai/gpt-4o", api_key="k")
    assert known.window == 128_000 and known.max_output == 16_384
    assert resolved("openai/gpt-4o", api_key="k", context_window=5_000).window == 5_000
    assert resolved("openai/unknown-model-x", api_key="k").window == DEFAULT_WINDOW


def test_counters() -> None:
    real = resolved("openai/gpt-4o", api_key="k").count
    small, large = real(MESSAGES[:1]), real(MESSAGES)
    assert 0 < small < large
    assert rough_count(MESSAGES) > rough_count(MESSAGES[:1]) > 0
    (request,) = BUILTIN.planned(Brief(PROMPT)).requests  # the built-in writer counts roughly
    assert request.tokens == rough_count([PROMPT]) and request.build() == [PROMPT]


def test_answer_cost_is_known_only_when_both_halves_are() -> None:
    answer = Answer("x", "openai", "m", 10, 5, 0.25, 0.5)
    assert answer.cost_usd == 0.75
    assert Answer("x", "openai", "m", 10, 5, None, 0.5).cost_usd is None


# --- the call, over real HTTP ------------------------------------------------------------------


def served(server: FakeLLMServer) -> Model:
    return resolved("openai/test-model", api_base=server.base_url)


def test_complete_streams_the_answer_with_its_usage(llm_server: FakeLLMServer) -> None:
    llm_server.script(Reply(DOCUMENT, usage=(120, 30)))
    seen: list[int] = []
    answer = complete_now(MESSAGES, served(llm_server), timeout=10, retries=0, progress=seen.append)
    assert answer.text == DOCUMENT
    assert (answer.provider, answer.model) == ("openai", "test-model")
    assert (answer.input_tokens, answer.output_tokens) == (120, 30)
    assert seen and seen == sorted(seen)
    (sent,) = llm_server.requests
    assert sent.stream and sent.messages == MESSAGES


def test_server_errors_are_retried_then_succeed(
    llm_server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(model_module, "_backoff", lambda error, attempt: 0.0)
    llm_server.script(Error.server_error(), Reply(DOCUMENT))
    answer = complete_now(MESSAGES, served(llm_server), timeout=10, retries=1)
    assert answer.text == DOCUMENT and len(llm_server.requests) == 2


def test_refusals_are_not_retried(llm_server: FakeLLMServer) -> None:
    llm_server.script(Error.auth())
    with pytest.raises(ModelError, match=r"openai/test-model: authentication failed \(401\)"):
        complete_now(MESSAGES, served(llm_server), timeout=10, retries=3)
    assert len(llm_server.requests) == 1


def test_a_context_length_refusal_is_its_own_error(llm_server: FakeLLMServer) -> None:
    llm_server.script(Error.context_length(1000, 5000))
    with pytest.raises(ContextTooLongError, match="too long for the model"):
        complete_now(MESSAGES, served(llm_server), timeout=10, retries=3)
    assert len(llm_server.requests) == 1


def test_the_builtin_writer_answers_in_process_from_the_facts() -> None:
    """No LiteLLM, no request: the document of the facts, at the cap asked for, free."""
    facts = facts_of_messages([{"role": "user", "content": "Make the retries configurable."}])
    assert facts.latest_request == "Make the retries configurable."
    options = Options(max_doc_tokens=300)
    answer, missing, plan = run_on_loop(
        BUILTIN.write(Brief(PROMPT, facts, "retries"), options, Reporter())
    )
    assert answer.text == write_document(facts, "retries", 300) != write_document(facts)
    assert (answer.provider, answer.model, answer.cost_usd) == ("handoff", "extractive", 0)
    assert answer.input_tokens == rough_count([PROMPT]) and answer.output_tokens > 0
    assert missing == [] and (plan.strategy, plan.requests, len(plan.final)) == ("single", 1, 0)
    assert f"{answer.provider}/{answer.model}" == EXTRACTIVE


# --- what the user is told ---------------------------------------------------------------------


def status_error(status: int, message: str) -> Exception:
    import openai  # here: its import is half a second of every worker's collection

    response = httpx.Response(status, request=REQUEST)
    kinds = {401: openai.AuthenticationError, 429: openai.RateLimitError}
    kind = kinds.get(status, openai.APIStatusError)
    return kind(message, response=response, body=None)


def test_explain_says_what_went_wrong_in_one_line() -> None:
    import openai

    assert explain(openai.APITimeoutError(request=REQUEST), 5) == "no answer within 5 s"
    refused = explain(openai.APIConnectionError(request=REQUEST), 5)
    assert refused.startswith("cannot reach the model's server")
    assert explain(status_error(401, "bad key"), 5) == "authentication failed (401): bad key"
    assert explain(status_error(429, "slow down"), 5) == "rate limited (429): slow down"
    prefixed = explain(status_error(400, "litellm.BadRequestError: OpenAIException - no\nway"), 5)
    assert prefixed == "the model's server refused the request (400): no way"
    assert len(explain(status_error(400, "x" * 1000), 5)) < 300


def test_backoff_honours_retry_after_within_the_cap() -> None:
    import openai

    def with_header(value: str) -> Exception:
        response = httpx.Response(429, headers={"retry-after": value}, request=REQUEST)
        return openai.RateLimitError("slow", response=response, body=None)

    backoff = model_module._backoff
    assert backoff(with_header("7"), 0) == 7
    assert backoff(with_header("9999"), 0) == MAX_BACKOFF_S
    assert 0.5 <= backoff(with_header("nonsense"), 0) <= 1.0  # exponential, with jitter
    assert backoff(with_header("0"), 10) <= MAX_BACKOFF_S


@pytest.mark.parametrize(
    ("message", "limit"),
    [
        (
            "This model's maximum context length is 750 tokens. However, your messages "
            "resulted in 900 tokens.",
            750,
        ),
        ("prompt is too long: 208310 tokens > 200000 maximum", 200_000),
        (
            "The input token count (1200000) exceeds the maximum number of tokens allowed "
            "(1048576).",
            1_048_576,
        ),
        (
            "Prompt contains 40000 tokens, too large for model with 32768 maximum context length",
            32_768,
        ),
        ("request (5000 tokens) exceeds the available context size (4096 tokens)", 4096),
        ("the request is too long", None),
    ],
)
def test_the_window_a_refusal_states(message: str, limit: int | None) -> None:
    assert stated_limit(message) == limit


def test_retries_are_said_and_refused_keys_masked(
    llm_server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(model_module, "_backoff", lambda error, attempt: 0.25)
    llm_server.script(Error.server_error(), Error.auth("sk-proj-Q7wE9rT1yU3iO5pA2sD4fG6h"))
    said: list[str] = []
    with pytest.raises(ModelError) as caught:
        complete_now(MESSAGES, served(llm_server), timeout=10, retries=2, warn=said.append)
    (retry,) = said
    assert "(500)" in retry and "trying again in 0.2 s (1 of 2)" in retry
    assert "Q7wE9rT1" not in str(caught.value) and "[REDACTED:openai-key:1]" in str(caught.value)


def test_unknown_providers_and_unknown_models() -> None:
    with pytest.raises(UsageError, match=r"^Usage error: LiteLLM knows no provider"):
        resolved("nonsense/model", api_key="k")  # named by the user: their mistake
    told: list[str] = []
    assert writer(None, "openai-codex/gpt-5", warn=told.append) is BUILTIN  # the session's
    assert "knows no provider for the session's model" in told[0]
    notes: list[str] = []
    for unnamed in ("undefined/undefined", "null/null", "anthropic/undefined", "/"):
        assert writer(None, unnamed, warn=notes.append) is BUILTIN
    assert len(notes) == 4 and all("names no model" in n for n in notes)


def test_the_timeout_is_a_deadline_for_the_whole_answer(llm_server: FakeLLMServer) -> None:
    """A server that keeps sending a little at a time never lets a per-read timeout expire;
    the deadline still ends it."""
    llm_server.script(Reply(DOCUMENT, chunks=20, delay=0.4))  # 8 s in all, 0.4 s apart
    model = served(llm_server)  # LiteLLM imported before the clock starts
    began = time.monotonic()
    with pytest.raises(ModelError, match="no answer within 1 s"):
        complete_now(MESSAGES, model, timeout=1, retries=2)
    assert time.monotonic() - began < 3  # not 8, and not retried
    assert len(llm_server.requests) == 1


def test_an_error_the_interrupt_became_is_the_interrupt(
    llm_server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Ctrl-C's KeyboardInterrupt that a library caught and turned into its own error (a
    schema LiteLLM's pydantic was building as the stream came) is still the cancel: no retry,
    no failure reported, the interrupt goes on."""
    monkeypatch.setattr(model_module, "_backoff", lambda error, attempt: 0.25)
    llm_server.script(Error.server_error(), Error.server_error())
    said: list[str] = []
    INTERRUPTED.set()
    try:
        with pytest.raises(KeyboardInterrupt):
            complete_now(MESSAGES, served(llm_server), timeout=10, retries=2, warn=said.append)
    finally:
        INTERRUPTED.clear()
    assert said == []  # not tried again
