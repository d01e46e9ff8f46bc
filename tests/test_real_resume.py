"""Real sessions from public repositories, resumed by the real agents (``oracles/real.py``):
our context is what Claude Code 2.1.332 and Codex 0.171.0 sent for each file they resumed."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from .conftest import run_cli

REAL = Path(__file__).parent / "fixtures" / "real"
WIRE_ONLY = "internal_chat_message_metadata_passthrough"
"""What Codex adds to each item it sends under its own provider: metadata for its servers, not
the conversation (the issue sets it aside)."""


def tried(agent: str) -> list[Path]:
    """The real files the agent was run on, each beside its record."""
    return sorted(
        path.with_name(path.name.removesuffix(f".{agent}-resume.json"))
        for path in REAL.rglob(f"*.{agent}-resume.json")
    )


def record(path: Path, agent: str) -> Any:
    return json.loads(path.with_name(f"{path.name}.{agent}-resume.json").read_text("utf-8"))


def resumed(agent: str) -> list[Path]:
    return [path for path in tried(agent) if record(path, agent)["code"] == 0]


def sent(path: Path, agent: str) -> Any:
    data = path.with_name(f"{path.name}.{agent}-context.json.gz").read_bytes()
    return json.loads(gzip.decompress(data))


def ours(path: Path) -> Any:
    result = run_cli("show", path, "--context", "--json")
    assert result.code == 0, result.stderr
    return json.loads(result.stdout)


CODEX = resumed("codex")
CLAUDE = resumed("claude")


def test_the_real_files_come_from_enough_repositories() -> None:
    for agent in ("codex", "claude"):
        files = resumed(agent)
        assert len(files) >= 17 and len({p.parent for p in files}) >= 12, agent
    assert len(tried("codex")) == len(CODEX) + 2  # the two Codex refuses: below


@pytest.mark.parametrize("path", CODEX, ids=lambda p: f"{p.parent.name}/{p.name[8:27]}")
def test_context_is_what_codex_sent_resuming_a_real_rollout(path: Path) -> None:
    """Every item, every key in its order, the model's: its tools' long outputs cut as Codex
    cuts them, old rollouts compacted first as Codex compacts them, rolled back turns (a user's
    message, or another agent's) gone."""
    want = [{k: v for k, v in item.items() if k != WIRE_ONLY} for item in sent(path, "codex")]
    shown = ours(path)
    assert shown["messages"] == want
    model = record(path, "codex")["model"]  # "fake-model": none named, the oracle's own
    assert shown["model"] == (None if model == "fake-model" else f"openai/{model}")


REFUSED = {
    "Elektriker-Edgar__PV-Projekt": "a Codex rollout of its 2025 format (no session_meta), "
    "which Codex 0.171.0 no longer resumes: read here as a transcript",
    "doudouqie66__CommonTools": "Codex 0.171.0 resumes this subagent's rollout only through "
    "its parent, 019f4efb-ae76-7e30-b44e-3fa464c16193",
}


@pytest.mark.parametrize(
    "path",
    [p for p in tried("codex") if record(p, "codex")["code"] != 0],
    ids=lambda p: p.parent.name,
)
def test_what_codex_refuses_is_read_and_says_why(path: Path) -> None:
    """Codex refused these (its last words kept in the record): we read them all the same,
    and say in one line what Codex would do with them."""
    said = " ".join(record(path, "codex")["said"])
    assert "empty" in said or "resume the parent first" in said
    shown = run_cli("show", path, "--context", "--json")
    assert shown.code == 0, shown.stderr
    assert f"note: {path}: {REFUSED[path.parent.name]}" in shown.stderr
    assert len(json.loads(shown.stdout)["messages"]) > 10


@pytest.mark.parametrize("path", CLAUDE, ids=lambda p: f"{p.parent.name}/{p.name[:8]}")
def test_context_is_what_claude_code_sent_resuming_a_real_session(path: Path) -> None:
    """Every message, every key in its order, and the model it resumed on (on the day it ran,
    ``conftest.ORACLE_DAY``): parallel calls put back beside the branch, another model's signed
    thinking and what says nothing left out, calls without a result paired, a retired or unknown
    model's session on the default."""
    shown = ours(path)
    assert shown["messages"] == sent(path, "claude")
    assert shown["model"] == "anthropic/" + record(path, "claude")["model"]
