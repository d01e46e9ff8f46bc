"""oh-my-pi (18.3.4, the release the registry gives; 18.2.3's wherever the two agree): every
rule of its own.

- Its sessions: ``~/.omp/agent/sessions``. ``PI_CONFIG_DIR`` replaces ``.omp``; a profile
  (``OMP_PROFILE``, else ``PI_PROFILE``) lives under ``<config>/profiles/<name>``;
  ``PI_CODING_AGENT_DIR`` replaces the agent folder (not for a profile); on Linux and macOS,
  with the default agent folder, ``$XDG_DATA_HOME/omp/sessions`` is used once
  ``$XDG_DATA_HOME/omp`` exists (docs/session-format.md §2).
- What only oh-my-pi writes: its title slot, its header's title and workspace fields, its own
  entry types, ``attribution`` on custom messages, ``model_change`` as one ``model`` string,
  its compactions' extra fields.
- Its context also cuts at its ``reset_boundary``, replays provider-side compactions (and
  keeps what an Anthropic snapshot compaction leaves after the entry it replays through), hides
  some custom messages, skips retried turns, then cleans up: unanswered tool calls and failed
  turns go (§6.4, §6.5).
- What it writes in a session it starts, and after it: ``model_change`` as one ``model``
  string, the thinking level with ``configured``, ``title_change`` beside its title slot (or the
  header's title without one), and a pointer per terminal to the session last opened there
  (docs/handoff.md §15).
- The files its ``<files>`` block lists (``file_operation``, ``listed_files``): one rule for a
  new session's block and the in-place compaction's details.
- Its in-place handoff (since 17.4): the document becomes the summary of a compaction entry in
  the same session, and the most recent messages are kept (docs/handoff.md §16). Which entry is
  the first kept one, ``tokensBefore`` and the files listed are its rules (``prepareCompaction``
  in ``@oh-my-pi/pi-agent-core``, with the handoff method's settings), ported here as pure
  functions of the branch. Tokens are counted as the agent counts them with no model's
  tokenizer: a quarter of each text's UTF-8 bytes, rounded up, text by text.
"""

from __future__ import annotations

import math
import os
import re
import sys
from collections.abc import Container, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, NamedTuple

from handoff_cli.agents.base import Compacted, Compaction, Mask, Message
from handoff_cli.agents.context import (
    FAILED_STOP_REASONS,
    Change,
    Context,
    entry_time,
    kept_from,
    kept_where,
    last_index,
)
from handoff_cli.agents.pi import separated
from handoff_cli.document import HANDOFF_TYPE, files_block, is_handoff_prompt, js_order, with_files
from handoff_cli.errors import AlreadyCompactedError, NothingToCompactError
from handoff_cli.sessions.files import new_entry_id, replace_file
from handoff_cli.sessions.js import UNPAIRABLE, js_string, js_time, js_truthy
from handoff_cli.sessions.jsonl import dumps
from handoff_cli.sessions.session import (
    CallId,
    Entry,
    MessageFacts,
    Record,
    Session,
    with_facts,
    without_signature,
)
from handoff_cli.text import is_url, quarter_tokens, text_of

NAME = "omp"

_HEADER_KEYS = frozenset(
    "title titleSource additionalDirectories previousSessionFiles providerPromptCacheKey".split()
)
_TYPES = frozenset(
    "reset_boundary model_usage service_tier_change ttsr_injection credential_pin session_init "
    "mode_change title_change".split()
)
_COMPACTION_KEYS = frozenset(
    "shortSummary tokensAfter method preserveData fromExtension "
    "providerReplayThroughEntryId".split()
)

# Its internal custom messages that never reach the model.
HIDDEN_CUSTOM_TYPES = frozenset({"prewalk-plan", "vibe-mode-context"})
# A failed turn followed by this custom message is kept: the agent shows the user what it was
# thinking when interrupted.
INTERRUPTED_THINKING = "interrupted-thinking"
DEFAULT_CUSTOM_TYPE = "custom-message"
POINTER_BYTES = 64 * 1024
"""A terminal pointer holds two paths and a few words; a larger file there is none of its."""


