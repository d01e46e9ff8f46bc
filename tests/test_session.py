"""Loading session files: dialects, versions, malformed input."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson
import pytest

from handoff_cli.agents import load_session as load_any
from handoff_cli.catalog import summarize
from handoff_cli.errors import ExitCode, SessionFileError
from handoff_cli.sessions import session as session_module
from handoff_cli.sessions.session import load_session

from .conftest import EXAMPLES, FIXTURES, HEADER, Entries, line, run_cli, tool_call, write_session


def test_omp_title_slot_is_dropped_and_read() -> None:
    session = load_session(FIXTURES / "omp/sample-v3.jsonl")
    assert session.title_slot is not None
    assert session.title_slot["title"] == ""
    assert session.title == "List files"  # an empty slot: the first request names it
    assert session.header["id"] == "01a22ac6-037e-775c-8089-58f5d6db35c2"
    assert session.records[0].type == "model_change"
    assert session.records[0].line == 3


def test_title_slot_overrides_the_header_title(tmp_path: Path) -> None:
    slot = {"type": "title", "v": 1, "title": "From the slot", "updatedAt": "x", "pad": "  "}
    path = tmp_path / "s.jsonl"
    path.write_bytes(line(slot) + line({**HEADER, "title": "From the header"}))
    assert load_session(path).title == "From the slot"
    path.write_bytes(line({**HEADER, "title": "From the header"}))
    assert load_session(path).title == "From the header"


def test_unknown_types_roles_and_header_keys_are_kept(tmp_path: Path, entries: Entries) -> None:
    entries.add("future_thing", payload=[1, 2])
    entries.message({"role": "developer", "content": "x", "timestamp": 1})
    header = {**HEADER, "additionalDirectories": ["/a"], "providerPromptCacheKey": "k"}
    session = load_session(write_session(tmp_path / "s.jsonl", entries.items, header))
    assert session.header == header
    assert [r.type for r in session.records] == ["future_thing", "message"]
    assert list(session.entries(session.records)) == entries.items


def test_version_1_is_migrated_in_memory(tmp_path: Path) -> None:
    header = {
        "type": "session",
        "id": "v1",
        "timestamp": "2026-01-01T00:00:00.000Z",
        "cwd": "/x",
        "provider": "anthropic",
        "modelId": "m",
        "thinkingLevel": "off",
    }
    items: list[dict[str, Any]] = [
        {"type": "message", "timestamp": "t", "message": {"role": "user", "content": "a"}},
        {"type": "thinking_level_change", "timestamp": "t", "thinkingLevel": "high"},
        {
            "type": "compaction",
            "timestamp": "t",
            "summary": "S",
            "firstKeptEntryIndex": 1,
            "tokensBefore": 3,
        },
    ]
    path = write_session(tmp_path / "v1.jsonl", items, header, extra=b"{broken\n")
    before = path.read_bytes()
    session = load_session(path)
    assert session.version == 1
    ids = [r.id for r in session.records]
    assert len(set(ids)) == 3
    assert [r.parent_id for r in session.records] == [None, ids[0], ids[1]]
    compaction = session.entry(session.records[2])
    assert compaction["firstKeptEntryId"] == ids[0]
    assert "firstKeptEntryIndex" not in compaction
    first = session.entry(session.records[0])
    assert list(first)[-2:] == ["id", "parentId"]  # appended, as JavaScript would
    assert path.read_bytes() == before  # reading never rewrites


def test_malformed_lines_are_skipped_and_counted(tmp_path: Path, entries: Entries) -> None:
    entries.user("a")
    entries.user("b")
    raw = line(HEADER) + line(entries.items[0]) + b"{not json\n" + b"\n" + b"[1, 2]\n"
    raw += line({"type": "message", "id": 5}) + line(entries.items[1]) + b'{"type":"mess'
    path = tmp_path / "s.jsonl"
    path.write_bytes(raw)
    session = load_session(path)
    assert [r.id for r in session.records] == [entries.items[0]["id"], entries.items[1]["id"]]
    assert session.skipped_lines == (3, 5, 6, 8)


def test_invalid_utf8_inside_a_string_is_replaced_as_the_agents_do(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    entry = b'{"type":"message","id":"a","parentId":null,"timestamp":"t",'
    entry += b'"message":{"role":"user","content":"caf\xe9"}}\n'
    path.write_bytes(line(HEADER) + entry)
    session = load_session(path)
    assert session.entry(session.records[0])["message"]["content"] == "caf\ufffd"


def test_duplicate_ids_last_wins(tmp_path: Path, entries: Entries) -> None:
    entries.user("first")
    entries.items.append({**entries.items[0], "message": {"role": "user", "content": "second"}})
    session = load_session(write_session(tmp_path / "s.jsonl", entries.items))
    assert session.duplicate_ids == (entries.items[0]["id"],)
    record = session.by_id[entries.items[0]["id"]]
    assert session.entry(record)["message"]["content"] == "second"


def test_crlf_and_missing_final_newline(tmp_path: Path, entries: Entries) -> None:
    entries.user("a")
    path = tmp_path / "s.jsonl"
    path.write_bytes(orjson.dumps(HEADER) + b"\r\n" + orjson.dumps(entries.items[0]))
    session = load_session(path)
    assert session.entry(session.records[0]) == entries.items[0]
    assert session.skipped_lines == ()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "empty file"),
        (b"\n\n", "empty file"),
        (line({"type": "message", "id": "a"}), ":1: not a session file"),
        (b"{oops\n" + line({"type": "x"}), ":2: not a session file"),
        (b"\x89PNG\r\n\x1a\n\x00\x00", ":1: not valid JSON"),
        (line({"type": "session", "id": 7}), "not a session file"),
    ],
)
def test_not_a_session_file(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(content)
    with pytest.raises(SessionFileError) as caught:
        load_session(path)
    assert message in str(caught.value)
    assert str(path) in str(caught.value)
    assert "\n" not in str(caught.value)
    assert caught.value.exit_code == ExitCode.BAD_SESSION


def test_missing_directory_and_unreadable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(SessionFileError, match="no such file"):
        load_session(tmp_path / "missing.jsonl")
    with pytest.raises(SessionFileError, match="is a directory"):
        load_session(tmp_path)
    path = write_session(tmp_path / "s.jsonl", [])
    real_open = os.open

    def deny(file: Any, *args: Any, **kwargs: Any) -> Any:
        if str(file) == str(path):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(file, *args, **kwargs)

    # Tests run as root here, where chmod cannot make a file unreadable.
    monkeypatch.setattr(os, "open", deny)
    with pytest.raises(SessionFileError, match="permission denied"):
        load_session(path)


def test_message_payloads_are_read_on_demand(tmp_path: Path, entries: Entries) -> None:
    entries.user("a")
    entries.add("label", targetId="x", label="l")
    session = load_session(write_session(tmp_path / "s.jsonl", entries.items))
    message, label = session.records
    assert message.entry is None and message.facts is not None
    assert label.entry == entries.items[1]
    assert session.entry(message) == entries.items[0]


def test_file_changed_under_us_is_reported(tmp_path: Path, entries: Entries) -> None:
    entries.user("a")
    path = write_session(tmp_path / "s.jsonl", entries.items)
    session = load_session(path)
    path.write_bytes(b"x" * path.stat().st_size)
    with pytest.raises(SessionFileError, match="changed while being read"):
        session.entry(session.records[0])


@pytest.mark.parametrize("path", sorted(EXAMPLES.rglob("*.jsonl")), ids=lambda p: p.parent.name)
def test_show_and_list_name_a_session_alike(path: Path) -> None:
    assert load_any(path).title == summarize(path).title is not None  # a Claude Code one too


def test_title_rule(tmp_path: Path, entries: Entries) -> None:
    entries.message({"role": "user", "content": [{"type": "image", "data": "x"}]})
    entries.user("  Fix the\n flaky   test  ")
    path = write_session(tmp_path / "a.jsonl", entries.items)
    assert load_session(path).title == "Fix the flaky test"  # the first request with text
    entries.add("session_info", name="Named")
    entries.add("session_info", name="Renamed")
    entries.add("session_info", name=7)
    path = write_session(tmp_path / "b.jsonl", entries.items, {**HEADER, "title": " "})
    assert load_session(path).title == summarize(path).title == "Renamed"
    path = write_session(tmp_path / "c.jsonl", entries.items, {**HEADER, "title": "Header"})
    assert load_session(path).title == summarize(path).title == "Header"


def test_only_regular_files_are_read(tmp_path: Path) -> None:
    fifo = tmp_path / "waiting.jsonl"
    os.mkfifo(fifo)  # opening it for reading would block until a writer came
    with pytest.raises(SessionFileError, match="not a regular file"):
        load_session(fifo)
    with pytest.raises(SessionFileError, match="not a regular file"):
        load_session("/dev/zero")  # would never end
    with pytest.raises(SessionFileError, match="is a directory"):
        load_session(tmp_path)


def test_a_line_past_the_bound_is_an_error(
    tmp_path: Path, entries: Entries, monkeypatch: pytest.MonkeyPatch
) -> None:
    entries.user("x" * 300)
    path = write_session(tmp_path / "s.jsonl", entries.items)
    monkeypatch.setattr(session_module, "MAX_LINE_BYTES", 200)
    with pytest.raises(SessionFileError, match=r"s\.jsonl:2: a line longer than"):
        load_session(path)


def test_an_id_in_invalid_utf8_is_read_as_javascript_reads_it(tmp_path: Path) -> None:
    """Found by mutation fuzzing: such a line takes the long way, its bytes replaced."""
    path = tmp_path / "s.jsonl"
    path.write_bytes(
        line(HEADER)
        + b'{"type":"message","id":"a\xb7","parentId":null,"timestamp":"t",'
        + b'"message":{"role":"user","content":"x"}}\n'
    )
    assert [r.id for r in load_session(path).records] == ["a\ufffd"]


def test_messages_stay_on_disk_and_are_read_as_loaded(tmp_path: Path, entries: Entries) -> None:
    entries.user("first request")
    entries.assistant("an answer")
    path = write_session(tmp_path / "s.jsonl", entries.items)
    session = load_session(path)
    first, second = session.records
    assert first.kept is None and first.size > 0  # not held in memory
    assert orjson.loads(first.message_json()) == entries.items[0]["message"]
    with path.open("ab") as file:  # an agent appends: what was read is unchanged
        file.write(b'{"type":"label","id":"x","parentId":null,"timestamp":"t"}\n')
    assert orjson.loads(second.message_json()) == entries.items[1]["message"]
    replacement = tmp_path / "new.jsonl"
    replacement.write_bytes(b"{}\n")
    replacement.replace(path)  # renamed over: the file as it was opened is still read
    assert orjson.loads(first.message_json()) == entries.items[0]["message"]


def test_a_message_rewritten_in_place_is_reported(tmp_path: Path, entries: Entries) -> None:
    entries.user("a")
    path = write_session(tmp_path / "s.jsonl", entries.items)
    session = load_session(path)
    path.write_bytes(b"x" * path.stat().st_size)
    with pytest.raises(SessionFileError, match="changed while being read"):
        session.records[0].message_json()


def _message_line(entry_id: str, parent: str, message: bytes) -> bytes:
    """A message line laid out as the agents write it, its message's JSON as given."""
    head = f'{{"type":"message","id":"{entry_id}","parentId":"{parent}",'
    return head.encode() + b'"timestamp":"2026-01-01T00:00:00.000Z","message":' + message + b"}\n"


