"""The in-place handoff's cut: where oh-my-pi's own ``/handoff`` would compact a branch, and
the ``compaction`` entry it would append (docs/handoff.md §16).

Since 17.4 oh-my-pi hands off in place: the document becomes the summary of a compaction entry
in the same session, and the most recent messages are kept. Which entry is the first kept one,
``tokensBefore`` and the files listed are its rules (``prepareCompaction`` in
``@oh-my-pi/pi-agent-core``, with the handoff method's settings), ported here as pure
functions of the branch. Tokens are counted as the agent counts them with no model's
tokenizer: a quarter of each text's UTF-8 bytes, rounded up, text by text.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

from handoff_cli.agents.context import build_context, snapshot_through
from handoff_cli.handoff.document import HANDOFF_TYPE, files_block, js_order, with_files
from handoff_cli.options import OMP
from handoff_cli.sessions.js import js_string, js_truthy
from handoff_cli.sessions.jsonl import dumps
from handoff_cli.sessions.session import Entry, Record
from handoff_cli.text import CutText

KEEP_RECENT_TOKENS = 20_000
"""The handoff method's ``compaction.keepRecentTokens``, oh-my-pi's default."""
IMAGE_TOKENS = 1_200
"""What the agent charges an image, which has no text to count."""
FRAME_TOKENS = 5_024
"""What it charges a snapcompact frame of a compaction summary."""

_URL = re.compile(r"[a-z][a-z0-9+.-]*://", re.IGNORECASE)
_RANGE = r"L?\d+(?:(?:[-+]|\.\.)L?\d+|-|\.\.)?"
_RANGES = re.compile(rf"{_RANGE}(?:,{_RANGE})*", re.IGNORECASE)
_RAW = re.compile("raw", re.IGNORECASE)
_SELECTOR = re.compile(rf"(?:{_RANGE}(?:,{_RANGE})*|raw|conflicts)", re.IGNORECASE)
_CUT_ROLES = frozenset(
    {"bashExecution", "hookMessage", "branchSummary", "compactionSummary", "user", "assistant"}
)
_NATIVE_KEY = "openaiRemoteCompaction"


@dataclass(frozen=True)
class Cut:
    """Where the agent would compact the branch, and what its summary lists."""

    first_kept_entry_id: str
    tokens_before: int | float
    """By the last assistant turn's usage (0 without one); NaN where that usage lacks a count,
    as JavaScript's arithmetic gives it (written as null)."""
    kept: int
    """How many entries of the branch, from the first kept one to the leaf, stay as they are."""
    read: frozenset[str]
    """Every file read in what is summarised (for the ``(RW)`` marks)."""
    read_files: tuple[str, ...]
    """Files only read, sorted as JavaScript sorts."""
    modified_files: tuple[str, ...]


def cut(branch: list[Record], keep_recent: int = KEEP_RECENT_TOKENS) -> Cut | None:
    """The agent's ``prepareCompaction`` for ``branch`` (root to leaf) with the handoff method's
    settings (``keep_recent``: its ``keepRecentTokens``): None when there is nothing to compact
    (the branch ends in a compaction, or too little precedes what is kept)."""
    if branch and branch[-1].type == "compaction" and not _replays_through(branch[-1]):
        return None
    previous = _last_index(branch, "compaction")
    reset = _last_index(branch, "reset_boundary")
    if reset > previous:
        previous = -1
    start = max(previous, reset) + 1
    if previous >= 0:
        earlier = branch[previous].entry or {}
        if _native(earlier.get("preserveData")):
            through = earlier.get("providerReplayThroughEntryId")
            at = _index_of(branch, through) if through else -1
            if 0 <= at < previous:
                start = max(at, reset) + 1
        else:
            kept_id = earlier.get("firstKeptEntryId")
            kept = (i for i in range(reset + 1, previous) if branch[i].id == kept_id)
            start = next(kept, start)
            # After a snapshot (18.3), what it kept past the entry it replays through is
            # summarised too; unlike the native case, an older reset does not bound it.
            through = snapshot_through(earlier)
            at = _index_of(branch, through) if through is not None else -1
            if 0 <= at < previous:
                start = at + 1
    window = _window(branch[start:])
    usage = _last_usage(branch)
    tokens_before = _context_tokens(usage) if usage is not None else 0
    keep = keep_recent
    if usage is not None:
        estimated = sum(window.tokens)
        ratio = _prompt_tokens(usage) / estimated if estimated > 0 else 0
        if math.isfinite(ratio) and ratio > 1:
            keep = max(1, math.floor(keep / ratio))
    if not window.records:
        return None  # nothing after the last compaction: the agent says "already compacted"
    first_kept, turn_start = _cut_point(window, keep)
    split = turn_start >= 0
    history_end = turn_start if split else first_kept
    summarised = window.files[:history_end]
    prefix = window.files[turn_start:first_kept] if split else []
    if not summarised and not prefix:
        return None
    read, written = _previous_files(branch[previous].entry if previous >= 0 else None)
    for operations in summarised + prefix:
        for into, path in operations:
            (read if into is _READ else written)[path] = None
    modified = {path for path in written if not _URL.search(path)}
    only_read = [p for p in read if not _URL.search(p) and p not in modified]
    first_id = window.records[first_kept].id
    at_leaf = next(i for i, r in enumerate(branch) if r.id == first_id)
    return Cut(
        first_kept_entry_id=first_id,
        tokens_before=_js_number(tokens_before),
        kept=len(branch) - at_leaf,
        read=frozenset(read),
        read_files=tuple(sorted(only_read, key=js_order)),
        modified_files=tuple(sorted(modified, key=js_order)),
    )