class OhMyPi:
    """oh-my-pi's rules, as the ``Agent`` protocol asks them."""

    name = NAME
    title = "oh-my-pi"
    title_slot = True
    works_in_session_folder = True  # its --session works in the header's cwd
    roles = frozenset({"developer", "pythonExecution", "fileMention"})

    def sessions_folders(self, env: Mapping[str, str], home: Path, cwd: Path) -> list[Path]:
        return [sessions_folder(env, home)]

    def project_folder(self, env: Mapping[str, str], home: Path, cwd: str) -> Path | None:
        return sessions_folder(env, home) / project_folder_name(cwd, home, env.get("TMPDIR"))

    def wrote_header(self, session: Session) -> bool:
        return session.title_slot is not None or not _HEADER_KEYS.isdisjoint(session.header)

    def wrote(self, record: Record) -> bool:
        entry = record.entry
        if record.type in _TYPES:
            return True
        if entry is None:
            return False
        if record.type == "model_change":
            return "model" in entry
        if record.type == "custom_message":
            return "attribution" in entry
        # A compaction with a system message is pi's, whatever else it holds.
        compaction = record.type == "compaction" and "systemMessage" not in entry
        return compaction and not _COMPACTION_KEYS.isdisjoint(entry)

    def context(self, branch: list[Record]) -> Context:
        return _context(branch)

    def compaction(self, session: Session, branch: list[Record]) -> Compaction:
        where = cut(branch)
        if where is None:
            since = last_index(branch, "compaction")
            if since >= 0 and not any(r.type == "message" for r in branch[since + 1 :]):
                raise AlreadyCompactedError()
            raise NothingToCompactError(KEEP_RECENT_TOKENS, since >= 0)
        return _Compaction(where, branch, session.by_id)

    def loaded(self, message: Message, facts: MessageFacts) -> Message:
        return _loaded(message, facts)

    def custom(self, entry: Entry) -> Message:
        return _custom(entry)

    def starts_turn(self, record: Record, previous: Record | None) -> bool:
        facts = record.facts
        return _turn_start(record, facts.role if facts is not None else None)

    def model_change(self, entry: Entry, model: str, switched: bool) -> Entry:
        entry = entry | {"model": model}
        if switched:
            entry["role"] = "default"  # a switch names its role; a session's start does not
        return entry | {"resolvedModelIsFallback": False}

    def thinking_change(self, entry: Entry, thinking: Entry) -> Entry:
        level, configured = thinking.get("thinkingLevel"), thinking.get("configured")
        return entry | {"thinkingLevel": level, "configured": configured}

    def naming(self, entry: Entry, title: str) -> Entry:
        return {**entry, "type": "title_change", "title": title, "source": "auto"}

    def handoff_message(self, content: str, entry_id: str, parent: str | None, at: str) -> Entry:
        return {
            "type": "custom_message",
            "customType": HANDOFF_TYPE,
            "content": content,
            "display": True,
            "attribution": "agent",
            "id": entry_id,
            "parentId": parent,
            "timestamp": at,
        }

    def header_title(self, title: str) -> Entry:
        return {"title": title, "titleSource": "auto"}  # read where there is no title slot

    def queued_prompt(self, entry: Entry) -> str | None:
        return None  # a prompt sent mid-turn is a message entry like any other

    def resume_command(self, session_id: str, path: Path, own_folder: bool) -> list[str]:
        # It finds an id only in its own folders; elsewhere it opens a path (main.ts: a
        # value with a slash or ending in .jsonl is one).
        return ["omp", "--session", session_id if own_folder else str(path)]

    def loses_model(self, branch: list[Record]) -> bool:
        # An answer's model counts only while no model_change of its own (one ``model``
        # string, the default role) came before.
        return not any(
            record.type == "model_change"
            and record.entry is not None
            and isinstance(record.entry.get("model"), str)
            and record.entry.get("role") in (None, "default")
            for record in branch
        )


AGENT = OhMyPi()


# --- where its sessions are, and its terminals' pointers --------------------------------------


def sessions_folder(env: Mapping[str, str], home: Path, platform: str = sys.platform) -> Path:
    """oh-my-pi's sessions folder."""
    return _agent_part(env, home, "XDG_DATA_HOME", platform) / "sessions"


def project_folder_name(cwd: str, home: Path, temporary: str | None) -> str:
    """The name of oh-my-pi's folder for a cwd's sessions (``getDefaultSessionDirName``): under
    the home, ``-`` and the path from it; under the temporary folder, ``-tmp-`` and the path
    from it (the folder itself: ``-``, ``-tmp``); else pi's name, ``--<the path>--``."""
    path = PurePosixPath(cwd)
    for root, prefix in ((PurePosixPath(home), "-"), (PurePosixPath(temporary or "/tmp"), "-tmp-")):
        if path == root:
            return prefix.rstrip("-") or "-"
        if path.is_relative_to(root):
            return prefix + separated(str(path.relative_to(root)))
    return f"--{separated(cwd.removeprefix('/'))}--"


