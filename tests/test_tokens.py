"""Token counts without LiteLLM: exactly ``litellm.token_counter``'s, each message counted once.

Held to LiteLLM's own counts on the requests handed off from every fixture session (and on the
folded requests of a small window), on texts at the edges of its rules (empty, unicode, a long
run of one character, past the size where it estimates), and for the encoding it picks by name.
A dry run that LiteLLM's data answers never imports it.
"""

from __future__ import annotations

import base64
import collections
import logging
import struct
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest
import tiktoken
import tiktoken.registry

from handoff_cli.errors import NothingToHandOffError
from handoff_cli.handoff.pipeline import dry_run, prepare
from handoff_cli.handoff.prompt import ChatMessage
from handoff_cli.llm import table as model_table
from handoff_cli.llm import tokens
from handoff_cli.llm.model import Model, resolve_model
from handoff_cli.options import Options

from .conftest import EXAMPLES, FIXTURES, NOT_SESSIONS, fixture_files, litellm

pytestmark = [pytest.mark.litellm, pytest.mark.heavy]  # LiteLLM itself asked: make test-heavy

logging.getLogger("LiteLLM").setLevel(logging.CRITICAL)

TIKTOKEN_MODELS = {
    "openai/gpt-4o": "o200k_base",
    "gpt-4o": "o200k_base",
    "openai/gpt-4": "cl100k_base",
    "openai/test-model": "cl100k_base",
    "openai/o3-mini": "o200k_base",
    "openai/gpt-5.9": "o200k_base",
    "anthropic/claude-sonnet-4-5": "cl100k_base",
    "azure/gpt-4o": "o200k_base",
    "azure/my-deployment": "cl100k_base",
    "gemini/gemini-2.5-pro": "cl100k_base",
    "mistral/mistral-large-latest": "cl100k_base",
    "xai/grok-4": "cl100k_base",
    "openrouter/openai/gpt-4o": "o200k_base",
    "ollama_chat/llama3": "cl100k_base",
    "gpt-3.5-turbo-0301": "cl100k_base",  # unlisted now, so not counted by its old rule
}
"""Models LiteLLM counts with tiktoken, and the encoding it takes for each."""
OTHER_TOKENIZERS = [
    "claude-sonnet-4-5",  # Anthropic's own tokenizer
    "deepseek/deepseek-chat",  # DeepSeek's
    "groq/llama-3.3-70b-versatile",  # Llama 3's
]
"""Models LiteLLM counts otherwise: left to it."""

SESSIONS = sorted(
    p for p in [*fixture_files(), *EXAMPLES.glob("*.jsonl")] if p.name not in NOT_SESSIONS
)


def litellm_message(model: str) -> tokens.MessageCount:
    def count(message: ChatMessage) -> int:
        return int(litellm().token_counter(model=model, messages=[message])) - tokens.REPLY_PRIMER

    return count


def counter(model: str, fallbacks: list[ChatMessage] | None = None) -> tokens.Counter:
    """Our counter for ``model``; the messages it leaves to LiteLLM go to ``fallbacks``."""
    name = tokens.encoding_name(model)
    assert name in tokens.ENCODINGS
    litellm_count = litellm_message(model)

    def fallback(message: ChatMessage) -> int:
        if fallbacks is not None:
            fallbacks.append(message)
        return litellm_count(message)

    tiktoken = tokens.Tiktoken(name, fallback)
    return tokens.Counter(tiktoken, ahead=tiktoken.ahead)  # as the resolved model's


def theirs(model: str, messages: Sequence[ChatMessage]) -> int:
    return int(litellm().token_counter(model=model, messages=list(messages)))


def requests_of(path: Path, model: str, window: int | None = None) -> list[list[ChatMessage]]:
    """The requests a handoff of ``path`` would send (none if there is nothing to hand off)."""
    options = Options(model=model, api_key="sk-test", context_window=window)
    try:
        if window is None:
            request = prepare(path, options)
            return [[*request.conversation, request.prompt]]
        return [r.build() for r in dry_run(path, options).requests]
    except NothingToHandOffError:
        return []


