"""Performance figures for handoff_cli (``make bench``): printed, never asserted.

These machines are shared and noisy, so every figure is the best of several runs, and each is
set beside a reference measured the same way on the same machine at the same moment. Times
are CPU time of a fresh process (start-up included) unless said otherwise. Sessions come in two
line shapes (SHAPES): "long" (~44k lines per 100 MB) and "short" (many small tool results,
~160k lines per 100 MB, as real sessions of busy tool use run). The targets (issue 23) are
printed beside the figures, and a table at the end gives, for each, ours, the reference, the
ratio, the limit and whether it is met:

1. ``show --context --json`` at 10, 50, 100 and 200 MB against the floor (a fresh Python
   process that runs ``[orjson.loads(l) for l in f]`` and one ``orjson.dumps`` of the list),
   time and peak memory; at 100 MB also a session whose context is a short tail (one
   compaction near the end). Targets at 100 MB: <= 1.2x the floor for a whole file, <= 0.4x
   for a short tail; peak memory <= 1.0x the file. Then a fit of cost against lines and bytes.
   Beside each, the least an exact reader can do in Python (``LEAST``) plus the CLI's start-up:
   a short tail's limit under that is under what any implementation of this CLI can reach.
2. ``handoff --model extractive`` at 1, 10 and 100 MB. Targets: <= 0.5 s at 1 MB; at 100 MB
   <= 2x ``show --context`` of the same file, peak memory <= 1.5x the file. And ``show``,
   ``export`` and the extractive handoff of a session whose one message is 100 MB of text that
   never repeats, in each agent's format: peak memory <= 1.5x the file.
3. ``--dry-run --model openai/gpt-4o`` of a session of 10x a 128k window: <= 1.0 s wall.
4. ``list --json`` over 1,000 and 10,000 sessions.
5. Start-up, and how soon Ctrl-C ends a handoff at work (<= 0.2 s).
6. Planning (requests and tokens sent), masking secrets (>= 50 MB/s), rotation: ``rotate
   --dry-run`` over 1,000 x 1 MB <= 1.2x reading each with ``show --context`` in one process.

``--only context,extractive`` runs only those sections (``--help`` lists them), each still
with its references measured beside it.
"""

from __future__ import annotations

import argparse
import base64
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from handoff_cli.document import SECTIONS

HERE = Path(__file__).resolve().parent
PYTHON = sys.executable
HANDOFF = [PYTHON, "-m", "handoff_cli"]

# The floor, as issue 23 defines it: every line parsed into one list, the list written back as
# one document. The collector is off while it reads, as it is while ours loads a session.
BASELINE = """
import gc, sys, orjson
gc.disable()
with open(sys.argv[1], "rb") as f:
    entries = [orjson.loads(line) for line in f]
sys.stdout.buffer.write(orjson.dumps(entries))
"""

# The least an exact reader of a short tail can do in Python, for the targets' sake. "validate":
# every line validated, which no exact reader skips (one bad line changes the branch); simdjson
# is the fastest validator found, and refuses what orjson refuses (1e400, integers past 64 bits).
# "walk": also each line's id and parent read (msgspec, in C, nothing else built) and the branch
# walked from the last entry, as a reader of the tree must. No context is built, nothing is
# written, none of the CLI is imported.
LEAST = """
import gc, os, sys
from typing import Any
gc.disable()
import simdjson
walk = sys.argv[2] == "walk"
if walk:
    import msgspec
    class Head(msgspec.Struct, gc=False):
        type: Any = None
        id: Any = None
        parentId: Any = None
    heads = msgspec.json.Decoder(Head).decode_lines
parser = simdjson.Parser()
ids, parents, pending = [], [], b""
fd = os.open(sys.argv[1], os.O_RDONLY)
while chunk := os.read(fd, 1 << 20):
    cut = chunk.rfind(b"\\n") + 1
    block, pending = pending + chunk[:cut], chunk[cut:]
    document = parser.parse(b"[" + block.replace(b"\\n", b",") + b"0]")
    del document
    if walk:
        read = heads(block)
        ids += [h.id for h in read]
        parents += [h.parentId for h in read]
if walk:
    index = dict(zip(ids, range(len(ids))))
    at = len(ids) - 1
    while at is not None:
        parent = parents[at]
        at = index.get(parent) if parent is not None else None
"""

