"""Token counts as ``litellm.token_counter`` gives them, without importing LiteLLM.

For most models LiteLLM counts with tiktoken, by a rule: a request's count is a fixed overhead
(the reply primer) plus each message's own count (3, plus every string field's tokens, plus 1 for
a name, plus the arguments of its tool calls), each text encoded in chunks of 1,024 characters,
and a text over 4 million characters estimated from 16 evenly spaced samples. So a message's
count does not depend on the messages beside it: ``Counter`` counts each message once, however
many of the planner's requests hold it, and adds.

Which encoding LiteLLM takes for a model name follows its own rules (``encoding_name``). Models
it counts with another tokenizer (Anthropic's, DeepSeek's, Llama's, Cohere's), and messages
holding what this module does not count (images, documents), are counted by LiteLLM, through
the ``fallback`` the caller gives.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import tiktoken
from tiktoken.model import MODEL_TO_ENCODING

from handoff_cli.handoff.prompt import ChatMessage
from handoff_cli.llm import table as model_table

REPLY_PRIMER = 3
"""What LiteLLM adds to every request for the answer's start (no tools are ever sent)."""
PER_MESSAGE = 3
PER_NAME = 1
CHUNK_CHARS = 1_024
"""LiteLLM encodes in chunks this long (tiktoken is slow on long runs of one character)."""
MAX_EXACT_CHARS = 4_000_000
"""Above this, LiteLLM estimates a text's count from samples."""
SAMPLES = 16
AHEAD_FROM = 64
"""Requests of fewer messages are counted one message after the other."""
MAX_WORKERS = 4
"""Threads that count many messages at once (tiktoken encodes outside Python's lock)."""
ENCODINGS = ("cl100k_base", "o200k_base")
"""The encodings LiteLLM ships the files of (tiktoken would fetch others from the network)."""

AZURE_LLMS = (
    "gpt-35-turbo",
    "gpt-35-turbo-instruct",
    "azure/gpt-41",
    "azure/gpt-41-mini",
    "azure/gpt-41-nano",
)
"""The names LiteLLM maps from Azure's spelling (``litellm.azure_llms``)."""
_CHAT_MODES = ("chat", "responses")
_TEXT_MODES = ("chat", "completion", "responses", "realtime")
_VERSIONED = re.compile(r"(?:gpt-(?:[5-9]|[1-9]\d+)|o[1-9]\d*)(?:[.-]|$)")
_DEEPSEEK = re.compile(
    r"deepseek[-_.](?:chat[-_.])?v[34]|(?:^|/)deepseek-(?:chat|reasoner|flash)(?::free)?$",
    re.IGNORECASE,
)

MessageCount = Callable[[ChatMessage], int]


class Unsupported(Exception):
    """A message holding what only LiteLLM counts."""


def encoding_name(model: str) -> str | None:
    """The tiktoken encoding LiteLLM counts ``model`` with; None if it counts otherwise (another
    tokenizer, or OpenAI's oldest per-message rule) or this module cannot say."""
    known = model_table.table()
    if known is None or _other_tokenizer(model, known):
        return None
    rules = _Rules(known)
    if rules.fixed(model) == "gpt-3.5-turbo-0301":
        return None  # 4 tokens a message, -1 a name
    name = rules.openai_name(model) or rules.fixed(model)
    if "gpt-4o" in name:
        return "o200k_base"
    found = _tiktoken_name(name)
    if found is not None:
        return found
    variants = [known_name for known_name in MODEL_TO_ENCODING if name.startswith(f"{known_name}-")]
    if variants:
        return MODEL_TO_ENCODING[max(variants, key=len)]
    return "cl100k_base" if rules.listed_other_than_chat(name) else "o200k_base"


def _other_tokenizer(model: str, known: model_table.Table) -> bool:
    """Whether LiteLLM counts ``model`` with a HuggingFace tokenizer (or would, online)."""
    lower = model.lower()
    return (
        (model in known.models_of("cohere") and "command-r" in model)
        or (model in known.models_of("anthropic") and "claude-3" not in model)
        or _DEEPSEEK.search(model) is not None
        or any(word in lower for word in ("llama-2", "replicate", "llama-3"))
    )