@pytest.mark.parametrize(("model", "encoding"), TIKTOKEN_MODELS.items())
def test_the_encoding_is_litellms(model: str, encoding: str) -> None:
    assert tokens.encoding_name(model) == encoding
    # The two encodings count this differently: the count shows which one LiteLLM took.
    probe = [{"role": "user", "content": "Überprüfe die Ausgabe: 東京 → ✓ (3.14159) «ok»"}]
    assert counter(model)(probe) == theirs(model, probe)


@pytest.mark.parametrize("model", OTHER_TOKENIZERS)
def test_other_tokenizers_are_left_to_litellm(model: str) -> None:
    assert tokens.encoding_name(model) is None


def test_every_openai_name_in_the_table_gets_litellms_encoding() -> None:
    known = model_table.table()
    assert known is not None
    probe = [{"role": "user", "content": "Überprüfe die Ausgabe: 東京 → ✓ (3.14159) «ok»"}]
    names = [
        k for k, v in known.entries.items() if v.get("litellm_provider") in ("openai", "azure")
    ]
    wrong = []
    for name in names:
        encoding = tokens.encoding_name(name)
        if encoding in tokens.ENCODINGS and counter(name)(probe) != theirs(name, probe):
            wrong.append(name)
    assert wrong == []


@pytest.mark.parametrize("model", ["openai/gpt-4o", "anthropic/claude-sonnet-4-5"])
def test_counts_on_every_fixture_request_are_litellms(model: str) -> None:
    fallbacks: list[ChatMessage] = []
    ours = counter(model, fallbacks)
    messages = 0
    for path in SESSIONS:
        for request in requests_of(path, model):
            assert ours(request) == theirs(model, request), path
            messages += len(request)
    assert messages > 1_500
    assert fallbacks == []  # images too are counted without LiteLLM


@pytest.mark.parametrize("model", ["openai/gpt-4o", "openai/gpt-4"])
def test_counts_on_folded_requests_are_litellms(model: str) -> None:
    ours = counter(model)
    requests = [r for path in SESSIONS for r in requests_of(path, model, window=4_000)]
    assert len(requests) > 50  # the large sessions are folded in many chunks
    assert [ours(r) for r in requests] == [theirs(model, r) for r in requests]


@pytest.mark.parametrize("model", ["openai/gpt-4o", "claude-sonnet-4-5", "deepseek/deepseek-chat"])
def test_counts_add_up(model: str) -> None:
    """LiteLLM's count of a request is the reply primer plus each message's own, whatever its
    tokenizer, on every fixture request: so counting each message once is exact."""
    requests = [r for path in SESSIONS for r in requests_of(path, model)]
    for request in requests:
        each = [theirs(model, [m]) - tokens.REPLY_PRIMER for m in request]
        assert theirs(model, request) == tokens.REPLY_PRIMER + sum(each)
    assert theirs(model, []) == tokens.REPLY_PRIMER


def test_our_counts_add_up() -> None:
    model = "openai/gpt-4o"
    ours = counter(model)
    (request,) = requests_of(FIXTURES / "pi" / "before-compaction.jsonl", model)
    each = [theirs(model, [m]) - tokens.REPLY_PRIMER for m in request]
    assert [ours([m]) - tokens.REPLY_PRIMER for m in request] == each
    assert ours.each(request) == each
    assert ours(request) == tokens.REPLY_PRIMER + sum(each)
    assert ours([]) == tokens.REPLY_PRIMER


def test_many_messages_are_counted_at_once_alike() -> None:
    model = "openai/gpt-4o"
    (request,) = requests_of(FIXTURES / "generated" / "omp-000.jsonl", model)
    tiktoken = tokens.Tiktoken("o200k_base", litellm_message(model))
    many = request * 3  # more than a share each
    ahead = tiktoken.ahead(many)()
    assert any(isinstance(m["content"], list) for m in many)  # images, counted on the threads
    assert ahead == [tiktoken(m) for m in many]
    assert tokens.Counter(tiktoken, tiktoken.ahead)(many) == theirs(model, many)


