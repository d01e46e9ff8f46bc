"""The views for people (render.py): excerpts, labels, the branch, tree, context and list views,
and the handoff's progress on stderr.

In process and fast: sessions are built with ``Entries`` and printed into pytest's captured
stdout and stderr, which are not terminals, so rich prints plain, unwrapped lines.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from handoff_cli.agents import OMP, build_context, get
from handoff_cli.agents import load_session as load_any
from handoff_cli.catalog import Catalog, SessionSummary
from handoff_cli.cli.render import (
    HandoffProgress,
    _human_size,
    describe_entry,
    describe_message,
    labels_of,
    show_branch,
    show_context,
    show_list,
    show_list_tree,
    show_tree,
)
from handoff_cli.handoff.report import Reporter
from handoff_cli.sessions.session import Record, Session, load_session
from handoff_cli.sessions.tree import branch, leaf

from .conftest import EXAMPLES, FIXTURES, HEADER, PROJECT, Entries, tool_call, write_session

SESSION_ID = str(HEADER["id"])


@pytest.fixture(autouse=True)
def _not_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Captured output is not a terminal, whatever the developer's environment tells rich."""
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        monkeypatch.delenv(name, raising=False)


def load(tmp_path: Path, entries: Entries, header: dict[str, Any] | None = None) -> Session:
    return load_session(write_session(tmp_path / "s.jsonl", entries.items, header))


def current(session: Session, leaf_id: str | None = None) -> tuple[list[Record], Record | None]:
    """The branch ending at ``leaf_id`` (default: the last entry) and its tip."""
    tip = leaf(session, leaf_id)
    return branch(session, tip), tip


def printed(capsys: pytest.CaptureFixture[str]) -> list[str]:
    """The lines printed on stdout; nothing may go to stderr."""
    captured = capsys.readouterr()
    assert captured.err == ""
    return captured.out.splitlines()


def forked(entries: Entries) -> None:
    """Eight entries: a tool exchange, then a fork at e0000004 into an old and a new path.

    The current branch (to e0000008) is e0000001-4, 7, 8; e0000007 labels e0000001 "start".
    """
    entries.user("Fix the flaky test")
    entries.assistant("Running ls", tool_call("c1"), stop="toolUse")
    entries.result("c1", "a.txt\nb.txt")
    fork = entries.assistant("Two files.")
    entries.user("old path")
    entries.assistant("old answer", stop="aborted")
    entries.add("label", parent=fork, targetId="e0000001", label="start")
    entries.user("new path")


