"""The model call: the one module that imports LiteLLM.

LiteLLM is imported lazily, on the first call, because the import takes seconds; ``show`` and
``list`` never reach it. Its offline switches are set before the import (otherwise it fetches a
price list from the network), and its debug printing, which would go to stdout, is turned off.
Every LiteLLM failure derives from ``openai.APIError`` and becomes a ``ModelError`` here, with
one line naming the model. Retries (with backoff) are ours, on rate limits, server errors and
lost connections.
"""

from __future__ import annotations

import json
import logging
import os
import random
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from .errors import ModelError
from .plan import Counter
from .prompt import ChatMessage


class ContextTooLongError(ModelError):
    """The provider says the request does not fit the model's window."""


Progress = Callable[[int], None]
"""Called as the answer streams in, with the number of output tokens so far."""

# pi's provider names where LiteLLM's differ.
PROVIDERS = {
    "google": "gemini",
    "google-vertex": "vertex_ai",
    "google-gemini-cli": "gemini",
    "amazon-bedrock": "bedrock",
    "azure-openai-responses": "azure",
    "github-copilot": "github_copilot",
    "vercel-ai-gateway": "vercel_ai_gateway",
}
EXTRACTIVE = "handoff/extractive"
"""The built-in extractive writer, offered to LiteLLM as a model of our own provider."""
ALIASES = {"extractive": EXTRACTIVE}
MAX_BACKOFF_S = 30.0
NO_KEY = "sk-no-key-needed"  # OpenAI's client insists on a key, which local servers ignore


@dataclass(frozen=True)
class Answer:
    """What the model answered, with what it cost."""

    text: str
    provider: str
    model: str
    input_tokens: int
    output_tokens: int
    input_cost_usd: float | None
    output_cost_usd: float | None

    @property
    def cost_usd(self) -> float | None:
        if self.input_cost_usd is None or self.output_cost_usd is None:
            return None
        return self.input_cost_usd + self.output_cost_usd


def litellm_name(session_model: str) -> str:
    """LiteLLM's name for a model as the agents write it ("provider/model")."""
    provider, _, model = session_model.partition("/")
    return f"{PROVIDERS.get(provider, provider)}/{model}" if model else session_model


_litellm: ModuleType | None = None


def _import_litellm() -> ModuleType:
    global _litellm
    if _litellm is None:
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
        import litellm

        litellm.suppress_debug_info = True
        _register_extractive(litellm)
        _litellm = litellm
    return _litellm


def _register_extractive(litellm: ModuleType) -> None:
    """Offer the extractive writer to LiteLLM as ``handoff/extractive``: free, and streamed
    like any other model. The class can only be made once LiteLLM is imported."""
    from litellm.llms.custom_llm import CustomLLM
    from litellm.types.llms.openai import ChatCompletionUsageBlock
    from litellm.types.utils import GenericStreamingChunk

    from .extractive import write_document

    def tokens(text: str) -> int:
        return (len(text) + 3) // 4  # a rough count, as the writer has no tokenizer

    class Extractive(CustomLLM):
        def streaming(
            self, model: str, messages: list[ChatMessage], *args: Any, **kwargs: Any
        ) -> Iterator[GenericStreamingChunk]:
            document = write_document(messages)
            for line in document.splitlines(keepends=True):
                yield {
                    "text": line,
                    "is_finished": False,
                    "finish_reason": "",
                    "usage": None,
                    "index": 0,
                    "tool_use": None,
                }
            prompt = tokens(json.dumps(messages))
            usage = ChatCompletionUsageBlock(
                prompt_tokens=prompt,
                completion_tokens=tokens(document),
                total_tokens=prompt + tokens(document),
            )
            yield {
                "text": "",
                "is_finished": True,
                "finish_reason": "stop",
                "usage": usage,
                "index": 0,
                "tool_use": None,
            }

    provider = EXTRACTIVE.split("/")[0]
    settings: Any = litellm  # its module-level settings are untyped
    others = [p for p in settings.custom_provider_map if p.get("provider") != provider]
    settings.custom_provider_map = [*others, {"provider": provider, "custom_handler": Extractive()}]
    # Registering a price it has no cache prices for makes LiteLLM log a warning on stderr.
    logging.getLogger("LiteLLM").setLevel(logging.ERROR)
    litellm.register_model(
        {
            EXTRACTIVE: {
                "litellm_provider": provider,
                "mode": "chat",
                "input_cost_per_token": 0.0,
                "output_cost_per_token": 0.0,
            }
        }
    )


