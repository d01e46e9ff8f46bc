"""Shell commands and file tools as the facts read them (handoff/shell.py, handoff/tools.py):
how a command ended in any agent's words, which non-zero exits are answers, which files a
command line wrote, which tool calls touch which files, and which results say they failed."""

from __future__ import annotations

import pytest

from handoff_cli.handoff import shell, tools
from handoff_cli.handoff.tools import FileCall


@pytest.mark.parametrize(
    ("output", "code", "failed"),
    [
        ("Exit code 1\nnpm ERR! missing script", 1, True),  # Claude Code's Bash
        ("Exit code: 0\nWall time: 0.1 seconds\nOutput:\nok", 0, False),  # Codex shell_command
        ("Chunk ID: x\nWall time: 0.05 seconds\nProcess exited with code 2\nOutput:\n", 2, True),
        ("Command: zsh -lc 'ls\nx'\nChunk ID: y\nProcess exited with code 0\nOutput:\na", 0, False),
        ('{"output":"boom\\n","metadata":{"exit_code":127,"duration_seconds":0.1}}', 127, True),
        ("1 failed\n\nCommand exited with code 1", 1, True),  # pi
        ("(Command exited with code 0)", 0, False),
        (
            "failed in sandbox LinuxSeccomp with execution error: sandbox denied exec error",
            None,
            True,
        ),
        ("apply_patch verification failed: Failed to find expected lines in a.py", None, True),
        ("all good", 0, False),
        ("a test prints\nExit code: 1\nin its own output" + "\nok" * 600, 0, False),  # no header
    ],
)
def test_how_a_command_ended(output: str, code: int | None, failed: bool) -> None:
    found = shell.outcome(output, flagged=False)
    assert found is not None and (found.code, found.failed) == (code, failed)


def test_a_flag_alone_is_a_failure_and_an_abort_is_neither() -> None:
    assert shell.outcome("something broke", flagged=True) == (1, True, "something broke")
    assert shell.outcome("Command aborted", flagged=True) is None


@pytest.mark.parametrize(
    ("command", "code", "answer"),
    [
        ("grep -rn foo src", 1, True),
        ("cd app && rg -n TODO", 1, True),
        ("git branch | rg -n feature", 1, True),
        ("ls -a specs", 2, True),
        ("git diff --exit-code", 1, True),
        ("pkill -f next-dev", 1, True),
        ("npm test", 1, False),
        ("grep -rn foo src && npm test", 1, False),
        ("git tag v1.0", 1, False),
        ("rm a.bak b.bak", 1, False),
        ("npm list react-datepicker", 1, True),  # not installed: an answer
        ("npm install react-datepicker", 1, False),
    ],
)
def test_which_exits_are_answers(command: str, code: int, answer: bool) -> None:
    assert shell.only_an_answer(command, code) is answer


def test_removing_what_is_not_there_is_an_answer() -> None:
    said = "rm: cannot remove 'a.bak': No such file or directory"
    assert shell.only_an_answer("rm a.bak b.bak", 1, said)


def test_making_a_folder_that_is_there_is_an_answer() -> None:
    assert shell.only_an_answer("mkdir specs", 1, "A subdirectory or file specs already exists.")
    assert not shell.only_an_answer("mkdir specs", 1, "Permission denied")


def test_a_program_stopped_by_ctrl_c_on_windows_neither_passed_nor_failed() -> None:
    said = "Command: npx docusaurus start\nOutput: [INFO] Starting...\nExit Code: 3221225786"
    assert shell.outcome(said, flagged=True) is None