# --- describe_message -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ({"role": "user", "content": "Fix the test"}, ("user", "Fix the test")),
        (
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Look"},
                    {"type": "image", "data": "AAAA", "mimeType": "image/png"},
                    {"type": "text", "text": "here"},
                ],
            },
            ("user", "Look here"),
        ),
        (
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "hmm"},
                    {"type": "text", "text": "Running ls"},
                    tool_call("c1"),
                    tool_call("c2", "read"),
                ],
                "stopReason": "toolUse",
            },
            ("assistant", "Running ls  → bash, read"),
        ),
        (
            {"role": "assistant", "content": [tool_call("c1", "edit")]},
            ("assistant", '→ edit {"command":"ls"}'),  # nothing else said: what it was given
        ),
        (
            {"role": "assistant", "content": [{"type": "toolCall", "id": "c1"}]},
            ("assistant", "→ ?"),
        ),
        (
            {"role": "assistant", "content": [{"type": "thinking", "thinking": "Check a.py"}]},
            ("assistant", "thinking: Check a.py"),
        ),
        (
            {"role": "assistant", "content": [{"type": "redactedThinking", "data": "ZmFrZQ=="}]},
            ("assistant", "thinking (redacted)"),
        ),
        ({"role": "assistant", "content": []}, ("assistant", "")),
        (
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "cut"}],
                "stopReason": "length",
            },
            ("assistant", "cut"),
        ),
        ({"role": "assistant", "content": "plain string"}, ("assistant", "plain string")),
        (
            {
                "role": "toolResult",
                "toolName": "bash",
                "content": [{"type": "text", "text": "a.txt"}],
                "isError": False,
            },
            ("toolResult", "bash: a.txt"),
        ),
        (
            {"role": "toolResult", "toolName": "bash", "content": "boom", "isError": True},
            ("toolResult", "bash (error): boom"),
        ),
        ({"role": "toolResult", "content": "done"}, ("toolResult", "?: done")),
        (
            {"role": "bashExecution", "command": "make test", "exitCode": 0, "output": "ok"},
            ("bashExecution", "$ make test: ok"),
        ),
        (
            {"role": "bashExecution", "command": "make test", "exitCode": 2, "output": "FAILED"},
            ("bashExecution", "$ make test (exit 2): FAILED"),
        ),
        (
            {"role": "bashExecution", "command": "sleep 9", "output": "killed"},
            ("bashExecution", "$ sleep 9: killed"),
        ),
        (
            {"role": "compactionSummary", "summary": "Earlier work", "tokensBefore": 9},
            ("compactionSummary", "Earlier work"),
        ),
        (
            {"role": "branchSummary", "summary": "Tried X", "fromId": "e1"},
            ("branchSummary", "Tried X"),
        ),
        (
            {"role": "custom", "customType": "note", "content": "Injected"},
            ("custom", "note: Injected"),
        ),
        ({"role": "developer", "content": "Be brief"}, ("developer", "Be brief")),
        ({"content": "no role"}, ("?", "no role")),
    ],
)
def test_describe_message_gives_the_role_and_an_excerpt(
    message: dict[str, Any], expected: tuple[str, str]
) -> None:
    assert describe_message(message) == expected


@pytest.mark.parametrize(
    ("stop", "expected"),
    [
        ("error", "[error] partial  → bash"),
        ("aborted", "[aborted] partial  → bash"),
        ("stop", "partial  → bash"),
        ("toolUse", "partial  → bash"),
        (["error"], "partial  → bash"),  # not a string: not a failed turn
        (None, "partial  → bash"),
    ],
)
def test_failed_assistant_turns_are_marked(stop: Any, expected: str) -> None:
    message = {
        "role": "assistant",
        "content": [{"type": "text", "text": "partial"}, tool_call("c1")],
        "stopReason": stop,
    }
    assert describe_message(message) == ("assistant", expected)


def test_a_message_that_is_not_an_object_has_no_role() -> None:
    for message in (None, "text", ["a", "b"], 3, True):
        assert describe_message(message) == ("?", ""), message


ODD_MESSAGES: list[Any] = [
    {"role": None},
    {"role": 5, "content": {"text": "x"}},
    {"role": "user", "content": [None, 7, "s", {"text": None}, {"type": "text"}]},
    {
        "role": "assistant",
        "content": [None, 7, "s", {"type": "toolCall", "name": None}, {"type": "text", "text": 5}],
        "stopReason": None,
    },
    {"role": "assistant", "content": {"type": "toolCall"}, "stopReason": {"error": 1}},
    {"role": "toolResult", "toolName": None, "content": 5, "isError": "yes"},
    {"role": "bashExecution", "command": None, "exitCode": "x", "output": [1]},
    {"role": "compactionSummary", "summary": None},
    {"role": "branchSummary"},
    {"role": "custom", "customType": None, "content": {"a": 1}},
]


def test_describe_message_never_crashes_on_odd_fields() -> None:
    for message in ODD_MESSAGES:
        role, excerpt = describe_message(message)
        assert isinstance(role, str) and role, message
        assert isinstance(excerpt, str), message


