"""Leaf, branch and children of the entry tree."""

from __future__ import annotations

from pathlib import Path

import pytest

from handoff_cli.errors import ExitCode, SessionFileError, UsageError
from handoff_cli.sessions.session import load_session
from handoff_cli.sessions.tree import branch, children, find_entry, leaf

from .conftest import Entries, write_session


def ids(records: list) -> list[str]:
    return [r.id for r in records]


def test_leaf_is_the_last_entry_and_branch_runs_from_the_root(
    tmp_path: Path, entries: Entries
) -> None:
    a = entries.user("a")
    b = entries.user("b")
    entries.user("c")  # abandoned
    d = entries.user("d", parent=b)
    session = load_session(write_session(tmp_path / "s.jsonl", entries.items))
    assert leaf(session) is session.by_id[d]
    assert ids(branch(session, leaf(session))) == [a, b, d]


def test_leaf_can_be_chosen_by_id_or_prefix(tmp_path: Path, entries: Entries) -> None:
    a = entries.user("a")
    b = entries.user("b")
    entries.user("c")
    session = load_session(write_session(tmp_path / "s.jsonl", entries.items))
    assert ids(branch(session, leaf(session, b))) == [a, b]
    tip = leaf(session, b[:-1] + b[-1])
    assert tip is not None and tip.id == b
    with pytest.raises(UsageError, match="no entry"):
        leaf(session, "zzz")
    with pytest.raises(UsageError, match="ambiguous"):
        find_entry(session, "e")


def test_unknown_parent_ends_the_walk(tmp_path: Path, entries: Entries) -> None:
    entries.user("orphan", parent="missing")
    tip = entries.user("child")
    session = load_session(write_session(tmp_path / "s.jsonl", entries.items))
    assert len(branch(session, session.by_id[tip])) == 2


def test_cycle_is_an_error_naming_its_entries(tmp_path: Path, entries: Entries) -> None:
    entries.user("a", parent="e0000003")
    entries.user("b")
    entries.user("c")
    session = load_session(write_session(tmp_path / "s.jsonl", entries.items))
    with pytest.raises(SessionFileError) as caught:
        branch(session, leaf(session))
    assert "cycle" in str(caught.value)
    assert all(i in str(caught.value) for i in ("e0000001", "e0000002", "e0000003"))
    assert caught.value.exit_code == ExitCode.BAD_SESSION


def test_empty_session_has_no_leaf(tmp_path: Path) -> None:
    session = load_session(write_session(tmp_path / "s.jsonl", []))
    assert leaf(session) is None
    assert branch(session, None) == []


def test_children_mark_branch_points(tmp_path: Path, entries: Entries) -> None:
    a = entries.user("a")
    b = entries.user("b")
    c = entries.user("c", parent=a)
    session = load_session(write_session(tmp_path / "s.jsonl", entries.items))
    kids = children(session)
    assert ids(kids[None]) == [a]
    assert ids(kids[a]) == [b, c]