def terminal_sessions(env: Mapping[str, str], home: Path, platform: str = sys.platform) -> Path:
    """Where oh-my-pi remembers, per terminal, the session last opened there (a file per
    terminal: the cwd, then the session file); its ``--continue`` opens that one."""
    return _agent_part(env, home, "XDG_STATE_HOME", platform) / "terminal-sessions"


def _agent_part(env: Mapping[str, str], home: Path, xdg_variable: str, platform: str) -> Path:
    """oh-my-pi's agent folder, or, for the default one on Linux and macOS, the XDG folder of
    the kind named by ``xdg_variable`` once ``<that folder>/omp`` exists (omp's own rule: it
    flattens ``agent/`` away there)."""
    profile = env["OMP_PROFILE"] if "OMP_PROFILE" in env else env.get("PI_PROFILE", "")
    config = home / (env.get("PI_CONFIG_DIR") or ".omp")
    if profile:
        config = config / "profiles" / profile
    default_agent = config / "agent"
    override = env.get("PI_CODING_AGENT_DIR")
    agent = Path(override).resolve() if override and not profile else default_agent
    xdg = env.get(xdg_variable)
    if xdg and agent == default_agent and platform in ("linux", "darwin"):
        app = Path(xdg) / "omp"
        kept = app / "profiles" / profile if profile else app
        if kept.exists():
            return kept
    return agent


def move_pointers(folder: Path, old: Path, new: Path) -> int:
    """Point every oh-my-pi terminal that remembers ``old`` at ``new`` instead (written whole,
    atomically; the other lines kept). Returns how many were moved. A pointer names the file
    as the agent held it; it is matched by the file it resolves to, and rewritten in the same
    form (the same folder, the new name)."""
    try:
        pointers = [entry for entry in os.scandir(folder) if entry.is_file(follow_symlinks=False)]
    except OSError:
        return 0  # no terminal remembers anything (or oh-my-pi never ran here)
    target = old.resolve()
    moved = 0
    for pointer in pointers:
        try:
            with open(pointer.path, "rb") as file:
                data = file.read(POINTER_BYTES + 1)
            if len(data) > POINTER_BYTES:
                continue
            lines = data.decode().strip().split("\n")
            if len(lines) < 2 or Path(lines[1]).resolve() != target:
                continue
            lines[1] = str(Path(lines[1]).with_name(new.name))
            replace_file(Path(pointer.path), ("\n".join(lines) + "\n").encode())
            moved += 1
        except (OSError, UnicodeDecodeError, ValueError):
            continue  # not a pointer of the agent's, or gone meanwhile: not ours to mend
    return moved


# --- its context ------------------------------------------------------------------------------


def _context(branch: list[Record]) -> Context:
    thinking_level, model = _state(branch)
    compaction, window = _window_of(branch)
    window = with_facts(window)
    records, changes = _strip_unanswered(kept_where(window, _emits))
    head = (_summary(compaction, branch),) if compaction is not None else ()
    return Context(
        AGENT, head, _drop_failed_turns(records, changes), changes, thinking_level, model
    )


def _state(branch: list[Record]) -> tuple[Any, str | None]:
    """The thinking level and the model in force at the end of the branch.

    The model is the last default-role ``model_change``'s (omp's ``model``, or pi's
    ``provider`` and ``modelId``), else that of the last assistant message.
    """
    # From the end: only the last of each counts, and a message's facts are read only until
    # the last assistant turn is found (``Record.facts``).
    thinking_level: Any = _UNSEEN
    changed: str | None = None
    answered: str | None = None
    for record in reversed(branch):
        entry = record.entry
        if record.type == "thinking_level_change" and entry is not None:
            if thinking_level is _UNSEEN:
                level = entry.get("thinkingLevel")
                thinking_level = "off" if level is None else level
        elif record.type == "model_change" and entry is not None:
            changed = changed or _model_of_change(entry)
        elif answered is None and changed is None and record.type == "message":
            facts = record.facts
            if facts is not None and facts.role == "assistant":
                answered = f"{facts.provider}/{facts.model}"
        if thinking_level is not _UNSEEN and changed is not None:
            break
    return "off" if thinking_level is _UNSEEN else thinking_level, changed or answered


