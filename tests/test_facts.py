"""The facts of a branch: computed once, exactly, from the whole branch."""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pytest

from handoff_cli.handoff.facts import (
    _REMARK,
    _RULE,
    Command,
    Facts,
    _rules,
    facts_of,
    facts_of_messages,
    is_rule,
    reports_done,
)
from handoff_cli.handoff.pipeline import handoff
from handoff_cli.handoff.shell import _EXIT as EXIT
from handoff_cli.handoff.shell import EXIT_REACH, _exit_at_end, covers, runner_and_targets
from handoff_cli.options import Options
from handoff_cli.said import is_acknowledgement
from handoff_cli.sessions.session import load_session
from handoff_cli.sessions.tree import branch, leaf

from .conftest import EXAMPLES, Entries, write_session


def facts(tmp_path: Path, entries: Entries) -> Facts:
    session = load_session(write_session(tmp_path / "s.jsonl", entries.items))
    return facts_of(session, branch(session, leaf(session)))


def call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"type": "toolCall", "id": call_id, "name": name, "arguments": arguments}


def result(entries: Entries, call_id: str, text: str, error: bool = False) -> None:
    entries.message(
        {
            "role": "toolResult",
            "toolCallId": call_id,
            "toolName": "x",
            "content": [{"type": "text", "text": text}],
            "isError": error,
            "timestamp": 3,
        }
    )


def test_the_original_task_survives_a_compaction(tmp_path: Path, entries: Entries) -> None:
    entries.user("Port the parser to Rust.")
    entries.assistant("On it.")
    kept = entries.user("Now the CLI.")
    entries.add(
        "compaction",
        summary="## Goal\nPort the parser.\n\n## Key Files\n- src/lib.rs",
        firstKeptEntryId=kept,
        tokensBefore=9,
        details={"readFiles": ["a.py", "conflict://1"], "modifiedFiles": ["src/lib.rs"]},
    )
    entries.assistant("Adding the flag.")
    found = facts(tmp_path, entries)
    assert (found.original_task, found.latest_request) == (
        "Port the parser to Rust.",
        "Now the CLI.",
    )
    assert found.summary == (("Goal", "Port the parser."), ("Key Files", "- src/lib.rs"))
    assert (found.read_files, found.modified_files) == (("a.py",), ("src/lib.rs",))


@pytest.mark.parametrize(
    "text", ["ok", "OK!", "yes, do it all", "👍", "lgtm", "sounds good, go ahead", "k thx"]
)
def test_acknowledgements(text: str) -> None:
    assert is_acknowledgement(text)


@pytest.mark.parametrize(
    "text", ["ok, now add tests", "yes but keep the old API", "fix the build", "do it in Go"]
)
def test_requests_are_not_acknowledgements(text: str) -> None:
    assert not is_acknowledgement(text)


def test_a_trivial_last_message_points_back_at_the_request(
    tmp_path: Path, entries: Entries
) -> None:
    entries.user("Rename the module to core.")
    entries.assistant("Shall I also update the imports?")
    entries.user("yes, do it all")
    found = facts(tmp_path, entries)
    assert found.latest_request == "Rename the module to core."
    assert found.acknowledgement == "yes, do it all"
    assert found.original_task == "Rename the module to core."  # no request of its own
    assert found.go_ahead  # it agreed to what the assistant asked


def test_thanks_for_an_answer_is_no_go_ahead(tmp_path: Path, entries: Entries) -> None:
    entries.user("What did I just run?")
    entries.assistant("You ran `ls` as a plain message.")
    entries.user("ok")
    entries.assistant("👍")
    found = facts(tmp_path, entries)
    assert found.acknowledgement == "ok" and not found.go_ahead
    assert found.last_answer == "You ran `ls` as a plain message."  # not the 👍


