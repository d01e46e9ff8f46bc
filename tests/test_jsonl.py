"""Reading and writing JSON lines as the agents do."""

from __future__ import annotations

import pytest

from handoff_cli.sessions.jsonl import dumps, dumps_line, parse_line


def test_round_trip_is_compact_and_ordered() -> None:
    value = {"b": 1, "a": [1, "é", None], "c": {"z": True}}
    assert dumps(value) == '{"b":1,"a":[1,"é",null],"c":{"z":true}}'.encode()
    assert dumps_line(value).endswith(b"}\n")
    assert parse_line(dumps(value)) == value


def test_lone_surrogates_parse_and_are_written_escaped() -> None:
    value = parse_line(b'{"a":"x\\ud800"}')
    assert value == {"a": "x\ud800"}
    assert dumps(value) == b'{"a":"x\\ud800"}'


@pytest.mark.parametrize("raw", [b"{", b'{"a":NaN}', b'{"a":1} {"b":2}', b"[" * 5000 + b"]" * 5000])
def test_what_the_agents_reject_is_rejected(raw: bytes) -> None:
    with pytest.raises(ValueError):
        parse_line(raw)
