"""Every kind of secret of the corpus, in every place a session can hold text, handed off over
real HTTP: none reaches the loopback server's log, the new session, or what is recorded in the
old one (issue 21: the positions matrix)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from handoff_cli.cli.app import run
from handoff_cli.handoff.redact import Redactor

from .conftest import Entries, write_session
from .fakellm import FakeLLMServer, Reply
from .secrets_corpus import positives

pytestmark = pytest.mark.litellm  # its handoffs call the model in this process

TEXTS = [p.text for p in positives()]
SECRETS = sorted({s for p in positives() for s in p.secrets if len(s) >= 8})
# Secrets known by their shape alone, with no name or context around them, of the shape a
# file's name takes: what a path can carry (a folder named after a token).
BARE = sorted(
    s for s in SECRETS if len(s) <= 100 and re.fullmatch(r"[\w.-]+", s) and Redactor().text(s) != s
)
DOCUMENT = "## Goal\n- g\n\n## Constraints & Preferences\n- c\n\n## Progress\n- p\n\n"
DOCUMENT += "## Key Decisions\n- k\n\n## Critical Context\n- x\n\n## Next Steps\n- n"


def _call(entries: Entries, name: str, arguments: dict[str, Any], result: str = "ok") -> None:
    call_id = f"c{len(entries.items)}"
    call = {"type": "toolCall", "id": call_id, "name": name, "arguments": arguments}
    entries.assistant(call, stop="toolUse")
    entries.result(call_id, result)


def _place(entries: Entries, place: str, text: str) -> None:
    if place == "user text":
        entries.user(text)
    elif place == "assistant text":
        entries.assistant(text)
    elif place == "thinking":
        entries.assistant({"type": "thinking", "thinking": text}, "noted")
    elif place == "tool-call arguments":  # a record of JSON arguments is those arguments
        try:
            arguments = json.loads(text)
        except ValueError:
            arguments = None
        _call(entries, "bash", arguments if isinstance(arguments, dict) else {"command": text})
    elif place == "tool result":
        _call(entries, "bash", {"command": "cat notes"}, text)
    elif place == "custom message":
        entries.custom_message("note", text)
    elif place == "branch summary":
        entries.add("branch_summary", fromId="root", summary=text)
    elif place == "label":
        entries.add("label", targetId=entries.leaf, label=text[:200])
    elif place == "session name":
        entries.add("session_info", name=text.splitlines()[0][:200])
    else:
        raise AssertionError(place)


Builder = Callable[[Entries], None]
PLACES = [
    "user text",
    "assistant text",
    "thinking",
    "tool-call arguments",
    "tool result",
    "custom message",
    "branch summary",
    "label",
    "session name",
]


def session_with(tmp_path: Path, place: str) -> Path:
    entries = Entries()
    entries.user("start the work")
    entries.assistant("on it")
    if place == "file paths":
        for secret in BARE:
            _call(entries, "read", {"path": f"build/{secret}/out.txt"})
            _call(entries, "edit", {"path": f"src/{secret}.py", "oldText": "a", "newText": "b"})
    elif place == "compaction summary":
        entries.add(
            "compaction",
            summary="\n\n".join(TEXTS),
            firstKeptEntryId=entries.leaf,
            tokensBefore=1000,
        )
    else:
        for text in TEXTS:
            _place(entries, place, text)
    entries.user("go on")
    entries.assistant("done")
    return write_session(tmp_path / "sessions" / "s.jsonl", entries.items)


@pytest.mark.parametrize("place", [*PLACES, "file paths", "compaction summary", "the focus"])
def test_no_secret_of_any_kind_leaves_from_any_place(
    tmp_path: Path,
    llm_server: FakeLLMServer,
    capsys: pytest.CaptureFixture[str],
    place: str,
) -> None:
    path = session_with(tmp_path, "user text" if place == "the focus" else place)
    before = path.read_bytes()
    focus = "\n".join(TEXTS) if place == "the focus" else "the tests"
    llm_server.script(Reply(DOCUMENT))
    model = ("--model", "openai/gpt-4o", "--api-key", "k", "--api-base", llm_server.base_url)
    code = run([str(path), *model, "--focus", focus, "--retries", "0", "-q", "--json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    sent = json.dumps([request.body for request in llm_server.requests])
    new = Path(json.loads(out.out)["path"]).read_text()
    recorded = path.read_bytes()[len(before) :].decode()
    secrets = BARE if place == "file paths" else SECRETS
    leaked = [s for s in secrets if s in sent or s in new or s in recorded]
    assert leaked == [], f"{len(leaked)} of {len(secrets)} leak from {place}: {leaked[:3]}"
    if place not in ("thinking", "label"):  # sent (thinking and labels are not sent at all)
        assert json.loads(out.out)["redacted"] > 0
