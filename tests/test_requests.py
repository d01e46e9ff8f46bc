"""The requests a handoff makes, byte for byte as they were when the whole conversation was held
at once (issue 19, item 10): each request's messages, its tokens, the masking's numbers.

Recorded from that code, as digests (``fixtures/golden/requests.json``): the dry run of every
fixture session, with LiteLLM's window for the model and with a small one (which shrinks or
folds the larger ones), and the requests a real handoff sends to the loopback server, folded
in chunks, for a session whose secrets recur from chunk to chunk. ``UPDATE_GOLDEN=1`` records
them again, after a deliberate change (then read what changed).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
from pathlib import Path

import orjson
import pytest

from handoff_cli.cli.app import run
from handoff_cli.document import SECTIONS

from .conftest import FIXTURES, NOT_SESSIONS, Entries, fixture_files, tool_call, write_session
from .fakellm import FakeLLMServer, Reply

pytestmark = pytest.mark.litellm  # its handoffs call the model in this process

GOLDEN = FIXTURES / "golden" / "requests.json"
UPDATE = bool(os.environ.get("UPDATE_GOLDEN"))
MODEL = ["--model", "openai/gpt-4o", "--api-key", "sk-test"]
SMALL = ["--context-window", "8000"]
SESSIONS = sorted(
    p for p in fixture_files() if "golden" not in p.parts and p.name not in NOT_SESSIONS
)
DOCUMENT = "\n\n".join(f"## {name}\n- {name.lower()}" for name in SECTIONS)


def keys(count: int) -> list[str]:
    """Fake keys of three kinds, each its own."""
    rng = random.Random(29)
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    made = []
    for number in range(count):
        body = "".join(rng.choice(alphabet) for _ in range(40))
        made.append(["sk-proj-", "ghp_", "glpat-"][number % 3] + body[: [40, 36, 20][number % 3]])
    return made


KEYS = keys(60)


def secrets_session(path: Path) -> Path:
    """A long session whose secrets (in the assistant's words and the tools' output, which the
    facts do not hold) first appear two at a time, and recur from chunk to chunk: folded in
    many chunks, each must be numbered as in one pass over the whole request."""
    rng = random.Random(23)
    entries = Entries()
    entries.user("set up the deploy scripts" + " now" * 40)
    for turn in range(150):
        new = KEYS[2 * (turn // 5) : 2 * (turn // 5) + 2] if turn % 5 == 0 else []
        seen = KEYS[: 2 * (turn // 5) + 2]
        said = [*new[:1], rng.choice(seen)]
        call = {**tool_call(f"c{turn}"), "arguments": {"command": f"./deploy.sh {turn}"}}
        entries.assistant(f"step {turn}: " + " and ".join(said) + " ok" * 60, call, stop="toolUse")
        words = [rng.choice(["ok", "line", "done"]) for _ in range(200)]
        entries.result(f"c{turn}", " ".join([*words, *new[1:], rng.choice(seen)]))
        entries.user(f"next {turn}" + " please" * 30)
    entries.assistant("all deployed")
    return write_session(path, entries.items)


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def recorded() -> dict[str, str]:
    return json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}


def check(name: str, found: str) -> None:
    if UPDATE:
        golden = recorded()
        golden[name] = found
        GOLDEN.write_text(json.dumps(dict(sorted(golden.items())), indent=1) + "\n")
        return
    assert found == recorded()[name], f"{name}: not the request it was"


def dry_run(capsys: pytest.CaptureFixture[str], *args: str | Path) -> str:
    code = run([str(a) for a in args])
    out = capsys.readouterr().out
    return f"{code} {digest(out.encode())}"


@pytest.mark.parametrize("session", SESSIONS, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_dry_runs_of_every_fixture_are_as_they_were(
    session: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name = str(session.relative_to(FIXTURES))
    check(f"dry run {name}", dry_run(capsys, session, "--dry-run", "--json", *MODEL))
    check(
        f"dry run, small window, {name}",
        dry_run(capsys, session, "--dry-run", "--json", *MODEL, *SMALL),
    )


def test_folded_requests_with_secrets_are_as_they_were(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], llm_server: FakeLLMServer
) -> None:
    """A dry run and a real handoff of the session of secrets: the same requests, every
    secret masked and numbered as before, in every chunk."""
    path = secrets_session(tmp_path / "sessions" / "secrets.jsonl")
    planned = dry_run(capsys, path, "--dry-run", "--json", *MODEL, *SMALL)
    check("dry run, small window, secrets", planned)
    llm_server.default = Reply(DOCUMENT)
    code = run([str(path), *MODEL, "--api-base", llm_server.base_url, *SMALL])
    assert code == 0, capsys.readouterr().err
    bodies = [orjson.dumps(r.body) for r in llm_server.requests]
    assert len(bodies) > 5 and all(k.encode() not in b for k in KEYS for b in bodies)
    check("handoff, small window, secrets", digest(b"\n".join(bodies)))


@pytest.mark.heavy  # a whole corpus: make test-heavy
def test_a_real_handoff_of_a_long_session_is_as_it_was(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], llm_server: FakeLLMServer
) -> None:
    """Folded in many chunks: each chunk's request as it was, the drafts in their place."""
    path = tmp_path / "sessions" / "large.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes((FIXTURES / "pi" / "large-session.jsonl").read_bytes())
    llm_server.default = Reply(DOCUMENT)
    code = run([str(path), *MODEL, "--api-base", llm_server.base_url, *SMALL])
    assert code == 0, capsys.readouterr().err
    bodies = [orjson.dumps(r.body) for r in llm_server.requests]
    assert len(bodies) > 10
    check("handoff, small window, pi/large-session", digest(b"\n".join(bodies)))
