"""Token counts as ``litellm.token_counter`` gives them, without importing LiteLLM.

For most models LiteLLM counts with tiktoken, by a rule: a request's count is a fixed overhead
(the reply primer) plus each message's own count (3, plus every string field's tokens, plus 1 for
a name, plus the arguments of its tool calls), each text encoded in chunks of 1,024 characters,
and a text over 4 million characters estimated from 16 evenly spaced samples. So a message's
count does not depend on the messages beside it: ``Counter`` counts each message once, however
many of the planner's requests hold it, and adds.

An image (an ``image_url`` part) is counted as LiteLLM's ``calculate_img_tokens`` counts it, for
every model alike: 85 tokens, plus 170 a 512-pixel tile of the image scaled to fit 768 by 2,000
pixels; its size read from the header of the decoded data, never the whole image (``image``).

Which encoding LiteLLM takes for a model name follows its own rules (``encoding_name``). Models
it counts with another tokenizer (Anthropic's, DeepSeek's, Llama's, Cohere's), and messages
holding what this module does not count (documents, Anthropic's image blocks, an image of
detail "high" at a web address, which LiteLLM downloads), are counted by LiteLLM, through the
``fallback`` the caller gives.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import re
import struct
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, NamedTuple

import tiktoken
import tiktoken.registry
from tiktoken.model import MODEL_TO_ENCODING

from handoff_cli.llm import table as model_table
from handoff_cli.llm.table import ChatMessage

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


class _Definition(NamedTuple):
    """An encoding as tiktoken defines it (``tiktoken_ext.openai_public``)."""

    ranks_url: str
    """Where tiktoken fetches its rank file from: its cached copy is named by the URL's SHA-1."""
    ranks_sha256: str
    pattern: str
    special_tokens: tuple[tuple[str, int], ...]