# Messages the validator and orjson may read otherwise than each other, or not at all.
_ODD_MESSAGES = (
    b'{"role":"user","content":"half \\ud800 pair","timestamp":1}',  # a lone surrogate
    b'{"role":"user","content":"big","timestamp":18446744073709551616}',  # past 64 bits
    b'{"role":"user","content":"beyond a double","timestamp":1e400}',
    b'{"role":"user","content":"bad \xff byte","timestamp":1}',
    b' {"role":"user","content":"a space first","timestamp":1}',
    b'\xef\xbb\xbf{"role":"user","content":"a byte-order mark first","timestamp":1}',
    b'"not an object"',
    b'{"role":"user","content":"more keys","timestamp":1},"type":"other"',
    # Duplicate keys: the last wins, as in JSON.parse (an assistant turn, with a call unanswered).
    b'{"role":"user","role":"assistant","provider":"p","model":"m","content":[{"type":"text",'
    b'"text":"t"},{"type":"toolCall","id":"gone","name":"bash","arguments":{}}],'
    b'"stopReason":"toolUse","timestamp":2}',
    b'{"role":"user","content":"deep","timestamp":1,"x":' + b"[" * 1000 + b"]" * 1000 + b"}",
    b'{"role":"user","content":"deeper","x":' + b'{"a":' * 1022 + b"1" + b"}" * 1023,
)


