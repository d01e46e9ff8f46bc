"""What LiteLLM knows of a model, read from its own table without importing it.

Importing LiteLLM takes seconds; the price and window table it ships as a JSON file takes some
20 ms to read. LiteLLM reads the same file when ``LITELLM_LOCAL_MODEL_COST_MAP`` is set,
as ``model`` sets it, so an answer read here is the one LiteLLM would give, provided the name is
looked up by LiteLLM's rules. Those rules are many; this module follows them only for the common
providers and for names whose answer is certain, and says ``None`` (ask LiteLLM) for the rest:
a provider outside ``KEYS``, a name missing from the table (LiteLLM would go on to guess from
stripped names and patterns), an alias, an entry with a field missing that LiteLLM fills in.
"""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

TABLE_FILE = "model_prices_and_context_window_backup.json"
GENERALIZATIONS = "fallback_generalizations"
"""Not a model: LiteLLM's pattern rules, kept in the same file."""


@dataclass(frozen=True, slots=True)
class Keys:
    """The environment variables a provider's calls need, as ``litellm.validate_environment``
    checks them: present if every variable of one of ``groups`` is set, else ``missing``."""

    groups: tuple[tuple[str, ...], ...]
    missing: tuple[str, ...]


def _one(name: str) -> Keys:
    return Keys(((name,),), (name,))


KEYS: dict[str, Keys] = {
    "openai": _one("OPENAI_API_KEY"),
    "azure": Keys(
        (("AZURE_API_BASE", "AZURE_API_VERSION", "AZURE_API_KEY"),),
        ("AZURE_API_BASE", "AZURE_API_VERSION", "AZURE_API_KEY"),
    ),
    "anthropic": Keys((("ANTHROPIC_API_KEY",), ("ANTHROPIC_AUTH_TOKEN",)), ("ANTHROPIC_API_KEY",)),
    "gemini": Keys(
        (("GOOGLE_API_KEY",), ("GEMINI_API_KEY",)), ("GOOGLE_API_KEY", "GEMINI_API_KEY")
    ),
    "mistral": _one("MISTRAL_API_KEY"),
    "groq": _one("GROQ_API_KEY"),
    "deepseek": _one("DEEPSEEK_API_KEY"),
    "xai": _one("XAI_API_KEY"),
    "openrouter": _one("OPENROUTER_API_KEY"),
}
"""The providers this module answers for, each with its keys. Each is a plain prefix to LiteLLM
(``provider/model`` is routed to it as written, and its table entries match it exactly)."""

ANTHROPIC_TEXT_MODELS = ("claude-2", "claude-instant-1")
"""Routed to LiteLLM's ``anthropic_text`` provider, not ``anthropic``."""

_OTHER_PRICES = (
    "cost_per_token_above_",
    "tiered_pricing",
    "off_peak_pricing",
    "cost_per_second",
    "cost_per_character",
    "input_cost_per_query",
    "input_cost_per_text_message",
)
"""Fields with which LiteLLM prices a plain text request other than at one flat rate per token:
by the size of the request, by the hour, by the second, by the character or by the request."""


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """LiteLLM's answers for a model (``get_model_info``, ``cost_per_token``)."""

    key: str
    """Its entry in the table."""
    provider: str
    window: int | None
    """``max_input_tokens``."""
    max_output: int | None
    input_price: float | None
    """USD per input token; None when LiteLLM prices it other than at a flat rate."""
    output_price: float | None


class Table:
    """The table as LiteLLM holds it once loaded: every alias row standing for its target."""

    def __init__(self, raw: Mapping[str, Any]) -> None:
        rows = {k: v for k, v in raw.items() if k != GENERALIZATIONS and isinstance(v, dict)}
        pointers = {k: v["alias_of"] for k, v in rows.items() if isinstance(v.get("alias_of"), str)}
        self.entries: dict[str, dict[str, Any]] = {
            k: v for k, v in rows.items() if k not in pointers
        }
        self.aliases: set[str] = set()
        """Names LiteLLM resolves to another entry first: left to it."""
        for alias, target in pointers.items():
            if target in self.entries:
                self.entries[alias] = self.entries[target]
                self.aliases.add(alias)
        for entry in list(self.entries.values()):
            named = entry.get("aliases")
            if isinstance(named, list):
                self.aliases.update(n for n in named if isinstance(n, str))
        # LiteLLM finds a key whatever its case; of keys equal but for case, the last wins.
        self.lower = {key.lower(): key for key in self.entries}
        self.lower_aliases = {name.lower() for name in self.aliases}
        self._by_provider: dict[str, frozenset[str]] = {}

    def models_of(self, provider: str) -> frozenset[str]:
        """The keys whose entry is of ``provider`` (as LiteLLM's per-provider model lists)."""
        if provider not in self._by_provider:
            self._by_provider[provider] = frozenset(
                k for k, v in self.entries.items() if v.get("litellm_provider") == provider
            )
        return self._by_provider[provider]

    def find(self, name: str) -> str | None:
        """The key LiteLLM finds for ``name``: the name itself, else the same name in any case."""
        if name in self.entries:
            return name
        return self.lower.get(name.lower())