def compaction_entry(
    cut: Cut, document: str, entry_id: str, parent_id: str, timestamp: str
) -> Entry:
    """The entry oh-my-pi's ``/handoff`` appends, its keys in the agent's order: the document
    with its ``<files>`` block made from the cut's files, no short summary, no wrapper."""
    block = files_block(cut.read_files, cut.modified_files, cut.read)
    return {
        "type": "compaction",
        "id": entry_id,
        "parentId": parent_id,
        "timestamp": timestamp,
        "summary": with_files(document, block),
        "firstKeptEntryId": cut.first_kept_entry_id,
        "tokensBefore": cut.tokens_before,
        "method": HANDOFF_TYPE,
        "details": {"readFiles": list(cut.read_files), "modifiedFiles": list(cut.modified_files)},
        "fromExtension": False,
    }


def with_tokens_after(branch: list[Record], entry: Entry) -> Entry:
    """``entry`` with the ``tokensAfter`` the agent also writes, after ``tokensBefore``: our
    estimate of the context it leaves (``tokens_after``), which is lower than the agent's own
    by the system prompt, the tools and the framing of the summary, none of which a file
    holds."""
    after = tokens_after(branch, entry)
    keys = list(entry)
    at = keys.index("tokensBefore") + 1
    return (
        {k: entry[k] for k in keys[:at]} | {"tokensAfter": after} | {k: entry[k] for k in keys[at:]}
    )


def tokens_after(branch: list[Record], entry: Entry) -> int:
    """The agent's estimate of the context once ``entry`` is appended to ``branch``: its
    messages as oh-my-pi builds them, counted as for the cut (signatures and other encrypted
    reasoning aside), before the provider's framing and without the system prompt and tools."""
    record = Record(
        id=entry["id"],
        parent_id=entry["parentId"],
        type="compaction",
        span=0,
        entry=entry,
        facts=None,
        written_stamp=entry["timestamp"],
    )
    context = build_context([*branch, record], OMP)
    return sum(message_tokens(m, encrypted=False) for m in context.messages())


# --- counting, as the agent's Tokenizer does with no model ------------------------------------


def estimate(text: str) -> int:
    """A quarter of the text's UTF-8 bytes, rounded up (of the whole text, where it was read
    in part)."""
    size = (
        text.utf8_bytes if isinstance(text, CutText) else len(text.encode("utf-8", "surrogatepass"))
    )
    return (size + 3) >> 2


def message_tokens(message: Any, encrypted: bool = True) -> int:
    """One message's tokens: each of its texts estimated alone, a fixed charge per image.
    ``encrypted``: count thinking signatures and other opaque reasoning too."""
    if not isinstance(message, dict):
        return 0
    role, content = message.get("role"), message.get("content")
    if role == "bashExecution":
        texts = [message.get(k) for k in ("command", "output")]
        return sum(estimate(t) for t in texts if isinstance(t, str))
    fragments: list[str] = []
    extra = 0
    if role in ("user", "developer", "custom", "hookMessage", "toolResult"):
        if isinstance(content, str):
            fragments.append(content)
        for block in content if isinstance(content, list) else ():
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text" and js_truthy(block.get("text")):
                fragments.append(js_string(block["text"]))
            elif block.get("type") == "image":
                extra += IMAGE_TOKENS
    elif role == "assistant":
        fragments.extend(_assistant_texts(content, encrypted))
    elif role in ("branchSummary", "compactionSummary"):
        fragments.append(message.get("summary", ""))
        blocks, images = message.get("blocks"), message.get("images")
        if role == "compactionSummary" and isinstance(blocks, list):
            for block in blocks:
                if isinstance(block, dict) and block.get("type") == "text":
                    fragments.append(block.get("text", ""))
                else:
                    extra += FRAME_TOKENS
        elif role == "compactionSummary" and isinstance(images, list):
            extra += len(images) * FRAME_TOKENS
    else:
        return 0
    return extra + sum(estimate(t) for t in fragments if isinstance(t, str))


