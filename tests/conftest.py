"""Shared test fixtures: the example sessions, a session-file builder, and a CLI runner."""

from __future__ import annotations

import contextlib
import functools
import io
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson
import pytest

from handoff_cli.agents import OMP, build_context, claude
from handoff_cli.agents.context import Context
from handoff_cli.cli.app import run
from handoff_cli.cli.output import write_json
from handoff_cli.document import SECTIONS
from handoff_cli.handoff.writer import register
from handoff_cli.llm.model import resolve_model
from handoff_cli.sessions import files as writer
from handoff_cli.sessions.session import load_session
from handoff_cli.sessions.tree import branch, leaf

from .fakellm import FakeLLMServer, Reply
from .fakellm import llm_server as llm_server  # the loopback model server fixture
from .helpers import zygote

FIXTURES = Path(__file__).parent / "fixtures"
NOT_SESSIONS = ("session_index.jsonl", "bare-first-version.jsonl")
"""Fixtures named ``*.jsonl`` left out of the sweeps: Codex's index of names, no session, and a
rollout of its 2025 format (no ``session_meta``), which Codex refuses and we read as a transcript
(tests/fixtures/codex/)."""
PROJECT = Path(__file__).parent.parent
EXAMPLES = PROJECT / "sessions"
REAL = FIXTURES / "real"
"""Sessions people committed to public repositories, each with a label file written by reading
it (tests/test_labels.py, tests/labels.py): large, and left out of the sweeps below."""

register(resolve_model)  # as the command line hands it in: tests call the library too


def fixture_files() -> list[Path]:
    """Every ``*.jsonl`` of the fixtures but the real sessions' and the request logs the
    oracles kept (``*.log.jsonl``), sorted."""
    return sorted(
        p
        for p in FIXTURES.rglob("*.jsonl")
        if REAL not in p.parents and not p.name.endswith(".log.jsonl")
    )


OMP183 = FIXTURES / "omp183"

FAKE_MODEL = "openai/gpt-4o-mini"
"""The model the tests ask for at the loopback server (``--api-base``): one in LiteLLM's table,
so that its window, prices and tokenizer are known without importing LiteLLM (for a made-up
name even a dry run imports it, to ask). Tests about a model outside the table name their own."""
DOCUMENT = "\n\n".join(f"## {name}\n- {name.lower()}" for name in SECTIONS)
"""An answer that holds every section a handoff document needs."""


def omp183_context(path: Path) -> Path:
    """Where oh-my-pi 18.3.4's own context of the fixture session at ``path`` is kept: in
    ``omp183/`` at the fixture's own place, or beside it for the sessions made there."""
    if path.is_relative_to(OMP183):
        return path.with_suffix(".omp183-context.json")
    return OMP183 / path.relative_to(FIXTURES).with_suffix(".omp183-context.json")


def context_of(path: Path, leaf_id: str | None = None, agent: str = OMP) -> Context:
    session = load_session(path)
    return build_context(branch(session, leaf(session, leaf_id)), agent)


def printed(path: Path, agent: str) -> Any:
    """What ``show PATH --context --json --agent AGENT`` prints, parsed."""
    out = io.BytesIO()
    write_json(context_of(path, agent=agent).to_json(), out)
    return orjson.loads(out.getvalue())