def test_each_message_is_counted_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A plan of many requests, made in stages, counts each message of the conversation once
    (and adds): a long session's are counted in one pass, none of them kept."""
    counted: collections.Counter[bytes] = collections.Counter()
    count = tokens.Tiktoken._count

    def recording(self: tokens.Tiktoken, message: ChatMessage) -> int:
        counted[orjson.dumps(message)] += 1
        return count(self, message)

    path = FIXTURES / "pi" / "large-session.jsonl"
    options = Options(model="openai/gpt-4o", api_key="sk-test", context_window=8_000)
    conversation = collections.Counter(orjson.dumps(m) for m in prepare(path, options).conversation)
    monkeypatch.setattr(tokens.Tiktoken, "_count", recording)
    planned = dry_run(path, options)
    assert planned.strategy == "chunked" and len(planned.requests) > 10
    assert all(counted[m] == n for m, n in conversation.items())


def test_batches_are_counted_while_the_next_are_built(monkeypatch: pytest.MonkeyPatch) -> None:
    """The counting threads count a batch while the conversation's next batches are built and
    masked: its counts are taken only once a later batch is started."""
    events: list[tuple[str, int]] = []
    ahead = tokens.Tiktoken.ahead

    def recording(self: tokens.Tiktoken, messages: list[ChatMessage]) -> tokens.Counted:
        batch = sum(1 for kind, _ in events if kind == "started")
        events.append(("started", batch))
        counted = ahead(self, messages)

        def taken() -> list[int | None]:
            events.append(("taken", batch))
            return counted()

        return taken

    monkeypatch.setattr(tokens.Tiktoken, "ahead", recording)
    path = FIXTURES / "pi" / "large-session.jsonl"
    options = Options(model="openai/gpt-4o", api_key="sk-test", context_window=8_000)
    prepare(path, options)
    started = [batch for kind, batch in events if kind == "started"]
    assert len(started) > 2
    assert events.index(("started", 1)) < events.index(("taken", 0))
    assert sorted(batch for kind, batch in events if kind == "taken") == started


def tiktoken_constructor(name: str) -> Callable[[], dict[str, Any]]:
    tiktoken.list_encoding_names()  # finds the constructors of tiktoken's plugins
    assert tiktoken.registry.ENCODING_CONSTRUCTORS is not None
    return tiktoken.registry.ENCODING_CONSTRUCTORS[name]


@pytest.mark.parametrize("name", tokens.ENCODINGS)
def test_the_encoding_is_built_as_tiktoken_builds_it(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Read from LiteLLM's copy of its rank file without tiktoken's parse, the encoding is the
    one tiktoken makes of that file: the same ranks, pattern and special tokens; and it is the
    one tiktoken's registry gives LiteLLM."""
    folder = model_table.package_dir()
    assert folder is not None
    tokenizers = folder / "litellm_core_utils" / "tokenizers"
    built = tokens._built(name, tokenizers)
    assert built is not None
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tokenizers))  # read there, never fetched
    theirs = tiktoken_constructor(name)()  # tiktoken's own reading of the file
    assert built._pat_str == theirs["pat_str"]
    assert built._special_tokens == theirs["special_tokens"]
    assert built._mergeable_ranks == theirs["mergeable_ranks"]
    assert tokens.encoding(name) is tiktoken.get_encoding(name)