_table: Table | None = None
_read = False
_loading = threading.Lock()


def package_dir() -> Path | None:
    """LiteLLM's package folder, found without running the package."""
    spec = importlib.util.find_spec("litellm")
    locations = list(spec.submodule_search_locations or []) if spec else []
    return Path(locations[0]) if locations else None


def table() -> Table | None:
    """LiteLLM's table, read once; None if LiteLLM ships none where it is expected."""
    global _table, _read
    with _loading:
        if not _read:
            _read = True
            folder = package_dir()
            try:
                raw = orjson.loads((folder / TABLE_FILE).read_bytes()) if folder else None
            except (OSError, orjson.JSONDecodeError):
                raw = None
            _table = Table(raw) if isinstance(raw, dict) else None
    return _table


def provider(model: str) -> str | None:
    """LiteLLM's provider for ``model`` (``get_llm_provider``), if it is one of ``KEYS``;
    None when this module cannot say."""
    known = table()
    if known is None:
        return None
    prefix, slash, rest = model.partition("/")
    if slash:
        if prefix not in KEYS or not rest or prefix in known.entries:
            return None  # a model named like the provider would be taken for a model
        if prefix == "anthropic" and rest in ANTHROPIC_TEXT_MODELS:
            return None
        if prefix == "azure" and _azure_elsewhere(known, rest):
            return None
        return prefix
    # A bare name: LiteLLM looks it up in its lists, OpenAI's first, then Anthropic's.
    if model in known.aliases or model in KEYS:
        return None
    if model in known.models_of("openai") and not _fine_tune_price(model):
        return "openai"
    if model in known.models_of("anthropic") and model not in ANTHROPIC_TEXT_MODELS:
        return "anthropic"
    return None


def _fine_tune_price(key: str) -> bool:
    """An ``ft:<model>`` entry: a price for fine-tunes, kept out of LiteLLM's OpenAI list."""
    return key.startswith("ft:") and key.count(":") == 1


def _azure_elsewhere(known: Table, model: str) -> bool:
    """Azure AI's Cohere and Mistral models, which LiteLLM routes through OpenAI's client."""
    cohere = known.entries.get(model, {}).get("litellm_provider") == "cohere_chat"
    return cohere or known.entries.get(f"mistral/{model}", {}).get("litellm_provider") == "mistral"


def info(model: str) -> ModelInfo | None:
    """LiteLLM's window, longest answer and prices for ``model`` (``get_model_info``); None when
    this module cannot say (LiteLLM may still know)."""
    found = provider(model)
    known = table()
    if found is None or known is None:
        return None
    bare = model.split("/", 1)[1] if "/" in model else model
    for name in dict.fromkeys((model, bare)):  # LiteLLM's first two tries, in its order
        if name in known.aliases or name.lower() in known.lower_aliases:
            return None
        key = known.find(name)
        if key is None:
            continue
        entry = known.entries[key]
        if entry.get("litellm_provider") not in (None, found):
            continue  # another provider's model of that name: LiteLLM looks further
        return _info(key, found, entry)
    return None  # LiteLLM would try stripped names and patterns next


def _info(key: str, provider: str, entry: Mapping[str, Any]) -> ModelInfo | None:
    if "max_input_tokens" not in entry or "max_output_tokens" not in entry:
        return None  # LiteLLM may fill them in from its pattern rules
    window, max_output = entry["max_input_tokens"], entry["max_output_tokens"]
    if not all(v is None or isinstance(v, int) for v in (window, max_output)):
        return None
    price_in, price_out = _rate(entry, "input"), _rate(entry, "output")
    if any(marker in name for name in entry for marker in _OTHER_PRICES):
        price_in = price_out = None
    return ModelInfo(key, provider, window, max_output, price_in, price_out)


def _rate(entry: Mapping[str, Any], side: str) -> float | None:
    rate = entry.get(f"{side}_cost_per_token")
    return float(rate) if isinstance(rate, (int, float)) else None


ChatMessage = dict[str, Any]
"""A message in OpenAI's chat format, as LiteLLM takes it."""


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


def litellm_name(session_model: str) -> str:
    """LiteLLM's name for a model as the agents write it ("provider/model")."""
    provider, _, model = session_model.partition("/")
    return f"{PROVIDERS.get(provider, provider)}/{model}" if model else session_model