@pytest.mark.parametrize(
    ("sentence", "rule"),
    [
        ("Never touch the Python tests.", True),
        ("Always run the linter first.", True),
        ("Don't add new dependencies.", True),
        ("Prefer small, focused changes.", True),
        ("The total wait must stay under 5 s.", True),
        ("that is what happens if we don't stream, right?", False),
        ("should be 8ABeB7", True),  # a value the user wants: a rule, said short
        ("I don't know why it fails", False),
        ("hm, that should never happen", False),
        ("ok", False),
    ],
)
def test_rules_have_a_rules_force(sentence: str, rule: bool) -> None:
    assert is_rule(sentence) is rule


def test_files_as_oh_my_pi_counts_them(tmp_path: Path, entries: Entries) -> None:
    entries.user("go")
    entries.assistant(
        call("r1", "read", path="src/a.py:10-20"),
        call("r2", "read", path="src/a.py:raw"),
        call("r3", "read", path="artifact://3"),
        call("w1", "write", path="src/b.py"),
        call("e1", "edit", path="src/a.py"),
        call("g1", "grep", path="src/"),
        stop="toolUse",
    )
    for call_id in ("r1", "r2", "r3", "w1", "e1", "g1"):
        result(entries, call_id, "ok")
    found = facts(tmp_path, entries)
    assert found.modified_files == ("src/a.py", "src/b.py")
    assert found.read_files == () and found.read_set == frozenset({"src/a.py"})


@pytest.mark.parametrize(
    ("later", "earlier", "covered"),
    [
        ("python -m pytest -q", "python -m pytest -q tests/test_http.py", True),
        ("pytest tests/a.py tests/b.py", "pytest tests/a.py", True),
        ("pytest tests/b.py", "pytest tests/a.py", False),
        ("npx vitest run", "npx vitest run src/export.test.ts", True),
        ("cargo test", "cargo  test", True),
        ("ruff check .", "pytest", False),
        ("CI=1 npm test", "npm test -- --watch=false", True),
        ("npm run check", "npm run check 2>&1 | tail -5", True),
    ],
)
def test_a_pass_covers_a_failure(later: str, earlier: str, covered: bool) -> None:
    assert covers(later, earlier) is covered


@pytest.mark.parametrize(
    ("command", "looks", "milestone", "known"),
    [
        ("ls -la", True, False, True),
        ('cd src && grep -rn "chalk" . | head -20', True, False, False),
        ("git status && git diff HEAD~1", True, False, True),
        ("sed -n 1,40p a.ts", True, False, True),
        ("sed -i 's/a/b/' a.ts", False, False, True),
        ("echo done > notes.txt", False, False, True),
        ("grep x a.ts 2>/dev/null", True, False, True),
        ("cd pkg && npm run build 2>&1 | tail -5", False, True, False),
        ("git add -A && git commit -m 'WP1: executor'", False, True, True),
        ("sudo FOO=1 /usr/bin/pytest -q", False, True, True),
        ("python3 -m pytest tests", False, True, True),
        ("cat > /tmp/fix.py << 'EOF' import re", False, False, True),
        ('echo "unterminated', True, False, True),
    ],
)
def test_what_a_command_is(command: str, looks: bool, milestone: bool, known: bool) -> None:
    ran = Command(command, True, 0)
    assert (ran.inspects, ran.milestone, ran.known) == (looks, milestone, known)


def test_no_match_and_aborted_are_no_failures(tmp_path: Path, entries: Entries) -> None:
    entries.user("find the callers")
    bash(
        entries,
        "b1",
        "cd /w && grep -n pendingBash a.ts",
        "(no output)\n\nCommand exited with code 1",
        True,
    )
    bash(entries, "b2", "diff a.txt b.txt", "1c1\nCommand exited with code 1", True)
    bash(entries, "b3", "npm run check", "Command aborted", True)
    entries.message(
        {
            "role": "bashExecution",
            "command": "npm test",
            "exitCode": None,
            "cancelled": True,
            "output": "",
            "timestamp": 4,
        }
    )
    found = facts(tmp_path, entries)
    assert [(c.text, c.ok) for c in found.commands] == [
        ("cd /w && grep -n pendingBash a.ts", True),
        ("diff a.txt b.txt", True),
    ]
    assert found.open_error is None
    assert found.notable_commands == ()  # searches that passed say nothing


