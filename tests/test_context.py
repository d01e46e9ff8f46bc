"""The context builder against the real agent's contexts, and each of its rules on small trees."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from handoff_cli.agents import OMP, PI, PI_FAMILY, build_context
from handoff_cli.agents.context import kept_where
from handoff_cli.sessions.js import js_time
from handoff_cli.sessions.jsonl import Verbatim, dumps
from handoff_cli.sessions.session import load_session, with_facts
from handoff_cli.sessions.tree import branch, leaf

from . import sessiongen
from .conftest import (
    CONTEXT_FIXTURES,
    FIXTURES,
    OMP183,
    OMP_CONTEXT_FIXTURES,
    PI_CONTEXT_FIXTURES,
    Entries,
    context_of,
    key_orders,
    omp183_context,
    printed,
    tool_call,
    write_session,
)


def messages_of(path: Path, agent: str = OMP) -> list[dict[str, Any]]:
    return list(context_of(path, agent=agent).messages())


def pi_style_model(path: Path) -> str | None:
    """The model of the last pi-style model_change on the branch, which omp ignores and we read."""
    session = load_session(path)
    model = None
    for record in branch(session, leaf(session)):
        entry = record.entry
        if record.type == "model_change" and entry and "model" not in entry:
            model = f"{entry['provider']}/{entry['modelId']}"
        elif record.type == "model_change" and entry:
            model = None
    return model


@pytest.mark.parametrize("path", OMP_CONTEXT_FIXTURES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_context_matches_the_agent(path: Path) -> None:
    """oh-my-pi 18.3.4's own buildSessionContext, kept for every fixture it opens
    (``tests/fixtures/omp183``): message for message, key order included."""
    expected = orjson.loads(omp183_context(path).read_bytes())
    context = context_of(path)
    got = list(context.messages())
    assert got == expected["messages"]
    # Key order too: a message must serialise as the agent's does.
    assert key_orders(got) == key_orders(expected["messages"])
    assert context.thinking_level == expected["thinkingLevel"]
    assert context.model == (pi_style_model(path) or expected["model"])


# The snapshot cases that 18.2.3 and 18.3.4 read alike: no payload, or one without content, and
# a later local compaction.
READ_ALIKE = {"snapshot-without-payload", "snapshot-payload-without-content"}
READ_ALIKE |= {"snapshot-then-compaction"}


def test_where_the_releases_agree_nothing_changed() -> None:
    """Every context oh-my-pi 18.2.3 built (``*.context.json``, and the snapshot cases'
    ``.omp1823-context.json``) is still ours wherever 18.3.4 builds the same one; where it
    does not, ours is 18.3.4's. They differ only on what 18.3 reads anew: an Anthropic
    compaction's ``historyRewriteAt`` and ``signature``, and snapshots."""
    snapshots = sorted((OMP183 / "snapshot").glob("*.jsonl"))
    releases = [(p, p.with_suffix(".context.json")) for p in CONTEXT_FIXTURES]
    releases += [(p, p.with_suffix(".omp1823-context.json")) for p in snapshots]
    differ = set()
    for path, old in releases:
        before = orjson.loads(old.read_bytes())
        after = orjson.loads(omp183_context(path).read_bytes())
        if before != after or key_orders(before) != key_orders(after):
            differ.add(str(path.relative_to(FIXTURES)))
        ours, model = printed(path, OMP), after.pop("model")
        assert ours.pop("model") == (pi_style_model(path) or model), path
        assert ours == after, path
        assert key_orders(ours) == key_orders(after), path
    assert len(CONTEXT_FIXTURES) >= 39 and len(snapshots) == 19
    assert differ == {"edge/anthropic-compaction.jsonl"} | {
        str(p.relative_to(FIXTURES)) for p in snapshots if p.stem not in READ_ALIKE
    }