# --- describe_entry ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ({"type": "message", "message": {"role": "user", "content": "hi"}}, ("user", "hi")),
        ({"type": "message"}, ("?", "")),
        (
            {"type": "compaction", "summary": "Earlier work", "tokensBefore": 12345},
            ("compaction", "Earlier work (12,345 tokens before)"),
        ),
        ({"type": "compaction", "summary": "Earlier work"}, ("compaction", "Earlier work")),
        (
            {"type": "compaction", "summary": "Earlier work", "tokensBefore": "many"},
            ("compaction", "Earlier work"),
        ),
        (
            {"type": "branch_summary", "fromId": "e0000004", "summary": "Tried X"},
            ("branch summary", "from e0000004: Tried X"),
        ),
        (
            {
                "type": "custom_message",
                "customType": "note",
                "content": [{"type": "text", "text": "Injected"}],
            },
            ("custom message", "note: Injected"),
        ),
        (
            {"type": "model_change", "model": "anthropic/claude-sonnet-4-5"},
            ("model", "anthropic/claude-sonnet-4-5"),
        ),
        (
            {"type": "model_change", "provider": "openai", "modelId": "gpt-5"},
            ("model", "openai/gpt-5"),
        ),
        ({"type": "thinking_level_change", "thinkingLevel": "high"}, ("thinking", "high")),
        (
            {"type": "label", "targetId": "e0000001", "label": "start"},
            ("label", "start → e0000001"),
        ),
        ({"type": "label", "targetId": "e0000001"}, ("label", "(removed) → e0000001")),
        ({"type": "session_info", "name": "Refactor the parser"}, ("name", "Refactor the parser")),
        ({"type": "custom", "customType": "my-ext", "data": {"a": 1}}, ("custom", "my-ext")),
        ({"type": "mode_change", "mode": "plan"}, ("mode_change", "")),
        ({"id": "x"}, ("?", "")),
    ],
)
def test_describe_entry_gives_the_kind_and_an_excerpt(
    entry: dict[str, Any], expected: tuple[str, str]
) -> None:
    assert describe_entry(entry) == expected


ODD_ENTRIES: list[dict[str, Any]] = [
    {"type": 5},
    {"type": None},
    {"type": "message", "message": [1, 2]},
    {"type": "compaction", "summary": None, "tokensBefore": True},
    {"type": "compaction", "summary": ["a"], "tokensBefore": 10**30},
    {"type": "branch_summary"},
    {"type": "custom_message", "customType": 3, "content": None},
    {"type": "model_change", "model": {"x": 1}},
    {"type": "model_change", "model": ""},
    {"type": "thinking_level_change", "thinkingLevel": 5},
    {"type": "label", "targetId": None, "label": 7},
    {"type": "session_info", "name": None},
    {"type": "custom", "customType": []},
]


def test_describe_entry_never_crashes_on_odd_fields() -> None:
    for entry in ODD_ENTRIES:
        kind, excerpt = describe_entry(entry)
        assert isinstance(kind, str) and kind, entry
        assert isinstance(excerpt, str), entry


@pytest.mark.parametrize(
    "entry",
    [
        {"type": "label", "targetId": "e0000001", "label": None},
        {"type": "custom_message", "content": "Injected"},
        {"type": "branch_summary", "summary": "Tried X"},
        {"type": "thinking_level_change"},
    ],
)
def test_absent_fields_are_not_shown_as_python_none(entry: dict[str, Any]) -> None:
    _, excerpt = describe_entry(entry)
    assert "None" not in excerpt


# --- labels_of --------------------------------------------------------------------------------


def test_the_latest_label_of_an_entry_wins(tmp_path: Path, entries: Entries) -> None:
    a = entries.user("a")
    b = entries.user("b")
    entries.add("label", targetId=a, label="start")
    entries.add("label", targetId=b, label="two")
    entries.add("label", targetId=a, label="begin")
    assert labels_of(load(tmp_path, entries)) == {a: "begin", b: "two"}


@pytest.mark.parametrize(
    "removal",
    [{}, {"label": ""}, {"label": None}, {"label": 7}],
    ids=["absent", "empty", "null", "not-a-string"],
)
def test_a_label_entry_without_a_label_removes_it(
    tmp_path: Path, entries: Entries, removal: dict[str, Any]
) -> None:
    a = entries.user("a")
    b = entries.user("b")
    entries.add("label", targetId=a, label="keep")
    entries.add("label", targetId=b, label="drop")
    entries.add("label", targetId=b, **removal)
    assert labels_of(load(tmp_path, entries)) == {a: "keep"}