def test_runners_and_targets() -> None:
    assert runner_and_targets("python -m pytest -q tests/t.py") == (
        ("python", "-m", "pytest"),
        frozenset({"tests/t.py"}),
    )
    assert runner_and_targets("ls -la") is None


def bash(entries: Entries, call_id: str, command: str, output: str, error: bool = False) -> None:
    entries.assistant(call(call_id, "bash", command=command), stop="toolUse")
    result(entries, call_id, output, error)


def test_a_failure_fixed_later_is_not_open(tmp_path: Path, entries: Entries) -> None:
    entries.user("make the tests pass")
    bash(entries, "b1", "pytest tests/test_http.py", "1 failed\nCommand exited with code 1", True)
    bash(entries, "b2", "pytest", "10 passed")
    found = facts(tmp_path, entries)
    assert [(c.ok, c.resolved, c.exit_code) for c in found.commands] == [
        (False, True, 1),
        (True, False, 0),
    ]
    assert found.open_error is None


def test_the_last_unresolved_error_is_open(tmp_path: Path, entries: Entries) -> None:
    entries.user("ship it")
    bash(entries, "b1", "npm run build", "ok")
    bash(entries, "b2", "npm run publish", "E403 forbidden\nCommand exited with code 1", True)
    entries.assistant(call("e1", "edit", path="a.ts"), stop="toolUse")
    result(entries, "e1", "old text not found", error=True)
    entries.assistant(call("e2", "edit", path="a.ts"), stop="toolUse")
    result(entries, "e2", "Successfully replaced text in a.ts.")  # the edit error: put right
    found = facts(tmp_path, entries)
    assert (
        found.open_error
        == "`npm run publish` (exit code 1)\nE403 forbidden\nCommand exited with code 1"
    )


def test_a_tool_error_nothing_put_right_is_open(tmp_path: Path, entries: Entries) -> None:
    entries.user("fix a.ts")
    entries.assistant(call("e1", "edit", path="a.ts"), stop="toolUse")
    result(entries, "e1", "old text not found", error=True)
    assert facts(tmp_path, entries).open_error == "edit: old text not found"


def test_user_commands_count_too(tmp_path: Path, entries: Entries) -> None:
    entries.user("go")
    entries.message(
        {
            "role": "bashExecution",
            "command": "cargo test",
            "output": "error[E0425]\n",
            "exitCode": 101,
        }
    )
    found = facts(tmp_path, entries)
    assert found.open_error == "`cargo test` (exit code 101)\nerror[E0425]"


def test_a_handoff_recorded_is_the_anchor_and_never_conversation(tmp_path: Path) -> None:
    """After a handoff, the branch holds our prompt and its answer: they become the anchor an
    update starts from, never a request or a document's own text."""
    path = tmp_path / "s.jsonl"
    path.write_bytes(next(EXAMPLES.glob("-home-dev-projects-weather-cli/*.jsonl")).read_bytes())
    first = handoff(path, Options(model="extractive")).path
    session = load_session(path)
    found = facts_of(session, branch(session, leaf(session)))
    assert found.previous_document is not None and found.previous_document.startswith("## Goal")
    assert found.anchor == len(branch(session, leaf(session))) - 1
    assert len(found.skipped) == 2
    assert found.latest_request and "handoff document" not in found.latest_request
    assert not any("handoff document" in r for r in found.rules)
    new = load_session(first)  # a session handed off to starts from its document
    started = facts_of(new, branch(new, leaf(new)))
    opened = branch(new, leaf(new))
    at = next(i for i, record in enumerate(opened) if record.type == "custom_message")
    assert [record.type for record in opened[:at]] == ["model_change", "thinking_level_change"]
    assert started.previous_document == found.previous_document and started.anchor == at


