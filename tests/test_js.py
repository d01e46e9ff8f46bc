"""JavaScript's value rules, which the agents' behaviour follows."""

from __future__ import annotations

from typing import Any

import pytest

from handoff_cli.sessions.js import UNDEFINED, UNPAIRABLE, js_key, js_string, js_time, js_truthy


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2026-11-30T04:45:49.830Z", 1796013949830),
        ("1970-01-01T00:00:00.001+00:00", 1),
        ("not a date", None),
        (None, 0),
        (12.7, 12),
        (float("inf"), None),
        ({"a": 1}, None),
        ("2026-02-30T00:00:00Z", 1772409600000),  # rolls over into March, as in JavaScript
        ("2026-1-1", 1767225600000),
        ("2026-01-01 10:00:00+0530", 1767241800000),
        ("+275760-09-13T00:00:00.001Z", None),  # past the end of JavaScript time
        ("Thu, 01 Jan 2026 00:00:00 GMT", 1767225600000),
        (" 2026-01-01T00:00:00Z", None),
        ("2026-01-01T23:60:00Z", None),
        # JavaScript's digits are ASCII ones: Arabic-Indic and full-width digits are no date.
        ("\u0662\u0660\u0662\u0666-01-01T00:00:00Z", None),
        ("Thu, \u06601 Jan 2026 00:00:00 GMT", None),
        ("Thu, 01 Jan \uff12026 00:00:00 GMT", None),
    ],
)
def test_js_time(value: Any, expected: int | None) -> None:
    assert js_time(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("anthropic", "anthropic"),
        (UNDEFINED, "undefined"),
        (None, "null"),
        (True, "true"),
        (3.0, "3"),
        (3.5, "3.5"),
        ([1, None, "a"], "1,,a"),
        ({"a": 1}, "[object Object]"),
    ],
)
def test_js_string_prints_as_a_template_literal(value: Any, expected: str) -> None:
    assert js_string(value) == expected


def test_js_truthy_counts_every_object_as_true() -> None:
    values: list[Any] = [{}, [], "", 0, None, "x", 1]
    assert [js_truthy(v) for v in values] == [True, True, False, False, False, True, True]


def test_js_key_matches_as_strict_equality_does() -> None:
    assert js_key("c1") == js_key("c1") and js_key(1) == js_key(1.0)
    assert js_key({"id": 1}) is UNPAIRABLE and js_key([1]) is UNPAIRABLE
    assert js_key(UNDEFINED) is UNDEFINED and js_key(UNDEFINED) != js_key(None)
