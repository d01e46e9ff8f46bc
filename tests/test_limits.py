"""Files of any numbers, any depth and any size (issue 19, items 6, 9 and 10): what we write
is what the agents' JavaScript writes, nothing recurses, and memory stays within twice the
file."""

from __future__ import annotations

import base64
import json
import os
import random
import re
import subprocess
import sys
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from handoff_cli.agents import load_session
from handoff_cli.cli.app import run
from handoff_cli.document import SECTIONS
from handoff_cli.handoff.facts import facts_of
from handoff_cli.sessions.tree import branch, leaf

from .conftest import (
    HEADER,
    NODE,
    assert_strict_json,
    quick_and_stress,
    run_cli,
    strict_json_lines,
)
from .fakellm import FakeLLMServer, Reply
from .helpers.zygote import fork
from .sessiongen import LONG_TEXT_AGENTS, long_text_session

DOCUMENT = "\n\n".join(f"## {name}\n- {name.lower()}" for name in SECTIONS)

# --- numbers as JavaScript spells them (item 6) ---------------------------------------------

# Each number as a file may hold it, and as the agents' JSON.stringify(JSON.parse(...)) writes
# it (node 20 writes these; ECMAScript's Number::toString).
NUMBERS = {
    "beyond": ("1e400", "null"),
    "zero": ("0.0", "0"),
    "minus_zero": ("-0.0", "0"),
    "large": ("1e16", "10000000000000000"),
    "small": ("1e-6", "0.000001"),
    "smaller": ("1.5e-7", "1.5e-7"),
    "upper": ("1E5", "100000"),
    "huge": ("123456789012345678901234567890", "1.2345678901234568e+29"),
    "past_2_53": ("9007199254740993", "9007199254740992"),
    "exact": ("2.5", "2.5"),
}


def _line(entry: dict[str, Any], numbers: bool = False) -> str:
    # Written by hand: no Python serialiser writes 1e400 or keeps 0.0 as the file spells it.
    text = json.dumps(entry, ensure_ascii=True, separators=(",", ":"))
    if numbers:
        text = text.replace(
            '"NUMBERS"', "{" + ",".join(f'"{k}":{v}' for k, (v, _) in NUMBERS.items()) + "}"
        )
    return text + "\n"


LONE_SURROGATE = b"\\ud83d"
"""A cut emoji, as JavaScript writes one (UTF-8 has no surrogates: it is sent as U+FFFD)."""
INVALID_UTF8 = b"\xff"


