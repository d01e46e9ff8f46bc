"""Machine output and notices (output.py): streamed JSON on stdout, one-line notices and load
warnings on stderr, and the base ``Reporter``."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from handoff_cli.cli.output import (
    Notices,
    notice,
    report_load_problems,
    write_json,
    write_json_value,
)
from handoff_cli.handoff.report import Reporter
from handoff_cli.sessions.session import Session, load_session

from .conftest import HEADER, Entries, line, write_session


def written(fields: dict[str, Any]) -> bytes:
    out = io.BytesIO()
    write_json(fields, out)
    return out.getvalue()


# --- write_json -------------------------------------------------------------------------------


def test_write_json_writes_one_compact_object_and_a_newline() -> None:
    assert written({"id": "x", "n": 1, "ok": True, "none": None, "f": 1.5}) == (
        b'{"id":"x","n":1,"ok":true,"none":null,"f":1.5}\n'
    )


def test_write_json_of_no_fields_is_an_empty_object() -> None:
    assert written({}) == b"{}\n"


def test_write_json_keeps_key_order_at_every_level() -> None:
    fields = {"z": 1, "a": {"y": 2, "b": [{"d": 3, "c": 4}]}, "m": iter([{"q": 5, "p": 6}])}
    assert written(fields) == b'{"z":1,"a":{"y":2,"b":[{"d":3,"c":4}]},"m":[{"q":5,"p":6}]}\n'


def test_iterator_values_are_written_as_json_arrays() -> None:
    fields = {
        "messages": iter([{"role": "user"}, 2, "three", None]),
        "empty": iter([]),
        "squares": (n * n for n in range(4)),
        "mapped": map(str, [1, 2]),
        "list": [1, [2]],
        "tuple": (3, 4),
    }
    assert written(fields) == (
        b'{"messages":[{"role":"user"},2,"three",null],"empty":[],"squares":[0,1,4,9],'
        b'"mapped":["1","2"],"list":[1,[2]],"tuple":[3,4]}\n'
    )


def test_iterator_items_are_written_as_they_come() -> None:
    out = io.BytesIO()
    seen: list[bytes] = []

    def items() -> Iterator[int]:
        yield 1
        seen.append(out.getvalue())  # what was written before the second item was made
        yield 2

    write_json({"head": "h", "items": items(), "tail": True}, out)
    assert seen == [b'{"head":"h","items":[1']
    assert out.getvalue() == b'{"head":"h","items":[1,2],"tail":true}\n'


def test_fragments_pass_through_unchanged() -> None:
    raw = b'{"b" : 1,  "a":[2 ]}'  # not as orjson would write it: proves it is not re-encoded
    fields = {
        "whole": orjson.Fragment(raw),
        "items": iter([orjson.Fragment(raw), {"x": 1}, orjson.Fragment(b"7")]),
    }
    assert written(fields) == (b'{"whole":' + raw + b',"items":[' + raw + b',{"x":1},7]}\n')


def test_text_is_utf8_and_lone_surrogates_are_escaped() -> None:
    fields = {"text": "héllo → ✓", "items": iter(["ok", "half \ud800 pair"])}
    assert written(fields) == ('{"text":"héllo → ✓","items":["ok","half \\ud800 pair"]}\n'.encode())


def test_each_call_writes_one_line_and_flushes() -> None:
    class Recording(io.BytesIO):
        flushed: list[bytes]

        def flush(self) -> None:
            self.flushed.append(self.getvalue())

    out = Recording()
    out.flushed = []
    write_json({"a": 1}, out)
    write_json({"b": iter([2])}, out)
    assert out.getvalue() == b'{"a":1}\n{"b":[2]}\n'
    assert out.flushed == [b'{"a":1}\n', b'{"a":1}\n{"b":[2]}\n']
    assert [orjson.loads(x) for x in out.getvalue().splitlines()] == [{"a": 1}, {"b": [2]}]


def test_write_json_goes_to_stdout_by_default(capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    write_json({"a": iter([1, 2])})
    assert capsysbinary.readouterr() == (b'{"a":[1,2]}\n', b"")


# --- write_json_value -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ([1, {"b": 2, "a": 3}], b'[1,{"b":2,"a":3}]\n'),
        (None, b"null\n"),
        ("é", '"é"\n'.encode()),
        ({"z": [], "a": {}}, b'{"z":[],"a":{}}\n'),
        (orjson.Fragment(b'{"kept" : 1}'), b'{"kept" : 1}\n'),
        ("\udfff", b'"\\udfff"\n'),
    ],
)
def test_write_json_value_writes_one_value_and_a_newline(value: Any, expected: bytes) -> None:
    out = io.BytesIO()
    write_json_value(value, out)
    assert out.getvalue() == expected


def test_write_json_value_goes_to_stdout_by_default(
    capsysbinary: pytest.CaptureFixture[bytes],
) -> None:
    write_json_value([{"id": "s"}])
    write_json_value(3)
    assert capsysbinary.readouterr() == (b'[{"id":"s"}]\n3\n', b"")


# --- notice -----------------------------------------------------------------------------------


def test_notice_is_one_line_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    notice("warning: something to know")
    notice("")
    assert capsys.readouterr() == ("", "warning: something to know\n\n")


# --- report_load_problems ---------------------------------------------------------------------


def session_with(tmp_path: Path, entries: Entries, bad_lines: int = 0) -> Session:
    """The entries, then ``bad_lines`` lines that are not JSON, each on its own line."""
    extra = b"".join(b"{not json %d\n" % n for n in range(bad_lines))
    return load_session(write_session(tmp_path / "s.jsonl", entries.items, extra=extra))


def test_a_clean_session_reports_nothing(
    tmp_path: Path, entries: Entries, capsys: pytest.CaptureFixture[str]
) -> None:
    entries.user("a")
    entries.user("b")
    report_load_problems(session_with(tmp_path, entries))
    assert capsys.readouterr() == ("", "")


def test_one_skipped_line_is_named(
    tmp_path: Path, entries: Entries, capsys: pytest.CaptureFixture[str]
) -> None:
    entries.user("a")
    session = session_with(tmp_path, entries, bad_lines=1)
    report_load_problems(session)
    assert capsys.readouterr() == (
        "",
        f"warning: {session.path}: skipped 1 malformed line (line 3)\n",
    )


@pytest.mark.parametrize(
    ("bad_lines", "expected"),
    [
        (2, "skipped 2 malformed lines (line 2, 3)"),
        (10, "skipped 10 malformed lines (line 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)"),
        (11, "skipped 11 malformed lines (line 2, 3, 4, 5, 6, 7, 8, 9, 10, 11 and 1 more)"),
        (25, "skipped 25 malformed lines (line 2, 3, 4, 5, 6, 7, 8, 9, 10, 11 and 15 more)"),
    ],
)
def test_skipped_lines_list_at_most_ten_numbers(
    tmp_path: Path,
    entries: Entries,
    capsys: pytest.CaptureFixture[str],
    bad_lines: int,
    expected: str,
) -> None:
    session = session_with(tmp_path, entries, bad_lines)
    report_load_problems(session)
    assert capsys.readouterr() == ("", f"warning: {session.path}: {expected}\n")


def test_lines_skipped_before_the_header_are_reported_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"garbage\n" + line(HEADER) + b"[1, 2]\n")
    report_load_problems(load_session(path))
    assert capsys.readouterr().err == f"warning: {path}: skipped 2 malformed lines (line 1, 3)\n"


def test_duplicate_ids_are_named_once_each(
    tmp_path: Path, entries: Entries, capsys: pytest.CaptureFixture[str]
) -> None:
    for text in "abcd":
        entries.user(text)
    entries.items[1]["id"] = entries.items[2]["id"] = entries.items[3]["id"] = "e0000001"
    session = session_with(tmp_path, entries)
    report_load_problems(session)
    assert capsys.readouterr().err == (
        f"warning: {session.path}: 1 entry id(s) used more than once, the last entry wins: "
        "e0000001\n"
    )


def test_duplicate_ids_list_at_most_ten(
    tmp_path: Path, entries: Entries, capsys: pytest.CaptureFixture[str]
) -> None:
    for number in range(12):
        entries.user(f"first {number}")
    for item in list(entries.items):
        entries.items.append({**item, "message": {"role": "user", "content": "again"}})
    session = session_with(tmp_path, entries)
    report_load_problems(session)
    shown = ", ".join(f"e{n:07x}" for n in range(1, 11))
    assert capsys.readouterr().err == (
        f"warning: {session.path}: 12 entry id(s) used more than once, the last entry wins: "
        f"{shown}\n"
    )


def test_skipped_lines_are_reported_before_duplicate_ids(
    tmp_path: Path, entries: Entries, capsys: pytest.CaptureFixture[str]
) -> None:
    entries.user("a")
    entries.user("b")
    entries.items[1]["id"] = "e0000001"
    session = session_with(tmp_path, entries, bad_lines=1)
    report_load_problems(session)
    assert capsys.readouterr().err.splitlines() == [
        f"warning: {session.path}: skipped 1 malformed line (line 4)",
        f"warning: {session.path}: 1 entry id(s) used more than once, the last entry wins: "
        "e0000001",
    ]


# --- Reporter ---------------------------------------------------------------------------------


def test_the_command_lines_reporter_only_warns_and_reports_load_problems(
    tmp_path: Path, entries: Entries, capsys: pytest.CaptureFixture[str]
) -> None:
    silent = Reporter()  # the library's: it prints nothing
    silent.warn("nothing")
    assert capsys.readouterr() == ("", "")
    reporter = Notices()
    reporter.stage("asking the model")
    reporter.streamed(42)
    assert capsys.readouterr() == ("", "")
    reporter.warn("warning: something to know :warning: [b]kept[/b]")
    assert capsys.readouterr() == ("", "warning: something to know :warning: [b]kept[/b]\n")
    entries.user("a")
    session = session_with(tmp_path, entries, bad_lines=1)
    reporter.loaded(session)
    assert capsys.readouterr() == (
        "",
        f"warning: {session.path}: skipped 1 malformed line (line 3)\n",
    )


def test_an_unbuffered_stream_gets_few_writes(tmp_path: Path) -> None:
    """``python -u`` leaves stdout unbuffered: a write of each piece of a context's JSON (two a
    message) would be a system call each, so they are gathered; a long one is written alone."""

    class Unbuffered(io.FileIO):
        writes = 0

        def write(self, data: Any) -> int:
            self.writes += 1
            return super().write(data)

    long = "x" * (1 << 17)
    with Unbuffered(tmp_path / "out", "wb") as out:
        write_json({"items": iter([*range(2000), long, *range(3)]), "tail": True}, out)
    expected = orjson.dumps({"items": [*range(2000), long, *range(3)], "tail": True}) + b"\n"
    assert (tmp_path / "out").read_bytes() == expected
    assert out.writes <= 4