def missing_credentials(model: str, api_key: str | None, api_base: str | None) -> list[str]:
    """The environment variables the provider of ``model`` needs and does not have."""
    if api_key or api_base or model == EXTRACTIVE:
        return []
    litellm = _import_litellm()
    try:
        found = litellm.validate_environment(model=model)
    except Exception:  # an unknown provider: let the call itself say what is wrong
        return []
    return [] if found.get("keys_in_environment") else list(found.get("missing_keys") or [])


def window(model: str) -> tuple[int | None, int | None]:
    """The model's input window and its longest answer, where LiteLLM knows them."""
    if model == EXTRACTIVE:
        return None, None
    litellm = _import_litellm()
    try:
        info = litellm.get_model_info(model)
    except Exception:  # unknown to LiteLLM's price list: the caller's default applies
        return None, None
    return info.get("max_input_tokens"), info.get("max_output_tokens")


def token_counter(model: str) -> Counter:
    """Counts the tokens of messages as LiteLLM does for ``model``."""
    litellm = _import_litellm()

    def count(messages: Sequence[ChatMessage]) -> int:
        return int(litellm.token_counter(model=model, messages=list(messages)))

    return count


def complete(
    messages: Sequence[ChatMessage],
    *,
    model: str,
    api_key: str | None = None,
    api_base: str | None = None,
    timeout: float = 600.0,
    retries: int = 2,
    progress: Progress | None = None,
) -> Answer:
    """Stream the model's answer to ``messages``; retry what is worth retrying."""
    litellm = _import_litellm()
    import openai

    for attempt in range(retries + 1):
        try:
            return _stream(litellm, messages, model, api_key, api_base, timeout, progress)
        except openai.APIError as error:
            if "context" in type(error).__name__.lower():
                raise ContextTooLongError(f"{model}: {describe(error, timeout)}") from None
            if attempt == retries or not _retryable(error):
                raise ModelError(f"{model}: {describe(error, timeout)}") from None
            time.sleep(_backoff(error, attempt))
    raise AssertionError("unreachable")


def _stream(
    litellm: ModuleType,
    messages: Sequence[ChatMessage],
    model: str,
    api_key: str | None,
    api_base: str | None,
    timeout: float,
    progress: Progress | None,
) -> Answer:
    response = litellm.completion(
        model=model,
        messages=list(messages),
        stream=True,
        stream_options={"include_usage": True},
        timeout=timeout,
        num_retries=0,
        api_key=api_key or (NO_KEY if api_base else None),
        api_base=api_base,
    )
    chunks = []
    pieces = 0
    try:
        for chunk in response:
            chunks.append(chunk)
            if chunk.choices and chunk.choices[0].delta.content:
                pieces += 1
                if progress is not None:
                    progress(pieces)
    finally:
        # On cancel or error, close the connection now rather than when it is collected.
        stream = getattr(response, "completion_stream", None)
        close = getattr(stream, "close", None)
        if callable(close):
            close()
    built = litellm.stream_chunk_builder(chunks, messages=list(messages))
    text = (built.choices[0].message.content or "") if built and built.choices else ""
    usage = getattr(built, "usage", None)
    input_tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
    output_tokens = int(getattr(usage, "completion_tokens", 0) or 0)
    model_name, provider, *_ = litellm.get_llm_provider(model)
    try:
        input_cost, output_cost = litellm.cost_per_token(
            model=model, prompt_tokens=input_tokens, completion_tokens=output_tokens
        )
    except Exception:  # LiteLLM cannot price every model (local ones, new ones)
        input_cost = output_cost = None
    return Answer(text, provider, model_name, input_tokens, output_tokens, input_cost, output_cost)


def _retryable(error: Exception) -> bool:
    import openai

    if isinstance(error, openai.APITimeoutError):
        return False  # waiting the whole timeout again rarely helps
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


def describe(error: Exception, timeout: float) -> str:
    """One line saying what went wrong, without LiteLLM's prefixes."""
    import openai

    status = getattr(error, "status_code", None)
    if isinstance(error, openai.APITimeoutError):
        return f"no answer within {timeout:g} s"
    detail = str(getattr(error, "message", "") or error)
    if isinstance(error, openai.APIConnectionError) or "Connection error" in detail:
        # LiteLLM reports a refused or dropped connection as a 500 "Connection error."
        return "cannot reach the model's server (connection refused or dropped)"
    if status == 401 or isinstance(error, openai.AuthenticationError):
        kind = "authentication failed"
    elif status == 429:
        kind = "rate limited"
    elif "context" in type(error).__name__.lower():
        kind = "the conversation is too long for the model"
    else:
        kind = "the model's server refused the request"
    detail = detail.split(" - ", 1)[-1] if " - " in detail else detail
    detail = " ".join(detail.split())[:240]
    code = f" ({status})" if isinstance(status, int) else ""
    return f"{kind}{code}: {detail}" if detail else f"{kind}{code}"