def odd_numbers_session(path: Path, version: int, spoiler: bytes = LONE_SURROGATE) -> Path:
    """A session whose tool call holds each of ``NUMBERS``, with ``spoiler`` in the same
    entry: text orjson refuses, so the standard library read the entry, and its serialiser
    then wrote ``Infinity`` (after a lone surrogate, or invalid UTF-8 with an integer past 64
    bits, which orjson does not write either)."""
    header = {**HEADER, "version": version}
    call = {"type": "toolCall", "id": "c1", "name": "bash", "arguments": "NUMBERS"}
    assistant = {
        "role": "assistant",
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": "on it SPOILER"}, call],
        "stopReason": "toolUse",
        "timestamp": 2,
    }
    result = {
        "role": "toolResult",
        "toolCallId": "c1",
        "toolName": "bash",
        "content": [{"type": "text", "text": "done"}],
        "isError": False,
        "timestamp": 3,
    }
    stamp = "2026-01-01T00:00:0%d.000Z"
    lines = [
        _line(header),
        _line(
            {
                "type": "message",
                "id": "a1",
                "parentId": None,
                "timestamp": stamp % 1,
                "message": {"role": "user", "content": "count", "timestamp": 1},
            }
        ),
        _line(
            {
                "type": "message",
                "id": "a2",
                "parentId": "a1",
                "timestamp": stamp % 2,
                "message": assistant,
            },
            numbers=True,
        ),
        _line(
            {
                "type": "message",
                "id": "a3",
                "parentId": "a2",
                "timestamp": stamp % 3,
                "message": result,
            }
        ),
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes("".join(lines).encode().replace(b"SPOILER", spoiler))
    return path


def spelled(text: str) -> dict[str, str]:
    """The numbers of ``NUMBERS`` as ``text`` (JSON we wrote) spells them."""
    found = re.search(r'"beyond":.*?"exact":[^,}]+', text)
    assert found is not None, text[:300]
    return dict(re.findall(r'"(\w+)":([^,{}]+)', found.group()))


def run_in_process(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    code = run([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_migration_writes_numbers_as_the_agent_would(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A version 2 file recorded into is rewritten at version 3: every line then parses with a
    strict JSON parser (and node's JSON.parse), and is exactly what JSON.stringify writes of
    what JSON.parse reads of it."""
    path = odd_numbers_session(tmp_path / "sessions" / "v2.jsonl", version=2)
    code, out, err = run_in_process(capsys, path, "--model", "extractive", "--agent", "omp")
    assert code == 0, err
    lines = path.read_text().splitlines()
    # Migrated, then the exchange appended, and the session's model named again after it.
    assert len(lines) == 7 and '"version":3' in lines[0]
    assert_strict_json(path, canonical=True)
    assert spelled(lines[2]) == {name: js for name, (_, js) in NUMBERS.items()}
    assert "on it \\ud83d" in lines[2]  # the lone surrogate kept, escaped, as JavaScript does
    (new,) = (tmp_path / "sessions").glob(f"*_{out.strip()}.jsonl")
    assert_strict_json(new, canonical=True)


@pytest.mark.parametrize("version", [2, 3])
def test_show_json_prints_valid_json_with_the_agents_numbers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], version: int
) -> None:
    """``show --json`` and ``show --context --json`` print JSON a strict parser reads, the
    numbers of a line orjson refuses (its Infinity, its lone surrogate) written anew as
    JSON.stringify writes them. A message line orjson reads is passed on as the file has it
    (never parsed again): to JavaScript, the same value as the agent reads."""
    path = odd_numbers_session(tmp_path / "s.jsonl", version)
    plain = {k: v for k, (v, _) in NUMBERS.items() if k != "beyond"}
    as_read = "{" + ",".join(f'"{k}":{v}' for k, v in plain.items()) + "}"
    message = '{"role":"user","content":[{"type":"text","text":"then"}],"n":%s,"timestamp":3.0}'
    with path.open("a") as file:
        file.write(
            '{"type":"message","id":"a4","parentId":"a3","timestamp":"2026-01-01T00:00:04.000Z",'
            f'"message":{message % as_read}}}\n'
        )
    for args in (["--json"], ["--context", "--json", "--agent", "omp"]):
        code, out, err = run_in_process(capsys, "show", path, *args)
        assert code == 0, err
        (value,) = strict_json_lines(out.encode())
        assert spelled(out) == {name: js for name, (_, js) in NUMBERS.items()}, args
        if version == 3:
            assert message % as_read in out  # as read, 0.0 and 3.0 and all
        if NODE is not None:
            messages = value["branch"] if "branch" in value else value["messages"]
            script = (
                "const [ours, theirs] = process.argv.slice(1).map(JSON.parse);"
                "process.exit(JSON.stringify(ours) === JSON.stringify(theirs) ? 0 : 1)"
            )
            ours = json.dumps(messages[-1].get("message", messages[-1]))
            checked = subprocess.run([NODE, "-e", script, ours, message % as_read], timeout=60)
            assert checked.returncode == 0, args


@pytest.mark.litellm
def test_a_model_handoff_of_such_numbers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], llm_server: FakeLLMServer
) -> None:
    """The same input sent to a model: no crash, the request a strict parser reads."""
    llm_server.script(Reply(DOCUMENT))
    path = odd_numbers_session(tmp_path / "sessions" / "v2.jsonl", 2, INVALID_UTF8)
    code, _, err = run_in_process(
        capsys,
        path,
        "--model",
        "openai/test-model",
        "--api-base",
        llm_server.base_url,
        "--agent",
        "omp",
    )
    assert code == 0, err
    (request,) = llm_server.requests
    arguments = request.messages[1]["tool_calls"][0]["function"]["arguments"]
    assert spelled(arguments) == {name: js for name, (_, js) in NUMBERS.items()}
    assert_strict_json(path, canonical=True)


@pytest.mark.litellm
def test_a_cut_emoji_reaches_the_model_as_a_replacement_character(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], llm_server: FakeLLMServer
) -> None:
    """A lone surrogate, which the agents' JavaScript writes when it cuts a text inside an
    emoji, cannot be encoded as UTF-8 for the request: the HTTP client failed on the whole
    request ("the model's server refused the request (500)"). It goes as U+FFFD."""
    llm_server.script(Reply(DOCUMENT))
    path = odd_numbers_session(tmp_path / "sessions" / "v3.jsonl", 3, LONE_SURROGATE)
    model = ("--model", "openai/test-model", "--api-base", llm_server.base_url, "--retries", "0")
    code, _, err = run_in_process(capsys, path, *model, "--agent", "omp")
    assert code == 0, err
    (request,) = llm_server.requests
    assert request.messages[1]["content"] == "on it \ufffd"
    assert b"on it \\ud83d" in path.read_bytes()  # the session keeps its own, as written


def test_numbers_are_spelled_as_node_spells_them() -> None:
    """Number::toString against node itself, on random doubles of every magnitude and on
    integers past 2**53."""
    from handoff_cli.sessions.jsonl import dumps

    if NODE is None:
        values: list[float] = [1e21, 1e-7, 123e-20, 0.1]
        expected = ["1e+21", "1e-7", "1.23e-18", "0.1"]
    else:
        rng = random.Random(19)
        values = [rng.uniform(-1, 1) * 10 ** rng.randint(-30, 30) for _ in range(3000)]
        values += [float(rng.getrandbits(64)) for _ in range(500)] + [
            5e-324,
            1.7976931348623157e308,
        ]
        script = "console.log(JSON.stringify(JSON.parse(require('fs').readFileSync(0, 'utf8'))))"
        done = subprocess.run(
            [NODE, "-e", script],
            input=json.dumps(values),
            capture_output=True,
            text=True,
            check=True,
        )
        expected = re.findall(r"[^,\[\]]+", done.stdout.strip())
    assert [dumps(v).decode() for v in values] == expected


# --- nesting as deep as orjson reads (item 9) ------------------------------------------------

DEPTH = 1_000


def deep(levels: int) -> str:
    """JSON text of arrays ``levels`` deep around a number."""
    return "[" * levels + "1.0" + "]" * levels


def deep_session(path: Path, levels: int) -> Path:
    """A session whose tool call's arguments nest ``levels`` deep, with deep values where
    each walk over a message reads: a tool result's details, its name, a model's name; and
    enough turns after it for an in-place handoff to have something to compact."""
    line = (
        '{"type":"message","id":"%s","parentId":%s,"timestamp":"2026-01-01T00:00:0%d.000Z",'
        '"message":%s}\n'
    )
    messages = [
        '{"role":"user","content":"build it","timestamp":1}',
        '{"role":"assistant","provider":"anthropic","model":"claude-sonnet-4-5","content":['
        '{"type":"text","text":"calling"},{"type":"toolCall","id":"c1","name":"write",'
        f'"arguments":{{"path":"src/a.py","nested":{deep(levels)}}}}}],"stopReason":"toolUse","timestamp":2}}',
        '{"role":"toolResult","toolCallId":"c1","toolName":"write","content":[{"type":"text","text":"ok"}],'
        f'"details":{deep(levels - 3)},"isError":false,"timestamp":3}}',
        f'{{"role":"assistant","provider":"anthropic","model":{deep(levels - 3)},'
        '"content":[{"type":"text","text":"written"}],"stopReason":"stop","timestamp":4}',
    ]
    filler = "word " * 900  # 30 turns of ~1,100 tokens each: more than the 20,000 kept
    for turn in range(30):
        messages.append(
            json.dumps({"role": "user", "content": f"next {turn} {filler}", "timestamp": 5})
        )
        messages.append(
            json.dumps(
                {
                    "role": "assistant",
                    "provider": "anthropic",
                    "model": "claude-sonnet-4-5",
                    "content": [{"type": "text", "text": f"done {turn} {filler}"}],
                    "stopReason": "stop",
                    "timestamp": 6,
                }
            )
        )
    text = orjson.dumps(HEADER).decode() + "\n"
    for index, message in enumerate(messages):
        parent = "null" if index == 0 else f'"d{index - 1:07d}"'
        text += line % (f"d{index:07d}", parent, index % 10, message)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def depth_of(text: str) -> int:
    """How deep the arrays of JSON ``text`` nest (counted, never parsed)."""
    depth = most = 0
    for match in re.finditer(r'"(?:[^"\\]|\\.)*"|[\[\]]', text):
        token = match.group()
        if token == "[":
            depth += 1
            most = max(most, depth)
        elif token == "]":
            depth -= 1
    return most


@pytest.mark.parametrize("levels", [DEPTH, 1_020])
def test_show_reads_values_as_deep_as_orjson_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], levels: int
) -> None:
    """``show``, ``show --json`` and ``show --context --json`` of a tool call nested as deep
    as orjson reads a message (its line is a level deeper): the views, and the values whole."""
    path = deep_session(tmp_path / "s.jsonl", levels)
    code, out, err = run_in_process(capsys, "show", path, "--agent", "omp")
    assert (code, err) == (0, "") and "→ write" in out
    for args in (["--json"], ["--context", "--json", "--agent", "omp"]):
        code, out, err = run_in_process(capsys, "show", path, *args)
        assert (code, err) == (0, ""), args
        assert depth_of(out) == levels + 2  # inside a content list, inside "branch" or "messages"
        assert f'"nested":{deep(levels)}' in out


@pytest.mark.litellm
def test_handoffs_of_values_as_deep_as_orjson_reads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], llm_server: FakeLLMServer
) -> None:
    """The built-in writer, a model and an in-place handoff of that session: each done, what
    each wrote valid, the model sent the arguments whole."""
    folder = tmp_path / "sessions"
    source = deep_session(folder / "deep.jsonl", DEPTH)
    before = source.read_bytes()
    code, out, err = run_in_process(capsys, source, "--model", "extractive", "--agent", "omp")
    assert code == 0, err
    made = next(folder.glob(f"*_{out.strip()}.jsonl"))
    assert "src/a.py" in made.read_text()
    llm_server.script(Reply(DOCUMENT))
    asked = folder / "asked.jsonl"  # as it was: the first handoff's record would anchor it
    asked.write_bytes(before)
    code, _, err = run_in_process(
        capsys,
        asked,
        "--model",
        "openai/test-model",
        "--api-base",
        llm_server.base_url,
        "--agent",
        "omp",
    )
    assert code == 0, err
    call = llm_server.requests[0].messages[1]["tool_calls"][0]["function"]["arguments"]
    assert call == f'{{"path":"src/a.py","nested":{deep(DEPTH).replace("1.0", "1")}}}'
    in_place = folder / "in-place.jsonl"
    in_place.write_bytes(before)
    code, _, err = run_in_process(capsys, in_place, "--in-place", "--model", "extractive")
    assert code == 0, err
    assert in_place.read_bytes().startswith(before)
    (entry,) = strict_json_lines(in_place.read_bytes()[len(before) :])
    assert entry["type"] == "compaction" and "src/a.py" in entry["summary"]


# --- memory within twice the file (item 10) --------------------------------------------------

WORDS = "the session tool file test parser error branch context model token write read".split()


def _text(size: int, rng: random.Random) -> str:
    """``size`` characters of words and lines (a random 64 kB, over and over: quick to make)."""
    words = [rng.choice(WORDS) + ("\n" if rng.random() < 0.1 else " ") for _ in range(12_000)]
    block = "".join(words)
    return (block * (size // len(block) + 1))[:size]


def _message_line(index: int, message: dict[str, Any]) -> bytes:
    parent = None if index == 0 else f"{index - 1:08x}"
    entry = {
        "type": "message",
        "id": f"{index:08x}",
        "parentId": parent,
        "timestamp": "2026-01-01T00:00:00.000Z",
        "message": message,
    }
    return orjson.dumps(entry) + b"\n"


def _assistant(blocks: list[dict[str, Any]], stop: str = "stop") -> dict[str, Any]:
    return {
        "role": "assistant",
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "content": blocks,
        "usage": {
            "input": 12,
            "output": 3,
            "cacheRead": 0,
            "cacheWrite": 0,
            "totalTokens": 15,
            "cost": {
                "input": 0.00004,
                "output": 0.00002,
                "cacheRead": 0,
                "cacheWrite": 0,
                "total": 0.00006,
            },
        },
        "stopReason": stop,
        "timestamp": 1776762097800,
    }


def _big(shape: str, size: int, rng: random.Random) -> list[dict[str, Any]]:
    """The messages of a session of about ``size`` bytes in one of the shapes."""
    if shape == "one huge line":
        return [{"role": "user", "content": _text(size, rng), "timestamp": 1}]
    if shape == "huge tool result":
        call = {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": "cat big"}}
        result = {
            "role": "toolResult",
            "toolCallId": "c1",
            "toolName": "bash",
            "content": [{"type": "text", "text": _text(size, rng)}],
            "isError": False,
            "timestamp": 3,
        }
        return [
            {"role": "user", "content": "run it", "timestamp": 1},
            _assistant([call], "toolUse"),
            result,
        ]
    if shape == "huge tool-call argument":
        arguments = {"path": "big.txt", "content": _text(size, rng)}
        call = {"type": "toolCall", "id": "c1", "name": "write", "arguments": arguments}
        result = {
            "role": "toolResult",
            "toolCallId": "c1",
            "toolName": "write",
            "content": [{"type": "text", "text": "written"}],
            "isError": False,
            "timestamp": 3,
        }
        return [
            {"role": "user", "content": "write it", "timestamp": 1},
            _assistant([call], "toolUse"),
            result,
        ]
    if shape == "huge image":
        data = base64.b64encode(rng.randbytes(size * 3 // 4)).decode()
        blocks = [
            {"type": "text", "text": "look"},
            {"type": "image", "data": data, "mimeType": "image/png"},
        ]
        return [{"role": "user", "content": blocks, "timestamp": 1}]
    assert shape == "many tiny lines"
    messages: list[dict[str, Any]] = []
    written = 0
    while written < size:  # as short as the agents write them: ~140 and ~420 bytes
        messages.append({"role": "user", "content": f"hi {len(messages)}", "timestamp": 1})
        messages.append(_assistant([{"type": "text", "text": f"ok {len(messages)}"}]))
        written += 560
    return messages


CLAUDE_SHAPE = "a Claude Code session"
"""Many short records of Claude Code's (a prompt, a tool call, its result, an answer, over
and over: ~500 bytes each, the keys every record of the CLI's ends with), then 30 long
prompts: read by its rules."""
_CLAUDE_TAIL = {
    "userType": "external",
    "entrypoint": "cli",
    "cwd": "/home/u/proj",
    "sessionId": "c8e5e286-ae88-42dd-9175-7a7482e56fde",
    "version": "2.1.332",
    "gitBranch": "main",
}


def _claude_answer(index: int, blocks: list[dict[str, Any]], stop: str) -> dict[str, Any]:
    return {
        "id": f"msg_{index:024d}",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-6",
        "content": blocks,
        "stop_reason": stop,
        "usage": {"input_tokens": 12, "output_tokens": 3},
    }


def _claude_messages(size: int, rng: random.Random) -> Iterator[dict[str, Any]]:
    """The messages of ``CLAUDE_SHAPE``, its short records for about ``size`` bytes."""
    for step in range(0, size // 500, 4):
        call = f"toolu_{step:020d}"
        use = {"type": "tool_use", "id": call, "name": "Read",
               "input": {"file_path": f"/home/u/proj/src/m{step}.py"}}  # fmt: skip
        yield {"role": "user", "content": f"step {step}: fix the parser"}
        yield _claude_answer(step + 1, [use], "tool_use")
        result = {"type": "tool_result", "tool_use_id": call, "content": f"line {step}"}
        yield {"role": "user", "content": [result]}
        yield _claude_answer(step + 3, [{"type": "text", "text": f"done {step}"}], "end_turn")
    for turn in range(30):
        yield {"role": "user", "content": _text(4_000, rng)}
        yield _claude_answer(size + turn, [{"type": "text", "text": "ok"}], "end_turn")


def claude_session(path: Path, megabytes: float) -> Path:
    """``CLAUDE_SHAPE`` of about ``megabytes`` MB."""
    rng = random.Random(10)
    parent = None
    with open(path, "wb") as out:
        for index, message in enumerate(_claude_messages(int(megabytes * 1_000_000), rng)):
            uuid = f"00000000-0000-4000-8000-{index:012d}"
            record = {
                "parentUuid": parent,
                "isSidechain": False,
                "type": message["role"],
                "message": message,
                "uuid": uuid,
                "timestamp": "2026-01-01T00:00:00.000Z",
            }
            out.write(orjson.dumps(record | _CLAUDE_TAIL) + b"\n")
            parent = uuid
    return path


def shaped_session(path: Path, shape: str, megabytes: float) -> Path:
    """A session of about ``megabytes`` MB of the shape, then turns worth more than an
    in-place handoff keeps (so that there is something to compact)."""
    if shape == CLAUDE_SHAPE:
        return claude_session(path, megabytes)
    rng = random.Random(10)
    filler = [{"role": "user", "content": _text(4_000, rng), "timestamp": 1} for _ in range(30)]
    messages = [
        *_big(shape, int(megabytes * 1_000_000), rng),
        *filler,
        _assistant([{"type": "text", "text": "ok"}]),
    ]
    with open(path, "wb") as out:
        out.write(orjson.dumps(HEADER) + b"\n")
        for index, message in enumerate(messages):
            out.write(_message_line(index, message))
    return path


SHAPES = [
    "one huge line",
    "many tiny lines",
    "huge tool result",
    "huge tool-call argument",
    "huge image",
    CLAUDE_SHAPE,
]
AGENTS = {CLAUDE_SHAPE: "claude"}
"""The rules each shape is read by (``HANDOFF_AGENT``), where they are not oh-my-pi's."""
COMMANDS: dict[str, Callable[[Path], list[str]]] = {
    "show": lambda p: ["show", str(p)],
    "show --json": lambda p: ["show", str(p), "--json"],
    "show --context --json": lambda p: ["show", str(p), "--context", "--json"],
    "export": lambda p: ["export", str(p)],
    "extractive handoff": lambda p: [str(p), "--model", "extractive", "-q"],
    "in-place handoff": lambda p: [str(p), "--in-place", "--model", "extractive", "-q"],
    # A model in LiteLLM's table, counted with its tokenizer: planned (many requests, for the
    # larger shapes), every request printed, nothing called.
    "model --dry-run": lambda p: [
        str(p),
        "--dry-run",
        "--json",
        "--model",
        MODEL,
        "--api-key",
        "k",
    ],
}
MODEL = "openai/gpt-4o"
CALLED = "model handoff"
"""A real handoff through LiteLLM to the loopback server. LiteLLM's import and its first call
take some 300 MB whatever the session (its modules, and the two tokenizers its cost reckoning
loads): by themselves more than twice a 100 MB file. What the file adds to that is held to
twice its size."""


def called(server: FakeLLMServer) -> Callable[[Path], list[str]]:
    return lambda p: [str(p), "--model", MODEL, "--api-key", "k", "--api-base", server.base_url]


TOO_SLOW = {("many tiny lines", "show"), (CLAUDE_SHAPE, "show")}
"""Drawn at tens of seconds a hundred thousand lines: measured at the stress size only."""


# The program, then its peak resident memory (VmHWM, of this process image: the rusage of a
# child counts the pages of the test process it was forked from, before it ran the program).
_MEASURED = """
import os, sys
from handoff_cli.agents import load_session
from handoff_cli.cli.app import run
from handoff_cli.handoff.facts import facts_of
code = run(sys.argv[2:])
sys.stdout.flush()
with open("/proc/self/status") as status:
    peak = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
with open(sys.argv[1], "w") as out:
    out.write(peak)
os._exit(code)
"""


def peak_memory(args: list[str], report: Path, forked: bool = False, agent: str = "omp") -> int:
    """The peak resident memory (bytes) of the program run with ``args`` (by ``agent``'s
    rules), in a process of its own (a child of the zygote, when ``forked``); it must
    succeed."""
    env = {**os.environ, "HANDOFF_AGENT": agent}
    if forked:  # its peak counts the zygote's pages too: the same for every run
        child = fork(args, report.with_suffix(".run"), env, peak=True)
        assert child.wait(timeout=600) == 0, child.stderr
        return child.peak
    done = subprocess.run(  # a fresh process: its peak memory is the program's alone
        [sys.executable, "-c", _MEASURED, str(report), *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr.decode()
    return int(report.read_text()) * 1024


def _fresh(path: Path, source: Path) -> Path:
    path.write_bytes(source.read_bytes())  # handoffs write to it: each run starts from the same
    return path


@pytest.mark.zygote  # forks the program from the zygote (tests/conftest.py)
@pytest.mark.heavy
@pytest.mark.parametrize("megabytes", quick_and_stress(20, 100))
@pytest.mark.parametrize("shape", SHAPES)
def test_peak_memory_is_within_twice_the_file(
    tmp_path: Path,
    llm_server: FakeLLMServer,
    shape: str,
    megabytes: int,
) -> None:
    """Each command's peak memory for each shape of file. At the stress size (100 MB), at
    most twice the file, all told (for a call through LiteLLM, on top of what it takes for a
    small session: ``CALLED``). At the quick size, what the file adds from half its size to its
    whole grows at most twice as fast as the file (the interpreter's own 15-20 MB, which a
    small file cannot carry, set aside)."""
    llm_server.default = Reply(DOCUMENT)
    big = shaped_session(tmp_path / "big.jsonl", shape, megabytes)
    small = shaped_session(tmp_path / "small.jsonl", shape, megabytes / 2)
    size, half = big.stat().st_size, small.stat().st_size
    run, report = tmp_path / "run.jsonl", tmp_path / "peak"
    agent = AGENTS.get(shape, "omp")
    for name, command in {**COMMANDS, CALLED: called(llm_server)}.items():
        if megabytes < 100 and (shape, name) in TOO_SLOW:
            continue
        forked = megabytes < 100  # growth between two sizes: the zygote's pages cancel
        peak = peak_memory(command(_fresh(run, big)), report, forked, agent)
        if megabytes >= 100:
            floor = 0
            if name == CALLED:
                tiny = shaped_session(tmp_path / "tiny.jsonl", shape, 0.05)
                floor = peak_memory(command(_fresh(run, tiny)), report, agent=agent)
            assert peak - floor <= 2 * size, f"{name}: {(peak - floor) / size:.2f}x the file"
        else:
            smaller = peak_memory(command(_fresh(run, small)), report, forked, agent)
            growth = (peak - smaller) / (size - half)
            assert growth <= 2, f"{name}: {growth:.2f} bytes of memory a byte of file"


LONG_TEXT_COMMANDS = ("show", "export", "extractive handoff")
"""The commands that read a long text as people see it, its head and tail: a text of 100 MB
costs them what reading its line does."""


@pytest.mark.zygote  # forks the program from the zygote (tests/conftest.py)
@pytest.mark.heavy
@pytest.mark.parametrize("megabytes", quick_and_stress(20, 100))
@pytest.mark.parametrize("agent", LONG_TEXT_AGENTS)
def test_peak_memory_of_a_text_that_never_repeats_is_within_twice_the_file(
    tmp_path: Path, agent: str, megabytes: int
) -> None:
    """``_text`` repeats a block, which a str of it shares and compresses as a text of real work
    does not: here one message of text that never repeats (with an emoji: four bytes a
    character as a str), in each agent's format. As the shapes above: at the stress size at
    most twice the file; at the quick size, what the file adds from half its size to its whole
    grows at most twice as fast as the file. (``make bench`` holds them to 1.5x.)"""
    big = long_text_session(tmp_path / "big.jsonl", agent, megabytes)
    small = long_text_session(tmp_path / "small.jsonl", agent, megabytes / 2)
    size, half = big.stat().st_size, small.stat().st_size
    run, report = tmp_path / "run.jsonl", tmp_path / "peak"
    for name in LONG_TEXT_COMMANDS:
        forked = megabytes < 100
        peak = peak_memory(COMMANDS[name](_fresh(run, big)), report, forked, agent)
        if megabytes >= 100:
            assert peak <= 2 * size, f"{name}: {peak / size:.2f}x the file"
        else:
            smaller = peak_memory(COMMANDS[name](_fresh(run, small)), report, forked, agent)
            growth = (peak - smaller) / (size - half)
            assert growth <= 2, f"{name}: {growth:.2f} bytes of memory a byte of file"


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, (list, dict)):
        for item in value.values() if isinstance(value, dict) else value:
            yield from _strings(item)


@pytest.mark.parametrize("agent", LONG_TEXT_AGENTS)
def test_a_long_text_is_read_whole_where_it_is_sent_and_cut_where_it_is_shown(
    tmp_path: Path, agent: str
) -> None:
    """Read with its long texts cut at load, a session still sends and writes each whole: the
    context's JSON holds it, its size is counted as the whole's, and the views show its head
    and tail."""
    path = long_text_session(tmp_path / "s.jsonl", agent, 3)
    text = orjson.loads(max(path.read_bytes().splitlines(), key=len))
    text = next(t for t in _strings(text) if len(t) > 1_000_000)
    env = {"HANDOFF_AGENT": agent}
    sent = run_cli("show", path, "--context", "--json", env=env)
    assert sent.code == 0, sent.stderr
    assert text in _strings(sent.json())
    session = load_session(path)
    records = [r for r in branch(session, leaf(session)) if r.has_message]
    assert all(r.message_size == len(r.message_json()) for r in records)
    assert any(text in _strings(r.message(None)) for r in records)
    shown = [r.message() for r in records]
    assert not any(text in _strings(m) for m in shown)
    assert any(s.startswith(text[:1000]) and s.endswith(text[-1000:]) for s in _strings(shown))
    exported = run_cli("export", path, env=env)
    assert exported.code == 0 and "characters cut" in exported.stdout
    listed = run_cli("show", path, env=env)
    said = [line.split(None, 2)[2] for line in listed.stdout.splitlines()[10:]]
    assert any(s.startswith(f"user           {' '.join(text.split()[:3])}") for s in said)


def test_claude_code_records_share_their_facts(tmp_path: Path) -> None:
    """The facts a Claude Code record keeps are one of a few, whatever calls it makes or
    answers: those ids are read by oh-my-pi's rules alone (a tuple and an id a call and a
    result were a fifth of what 200,000 records took)."""
    session = load_session(claude_session(tmp_path / "c.jsonl", 2))
    messages = [r for r in session.records if r.type == "message"]
    assert len(messages) > 4_000
    assert len({id(r.loaded_facts) for r in messages}) <= 8


def test_the_facts_let_a_call_go_once_it_is_answered(tmp_path: Path) -> None:
    """Walking a branch of many tool calls, the facts hold a call until its result, and a
    success only where a failure came before it: what a branch twice as long takes more is its
    calls' paths (the ``<files>`` block's), some 170 bytes a call, not each call (520)."""
    peaks = []
    for megabytes in (2, 4):
        session = load_session(claude_session(tmp_path / f"{megabytes}.jsonl", megabytes))
        path = branch(session, leaf(session, None))
        tracemalloc.start()
        facts = facts_of(session, path)
        peaks.append((tracemalloc.get_traced_memory()[1], len(facts.read_files)))
        tracemalloc.stop()
    (smaller, calls), (larger, more) = peaks
    assert more - calls >= 1_000
    assert (larger - smaller) / (more - calls) < 300


@pytest.mark.zygote  # forks the program from the zygote (tests/conftest.py)
@pytest.mark.heavy
@pytest.mark.parametrize("megabytes", quick_and_stress(20, 100))
@pytest.mark.parametrize("shape", ["one huge line", "many tiny lines"])
def test_recording_into_an_old_version_stays_within_twice_the_file(
    tmp_path: Path, shape: str, megabytes: int
) -> None:
    """A handoff recorded into a version 2 file rewrites it whole at version 3 first: written
    a line at a time, never the whole file held at once."""

    def old(path: Path, size: float) -> Path:
        shaped_session(path, shape, size)
        lines = path.read_bytes().split(b"\n", 1)
        header = orjson.loads(lines[0])
        path.write_bytes(orjson.dumps({**header, "version": 2}) + b"\n" + lines[1])
        return path

    big, small = (
        old(tmp_path / "big.jsonl", megabytes),
        old(tmp_path / "small.jsonl", megabytes / 2),
    )
    size, half = big.stat().st_size, small.stat().st_size
    command = COMMANDS["extractive handoff"]
    forked = megabytes < 100  # growth between two sizes: the zygote's pages cancel
    peak = peak_memory(command(_fresh(tmp_path / "run.jsonl", big)), tmp_path / "peak", forked)
    assert b'"version":3' in (tmp_path / "run.jsonl").read_bytes()[:200]  # rewritten
    if megabytes >= 100:
        assert peak <= 2 * size, f"{peak / size:.2f}x the file"
    else:
        smaller = peak_memory(
            command(_fresh(tmp_path / "run.jsonl", small)), tmp_path / "peak", forked
        )
        growth = (peak - smaller) / (size - half)
        assert growth <= 2, f"{growth:.2f} bytes of memory a byte of file"
