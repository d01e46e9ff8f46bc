"""Performance figures for handoff_cli (``make bench``): printed, never asserted.

These machines are shared and noisy, so every figure is the best of several runs, and each is
set beside a reference measured the same way on the same machine at the same moment.

1. ``show --context --json`` of a 100 MB session against a bare Python process that parses
   every line with orjson and writes it back out with orjson (target: at most 1.5x), and its
   peak memory against the file's size (target: at most 2x).
2. ``list --json`` over 1,000 sessions (target: under 0.3 s).
3. The start-up of ``handoff list`` (an empty folder) against a bare ``python -c pass``, and a
   check that litellm is not imported on that path.
4. Planning a handoff of sessions of 1x, 10x and 50x a 128k model's window: the time it takes,
   the requests, and the tokens sent against the session's own (target: about 1.3x at most).
5. Masking secrets in a few MB of session text: the texts of the fixture sessions as chat
   messages, a secret now and then (target: at least 50 MB/s).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

HERE = Path(__file__).resolve().parent
PYTHON = sys.executable
HANDOFF = [PYTHON, "-m", "handoff_cli"]

BASELINE = """
import gc, sys, orjson
gc.disable()
write = sys.stdout.buffer.write
with open(sys.argv[1], "rb") as f:
    for line in f:
        write(orjson.dumps(orjson.loads(line)) + b"\\n")