def test_an_in_place_handoff_is_an_anchor_too(tmp_path: Path, entries: Entries) -> None:
    entries.user("do the thing")
    entries.assistant("done")
    entries.add(
        "compaction",
        summary="## Goal\nthe thing",
        firstKeptEntryId=None,
        tokensBefore=9,
        method="handoff",
    )
    found = facts(tmp_path, entries)
    assert found.previous_document == "## Goal\nthe thing" and found.anchor == 2


def test_masking_reaches_every_text(tmp_path: Path, entries: Entries) -> None:
    entries.user("use key SECRET1 please. Never print SECRET1.")
    bash(entries, "b1", "curl -H 'x: SECRET1'", "SECRET1 refused", True)
    found = facts(tmp_path, entries)
    masked = found.masked(
        lambda value: orjson.loads(orjson.dumps(value).replace(b"SECRET1", b"[X]"))
    )
    assert "SECRET1" not in repr(masked) and "[X]" in masked.open_error  # type: ignore[operator]


def test_the_files_a_codex_patch_changes_are_modified() -> None:
    """Codex changes files with apply_patch, its patch naming each: added, updated, deleted, or
    the name an update moves a file to."""
    patch = (
        "*** Begin Patch\n*** Add File: src/new.py\n+x = 1\n*** Update File: src/old.py\n"
        "*** Move to: src/moved.py\n@@\n-a\n+b\n*** Delete File: docs/gone.md\n"
        "*** Update File: notes.txt\n+*** Update File: not/a/header\n*** End Patch\n"
    )
    call = {"type": "toolCall", "id": "c1", "name": "apply_patch", "arguments": {"input": patch}}
    done = {"role": "toolResult", "toolCallId": "c1", "content": "Success. Updated the files."}
    facts = facts_of_messages([{"role": "assistant", "content": [call]}, done])
    assert facts.modified_files == (
        "docs/gone.md",
        "notes.txt",
        "src/moved.py",
        "src/new.py",
        "src/old.py",
    )


_PIECES = (
    "Always", "NEVER", "don't", "Dont", "do not", "Do Not", "must", "MUSTN'T", "only", "avoid",
    "prefer", "make sure", "no new", "stick to", "stay within", "keep it", "KEEP the", "should",
    "I don't", "we do not", "hm", "ok", "the", "tests", "exit code 3", "Exit Status: 1",
    "exited with code 0", "EXIT", "\u017fhould", "mu\u017ft", "\u212aeep it", "é", "-", "?", ".",
    "use", "Use", "be sure to", "would like to use", "first priority", "we use", "are using",
    "ask me", "needs to be", "without using", "instead of", "I can't", "cannot run", "no new",
    "you're in", "one at a time", "may be used", "will go in", "as each", "once the", "file is",
)  # fmt: skip


def test_the_shortcuts_before_the_patterns_never_change_an_answer() -> None:
    # A rule's and an exit code's case-blind patterns, tried only where the lowercased ASCII
    # text holds their words; the long s and the Kelvin sign are letters the patterns match too.
    rng = random.Random(23)
    for _ in range(20_000):
        sentence = " ".join(rng.choice(_PIECES) for _ in range(rng.randrange(3, 10)))
        expected = _REMARK.match(sentence) is None and _RULE.search(sentence) is not None
        assert is_rule(sentence) == (expected and not sentence.endswith("?"))
        output = "\n".join(rng.choice(_PIECES) for _ in range(rng.randrange(1, 30)))
        found, searched = _exit_at_end(output), EXIT.search(output, len(output) - EXIT_REACH)
        assert (found and found.span()) == (searched and searched.span())


# --- real work: the requests, done or not, what changed --------------------------------------