def test_a_removed_label_can_be_set_again_and_odd_targets_are_ignored(
    tmp_path: Path, entries: Entries
) -> None:
    a = entries.user("a")
    entries.add("label", targetId=a, label="one")
    entries.add("label", targetId=a)
    entries.add("label", targetId=a, label="two")
    entries.add("label", targetId=5, label="numeric target")
    entries.add("label", label="no target")
    entries.add("custom", customType="label", targetId=a, label="not a label entry")
    assert labels_of(load(tmp_path, entries)) == {a: "two"}


def test_a_session_without_labels_has_none(tmp_path: Path, entries: Entries) -> None:
    entries.user("a")
    assert labels_of(load(tmp_path, entries)) == {}


# --- show_branch ------------------------------------------------------------------------------


def test_show_branch_prints_the_header_then_one_line_per_entry(
    tmp_path: Path, entries: Entries, capsys: pytest.CaptureFixture[str]
) -> None:
    forked(entries)
    session = load(tmp_path, entries)
    show_branch(session, *current(session))
    assert printed(capsys) == [
        f"session  {SESSION_ID}",
        f"file     {tmp_path / 's.jsonl'}",
        "cwd      /home/u/proj",
        "created  2026-01-01T00:00:00.000Z",
        "title    Fix the flaky test",
        "parent   (none)",
        "entries  8 in the file, 6 on this branch, leaf e0000008",
        "",
        "e0000001 00:00:00 user           Fix the flaky test  [start]",
        "e0000002 00:00:01 assistant      Running ls → bash",
        "e0000003 00:00:02 toolResult     bash: a.txt b.txt",
        "e0000004 00:00:03 assistant      Two files.  ⑂ 2 branches",
        "e0000007 00:00:06 label          start → e0000001",
        "e0000008 00:00:07 user           new path",
    ]


def test_show_branch_follows_the_chosen_leaf(
    tmp_path: Path, entries: Entries, capsys: pytest.CaptureFixture[str]
) -> None:
    forked(entries)
    session = load(tmp_path, entries)
    show_branch(session, *current(session, "e0000006"))
    lines = printed(capsys)
    assert lines[6] == "entries  8 in the file, 6 on this branch, leaf e0000006"
    assert lines[-2:] == [
        "e0000005 00:00:04 user           old path",
        "e0000006 00:00:05 assistant      [aborted] old answer",
    ]


def test_header_shows_the_title_and_parent_from_the_header(
    tmp_path: Path, entries: Entries, capsys: pytest.CaptureFixture[str]
) -> None:
    entries.user("first request")
    header = {**HEADER, "title": "Given title", "parentSession": "/old/s.jsonl", "cwd": "/w"}
    session = load(tmp_path, entries, header)
    show_branch(session, *current(session))
    assert printed(capsys)[2:6] == [
        "cwd      /w",
        "created  2026-01-01T00:00:00.000Z",
        "title    Given title",
        "parent   /old/s.jsonl",
    ]


def test_header_of_an_empty_session(
    tmp_path: Path, entries: Entries, capsys: pytest.CaptureFixture[str]
) -> None:
    header = {k: v for k, v in HEADER.items() if k not in ("cwd", "timestamp")}
    session = load(tmp_path, entries, header)
    show_branch(session, *current(session))
    assert printed(capsys)[2:] == [
        "cwd      ",
        "created  ",
        "title    (none)",
        "parent   (none)",
        "entries  0 in the file, 0 on this branch, leaf (none)",
        "",
    ]


def test_entry_lines_fold_white_space_cut_long_text_and_are_never_wrapped(
    tmp_path: Path, entries: Entries, capsys: pytest.CaptureFixture[str]
) -> None:
    entries.user("several\n\n   lines\tof   text")
    entries.user("x" * 300)
    session = load(tmp_path, entries)
    show_branch(session, *current(session))
    assert printed(capsys)[8:] == [
        "e0000001 00:00:00 user           several lines of text",
        "e0000002 00:00:01 user           " + "x" * 89 + "…",
    ]


