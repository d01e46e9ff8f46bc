"""Nothing from a session drives the terminal: every command, on a real terminal (a pty), on
sessions that hold escape sequences, C1 controls, hyperlinks and reordering characters in
every field that is printed, prints none of them raw."""

from __future__ import annotations

import os
import re
import select
import time
from collections.abc import Callable, Mapping
from pathlib import Path

import orjson
import pytest

from handoff_cli.document import wrap_document

from .conftest import DOCUMENT as FULL_DOCUMENT
from .conftest import HEADER, Entries, run_cli, write_session
from .fakellm import FakeLLMServer, Reply
from .helpers.zygote import fork

ESCAPES = (
    "\x1b[2J\x1b]52;c;ZXZpbA==\x07\x1b]8;;https://evil.example/x\x07click\x1b]8;;\x07\x9b1A\x7f"
)
# Characters that reorder text or are drawn as nothing: bidi controls, a zero-width space, the
# byte-order mark, a tag character, a soft hyphen, an interlinear annotation, the Hangul filler,
# the combining grapheme joiner, a variation selector after a letter, an ideographic one.
HIDING = "\u202e\u2066\u200b\ufeff\U000e0041\u00ad\ufff9\u3164\u034fx\ufe0f\U000e0100"
HOSTILE = ESCAPES + HIDING
# What must never reach the terminal as it is: the sequences above, byte for byte.
RAW = [
    b"\x1b[2J",
    b"\x1b]52",
    b"\x1b]8;",
    "\x9b".encode(),
    b"\x7f",
    *(character.encode() for character in HIDING if character != "x"),
]
DOCUMENT = (
    "## Goal\nSee [https://github.com/good](https://evil.example/phish) and "
    "![https://github.com/logo.png](https://evil.example/pixel.png)\n\n"
    "## Constraints & Preferences\n- none\n\n## Progress\n- done\n\n## Key Decisions\n- "
    "none\n\n## Critical Context\n- " + HOSTILE + "\n\n## Next Steps\n- go on"
)


def hostile_session(folder: Path) -> Path:
    """A session with the hostile text in its id, cwd, title, name, entry ids, texts, tool
    names, labels, custom types, model names, and its file name."""
    entries = Entries()
    entries.add("session_info", name=f"name {HOSTILE}")
    entries.user(f"fix it {HOSTILE}")
    call = {"type": "toolCall", "id": f"c{HOSTILE}", "name": f"bash{HOSTILE}", "arguments": {}}
    entries.assistant(f"on it {HOSTILE}", call, stop="toolUse", model=f"m{HOSTILE}")
    entries.result(f"c{HOSTILE}", f"out {HOSTILE}")
    entries.custom_message(f"type{HOSTILE}", f"said {HOSTILE}")
    entries.add("label", targetId=entries.leaf, label=f"label {HOSTILE}")
    entries.items[-1]["id"] = entries.leaf = f"id{HOSTILE}"
    entries.assistant(f"done {HOSTILE}")
    header = {**HEADER, "id": f"0199aaaa-{HOSTILE}", "cwd": f"/home/u/{HOSTILE}"}
    path = write_session(folder / f"s{ESCAPES[:4]}.jsonl", entries.items, header)
    os.utime(path, (time.time() - 3600,) * 2)
    return path


TERMINAL = {"TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"}
pytestmark = pytest.mark.zygote  # every test here runs the program on a terminal, forked


def on_a_terminal(
    *args: str | Path, env: Mapping[str, str | None] | None = None
) -> tuple[int, bytes]:
    """The program run with stdout and stderr on a pty, as a person runs it (``env`` added to
    its environment, None taking a variable out); what it printed there, byte for byte. Forked
    from the zygote: what is tested is the output, not start-up (``test_signals`` starts
    afresh)."""
    leader, follower = os.openpty()
    folder = Path(os.environ["HANDOFF_SESSIONS_DIR"]).with_name("terminal")
    env = {"NO_COLOR": None, **TERMINAL, **(env or {})}
    process = fork([str(a) for a in args], folder, env, tty=os.ttyname(follower))
    try:  # the follower kept open: the child opens it by its name, at its own pace
        printed = _printed(leader, lambda: process.poll() is not None, args)
    except AssertionError:
        process.kill()
        raise
    finally:
        os.close(follower)
    return process.wait(timeout=60), printed


def _printed(leader: int, ended: Callable[[], bool], args: tuple[str | Path, ...]) -> bytes:
    """What the pty's other end got until the program ``ended`` and nothing more came."""
    printed = bytearray()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        over = ended()  # before the read: what it wrote before it ended is read after
        ready, _, _ = select.select([leader], [], [], 0.05)
        if ready:
            try:
                data = os.read(leader, 65536)
            except OSError:  # the pty closes with the last writer: EIO
                break
            printed += data
            continue
        if over:
            break
    else:
        raise AssertionError(f"{args}: no end after 60 s")
    os.close(leader)
    return bytes(printed)


def assert_safe(args: tuple[str | Path, ...], printed: bytes) -> None:
    found = [sequence for sequence in RAW if sequence in printed]
    assert not found, f"{args} printed raw {found}: {printed[:400]!r}"