_UNSEEN: Any = object()
"""No thinking level change seen yet."""


def _model_of_change(entry: Entry) -> str | None:
    if entry.get("role") not in (None, "default"):
        return None  # a model for another role (e.g. omp's "smol"), not the conversation's
    if "model" in entry:  # omp's form
        model = entry["model"]
        return model if isinstance(model, str) and model else None
    provider, model_id = entry.get("provider"), entry.get("modelId")
    if isinstance(provider, str) and isinstance(model_id, str) and provider and model_id:
        return f"{provider}/{model_id}"
    return None


def _preserved(compaction: Record, key: str) -> dict[str, Any] | None:
    preserve = compaction.entry.get("preserveData") if compaction.entry is not None else None
    value = preserve.get(key) if isinstance(preserve, dict) else None
    return value if isinstance(value, dict) else None


def _openai_history(compaction: Record) -> dict[str, Any] | None:
    """The provider payload of a compaction done by OpenAI's servers."""
    remote = _preserved(compaction, "openaiRemoteCompaction")
    if remote is None:
        return None
    provider, history = remote.get("provider"), remote.get("replacementHistory")
    if not (isinstance(provider, str) and provider and isinstance(history, list)):
        return None
    if not all(isinstance(item, dict) for item in history):
        return None
    return {"type": "openaiResponsesHistory", "provider": provider, "items": history}


def _anthropic_compaction(compaction: Record) -> dict[str, Any] | None:
    preserved = _preserved(compaction, "anthropicCompaction")
    if preserved is None:
        return None
    provider, content = preserved.get("provider"), preserved.get("content")
    if not (isinstance(provider, str) and provider and isinstance(content, str) and content):
        return None
    payload = {"type": "anthropicCompaction", "provider": provider, "content": content}
    for key in ("signature", "encryptedContent", "filesText"):
        value = preserved.get(key)
        if isinstance(value, str) and value:
            payload[key] = value
    return payload


def _window_of(branch: list[Record]) -> tuple[Record | None, list[Record]]:
    """The compaction whose summary heads the context, if any, and the entries that follow it."""
    compaction, reset = last_index(branch, "compaction"), last_index(branch, "reset_boundary")
    if reset > compaction:
        return None, branch[reset + 1 :]
    if compaction < 0:
        return None, branch
    head = branch[compaction]
    entry = head.entry if head.entry is not None else {}
    # A compaction done by OpenAI's servers replays their history instead of kept entries:
    # what follows is only what came after the last entry that history covers.
    if _openai_history(head) is not None:
        start = kept_from(branch, compaction, entry.get("providerReplayThroughEntryId"), 1)
    else:
        start = kept_from(branch, compaction, entry.get("firstKeptEntryId"))
        through = snapshot_through(entry)
        # An Anthropic snapshot's signed block covers only up to the entry it replays through:
        # what was appended while it ran, up to the compaction, is kept (18.3).
        if start == compaction and through is not None and _anthropic_compaction(head) is not None:
            start = kept_from(branch, compaction, through, 1)
    return head, branch[start:compaction] + branch[compaction + 1 :]


def snapshot_through(compaction: Entry) -> Any:
    """The entry a snapshot compaction (``firstKeptEntryId`` ``""``) replays through, or None
    for any other compaction."""
    through = compaction.get("providerReplayThroughEntryId")
    snapshot = compaction.get("firstKeptEntryId") == "" and js_truthy(through)
    return through if snapshot else None


def _summary(compaction: Record, branch: list[Record]) -> Message:
    """The compaction-summary message, keys in the agent's order, present only when set."""
    entry = compaction.entry if compaction.entry is not None else {}
    summary: Message = {"role": "compactionSummary"}
    for key in ("summary", "shortSummary", "tokensBefore", "tokensAfter", "method"):
        if key in entry:
            summary[key] = entry[key]
    anthropic = _anthropic_compaction(compaction)
    payload = _openai_history(compaction) or anthropic
    if payload is not None:
        summary["providerPayload"] = payload
    if "warning" in entry:
        summary["warning"] = entry["warning"]
    if anthropic is not None:
        # History is rewritten just before the first entry kept: a later mark would make the
        # agent strip the signed thinking of the turns it keeps.
        kept = _first_retained(branch, branch.index(compaction))
        kept_time = js_time(kept.stamp) if kept is not None else None
        if kept_time is not None:
            summary["historyRewriteAt"] = kept_time - 1
    summary["timestamp"] = entry_time(entry)
    return summary