def test_every_request_in_order_and_nothing_injected(tmp_path: Path, entries: Entries) -> None:
    entries.user("<environment_context>\n  <cwd>/w</cwd>\n</environment_context>")
    entries.user("Ahoy!")
    entries.user("Add an export command.")
    entries.assistant("Added it.")
    entries.user("ok")
    entries.user("[Request interrupted by user]")
    entries.user("Also export to CSV. Never touch the CLI flags.")
    entries.assistant("Done: CSV export added, tests pass.")
    found = facts(tmp_path, entries)
    assert found.requests == (
        "Add an export command.",
        "Also export to CSV. Never touch the CLI flags.",
    )
    assert found.rules == ("Never touch the CLI flags.",)
    assert found.finished and found.stopped is None


@pytest.mark.parametrize(
    ("ending", "finished", "stopped"),
    [
        (["All done: the parser is fixed and 12 tests pass."], True, None),
        (["It reads the file line by line."], True, None),  # a question answered
        (["Done! Want me to also add a --verbose flag?"], True, None),
        (["Should I go ahead and migrate the database?"], False, "The assistant stopped at"),
        (["I fixed the import. Next, I'll run the tests."], False, "The assistant stopped at"),
        ([call("c1", "bash", command="npm test")], False, "A call to bash was made"),
        ([{"stop": "error", "errorMessage": "402 no credits"}], False, "The last answer did not"),
    ],
)
def test_done_or_not(
    tmp_path: Path, entries: Entries, ending: list[Any], finished: bool, stopped: str | None
) -> None:
    entries.user("Fix the parser.")
    for part in ending:
        if isinstance(part, dict) and "stop" in part:
            entries.assistant("", stop=part["stop"], errorMessage=part["errorMessage"])
        else:
            entries.assistant(part, stop="toolUse" if isinstance(part, dict) else "stop")
    found = facts(tmp_path, entries)
    assert found.finished is finished
    assert (found.stopped or "").startswith(stopped or "")


def test_a_turn_that_ends_on_a_result_or_a_refusal_is_not_finished(
    tmp_path: Path, entries: Entries
) -> None:
    entries.user("Find the slow query.")
    bash(entries, "b1", "grep -rn SELECT src", "src/db.py:12: SELECT *")
    found = facts(tmp_path, entries)
    assert not found.finished and found.stopped and "SELECT *" in found.stopped
    entries.assistant(call("e1", "edit", path="src/db.py"), stop="toolUse")
    result(entries, "e1", "The user doesn't want to proceed with this tool use.", error=True)
    found = facts(tmp_path, entries)
    assert found.stopped == "The user refused the call to edit and stopped the work."
    assert found.modified_files == ()


def test_only_what_succeeded_changed_and_a_failed_read_is_no_file_read(
    tmp_path: Path, entries: Entries
) -> None:
    entries.user("Tidy the config.")
    entries.assistant(call("r1", "read", path="conf/old.toml"), stop="toolUse")
    result(entries, "r1", "ENOENT: no such file or directory, open 'conf/old.toml'", error=True)
    entries.assistant(call("e1", "edit", path="conf/app.toml"), stop="toolUse")
    result(entries, "e1", "Could not find the exact text in conf/app.toml", error=True)
    entries.assistant(call("w1", "write", path="conf/new.toml"), stop="toolUse")
    result(entries, "w1", "Successfully wrote 12 bytes")
    bash(
        entries,
        "b1",
        "sed -i 's/a/b/' conf/app.toml && cat > conf/extra.toml <<'EOF'\nx=1\nEOF",
        "",
    )
    entries.assistant("Done: conf/new.toml written, app.toml fixed.")
    found = facts(tmp_path, entries)
    assert found.modified_files == ("conf/app.toml", "conf/extra.toml", "conf/new.toml")
    assert found.shell_files == ("conf/app.toml", "conf/extra.toml")
    assert found.missing_files == ("conf/old.toml",)
    assert "conf/old.toml" not in found.read_set and found.open_errors == ()  # the edit redone


