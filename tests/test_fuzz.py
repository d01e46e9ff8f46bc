"""Property-based tests: whatever a file holds, loading it gives a session or our own error.

Arbitrary bytes, arbitrary JSON lines, valid trees of every dialect with random damage
(dropped lines, swapped parents, cycles, duplicate ids, wrong types, huge strings, deep
nesting, invalid UTF-8), and real sessions mutated, read by every command's output path. The
only outcomes allowed: a loaded session whose context, request and extractive document can all
be built, or a ``SessionFileError`` (exit code 4); for the commands, output or a clean exit.
Each case is bounded in time. Each property is one test at two budgets: ``[quick]`` (60
examples) in ``make test``, and ``[stress]`` (1,500, marked ``slow``) in ``make stress``.
"""

from __future__ import annotations

import contextlib
import io
import signal
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from handoff_cli.agents import build_context, load_session, readers
from handoff_cli.agents.choice import choose_agent
from handoff_cli.cli.app import run
from handoff_cli.cli.render import describe_entry
from handoff_cli.errors import ExitCode, SessionFileError
from handoff_cli.handoff.builtin import write_document
from handoff_cli.handoff.facts import facts_of
from handoff_cli.handoff.prompt import handoff_request
from handoff_cli.handoff.redact import Redactor
from handoff_cli.sessions.jsonl import dumps
from handoff_cli.sessions.tree import branch, leaf

from . import sessiongen
from .conftest import EXAMPLES, HEADER, fixture_files, quick_and_stress

pytestmark = pytest.mark.heavy  # hundreds of mutated sessions: make test-heavy

QUICK = settings(
    max_examples=60,
    deadline=5_000,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
STRESS = settings(QUICK, max_examples=1_500)


def fuzz(
    *strategies: st.SearchStrategy[Any], quick_examples: int | None = None, **overrides: Any
) -> Callable[[Callable[..., None]], Callable[[settings], None]]:
    """Like ``@given(*strategies)``, but one test at two budgets: ``[quick]`` (of
    ``quick_examples`` cases, if a case is slow) and ``[stress]``."""
    quick = settings(QUICK, max_examples=quick_examples) if quick_examples else QUICK

    def decorate(prop: Callable[..., None]) -> Callable[[settings], None]:
        @pytest.mark.parametrize("budget", quick_and_stress(quick, STRESS))
        def test(budget: settings) -> None:
            settings(budget, **overrides)(given(*strategies)(prop))()

        test.__name__, test.__qualname__ = prop.__name__, prop.__qualname__
        test.__doc__ = prop.__doc__
        return test

    return decorate


# One folder per process (each xdist worker has its own), removed when the process exits.
_TEMPORARY = tempfile.TemporaryDirectory(prefix="handoff-fuzz-")
_FOLDER = Path(_TEMPORARY.name)


def survives(data: bytes) -> None:
    """Load ``data`` as a session file and build everything from it, or fail our own way."""
    path = _FOLDER / "fuzz.jsonl"
    path.write_bytes(data)
    try:
        session = load_session(path)
        path_records = branch(session, leaf(session))
    except SessionFileError as error:
        assert error.exit_code == ExitCode.BAD_SESSION
        assert "\n" not in str(error)
        return
    choose_agent(session)
    facts = facts_of(session, path_records)
    agents = readers(session)
    for agent in agents:
        context = build_context(path_records, agent)
        messages = list(context.messages())
        # Both outputs serialise, and agree: to JavaScript (a message passed on as the file
        # has it spells its numbers as the file does, 9007199254740993 for 9007199254740992).
        # Claude Code's are its own wire messages, not the shared shape the records are read in.
        passed_on = orjson.loads(dumps(list(context.serialized())))
        if context.sent is None:
            assert orjson.loads(dumps(passed_on)) == orjson.loads(dumps(messages))
        if agent == agents[len(data) % len(agents)]:  # one agent's request a case: cheaper
            request = Redactor().messages(handoff_request(messages, "focus", facts))
            assert request[-1]["role"] == "user"
    document = write_document(facts.masked(Redactor().value), "focus")
    assert document.startswith("## Goal") and len(document) <= 2_000 * 4
    for entry in session.entries(session.records):
        describe_entry(entry)  # what `show` prints of it


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=50),
    lambda inner: (
        st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=10), inner, max_size=5)
    ),
    max_leaves=20,
)
KEYS = [
    "type",
    "id",
    "parentId",
    "timestamp",
    "message",
    "role",
    "content",
    "summary",
    "firstKeptEntryId",
    "firstKeptEntryIndex",
    "toolCallId",
    "stopReason",
    "customType",
]


@fuzz(st.binary(max_size=2_000))
def test_arbitrary_bytes(data: bytes) -> None:
    survives(data)


@fuzz(st.binary(max_size=500))
def test_arbitrary_bytes_after_a_header(data: bytes) -> None:
    survives(orjson.dumps(HEADER) + b"\n" + data)