def _assistant_texts(content: Any, encrypted: bool) -> Iterator[Any]:
    for block in content if isinstance(content, list) else ():
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            yield block.get("text")
        elif kind == "thinking":
            yield block.get("thinking")
            if encrypted and js_truthy(block.get("thinkingSignature")):
                yield block["thinkingSignature"]
        elif kind == "toolCall":
            yield block.get("name")
            yield _stringify(block.get("arguments", _ABSENT))
        elif kind == "redactedThinking" and encrypted:
            yield block.get("data")
        elif kind == "anthropicServerTool" and encrypted:
            yield _stringify(block.get("block", _ABSENT))


_ABSENT = object()


def _stringify(value: Any) -> str:
    """``JSON.stringify(value) ?? "null"``."""
    return "null" if value is _ABSENT else dumps(value).decode()


# --- the cut's parts ----------------------------------------------------------------------------


class _Window(NamedTuple):
    """The entries that give a message after the last compaction, and of each what the cut
    reads: its role (when a string), its tokens, the files its tool calls name. Only these:
    the messages themselves are read one at a time and let go."""

    records: list[Record]
    roles: list[str | None]
    tokens: list[int]
    files: list[tuple[tuple[object, str], ...]]


_READ, _WRITTEN = object(), object()


def _window(records: list[Record]) -> _Window:
    window = _Window([], [], [], [])
    for record in records:
        message = _message(record)
        if not js_truthy(message):
            continue
        role = _role(message)
        window.records.append(record)
        window.roles.append(sys.intern(role) if type(role) is str else None)
        window.tokens.append(message_tokens(message))
        window.files.append(_file_operations(message))
    return window


def _message(record: Record) -> Any:
    """The message an entry gives the compaction (``getMessageFromEntry``), or None."""
    if record.type == "message":
        return record.message() if record.has_message else None
    entry = record.entry or {}
    if record.type == "custom_message":
        return {"role": "custom", "content": entry.get("content")}
    if record.type == "branch_summary":
        return {"role": "branchSummary", "summary": entry.get("summary")}
    return None


def _turn_start(record: Record, role: str | None) -> bool:
    if record.type in ("branch_summary", "custom_message"):
        return True
    return record.type == "message" and role in ("user", "bashExecution")


def _role(message: Any) -> Any:
    return message.get("role") if isinstance(message, dict) else None


def _cut_point(window: _Window, keep: int) -> tuple[int, int]:
    """``findCutPoint``: the index of the first kept entry of ``window`` (the oldest whole
    suffix within ``keep`` tokens, the newest group kept whatever its size), and the start of
    the turn it splits (-1 when it splits none)."""
    records, roles = window.records, window.roles
    points = [
        i
        for i, (record, role) in enumerate(zip(records, roles, strict=True))
        if record.type in ("branch_summary", "custom_message")
        or (record.type == "message" and role in _CUT_ROLES)
    ]
    if not points:
        return 0, -1
    total = 0
    at = len(points) - 1
    first = points[at]
    for i in range(len(records) - 1, -1, -1):
        total += window.tokens[i]
        if i != points[at]:
            continue
        if total > keep:
            break
        first = i
        at -= 1
    # Every entry of the window gives a message, so the agent's widening of the cut over
    # settings changes and labels before it never applies here.
    if _turn_start(records[first], roles[first]):
        return first, -1
    start = next((i for i in range(first, -1, -1) if _turn_start(records[i], roles[i])), -1)
    return first, start


def _last_usage(branch: list[Record]) -> dict[str, Any] | None:
    """The usage of the last assistant turn that neither failed nor was aborted."""
    for record in reversed(branch):
        if record.facts is None or record.facts.role != "assistant":
            continue
        message = _message(record)
        if _role(message) != "assistant" or "usage" not in message:
            continue
        usage = message["usage"]
        if message.get("stopReason") not in ("aborted", "error") and js_truthy(usage):
            return usage if isinstance(usage, dict) else {}
    return None


def _number(value: Any) -> float:
    """A usage field as JavaScript's arithmetic reads it: null is 0, a missing one NaN."""
    if value is None:
        return 0
    if isinstance(value, (int, float)):
        return float(value)
    return math.nan


def _js_number(value: float) -> int | float:
    """A count as JSON writes a JavaScript number: integral ones without a fraction."""
    return int(value) if math.isfinite(value) and value == int(value) else value


