"""The transcript an export is made of: what a reader sees of a branch, for every agent, and
what it holds of the context the real agents send (their recorded contexts in fixtures)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from handoff_cli.agents import claude, codex, load_session
from handoff_cli.document import PROMPT_OPENINGS, WRAPPER_CLOSE, WRAPPER_OPEN, wrap_document
from handoff_cli.export.transcript import (
    AGENT,
    ASSISTANT,
    COMPACTION,
    DOCUMENT,
    HANDED_OFF,
    HANDED_OFF_FROM,
    HANDED_OFF_IN_PLACE,
    MODEL,
    PROMPT,
    THINKING,
    THINKING_LEVEL,
    TOOL_CALL,
    USER,
    Fold,
    Mark,
    Note,
    Part,
    Text,
    Transcript,
    Turn,
    _strings,
    transcript_of,
)
from handoff_cli.handoff.redact import Redactor
from handoff_cli.sessions.tree import branch, leaf

from .conftest import FIXTURES, NOT_SESSIONS, Entries, omp183_context, tool_call, write_session

SECRET = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
"""A GitHub token's shape (fake): the masking finds it wherever it is."""


def made(path: Path, agent: str = "omp", redact: bool = False) -> Transcript:
    session = load_session(path)
    redactor = Redactor() if redact else None
    return transcript_of(session, branch(session, leaf(session)), agent, redactor)


def parts_of(path: Path, agent: str = "omp", redact: bool = False) -> list[Part]:
    return list(made(path, agent, redact).parts)


