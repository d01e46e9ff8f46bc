"""LiteLLM's table read without LiteLLM: every answer it gives is LiteLLM's own, or it says None.

Each answer is held to LiteLLM's, asked here directly: for names of every kind (with and without
a provider, listed or not, aliases, other providers), and for every name of the providers it
answers for, as listed in the table and with their prefix added or taken away.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from handoff_cli.llm import model as model_module
from handoff_cli.llm import table as model_table
from handoff_cli.llm.model import Model

from .conftest import litellm

pytestmark = pytest.mark.litellm  # every test here asks LiteLLM itself

logging.getLogger("LiteLLM").setLevel(logging.CRITICAL)

NAMES = [
    # OpenAI
    "openai/gpt-4o",
    "gpt-4o",
    "openai/gpt-4o-mini",
    "openai/gpt-4",
    "gpt-4",
    "openai/GPT-4O",
    "GPT-4o",
    "openai/o3-mini",
    "openai/test-model",
    "openai/gpt-4o-2099-01-01",
    "gpt-3.5-turbo-0301",
    "ft:gpt-4o-mini-2024-07-18:org::id",
    "openai/gpt-astra-latest",
    # Anthropic
    "anthropic/claude-sonnet-4-5",
    "claude-sonnet-4-5",
    "anthropic/claude-opus-4-1",
    "anthropic/claude-3-5-haiku-20241022",
    "anthropic/claude-2",
    "claude-2",
    "anthropic/claude-sonnet-latest",
    "claude-newfamily-9",
    # Gemini and Vertex
    "gemini/gemini-2.5-pro",
    "gemini/gemini-2.5-flash",
    "gemini-2.5-pro",
    "gemini/gemini-2.5-pro-001",
    "vertex_ai/gemini-2.5-pro",
    # Mistral, Groq, DeepSeek, xAI
    "mistral/mistral-large-latest",
    "mistral/codestral-latest",
    "groq/llama-3.3-70b-versatile",
    "groq/unknown-model",
    "deepseek/deepseek-chat",
    "deepseek/deepseek-reasoner",
    "xai/grok-4",
    # Azure, Bedrock, OpenRouter
    "azure/gpt-4o",
    "azure/my-deployment",
    "azure/gpt-41",
    "azure/command-r-plus",
    "azure/mistral-large",
    "bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0",
    "anthropic.claude-3-5-sonnet-20240620-v1:0",
    "openrouter/anthropic/claude-3.5-sonnet",
    "openrouter/openai/gpt-4o",
    # Unknown ones
    "ollama_chat/llama3",
    "hosted_vllm/my-model",
    "handoff/extractive",
    "no-slash",
    "openai",
    "openai/",
    "unknown-provider/model",
]


def litellm_provider(name: str) -> str | None:
    try:
        return str(litellm().get_llm_provider(name)[1])
    except Exception:
        return None


def litellm_window(name: str) -> tuple[Any, Any] | None:
    try:
        info = litellm().get_model_info(name)
    except Exception:
        return None
    return info.get("max_input_tokens"), info.get("max_output_tokens")


def litellm_price(name: str, input_tokens: int, output_tokens: int) -> float | None:
    try:
        cost_in, cost_out = litellm().cost_per_token(
            model=name, prompt_tokens=input_tokens, completion_tokens=output_tokens
        )
    except Exception:
        return None
    return float(cost_in + cost_out)


SIZES = [(0, 0), (1_000, 500), (250_000, 30_000), (3_000_000, 40_000)]
"""Token counts either side of the thresholds (128k, 200k, 272k) where prices may change."""


def agrees(name: str) -> list[str]:
    """How our answers for ``name`` differ from LiteLLM's (nothing, if all is well)."""
    wrong = []
    provider = model_table.provider(name)
    if provider is not None and provider != litellm_provider(name):
        wrong.append(f"provider {provider} != {litellm_provider(name)}")
    info = model_table.info(name)
    if info is None:
        return wrong
    if info.provider != provider or (info.window, info.max_output) != litellm_window(name):
        wrong.append(f"window {info} != {litellm_window(name)}")
    if info.input_price is not None and info.output_price is not None:
        for tokens_in, tokens_out in SIZES:
            ours = float(tokens_in) * info.input_price + float(tokens_out) * info.output_price
            if ours != litellm_price(name, tokens_in, tokens_out):
                wrong.append(f"price of {tokens_in}+{tokens_out}: {ours}")
    return wrong


@pytest.mark.parametrize("name", NAMES)
def test_each_answer_is_litellms(name: str) -> None:
    assert agrees(name) == []