def _tiktoken_name(model: str) -> str | None:
    try:
        return tiktoken.encoding_name_for_model(model)
    except KeyError:
        return None


class _Rules:
    """LiteLLM's reading of a name as an OpenAI model's, from its table."""

    def __init__(self, known: model_table.Table) -> None:
        self.known = known
        self.chat = frozenset(
            k for k in known.models_of("openai") if not (k.startswith("ft:") and k.count(":") == 1)
        )

    def fixed(self, model: str) -> str:
        if model in AZURE_LLMS:
            return model.replace("-35", "-3.5")
        return model if model in self.chat else "gpt-3.5-turbo"

    def openai_name(self, model: str) -> str | None:
        segments = model.split("/")
        last = segments[-1]
        suffixes = ["/".join(segments[start:]) for start in range(len(segments))]
        if any(self._listed(s) or self._listed(f"azure/{s}") for s in suffixes):
            return last
        if _tiktoken_name(last) == "o200k_base" or _VERSIONED.match(last):
            return last
        deployment = last.split(":")[1] if last.startswith("ft:") else last
        entry = self.known.entries.get(f"azure/{deployment}", {})
        azure_chat = entry.get("litellm_provider") == "azure" and entry.get("mode") in _CHAT_MODES
        if azure_chat and (
            entry.get("supports_pdf_input") is True or deployment.startswith("gpt-")
        ):
            return deployment
        return None

    def _listed(self, model: str) -> bool:
        if model in AZURE_LLMS or model in self.chat:
            return True
        entry = self.known.entries.get(model, {})
        return (
            entry.get("litellm_provider") == "azure"
            and entry.get("mode") in _TEXT_MODES
            and self._openai_like(model.rsplit("/", 1)[-1])
        )

    def _openai_like(self, name: str) -> bool:
        return (
            name in self.chat
            or _tiktoken_name(name) is not None
            or any(name.startswith(f"{c}-") or c.startswith(f"{name}-") for c in self.chat)
        )

    def listed_other_than_chat(self, model: str) -> bool:
        modes = (self.known.entries.get(n, {}).get("mode") for n in (model, f"azure/{model}"))
        return any(mode is not None and mode not in _CHAT_MODES for mode in modes)


_encodings: dict[str, tiktoken.Encoding] = {}
_loading = threading.Lock()


def encoding(name: str) -> tiktoken.Encoding:
    """The encoding, loaded once (a few tenths of a second) from the files LiteLLM ships."""
    with _loading:
        if name not in _encodings:
            folder = model_table.package_dir()
            if folder is not None:
                # tiktoken reads its files from this folder, else fetches them from the network;
                # LiteLLM sets it alike before it loads an encoding.
                os.environ["TIKTOKEN_CACHE_DIR"] = str(folder / "litellm_core_utils" / "tokenizers")
            _encodings[name] = _without_rank_table(tiktoken.get_encoding(name))
        return _encodings[name]


def _without_rank_table(loaded: tiktoken.Encoding) -> tiktoken.Encoding:
    """The encoding, its Python dict of merge ranks emptied once its Rust core is built from
    it: a quarter of what the encoding holds (about 25 MB for o200k_base). Encoding and
    decoding read the core alone; tiktoken reads the dict again only to pickle an encoding by
    value, and pickles one of its registry (as this is, shared with LiteLLM) by its name."""
    ranks = getattr(loaded, "_mergeable_ranks", None)
    if isinstance(ranks, dict):
        ranks.clear()
    return loaded


Ahead = Callable[[list[ChatMessage]], list[int | None]]
"""Counts many messages at once where it can (None where it cannot)."""