def _first_retained(branch: list[Record], compaction: int) -> Record | None:
    """The first entry an Anthropic compaction keeps: its ``firstKeptEntryId`` before it, else
    a snapshot's entry after the one it replays through, else the entry after it."""
    entry = branch[compaction].entry or {}
    kept = kept_from(branch, compaction, entry.get("firstKeptEntryId"))
    through = snapshot_through(entry)
    if kept == compaction and through is not None:
        kept = kept_from(branch, compaction, through, 1)
    if kept < compaction:
        return branch[kept]
    return branch[compaction + 1] if compaction + 1 < len(branch) else None


def _emits(record: Record) -> bool:
    if record.type == "message":
        facts = record.facts
        return record.has_message and facts is not None and not facts.superseded
    entry = record.entry
    if entry is None:
        return False
    if record.type == "branch_summary":
        return js_truthy(entry.get("summary"))
    if record.type == "custom_message":
        custom_type = entry.get("customType")
        hidden = isinstance(custom_type, str) and custom_type in HIDDEN_CUSTOM_TYPES
        return not hidden and isinstance(entry.get("content"), (str, list))
    return False


def _is_result(record: Record) -> bool:
    return record.facts is not None and record.facts.role == "toolResult"


def _strip_unanswered(emitted: list[Record]) -> tuple[list[Record], dict[str, Change]]:
    """Clean-up pass 1: tool calls that no tool result in the list answers are removed.

    Also notes, in the same walk, the Copilot turns that change as omp loads them.
    """
    answered = set()
    for record in emitted:
        facts = record.facts
        if facts is not None and facts.role == "toolResult":
            answered.add(facts.answers)
    answered.discard(UNPAIRABLE)
    gone: set[int] = set()  # positions
    changes: dict[str, Change] = {}
    for position, record in enumerate(emitted):
        facts = record.facts
        calls = facts.tool_call_ids if facts is not None else ()
        unanswered = None
        if calls and not answered.issuperset(calls):
            unanswered = frozenset(c for c in calls if c not in answered)
        if unanswered:
            assert facts is not None
            if not facts.keeps_content and unanswered.issuperset(calls):
                gone.add(position)  # nothing would be left of the message
                continue
            changes[record.id] = Change(strip=unanswered)
        elif facts is not None and facts.replays:
            changes[record.id] = Change()
    if not gone:
        return emitted, changes
    return [r for i, r in enumerate(emitted) if i not in gone], changes


def _drop_failed_turns(records: list[Record], changes: dict[str, Change]) -> list[Record]:
    """Clean-up pass 2: failed assistant turns go, with the later results of their tool calls.

    Walked from the end, as the agent does, so that "the next message" is the next one still
    in the list.
    """
    failed = [r.facts for r in records if r.facts and r.facts.stop_reason in FAILED_STOP_REASONS]
    if not failed:
        return records  # most branches: nothing to walk, nothing made for it
    count = len(records)
    alive = [True] * count
    skip = list(range(count + 1))  # skip[i] leads towards the first alive index >= i

    def next_alive(index: int) -> int:
        root = index
        while root < count and not alive[root]:
            root = skip[root]
        while index < count and skip[index] != root:  # path compression
            skip[index], index = root, skip[index]
        return root

    def drop(index: int) -> None:
        alive[index] = False
        skip[index] = index + 1

    # The results of the calls of failed turns, the only ones looked up.
    calls_of_failed = {call for facts in failed for call in facts.tool_call_ids}
    results: dict[CallId, list[int]] = {}
    for index, record in enumerate(records):
        if _is_result(record) and record.facts.answers in calls_of_failed:  # type: ignore[union-attr]
            results.setdefault(record.facts.answers, []).append(index)  # type: ignore[union-attr]

    for index in range(count - 1, -1, -1):
        facts = records[index].facts
        if facts is None or facts.stop_reason not in FAILED_STOP_REASONS:
            continue
        following = next_alive(index + 1)
        if following < count and _is_interrupted_thinking(records[following]):
            continue
        drop(index)
        change = changes.get(records[index].id)
        calls = set(facts.tool_call_ids) - (change.strip if change else frozenset())
        calls.discard(UNPAIRABLE)
        for call in calls:
            for position in results.get(call, ()):
                if position > index:
                    drop(position)
    return [record for record, keep in zip(records, alive, strict=True) if keep]


