"""Shared test fixtures: the example sessions, a session-file builder, and a CLI runner."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest

from .fakellm import llm_server as llm_server  # the loopback model server fixture

FIXTURES = Path(__file__).parent / "fixtures"
PROJECT = Path(__file__).parent.parent
EXAMPLES = PROJECT / "sessions"

# Every fixture session that has the real oh-my-pi's context beside it (*.context.json), and
# every one that has the real pi's (*.pi-context.json).
CONTEXT_FIXTURES = sorted(
    p for p in FIXTURES.rglob("*.jsonl") if p.with_suffix(".context.json").exists()
)
PI_CONTEXT_FIXTURES = sorted(
    p for p in FIXTURES.rglob("*.jsonl") if p.with_suffix(".pi-context.json").exists()
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


def tool_call(call_id: str, name: str = "bash") -> dict[str, Any]:
    return {"type": "toolCall", "id": call_id, "name": name, "arguments": {"command": "ls"}}


@dataclass
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
    """Run the real program in a subprocess, as a user would."""
    completed = subprocess.run(
        [sys.executable, "-m", "handoff_cli", *map(str, args)],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        timeout=120,
    )
    return Result(completed.returncode, completed.stdout, completed.stderr)


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """No test sees the developer's keys or sessions; the sessions folder is a temporary one."""
    for name in list(os.environ):
        if name.endswith("_API_KEY") or name.startswith("HANDOFF_"):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HANDOFF_SESSIONS_DIR", str(tmp_path / "sessions"))
    monkeypatch.setenv("NO_COLOR", "1")
    yield


@pytest.fixture
def entries() -> Entries:
    return Entries()