"""

WORDS = (
    "the session tool file test parser error branch context model token write read import "
    "config handoff compaction summary cache path function module retry"
).split()


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def write_big_session(
    path: Path, megabytes: float, seed: int = 7, compact_every: int | None = 2000
) -> None:
    """A realistic session of about ``megabytes`` MB: turns of user, assistant with tool calls
    and tool results, a compaction every ~2,000 entries, and a short abandoned branch now and
    then."""
    rng = random.Random(seed)
    target = megabytes * 1_000_000
    size = 0
    header = {
        "type": "session",
        "version": 3,
        "id": "0199aaaa-0000-7000-8000-00000000bench",
        "timestamp": "2026-01-01T00:00:00.000Z",
        "cwd": "/home/u/bench",
    }
    with open(path, "wb") as out:
        out.write(orjson.dumps(header) + b"\n")
        parent: str | None = None
        count = 0

        def emit(kind: str, **fields: object) -> str:
            nonlocal parent, count, size
            count += 1
            entry_id = f"{count:08x}"
            entry = {
                "type": kind,
                "id": entry_id,
                "parentId": parent,
                "timestamp": "2026-01-01T00:00:00.000Z",
                **fields,
            }
            line = orjson.dumps(entry) + b"\n"
            out.write(line)
            size += len(line)
            parent = entry_id
            return entry_id

        while size < target:
            turn_start = parent
            emit("message", message={"role": "user", "content": _text(rng, 30), "timestamp": 1})
            call = f"toolu_{count}"
            emit(
                "message",
                message={
                    "role": "assistant",
                    "api": "anthropic-messages",
                    "provider": "anthropic",
                    "model": "claude-sonnet-4-5",
                    "content": [
                        {"type": "thinking", "thinking": _text(rng, 40), "thinkingSignature": "s"},
                        {"type": "text", "text": _text(rng, 60)},
                        {
                            "type": "toolCall",
                            "id": call,
                            "name": "bash",
                            "arguments": {"cmd": "ls"},
                        },
                    ],
                    "usage": {"input": 100, "output": 50, "totalTokens": 150},
                    "stopReason": "toolUse",
                    "timestamp": 2,
                },
            )
            emit(
                "message",
                message={
                    "role": "toolResult",
                    "toolCallId": call,
                    "toolName": "bash",
                    "content": [{"type": "text", "text": _text(rng, rng.randint(50, 1500))}],
                    "isError": False,
                    "timestamp": 3,
                },
            )
            if compact_every and count % compact_every < 3:
                emit(
                    "compaction",
                    summary=_text(rng, 200),
                    firstKeptEntryId=parent,
                    tokensBefore=150000,
                )
            if rng.random() < 0.01 and turn_start is not None:
                parent = turn_start  # go back: the turn just written becomes an abandoned branch


def _run(command: Sequence[str], runs: int) -> tuple[float, int]:
    """Best wall time (s) and the peak RSS (bytes) of that run, stdout discarded."""
    best, peak = float("inf"), 0
    for _ in range(runs):
        start = time.perf_counter()
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL)
        _, status, usage = os.wait4(process.pid, 0)
        elapsed = time.perf_counter() - start
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"failed: {' '.join(command)}")
        if elapsed < best:
            best, peak = elapsed, usage.ru_maxrss * 1024
    return best, peak


def bench_context(work: Path, megabytes: int, runs: int) -> None:
    path = work / "big.jsonl"
    write_big_session(path, megabytes)
    size = path.stat().st_size
    base, base_rss = _run([PYTHON, "-c", BASELINE, str(path)], runs)
    ours, ours_rss = _run([*HANDOFF, "show", str(path), "--context", "--json"], runs)
    print(f"show --context --json, {size / 1e6:.0f} MB session (best of {runs}):")
    print(f"  bare orjson parse + write   {base:6.3f} s   peak RSS {base_rss / 1e6:6.0f} MB")
    print(f"  handoff show --context      {ours:6.3f} s   peak RSS {ours_rss / 1e6:6.0f} MB")
    print(
        f"  time ratio {ours / base:.2f}x (target <= 1.5x)   "
        f"memory {ours_rss / size:.2f}x the file (target <= 2x)"
    )


def bench_list(work: Path, sessions: int, runs: int) -> None:
    folder = work / "many"
    sample = HERE.parent / "sessions"
    examples = sorted(sample.rglob("*.jsonl"))
    for index in range(sessions):
        source = examples[index % len(examples)]
        target = folder / f"proj-{index % 20}" / f"{index:05d}_{source.name}"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    elapsed, _ = _run([*HANDOFF, "list", str(folder), "--json"], runs)
    print(
        f"list --json over {sessions} sessions: {elapsed:.3f} s (target < 0.3 s, best of {runs},"
        " process start-up included)"
    )


def bench_startup(work: Path, runs: int) -> None:
    empty = work / "empty"
    empty.mkdir()
    bare, _ = _run([PYTHON, "-c", "pass"], runs)
    ours, _ = _run([*HANDOFF, "list", str(empty)], runs)
    probe = subprocess.run(
        [
            PYTHON,
            "-c",
            "import sys; from handoff_cli.cli import run\n"
            "run(['list', sys.argv[1]])\n"
            "print('litellm' in sys.modules)",
            str(empty),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    print(
        f"start-up of `handoff list` (empty folder): {ours:.3f} s, bare python {bare:.3f} s, "
        f"{ours - bare:.3f} s ours; litellm imported: {probe.stdout.strip()}"
    )


def bench_planning(work: Path, window: int = 128_000) -> None:
    """A dry run: planned, counted, nothing called. Tokens sent count each draft at its
    largest."""
    from handoff_cli.config import Options
    from handoff_cli.core import dry_run, prepare

    print(f"dry run of a handoff to a {window:,}-token model (no calls; drafts at their largest):")
    print("  session    own tokens  strategy  requests  tokens sent  ratio  dry run")
    for multiple in (1, 10, 50):
        path = work / f"plan-{multiple}x.jsonl"
        # About 7 bytes of session file a token of this text.
        write_big_session(path, multiple * window * 7 / 1e6, compact_every=None)
        options = Options(model="openai/test-model", api_key="sk-none", context_window=window)
        start = time.perf_counter()
        planned = dry_run(path, options)
        elapsed = time.perf_counter() - start
        request = prepare(path, options)
        own = sum(request.model.count([m]) for m in request.conversation)
        sent = sum(r["tokens"] for r in planned["requests"])
        print(
            f"  {multiple:>3}x {own:>14,}  {planned['strategy']:<8} {len(planned['requests']):>9}"
            f" {sent:>12,}  {sent / own:5.2f}  {elapsed:6.2f} s"
        )


# Lines with a secret, one in every ~100 messages of the redaction benchmark (fake, as in
# tests/fixtures/secrets).
SECRET_LINES = (
    "export OPENAI_API_KEY=sk-proj-rhQSMlvNaAmERWHjdjzYPzxiBzSlHNJqiJ5PqKfUg7z1xtn1DjaiZ9sH",
    'curl -H "Authorization: Bearer 7fQ2mZ9xKc4LpV8wRt1nYb6sJd3hGa0e" https://api.acme.dev/v2',
    "DATABASE_URL=postgres://app:Zq8rLm2xVt6w@db.internal:5432/app",
    '{"command":"export API_TOKEN=\\"abc123def456ghi789\\" && ./deploy.sh"}',
    "aws_secret_access_key = uyWqX/nkYYv6RwBoaEisEw8xCNopcN/soo2s/knQ",
)


def session_messages(megabytes: float) -> tuple[list[dict[str, Any]], int]:
    """About ``megabytes`` MB of chat messages as a handoff sends them: the requests built from
    the fixture sessions (prose, code, tool calls and output, ids), over and over, a secret line
    added to one message in ~100. Also the size of their text."""
    from handoff_cli.context import build_context
    from handoff_cli.prompt import handoff_request
    from handoff_cli.session import load_session
    from handoff_cli.tree import branch, leaf

    root = HERE.parent
    paths = sorted(
        [*(root / "tests" / "fixtures").rglob("*.jsonl"), *(root / "sessions").rglob("*.jsonl")]
    )
    requests = []
    for path in paths:
        session = load_session(path)
        requests.append(
            handoff_request(build_context(branch(session, leaf(session))).messages(), None)
        )
    rng = random.Random(7)
    messages: list[dict[str, Any]] = []
    size = 0
    while size < megabytes * 1_000_000:
        for request in requests:
            for message in request:
                message = dict(message)
                if isinstance(message.get("content"), str) and rng.random() < 0.01:
                    message["content"] += "\n" + rng.choice(SECRET_LINES)
                messages.append(message)
                size += len(orjson.dumps(message))
    texts: list[str] = []
    _strings(messages, texts)
    return messages, sum(len(t.encode()) for t in texts)


def _strings(value: Any, found: list[str]) -> None:
    if isinstance(value, str):
        found.append(value)
    elif isinstance(value, list):
        for item in value:
            _strings(item, found)
    elif isinstance(value, dict):
        for item in value.values():
            _strings(item, found)


def bench_redaction(megabytes: float, runs: int) -> None:
    from handoff_cli.redact import Redactor

    messages, size = session_messages(megabytes)
    texts: list[str] = []
    _strings(messages, texts)
    joined = "\n".join(texts)
    best_messages = best_string = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        redactor = Redactor()
        redactor.messages(messages)
        best_messages = min(best_messages, time.perf_counter() - start)
        start = time.perf_counter()
        Redactor().text(joined)
        best_string = min(best_string, time.perf_counter() - start)
    print(
        f"redaction of {size / 1e6:.1f} MB of session text in {len(messages):,} chat messages,"
        f" {redactor.count} secrets masked (best of {runs}):"
    )
    print(f"  the messages      {size / best_messages / 1e6:6.1f} MB/s (target >= 50 MB/s)")
    print(f"  as one string     {size / best_string / 1e6:6.1f} MB/s")


def bench_rotation(work: Path, sessions: int, handoffs: int, runs: int) -> None:
    """Rotation: choosing among ``sessions`` sessions of 1 MB against reading each with
    ``show --context --json`` (in one process, one after another); then ``handoffs`` handoffs,
    with the built-in writer and with a loopback model at one and at eight in flight."""
    import asyncio

    from handoff_cli.config import Options
    from handoff_cli.context import build_context
    from handoff_cli.listing import catalog
    from handoff_cli.output import Reporter, write_json
    from handoff_cli.rotate import RotateOptions, arotate, select
    from handoff_cli.session import load_session
    from handoff_cli.tree import branch, leaf

    folder = work / "rotate"
    folder.mkdir()
    write_big_session(folder / "00000.jsonl", 1)
    template = (folder / "00000.jsonl").read_bytes()
    for index in range(1, sessions):
        (folder / f"{index:05d}.jsonl").write_bytes(
            template.replace(b"00000000bench", f"{index:013d}".encode())
        )
    old = time.time() - 3600
    for path in folder.iterdir():
        os.utime(path, (old, old))
    sink = open(os.devnull, "wb")  # noqa: SIM115 - for the whole run
    start = time.perf_counter()
    for path in sorted(folder.iterdir()):
        loaded = load_session(path)
        built = build_context(branch(loaded, leaf(loaded)))
        write_json({"messages": built.serialized()}, sink)
    reading = time.perf_counter() - start
    start = time.perf_counter()
    found = catalog(folder)
    chosen, _ = select(
        found, RotateOptions(handoff=Options(model="extractive")), time.time(), Reporter()
    )
    choosing = time.perf_counter() - start
    print(
        f"rotation: choosing among {sessions} sessions of 1 MB ({len(chosen)} over the threshold)"
    )
    print(f"  show --context --json of each, one process   {reading:6.2f} s")
    ratio = choosing / reading
    print(f"  rotate's selection                           {choosing:6.2f} s  ({ratio:.2f}x)")

    sys.path.insert(0, str(HERE.parent))
    from tests.fakellm import FakeLLMServer, Reply

    small = work / "small"
    small.mkdir()
    for index in range(handoffs):
        write_big_session(small / f"{index:05d}.jsonl", 0.05, seed=index)
    document = "\n\n".join(
        f"## {n}\n- fact"
        for n in (
            "Goal",
            "Constraints & Preferences",
            "Progress",
            "Key Decisions",
            "Critical Context",
            "Next Steps",
        )
    )
    print(f"  {handoffs} handoffs of 50 kB sessions:")
    with FakeLLMServer() as server:
        server.default = Reply(document, chunks=4, delay=0.05)  # 0.2 s an answer
        for label, model, jobs in (
            ("built-in writer, 4 at once", "extractive", 4),
            ("loopback model, 1 at a time", "openai/test-model", 1),
            ("loopback model, 8 at once", "openai/test-model", 8),
        ):
            copy = work / f"copy-{jobs}-{model.replace('/', '-')}"
            shutil.copytree(small, copy)
            for path in copy.iterdir():
                os.utime(path, (old, old))
            base = Options(model=model, api_base=server.base_url if "/" in model else None)
            options = RotateOptions(handoff=base, over_tokens=1, jobs=jobs)
            found = catalog(copy)
            chosen, _ = select(found, options, time.time(), Reporter())
            start = time.perf_counter()
            outcomes, _ = asyncio.run(arotate(chosen, options, lambda o: None, Reporter()))
            elapsed = time.perf_counter() - start
            done = sum(o.status == "handed_off" for o in outcomes)
            print(f"    {label:<30} {elapsed:6.2f} s  ({done} handed off)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=int, default=100)
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--rotation-sessions", type=int, default=1000)
    parser.add_argument("--rotation-handoffs", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="handoff-bench-") as tmp:
        work = Path(tmp)
        bench_startup(work, args.runs)
        bench_list(work, args.sessions, args.runs)
        bench_context(work, args.megabytes, args.runs)
        bench_planning(work)
        bench_rotation(work, args.rotation_sessions, args.rotation_handoffs, args.runs)
    bench_redaction(4, args.runs)


if __name__ == "__main__":
    main()
