"""What a new user at a shell meets (issue 39): a mistyped command word, an ambiguous id."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import HEADER, run_cli, write_session


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        (("lsit",), "list"),
        (("shwo", "0199"), "show"),
        (("rotat",), "rotate"),
        (("expotr",), "export"),
    ],
)
def test_a_mistyped_command_word_is_named_with_the_one_meant(
    typed: tuple[str, ...], meant: str, tmp_path: Path
) -> None:
    result = run_cli(*typed, cwd=tmp_path)
    assert result.code == 2
    assert result.stderr == f"Usage error: no such command {typed[0]!r}; did you mean {meant!r}?\n"


def test_a_file_or_an_id_is_never_taken_for_a_mistyped_command(tmp_path: Path) -> None:
    (tmp_path / "lsit").write_text("not a session\n")
    as_file = run_cli("lsit", cwd=tmp_path)
    assert as_file.code == 4 and "no such command" not in as_file.stderr
    as_id = run_cli("c0ec", cwd=tmp_path)  # hex: an id's prefix, however close to "check"
    assert as_id.code == 4 and "no session with this id" in as_id.stderr


def test_help_is_a_command_word(tmp_path: Path) -> None:
    top = run_cli("help", cwd=tmp_path)
    assert top.code == 0 and top.stdout.startswith("Usage: handoff [OPTIONS] COMMAND")
    listing = run_cli("help", "list", cwd=tmp_path)
    assert listing.code == 0 and listing.stdout == run_cli("list", "--help").stdout
    unknown = run_cli("help", "lst", cwd=tmp_path)
    assert unknown.code == 2 and "no such command 'lst'" in unknown.stderr


def test_an_ambiguous_prefix_lists_its_candidates_one_a_line(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    for number in range(12):
        header = {
            **HEADER,
            "id": f"0199abcd-{number:04d}",
            "timestamp": f"2026-11-{number + 1:02d}T08:00:00.000Z",
        }
        entries = [
            {
                "type": "message",
                "id": "u1",
                "parentId": None,
                "timestamp": header["timestamp"],
                "message": {"role": "user", "content": f"Task number {number}", "timestamp": 1},
            }
        ]
        write_session(folder / f"{number}.jsonl", entries, header)
    result = run_cli("show", "0199", env={"HANDOFF_SESSIONS_DIR": str(folder)}, cwd=tmp_path)
    assert result.code == 2
    head, *lines = result.stderr.splitlines()
    assert head == "Usage error: session id prefix '0199' is ambiguous: 12 sessions start with it"
    assert len(lines) == 11 and lines[-1] == "  and 2 more"
    assert lines[0] == "  0199abcd-0011  2026-11-12 08:00  Task number 11"  # newest first
    assert all(len(line) <= 100 for line in lines)