def test_no_command_prints_what_a_session_holds_raw(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    path = hostile_session(folder)
    done = run_cli(path, "--model", "extractive", "--json")
    assert done.code == 0, done.stderr
    new = Path(done.json()["path"])
    runs: list[tuple[str | Path, ...]] = [
        ("show", path),
        ("show", path, "--tree"),
        ("show", path, "--context"),
        ("show", path, "--json"),
        ("show", path, "--document"),
        ("show", new),
        ("list", folder),
        ("list", folder, "--tree"),
        ("rotate", folder, "--dry-run", "--over-tokens", "1", "--model", "extractive"),
        (path, "--model", "extractive", "--dry-run"),
        (path, "--model", "extractive", "--in-place", "--agent", "omp"),
        ("rotate", folder, "--over-tokens", "1", "--model", "extractive", "--idle", "1s"),
        ("show", folder / "missing\x1b[2J.jsonl"),
    ]
    for args in runs:
        code, printed = on_a_terminal(*args)
        assert code in (0, 3, 4), (args, code, printed[-300:])
        assert_safe(args, printed)
    _, shown = on_a_terminal("show", path, "--tree")
    assert "␛[2J".encode() in shown and b"\\u202e" in shown  # shown, as visible symbols


def test_a_document_links_nowhere_but_where_it_says(tmp_path: Path) -> None:
    """Rendered on a terminal, a document's links are no hyperlinks: the text and the real
    target are both shown; an image becomes its name; HTML is text."""
    entries = Entries()
    entries.custom_message("handoff", wrap_document(f"<div>\n{DOCUMENT}"))
    path = write_session(tmp_path / "s.jsonl", entries.items)
    code, printed = on_a_terminal("show", path, "--document")
    assert code == 0, printed
    assert_safe(("show --document",), printed)
    plain = re.sub(rb"\x1b\[[0-9;]*m", b"", printed)  # our own styles aside
    assert b"https://github.com/good (https://evil.example/phish)" in plain
    assert b"\x1b]8;" not in printed and b"<div>" in printed  # the first section not lost
    assert b"Goal" in printed


def test_a_piped_document_with_a_cut_emoji_is_printed(tmp_path: Path) -> None:
    """JavaScript writes half an emoji as a lone surrogate's escape; piped, the raw document
    goes out as UTF-8, which has no surrogates: as U+FFFD (it was a traceback)."""
    entries = Entries()
    entries.custom_message("handoff", wrap_document("## Goal\ncut HALF here"))
    lines = [orjson.dumps(e) for e in [HEADER, *entries.items]]
    lines[-1] = lines[-1].replace(b"HALF", b"\\ud83d")
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    done = run_cli("show", path, "--document")
    assert done.code == 0, done.stderr
    assert done.stdout == "## Goal\ncut \ufffd here\n"


@pytest.mark.parametrize("command", [("show",), ("list",)])
def test_an_error_line_is_safe_too(tmp_path: Path, command: tuple[str, ...]) -> None:
    named = tmp_path / f"x{HOSTILE.replace('/', '_')}.jsonl"
    named.write_bytes(b"not json\n")
    code, printed = on_a_terminal(*command, named if command == ("show",) else tmp_path)
    assert_safe(command, printed)
    assert code in (0, 4)


def screen(printed: str) -> list[str]:
    """The lines a terminal shows once ``printed`` has been written to it: enough of one for
    text, carriage returns, new lines, erasing a line and moving up (what rich's live display
    writes); other sequences change nothing that is read here."""
    lines, row, column = [""], 0, 0
    for token in re.finditer(r"\x1b\[([0-9;?]*)([A-Za-z])|\r|\n|[^\x1b\r\n]+", printed):
        text = token.group(0)
        if text == "\r":
            column = 0
        elif text == "\n":
            row += 1
            lines += [""] * (row + 1 - len(lines))
        elif token.group(2) == "K":
            lines[row] = "" if token.group(1) == "2" else lines[row][:column]
        elif token.group(2) == "A":
            row = max(0, row - int(token.group(1) or 1))
        elif token.group(2) is None:
            line = lines[row].ljust(column)
            lines[row] = line[:column] + text + line[column + len(text) :]
            column += len(text)
    return [line for line in lines if line]


def test_rotate_on_a_terminal_keeps_its_results_off_the_bar(
    tmp_path: Path, llm_server: FakeLLMServer
) -> None:
    folder = tmp_path / "many"
    made = [f"0199aaaa-0000-7000-8000-00000000000{n}" for n in range(1, 5)]
    for session_id in made:
        entries = Entries()
        entries.user("fix the parser " * 40)
        entries.assistant("done " * 40)
        path = write_session(
            folder / f"{session_id}.jsonl", entries.items, {**HEADER, "id": session_id}
        )
        os.utime(path, (time.time() - 3600,) * 2)
    llm_server.script(*[Reply(FULL_DOCUMENT)] * len(made))
    args = (
        "rotate",
        folder,
        "--over-tokens",
        "1",
        "--idle",
        "1s",
        "--model",
        "openai/no-such-model",
    )
    code, printed = on_a_terminal(*args, "--api-base", llm_server.base_url)
    text = printed.decode()
    assert code == 0, text
    shown = screen(text)
    results = [line for line in shown if re.fullmatch(r"0199aaaa-\S+ [0-9a-f-]{36}", line)]
    assert sorted(line.split()[0] for line in results) == made  # each on a line of its own
    assert not any("rotating" in line for line in shown)  # no stale bar left behind
    assert shown[-1] == f"{len(made)} handed off, 0 skipped, 0 failed; " + shown[-1].split("; ")[1]
    assert shown[-1].endswith(", price unknown") and "$0.0000" not in text  # never priced
    for count, result in enumerate(results, 1):  # the bar had counted it when it was printed
        before = text[: text.index(result)]
        assert re.findall(rf"(\d+)/{len(made)}", before)[-1] == str(count)