def test_a_change_that_failed_last_is_where_it_stopped(tmp_path: Path, entries: Entries) -> None:
    entries.user("Write the report to docs/report.md")
    entries.assistant(call("w1", "write", path="docs/report.md"), stop="toolUse")
    result(entries, "w1", "EACCES: permission denied, open 'docs/report.md'", error=True)
    entries.assistant("I could not write it, so here is the text: ...")
    found = facts(tmp_path, entries)
    assert not found.finished
    assert found.stopped == "Changing `docs/report.md` failed, and it was not changed after."


@pytest.mark.parametrize(
    ("answer", "finished"),
    [
        ("I apologize: the row could not be added. Please try again.", False),
        ("現在の環境では書き込みができないため、内容を以下に示します。", False),
        ("Added the row; the totals now balance.", True),  # the failure is not spoken of
    ],
)
def test_an_answer_that_says_the_failure_stands_is_not_finished(
    tmp_path: Path, entries: Entries, answer: str, finished: bool
) -> None:
    entries.user("Log 50 for lunch.")
    entries.assistant(call("x1", "insert_row", amount=50), stop="toolUse")
    result(entries, "x1", "Failed to insert row: cannot cast Double to String", error=True)
    entries.assistant(answer)
    found = facts(tmp_path, entries)
    assert found.finished is finished
    entries.user("And 20 for coffee.")  # the failure is before this request: not open
    entries.assistant(answer)
    assert facts(tmp_path, entries).finished


def test_answers_to_the_agents_questions(tmp_path: Path, entries: Entries) -> None:
    entries.user("Plan the migration.")
    asked = call(
        "q1",
        "AskUserQuestion",
        questions=[
            {"question": "Which store?", "options": [{"label": "SQLite"}, {"label": "Postgres"}]}
        ],
    )
    entries.assistant(asked, stop="toolUse")
    result(
        entries,
        "q1",
        'User has answered your questions: "Which store?"="SQLite", "More?"="keep the old API"',
    )
    entries.assistant("I decided to keep SQLite because the data is small.")
    found = facts(tmp_path, entries)
    assert found.requests == ("Plan the migration.", "keep the old API")
    assert found.decisions[0] == 'user: "Which store?" → "SQLite"'
    assert found.decisions[1] == 'assistant: "I decided to keep SQLite because the data is small."'


def test_a_question_the_tool_refused_is_an_error_left_open(
    tmp_path: Path, entries: Entries
) -> None:
    entries.user("Rewrite it in the style of the example.")
    entries.assistant(call("q1", "ask_user_question", questions="[{...}]"), stop="toolUse")
    result(entries, "q1", 'Parameter "questions" must be an array.', error=True)
    entries.assistant("Which version do you want?")
    found = facts(tmp_path, entries)
    assert found.open_errors == ('ask_user_question: Parameter "questions" must be an array.',)
    assert found.requests == ("Rewrite it in the style of the example.",)


def test_the_facts_hold_the_cwd_and_show_paths_from_it(tmp_path: Path, entries: Entries) -> None:
    entries.user("go")
    found = facts(tmp_path, entries)
    assert found.cwd == "/home/dev/projects/weather-cli" or found.cwd is not None
    assert replace(found, cwd="/w/p").shown("/w/p/src/a.py") == "src/a.py"
    assert replace(found, cwd="/w/p").shown("/w/pp/a.py") == "/w/pp/a.py"


@pytest.mark.parametrize(
    ("sentence", "rule"),
    [
        ("you're in a PowerShell terminal", True),
        ("Cannot run exe at all", True),
        ("Use pnpm, not npm.", True),
        ("不要修改测试文件", True),
        ("テストは変更しないでください", True),
        ("背景やテキストカラーがうまく動作していないです", False),  # "is not": a complaint
        ("не трогай тесты", True),
        ("não altere o arquivo .sh", True),
        ("на отвали должно выглядеть", True),  # "should look": Russian's modal
        ("sin afectar a la nav bar", True),  # Spanish without its accents is ASCII
        ("se deberia de ver todo en la misma pagina", True),
        ("Le fichier doit rester en UTF-8", True),
        ("No need for running npm in the later responses.", True),
        ("Its function shall stay the same.", True),
        ("debes crear un carpeta primero", True),
        ("answer in Korean please", True),
        ("The page loads slowly", False),
        ("Why does it fail?", False),
        ("为什么会这样？", False),
    ],
)
def test_rules_in_any_language_and_phrasing(sentence: str, rule: bool) -> None:
    assert is_rule(sentence) is rule