def session_of(tmp_path: Path, entries: Entries, **header: Any) -> Path:
    base = {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-01-01T00:00:00.000Z"}
    return write_session(tmp_path / "s.jsonl", entries.items, {**base, "cwd": "/p", **header})


def test_a_tool_call_holds_its_result_in_its_fold(tmp_path: Path, entries: Entries) -> None:
    entries.user("list them")
    entries.assistant("Two calls.", tool_call("c1"), tool_call("c2", "read"))
    entries.result("c2", "second")  # out of order: each still finds its own call
    entries.result("c1", "first")
    entries.assistant("Done.")
    parts = parts_of(session_of(tmp_path, entries))
    assert [type(p) for p in parts] == [Turn, Text, Turn, Text, Fold, Fold, Text]
    assert parts[2] == Turn(ASSISTANT, "2026-01-01T00:00:01.000Z")  # one turn for the whole run
    first, second = parts[4], parts[5]
    assert isinstance(first, Fold) and isinstance(second, Fold)
    assert first.summary == "bash: ls" and first.sections[-1].text == "first"
    assert second.summary == "read: ls" and second.sections[-1].text == "second"


def test_calls_without_results_and_results_without_calls(tmp_path: Path, entries: Entries) -> None:
    entries.user("go")
    entries.assistant(tool_call("c1"))
    entries.user("stop")  # the call never got its result
    entries.result("c9", "orphan")
    parts = parts_of(session_of(tmp_path, entries))
    call = next(p for p in parts if isinstance(p, Fold) and p.summary == "bash: ls")
    assert [s.label for s in call.sections] == ["command"]
    assert parts.index(call) < parts.index(Text("stop"))  # shown before what came next
    orphan = parts[-1]
    assert isinstance(orphan, Fold) and orphan.summary == "result of bash"
    assert orphan.sections[0].text == "orphan"


def test_thinking_is_folded_and_a_failed_turn_says_how_it_ended(
    tmp_path: Path, entries: Entries
) -> None:
    entries.user("think")
    entries.assistant(
        {"type": "thinking", "thinking": "hmm", "thinkingSignature": "sig"},
        {"type": "redactedThinking", "data": "opaque"},
        "answer",
        stop="error",
        errorMessage="upstream error",
    )
    parts = parts_of(session_of(tmp_path, entries))
    thinking = parts[3]
    assert isinstance(thinking, Fold) and thinking.kind == THINKING
    assert [s.text for s in thinking.sections] == ["hmm"]
    assert Note("thinking, kept encrypted by the provider") in parts
    assert parts[-1] == Note("the turn stopped (error): upstream error")
    assert "sig" not in "".join(s for p in parts for s in _strings(p))


def test_a_model_change_is_marked_once_and_never_at_the_start(
    tmp_path: Path, entries: Entries
) -> None:
    entries.add("model_change", model="anthropic/claude-sonnet-4-5")
    entries.add("thinking_level_change", thinkingLevel="high")
    entries.user("one")
    entries.assistant("a")  # the same model: no change
    entries.add("model_change", provider="openai", modelId="gpt-5")  # pi's spelling
    entries.add("thinking_level_change", thinkingLevel="low")
    entries.user("two")
    entries.assistant("b", provider="openai", model="gpt-5")
    entries.assistant("c")  # back to the first, by the answer alone
    marks = [p for p in parts_of(session_of(tmp_path, entries)) if isinstance(p, Mark)]
    assert [(m.kind, m.title) for m in marks] == [
        (MODEL, "Model: anthropic/claude-sonnet-4-5 → openai/gpt-5"),
        (THINKING_LEVEL, "Thinking level: low"),
        (MODEL, "Model: openai/gpt-5 → anthropic/claude-sonnet-4-5"),
    ]


def test_a_recorded_handoff_is_marked_with_its_document(tmp_path: Path, entries: Entries) -> None:
    entries.user("fix it")
    entries.assistant("fixed")
    entries.user(PROMPT_OPENINGS[0] + " A new session of the coding agent will continue…")
    entries.assistant("## Goal\n- fix it", provider="handoff", model="extractive")
    entries.add("model_change", model="anthropic/claude-sonnet-4-5")  # its own, named again
    parts = parts_of(session_of(tmp_path, entries))
    marks = [p for p in parts if isinstance(p, Mark)]
    assert [m.kind for m in marks] == [HANDED_OFF]  # the writer's model is no change
    document, prompt = marks[0].folds
    assert (document.kind, document.open) == (DOCUMENT, True)
    assert document.sections[0].text == "## Goal\n- fix it"
    assert prompt.kind == PROMPT and not prompt.open
    assert Turn(USER, "2026-01-01T00:00:02.000Z") not in parts  # the prompt is no one's turn


def test_a_handoff_prompt_not_answered_is_no_document(tmp_path: Path, entries: Entries) -> None:
    entries.user(PROMPT_OPENINGS[0])
    entries.user("never mind")  # the exchange broke off: what comes next is no document
    entries.assistant("ok")
    parts = parts_of(session_of(tmp_path, entries))
    assert not [p for p in parts if isinstance(p, Mark)]
    prompt = parts[1]
    assert isinstance(prompt, Fold) and prompt.summary == "a handoff prompt, not answered"
    assert parts[2:] == [
        Text("never mind"),
        Turn(ASSISTANT, "2026-01-01T00:00:02.000Z"),
        Text("ok"),
    ]


def test_a_session_handed_off_to_starts_from_its_document(tmp_path: Path, entries: Entries) -> None:
    entries.add("model_change", model="anthropic/claude-sonnet-4-5")
    entries.custom_message("handoff", wrap_document("## Goal\n- go on"))
    entries.user("go on")
    path = session_of(tmp_path, entries, parentSession="/old/session.jsonl")
    first = parts_of(path)[0]
    assert isinstance(first, Mark) and first.kind == HANDED_OFF_FROM
    assert first.title == "Handed off from /old/session.jsonl"
    assert first.folds[0].sections[0].text == "## Goal\n- go on"  # unwrapped


def test_compactions_and_an_in_place_handoff_are_marked(tmp_path: Path, entries: Entries) -> None:
    entries.user("one")
    first = entries.assistant("a")
    entries.add("compaction", summary="## Goal\nsummed", firstKeptEntryId=first, tokensBefore=1234)
    entries.user("two")
    entries.add("compaction", summary="## Goal\nthe doc", firstKeptEntryId=first, method="handoff")
    marks = [p for p in parts_of(session_of(tmp_path, entries)) if isinstance(p, Mark)]
    assert [(m.kind, m.title) for m in marks] == [
        (COMPACTION, "Compaction (1,234 tokens before)"),
        (HANDED_OFF_IN_PLACE, "Handed off in place: the document replaces what came before"),
    ]
    assert marks[0].folds[0].sections[0].text == "## Goal\nsummed"
    assert marks[1].folds[0].open


def test_context_the_agent_never_showed_is_folded_as_the_agents(
    tmp_path: Path, entries: Entries
) -> None:
    entries.user("hi")
    entries.custom_message("note", "an extension's note", display=False)
    entries.add("context_edit", targetId="e0000001", replacement={"content": "edited"})
    parts = parts_of(session_of(tmp_path, entries))
    assert Turn(AGENT, "2026-01-01T00:00:00.000Z") in parts
    folds = [p for p in parts if isinstance(p, Fold)]
    assert [f.summary for f in folds] == [
        "note message (not shown by the agent)",
        "context edit: an earlier message, as the model sees it from here on",
    ]
    assert [f.sections[0].text for f in folds] == ["an extension's note", "edited"]


# --- the four agents --------------------------------------------------------------------------


def kinds(parts: list[Part]) -> list[str]:
    return [p.kind for p in parts if isinstance(p, Mark)]


def test_claude_code_and_codex_sessions_handed_off_are_marked_both_ways() -> None:
    """Our handoffs' files, resumed by the real Claude Code 2.1.332 and Codex 0.171.0."""
    for agent in ("claude", "codex"):
        folder = FIXTURES / agent / "handoff"
        assert kinds(parts_of(folder / "tools-old.jsonl", agent))[-1:] == [HANDED_OFF]
        assert kinds(parts_of(folder / "tools-new.jsonl", agent))[:1] == [HANDED_OFF_FROM]


def test_claude_codes_queued_prompt_and_compaction() -> None:
    queued = parts_of(FIXTURES / "claude/hand/attachments.jsonl", "claude")
    at = queued.index(Text("queued text"))
    assert queued[at + 1] == Note("sent while the agent was at work")
    assert COMPACTION in kinds(parts_of(FIXTURES / "claude/made/compact.jsonl", "claude"))


def test_a_codex_rollout_reads_as_turns_with_its_calls_folded() -> None:
    parts = parts_of(FIXTURES / "codex/handoff/tools-old.jsonl", "codex")
    folds = [p for p in parts if isinstance(p, Fold) and p.kind == TOOL_CALL]
    assert folds and all(f.summary.startswith("bash: ") for f in folds)
    assert all(len(f.sections) == 2 for f in folds)  # each with its output


def test_the_header_names_agent_model_and_times() -> None:
    header = made(FIXTURES / "claude/made/tools.jsonl", "claude").header
    assert (header.agent, header.model) == ("Claude Code", "anthropic/claude-opus-5-5")
    assert header.created is not None and header.last is not None and header.created <= header.last
    assert header.cwd == "/tmp/handoff-oracle-claude/my_proj.v2"


# --- secrets ----------------------------------------------------------------------------------


def test_every_text_is_masked_and_a_secret_keeps_its_number(
    tmp_path: Path, entries: Entries
) -> None:
    entries.user(f"use {SECRET}")
    call = {
        "type": "toolCall",
        "id": "c1",
        "name": "bash",
        "arguments": {"command": f"gh {SECRET}"},
    }
    entries.assistant(call)
    entries.result("c1", f"token {SECRET} ok")
    path = session_of(tmp_path, entries, title=f"about {SECRET}")
    masked = made(path, redact=True)
    header = masked.header
    texts = [*_strings(header), *(s for p in masked.parts for s in _strings(p))]
    assert not any(SECRET in t for t in texts)
    # The title, the request, the call (its line and its command), the result.
    assert sum("[REDACTED:github-token:1]" in t for t in texts) == 5
    assert masked.masked() == 1
    kept = made(path)
    assert SECRET in kept.header.title and kept.masked() is None


# --- what the real agents send, the transcript holds ------------------------------------------


def kept_contexts() -> Iterator[tuple[Path, str, Any]]:
    """Each fixture with the context a real agent built of it: pi 1.6.0, oh-my-pi 18.3.4,
    Claude Code 2.1.332, Codex 0.171.0."""
    for path in sorted(FIXTURES.rglob("*.jsonl")):
        if path.name in NOT_SESSIONS:
            continue
        pi = path.with_suffix(".pi-context.json")
        if pi.exists():
            yield path, "pi", json.loads(pi.read_text("utf-8"))["messages"]
        omp = omp183_context(path)
        if omp.exists():
            yield path, "omp", json.loads(omp.read_text("utf-8"))["messages"]
        cc = path.with_suffix(".claude-context.json")
        if cc.exists():
            yield path, "claude", json.loads(cc.read_text("utf-8"))
        cx = path.with_name(path.name + ".codex-context.json")
        if cx.exists():
            yield path, "codex", json.loads(cx.read_text("utf-8"))["context"]


_TEXTS = frozenset({"text", "thinking", "summary", "output", "content"})
_ARGUMENTS = frozenset({"input", "arguments"})


def context_texts(value: Any) -> Iterator[str]:
    """The texts of an agent's context: what was said, thought, summarised, run and
    answered (tool calls' arguments too), not ids, names or signatures."""
    stack: list[tuple[str | None, Any]] = [(None, value)]
    while stack:
        key, item = stack.pop()
        if isinstance(item, str):
            if key in _TEXTS or key == "argument":
                yield item
            elif key == "arguments":  # Codex's: JSON text
                stack.append(("input", json.loads(item)))
        elif isinstance(item, dict):
            inner = "argument" if key in _ARGUMENTS else None
            stack += [(inner or k, v) for k, v in item.items()]
        elif isinstance(item, list):
            stack += [(key, v) for v in item]


SYNTHETIC = {
    *(line.strip() for line in (WRAPPER_OPEN + WRAPPER_CLOSE).split("\n")),
    claude.NO_RESPONSE,
    *(line.strip() for line in claude._QUEUED.split("\n")),
    codex.ABORTED,
    codex.IMAGE_OMITTED,
    codex.IMAGE_TOO_LARGE,
    codex.IMAGE_LOW,
    codex.IMAGE_REMOTE,
    claude.COMPACT_OPENING,
}
"""What the agents make themselves in what they send, and the wrapper of a handoff document
(the transcript shows the document itself): in no session's words."""
MADE_LIKE = re.compile(
    "|".join(
        (
            re.escape(claude._TRANSCRIPT).replace(r"\{\}", ".+"),  # our in-place summary's
            "\u2026[0-9]+ tokens truncated\u2026",  # Codex's cut of a message it compacts
        )
    )
)
"""Lines of that kind with the session's own in them (a path, a count)."""


@pytest.mark.heavy  # a whole corpus: make test-heavy
def test_the_transcript_holds_every_text_the_real_agents_send() -> None:
    """Every line of every text of the contexts the real agents built of the fixtures (what was
    said, thought, summarised, called and answered) is in the transcript of the same branch,
    but for what an agent writes itself (``SYNTHETIC``)."""
    checked: dict[str, int] = {}
    missing: list[str] = []
    for path, agent, context in kept_contexts():
        made_ = made(path, agent)
        whole = "\n".join([*_strings(made_.header), *(s for p in made_.parts for s in _strings(p))])
        for text in context_texts(context):
            for line in filter(None, (line.strip() for line in text.split("\n"))):
                checked[agent] = checked.get(agent, 0) + 1
                made_here = line in SYNTHETIC or MADE_LIKE.fullmatch(line)
                if line not in whole and not made_here:
                    missing.append(f"{path.relative_to(FIXTURES)} ({agent}): {line[:80]}")
    assert not missing, "\n".join(missing[:20])
    assert checked.keys() == {"pi", "omp", "claude", "codex"}
    assert sum(checked.values()) > 50_000, checked
