"""Our shadow of LiteLLM (``llm.table``, ``llm.tokens``) held to the LiteLLM installed.

``table`` and ``tokens`` answer a model's provider, window, prices and token counts without
importing LiteLLM, by following its rules; a LiteLLM release that changes a rule would make them
disagree silently, so this asks LiteLLM itself (``get_llm_provider``, ``get_model_info``,
``cost_per_token``, ``token_counter``) on a sample chosen by rule, not by hand: a seeded random
draw of fixed size from each provider we answer for and from the rest of the table, each name
as listed, with its provider's prefix added or taken away and (for our providers) in capitals;
every alias in the table; and named cases of each kind, with their prefix added or taken away.
Each name goes the way a handoff takes it (``resolve_model``, then ``Model.costs`` and the model's
counter), so the fallbacks to LiteLLM are held too. LiteLLM 1.100.0 fails it (it counts the
tokens of gpt-4o and gpt-5 otherwise); the range in pyproject.toml is the one it passes on.

It is one test, so that one worker pays LiteLLM's import for it.
"""

from __future__ import annotations

import collections
import logging
import random
from typing import Any, NamedTuple

import pytest

from handoff_cli.errors import UsageError
from handoff_cli.handoff.plan import DEFAULT_WINDOW
from handoff_cli.handoff.prompt import ChatMessage
from handoff_cli.llm import table as model_table
from handoff_cli.llm import tokens
from handoff_cli.llm.model import Model, resolve_model

from .conftest import litellm

pytestmark = [pytest.mark.litellm, pytest.mark.heavy]  # LiteLLM itself asked: make test-heavy

logging.getLogger("LiteLLM").setLevel(logging.CRITICAL)

SEED = 22
PER_PROVIDER = 12
"""Names drawn from each provider of ``model_table.KEYS`` (all, if it has fewer)."""
ELSEWHERE = 40
"""Names drawn from the rest of the table."""
ONLINE = ("github_copilot",)
"""Providers whose names LiteLLM routes only after signing in over the network: left out."""

NAMED = [
    # OpenAI, with and without its prefix, in another case, dated, fine-tuned
    "openai/gpt-4o",
    "gpt-4o",
    "GPT-4o",
    "openai/gpt-4.1-mini",
    "o3-mini",
    "openai/gpt-4o-2099-01-01",
    "ft:gpt-4o-mini-2024-07-18:org::id",
    # Anthropic
    "anthropic/claude-sonnet-4-5",
    "claude-3-5-haiku-20241022",
    "anthropic/claude-opus-4-1",
    # Gemini, and Vertex AI's Gemini without a prefix
    "gemini/gemini-2.5-pro",
    "gemini/gemini-2.5-flash",
    "gemini-2.5-pro",
    # Bedrock
    "bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0",
    "anthropic.claude-3-5-sonnet-20240620-v1:0",
    "bedrock/us.anthropic.claude-3-7-sonnet-20250219-v1:0",
    # OpenRouter
    "openrouter/anthropic/claude-3.5-sonnet",
    "openrouter/openai/gpt-4o",
    # Ollama
    "ollama/llama3",
    "ollama_chat/llama3.1",
    # Routed elsewhere than their prefix says: LiteLLM's anthropic_text, Azure AI's Cohere
    "anthropic/claude-2",
    "anthropic/claude-instant-1",
    "azure/command-r-plus",
    # Known only with their provider's prefix
    "mistral-large-latest",
    "deepseek-chat",
    "grok-4",
    # Unknown to LiteLLM
    "openai/no-such-model",
    "anthropic/claude-no-such-model",
    "no-such-model",
    "unknown-provider/model",
    "hosted_vllm/my-model",
]

SIZES = [(1_000, 500), (250_000, 30_000)]
"""Tokens in and out, either side of the sizes (128k, 200k) where some prices change."""
PRICES = (3e-6, 1.5e-5)
"""A user's ``--price-in``/``--price-out``, per token."""

PNG = (
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
    "+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)

MESSAGES: list[ChatMessage] = [
    {"role": "system", "content": "You write handoff documents."},
    {"role": "user", "content": "Überprüfe die Ausgabe: 東京 → ✓ 🙂 «ok» e\u0301", "name": "dev"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "bash", "arguments": '{"command": "ls -la ~/проект"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "a.py\nb.py\n"},
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "What does this show?"},
            {"type": "image_url", "image_url": {"url": PNG}},
        ],
    },
]
"""A request of every kind of message: text, non-ASCII, a name, a tool call and its result, an
image (which only LiteLLM counts: our counter's fallback)."""


def variant(key: str, provider: Any) -> str | None:
    """``key`` with its provider's prefix taken away, or added."""
    if not isinstance(provider, str):
        return None
    prefix = f"{provider}/"
    return key.removeprefix(prefix) if key.startswith(prefix) else prefix + key