EDGE_TEXTS = {
    "empty": "",
    "unicode": "naïve café — 東京タワー 🙂👩‍💻 e\u0301 \u200b ﷺ \U0001d518\U0001d52b\U0001d526",
    "special tokens as text": "<|endoftext|> <|fim_prefix|> <|endofprompt|>",
    "one character, long": "a" * 100_003,
    "spaces, long": " " * 50_000 + "x",
    "digits": "0123456789" * 5_000,
    "lone surrogate": "before \ud800 after",
    "exactly the estimate's threshold": "ab c" * (tokens.MAX_EXACT_CHARS // 4),
    "5 MB, estimated": "the quick brown fox jumps over the lazy dog; " * 116_280,
}


@pytest.mark.parametrize("text", EDGE_TEXTS.values(), ids=EDGE_TEXTS.keys())
@pytest.mark.parametrize("model", ["openai/gpt-4o", "openai/gpt-4"])
def test_edge_texts(model: str, text: str) -> None:
    ours = counter(model)
    messages = [{"role": "user", "content": text}]
    assert ours(messages) == theirs(model, messages)


def test_every_field_as_litellm_counts_it() -> None:
    model = "openai/gpt-4o"
    request: list[ChatMessage] = [
        {"role": "system", "content": "Be brief.", "name": "rules"},
        {"role": "user", "content": [{"type": "text", "text": "one"}, {"type": "text"}, "two"]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}},
                {"id": "c2", "type": "function", "function": {"name": "read"}},
                {"id": "c3", "type": "function", "function": {"name": "x", "arguments": None}},
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "ok", "extra": 5},
        {"role": "user", "content": [{"type": "thinking", "thinking": "hm"}]},
    ]
    fallbacks: list[ChatMessage] = []
    ours = counter(model, fallbacks)
    assert ours(request) == theirs(model, request)
    assert fallbacks == [request[-1]]  # a kind of part left to LiteLLM


def test_a_message_litellm_refuses_is_refused_alike() -> None:
    broken = [{"role": "assistant", "tool_calls": [{"id": "c1"}]}]  # a call with no function
    with pytest.raises(ValueError):
        theirs("openai/gpt-4o", broken)
    with pytest.raises(ValueError):
        counter("openai/gpt-4o")(broken)


def test_the_resolved_model_counts_with_tiktoken() -> None:
    model = resolve_model("openai/gpt-4o", None, api_key="sk-test")
    assert isinstance(model, Model) and isinstance(model.count, tokens.Counter)
    request = [{"role": "user", "content": "Hello, world"}]
    assert model.count(request) == theirs("openai/gpt-4o", request)
    other = resolve_model("deepseek/deepseek-chat", None, api_key="sk-test")
    assert isinstance(other, Model) and other.count(request) == theirs(
        "deepseek/deepseek-chat", request
    )


NO_IMPORT_PROBE = """
import sys
from pathlib import Path
from handoff_cli.cli.app import run
from handoff_cli.options import Options
from handoff_cli.handoff.pipeline import dry_run
from handoff_cli.handoff.writer import register
from handoff_cli.llm.model import resolve_model

register(resolve_model)  # as the command line hands it in
session, folder = Path(sys.argv[1]), sys.argv[2]
options = Options(model="openai/gpt-4o", api_key="sk-test", context_window=8_000)
planned = dry_run(session, options)
assert planned.strategy == "chunked" and len(planned.requests) > 3, planned.strategy
assert resolve_model("openai/gpt-4o", None, api_key="sk-test").price(10_000, 500) > 0
code = run(["rotate", folder, "--model", "openai/gpt-4o", "--api-key", "sk-test",
            "--over-tokens", "100", "--idle", "0s", "--dry-run", "--json"])
assert code == 0, code
print("litellm" in sys.modules, file=sys.stderr)
"""