@fuzz(st.lists(json_values, max_size=15), st.sampled_from([1, 2, 3]))
def test_arbitrary_json_lines(values: list[Any], version: int) -> None:
    header = {**HEADER, "version": version}
    survives(b"\n".join(orjson.dumps(v) for v in [header, *values]) + b"\n")


@fuzz(
    st.lists(
        st.fixed_dictionaries(
            {
                k: st.sampled_from(
                    [
                        "message",
                        "compaction",
                        "branch_summary",
                        "custom_message",
                        "model_change",
                        "reset_boundary",
                        "label",
                    ]
                )
                if k == "type"
                else json_values
                for k in ("type",)
            },
            optional={
                k: json_values | st.sampled_from(["e1", "e2", "e3", None])
                for k in KEYS
                if k != "type"
            },
        ),
        max_size=12,
    )
)
def test_entries_with_wrong_types_in_every_field(entries: list[dict[str, Any]]) -> None:
    survives(b"".join(orjson.dumps(e) + b"\n" for e in [HEADER, *entries]))


ROLES = [
    "user",
    "assistant",
    "toolResult",
    "bashExecution",
    "custom",
    "hookMessage",
    "pythonExecution",
    "developer",
    "fileMention",
    "branchSummary",
    "compactionSummary",
]
MESSAGE_KEYS = [
    "content",
    "output",
    "command",
    "code",
    "exitCode",
    "toolCallId",
    "toolName",
    "isError",
    "stopReason",
    "customType",
    "summary",
    "provider",
    "model",
    "retryRecovery",
    "excludeFromContext",
    "cancelled",
    "truncated",
    "display",
]
blocks = st.lists(
    st.fixed_dictionaries(
        {"type": st.sampled_from(["text", "thinking", "toolCall", "image", "redactedThinking"])},
        optional={
            k: json_values | st.sampled_from(["c1", "c2", "x"])
            for k in (
                "text",
                "thinking",
                "id",
                "name",
                "arguments",
                "data",
                "thinkingSignature",
                "mimeType",
            )
        },
    )
    | json_values,
    max_size=4,
)


@fuzz(
    st.lists(
        st.fixed_dictionaries(
            {"role": st.sampled_from(ROLES)},
            optional={
                k: blocks
                if k == "content"
                else json_values | st.sampled_from(["c1", "c2", "error", "aborted"])
                for k in MESSAGE_KEYS
            },
        ),
        max_size=10,
    )
)
def test_messages_with_wrong_types_in_every_field(messages: list[dict[str, Any]]) -> None:
    entries = [
        {
            "type": "message",
            "id": f"m{n}",
            "parentId": f"m{n - 1}" if n else None,
            "timestamp": "2026-01-01T00:00:00.000Z",
            "message": message,
        }
        for n, message in enumerate(messages)
    ]
    survives(b"".join(orjson.dumps(e) + b"\n" for e in [HEADER, *entries]))


MUTATIONS = (
    "drop",
    "swap-parents",
    "cycle",
    "duplicate-id",
    "wrong-type",
    "huge-string",
    "deep-nesting",
    "invalid-utf8",
    "truncate",
)


@fuzz(
    st.integers(0, 400),
    st.sampled_from(sessiongen.DIALECTS),
    st.lists(
        st.tuples(
            st.sampled_from(MUTATIONS), st.integers(0, 10_000), st.integers(0, 10_000), json_values
        ),
        min_size=1,
        max_size=4,
    ),
    deadline=10_000,
)
def test_valid_trees_with_damage(seed: int, dialect: str, damage: list[Any]) -> None:
    lines = sessiongen.generate(seed, dialect).splitlines()
    for kind, first, second, value in damage:
        lines = mutate(lines, kind, first, second, value)
    survives(b"\n".join(lines) + b"\n")