# The line shapes of the generated sessions: "long", turns of a long tool result each (~44k
# lines per 100 MB); "short", many small tool results and short messages, as real sessions of
# busy tool use run (>= 150k lines per 100 MB).
SHAPES = ("long", "short")

WORDS = (
    "the session tool file test parser error branch context model token write read import "
    "config handoff compaction summary cache path function module retry"
).split()


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def write_big_session(
    path: Path,
    megabytes: float,
    seed: int = 7,
    compact_every: int | None = 2000,
    shape: str = "long",
    tail: bool = False,
) -> int:
    """A realistic session of about ``megabytes`` MB: turns of user, assistant with tool calls
    and tool results, a compaction every ~``compact_every`` entries, and a short abandoned
    branch now and then; with ``tail``, one compaction near the end (the last ~1% of the
    bytes is the context). The lines are ``shape``'s (see SHAPES). Returns the line count."""
    rng = random.Random(seed)
    target = megabytes * 1_000_000
    short = shape == "short"
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

        def compact() -> None:
            emit(
                "compaction", summary=_text(rng, 200), firstKeptEntryId=parent, tokensBefore=150000
            )

        compacted = False
        while size < target:
            turn_start = parent
            emit(
                "message",
                message={"role": "user", "content": _text(rng, 8 if short else 30), "timestamp": 1},
            )
            for _ in range(rng.randint(1, 6) if short else 1):
                call = f"toolu_{count}"
                emit(
                    "message",
                    message={
                        "role": "assistant",
                        "api": "anthropic-messages",
                        "provider": "anthropic",
                        "model": "claude-sonnet-4-5",
                        "content": [
                            {
                                "type": "thinking",
                                "thinking": _text(rng, 8 if short else 40),
                                "thinkingSignature": "s",
                            },
                            {"type": "text", "text": _text(rng, 6 if short else 60)},
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
                words = rng.randint(2, 170) if short else rng.randint(50, 1500)
                emit(
                    "message",
                    message={
                        "role": "toolResult",
                        "toolCallId": call,
                        "toolName": "bash",
                        "content": [{"type": "text", "text": _text(rng, words)}],
                        "isError": False,
                        "timestamp": 3,
                    },
                )
            if compact_every and count % compact_every < 3:
                compact()
            if tail and not compacted and size >= 0.99 * target:
                compact()
                compacted = True
            if rng.random() < 0.01 and turn_start is not None:
                parent = turn_start  # go back: the turn just written becomes an abandoned branch
    return count + 1


def _run(command: Sequence[str], runs: int, cpu: bool = False) -> tuple[float, int]:
    """Best wall time (or, with ``cpu``, CPU time) in seconds and the peak RSS (bytes) of that
    run, stdout discarded."""
    best, peak = float("inf"), 0
    for _ in range(runs):
        start = time.perf_counter()
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL)
        _, status, usage = os.wait4(process.pid, 0)
        elapsed = time.perf_counter() - start
        if cpu:
            elapsed = usage.ru_utime + usage.ru_stime
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"failed: {' '.join(map(str, command))}")
        if elapsed < best:
            best, peak = elapsed, usage.ru_maxrss * 1024
    return best, peak


class Target(NamedTuple):
    """A row of the summary: ours against what the target names, measured in the same run (the
    ratio must be <= ``limit``), or, with no reference, ours against ``limit`` itself."""

    what: str
    ours: float
    reference: float | None
    limit: float
    unit: str = "s"

    @property
    def value(self) -> float:
        return self.ours / self.reference if self.reference else self.ours

    @property
    def met(self) -> bool:
        return self.value <= self.limit

    def cells(self) -> tuple[str, str, str, str, str]:
        digits = 0 if self.unit == "MB" else 2
        reference = "" if self.reference is None else f"{self.reference:.{digits}f} {self.unit}"
        ratio = "" if self.reference is None else f"{self.value:.2f}x"
        limit = f"<= {self.limit:g}{'x' if self.reference is not None else ' ' + self.unit}"
        met = "met" if self.met else f"NOT MET ({self.value / self.limit:.2f}x the limit)"
        return f"{self.ours:.{digits}f} {self.unit}", reference, ratio, limit, met


TARGETS: list[Target] = []
"""Every target measured in this run, for the summary at the end: each part appends its own."""


def _target(
    what: str, ours: float, limit: float, reference: float | None = None, unit: str = "s"
) -> str:
    row = Target(what, ours, reference, limit, unit)
    TARGETS.append(row)
    return "met" if row.met else "NOT MET"


class Point(NamedTuple):
    """One whole-file ``show --context`` measurement, for the fit of cost against size."""

    lines: int
    size: int
    seconds: float


def _fit(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float, float]:
    """Least squares ``y = a + b x``: a, b and the largest relative error of the fit."""
    n = len(xs)
    mean_x, mean_y = sum(xs) / n, sum(ys) / n
    spread = sum((x - mean_x) ** 2 for x in xs)
    b = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / spread
    a = mean_y - b * mean_x
    worst = max(abs(a + b * x - y) / y for x, y in zip(xs, ys, strict=True))
    return a, b, worst


def _floor(path: Path, runs: int) -> tuple[float, int]:
    return _run([PYTHON, "-c", BASELINE, str(path)], runs, cpu=True)


STARTUP_LINES = 40


def _least(path: Path, mode: str, runs: int) -> float:
    """CPU time of ``LEAST`` on ``path`` in ``mode`` ("validate" or "walk"): what no exact
    reader in Python does in less."""
    return _run([PYTHON, "-c", LEAST, str(path), mode], runs, cpu=True)[0]


def _startup(work: Path, runs: int) -> float:
    """CPU time of ``show --context --json`` of a session of ``STARTUP_LINES`` lines, less that
    of bare Python (which ``LEAST`` pays too): what the CLI costs before a session's size
    counts."""
    path = work / "startup.jsonl"
    write_big_session(path, 0.1, compact_every=None, shape="short")
    lines = path.read_bytes().splitlines(keepends=True)[:STARTUP_LINES]
    path.write_bytes(b"".join(lines))
    ours = _run([*HANDOFF, "show", str(path), "--context", "--json"], runs, cpu=True)[0]
    bare = _run([PYTHON, "-c", "pass"], runs, cpu=True)[0]
    path.unlink()
    return ours - bare


def bench_context_curve(
    work: Path, sizes: Sequence[int], runs: int
) -> dict[tuple[str, int], float]:
    """The cost curve of ``show --context --json`` against the floor, CPU time of a fresh
    process each, in both line shapes; returns ours for a whole file by (shape, MB), for the
    handoff's ratio."""
    print("show --context --json against the floor ([orjson.loads(l) for l in f], one dumps):")
    startup = _startup(work, runs)
    print(
        f"(the least an exact reader can do in Python, LEAST, validating only and walking the "
        f"tree too, each with the CLI's start-up added: `show --context --json` of a "
        f"{STARTUP_LINES}-line session less bare Python, {startup:.2f} s)"
    )
    print(
        "| shape | session | lines | context | floor | ours | ratio | peak memory | of the file "
        "| validate + start-up | walk + start-up |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    references: dict[tuple[str, int], float] = {}
    points: list[Point] = []
    for shape in SHAPES:
        cases = [(size, False) for size in sizes]
        if 100 in sizes:
            cases.insert(sizes.index(100) + 1, (100, True))
        for megabytes, tail in cases:
            path = work / f"context-{shape}-{megabytes}-{tail}.jsonl"
            lines = write_big_session(path, megabytes, compact_every=None, shape=shape, tail=tail)
            size = path.stat().st_size
            base, _ = _floor(path, runs)
            ours, rss = _run([*HANDOFF, "show", str(path), "--context", "--json"], runs, cpu=True)
            least = [_least(path, mode, runs) + startup for mode in ("validate", "walk")]
            ratio, memory = ours / base, rss / size
            label = "short tail" if tail else "whole file"
            print(
                f"| {shape} | {size / 1e6:.0f} MB | {lines:,} | {label} | {base:.2f} s "
                f"| {ours:.2f} s | {ratio:.2f}x | {rss / 1e6:.0f} MB | {memory:.2f}x "
                + "".join(f"| {s:.2f} s, {s / base:.2f}x " for s in least)
                + "|"
            )
            if megabytes == 100:
                what = f"show --context --json, 100 MB {shape}, {label}"
                _target(what, ours, 0.4 if tail else 1.2, base)
                if tail:
                    for mode, seconds in zip(("validating", "walking"), least, strict=True):
                        _target(f"  the least, {mode}, + start-up", seconds, 0.4, base)
                _target(f"peak memory of that, {shape} {label}", rss / 1e6, 1.0, size / 1e6, "MB")
            if not tail:
                points.append(Point(lines, size, ours))
                references[shape, megabytes] = ours
            path.unlink()
    if len(points) > 2:
        times = [p.seconds for p in points]
        a, b, worst = _fit([p.lines for p in points], times)
        print(f"fit, both shapes: seconds = {a:.3f} + {b * 1e6:.2f} us x lines (worst {worst:.0%})")
        a, b, worst = _fit([p.size for p in points], times)
        print(f"against bytes: seconds = {a:.3f} + {b * 1e9:.2f} ms x MB (worst {worst:.0%})")
    return references


def bench_extractive(
    work: Path, sizes: Sequence[int], runs: int, context_s: dict[tuple[str, int], float]
) -> None:
    """``handoff --model extractive`` (CPU time), in both shapes at 100 MB against
    ``show --context`` of the same file (the context section's figure, or measured here when
    that section did not run)."""
    print("\nhandoff --model extractive (CPU time; new session written, the old one untouched):")
    out = work / "out"
    out.mkdir(exist_ok=True)
    cases = [("long", size) for size in sizes]
    if 100 in sizes:
        cases.append(("short", 100))
    for shape, megabytes in cases:
        path = work / f"extractive-{shape}-{megabytes}.jsonl"
        write_big_session(path, megabytes, compact_every=None, shape=shape)
        size = path.stat().st_size
        command = [*HANDOFF, str(path), "--model", "extractive", "-q", "--no-record"]
        elapsed, rss = _run([*command, "--out-dir", str(out)], runs, cpu=True)
        note = ""
        if megabytes == 1:
            note = _target("extractive handoff, 1 MB", elapsed, 0.5)
        if megabytes == 100:
            show = context_s.get((shape, 100))
            if show is None:
                show, _ = _run([*HANDOFF, "show", str(path), "--context", "--json"], runs, True)
            met = _target(
                f"extractive handoff, 100 MB {shape}, against show --context", elapsed, 2, show
            )
            note = f"{elapsed / show:.2f}x show --context ({met})"
            _target(f"peak memory of that, {shape}", rss / 1e6, 1.5, size / 1e6, "MB")
        print(
            f"  {shape:<5} {megabytes:>5g} MB  {elapsed:6.2f} s  peak {rss / 1e6:5.0f} MB "
            f"({rss / size:.2f}x the file)  {note}"
        )
        path.unlink()


MAKE_LONG_TEXT = f"""
import sys
sys.path.insert(0, {str(HERE.parent)!r})
from tests.sessiongen import long_text_session
long_text_session(sys.argv[1], sys.argv[2], float(sys.argv[3]))
"""


def bench_long_text(work: Path, runs: int, megabytes: int = 100) -> None:
    """Peak memory of the commands that show a session as people read it, of a session whose
    one message is ``megabytes`` MB of text that never repeats (``write_big_session``'s words
    share what real work's text does not; this one has an emoji: four bytes a character as a
    str), in each agent's format. Target: <= 1.5x the file."""
    sys.path.insert(0, str(HERE.parent))
    from tests.sessiongen import LONG_TEXT_AGENTS

    print(f"\none message of {megabytes} MB of text that never repeats (peak memory):")
    commands = {
        "show": lambda p: ["show", str(p)],
        "export": lambda p: ["export", str(p)],
        "extractive handoff": lambda p: [str(p), "--model", "extractive", "-q", "--no-record"],
    }
    out = work / "out"
    out.mkdir(exist_ok=True)
    for agent in LONG_TEXT_AGENTS:
        path = work / f"long-{agent}.jsonl"
        # Made by a process of its own: a child's peak counts the pages of the one it forks from.
        subprocess.run([PYTHON, "-c", MAKE_LONG_TEXT, path, agent, str(megabytes)], check=True)
        size = path.stat().st_size
        for name, command in commands.items():
            args = command(path) + (["--out-dir", str(out)] if name.endswith("handoff") else [])
            _, rss = _run([*HANDOFF, *args, "--agent", agent], runs)
            met = _target(f"peak memory of {name}, {agent}", rss / 1e6, 1.5, size / 1e6, "MB")
            ratio = f"{rss / size:.2f}x the file"
            print(f"  {agent:<6} {name:<18} peak {rss / 1e6:5.0f} MB ({ratio}, {met})")
        path.unlink()


def bench_dry_run(work: Path, runs: int, window: int = 128_000) -> None:
    path = work / "dry-run.jsonl"
    write_big_session(path, 10 * window * 7 / 1e6, compact_every=None)  # ~7 bytes a token
    command = [
        *HANDOFF,
        str(path),
        "--dry-run",
        "--json",
        "--model",
        "openai/gpt-4o",
        "--api-key",
        "sk-x",
    ]
    elapsed, _ = _run(command, runs)
    cpu, _ = _run(command, runs, cpu=True)  # the work itself: wall time waits for a core too
    met = _target("dry run, 10x a 128k window (wall)", elapsed, 1.0)
    print(
        f"\n--dry-run --model openai/gpt-4o, 10x a 128k window: {elapsed:.2f} s "
        f"({cpu:.2f} s CPU, the counting threads' too) ({met})"
    )


def bench_dry_run_images(work: Path, runs: int, window: int = 128_000, images: int = 200) -> None:
    """``--dry-run`` of a session of 10x a 128k window whose user turns hold ``images`` PNG
    screenshots of 24 kB: counted from their headers, LiteLLM never imported."""
    path = work / "dry-run-images.jsonl"
    write_big_session(path, 10 * window * 7 / 1e6, compact_every=None)
    lines = path.read_bytes().splitlines()
    users = [i for i, line in enumerate(lines) if b'"role":"user"' in line]
    header = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR" + (1600).to_bytes(4, "big") + (900).to_bytes(4, "big")
    data = base64.b64encode(header + bytes(range(256)) * 96).decode()
    for at in users[:: max(1, len(users) // images)][:images]:
        entry = orjson.loads(lines[at])
        text = entry["message"]["content"]
        image = {"type": "image", "data": data, "mimeType": "image/png"}
        entry["message"]["content"] = [{"type": "text", "text": text}, image]
        lines[at] = orjson.dumps(entry)
    path.write_bytes(b"\n".join(lines) + b"\n")
    command = [
        *HANDOFF,
        str(path),
        "--dry-run",
        "--json",
        "--model",
        "openai/gpt-4o",
        "--api-key",
        "sk-x",
    ]
    elapsed, peak = _run(command, runs)
    cpu, _ = _run(command, runs, cpu=True)
    met = _target(f"dry run, 10x a 128k window, {images} images (wall)", elapsed, 1.0)
    print(
        f"--dry-run --model openai/gpt-4o, 10x a 128k window, {images} images: "
        f"{elapsed:.2f} s ({cpu:.2f} s CPU), {peak / 1e6:.0f} MB ({met})"
    )


def bench_list(work: Path, runs: int) -> None:
    """``list --json`` over folders of the example sessions, as many as a busy user has."""
    print("\nlist --json (CPU time, start-up included):")
    examples = sorted((HERE.parent / "sessions").rglob("*.jsonl"))
    for sessions, limit in ((1_000, 0.15), (10_000, 1.5)):
        folder = work / f"many-{sessions}"
        for index in range(sessions):
            source = examples[index % len(examples)]
            target = folder / f"proj-{index % 20}" / f"{index:05d}_{source.name}"
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
        # A cache of its own: the user's holds every folder listed before (the best run is warm).
        cache = ["--cache-dir", str(work / f"cache-{sessions}")]
        elapsed, _ = _run([*HANDOFF, "list", str(folder), "--json", *cache], runs, cpu=True)
        met = _target(f"list, {sessions:,} sessions (CPU)", elapsed, limit)
        print(f"  {sessions:>6,} sessions  {elapsed:5.2f} s CPU ({met})")
        shutil.rmtree(folder)


def bench_list_by_size(work: Path, runs: int) -> None:
    """``list --json`` over 1,000 sessions of 1 MB and of 62 kB, cold (no cache: it cannot be
    written) and warm: a warm list's cost is to grow with sessions, not with their bytes."""
    print("\nlist --json, 1,000 sessions by size (CPU time, start-up included):")
    warm: dict[str, float] = {}
    for label, megabytes in (("1 MB", 1.0), ("62 kB", 0.062)):
        folder, seed = work / f"list-{label}", work / "list-seed.jsonl"
        write_big_session(seed, megabytes)
        data = seed.read_bytes()
        for index in range(1_000):  # one id each, as real sessions have
            target = folder / f"proj-{index % 20}" / f"{index:05d}.jsonl"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data.replace(b"00000000bench", b"%013d" % index, 1))
        command = [*HANDOFF, "list", str(folder), "--json", "--cache-dir"]
        cold, _ = _run([*command, "/dev/null/no-cache"], runs, cpu=True)
        _run([*command, str(work / "list-cache")], 1)  # fills the cache
        warm[label], _ = _run([*command, str(work / "list-cache")], runs, cpu=True)
        print(
            f"  {label:>5}  cold {cold:5.2f} s  warm {warm[label]:5.2f} s CPU  "
            f"(warm / cold {warm[label] / cold:.2f}x)"
        )
        shutil.rmtree(folder)
    met = _target("list, 1,000 x 1 MB, warm (CPU)", warm["1 MB"], 0.5)
    ratio = warm["1 MB"] / warm["62 kB"]
    print(f"  1 MB / 62 kB warm: {ratio:.2f}x (16x the bytes); 1 MB warm <= 0.5 s: {met}")


def bench_startup(work: Path, runs: int) -> None:
    empty = work / "empty"
    empty.mkdir()
    bare, _ = _run([PYTHON, "-c", "pass"], runs)
    ours, _ = _run([*HANDOFF, "list", str(empty)], runs)
    probe = subprocess.run(
        [
            PYTHON,
            "-c",
            "import sys; from handoff_cli.cli.app import run\n"
            "run(['list', sys.argv[1]])\n"
            "print('litellm' in sys.modules)",
            str(empty),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    print(
        f"\nstart-up of `handoff list` (empty folder): {ours:.3f} s, bare python {bare:.3f} s, "
        f"{ours - bare:.3f} s ours; litellm imported: {probe.stdout.strip()}"
    )


def bench_cancel(work: Path, runs: int) -> None:
    """How long a handoff of a 100 MB session takes to end after SIGINT, sent while it works."""
    path = work / "cancel.jsonl"
    write_big_session(path, 100, compact_every=None)
    best = float("inf")
    for _ in range(runs):
        command = [*HANDOFF, str(path), "--model", "extractive", "-q", "--no-record"]
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(0.6)  # well into loading
        sent = time.perf_counter()
        process.send_signal(signal.SIGINT)
        _, error = process.communicate()
        best = min(best, time.perf_counter() - sent)
        if process.returncode != 130 or b"Handoff cancelled" not in error:
            raise SystemExit(f"not cancelled: {process.returncode} {error!r}")
    met = _target("Ctrl-C during a 100 MB handoff", best, 0.2)
    print(f"Ctrl-C while a 100 MB handoff works: exit after {best:.3f} s ({met})")
    path.unlink()


def bench_planning(work: Path, window: int = 128_000) -> None:
    """A dry run: planned, counted, nothing called. Tokens sent count each draft at its
    largest."""
    from handoff_cli.agents import OMP
    from handoff_cli.handoff.pipeline import dry_run, prepare
    from handoff_cli.handoff.writer import register
    from handoff_cli.llm.model import resolve_model

    register(resolve_model)
    from handoff_cli.llm.model import Model
    from handoff_cli.options import Options

    print(f"dry run of a handoff to a {window:,}-token model (no calls; drafts at their largest):")
    print("  session    own tokens  strategy  requests  tokens sent  ratio  dry run")
    for multiple in (1, 10, 50):
        path = work / f"plan-{multiple}x.jsonl"
        # About 7 bytes of session file a token of this text.
        write_big_session(path, multiple * window * 7 / 1e6, compact_every=None)
        options = Options(
            model="openai/gpt-4o", api_key="sk-none", context_window=window, agent=OMP
        )
        start = time.perf_counter()
        planned = dry_run(path, options)
        elapsed = time.perf_counter() - start
        request = prepare(path, options)
        assert isinstance(request.writer, Model)
        own = sum(request.writer.count([m]) for m in request.conversation)
        sent = sum(r.tokens for r in planned.requests)
        print(
            f"  {multiple:>3}x {own:>14,}  {planned.strategy:<8} {len(planned.requests):>9}"
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
    from handoff_cli.agents import OMP, build_context, load_session
    from handoff_cli.errors import HandoffError
    from handoff_cli.handoff.prompt import handoff_request
    from handoff_cli.sessions.tree import branch, leaf

    root = HERE.parent
    paths = sorted(
        [*(root / "tests" / "fixtures").rglob("*.jsonl"), *(root / "sessions").rglob("*.jsonl")]
    )
    requests = []
    for path in paths:
        try:  # each agent's sessions, by its own rules; the fixtures that are none, left out
            session = load_session(path)
            records = branch(session, leaf(session))
        except HandoffError:
            continue
        context = build_context(records, session.agent or OMP)
        requests.append(handoff_request(context.messages(), None))
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
    from handoff_cli.handoff.redact import Redactor

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


# Reading each session as `show --context --json` does, all in one process: the library's own
# entry point, once a path, its output discarded.
READ_EACH = """
import sys
from handoff_cli.cli.app import run
for path in sys.argv[1:]:
    if run(["show", path, "--context", "--json"]) != 0:
        raise SystemExit(1)
"""

# The least an exact estimate of each handoff adds to reading it: READ_EACH, and each context's
# JSON counted with gpt-4o's tokenizer, which is at most what its request holds. A rotation that
# counts what it would send cannot cost less; the tokenizer's load is left out.
COUNT_EACH = """
import io, sys, contextlib
from handoff_cli.cli.app import run
from handoff_cli.llm.tokens import encoding
encode = encoding("o200k_base").encode_ordinary
for path in sys.argv[1:]:
    printed = io.BytesIO()
    out = io.TextIOWrapper(printed, "utf-8")
    with contextlib.redirect_stdout(out):
        if run(["show", path, "--context", "--json"]) != 0:
            raise SystemExit(1)
    encode(printed.getvalue().decode())
"""

# Sessions written an hour ago: idle for rotate's default.
IDLE_S = 3600


def _rotation_folder(folder: Path, sessions: int) -> None:
    """``sessions`` sessions of 1 MB of the short shape, each with its own id, all idle."""
    folder.mkdir()
    write_big_session(folder / "00000.jsonl", 1, compact_every=None, shape="short")
    template = (folder / "00000.jsonl").read_bytes()
    for index in range(1, sessions):
        (folder / f"{index:05d}.jsonl").write_bytes(
            template.replace(b"00000000bench", f"{index:013d}".encode())
        )
    old = time.time() - IDLE_S
    for path in folder.iterdir():
        os.utime(path, (old, old))


def bench_rotate_dry_run(folder: Path, sessions: int, runs: int) -> None:
    """``rotate --dry-run`` choosing all of them, against reading each with ``show --context``
    in one process; CPU time of a fresh process each."""
    paths = [str(path) for path in sorted(folder.iterdir())]
    reading, _ = _run([PYTHON, "-c", READ_EACH, *paths], runs, cpu=True)
    counting, _ = _run([PYTHON, "-c", COUNT_EACH, *paths], runs, cpu=True)
    command = [*HANDOFF, "rotate", str(folder), "--dry-run", "--over-tokens", "1"]
    ours, _ = _run([*command, "--model", "openai/gpt-4o", "--api-key", "sk-none"], runs, cpu=True)
    what = f"rotate --dry-run, {sessions:,} x 1 MB, against show --context of each"
    met = _target(what, ours, 1.2, reading)
    _target("  the least: reading each and counting its context", counting, 1.2, reading)
    print(f"rotate --dry-run over {sessions:,} sessions of 1 MB (short shape), CPU time:")
    print(f"  show --context --json of each, one process   {reading:6.2f} s")
    print(
        f"  the same, each context's JSON counted too    {counting:6.2f} s  "
        f"{counting / reading:.2f}x (the least an exact estimate costs)"
    )
    print(
        f"  rotate --dry-run, all chosen                 {ours:6.2f} s  {ours / reading:.2f}x {met}"
    )
    each, read = ours / sessions * 1e3, reading / sessions * 1e3
    print(f"  a session: {each:.1f} ms ours, {read:.1f} ms reading")


def bench_rotation(work: Path, sessions: int, handoffs: int, runs: int, rotation_runs: int) -> None:
    """Rotation: choosing among ``sessions`` sessions of 1 MB against reading each with
    ``show --context --json`` (in one process, one after another); then ``handoffs`` handoffs,
    with the built-in writer and with a loopback model at one and at eight in flight."""
    import asyncio

    from handoff_cli.agents import OMP
    from handoff_cli.catalog import catalog
    from handoff_cli.handoff.report import Reporter
    from handoff_cli.handoff.rotate import RotateOptions, arotate, select
    from handoff_cli.handoff.writer import register
    from handoff_cli.llm.model import resolve_model

    register(resolve_model)
    from handoff_cli.options import Options

    folder = work / "rotate"
    _rotation_folder(folder, sessions)
    bench_rotate_dry_run(folder, sessions, rotation_runs)
    old = time.time() - IDLE_S

    sys.path.insert(0, str(HERE.parent))
    from tests.fakellm import FakeLLMServer, Reply

    small = work / "small"
    small.mkdir()
    for index in range(handoffs):
        write_big_session(small / f"{index:05d}.jsonl", 0.05, seed=index)
    document = "\n\n".join(f"## {n}\n- fact" for n in SECTIONS)
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
            base = Options(
                model=model, api_base=server.base_url if "/" in model else None, agent=OMP
            )
            options = RotateOptions(handoff=base, over_tokens=1, jobs=jobs)
            found = catalog(copy)
            chosen, _ = select(found, options, time.time(), Reporter())
            start = time.perf_counter()
            outcomes, _ = asyncio.run(arotate(chosen, options, lambda o: None, Reporter()))
            elapsed = time.perf_counter() - start
            done = sum(o.status == "handed_off" for o in outcomes)
            print(f"    {label:<30} {elapsed:6.2f} s  ({done} handed off)")


SECTIONS_RUN = (
    "startup context extractive long-text dry-run images list list-size cancel planning rotation "
    "redaction"
).split()
"""The bench's sections, in the order they run (``--only`` picks some)."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,50,100,200", help="MB, for the cost curve")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--rotation-sessions", type=int, default=1000)
    parser.add_argument("--rotation-handoffs", type=int, default=100)
    # rotate --dry-run over 1,000 sessions of 1 MB takes minutes of CPU a run.
    parser.add_argument("--rotation-runs", type=int, default=2)
    parser.add_argument(
        "--only",
        default=",".join(SECTIONS_RUN),
        help=f"the sections to run, comma-separated: {', '.join(SECTIONS_RUN)}",
    )
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    only = set(args.only.split(","))
    if not only <= set(SECTIONS_RUN):
        parser.error(f"unknown sections: {', '.join(sorted(only - set(SECTIONS_RUN)))}")
    # The generated sessions name no agent: say whose rules read them, rather than be told so.
    os.environ["HANDOFF_AGENT"] = "omp"
    runs = args.runs
    with tempfile.TemporaryDirectory(prefix="handoff-bench-") as tmp:
        work = Path(tmp)
        context_s: dict[tuple[str, int], float] = {}
        if "startup" in only:
            bench_startup(work, runs)
        if "context" in only:
            context_s = bench_context_curve(work, sizes, runs)
        if "extractive" in only:
            bench_extractive(work, (1, 10, 100), min(runs, 3), context_s)
        if "long-text" in only:
            bench_long_text(work, min(runs, 3))
        if "dry-run" in only:
            bench_dry_run(work, min(runs, 3))
        if "images" in only:
            bench_dry_run_images(work, min(runs, 3))
        if "list" in only:
            bench_list(work, runs)
        if "list-size" in only:
            bench_list_by_size(work, runs)
        if "cancel" in only:
            bench_cancel(work, 3)
        if "planning" in only:
            print()
            bench_planning(work)
        if "rotation" in only:
            bench_rotation(
                work, args.rotation_sessions, args.rotation_handoffs, runs, args.rotation_runs
            )
    if "redaction" in only:
        bench_redaction(4, runs)
    print("\ntargets (ours against what each names, measured side by side in this run):")
    print("| target | ours | reference | ratio | limit | |")
    print("|---|---|---|---|---|---|")
    for row in TARGETS:
        print("| " + " | ".join((row.what, *row.cells())) + " |")


if __name__ == "__main__":
    main()