def sample() -> list[str]:
    known = model_table.table()
    assert known is not None
    rng = random.Random(SEED)
    keys = sorted(
        k
        for k, entry in known.entries.items()
        if k not in known.aliases and entry.get("litellm_provider") not in ONLINE
    )
    ours = [k for k in keys if known.entries[k].get("litellm_provider") in model_table.KEYS]
    drawn = []
    for provider in sorted(model_table.KEYS):
        listed = [k for k in ours if known.entries[k]["litellm_provider"] == provider]
        drawn += rng.sample(listed, min(PER_PROVIDER, len(listed)))
    drawn += rng.sample(sorted(set(keys) - set(ours)), ELSEWHERE)
    listed = [*drawn, *(n for n in NAMED if n in known.entries)]
    variants = [variant(k, known.entries[k].get("litellm_provider")) for k in listed]
    shouted = [k.upper() for k in drawn if k in ours]  # LiteLLM finds a key in any case
    aliases = sorted(a for a in known.aliases if a.partition("/")[0] not in ONLINE)
    names = [*drawn, *(v for v in variants if v), *shouted, *aliases, *NAMED]
    return list(dict.fromkeys(names))


def their_provider(name: str) -> str | None:
    try:
        return str(litellm().get_llm_provider(name)[1])
    except Exception:
        return None


def their_window(name: str) -> tuple[Any, Any] | None:
    try:
        info = litellm().get_model_info(name)
    except Exception:
        return None
    return info.get("max_input_tokens"), info.get("max_output_tokens")


def their_costs(name: str, tokens_in: int, tokens_out: int) -> tuple[Any, Any]:
    try:
        paid = litellm().cost_per_token(
            model=name, prompt_tokens=tokens_in, completion_tokens=tokens_out
        )
    except Exception:
        return None, None
    return float(paid[0]), float(paid[1])


def their_count(name: str, messages: list[ChatMessage]) -> int | str:
    try:
        return int(litellm().token_counter(model=name, messages=messages))
    except Exception as error:
        return type(error).__name__


class Outcome(NamedTuple):
    wrong: list[str]
    """How our answers differ from LiteLLM's (nothing, if all is well)."""
    ways: frozenset[str]
    """Which ways our answers took: by our own reading, or through LiteLLM."""


def compare(name: str) -> Outcome:
    """Our answers for ``name``, held to LiteLLM's."""
    wrong: list[str] = []
    ways = set()
    provider = their_provider(name)
    ours = model_table.provider(name)
    if ours is not None and ours != provider:
        wrong.append(f"provider {ours} != {provider}")
    window = their_window(name)
    info = model_table.info(name)
    if info is not None:
        ways.add("table")
        if (info.window, info.max_output) != window:
            wrong.append(f"table window {info.window}, {info.max_output} != {window}")
    try:
        model = resolve_model(name, None, api_key="sk-test")
    except UsageError:
        if provider is not None:
            wrong.append(f"refused, but LiteLLM routes it to {provider}")
        return Outcome(wrong, frozenset({*ways, "refused"}))
    assert isinstance(model, Model)  # a name, not the built-in writer
    if provider is None:
        wrong.append("resolved, but LiteLLM knows no provider")
    expected = ((window[0] if window else None) or DEFAULT_WINDOW, window[1] if window else None)
    if (model.window, model.max_output) != expected:
        wrong.append(f"window {model.window}, {model.max_output} != {expected}")
    for tokens_in, tokens_out in SIZES:
        paid = model.costs(tokens_in, tokens_out)
        if paid != their_costs(name, tokens_in, tokens_out):
            wrong.append(f"costs of {tokens_in}+{tokens_out}: {paid}")
        if paid == (None, None):
            ways.add("unpriced")
    given = resolve_model(name, None, api_key="sk-test", prices=PRICES)
    assert isinstance(given, Model)
    if given.costs(1_000, 500) != (1_000 * PRICES[0], 500 * PRICES[1]):
        wrong.append("the prices given are not the ones used")
    ways.add("tiktoken" if tokens.encoding_name(name) in tokens.ENCODINGS else "other tokenizer")
    counted = their_count(name, MESSAGES)
    try:
        count: int | str = model.count(MESSAGES)
    except Exception as error:
        count = type(error).__name__
    if count != counted:
        wrong.append(f"count {count} != {counted}")
    return Outcome(wrong, frozenset(ways))


def test_litellm_agrees_on_a_sample_of_its_table() -> None:
    outcomes = {name: compare(name) for name in sample()}
    assert {name: found.wrong for name, found in outcomes.items() if found.wrong} == {}
    # Every way is taken, most often our own reading: else this would hold LiteLLM to itself.
    ways = collections.Counter(way for found in outcomes.values() for way in found.ways)
    assert len(outcomes) > 300
    assert ways["table"] > 80 and ways["tiktoken"] > 150
    assert ways["other tokenizer"] >= 10 and ways["unpriced"] >= 3 and ways["refused"] >= 30