def mutate(lines: list[bytes], kind: str, first: int, second: int, value: Any) -> list[bytes]:
    if not lines:
        return lines
    i, j = first % len(lines), second % len(lines)
    entries = [_loads(line) for line in lines]
    a, b = entries[i], entries[j]
    if kind == "drop":
        return lines[:i] + lines[i + 1 :]
    if kind == "truncate":
        return [*lines[:i], lines[i][: len(lines[i]) // 2]]
    if kind == "invalid-utf8":
        return [*lines[:i], lines[i][:10] + b"\xff\xfe\xc3" + lines[i][10:], *lines[i + 1 :]]
    if kind == "deep-nesting":
        return [*lines[:i], b"[" * 3_000 + b"]" * 3_000, *lines[i:]]
    if not isinstance(a, dict) or not isinstance(b, dict):
        return lines
    if kind == "swap-parents":
        a["parentId"], b["parentId"] = b.get("parentId"), a.get("parentId")
    elif kind == "cycle":
        a["parentId"], b["parentId"] = b.get("id"), a.get("id")
    elif kind == "duplicate-id":
        b["id"] = a.get("id")
    elif kind == "wrong-type":
        key = sorted(a)[second % len(a)] if a else "type"
        a[key] = value
    elif kind == "huge-string":
        a["message"] = {"role": "user", "content": "x" * 1_000_000}
    entries[i], entries[j] = a, b
    return [
        orjson.dumps(e) if isinstance(e, dict) else line
        for e, line in zip(entries, lines, strict=True)
    ]


def _loads(line: bytes) -> Any:
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        return None


# --- every command's output, on mutated real sessions --------------------------------------------

MUTATION_SOURCES = sorted(
    p
    for p in (*fixture_files(), *EXAMPLES.rglob("*.jsonl"))
    if p.stat().st_size < 200_000  # the large pi fixture would only slow each case down
)
COMMANDS = [
    ["show", "{path}"],
    ["show", "{path}", "--tree"],
    ["show", "{path}", "--json"],
    ["show", "{path}", "--context"],
    ["show", "{path}", "--context", "--json"],
    ["show", "{path}", "--document"],
    ["list", "{folder}"],
    ["list", "{folder}", "--json"],
    ["list", "{folder}", "--tree"],
    ["{path}", "--model", "extractive", "--dry-run"],
    ["{path}", "--model", "extractive", "--quiet", "--json", "--out-dir", "{out}"],
]
CLEAN_EXITS = {ExitCode.OK, ExitCode.USAGE, ExitCode.NOTHING_TO_HAND_OFF, ExitCode.BAD_SESSION}


def _mutated(lines: list[bytes], data: st.DataObject) -> list[bytes]:
    """One mutation of a session's lines: a line dropped, doubled, swapped, cut or replaced
    by noise; a byte flipped; or one value somewhere in an entry replaced or removed."""
    lines = list(lines)
    index = data.draw(st.integers(0, len(lines) - 1))
    kind = data.draw(st.sampled_from(["drop", "double", "swap", "cut", "noise", "flip", "value"]))
    line = lines[index]
    if kind == "drop":
        del lines[index]
    elif kind == "double":
        lines.insert(index, line)
    elif kind == "swap":
        other = data.draw(st.integers(0, len(lines) - 1))
        lines[index], lines[other] = lines[other], line
    elif kind == "cut":
        lines[index] = line[: data.draw(st.integers(0, len(line)))]
    elif kind == "noise":
        lines[index] = data.draw(st.binary(max_size=40))
    elif kind == "flip" and line:
        at = data.draw(st.integers(0, len(line) - 1))
        lines[index] = (
            line[:at] + bytes([line[at] ^ data.draw(st.integers(1, 255))]) + line[at + 1 :]
        )
    elif kind == "value":
        value = _loads(line)
        if isinstance(value, dict) and value:
            holder, key = _somewhere(value, data)
            if data.draw(st.booleans()):
                holder[key] = data.draw(json_values)
            elif isinstance(holder, dict):
                del holder[key]
            lines[index] = dumps(value)
    return lines


def _somewhere(value: Any, data: st.DataObject) -> tuple[Any, Any]:
    """A container inside ``value`` and a key (or index) of it, at any depth."""
    holder: Any = value
    while True:
        keys = list(holder) if isinstance(holder, dict) else list(range(len(holder)))
        key = data.draw(st.sampled_from(keys))
        inner = holder[key]
        if not (isinstance(inner, (dict, list)) and inner) or data.draw(st.booleans()):
            return holder, key
        holder = inner


# Each case runs every command: a quick run of 15 cases keeps make test fast.
@fuzz(
    st.sampled_from(MUTATION_SOURCES),
    st.integers(1, 4),
    st.data(),
    quick_examples=15,
    deadline=None,
)
def test_every_command_survives_mutated_sessions(
    source: Path, mutations: int, data: st.DataObject
) -> None:
    """A real session, mutated: every command that reads it (its views, JSON, context,
    document, the list, a dry run and a handoff with the built-in writer) ends with output or
    one of our clean exits, never a crash."""
    lines = source.read_bytes().split(b"\n")
    for _ in range(mutations):
        if lines:
            lines = _mutated(lines, data)
    folder = Path(tempfile.mkdtemp(dir=_FOLDER))
    path = folder / "sessions" / source.name
    path.parent.mkdir()
    path.write_bytes(b"\n".join(lines))
    for command in COMMANDS:
        args = [a.format(path=path, folder=path.parent, out=folder / "out") for a in command]
        code, err = _run_quietly(args)
        assert code in CLEAN_EXITS, (args, err)
        assert "Traceback" not in err


def _run_quietly(args: list[str]) -> tuple[int, str]:
    """The program in this process, its output kept from the terminal; its signal handlers
    put back afterwards."""
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    err = io.StringIO()
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = run(args)
    finally:
        for number, handler in handlers.items():
            signal.signal(number, handler)
    return code, err.getvalue()