def _is_interrupted_thinking(record: Record) -> bool:
    if record.facts is not None:
        return record.facts.role == "custom" and record.facts.custom_type == INTERRUPTED_THINKING
    return record.entry is not None and _custom_type(record.entry) == INTERRUPTED_THINKING


def _custom_type(entry: Entry) -> str:
    custom_type = entry.get("customType")
    return custom_type if isinstance(custom_type, str) and custom_type else DEFAULT_CUSTOM_TYPE


def _loaded(message: Message, facts: MessageFacts) -> Message:
    """A message as omp holds it after loading: a Copilot turn's replay data dropped."""
    if not facts.replays:
        return message
    loaded = {k: v for k, v in message.items() if k != "providerPayload"}
    if isinstance(loaded.get("content"), list):
        loaded["content"] = [without_signature(block) for block in loaded["content"]]
    return loaded


def _custom(entry: Entry) -> Message:
    display = entry.get("display")
    custom: Message = {
        "role": "custom",
        "customType": _custom_type(entry),
        "content": entry.get("content"),
        "display": display if isinstance(display, bool) else False,
    }
    if "details" in entry:
        custom["details"] = entry["details"]
    if "attribution" in entry:
        custom["attribution"] = "user" if entry["attribution"] == "user" else "agent"
    custom["timestamp"] = entry_time(entry)
    return custom


# --- the files its <files> block lists ----------------------------------------------------------
# One rule for both of ours: a new session's block (``handoff.facts``) and the in-place
# compaction's details (``cut``). The agent's own: ``extractFileOpsFromMessage``,
# ``splitReadSelector`` and ``computeFileLists`` in pi-agent-core's compaction/utils.ts, the
# same in 18.2.3 and 18.3.4 (held to their output by tests/test_omp.py, fixture
# tests/fixtures/files/omp-file-lists.json, made by oracles/files.py).

_RANGE = r"L?[0-9]+(?:(?:[-+]|\.\.)L?[0-9]+|-|\.\.)?"  # JavaScript's \d: ASCII digits
_RANGES = re.compile(rf"{_RANGE}(?:,{_RANGE})*", re.IGNORECASE)
_RAW = re.compile("raw", re.IGNORECASE)
_SELECTOR = re.compile(rf"(?:{_RANGE}(?:,{_RANGE})*|raw|conflicts)", re.IGNORECASE)


class FileOperation(NamedTuple):
    """A file one tool call read, or wrote or edited."""

    path: str
    written: bool


def file_operation(tool: Any, arguments: Any) -> FileOperation | None:
    """The file a call of ``tool`` with ``arguments`` read or changed, if any: a ``read``'s
    path without its selector, a ``write``'s or ``edit``'s as it is; a ``scheme://`` resource
    is none."""
    path = arguments.get("path") if isinstance(arguments, dict) else None
    if not isinstance(path, str) or not path or is_url(path):
        return None
    if tool == "read":
        return FileOperation(strip_read_selector(path), False)
    return FileOperation(path, True) if tool in ("write", "edit") else None


def file_operations(message: Any) -> tuple[FileOperation, ...]:
    """The files an assistant turn's tool calls read or changed, in order."""
    if _role(message) != "assistant" or not isinstance(message.get("content"), list):
        return ()
    found: list[FileOperation] = []
    for block in message["content"]:
        if not isinstance(block, dict) or block.get("type") != "toolCall" or "name" not in block:
            continue
        operation = file_operation(block["name"], block.get("arguments"))
        if operation is not None:
            found.append(operation)
    return tuple(found)


def listed_files(details: Any) -> tuple[list[str], list[str]]:
    """The files read and those changed that a compaction's ``details`` list, as the agent
    takes them over into the next one (a read path without its selector, no resources)."""
    if not isinstance(details, dict):
        return [], []
    read, modified = (_paths(details.get(key)) for key in ("readFiles", "modifiedFiles"))
    return [strip_read_selector(path) for path in read], modified


def _paths(files: Any) -> list[str]:
    listed = files if isinstance(files, list) else []
    return [path for path in listed if isinstance(path, str) and not is_url(path)]