def test_the_common_names_are_answered_without_litellm() -> None:
    answered = {
        "openai/gpt-4o": ("openai", 128_000, 16_384),
        "gpt-4o": ("openai", 128_000, 16_384),
        "anthropic/claude-sonnet-4-5": ("anthropic", 200_000, 64_000),
        "claude-sonnet-4-5": ("anthropic", 200_000, 64_000),
        "gemini/gemini-2.5-pro": ("gemini", 1_048_576, 65_536),
        "deepseek/deepseek-chat": ("deepseek", 131_072, 8_192),
        "azure/gpt-4o": ("azure", 128_000, 16_384),
    }
    for name, (provider, window, max_output) in answered.items():
        info = model_table.info(name)
        assert info is not None, name
        assert (info.provider, info.window, info.max_output) == (provider, window, max_output)
    gpt_4o = model_table.info("openai/gpt-4o")
    assert gpt_4o is not None and (gpt_4o.input_price, gpt_4o.output_price) == (2.5e-6, 1e-5)


@pytest.mark.parametrize(
    "name",
    [
        "ollama_chat/llama3",  # a provider we do not answer for
        "hosted_vllm/my-model",
        "openai/test-model",  # listed nowhere: LiteLLM would go on guessing
        "gemini-2.5-pro",  # Vertex AI's, without a prefix
        "anthropic/claude-2",  # LiteLLM's anthropic_text
        "anthropic/claude-sonnet-latest",  # an alias
        "azure/command-r-plus",  # Azure AI's Cohere, through OpenAI's client
        "claude-newfamily-9",  # a pattern rule's guess
    ],
)
def test_what_the_table_cannot_settle_is_left_to_litellm(name: str) -> None:
    assert model_table.info(name) is None


def test_every_name_of_our_providers_in_the_table() -> None:
    known = model_table.table()
    assert known is not None
    names = set()
    for key, entry in known.entries.items():
        provider = entry.get("litellm_provider")
        if provider in model_table.KEYS:
            prefix = f"{provider}/"
            names |= {key, key.removeprefix(prefix) if key.startswith(prefix) else prefix + key}
    wrong = {name: found for name in sorted(names) if (found := agrees(name))}
    assert wrong == {}
    answered = [name for name in names if model_table.info(name) is not None]
    assert len(answered) > 500  # most of them, not a handful


KEY_SETS: list[dict[str, str]] = [
    {},
    {"OPENAI_API_KEY": "sk-x"},
    {"OPENAI_API_KEY": ""},  # set, if empty: LiteLLM counts it as there
    {"ANTHROPIC_AUTH_TOKEN": "t"},
    {"GEMINI_API_KEY": "g"},
    {"GOOGLE_API_KEY": "g"},
    {"AZURE_API_KEY": "a", "AZURE_API_BASE": "https://x"},
    {"AZURE_API_KEY": "a", "AZURE_API_BASE": "https://x", "AZURE_API_VERSION": "v"},
    {
        "MISTRAL_API_KEY": "m",
        "GROQ_API_KEY": "g",
        "DEEPSEEK_API_KEY": "d",
        "XAI_API_KEY": "x",
        "OPENROUTER_API_KEY": "o",
    },
]


@pytest.mark.parametrize("variables", KEY_SETS)
def test_missing_keys_are_litellms(monkeypatch: pytest.MonkeyPatch, variables: dict) -> None:
    for name in {n for keys in model_table.KEYS.values() for n in keys.missing}:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    for name in NAMES:
        if model_table.provider(name) is None:
            continue
        found = litellm().validate_environment(model=name)
        theirs = [] if found.get("keys_in_environment") else list(found.get("missing_keys") or [])
        assert model_module._missing_keys(name, None, None) == theirs, name


def test_our_providers_are_litellms() -> None:
    for provider in model_table.KEYS:
        assert litellm_provider(f"{provider}/some-model") == provider
        assert provider in litellm().provider_list


def test_a_litellm_proxy_setting_sends_every_question_to_litellm(
    monkeypatch: pytest.MonkeyPatch,
) -> None:

    assert model_module._table_info("openai/gpt-4o") is not None
    monkeypatch.setenv("USE_LITELLM_PROXY", "True")
    assert model_module._table_info("openai/gpt-4o") is None
    assert model_module._table_provider("openai/gpt-4o") is None


def test_price_by_the_table_is_litellms() -> None:
    for name in ("openai/gpt-4o", "mistral/mistral-large-latest", "deepseek/deepseek-chat"):
        assert Model(name).price(123_456, 7_890) == litellm_price(name, 123_456, 7_890)
    # Priced by the size of the request: LiteLLM's own answer.
    assert Model("gemini/gemini-2.5-pro").price(300_000, 10) == litellm_price(
        "gemini/gemini-2.5-pro", 300_000, 10
    )
    assert Model("hosted_vllm/my-model").price(10, 10) is None