def _at_least_0(value: float) -> float:
    return value if math.isnan(value) else max(0.0, value)


def _context_tokens(usage: dict[str, Any]) -> float:
    """``calculateContextTokens``: the context the provider reported, else its token total
    (or the sum of its parts) less the provider's own orchestration."""
    if "contextTokens" in usage:
        return _at_least_0(_number(usage["contextTokens"]))
    extra = usage.get("orchestration")
    spent = 0.0
    if js_truthy(extra) and isinstance(extra, dict):
        spent = sum(_number(extra.get(k, 0)) for k in ("input", "output", "cacheRead"))
    total = _number(usage.get("totalTokens", _ABSENT))
    if not total or math.isnan(total):
        parts = ("input", "output", "cacheRead", "cacheWrite")
        total = sum(_number(usage.get(k, _ABSENT)) for k in parts)
    return _at_least_0(total - spent)


def _prompt_tokens(usage: dict[str, Any]) -> float:
    if "contextTokens" in usage:
        return _at_least_0(_number(usage["contextTokens"]))
    prompt = sum(_number(usage.get(k, _ABSENT)) for k in ("input", "cacheRead", "cacheWrite"))
    return prompt if prompt > 0 else _context_tokens(usage)


def _previous_files(entry: Entry | None) -> tuple[dict[str, None], dict[str, None]]:
    """The files the previous compaction listed (unless an extension made it)."""
    read: dict[str, None] = {}
    written: dict[str, None] = {}
    details = entry.get("details") if entry is not None else None
    if entry is None or js_truthy(entry.get("fromExtension")) or not isinstance(details, dict):
        return read, written
    for path in details.get("readFiles") or ():
        if isinstance(path, str):
            read[strip_read_selector(path)] = None
    for path in details.get("modifiedFiles") or ():
        if isinstance(path, str):
            written[path] = None
    return read, written


def _file_operations(message: Any) -> tuple[tuple[object, str], ...]:
    """The files an assistant turn's tool calls read (``_READ``), wrote or edited
    (``_WRITTEN``), in order (paths that are ``scheme://`` resources left out)."""
    if _role(message) != "assistant" or not isinstance(message.get("content"), list):
        return ()
    found: list[tuple[object, str]] = []
    for block in message["content"]:
        if not isinstance(block, dict) or block.get("type") != "toolCall" or "name" not in block:
            continue
        arguments = block.get("arguments")
        path = arguments.get("path") if isinstance(arguments, dict) else None
        if not isinstance(path, str) or not path or _URL.search(path):
            continue
        if block["name"] == "read":
            found.append((_READ, strip_read_selector(path)))
        elif block["name"] in ("write", "edit"):
            found.append((_WRITTEN, path))
    return tuple(found)


def strip_read_selector(path: str) -> str:
    """A read tool's path without its trailing selector (``:50-200``, ``:raw``,
    ``:1-50:raw``, ``:conflicts``), by the read tool's own grammar."""
    colon = path.rfind(":")
    if colon <= 0 or not _SELECTOR.fullmatch(path[colon + 1 :]):
        return path
    base, outer = path[:colon], path[colon + 1 :]
    inner_colon = base.rfind(":")
    if inner_colon > 0:
        inner = base[inner_colon + 1 :]
        ranges = bool(_RANGES.fullmatch(inner)), bool(_RANGES.fullmatch(outer))
        raws = bool(_RAW.fullmatch(inner)), bool(_RAW.fullmatch(outer))
        if (raws[0] and ranges[1]) or (ranges[0] and raws[1]):
            base = base[:inner_colon]
    return base


def _index_of(branch: list[Record], entry_id: Any) -> int:
    return next((i for i, r in enumerate(branch) if r.id == entry_id), -1)


def _last_index(branch: list[Record], kind: str) -> int:
    return next((i for i in range(len(branch) - 1, -1, -1) if branch[i].type == kind), -1)


def _replays_through(record: Record) -> bool:
    return js_truthy((record.entry or {}).get("providerReplayThroughEntryId"))


def _native(preserve: Any) -> bool:
    """Whether a compaction's preserved data is a provider's native replay (OpenAI's remote
    compaction, streamed or not): its history already carries the kept tail."""
    value = preserve.get(_NATIVE_KEY) if isinstance(preserve, dict) else None
    if not isinstance(value, dict) or not isinstance(value.get("replacementHistory"), list):
        return False
    if isinstance(value.get("provider"), str) and value["provider"]:
        return True
    item = value.get("compactionItem")
    if not isinstance(item, dict):
        return False
    classic = item.get("type") == "compaction" and isinstance(item.get("encrypted_content"), str)
    return classic or item.get("type") == "compaction_summary"