def test_an_entry_without_a_usable_timestamp_has_a_blank_clock(
    tmp_path: Path, entries: Entries, capsys: pytest.CaptureFixture[str]
) -> None:
    entries.add("custom", customType="no-time", timestamp=None)
    entries.add("custom", customType="short-time", timestamp="2026-01-01")
    session = load(tmp_path, entries)
    show_branch(session, *current(session))
    assert printed(capsys)[8:] == [
        "e0000001          custom         no-time",
        "e0000002          custom         short-time",
    ]


def test_views_have_no_colour_codes_off_a_terminal_even_without_no_color(
    tmp_path: Path,
    entries: Entries,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("NO_COLOR")
    forked(entries)
    session = load(tmp_path, entries)
    show_branch(session, *current(session))
    show_tree(session, *current(session))
    show_context(build_context(current(session)[0], OMP))
    out = capsys.readouterr().out
    assert "⑂ 2 branches" in out and "[start]" in out  # the styled parts are there, plain
    assert "\x1b" not in out


def test_escape_sequences_in_a_session_do_not_reach_the_view(
    tmp_path: Path, entries: Entries, capsys: pytest.CaptureFixture[str]
) -> None:
    entries.user("\x1b[31mred\x1b[0m alert")
    entries.assistant("ok", tool_call("c1"), stop="toolUse")
    entries.result("c1", "\x1b]0;new window title\x07\x1b[2Jcleared")
    session = load(tmp_path, entries)
    show_branch(session, *current(session))
    show_context(build_context(current(session)[0], OMP))
    assert "\x1b" not in capsys.readouterr().out


# --- show_tree --------------------------------------------------------------------------------


def test_show_tree_prints_every_branch_and_marks_the_current_one(
    tmp_path: Path, entries: Entries, capsys: pytest.CaptureFixture[str]
) -> None:
    forked(entries)
    session = load(tmp_path, entries)
    show_tree(session, *current(session))
    lines = printed(capsys)
    assert lines[6] == "entries  8 in the file, 6 on this branch, leaf e0000008"
    assert lines[8:] == [
        "* e0000001 00:00:00 user           Fix the flaky test  [start]",
        "* e0000002 00:00:01 assistant      Running ls → bash",
        "* e0000003 00:00:02 toolResult     bash: a.txt b.txt",
        "* e0000004 00:00:03 assistant      Two files.  ⑂ 2 branches",
        "    e0000005 00:00:04 user           old path",
        "    e0000006 00:00:05 assistant      [aborted] old answer",
        "*   e0000007 00:00:06 label          start → e0000001",
        "*   e0000008 00:00:07 user           new path",
    ]


def test_show_tree_marks_the_chosen_leafs_branch(
    tmp_path: Path, entries: Entries, capsys: pytest.CaptureFixture[str]
) -> None:
    forked(entries)
    session = load(tmp_path, entries)
    show_tree(session, *current(session, "e0000005"))
    marked = [line.split()[1] for line in printed(capsys)[8:] if line.startswith("*")]
    assert marked == ["e0000001", "e0000002", "e0000003", "e0000004", "e0000005"]


def test_show_tree_indents_each_fork_one_level_deeper(
    tmp_path: Path, entries: Entries, capsys: pytest.CaptureFixture[str]
) -> None:
    root = entries.user("root")
    left = entries.user("left")
    entries.user("left child 1")
    entries.user("left child 2", parent=left)
    entries.user("right", parent=root)
    session = load(tmp_path, entries)
    show_tree(session, *current(session))
    assert printed(capsys)[8:] == [
        "* e0000001 00:00:00 user           root  ⑂ 2 branches",
        "    e0000002 00:00:01 user           left  ⑂ 2 branches",
        "      e0000003 00:00:02 user           left child 1",
        "      e0000004 00:00:03 user           left child 2",
        "*   e0000005 00:00:04 user           right",
    ]


def test_show_tree_puts_several_roots_and_orphans_one_level_in(
    tmp_path: Path, entries: Entries, capsys: pytest.CaptureFixture[str]
) -> None:
    entries.user("first", parent=None)
    entries.user("orphan", parent="missing")
    entries.user("child")
    session = load(tmp_path, entries)
    show_tree(session, *current(session))
    assert printed(capsys)[8:] == [
        "    e0000001 00:00:00 user           first",
        "*   e0000002 00:00:01 user           orphan",
        "*   e0000003 00:00:02 user           child",
    ]


# --- show_context -----------------------------------------------------------------------------


def test_show_context_prints_the_model_then_one_line_per_message(
    tmp_path: Path, entries: Entries, capsys: pytest.CaptureFixture[str]
) -> None:
    entries.add("thinking_level_change", thinkingLevel="high")
    entries.user("hello")
    entries.assistant("", tool_call("c1", "read"), stop="toolUse")
    entries.result("c1", "contents")
    entries.assistant("done")
    show_context(build_context(current(load(tmp_path, entries))[0], OMP))
    assert printed(capsys) == [
        "agent oh-my-pi  model anthropic/claude-sonnet-4-5  thinking high  messages 4",
        "   1 user              hello",
        '   2 assistant         → read {"command":"ls"}',
        "   3 toolResult        bash: contents",
        "   4 assistant         done",
    ]


def test_show_context_of_a_compacted_branch_starts_with_the_summary(
    tmp_path: Path, entries: Entries, capsys: pytest.CaptureFixture[str]
) -> None:
    entries.user("dropped")
    kept = entries.user("kept")
    entries.add("compaction", summary="Earlier work", firstKeptEntryId=kept, tokensBefore=1234)
    entries.user("after")
    entries.custom_message("note", "Injected")
    entries.add("branch_summary", fromId=kept, summary="Tried X")
    show_context(build_context(current(load(tmp_path, entries))[0], OMP))
    assert printed(capsys) == [
        "agent oh-my-pi  model (unknown)  thinking off  messages 5",
        "   1 compactionSummary Earlier work",
        "   2 user              kept",
        "   3 user              after",
        "   4 custom            note: Injected",
        "   5 branchSummary     Tried X",
    ]


def test_show_context_with_a_thinking_level_that_is_not_a_string(
    capsys: pytest.CaptureFixture[str],
) -> None:
    session = load_session(FIXTURES / "edge/thinking-level-not-a-string.jsonl")
    show_context(build_context(current(session)[0], OMP))
    assert printed(capsys) == [
        "agent oh-my-pi  model (unknown)  thinking 5  messages 1",
        "   1 user              hi",
    ]


# --- every view over real sessions ------------------------------------------------------------

REAL_SESSIONS = [
    *sorted(FIXTURES.glob("edge/*.jsonl")),
    *sorted(FIXTURES.glob("omp/*.jsonl")),
    *sorted(EXAMPLES.rglob("*.jsonl")),
]


def _name(path: Path) -> str:
    return str(path.relative_to(PROJECT))


@pytest.mark.parametrize("path", REAL_SESSIONS, ids=_name)
def test_every_view_of_real_sessions(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    session = load_any(path)  # the examples hold a Claude Code session too
    path_records, tip = current(session)
    show_branch(session, path_records, tip)
    lines = printed(capsys)
    assert lines[0] == f"session  {session.id}"
    assert len(lines) == 8 + len(path_records)
    show_tree(session, path_records, tip)
    lines = printed(capsys)
    assert len([line for line in lines[8:] if line.startswith("* ")]) == len(path_records)
    assert len(lines) >= 8 + len(path_records)
    agent = session.agent or OMP
    built = build_context(path_records, agent)
    show_context(built)
    lines = printed(capsys)
    assert lines[0].startswith(f"agent {get(agent).title}  model ")
    assert lines[0].endswith(f"  messages {len(built)}")
    assert len(lines) == 1 + len(built)


# --- show_list and sizes ----------------------------------------------------------------------


def summary(**fields: Any) -> SessionSummary:
    values: dict[str, Any] = {
        "id": SESSION_ID,
        "path": Path("/s/a.jsonl"),
        "timestamp": "2026-01-01T09:14:03.512Z",
        "cwd": "/home/u/proj",
        "title": "Fix the flaky test",
        "parent_session": None,
        "size": 1536,
    }
    return SessionSummary(**{**values, **fields})


def test_show_list_prints_one_line_per_session(capsys: pytest.CaptureFixture[str]) -> None:
    sessions = [
        summary(),
        summary(
            id="0199bbbb",
            path=Path("/s/b.jsonl"),
            title=None,
            parent_session="/s/old.jsonl",
            size=12,
        ),
    ]
    show_list(Catalog(sessions, [], []), iter(sessions))
    assert printed(capsys) == [
        f"{SESSION_ID[:8]}  2026-01-01 09:14:03    1.5 kB  ?         /home/u/proj  "
        "Fix the flaky test",
        "0199bbbb  2026-01-01 09:14:03      12 B  ?         /home/u/proj  (untitled)  "
        "← /s/old.jsonl",
    ]


def test_show_list_names_parents_by_id_and_marks_handoffs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    old = summary(path=Path("/s/old.jsonl"))
    new = summary(
        id="0199cccc",
        path=Path("/s/new.jsonl"),
        title=None,
        parent_session="/s/old.jsonl",
        starts_from_handoff=True,
        timestamp="2026-01-02T10:00:00.000Z",
    )
    fork = summary(id="0199dddd", path=Path("/s/fork.jsonl"), parent_session=SESSION_ID)
    family = Catalog([new, fork, old], [], [])
    show_list(family, [new, old])
    assert printed(capsys) == [
        "0199cccc  2026-01-02 10:00:00    1.5 kB  ?         /home/u/proj  ↳ Fix the flaky test  "
        f"← {SESSION_ID[:8]}",
        f"{SESSION_ID[:8]}  2026-01-01 09:14:03    1.5 kB  ?         /home/u/proj  "
        "Fix the flaky test  ⇢ handed off",
    ]
    show_list_tree(family, [new, fork, old])
    assert [line[:14] for line in printed(capsys)] == [
        SESSION_ID[:8] + "  2026",
        "├─ ⑂ 0199dddd ",  # newest last
        "└─ ⇢ 0199cccc ",
    ]


def test_list_tree_keeps_an_only_child_in_its_parents_column(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A chain of handoffs reads down one column however long it is; forks branch."""
    root = summary(path=Path("/s/r.jsonl"), id="R")
    fork = summary(path=Path("/s/f.jsonl"), id="F", parent_session="/s/r.jsonl")
    handed_off = [
        summary(
            path=Path(f"/s/{name}.jsonl"),
            id=name,
            parent_session=f"/s/{parent}.jsonl",
            starts_from_handoff=True,
            timestamp="2026-01-02T00:00:00.000Z",
        )
        for name, parent in (("F2", "f"), ("H", "r"), ("H2", "H"), ("H3", "H2"))
    ]
    sessions = [*reversed(handed_off), fork, root]  # newest first, as listed
    show_list_tree(Catalog(sessions, [], []), sessions)
    drawn = ["R", "├─ ⑂ F", "│  ⇢ F2", "└─ ⇢ H", "   ⇢ H2", "   ⇢ H3"]
    assert [line[: len(start) + 2] for line, start in zip(printed(capsys), drawn, strict=True)] == [
        start + "  " for start in drawn
    ]


def test_show_list_of_nothing_prints_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    show_list(Catalog([], [], []), [])
    assert printed(capsys) == []


@pytest.mark.parametrize(
    ("size", "expected"),
    [
        (0, "0 B"),
        (999, "999 B"),
        (1000, "1.0 kB"),
        (1536, "1.5 kB"),
        (999_949, "999.9 kB"),
        (1_000_000, "1.0 MB"),
        (12_345_678, "12.3 MB"),
        (5 * 10**9, "5.0 GB"),
        (5 * 10**12, "5000.0 GB"),  # no unit above GB
    ],
)
def test_human_size_uses_decimal_units(size: int, expected: str) -> None:
    assert _human_size(size) == expected


@pytest.mark.parametrize(("size", "expected"), [(999_999, "1.0 MB"), (999_999_999, "1.0 GB")])
def test_human_size_rounds_up_into_the_next_unit(size: int, expected: str) -> None:
    assert _human_size(size) == expected


# --- HandoffProgress --------------------------------------------------------------------------


def test_progress_off_a_terminal_prints_a_dim_line_per_stage(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NO_COLOR")  # not a terminal is enough for plain text
    with HandoffProgress() as progress:
        progress.stage("asking anthropic/claude-sonnet-4-5")
        progress.streamed(10)
        progress.streamed(20)
        progress.stage("writing [the files]")
        progress.warn("warning: something to know")
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        "asking anthropic/claude-sonnet-4-5…\nwriting [the files]…\nwarning: something to know\n"
    )


def test_quiet_progress_prints_only_warnings(capsys: pytest.CaptureFixture[str]) -> None:
    with HandoffProgress(quiet=True) as progress:
        progress.stage("asking the model")
        progress.streamed(10)
        progress.warn("warning: still said")
    assert capsys.readouterr() == ("", "warning: still said\n")


def test_quiet_progress_on_a_terminal_shows_no_status(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    with HandoffProgress(quiet=True) as progress:
        progress.stage("asking the model")
        progress.streamed(10)
        progress.warn("warning: still said")
    assert capsys.readouterr() == ("", "warning: still said\n")


def test_progress_on_a_terminal_is_a_live_status_not_lines(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    with HandoffProgress() as progress:
        progress.stage("asking the model")
        progress.streamed(42)
    err = capsys.readouterr().err
    assert "asking the model…" not in err
    assert re.search(r"asking the model · ~42 tokens · \d+\.\d s", err)


def test_progress_is_a_reporter_that_reports_load_problems(
    tmp_path: Path, entries: Entries, capsys: pytest.CaptureFixture[str]
) -> None:
    entries.user("a")
    path = write_session(tmp_path / "s.jsonl", entries.items, extra=b"not json\n")
    progress = HandoffProgress()
    assert isinstance(progress, Reporter)
    progress.loaded(load_session(path))
    assert capsys.readouterr() == ("", f"warning: {path}: skipped 1 malformed line (line 3)\n")


def test_progress_prints_stages_and_warnings_verbatim(capsys: pytest.CaptureFixture[str]) -> None:
    with HandoffProgress() as progress:
        progress.stage("asking ollama/model:a:b")
        progress.warn("warning: :warning: kept as typed")
    assert capsys.readouterr().err == "asking ollama/model:a:b…\nwarning: :warning: kept as typed\n"


def test_a_title_change_shows_the_title(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    entries = Entries()
    entries.user("hello")
    entries.add("title_change", title="Fix the flaky test", source="auto")
    path = write_session(tmp_path / "s.jsonl", entries.items)
    session = load_session(path)
    show_branch(session, branch(session, leaf(session)), leaf(session))
    assert printed(capsys)[-1].endswith("title          Fix the flaky test")


def test_a_style_stays_on_its_own_text_where_a_character_is_shown_as_its_escape(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An escape is six characters for one: each styled piece is made visible by itself."""
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.delenv("NO_COLOR", raising=False)
    hidden = summary(cwd="/home/u/\u202eproj\u00ad", title="Fix \u2066it")
    show_list(Catalog([hidden], [], []), iter([hidden]))
    out = capsys.readouterr().out
    assert "\x1b[36m  /home/u/\\u202eproj\\u00ad\x1b[0m" in out  # the cwd's colour, all of it
    assert out.endswith("\x1b[36m  /home/u/\\u202eproj\\u00ad\x1b[0m  Fix \\u2066it\n")
