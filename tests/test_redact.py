"""Secrets are masked before anything leaves the machine; nothing else is touched."""

from __future__ import annotations

import contextlib
from pathlib import Path

import orjson
import pytest

from handoff_cli.config import Options
from handoff_cli.core import prepare
from handoff_cli.extractive import write_document
from handoff_cli.redact import Redactor

from .conftest import CONTEXT_FIXTURES, Entries, tool_call, write_session

SECRETS = {
    "openai-key": "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z",
    "anthropic-key": "sk-ant-api03-Zy9xWv8uTs7rQp6oNm5lKj4iHg3fEd2c",
    "aws-access-key": "AKIAIOSFODNN7EXAMPLE",
    "github-token": "ghp_" + "a1B2c3D4e5" * 4,
    "slack-token": "xoxb-2048123456-abcdefGHIJ",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9",
    "private-key": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA\n"
    "-----END OPENSSH PRIVATE KEY-----",
}


@pytest.mark.parametrize("kind", sorted(SECRETS))
def test_each_kind_is_masked(kind: str) -> None:
    redactor = Redactor()
    text = f"before {SECRETS[kind]} after"
    assert redactor.text(text) == f"before [REDACTED:{kind}:1] after"


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        (
            "git clone https://bob:hunter22@example.com/r.git",
            "git clone https://bob:[REDACTED:url-password:1]@example.com/r.git",
        ),
        ("GET /api?token=abcdef123456&page=2", "GET /api?token=[REDACTED:query-secret:1]&page=2"),
        ('export DB_PASSWORD="s3cr3t-pass"', 'export DB_PASSWORD="[REDACTED:env-secret:1]"'),
        ("GITHUB_TOKEN=abcd1234efgh", "GITHUB_TOKEN=[REDACTED:env-secret:1]"),
    ],
)
def test_values_in_urls_and_assignments(text: str, masked: str) -> None:
    assert Redactor().text(text) == masked


@pytest.mark.parametrize(
    "text",
    [
        "commit 3f786850e387550fdab836ed7e6dc881de23001b",
        "session 01a22ac6-037e-775c-8089-58f5d6db35c2",
        "MAX_TOKENS=4096 and API_TOKEN=$FROM_ENV and SECRET_KEY=<your key>",
        "password = request.form['password']",
        "/home/dev/.ssh/id_ed25519.pub",
        "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk",
        "the token budget is 128000 tokens; sk-learn is a typo",
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    redactor = Redactor()
    assert redactor.text(text) == text and redactor.count == 0


def test_the_same_secret_keeps_its_number() -> None:
    redactor = Redactor()
    one, two = SECRETS["openai-key"], SECRETS["github-token"]
    assert redactor.text(f"{one} {two} {one}") == (
        "[REDACTED:openai-key:1] [REDACTED:github-token:2] [REDACTED:openai-key:1]"
    )
    assert redactor.count == 2


def test_real_sessions_hold_nothing_to_mask() -> None:
    """The fixtures are full of hashes, ids, paths and code, and hold no credentials."""
    for path in CONTEXT_FIXTURES:
        redactor = Redactor()
        for line in path.read_bytes().removeprefix(b"\xef\xbb\xbf").splitlines():
            with contextlib.suppress(orjson.JSONDecodeError):  # a fixture's malformed line
                redactor.value(orjson.loads(line))
        assert redactor.count == 0, path


def test_request_is_masked_including_the_focus(tmp_path: Path, entries: Entries) -> None:
    key = SECRETS["anthropic-key"]
    entries.user(f"use the key {key} for the client")
    entries.assistant(
        "ok", {**tool_call("c1"), "arguments": {"command": f"curl -H 'x: {key}'"}}, stop="toolUse"
    )
    entries.result("c1", f"echoed {key}")
    path = write_session(tmp_path / "s.jsonl", entries.items)
    request = prepare(path, Options(model="extractive", focus=f"rotate {key}"))
    sent = orjson.dumps([*request.conversation, request.prompt]).decode()
    assert key not in sent
    assert sent.count("[REDACTED:anthropic-key:1]") == 4
    assert request.redacted == 1
    assert request.conversation[-1]["tool_call_id"] == "c1"  # ids are never rewritten
    document = write_document([*request.conversation, request.prompt])
    assert key not in document and "[REDACTED:anthropic-key:1]" in document
    unmasked = prepare(path, Options(model="extractive", redact=False))
    assert key in orjson.dumps(unmasked.conversation).decode() and unmasked.redacted == 0