class Counter:
    """Counts the tokens of requests as LiteLLM does: the reply primer, plus each message's
    count (``count_message``), which does not depend on the messages beside it: so a planner
    counts each message once, and adds. Many messages at once are first given to ``ahead``,
    if any, which counts them on threads of their own."""

    def __init__(
        self,
        count_message: MessageCount,
        ahead: Ahead | None = None,
        load: Callable[[], object] | None = None,
    ) -> None:
        self._count_message = count_message
        self._ahead = ahead
        self._load = load

    def __call__(self, messages: Sequence[ChatMessage]) -> int:
        return REPLY_PRIMER + sum(self.each(messages))

    def each(self, messages: Sequence[ChatMessage]) -> list[int]:
        """Each message's share of a request's count."""
        if self._ahead is None or len(messages) < AHEAD_FROM:
            return [self._count_message(m) for m in messages]
        found = self._ahead(list(messages))
        return [
            self._count_message(m) if n is None else n for m, n in zip(messages, found, strict=True)
        ]

    def load(self) -> None:
        """Load what counting takes (a tokenizer) now, rather than at the first count."""
        if self._load is not None:
            self._load()


class Tiktoken:
    """One message's count as LiteLLM gives it with a tiktoken encoding (loaded at first use);
    what it cannot count, ``fallback`` does."""

    def __init__(self, encoding_name: str, fallback: MessageCount) -> None:
        self._name = encoding_name
        self._fallback = fallback
        self._encode: Callable[[str], list[int]] | None = None

    def __call__(self, message: ChatMessage) -> int:
        try:
            return self._count(message)
        except Unsupported:
            return self._fallback(message)

    def load(self) -> None:
        """Load the encoding now."""
        self._encoder()

    def ahead(self, messages: list[ChatMessage]) -> list[int | None]:
        """Counts of ``messages``, in shares on threads of their own, which run at once, one a
        core. None for what only ``fallback`` counts (left to the caller's thread)."""
        self._encoder()  # loaded here once, not by each thread
        workers = min(MAX_WORKERS, os.cpu_count() or 1)
        shares = [messages[start::workers] for start in range(workers)]
        with ThreadPoolExecutor(workers) as pool:
            counted = list(pool.map(self._share, shares))
        found: list[int | None] = [None] * len(messages)
        for start, share in enumerate(counted):
            found[start::workers] = share
        return found

    def _share(self, messages: list[ChatMessage]) -> list[int | None]:
        return [self._count_or_none(m) for m in messages]

    def _count_or_none(self, message: ChatMessage) -> int | None:
        try:
            return self._count(message)
        except Unsupported:
            return None

    def _count(self, message: ChatMessage) -> int:
        tokens = PER_MESSAGE
        for key, value in message.items():
            if value is None:
                continue
            if key == "tool_calls":
                tokens += sum(self.text(_arguments(call)) for call in _calls(value))
            elif key in ("function_call", "provider_specific_fields", "search_results"):
                raise Unsupported(key)
            elif isinstance(value, str):
                tokens += self.text(value) + (PER_NAME if key == "name" else 0)
            elif key == "content" and isinstance(value, list):
                tokens += sum(self.text(_part_text(part)) for part in value)
        return tokens

    def text(self, text: str) -> int:
        """Tokens of ``text``: exact up to ``MAX_EXACT_CHARS``, else from samples."""
        if len(text) <= MAX_EXACT_CHARS:
            return self._exact(text)
        size = MAX_EXACT_CHARS // SAMPLES
        last = len(text) - size
        starts = (last * index // (SAMPLES - 1) for index in range(SAMPLES))
        sampled = sum(self._exact(text[start : start + size]) for start in starts)
        return round(sampled * len(text) / (size * SAMPLES))

    def _exact(self, text: str) -> int:
        encode = self._encoder()
        chunks = range(0, len(text), CHUNK_CHARS)
        return sum(len(encode(text[at : at + CHUNK_CHARS])) for at in chunks)

    def _encoder(self) -> Callable[[str], list[int]]:
        if self._encode is None:
            self._encode = encoding(self._name).encode_ordinary
        return self._encode


def _calls(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise Unsupported("tool_calls")
    return value


def _arguments(call: Any) -> str:
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict):
        raise Unsupported("tool call")
    return str(function.get("arguments", ""))


def _part_text(part: Any) -> str:
    """The text of a content part, as LiteLLM reads it; other parts are LiteLLM's to count."""
    if isinstance(part, str):
        return part
    if isinstance(part, dict) and part.get("type") == "text":
        return str(part.get("text") or "")
    raise Unsupported("content part")