_ENDOFTEXT, _ENDOFPROMPT = "<|endoftext|>", "<|endofprompt|>"
_DEFINITIONS = {
    "cl100k_base": _Definition(
        "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+"""
        r"""| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",
        (
            (_ENDOFTEXT, 100257),
            ("<|fim_prefix|>", 100258),
            ("<|fim_middle|>", 100259),
            ("<|fim_suffix|>", 100260),
            (_ENDOFPROMPT, 100276),
        ),
    ),
    "o200k_base": _Definition(
        "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        "|".join(
            (
                r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
                r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
                r"""\p{N}{1,3}""",
                r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
                r"""\s*[\r\n]+""",
                r"""\s+(?!\S)""",
                r"""\s+""",
            )
        ),
        ((_ENDOFTEXT, 199999), (_ENDOFPROMPT, 200018)),
    ),
}
"""The encodings of ``ENCODINGS``, to build from their rank files without tiktoken's parse of
them (``_built``); ``tests/test_tokens.py`` holds each to tiktoken's own."""

_encodings: dict[str, tiktoken.Encoding] = {}
_loading = threading.Lock()


def encoding(name: str) -> tiktoken.Encoding:
    """The encoding, loaded once (a few tenths of a second) from the files LiteLLM ships, and
    put in tiktoken's registry, where LiteLLM finds it too."""
    with _loading:
        if name not in _encodings:
            folder = model_table.package_dir()
            loaded = tiktoken.registry.ENCODINGS.get(name)
            if folder is not None:
                # tiktoken reads its files from this folder, else fetches them from the network;
                # LiteLLM sets it alike before it loads an encoding.
                tokenizers = folder / "litellm_core_utils" / "tokenizers"
                os.environ["TIKTOKEN_CACHE_DIR"] = str(tokenizers)
                if loaded is None and (built := _built(name, tokenizers)) is not None:
                    loaded = tiktoken.registry.ENCODINGS.setdefault(name, built)
            _encodings[name] = _without_rank_table(loaded or tiktoken.get_encoding(name))
        return _encodings[name]


def _built(name: str, folder: Path) -> tiktoken.Encoding | None:
    """The encoding built from the copy of its rank file in ``folder``, read in half the time
    tiktoken takes: the file's digest known, its ranks are its line numbers. None if there is
    no such copy, or it is not that file (tiktoken then reads, or fetches, it itself)."""
    definition = _DEFINITIONS.get(name)
    if definition is None:
        return None
    try:
        data = (folder / hashlib.sha1(definition.ranks_url.encode()).hexdigest()).read_bytes()
    except OSError:
        return None
    if hashlib.sha256(data).hexdigest() != definition.ranks_sha256:
        return None
    fields = data.split()  # each line: a token in base64, then its rank
    tokens = map(binascii.a2b_base64, fields[0::2])
    ranks = dict(zip(tokens, range(len(fields) // 2), strict=True))
    return tiktoken.Encoding(
        name,
        pat_str=definition.pattern,
        mergeable_ranks=ranks,
        special_tokens=dict(definition.special_tokens),
    )


def _without_rank_table(loaded: tiktoken.Encoding) -> tiktoken.Encoding:
    """The encoding, its Python dict of merge ranks emptied once its Rust core is built from
    it: a quarter of what the encoding holds (about 25 MB for o200k_base). Encoding and
    decoding read the core alone; tiktoken reads the dict again only to pickle an encoding by
    value, and pickles one of its registry (as this is, shared with LiteLLM) by its name."""
    ranks = getattr(loaded, "_mergeable_ranks", None)
    if isinstance(ranks, dict):
        ranks.clear()
    return loaded


_pools: dict[int, ThreadPoolExecutor] = {}


def _pool(workers: int) -> ThreadPoolExecutor:
    """The counting threads, started once a process: a long conversation is counted a batch at
    a time, and threads started for each batch would cost more than some batches take."""
    with _loading:
        if workers not in _pools:
            _pools[workers] = ThreadPoolExecutor(workers, thread_name_prefix="tokens")
        return _pools[workers]


Counted = Callable[[], list[int | None]]
"""Waits for counts started already, and gives them (None where they could not be made)."""
Ahead = Callable[[list[ChatMessage]], Counted]
"""Starts counting many messages at once where it can; its answer waits for the counts."""


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
        return self.later(messages)()

    def later(
        self, messages: Sequence[ChatMessage], batch: bool = False
    ) -> Callable[[], list[int]]:
        """``each``, started now: the counting threads count while the caller goes on (with the
        next messages, say), and the answer waits for them. Fewer than ``AHEAD_FROM`` are counted
        here and now, unless they are a ``batch`` of a long conversation, made large by its
        characters (a few messages holding images can be one)."""
        if self._ahead is None or (len(messages) < AHEAD_FROM and not batch):
            found = [self._count_message(m) for m in messages]
            return lambda: found
        held = list(messages)
        counted = self._ahead(held)

        def answer() -> list[int]:
            return [
                self._count_message(m) if n is None else n
                for m, n in zip(held, counted(), strict=True)
            ]

        return answer

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

    def ahead(self, messages: list[ChatMessage]) -> Counted:
        """Starts counting ``messages``, in shares on threads of their own, which run at once,
        one a core; the answer waits for them. None for what only ``fallback`` counts (left to
        the caller's thread)."""
        self._encoder()  # loaded here once, not by each thread
        workers = min(MAX_WORKERS, os.cpu_count() or 1)
        pool = _pool(workers)
        shares = [pool.submit(self._share, messages[start::workers]) for start in range(workers)]

        def counted() -> list[int | None]:
            found: list[int | None] = [None] * len(messages)
            for start, share in enumerate(shares):
                found[start::workers] = share.result()
            return found

        return counted

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
                tokens += sum(self._part(part) for part in value)
        return tokens

    def _part(self, part: Any) -> int:
        """A content part's tokens, as LiteLLM counts it; other kinds of part are its to count."""
        if isinstance(part, str):
            return self.text(part)
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text":
            return self.text(str(part.get("text") or ""))
        if kind == "image_url":
            return image(part.get("image_url"))
        raise Unsupported("content part")

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


# --- images, as LiteLLM's calculate_img_tokens counts them ---------------------------------------

IMAGE_TOKENS = 85
"""An image's base count, and all of it at detail "low" (LiteLLM's for every model)."""
TILE_TOKENS = 2 * IMAGE_TOKENS
TILE_PX = 512
SHORT_SIDE_PX = 768
LONG_SIDE_PX = 2_000
"""An image larger than ``SHORT_SIDE_PX`` is scaled to that short side, its long one at most
this (LiteLLM's rule, which is not quite OpenAI's), then counted in tiles."""
UNKNOWN_SIDE_PX = 300
"""The side LiteLLM takes, at detail "high", for a picture of a kind it does not read."""
MOST_IMAGE_BYTES = 50 * 1024 * 1024
"""Larger data, at detail "auto", is not read: the image counts ``IMAGE_TOKENS``."""
_DATA_CHARS = re.compile(r"[A-Za-z0-9+/]*")


def image(image_url: Any) -> int:
    """The tokens of an ``image_url`` part's value (a data URL, a web address, or an object of
    ``url`` and ``detail``). A web address is never fetched: at detail "auto" (what handoffs
    send) LiteLLM does not fetch it either, and counts it ``IMAGE_TOKENS``; at "high" it would
    download it, and so does the fallback."""
    if isinstance(image_url, str) and image_url.strip():
        url: Any = image_url
        detail = "auto"
    elif isinstance(image_url, dict) and image_url.get("url"):
        url, detail = image_url["url"], image_url.get("detail", "auto")
    else:
        raise Unsupported("image")  # LiteLLM refuses it: let it say why
    if detail == "low":
        return IMAGE_TOKENS
    if not isinstance(url, str):
        raise Unsupported("image")
    if detail == "auto":
        return _tokens(_auto_size(url))
    if detail == "high":
        return _tokens(_high_size(url))
    raise Unsupported("image detail")


def _tokens(size: tuple[int, int] | None) -> int:
    if size is None:
        return IMAGE_TOKENS
    width, height = _scaled(*size)
    tiles = -(-width // TILE_PX) * -(-height // TILE_PX)
    return IMAGE_TOKENS + TILE_TOKENS * tiles


def _scaled(width: int, height: int) -> tuple[int, int]:
    """The size LiteLLM scales an image to before it counts tiles (its own float arithmetic, so
    its truncations, too)."""
    if width <= SHORT_SIDE_PX and height <= SHORT_SIDE_PX:
        return width, height
    if min(width, height) == 0:
        raise Unsupported("image of no area")  # LiteLLM fails, dividing by zero
    aspect = max(width, height) / min(width, height)
    short, long = SHORT_SIDE_PX, int(SHORT_SIDE_PX * aspect)
    if long > LONG_SIDE_PX:
        short, long = int(LONG_SIDE_PX / aspect), LONG_SIDE_PX
    return (short, long) if width <= height else (long, short)


def _auto_size(url: str) -> tuple[int, int] | None:
    """The size LiteLLM reads at detail "auto": of a data URL of an image of a kind it reads
    (PNG, GIF, JPEG, WebP), whole and valid base64; None for anything else."""
    most_chars = 4 * ((MOST_IMAGE_BYTES + 2) // 3)
    if not url.startswith("data:image/") or len(url) > most_chars + 128:
        return None
    header, comma, data = url.partition(",")
    if not comma or len(header) > 128 or not header.endswith(";base64"):
        return None
    decoded = _Decoded.of(data)
    if decoded is None or decoded.size > MOST_IMAGE_BYTES:
        return None
    if _kind(decoded[0:12]) not in ("png", "gif", "jpeg", "webp"):
        return None
    try:
        width, height = _size(decoded)
    except _Short:
        return None
    return (width, height) if width > 0 and height > 0 else None


def _high_size(url: str) -> tuple[int, int]:
    """The size LiteLLM reads at detail "high", where it reads it without the network."""
    if url.startswith(("http://", "https://")):
        raise Unsupported("image at a web address")  # LiteLLM downloads it
    _, comma, data = url.partition(",")
    decoded = _Decoded.of(data) if comma else None
    if decoded is None:  # no data, or base64 LiteLLM decodes leniently, or refuses
        raise Unsupported("image data")
    try:
        return _size(decoded)
    except _Short:
        raise Unsupported("image data") from None  # LiteLLM fails on it


class _Short(Exception):
    """The image ends before a field its kind has there."""


class _Decoded:
    """Base64 data, decoded only where read: an image's header is a few bytes of megabytes."""

    def __init__(self, data: str, size: int) -> None:
        self._data = data
        self.size = size

    @classmethod
    def of(cls, data: str) -> _Decoded | None:
        """The data, if it is base64 that Python's strict decoding (LiteLLM's) accepts."""
        chars = data.rstrip("=")
        padding = len(data) - len(chars)
        if data.startswith("=") or not _DATA_CHARS.fullmatch(chars):
            return None
        rest = len(chars) % 4
        if not (rest == 0 or (rest == 2 and padding == 2) or (rest == 3 and padding == 1)):
            return None
        return cls(data, len(chars) * 3 // 4)

    def __getitem__(self, bytes_: slice) -> bytes:
        start, stop = max(0, bytes_.start), min(self.size, bytes_.stop)
        if start >= stop:
            return b""
        first = start // 3
        chars = self._data[first * 4 : -(-stop // 3) * 4]
        return base64.b64decode(chars)[start - first * 3 : stop - first * 3]


def _kind(head: bytes) -> str | None:
    """The kind of image LiteLLM sees in its first bytes (``get_image_type``)."""
    if head[0:8] == b"\x89PNG\r\n\x1a\n":
        return "png"
    if head[0:4] == b"GIF8" and head[5:6] == b"a":
        return "gif"
    if head[0:3] == b"\xff\xd8\xff":
        return "jpeg"
    if head[4:8] == b"ftyp":
        return "heic"
    if head[0:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "webp"
    return None


def _unpack(form: str, data: bytes) -> tuple[int, ...]:
    try:
        return struct.unpack(form, data)
    except struct.error:
        raise _Short from None


def _size(image: _Decoded) -> tuple[int, int]:
    """Width and height where LiteLLM reads them (``_image_dimensions_from_bytes``), the
    unknown kinds ``UNKNOWN_SIDE_PX`` square."""
    kind = _kind(image[0:12])
    if kind == "png":
        width, height = _unpack(">LL", image[16:24])
    elif kind == "gif":
        width, height = _unpack("<HH", image[6:10])
    elif kind == "jpeg":
        return _jpeg_size(image)
    elif kind == "webp" and image[12:16] == b"VP8X":
        width = _unpack("<I", image[24:27] + b"\x00")[0] + 1
        height = _unpack("<I", image[27:30] + b"\x00")[0] + 1
    elif kind == "webp" and image[12:16] == b"VP8 ":
        width = _unpack("<H", image[26:28])[0] & 0x3FFF
        height = _unpack("<H", image[28:30])[0] & 0x3FFF
    elif kind == "webp" and image[12:16] == b"VP8L":
        bits = _unpack("<I", image[21:25])[0]
        width, height = (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    else:
        return UNKNOWN_SIDE_PX, UNKNOWN_SIDE_PX
    return width, height


_NOT_A_FRAME = (0xC4, 0xC8, 0xCC)
"""Markers in 0xC0-0xCF that start no frame (Huffman tables, arithmetic coding)."""


def _jpeg_size(image: _Decoded) -> tuple[int, int]:
    """A JPEG's size from its first frame header, segments skipped by their lengths as LiteLLM
    skips them (from offset 2, a position never before the start)."""
    at, skip, marker = 0, 2, 0
    while not 0xC0 <= marker <= 0xCF or marker in _NOT_A_FRAME:
        at = max(0, at + skip)
        byte = image[at : at + 1]
        at += len(byte)
        while byte == b"\xff":
            byte = image[at : at + 1]
            at += len(byte)
        if not byte:
            raise _Short
        marker = byte[0]
        length = image[at : at + 2]
        at += len(length)
        skip = _unpack(">H", length)[0] - 2
    at = max(0, at + 1)
    height, width = _unpack(">HH", image[at : at + 4])
    return width, height
