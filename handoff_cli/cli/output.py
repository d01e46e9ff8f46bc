"""Machine output and notices: JSON on stdout (streamed), one-line notices on stderr.

Kept apart from ``render`` (the rich views for people) so that the JSON paths never pay for
importing rich.
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, BinaryIO

import orjson

from handoff_cli.handoff.report import Reporter
from handoff_cli.sessions.jsonl import dumps, write_object
from handoff_cli.sessions.session import Session
from handoff_cli.text import json_visible, visible

MAX_LISTED_LINES = 10


def stdout() -> BinaryIO:
    """Where results go. When there is no stdout at all (started with it closed, ``>&-``),
    that is a reader gone before it began: ``BrokenPipeError``, as for a pipe closed later."""
    if sys.stdout is None:
        raise BrokenPipeError("stdout is closed")
    return sys.stdout.buffer


def write_line(text: str) -> None:
    """One line of result on stdout: ids a session gave, so made safe (``visible``) as for a
    terminal; a script reads the same line."""
    out = stdout()
    out.write(visible(text).encode() + b"\n")
    out.flush()


def write_blocks(blocks: Iterable[bytes]) -> None:
    """A result made of many blocks (an export), written to stdout as each is made."""
    out = stdout()
    for block in blocks:
        out.write(block)
    out.flush()


def write_json(fields: Mapping[str, Any], out: BinaryIO | None = None) -> None:
    """Write one JSON object and a newline; values that are iterators are streamed as arrays.

    Streaming keeps memory flat: a context of a 100 MB session is never held whole, and JSON
    passed on as it was read (``Verbatim``) is written without a copy.
    """
    out = out if out is not None else stdout()
    if out.isatty():  # for a person: indented, as gh and httpie show it (a pipe gets one line)
        whole = io.BytesIO()
        write_object(fields, whole.write)
        _writer(out)(_indented(whole.getvalue()) + b"\n")
        out.flush()
        return
    write = _writer(out)
    gathered = _Gathered(write) if isinstance(out, io.RawIOBase) else None
    if gathered is not None:
        write = gathered.write
    write_object(fields, write)
    write(b"\n")
    if gathered is not None:
        gathered.flush()
    out.flush()


class _Gathered:
    """Small pieces joined into writes of about ``GATHER`` bytes, for an unbuffered stdout
    (``python -u``, ``PYTHONUNBUFFERED``), where each piece would be a system call: two a
    message of a context; a long piece is written as it is, without a copy."""

    GATHER = 1 << 16

    def __init__(self, write: Callable[[bytes | memoryview], Any]) -> None:
        self._write = write
        self._pieces: list[bytes | memoryview] = []
        self._size = 0

    def write(self, data: bytes | memoryview) -> None:
        if len(data) >= self.GATHER:
            self.flush()
            self._write(data)
            return
        self._pieces.append(data)
        self._size += len(data)
        if self._size >= self.GATHER:
            self.flush()

    def flush(self) -> None:
        if self._pieces:
            self._write(b"".join(self._pieces))
            self._pieces, self._size = [], 0


def write_json_value(value: Any, out: BinaryIO | None = None) -> None:
    out = out if out is not None else stdout()
    data = dumps(value)
    _writer(out)((_indented(data) if out.isatty() else data) + b"\n")
    out.flush()


def _indented(data: bytes) -> bytes:
    """JSON indented by two spaces; as it is where orjson cannot read it back the same (an
    integer past 64 bits)."""
    try:
        return orjson.dumps(orjson.loads(data), option=orjson.OPT_INDENT_2)
    except (orjson.JSONDecodeError, orjson.JSONEncodeError):
        return data


def _writer(out: BinaryIO) -> Callable[[bytes | memoryview], Any]:
    """How JSON reaches ``out``: as it is, unless ``out`` is a terminal, where what could
    reorder or hide text is written as escapes (``json_visible``): the same JSON value."""
    if not out.isatty():
        return out.write
    return lambda data: out.write(json_visible(bytes(data)))


def reader_gone() -> None:
    """stdout's reader went away (``| head``): not a failure. What is left to print goes
    nowhere, so that flushing at exit cannot fail either."""
    if sys.stdout is None:
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


@contextmanager
def reader_may_leave() -> Iterator[None]:
    """Output to a reader that may stop reading early: a closed pipe ends it quietly."""
    try:
        yield
    except BrokenPipeError:
        reader_gone()


def notice(text: str) -> None:
    """A line for people, on stderr; what came from a session or a provider cannot drive the
    terminal."""
    print(visible(text, lines=True), file=sys.stderr, flush=True)


def _line_list(numbers: tuple[int, ...]) -> str:
    shown = ", ".join(str(n) for n in numbers[:MAX_LISTED_LINES])
    more = len(numbers) - MAX_LISTED_LINES
    return shown + (f" and {more} more" if more > 0 else "")


def report_load_problems(session: Session) -> None:
    """Say on stderr what loading skipped or overrode: never silently."""
    skipped = session.skipped_lines
    if skipped:
        noun = "line" if len(skipped) == 1 else "lines"
        notice(
            f"warning: {session.path}: skipped {len(skipped)} malformed {noun} "
            f"(line {_line_list(skipped)})"
        )
    if session.not_resumed:
        notice(f"note: {session.path}: {session.not_resumed}")
    duplicates = session.duplicate_ids
    if duplicates:
        shown = ", ".join(duplicates[:MAX_LISTED_LINES])
        notice(
            f"warning: {session.path}: {len(duplicates)} entry id(s) used more than once, "
            f"the last entry wins: {shown}"
        )


class Notices(Reporter):
    """The handoff's reporting on stderr: what loading skipped, and every warning."""

    def loaded(self, session: Session) -> None:
        report_load_problems(session)

    def warn(self, text: str) -> None:
        notice(text)