@pytest.mark.parametrize(
    ("command", "written"),
    [
        ("echo x > out.txt 2>/dev/null", ["out.txt"]),
        ("cat > src/a.py <<'EOF'\nx = '> not/a/file.txt'\nEOF", ["src/a.py"]),
        ("cat <<EOF > docs/b.md\nhi\nEOF", ["docs/b.md"]),
        ("cd web && sed -i 's/a/b/' app.js && tee log/run.log", ["web/app.js", "web/log/run.log"]),
        ("sed -i '' 's|a|b|g' src/x.ts src/y.ts", ["src/x.ts", "src/y.ts"]),
        ("perl -pi -e 's/x/y/' lib/a.pl", ["lib/a.pl"]),
        ("mv old.py new.py && cp new.py backup/new.py", ["new.py", "old.py", "backup/new.py"]),
        ("rm -f build/out.o && git rm docs/old.md", ["build/out.o", "docs/old.md"]),
        ("git mv a.txt b/a.txt", ["a.txt", "b/a.txt"]),
        ("for f in a.py b.py; do : > \"$f\"; done", ["a.py", "b.py"]),
        ("bash -lc 'cd app && echo hi > notes.md'", ["app/notes.md"]),
        ("echo test > ~/.codex/.probe && rm -f ~/.codex/.probe", []),  # written, then removed
        ("echo x > /tmp/scratch.txt; echo y > /dev/null", []),
        ('Set-Content -Path "C:\\w\\a.txt" -Value 1', ["C:\\w\\a.txt"]),
        ('del "C:\\w\\.qwen\\CLAUDE.md"', ["C:\\w\\.qwen\\CLAUDE.md"]),  # cmd's
        ("cd app && DEL /F /Q old.txt && copy /Y a.cfg b.cfg", ["app/old.txt", "app/b.cfg"]),
        ("move C:\\w\\notes.txt C:\\w\\docs\\", ["C:\\w\\docs\\", "C:\\w\\notes.txt"]),
        ("del c:\\w\\lab\\a.cpp", ["c:\\w\\lab\\a.cpp"]),  # unquoted: backslashes kept
        ("openssl req -x509 -keyout certs/k.pem -out certs/c.pem", ["certs/k.pem", "certs/c.pem"]),
        ('echo "<password>s3cr3tvalue</password>"', []),  # no shell writes there
        ("$db = ['user' => 'shop', 'password' => 'Ph7pV4lU2eS9'];", []),
        ("ls -la src | head", []),
    ],
)  # fmt: skip
def test_the_files_a_command_line_writes(command: str, written: list[str]) -> None:
    assert shell.written_files(command) == written


def test_a_workdir_makes_relative_paths_whole() -> None:
    assert shell.written_files("echo x > a.txt", "/w/p") == ["/w/p/a.txt"]


@pytest.mark.parametrize(
    ("tool", "arguments", "call"),
    [
        ("read", {"path": "src/a.py:10-20"}, FileCall(("src/a.py",), ())),
        ("Read", {"file_path": "/w/a.py"}, FileCall(("/w/a.py",), ())),
        ("read_file", {"filePath": "a.py"}, FileCall(("a.py",), ())),
        ("write", {"path": "b.py", "content": "x"}, FileCall((), ("b.py",))),
        ("create_file", {"target_file": "c.py"}, FileCall((), ("c.py",))),
        ("MultiEdit", {"file_path": "d.py", "edits": []}, FileCall((), ("d.py",))),
        ("edit", {"file": "e.py", "edit": []}, FileCall((), ("e.py",))),
        ("str_replace_based_edit_tool", {"command": "view", "path": "f"}, FileCall(("f",), ())),
        ("str_replace_editor", {"command": "create", "path": "g.py"}, FileCall((), ("g.py",))),
        ("move_file", {"source": "h.py", "destination": "i.py"}, FileCall((), ("h.py", "i.py"))),
        ("mcp__fs__write_file", {"path": "j.py"}, FileCall((), ("j.py",))),
        ("apply_patch", {"input": "*** Add File: k.py\n+x\n"}, FileCall((), ("k.py",))),
        ("read", {"path": "https://example.com/a"}, FileCall((), ())),
        ("grep", {"path": "src/"}, None),
        ("bash", {"command": "ls"}, None),
    ],
)  # fmt: skip
def test_the_files_a_tool_call_touches(
    tool: str, arguments: dict[str, object], call: FileCall | None
) -> None:
    assert tools.file_call(tool, arguments) == call


@pytest.mark.parametrize(
    ("text", "flagged", "failed", "missing"),
    [
        ("ENOENT: no such file or directory, open '/w/a.py'", False, True, True),
        ("<tool_use_error>File has not been read yet.</tool_use_error>", False, True, False),
        ("File does not exist. Note: your current working directory is /w", True, True, True),
        ('{"status": "error", "message": "denied"}', False, True, False),
        ("The user doesn't want to proceed with this tool use. It was rejected", True, True, False),
        ("     1→import os\n     2→print('error: not here')", False, False, False),
        ("Successfully replaced text in a.ts.", False, False, False),
    ],
)  # fmt: skip
def test_a_result_that_says_it_failed(
    text: str, flagged: bool, failed: bool, missing: bool
) -> None:
    assert tools.failed(text, flagged) is failed
    assert (failed and tools.missing(text)) is missing