def test_messages_before_the_last_compaction_are_validated_not_parsed(
    tmp_path: Path, entries: Entries, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A version 3 message before the last compaction is only validated when loaded; its facts
    are read when a context asks for them (its window's). What the validator refuses is read
    as before: the views are those of a load that parses every message."""
    for turn in range(30):
        entries.user(f"question {turn}")
        entries.assistant("looking", tool_call(f"call{turn}"), stop="toolUse")
        entries.result(f"call{turn}", f"output {turn}")
    odd = b""
    parent = entries.leaf
    for number, message in enumerate(_ODD_MESSAGES):
        odd += _message_line(f"odd{number}", str(parent), message)
        if not message.startswith(b"\xef"):  # the agents skip that line: not a parent
            parent = f"odd{number}"
    before = len(entries.items)
    entries.leaf = parent
    entries.add("compaction", summary="so far", firstKeptEntryId="odd0", tokensBefore=1)
    entries.user("and now?")
    entries.assistant("this")
    path = write_session(tmp_path / "s.jsonl", entries.items[:before], extra=odd)
    path.write_bytes(path.read_bytes() + b"".join(line(e) for e in entries.items[before:]))

    parsed: list[Any] = []
    counting = session_module.message_facts

    def facts_of(message: Any, calls: dict[str, str] | None = None) -> Any:
        parsed.append(message)
        return counting(message, calls)

    monkeypatch.setattr(session_module, "message_facts", facts_of)
    load_session(path)
    # The two after the compaction, and of the odd ones those the validator refuses.
    assert 2 < len(parsed) < len(_ODD_MESSAGES)

    env = {"HANDOFF_AGENT": "omp"}
    views = [("show", path, "--json"), ("show", path, "--context", "--json")]
    validated = [run_cli(*view, env=env) for view in views]
    monkeypatch.setattr(session_module, "_last_window", lambda fd: 0)  # every message parsed
    assert [run_cli(*view, env=env) for view in views] == validated
    context = validated[1].stdout  # too deep for json, and lone surrogates for orjson
    assert context.startswith('{"messages":[{"role":"compactionSummary"')
    assert '"content":"half \\ud800 pair"' in context and '"content":"big"' in context
    # The last role wins: an assistant turn, whose call nobody answered is stripped.
    assert '"role":"assistant","provider":"p"' in context and '"gone"' not in context
    assert validated[0].code == 0 and "skipped 1 malformed line" in validated[0].stderr


def test_facts_hold_little_a_result_the_string_of_its_call(
    tmp_path: Path, entries: Entries
) -> None:
    entries.message(
        {"role": "assistant", "content": [tool_call("call_1")], "stopReason": "toolUse"}
    )
    entries.message({"role": "toolResult", "toolCallId": "call_1", "content": []})
    entries.message(
        {"role": "assistant", "content": [tool_call("call_2")], "stopReason": "toolUse"}
    )
    session = load_session(write_session(tmp_path / "s.jsonl", entries.items))
    first, result, second = (r.facts for r in session.records)
    assert first is not None and result is not None and second is not None
    assert result.answers == "call_1" and result.answers is first.tool_call_ids[0]
    assert first.stop_reason is second.stop_reason  # one string for every turn that says it
    assert (first.keeps_content, first.superseded, first.replays, first.no_content) == (
        False,
        False,
        False,
        False,
    )