def key_orders(value: Any) -> Any:
    """The keys of every object in ``value``, in order (numbers compare by value elsewhere:
    JavaScript writes 1.0 as 1)."""
    if isinstance(value, dict):
        return [(k, key_orders(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [key_orders(v) for v in value]
    return None


# Every fixture session that has oh-my-pi 18.2.3's context beside it (*.context.json), every
# one that has 18.3.4's (omp183/), and every one that has the real pi's (*.pi-context.json).
CONTEXT_FIXTURES = sorted(p for p in fixture_files() if p.with_suffix(".context.json").exists())
OMP_CONTEXT_FIXTURES = sorted(p for p in fixture_files() if omp183_context(p).exists())
PI_CONTEXT_FIXTURES = sorted(
    p for p in fixture_files() if p.with_suffix(".pi-context.json").exists()
)

HEADER = {
    "type": "session",
    "version": 3,
    "id": "0199aaaa-0000-7000-8000-000000000001",
    "timestamp": "2026-01-01T00:00:00.000Z",
    "cwd": "/home/u/proj",
}


def line(value: Any) -> bytes:
    return orjson.dumps(value) + b"\n"


def write_session(
    path: Path,
    entries: list[dict[str, Any]],
    header: dict[str, Any] | None = None,
    extra: bytes = b"",
) -> Path:
    """A session file: ``header`` (default ``HEADER``), ``entries``, then raw ``extra`` bytes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(line(header or HEADER) + b"".join(line(e) for e in entries) + extra)
    return path


class Entries:
    """Builds a chain of version-3 entries; ``parent=`` starts a branch elsewhere."""

    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []
        self.leaf: str | None = None

    def add(self, kind: str, parent: str | bool | None = True, **fields: Any) -> str:
        entry_id = f"e{len(self.items) + 1:07x}"
        parent_id = self.leaf if parent is True else parent
        second = len(self.items) % 60
        self.items.append(
            {
                "type": kind,
                "id": entry_id,
                "parentId": parent_id,
                "timestamp": f"2026-01-01T00:00:{second:02d}.000Z",
                **fields,
            }
        )
        self.leaf = entry_id
        return entry_id

    def custom_message(
        self,
        custom_type: Any,
        content: Any = "...",
        timestamp: Any = "2026-01-01T00:00:00.000Z",
        **fields: Any,
    ) -> str:
        """A custom_message entry, whose id, parentId and timestamp come last, as agents write."""
        entry_id = f"e{len(self.items) + 1:07x}"
        self.items.append(
            {
                "type": "custom_message",
                "customType": custom_type,
                "content": content,
                "display": True,
                **fields,
                "id": entry_id,
                "parentId": self.leaf,
                "timestamp": timestamp,
            }
        )
        self.leaf = entry_id
        return entry_id

    def message(self, message: dict[str, Any], parent: str | bool | None = True) -> str:
        return self.add("message", parent=parent, message=message)

    def user(self, text: str, parent: str | bool | None = True) -> str:
        return self.message({"role": "user", "content": text, "timestamp": 1}, parent)

    def assistant(
        self, *blocks: Any, stop: str = "stop", parent: str | bool | None = True, **fields: Any
    ) -> str:
        content = [{"type": "text", "text": b} if isinstance(b, str) else b for b in blocks]
        return self.message(
            {
                "role": "assistant",
                "provider": "anthropic",
                "model": "claude-sonnet-4-5",
                "content": content,
                "stopReason": stop,
                "timestamp": 2,
                **fields,
            },
            parent,
        )

    def result(self, call_id: str, text: str = "ok", parent: str | bool | None = True) -> str:
        return self.message(
            {
                "role": "toolResult",
                "toolCallId": call_id,
                "toolName": "bash",
                "content": [{"type": "text", "text": text}],
                "isError": False,
                "timestamp": 3,
            },
            parent,
        )


HOSTILE = (
    "<script>alert(1)</script>",
    "</details></summary><details open>",
    '"><img src=x onerror=alert(2)>',
    "[click](javascript:alert(3)) <javascript:alert(4)> ![pixel](https://example.com/t.png)",
    "## Assistant\n# Owned\n---\n| a | b |\n|---|---|\n```\n~~~\n> quoted\n1. item\n- item",
    "*em* _em_ `code` &amp; &#60;b&#62; \\ $x$ ~~gone~~ <b>bold</b>",
    "    indented code\n\tand a tab",
)
"""What a session can hold that must never act in an export: tags, a fold closed, attributes
broken out of, script links, remote images, and Markdown's own marks."""


def hostile_session(path: Path) -> Path:
    """A session with every ``HOSTILE`` text in every place an export shows: the title, a
    request, an answer, thinking, a tool call's arguments and its result, a compaction's
    summary, a model's name, a custom message, a document handed off."""
    text = "\n".join(HOSTILE)
    entries = Entries()
    entries.user(text)
    entries.assistant(
        {"type": "thinking", "thinking": text},
        text,
        {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": text}},
        {"type": "toolCall", "id": "c2", "name": text, "arguments": {"path": text, "x": [text]}},
    )
    entries.result("c1", text)
    entries.result("c2", text)
    entries.add("compaction", summary=text, firstKeptEntryId="e0000001", tokensBefore=10)
    entries.add("model_change", model=HOSTILE[2])
    entries.custom_message("note", text)
    entries.user("Write a handoff document for the work in this conversation.")
    entries.assistant(text, provider="handoff", model="extractive")
    header = {**HEADER, "title": text, "cwd": HOSTILE[0]}
    return write_session(path, entries.items, header)


def handoff_entry(path: Path) -> dict[str, Any]:
    """The entry of a new session that holds the handoff document (after the model and the
    thinking level the session starts with, before its name)."""
    entries = (orjson.loads(line) for line in path.read_bytes().splitlines()[1:])
    return next(e for e in entries if e.get("type") == "custom_message")


def last_message(path: Path) -> dict[str, Any]:
    """The message of the last ``message`` entry of a session (a recorded answer, which the
    session's model named again may follow)."""
    entries = [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]
    return next(e["message"] for e in reversed(entries) if e.get("type") == "message")


def tool_call(call_id: str, name: str = "bash") -> dict[str, Any]:
    return {"type": "toolCall", "id": call_id, "name": name, "arguments": {"command": "ls"}}


@dataclass(frozen=True)
class Result:
    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return orjson.loads(self.stdout)


def quick_and_stress(quick: Any, stress: Any) -> list[Any]:
    """Parameters for one test at two sizes: ``[quick]`` for ``make test``, and ``[stress]``,
    marked ``slow``, which only ``make stress`` runs."""
    return [
        pytest.param(quick, id="quick"),
        pytest.param(stress, id="stress", marks=pytest.mark.slow),
    ]


def run_cli(
    *args: str | Path, env: dict[str, str] | None = None, cwd: Path | None = None
) -> Result:
    """Run the program in this process, as ``handoff ARGS`` run with ``env`` added to the
    environment, in ``cwd``: its exit code and what it printed. A process of its own costs a
    second or more of start-up (several with LiteLLM importing): tests start one only where
    the process is what they test (signals, kills, closed streams, terminals, peak memory,
    locks between processes)."""
    out, err = _stream("strict"), _stream("backslashreplace")  # as Python's own, to a pipe
    saved, here = dict(os.environ), Path.cwd()
    os.environ.update(env or {})
    try:
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = run([str(a) for a in args])
    finally:
        os.chdir(here)
        os.environ.clear()
        os.environ.update(saved)
    return Result(code, _printed(out), _printed(err))


def _stream(errors: str) -> io.TextIOWrapper:
    return io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors=errors, write_through=True)


def _printed(stream: io.TextIOWrapper) -> str:
    stream.flush()
    buffer = stream.buffer
    assert isinstance(buffer, io.BytesIO)
    return buffer.getvalue().decode()


def model_env(server: FakeLLMServer) -> dict[str, str]:
    """The variables that send a handoff to ``FAKE_MODEL`` at ``server``."""
    return {"HANDOFF_MODEL": FAKE_MODEL, "HANDOFF_API_BASE": server.base_url}


def files_in(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def cancel_mid_stream(
    server: FakeLLMServer, signum: int, *args: str | Path
) -> tuple[Result, float]:
    """Run the program with ``args`` against a slowly streaming model, send ``signum`` once its
    request is being answered: what it printed, and how long it took to stop. In a process of
    its own, the signal being the process's: forked from the zygote, since the signal comes
    long after start-up (``tests/test_signals.py`` sends them from the first instruction on)."""
    server.script(Reply(DOCUMENT, delay=0.5))  # about 15 s of slow streaming
    zygote.ready()
    folder = Path(os.environ["HANDOFF_SESSIONS_DIR"]).with_name("cancelled")
    process = zygote.fork([*map(str, args), "--quiet"], folder, model_env(server))
    deadline = time.monotonic() + 60
    while not server.requests and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.requests, "the request never reached the server"
    time.sleep(0.3)  # mid-stream
    sent = time.monotonic()
    process.send_signal(signum)
    code = process.wait(timeout=30)
    return Result(code, process.stdout, process.stderr), time.monotonic() - sent


LITELLM = "litellm"
"""The marker, and xdist group, of the tests that import LiteLLM in the test process: ``make
test`` runs them on one worker (``--dist loadgroup``), so that the other never pays its import
(some 4 s of CPU)."""


@functools.cache
def litellm() -> ModuleType:
    """LiteLLM itself, for the tests that ask it directly: imported when first asked, offline as
    the program imports it (imported at collection, it would cost every worker its import)."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
    import litellm

    litellm.suppress_debug_info = True
    return litellm


ZYGOTE = "zygote"
"""The marker of the tests that fork the program from the zygote, which imports LiteLLM: they
run in LiteLLM's group too, so that one worker, not each, starts a zygote."""


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups, to mark their ids
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if _grouped(item):
            item.add_marker(pytest.mark.xdist_group(LITELLM))


def _grouped(item: pytest.Item) -> bool:
    return bool(item.get_closest_marker(LITELLM) or item.get_closest_marker(ZYGOTE))


@pytest.fixture(autouse=True)
def _litellm_in_its_group(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test without the marker that imports LiteLLM fails, saying so: else a worker would pay
    the import unseen. A marked one has it imported first, outside the test: LiteLLM's import
    sets variables of its own (``TIKTOKEN_CACHE_DIR``, its bundled tokenizers) that a
    ``run_cli`` importing it would take back with the rest of the environment it restores."""
    if request.node.get_closest_marker(LITELLM) is not None:
        litellm()
    if getattr(request.config.option, "loadgroup", False) and _grouped(request.node):
        # pytest-xdist marks a grouped test's id: a pytest that keeps ids elsewhere loses it
        assert request.node.nodeid.endswith(f"@{LITELLM}"), "pytest-xdist ignored the group"
    imported, forking = "litellm" in sys.modules, zygote.started()
    yield
    if not forking and zygote.started():
        assert request.node.get_closest_marker(ZYGOTE) is not None, (
            f"starts the zygote: mark it @pytest.mark.{ZYGOTE} (tests/conftest.py)"
        )
    if not imported and "litellm" in sys.modules:
        assert request.node.get_closest_marker(LITELLM) is not None, (
            f"imports LiteLLM: mark it @pytest.mark.{LITELLM} (tests/conftest.py)"
        )


@pytest.fixture(scope="session", autouse=True)
def _zygote_stopped() -> Iterator[None]:
    yield
    zygote.stop()


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """No test sees the developer's keys or sessions; the sessions folder is a temporary one."""
    for name in list(os.environ):
        if name.endswith("_API_KEY") or name.startswith("HANDOFF_"):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HANDOFF_SESSIONS_DIR", str(tmp_path / "sessions"))
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # never the developer's
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))  # nor their defaults
    # Claude Code falls back from a model on the day it retires: the day the real CLI was run.
    monkeypatch.setattr(claude, "today", lambda: ORACLE_DAY)
    yield


ORACLE_DAY = date(2026, 12, 2)
"""The day Claude Code 2.1.332 resumed the fixtures (tests/fixtures/claude, .../real/claude)."""


@pytest.fixture
def entries() -> Entries:
    return Entries()


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def strict_json_lines(data: bytes) -> list[Any]:
    """Each line of ``data`` (blank ones aside) read by a strict JSON parser: orjson, which
    takes no NaN, no Infinity and no invalid UTF-8; a line with a lone surrogate escape, which
    JSON allows and JavaScript's ``JSON.parse`` reads but orjson refuses, by the standard
    library's parser, as strictly. Raises on any line that is not JSON."""
    values = []
    for line in data.splitlines():
        if not line.strip():
            continue
        try:
            values.append(orjson.loads(line))
        except orjson.JSONDecodeError as error:
            if "surrogate" not in str(error):
                raise
            values.append(json.loads(line.decode("utf-8"), parse_constant=_no_constant))
    return values


NODE = shutil.which("node")
# Each line parsed by JavaScript's JSON.parse; with "canonical", also written back by
# JSON.stringify to exactly the same text. Prints the numbers of the lines that fail.
_NODE_CHECK = """
const [file, canonical] = process.argv.slice(1);
const bad = [];
require("fs").readFileSync(file, "utf8").split("\\n").forEach((line, index) => {
  if (!line.trim()) return;
  try {
    const value = JSON.parse(line);
    if (canonical === "1" && JSON.stringify(value) !== line) bad.push(index + 1);
  } catch (error) {
    bad.push(index + 1);
  }
});
console.log(JSON.stringify(bad));
"""


def assert_strict_json(path: Path, canonical: bool = False) -> list[Any]:
    """Every line of the file at ``path`` is JSON to a strict parser (``strict_json_lines``)
    and, where node is installed, to JavaScript's ``JSON.parse``; with ``canonical``, each
    line is also what ``JSON.stringify`` writes of the value it reads. Returns the values."""
    values = strict_json_lines(path.read_bytes())
    if NODE is not None:
        checked = subprocess.run(
            [NODE, "-e", _NODE_CHECK, str(path), "1" if canonical else "0"],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        assert json.loads(checked.stdout) == [], f"{path}: lines node refuses: {checked.stdout}"
    return values


@pytest.fixture(autouse=True)
def _written_json_is_strict(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever a test has the program write in this process (new sessions, rewritten old
    ones, appended lines) is checked, once written, to be JSON a strict parser reads."""

    def checked(write: Callable[..., Any]) -> Callable[..., Any]:
        def write_checked(fd: int, data: bytes, *rest: Any) -> Any:
            done = write(fd, data, *rest)
            strict_json_lines(data)
            return done

        return write_checked

    whole_file = writer._write_temporary

    def file_checked(temporary: Path, data: Iterable[bytes | memoryview], mode: int) -> int:
        pieces = list(data)  # a file is written in pieces: it is whole lines once joined
        done = whole_file(temporary, pieces, mode)
        if ".jsonl." in temporary.name:  # a session's (not an agent's pointer file)
            strict_json_lines(b"".join(pieces))
        return done

    monkeypatch.setattr(writer, "_write_temporary", file_checked)
    monkeypatch.setattr(writer, "_append_all", checked(writer._append_all))


def children_cpu() -> float:
    """The CPU time (user and system) of this process's children waited for so far: a test
    worker runs one child at a time, so the difference across one run is that child's."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime
