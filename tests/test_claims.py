"""What a document claims, checked against the branch (``claims``), and key terms in any
language (``terms``): each kind of contradiction found, and the sentences like it that are
none."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from handoff_cli.agents import load_session
from handoff_cli.handoff.check import CONTRADICTED_CAP, check_document
from handoff_cli.handoff.terms import Terms, key_terms
from handoff_cli.sessions.tree import branch, leaf

from .conftest import Entries, write_session
from .test_check import document, facts_at


def _call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"type": "toolCall", "id": call_id, "name": name, "arguments": arguments}


def _failed(chain: Entries, call_id: str, text: str) -> None:
    chain.message(
        {
            "role": "toolResult",
            "toolCallId": call_id,
            "toolName": "bash",
            "content": [{"type": "text", "text": f"{text}\nexit code 1"}],
            "isError": True,
            "timestamp": 3,
        }
    )


@pytest.fixture
def worked(tmp_path: Path) -> Path:
    """Reads `src/config.py`, edits `src/app.py`, commits; `pytest` fails at the end; the
    output of a search names `src/legacy.py`."""
    chain = Entries()
    chain.user("Add a retry option to the client in src/app.py and keep the config as it is.")
    chain.assistant("Reading.", _call("c1", "read", path="src/config.py"))
    chain.result("c1", "TIMEOUT = 5")
    chain.assistant("Searching.", _call("c2", "bash", command="rg -l retry src"))
    chain.result("c2", "src/legacy.py\nexit code 0")
    chain.assistant("Editing.", _call("c3", "edit", path="src/app.py"))
    chain.result("c3", "edited")
    chain.assistant("Committing.", _call("c4", "bash", command="git commit -am 'Add retries'"))
    chain.result("c4", "[main 1a2b3c4] Add retries\nexit code 0")
    chain.assistant("Testing.", _call("c5", "bash", command="pytest tests/test_app.py"))
    _failed(chain, "c5", "FAILED tests/test_app.py::test_retry - AssertionError")
    chain.assistant("The retry test still fails: the back-off is not applied yet.")
    return write_session(tmp_path / "s.jsonl", chain.items)


def _check(session: Path, **sections: str) -> list[str]:
    """The contradictions found in a document of ``sections`` (their names with ``_`` for a
    space: ``Next_Steps``), with a Goal that holds the task."""
    loaded = load_session(session)
    records = branch(loaded, leaf(loaded, None))
    parts = {"Goal": "Add a retry option to the client in `src/app.py`."}
    parts |= {name.replace("_", " "): body for name, body in sections.items()}
    written = document(*parts.items())
    report = check_document(facts_at(session), written, records)
    found = [p.answer for p in report.probes if p.wrong]
    assert (report.overall <= CONTRADICTED_CAP) == bool(found)
    return found


def test_a_file_said_changed_that_was_only_read(worked: Path) -> None:
    (found,) = _check(worked, Progress="### Done\n- Updated `src/config.py` with the retry count.")
    assert found.startswith("`src/config.py`: the document says it was changed; the session only")
    assert not _check(worked, Progress="### Done\n- Edited `src/app.py` to retry three times.")
    kept = "### Done\n- Added the option to `src/app.py` rather than editing `src/config.py`."
    assert not _check(worked, Progress=kept)
    # Outside Progress a sentence may tell what others changed (a diff under review); what
    # the agent is said to have changed counts anywhere.
    assert not _check(worked, Critical_Context="- The branch under review updated `src/config.py`.")
    assert _check(worked, Critical_Context="- The agent also updated src/config.py for it.")
    assert _check(worked, Key_Decisions="- Updated src/config.py rather than the client.")


def test_a_changed_file_said_untouched(worked: Path) -> None:
    (found,) = _check(worked, Critical_Context="- `src/app.py` was left unchanged.")
    assert "says it was not changed; the session changed it" in found
    assert not _check(worked, Critical_Context="- `src/config.py` was left unchanged.")


def test_writing_a_file_the_session_wrote_listed_as_to_do(worked: Path) -> None:
    (found,) = _check(worked, Next_Steps="1. Create `src/app.py` with the retry option.")
    assert found.startswith("`src/app.py`: the document lists writing it as to do")
    assert not _check(worked, Next_Steps="1. Create `src/retry.py` with the back-off.")
    assert not _check(worked, Next_Steps="1. Update `src/app.py` to apply the back-off.")


def test_a_commit_the_session_made_said_not_made(worked: Path) -> None:
    (found,) = _check(worked, Progress="### In Progress\n- The change is not committed yet.")
    assert found.startswith("`git commit`: the document lists it as to do")
    assert not _check(worked, Next_Steps="1. Commit the back-off once the test passes.")
    assert _check(worked, Next_Steps="1. Commit `1a2b3c4` to main.")  # that commit exists


def test_a_file_the_session_read_said_unread(worked: Path) -> None:
    (found,) = _check(worked, Progress="### Pending\n- `src/config.py` has not been read yet.")
    assert found == "`src/config.py`: the document says it was not read yet; the session read it"
    assert not _check(worked, Progress="### Pending\n- `src/db.py` has not been read yet.")
    # Said of something else, before the file: no claim about it.
    assert not _check(
        worked, Critical_Context="- The vendored copy (not inspected); `src/config.py` read."
    )


def test_a_push_no_call_made_said_made(worked: Path) -> None:
    (found,) = _check(worked, Progress="### Done\n- The retry option is pushed to origin.")
    assert found == "`git push`: the document says it was made; no call of the session made one"
    assert not _check(worked, Progress="### Done\n- The retry option is committed.")  # it was
    assert not _check(worked, Progress="### Pending\n- Not pushed yet.")


def test_a_failure_said_fixed_while_it_still_fails(worked: Path) -> None:
    found = _check(worked, Progress="### Done\n- `pytest tests/test_app.py` passes now.")
    assert found == [
        "`pytest tests/test_app.py` still fails at the end of the session; the document says passes"
    ]
    assert _check(worked, Progress="### Done\n- pytest is green now.")  # the runner named
    assert not _check(worked, Progress="### Done\n- Red/Green/Refactor: the unittest run is OK.")
    assert not _check(worked, Progress="### In Progress\n- `pytest tests/test_app.py` still fails.")
    # A quote of the error the branch ends on, said fixed; a "passed" after a modal is none.
    assert _check(worked, Progress="### Done\n- The `AssertionError` in `test_retry` is fixed.")
    assert not _check(worked, Progress="### Done\n- The delay must be passed to `retry()`.")


def test_a_command_said_run_that_never_ran(worked: Path) -> None:
    (found,) = _check(worked, Progress="### Done\n- Ran `mypy src` and it was clean.")
    assert found == "`mypy src`: the document says it was run; no call of the session ran it"
    assert not _check(worked, Progress="### Done\n- Ran `rg -l retry src`: one hit.")
    assert not _check(worked, Next_Steps="1. Run `mypy src`.")  # still to do: no claim
    # A program this tool does not know, read as a command by its options, paths or pipe.
    assert _check(worked, Progress="### Done\n- The agent ran `luac -p src/app.lua`: no error.")
    assert not _check(worked, Progress='### Done\n- Checked the `theme "dark"` line: kept.')
    # Named without backticks, right after the verb.
    assert _check(worked, Progress="### Done\n- Ran mypy src and it was clean.")
    assert not _check(worked, Progress="### Done\n- Ran git commit after the edit.")
    # In any language: a command in what the work did, which the branch never shows.
    assert _check(worked, Progress="### Done\n- 运行了 `ruff check src`, 没有问题。")
    assert not _check(worked, Progress="### Done\n- `mypy src` は実行していない。")  # not run
    assert not _check(worked, Next_Steps="1. شغّل `mypy src`.")  # an imperative, in Next Steps


def test_claims_in_arabic_with_or_without_vowel_marks(worked: Path) -> None:
    for written in ("أُضيف", "أضيف"):
        (found,) = _check(worked, Progress=f"### Done\n- {written} الخيار إلى src/config.py.")
        assert found.startswith("`src/config.py`: the document says it was changed")


def test_a_file_named_anywhere_in_the_branch_is_no_invention(worked: Path) -> None:
    # src/legacy.py is only in a command's output: the session saw it.
    assert not _check(worked, Critical_Context="- `src/legacy.py` also mentions retries.")
    (found,) = _check(worked, Critical_Context="- `src/backoff.py` holds the delays.")
    assert "never read, changed or named it" in found
    # A name cut short, a bare extension, a library's name: no file's name.
    assert not _check(worked, Critical_Context="- Logs in `.jsonl` files; see `run-...jsonl`.")
    assert not _check(worked, Critical_Context="- A Node.js server draws it with Chart.js.")


def test_key_terms_of_languages_written_without_spaces() -> None:
    assert key_terms("修复登录页面") == ["修复", "复登", "登录", "录页", "页面"]
    held = Terms("## Goal\n修复登录页面的错误 in `src/login.ts`")
    assert held.keeps("请修复登录页面")
    assert not held.keeps("请更新付款流程")


def test_another_language_is_judged_by_its_names_alone() -> None:
    english = Terms("## Goal\nFix the crash in `src/login.ts` on a bad password.")
    assert english.keeps("Исправь падение в src/login.ts при неверном пароле")
    assert not english.keeps("Исправь падение в src/payment.ts при неверном пароле")
    assert english.keeps("Исправь падение при неверном пароле") is None  # no name to tell by


def test_a_prompt_file_is_not_the_task(tmp_path: Path) -> None:
    template = "## Outline\n\n1. Run the prerequisites script.\n" + "- a step\n" * 300
    chain = Entries()
    chain.user(template)
    chain.assistant("Running the steps.")
    chain.user("Now wire the new endpoint into the router.")
    chain.assistant("Wired.")
    session = write_session(tmp_path / "s.jsonl", chain.items)
    report = check_document(facts_at(session), document(("Goal", "Wire the new endpoint.")))
    (task,) = [p for p in report.probes if p.question == "the original task"]
    assert task.answer.startswith("Now wire the new endpoint") and task.held


def test_an_error_in_a_results_details_lasts_until_its_tool_succeeds(tmp_path: Path) -> None:
    chain = Entries()
    chain.user("Trace where the config is loaded from and fix the loader.")
    chain.assistant("Tracing.", _call("c1", "trace", target="loader"))
    chain.message(
        {
            "role": "toolResult",
            "toolCallId": "c1",
            "toolName": "trace",
            "content": [{"type": "text", "text": "Trace completed."}],
            "details": {"results": [{"errorMessage": "toolMsg.content.filter is not a function"}]},
            "timestamp": 3,
        }
    )
    chain.assistant("Reading instead.", _call("c2", "read", path="src/loader.py"))
    chain.result("c2", "def load(): ...")
    chain.assistant("The trace tool fails; I read the loader instead.")
    session = write_session(tmp_path / "s.jsonl", chain.items)
    said = "- The `toolMsg.content.filter is not a function` error went away on a second try."
    written = document(("Goal", "Fix the config loader."), ("Progress", f"### Done\n{said}"))
    loaded = load_session(session)
    report = check_document(facts_at(session), written, branch(loaded, leaf(loaded, None)))
    (found,) = [p.answer for p in report.probes if p.wrong]
    assert found.startswith("`toolMsg.content.filter is not a function` still fails")