def test_a_dry_run_that_litellms_data_answers_never_imports_it(tmp_path: Path) -> None:
    session = FIXTURES / "pi" / "large-session.jsonl"
    folder = tmp_path / "rotate"
    folder.mkdir()
    (folder / session.name).write_bytes(session.read_bytes())
    completed = subprocess.run(  # a process: this one has imported LiteLLM already
        [sys.executable, "-c", NO_IMPORT_PROBE, str(session), str(folder)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stderr.strip().splitlines()[-1] == "False"


# --- images, counted as LiteLLM counts them --------------------------------------------------


def png(width: int, height: int) -> bytes:
    ihdr = struct.pack(">LLBBBBB", width, height, 8, 6, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + struct.pack(">L", 13) + b"IHDR" + ihdr + b"\0" * 4


def gif(width: int, height: int) -> bytes:
    return b"GIF89a" + struct.pack("<HH", width, height) + b"\xf7\0\0"


def jpeg(width: int, height: int, exif: int = 16) -> bytes:
    """A JPEG whose frame header comes after an APP0, an ``exif``-byte APP1 and a table: the
    size is found by skipping segments."""
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\0" + b"\1\1\0\0\1\0\1\0\0"
    app1 = b"\xff\xe1" + struct.pack(">H", exif + 2) + b"E" * exif
    table = b"\xff\xc4" + struct.pack(">H", 5) + b"\0\0\0"  # C4: not a frame, skipped
    frame = b"\xff\xc2" + struct.pack(">HBHHB", 11, 8, height, width, 3) + b"\0" * 3
    return b"\xff\xd8" + app0 + app1 + table + frame + b"\xff\xd9"


def webp(width: int, height: int, form: str) -> bytes:
    if form == "VP8X":
        body = b"\0" * 4 + (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little")
    elif form == "VP8 ":
        body = b"\0" * 6 + b"\x9d\x01\x2a" + struct.pack("<HH", width, height)
    else:  # VP8L: 14 bits each, less one
        body = b"\x2f" + struct.pack("<I", (width - 1) | (height - 1) << 14)
    chunk = form.encode() + struct.pack("<I", len(body)) + body
    return b"RIFF" + struct.pack("<I", 4 + len(chunk)) + b"WEBP" + chunk


def data_url(image: bytes, mime: str = "image/png", filler: int = 64) -> str:
    """``image`` with ``filler`` bytes of pixel data after its header."""
    pixels = bytes(range(256)) * (filler // 256) + b"x" * (filler % 256)
    return f"data:{mime};base64,{base64.b64encode(image + pixels).decode()}"


SIZES = [
    (1, 1),
    (512, 512),
    (768, 768),
    (769, 769),
    (1024, 1024),
    (4000, 100),  # wide
    (100, 4000),  # tall
    (3000, 700),
    (16383, 16383),  # as large as WebP's VP8 and VP8L say
    (1, 16383),  # scaled to less than a pixel across: no tile
    (2000, 768),
    (2001, 767),
]
FORMATS = {
    "png": lambda w, h: data_url(png(w, h)),
    "gif": lambda w, h: data_url(gif(w, h), "image/gif"),
    "jpeg": lambda w, h: data_url(jpeg(w, h), "image/jpeg"),
    "jpeg-exif": lambda w, h: data_url(jpeg(w, h, exif=60_000), "image/jpeg", filler=200_000),
    "webp-vp8x": lambda w, h: data_url(webp(w, h, "VP8X"), "image/webp"),
    "webp-vp8": lambda w, h: data_url(webp(w, h, "VP8 "), "image/webp"),
    "webp-vp8l": lambda w, h: data_url(webp(w, h, "VP8L"), "image/webp"),
}
IMAGE_MODELS = ["openai/gpt-4o", "gpt-4o", "openai/gpt-4", "anthropic/claude-sonnet-4-5"]


def image_message(*urls: object, detail: str | None = None) -> ChatMessage:
    parts: list[object] = [{"type": "text", "text": "What does this show?"}]
    for url in urls:
        value = url if detail is None else {"url": url, "detail": detail}
        parts.append({"type": "image_url", "image_url": value})
    return {"role": "user", "content": parts}


def image_counts_agree(model: str, messages: list[ChatMessage]) -> None:
    """Our counts of ``messages`` are LiteLLM's, none of them left to it."""
    fallbacks: list[ChatMessage] = []
    ours = counter(model, fallbacks)
    assert [ours([m]) for m in messages] == [theirs(model, [m]) for m in messages]
    assert fallbacks == []


@pytest.mark.parametrize("form", FORMATS)
@pytest.mark.parametrize("detail", [None, "auto", "high", "low"])
def test_images_of_every_kind_and_size_are_counted_as_litellm_counts_them(
    form: str, detail: str | None
) -> None:
    messages = [image_message(FORMATS[form](w, h), detail=detail) for w, h in SIZES]
    image_counts_agree("openai/gpt-4o", messages)
    # As large as a GIF's or a JPEG's 16 bits say; a PNG's 32.
    if form in ("png", "gif", "jpeg"):
        huge = [
            image_message(FORMATS[form](w, h), detail=detail)
            for w, h in [(65535, 65535), (65535, 3)]
        ]
        image_counts_agree("openai/gpt-4o", huge)
    if form == "png":
        image_counts_agree("openai/gpt-4o", [image_message(data_url(png(2**31, 40_000)))])


@pytest.mark.parametrize("model", IMAGE_MODELS)
def test_several_images_a_message_on_several_models(model: str) -> None:
    urls = [FORMATS[form](w, h) for form, (w, h) in zip(FORMATS, SIZES[3:], strict=False)]
    image_counts_agree(model, [image_message(*urls), image_message(*urls, detail="high")])
    image_counts_agree(
        model, [{"role": "user", "content": [{"type": "image_url", "image_url": urls[0]}]}]
    )


READABLE_URL = data_url(png(900, 900))
READABLE = image_message(READABLE_URL, detail="high")
BROKEN_IMAGES = {
    "not base64": "data:image/png;base64,iVBORw0K!!!",
    "bad padding": "data:image/png;base64," + base64.b64encode(png(900, 900)).decode()[:-3],
    "no comma": "data:image/png;base64",
    "not base64-encoded": "data:image/png," + base64.b64encode(png(900, 900)).decode(),
    "not an image's type": "data:text/plain;base64," + base64.b64encode(png(900, 900)).decode(),
    "a web address": "https://example.invalid/cat.png",
    "a kind it does not read": data_url(b"\0\0\0\x18ftypheic" + b"\0" * 40, "image/heic"),
    "of no known kind": data_url(b"BM" + b"\0" * 40, "image/bmp"),
    "a WebP of another chunk": data_url(b"RIFF\0\0\0\0WEBPALPH" + b"\0" * 40, "image/webp"),
    "a PNG cut short": "data:image/png;base64," + base64.b64encode(png(900, 900)[:20]).decode(),
    "a JPEG cut short": "data:image/jpeg;base64," + base64.b64encode(jpeg(900, 900)[:40]).decode(),
    "a JPEG with no frame": data_url(b"\xff\xd8\xff\xe0\x00\x04\0\0", "image/jpeg", filler=0),
    "a JPEG of a zero length": data_url(
        b"\xff\xd8\xff\xe0\x00\x00" + jpeg(900, 900)[2:], "image/jpeg"
    ),
    "zero wide": data_url(png(0, 900)),
    "over 50 MB": "data:image/png;base64,"
    + base64.b64encode(png(900, 900)).decode()
    + "A" * (4 * (50 * 1024 * 1024 // 3) + 8),
    "empty": "data:image/png;base64,",
}


@pytest.mark.parametrize("name", BROKEN_IMAGES)
def test_images_litellm_cannot_read_are_counted_alike(name: str) -> None:
    """What LiteLLM does not read at detail "auto" (what a handoff sends) it counts 85 (or
    300 pixels square), without the network: so do we."""
    image_counts_agree("openai/gpt-4o", [image_message(BROKEN_IMAGES[name])])


@pytest.mark.parametrize(
    "value",
    [
        {"url": "https://example.invalid/cat.png", "detail": "high"},  # LiteLLM downloads it
        {"url": "data:image/png;base64,iVBORw0K!!!", "detail": "high"},  # decoded leniently
        {"url": BROKEN_IMAGES["a PNG cut short"], "detail": "high"},  # LiteLLM fails on it
        {"url": "data:image/png;base64,iVBO", "detail": "medium"},  # LiteLLM refuses it
        {"detail": "auto"},
        "",
    ],
    ids=repr,
)
def test_images_only_litellm_can_count_are_left_to_it(value: object) -> None:
    fallbacks: list[ChatMessage] = []
    message = {"role": "user", "content": [{"type": "image_url", "image_url": value}]}
    ours = counter("openai/gpt-4o", fallbacks)
    assert ours([READABLE]) == theirs("openai/gpt-4o", [READABLE])
    try:
        counted = ours([message])
    except ValueError:
        counted = None
    assert fallbacks == [message]  # and not the readable image beside it
    try:
        assert counted == theirs("openai/gpt-4o", [message])
    except ValueError:
        assert counted is None


IMAGE_PROBE = """
import sys
from pathlib import Path
from handoff_cli.cli.app import run


code = run([sys.argv[1], "--dry-run", "--json", "--model", "openai/gpt-4o", "--api-key", "sk-test",
            "--context-window", "8000", "--json"])
assert code == 0, code
print("litellm" in sys.modules, file=sys.stderr)
"""


def test_a_dry_run_of_a_session_with_images_never_imports_litellm(tmp_path: Path) -> None:
    session = tmp_path / "images.jsonl"
    lines = [
        {
            "type": "session",
            "version": 3,
            "id": "s1",
            "timestamp": "2026-01-01T00:00:00.000Z",
            "cwd": "/w",
        }
    ]
    parent = None
    for turn in range(40):
        image = base64.b64encode(png(1200 + turn, 900) + b"\0" * 3_000).decode()
        user = {
            "role": "user",
            "content": [
                {"type": "text", "text": f"Step {turn}: what is wrong in this screenshot? " * 20},
                {"type": "image", "data": image, "mimeType": "image/png"},
            ],
            "timestamp": 1,
        }
        reply = {
            "role": "assistant",
            "content": [{"type": "text", "text": "A misaligned button. " * 30}],
            "timestamp": 2,
        }
        for message in (user, reply):
            entry_id = f"{len(lines):08x}"
            lines.append(
                {
                    "type": "message",
                    "id": entry_id,
                    "parentId": parent,
                    "timestamp": "2026-01-01T00:00:00.000Z",
                    "message": message,
                }
            )
            parent = entry_id
    session.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    completed = subprocess.run(  # a process: this one has imported LiteLLM already
        [sys.executable, "-c", IMAGE_PROBE, str(session)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stderr.strip().splitlines()[-1] == "False"


LENIENT_OR_FAILING = {
    "not base64",
    "bad padding",
    "no comma",
    "a PNG cut short",
    "a JPEG cut short",
    "a JPEG with no frame",
    "a JPEG of a zero length",
    "zero wide",
}


@pytest.mark.parametrize("name", [n for n in BROKEN_IMAGES if n != "a web address"])
def test_images_at_detail_high_are_counted_or_refused_alike(name: str) -> None:
    message = image_message(BROKEN_IMAGES[name], detail="high")
    fallbacks: list[ChatMessage] = []
    ours = counter("openai/gpt-4o", fallbacks)
    assert ours([READABLE]) == theirs("openai/gpt-4o", [READABLE])
    outcomes: list[int | None] = []
    for count in (ours, lambda m: theirs("openai/gpt-4o", m)):
        try:
            outcomes.append(count([message]))
        except ValueError:
            outcomes.append(None)
    assert outcomes[0] == outcomes[1]
    # Only what LiteLLM decodes leniently, or fails on, is left to it.
    assert fallbacks == ([message] if name in LENIENT_OR_FAILING else [])


def test_a_batch_of_few_messages_is_counted_on_the_threads() -> None:
    started: list[int] = []

    def ahead(messages: list[ChatMessage]) -> Callable[[], list[int | None]]:
        started.append(len(messages))
        return lambda: [7] * len(messages)

    counter = tokens.Counter(lambda message: 1, ahead=ahead)
    few: list[ChatMessage] = [{"role": "user", "content": "x"}] * 3
    assert counter.later(few)() == [1, 1, 1]  # a request this small: counted here
    assert started == []
    assert counter.later(few, batch=True)() == [7, 7, 7]  # a conversation's batch: ahead
    assert started == [3]