@pytest.mark.parametrize("path", PI_CONTEXT_FIXTURES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_pi_context_matches_pi(path: Path) -> None:
    """pi's own buildSessionContext (1.6.0), kept beside each file pi opens: the whole object,
    message for message, key order included."""
    expected = orjson.loads(path.with_suffix(".pi-context.json").read_bytes())
    got = printed(path, PI)
    assert got == expected
    assert key_orders(got) == key_orders(expected)


def test_fixtures_cover_every_dialect() -> None:
    names = {p.name.split("-")[0] for p in CONTEXT_FIXTURES}
    assert {"omp", "pi", "v1", "v2"} <= names
    assert len([p for p in CONTEXT_FIXTURES if p.parent.name == "edge"]) == 17
    # pi's contexts: the real pi sessions, and generated ones that show every pi rule.
    folders = {p.parent.name for p in PI_CONTEXT_FIXTURES}
    assert {"pi", "pi-generated", "generated", "edge"} <= folders
    assert len([p for p in PI_CONTEXT_FIXTURES if p.parent.name == "pi-generated"]) >= 10


def test_pi_style_model_change_is_read(tmp_path: Path, entries: Entries) -> None:
    entries.assistant("hi")
    entries.add("model_change", provider="openai", modelId="gpt-4o")
    entries.assistant("still answered by the old model's record")
    context = context_of(write_session(tmp_path / "s.jsonl", entries.items))
    assert context.model == "openai/gpt-4o"


def test_model_falls_back_to_the_last_assistant(tmp_path: Path, entries: Entries) -> None:
    entries.assistant("a")
    entries.message({"role": "assistant", "provider": "openai", "model": "o3", "content": []})
    assert context_of(write_session(tmp_path / "s.jsonl", entries.items)).model == "openai/o3"


def test_model_change_for_another_role_does_not_count(tmp_path: Path, entries: Entries) -> None:
    entries.add("model_change", model="openai/gpt-4o-mini", role="smol")
    entries.assistant("a")
    context = context_of(write_session(tmp_path / "s.jsonl", entries.items))
    assert context.model == "anthropic/claude-sonnet-4-5"


def test_no_model_and_default_thinking(tmp_path: Path, entries: Entries) -> None:
    entries.user("hi")
    entries.add("thinking_level_change", thinkingLevel=None)
    context = context_of(write_session(tmp_path / "s.jsonl", entries.items))
    assert (context.model, context.thinking_level) == (None, "off")


def test_compaction_keeps_from_first_kept_entry(tmp_path: Path, entries: Entries) -> None:
    entries.user("old")
    kept = entries.user("kept")
    entries.add("compaction", summary="S", firstKeptEntryId=kept, tokensBefore=10)
    entries.user("new")
    got = messages_of(write_session(tmp_path / "s.jsonl", entries.items))
    assert [m.get("content", m.get("summary")) for m in got] == ["S", "kept", "new"]
    assert got[0] == {
        "role": "compactionSummary",
        "summary": "S",
        "tokensBefore": 10,
        "timestamp": js_time(entries.items[2]["timestamp"]),
    }


def test_compaction_whose_kept_entry_is_off_the_branch_keeps_nothing(
    tmp_path: Path, entries: Entries
) -> None:
    root = entries.user("root")
    off = entries.user("abandoned")
    entries.user("on the branch", parent=root)
    entries.add("compaction", summary="S", firstKeptEntryId=off, tokensBefore=1)
    entries.user("after")
    got = messages_of(write_session(tmp_path / "s.jsonl", entries.items))
    assert [m["role"] for m in got] == ["compactionSummary", "user"]


def test_only_the_last_compaction_counts(tmp_path: Path, entries: Entries) -> None:
    first = entries.user("a")
    entries.add("compaction", summary="S1", firstKeptEntryId=first, tokensBefore=1)
    kept = entries.user("b")
    entries.add(
        "compaction",
        summary="S2",
        firstKeptEntryId=kept,
        tokensBefore=2,
        shortSummary="s",
        tokensAfter=1,
        method="llm",
        details={"x": 1},
    )
    got = messages_of(write_session(tmp_path / "s.jsonl", entries.items))
    assert [m.get("summary", m.get("content")) for m in got] == ["S2", "b"]
    assert list(got[0]) == [
        "role",
        "summary",
        "shortSummary",
        "tokensBefore",
        "tokensAfter",
        "method",
        "timestamp",
    ]


def test_reset_boundary_after_compaction_starts_afresh(tmp_path: Path, entries: Entries) -> None:
    kept = entries.user("a")
    entries.add("compaction", summary="S", firstKeptEntryId=kept, tokensBefore=1)
    entries.add("reset_boundary")
    entries.user("fresh")
    got = messages_of(write_session(tmp_path / "s.jsonl", entries.items))
    assert got == [{"role": "user", "content": "fresh", "timestamp": 1}]


def test_reset_boundary_before_compaction_is_superseded(tmp_path: Path, entries: Entries) -> None:
    entries.user("a")
    entries.add("reset_boundary")
    kept = entries.user("b")
    entries.add("compaction", summary="S", firstKeptEntryId=kept, tokensBefore=1)
    got = messages_of(write_session(tmp_path / "s.jsonl", entries.items))
    assert [m["role"] for m in got] == ["compactionSummary", "user"]


def test_branch_summary_and_custom_messages(tmp_path: Path, entries: Entries) -> None:
    entries.user("a")
    entries.add("branch_summary", fromId="root", summary="went elsewhere")
    entries.add("branch_summary", fromId="root", summary="")
    entries.custom_message("", "c", display="yes", attribution="weird", timestamp="bad date")
    entries.custom_message("prewalk-plan", "x")
    entries.custom_message("n", 5)
    got = messages_of(write_session(tmp_path / "s.jsonl", entries.items))
    assert got[1] == {
        "role": "branchSummary",
        "summary": "went elsewhere",
        "fromId": "root",
        "timestamp": js_time(entries.items[1]["timestamp"]),
    }
    assert got[2] == {
        "role": "custom",
        "customType": "custom-message",
        "content": "c",
        "display": False,
        "attribution": "agent",
        "timestamp": None,
    }
    assert len(got) == 3  # the empty summary, the hidden type and the bad content are left out


def test_retried_and_empty_failed_turns_are_skipped(tmp_path: Path, entries: Entries) -> None:
    entries.user("a")
    entries.assistant("first try", retryRecovery={"attempt": 1})
    entries.assistant({"type": "text", "text": "  "}, stop="error")
    entries.assistant("answer")
    got = messages_of(write_session(tmp_path / "s.jsonl", entries.items))
    assert [m["content"] if m["role"] == "user" else m["content"][0]["text"] for m in got] == [
        "a",
        "answer",
    ]


def test_unanswered_tool_calls_are_stripped(tmp_path: Path, entries: Entries) -> None:
    entries.user("a")
    entries.assistant(
        {"type": "thinking", "thinking": "t", "thinkingSignature": "sig"},
        {"type": "redactedThinking", "data": "r"},
        "calling",
        tool_call("answered"),
        tool_call("dangling"),
        stop="toolUse",
    )
    entries.result("answered")
    entries.assistant(tool_call("only-dangling"), stop="toolUse")
    got = messages_of(write_session(tmp_path / "s.jsonl", entries.items))
    assert [m["role"] for m in got] == ["user", "assistant", "toolResult"]
    assert got[1]["content"] == [
        {"type": "thinking", "thinking": "t"},
        {"type": "text", "text": "calling"},
        tool_call("answered"),
    ]
    assert list(got[1]) == list(entries.items[1]["message"])


def test_failed_turns_go_with_their_later_results(tmp_path: Path, entries: Entries) -> None:
    entries.user("a")
    entries.assistant("trying", tool_call("c1"), stop="aborted")
    entries.result("c1")
    entries.assistant("again", tool_call("c2"), stop="error")
    entries.result("c2")
    entries.custom_message("interrupted-thinking")
    got = messages_of(write_session(tmp_path / "s.jsonl", entries.items))
    # Each failed turn is followed by its own result, not by "interrupted-thinking": both go.
    assert [m["role"] for m in got] == ["user", "custom"]


def test_failed_turn_followed_by_interrupted_thinking_stays(
    tmp_path: Path, entries: Entries
) -> None:
    entries.user("a")
    entries.assistant("thinking hard", stop="aborted")
    entries.custom_message("interrupted-thinking")
    got = messages_of(write_session(tmp_path / "s.jsonl", entries.items))
    assert [m["role"] for m in got] == ["user", "assistant", "custom"]


def test_v1_compaction_index_and_v2_hook_message(tmp_path: Path) -> None:
    v1 = write_session(
        tmp_path / "v1.jsonl",
        [
            {
                "type": "message",
                "timestamp": "2026-01-01T00:00:00.000Z",
                "message": {"role": "user", "content": "one", "timestamp": 1},
            },
            {
                "type": "message",
                "timestamp": "2026-01-01T00:00:01.000Z",
                "message": {"role": "user", "content": "two", "timestamp": 2},
            },
            {
                "type": "compaction",
                "timestamp": "2026-01-01T00:00:02.000Z",
                "summary": "S",
                "firstKeptEntryIndex": 2,
                "tokensBefore": 5,
            },
        ],
        header={
            "type": "session",
            "id": "old",
            "timestamp": "2026-01-01T00:00:00.000Z",
            "cwd": "/x",
        },
    )
    assert [m.get("content", m.get("summary")) for m in messages_of(v1)] == ["S", "two"]
    v2 = write_session(
        tmp_path / "v2.jsonl",
        [
            {
                "type": "message",
                "id": "a",
                "parentId": None,
                "timestamp": "2026-01-01T00:00:00.000Z",
                "message": {
                    "role": "hookMessage",
                    "customType": "h",
                    "content": "x",
                    "display": True,
                    "timestamp": 1,
                },
            }
        ],
        header={**{"type": "session", "version": 2, "id": "v2", "cwd": "/x"}},
    )
    assert messages_of(v2) == [
        {"role": "custom", "customType": "h", "content": "x", "display": True, "timestamp": 1}
    ]


def test_context_holds_only_what_it_emits(tmp_path: Path, entries: Entries) -> None:
    for number in range(50):
        entries.user(f"old {number}")
    kept = entries.user("kept")
    entries.add("compaction", summary="S", firstKeptEntryId=kept, tokensBefore=1)
    context = context_of(write_session(tmp_path / "s.jsonl", entries.items))
    assert [m["summary"] for m in context.head] == ["S"]
    assert [r.id for r in context.records] == [kept]
    assert len(context) == 2


def test_serialized_passes_unchanged_messages_through(tmp_path: Path, entries: Entries) -> None:
    entries.user("a")
    entries.assistant("calling", tool_call("dangling"), stop="toolUse")
    context = context_of(write_session(tmp_path / "s.jsonl", entries.items))
    untouched, stripped = context.serialized()
    assert isinstance(untouched, Verbatim)  # written as loaded, never parsed again
    assert stripped == list(context.messages())[1]
    assert orjson.loads(dumps(list(context.serialized()))) == list(context.messages())


@pytest.mark.parametrize("dialect", ["omp", "pi", "v2", "v1"])
def test_generated_sessions_build_consistently(tmp_path: Path, dialect: str) -> None:
    """Random trees of every dialect (the generator behind the differential tests against the
    agents): every context builds by both agents' rules, its two outputs agree, and in omp's
    no unanswered call survives."""
    for seed in range(40):
        path = tmp_path / f"{dialect}-{seed}.jsonl"
        path.write_bytes(sessiongen.generate(seed, dialect))
        for agent in PI_FAMILY:
            context = context_of(path, agent=agent)
            messages = list(context.messages())
            assert orjson.loads(dumps(list(context.serialized()))) == messages
        messages = messages_of(path, OMP)
        answered = {m.get("toolCallId") for m in messages if m["role"] == "toolResult"}
        for message in messages:
            if message["role"] == "assistant":
                blocks = message.get("content") or []
                calls = [b for b in blocks if b.get("type") == "toolCall"]
                assert all(call.get("id") in answered for call in calls)


# --- pi's rules, each on a small tree ----------------------------------------------------------


def test_pi_keeps_failed_turns_and_unanswered_calls(tmp_path: Path, entries: Entries) -> None:
    entries.user("a")
    entries.assistant("trying", tool_call("c1"), stop="aborted")
    entries.result("c1")
    entries.assistant("calling", tool_call("dangling"), stop="toolUse")
    entries.assistant("first try", retryRecovery={"attempt": 1}, stop="error")
    path = write_session(tmp_path / "s.jsonl", entries.items)
    pi = messages_of(path, PI)
    assert [m["role"] for m in pi] == ["user", "assistant", "toolResult", "assistant", "assistant"]
    assert pi[3]["content"][1] == tool_call("dangling")
    assert [m["role"] for m in messages_of(path, OMP)] == ["user", "assistant"]


def test_pi_context_edit_leaves_out_or_replaces_content(tmp_path: Path, entries: Entries) -> None:
    asked = entries.user("question")
    answered = entries.assistant("answer")
    noted = entries.custom_message("note", "a note")
    gone = entries.user("a mistake")
    entries.add("context_edit", targetId=gone, replacement=None)
    entries.add("context_edit", targetId=asked, replacement={"content": "first"})
    entries.add("context_edit", targetId=asked, replacement={"content": "the latest edit wins"})
    entries.add("context_edit", targetId=answered, replacement={"content": "short"})
    entries.add("context_edit", targetId=noted, replacement={"content": "edited note"})
    got = messages_of(write_session(tmp_path / "s.jsonl", entries.items), PI)
    assert [m["content"] for m in got] == [
        "the latest edit wins",  # a string stays a string for users and custom messages
        [{"type": "text", "text": "short"}],  # ...and becomes one text block for the assistant
        "edited note",
    ]
    assert list(got[1]) == list(entries.items[1]["message"])  # only the content changed


def test_pi_context_edit_off_the_branch_or_summarised_counts_not(
    tmp_path: Path, entries: Entries
) -> None:
    first = entries.user("one")
    entries.add("context_edit", targetId=first, replacement=None)  # summarised below
    kept = entries.user("two")
    entries.add("context_edit", targetId=kept, replacement={"content": "two, edited"})
    entries.add("compaction", summary="S", firstKeptEntryId=kept, tokensBefore=1)
    fork = entries.user("three")
    entries.add("context_edit", targetId=fork, replacement=None)
    entries.user("four", parent=fork)  # a branch that leaves that edit behind
    got = messages_of(write_session(tmp_path / "s.jsonl", entries.items), PI)
    assert [m.get("content", m.get("summary")) for m in got] == [
        "S",
        "two, edited",
        "three",
        "four",
    ]


def test_pi_edit_without_a_replacement_is_passed_over(tmp_path: Path, entries: Entries) -> None:
    asked = entries.user("question")
    entries.add("context_edit", targetId=asked, replacement=None)
    entries.add("context_edit", targetId=asked)  # the latest edit, which pi fails to apply
    got = messages_of(write_session(tmp_path / "s.jsonl", entries.items), PI)
    assert [m["content"] for m in got] == ["question"]


def test_pi_compaction_system_message_and_older_compactions(
    tmp_path: Path, entries: Entries
) -> None:
    system = {"role": "system", "content": "prompt", "timestamp": 5}
    entries.message({**system, "content": "old prompt"})
    kept = entries.user("a")
    entries.add("compaction", summary="S1", firstKeptEntryId=kept, tokensBefore=1)
    entries.message(system)  # kept by the next compaction, but its own system message rules
    entries.user("b")
    entries.add(
        "compaction", summary="S2", firstKeptEntryId=kept, tokensBefore=2, systemMessage=system
    )
    entries.message({**system, "content": "later"})
    got = messages_of(write_session(tmp_path / "s.jsonl", entries.items), PI)
    assert got[:2] == [system, {"role": "compactionSummary", "summary": "S2", "tokensBefore": 2,
                                "timestamp": js_time(entries.items[5]["timestamp"])}]  # fmt: skip
    assert [m.get("content") for m in got[2:]] == ["a", "b", "later"]  # S1 adds nothing


def test_pi_edit_of_the_compaction_leaves_out_its_summary(tmp_path: Path, entries: Entries) -> None:
    kept = entries.user("a")
    compaction = entries.add(
        "compaction", summary="S", firstKeptEntryId=kept, tokensBefore=1, systemMessage={"x": 1}
    )
    entries.add("context_edit", targetId=compaction, replacement=None)
    got = messages_of(write_session(tmp_path / "s.jsonl", entries.items), PI)
    assert got == [{"role": "user", "content": "a", "timestamp": 1}]


def test_pi_messages_without_content_get_an_empty_one(tmp_path: Path, entries: Entries) -> None:
    entries.message({"role": "user", "timestamp": 1})
    entries.message({"role": "assistant", "content": None, "stopReason": "stop"})
    entries.message({"role": "system", "content": None, "timestamp": 2})
    entries.message({"role": "bashExecution", "command": "ls", "timestamp": 3})
    entries.custom_message("note", None)
    got = messages_of(write_session(tmp_path / "s.jsonl", entries.items), PI)
    assert [m.get("content") for m in got] == [[], [], "", None, []]
    assert list(got[0]) == ["role", "timestamp", "content"]  # added at the end, as JavaScript does


def test_pi_custom_messages_and_summaries_are_the_entries_fields(
    tmp_path: Path, entries: Entries
) -> None:
    entries.custom_message(None, "c", display="yes", attribution="weird", timestamp=None)
    entries.custom_message("prewalk-plan", 5)  # no type is hidden, no content refused
    del entries.items[-1]["display"]
    entries.add("branch_summary", summary="went elsewhere")
    del entries.items[-1]["timestamp"]
    got = messages_of(write_session(tmp_path / "s.jsonl", entries.items), PI)
    assert got == [
        {"role": "custom", "customType": None, "content": "c", "display": "yes", "timestamp": 0},
        {
            "role": "custom",
            "customType": "prewalk-plan",
            "content": 5,
            "timestamp": js_time(entries.items[1]["timestamp"]),
        },
        {"role": "branchSummary", "summary": "went elsewhere", "timestamp": None},
    ]


def test_pi_state_is_the_latest_change_or_turn(tmp_path: Path, entries: Entries) -> None:
    entries.add("model_change", provider="openai", modelId="gpt-4o")
    entries.assistant("answered by another model's record")
    path = write_session(tmp_path / "a.jsonl", entries.items)
    assert context_of(path, agent=PI).model == "anthropic/claude-sonnet-4-5"
    entries.add("model_change", model="openai/o3")  # omp's form: pi reads no provider in it
    entries.add("thinking_level_change")
    got = printed(write_session(tmp_path / "b.jsonl", entries.items), PI)
    assert list(got) == ["messages", "model"]  # a level named none: JSON leaves it out
    assert got["model"] == "undefined/undefined"


def test_a_window_sent_whole_is_its_branch_not_a_copy(tmp_path: Path, entries: Entries) -> None:
    entries.message({"role": "user", "content": "go"})
    entries.message({"role": "assistant", "content": [tool_call("c1")], "stopReason": "toolUse"})
    entries.message({"role": "toolResult", "toolCallId": "c1", "content": []})
    session = load_session(write_session(tmp_path / "s.jsonl", entries.items))
    path = branch(session, leaf(session, None))
    assert build_context(path, OMP).records is path  # the window, as it is: no copy made
    assert kept_where(path, lambda r: True) is path  # nothing dropped: nothing copied
    assert with_facts(path) is path  # every fact loaded already
    odd = kept_where(path, lambda r: r.facts is not None and r.facts.role != "assistant")
    assert [r.facts.role for r in odd if r.facts] == ["user", "toolResult"]