def test_a_call_the_branch_ends_on_with_no_result_is_unanswered(
    tmp_path: Path, entries: Entries
) -> None:
    entries.user("Commit and push.")
    entries.assistant(call("b1", "bash", command="git add -A\ngit commit -m wip"), stop="toolUse")
    found = facts(tmp_path, entries)
    assert found.unanswered == "git add -A\ngit commit -m wip"
    result(entries, "b1", "[main 1a2b3c4] wip")
    assert facts(tmp_path, entries).unanswered is None


def test_the_rules_around_a_templates_own_block_are_its_authors(
    tmp_path: Path, entries: Entries
) -> None:
    entries.user(
        "You must fully embody this agent's persona. NEVER break character.\n\n"
        '<agent-activation CRITICAL="TRUE">\n1. LOAD the agent file\n2. Stay in character\n'
        "</agent-activation>"
    )
    entries.assistant("Loaded.")
    entries.user("Set up git flow. Never push to main directly.")
    assert facts(tmp_path, entries).rules == ("Never push to main directly.",)


def test_a_long_chinese_sentence_gives_its_rule_clause_and_a_question_gives_none(
    tmp_path: Path, entries: Entries
) -> None:
    entries.user(
        "skill只能扫描一级子目录的话,有什么办法既能区分自动生成与我指定生成,还能使二者放在同一目录"
    )
    entries.assistant("可以用前缀。")
    entries.user(
        "删除目前claude下所有skills,软链并使用我提供的文件夹下的skills,"
        "以后自动创建或者我要求创建的skills也都存放在我提供的文件下,单独文件夹统一存放"
    )
    entries.assistant("好的。")
    entries.user("会自己创建skills?不要删除旧的文件")
    entries.assistant("好的。")
    entries.user(
        "如果是流程上的踩坑记录，就必须完善流程的规范，如果是该知识点在知识库没有提到，那就更新对应的知识库，"
        "如果是bug问题，那就不需要沉淀坑点。"
    )
    assert facts(tmp_path, entries).rules == (
        "不要删除旧的文件",
        "如果是流程上的踩坑记录，就必须完善流程的规范",
        "以后自动创建或者我要求创建的skills也都存放在我提供的文件下",
        "如果是bug问题，那就不需要沉淀坑点。",
    )


@pytest.mark.parametrize(
    ("answer", "done"),
    [
        ("It will list the tasks. I'll populate the file with these details now.", False),
        (
            "The folder is empty. For example, I could:\n- Set up a package.json\n"
            "- Create a README\n\nWhat kind of project do you want to set up?",
            False,
        ),
        ("Fixed the parser and added tests.\n\nShall I push it?", True),
    ],
)
def test_what_an_answer_offers_or_promises_is_not_done(answer: str, done: bool) -> None:
    assert reports_done(answer) is done


def test_a_long_sentence_without_full_stops_gives_the_rule_in_its_clause() -> None:
    request = (
        "lo que necesito es que el contenido de la pagina se adapte a la pagina no la pagina al "
        "contenido , con esto quiero decir que se deberia de ver todo en la misma pagina sin "
        "necesidad de scrollerar para ver el demas contenido , como si ese div ocupara todo el "
        "ancho de la pagina y no se movieras de ahi , que mejor se comprimiera hacia dentro"
    )
    (rule,) = _rules(request, set())
    assert rule.startswith("con esto quiero decir que se deberia de ver todo")