def strip_read_selector(path: str) -> str:
    """A read tool's path without its trailing selector (``:50-200``, ``:raw``,
    ``:1-50:raw``, ``:conflicts``), by the read tool's own grammar: one selector, or a range
    and ``raw`` in either order, after a colon that is not the path's first character."""
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


def ends_with_exchange(entries: list[Entry]) -> bool:
    """Whether the last entries of a file of the pi family (its last objects, in order) are a
    recorded handoff: our prompt, then the document answering it (then perhaps the session's
    own model named again), or our in-place handoff, a compaction of method ``handoff``."""
    entries = entries[-3:]
    if len(entries) == 3 and entries[-1].get("type") == "model_change":
        entries = entries[:-1]  # the session's own model named again after the answer
    entries = entries[-2:]
    leaf = entries[-1] if entries else {}
    if leaf.get("type") == "compaction":
        return bool(leaf.get("method") == HANDOFF_TYPE)
    if len(entries) < 2 or leaf.get("parentId") != entries[0].get("id"):
        return False
    asked, answered = (e.get("message") for e in entries)
    if not (isinstance(asked, dict) and isinstance(answered, dict)):
        return False
    roles = (asked.get("role"), answered.get("role"))
    return roles == ("user", "assistant") and is_handoff_prompt(text_of(asked.get("content")))


# --- its in-place handoff: the cut ------------------------------------------------------------


KEEP_RECENT_TOKENS = 20_000
"""The handoff method's ``compaction.keepRecentTokens``, oh-my-pi's default."""
IMAGE_TOKENS = 1_200
"""What the agent charges an image, which has no text to count."""
FRAME_TOKENS = 5_024
"""What it charges a snapcompact frame of a compaction summary."""

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
    previous = last_index(branch, "compaction")
    reset = last_index(branch, "reset_boundary")
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
        for operation in operations:
            (written if operation.written else read)[operation.path] = None
    modified = set(written)
    only_read = [p for p in read if p not in modified]
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


@dataclass(frozen=True)
class _Compaction:
    """oh-my-pi's ``/handoff`` of a branch (``Agent.compaction``): its compaction entry, chained
    from the leaf."""

    cut: Cut
    branch: list[Record] = field(repr=False)
    taken: Container[str] = field(repr=False)
    """The session's entry ids, which the new entry's must not be."""

    @property
    def first_kept_entry_id(self) -> str:
        return self.cut.first_kept_entry_id

    @property
    def tokens_before(self) -> int | float:
        return self.cut.tokens_before

    @property
    def kept(self) -> int:
        return self.cut.kept

    def write(self, document: str, at: str, mask: Mask) -> Compacted:
        leaf = self.branch[-1].id
        entry = compaction_entry(self.cut, document, new_entry_id(self.taken), leaf, at)
        entry = with_tokens_after(self.branch, entry)
        # Its <files> block and details are made of the session's paths, unmasked.
        entry["summary"] = mask(entry["summary"])
        entry["details"] = mask(entry["details"])
        return Compacted([entry], entry["id"], entry["tokensAfter"])


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
        loaded_facts=None,
        written_stamp=entry["timestamp"],
    )
    context = _context([*branch, record])
    return sum(message_tokens(m, encrypted=False) for m in context.messages())


# --- counting, as the agent's Tokenizer does with no model ------------------------------------


def message_tokens(message: Any, encrypted: bool = True) -> int:
    """One message's tokens: each of its texts estimated alone, a fixed charge per image.
    ``encrypted``: count thinking signatures and other opaque reasoning too."""
    if not isinstance(message, dict):
        return 0
    role, content = message.get("role"), message.get("content")
    if role == "bashExecution":
        texts = [message.get(k) for k in ("command", "output")]
        return sum(quarter_tokens(t) for t in texts if isinstance(t, str))
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
    return extra + sum(quarter_tokens(t) for t in fragments if isinstance(t, str))


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
    files: list[tuple[FileOperation, ...]]


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
        window.files.append(file_operations(message))
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
    """``isTurnStartEntry``: a user's message or command, a custom message, a branch's
    summary."""
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
    if entry is None or js_truthy(entry.get("fromExtension")):
        return {}, {}
    read, written = listed_files(entry.get("details"))
    return dict.fromkeys(read), dict.fromkeys(written)


def _index_of(branch: list[Record], entry_id: Any) -> int:
    return next((i for i, r in enumerate(branch) if r.id == entry_id), -1)


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
