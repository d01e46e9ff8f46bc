"""``--keep-recent TOKENS``: the most recent whole turns kept verbatim after the document
(handoff/keep.py, docs/handoff.md §17).

The real agents' verdicts are in tests/fixtures/keep (``oracles/keep.py``): for each source
session, target agent and budget, the new file our handoff wrote (``<case>.session``) and the
context the target agent itself built from it. The first test writes each again and holds it
to that file, so the agents' reading of it is the reading of what we write now.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest

from handoff_cli.agents import OMP, PI, build_context
from handoff_cli.handoff.keep import counter, recent_turns
from handoff_cli.handoff.prompt import to_chat
from handoff_cli.llm import tokens
from handoff_cli.sessions.session import load_session
from handoff_cli.sessions.tree import branch, leaf

from .conftest import (
    FAKE_MODEL,
    FIXTURES,
    PROJECT,
    Entries,
    run_cli,
    tool_call,
    write_session,
)

KEEP = FIXTURES / "keep"
CASES = orjson.loads((KEEP / "cases.json").read_bytes())
BY_CASE: dict[str, list[dict[str, Any]]] = {}
for _row in CASES:
    BY_CASE.setdefault(_row["case"], []).append(_row)
WHOLE: dict[str, list[dict[str, Any]]] = {}
for _row in orjson.loads((KEEP / "whole.json").read_bytes()):
    WHOLE.setdefault(_row["case"], []).append(_row)
"""oh-my-pi 18.2.3 and 18.3.4 and pi 1.6.0 run whole in print mode, each resuming one new
session: their first request (``agents.py next``), in tests/fixtures/keep/whole/."""
READER_OF = {"omp": OMP, "omp-18.3.4": OMP, "pi": PI, "claude": "claude", "codex": "codex"}

_IDS = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{32}|[0-9a-f]{8}"
    r"|msg_[0-9a-f]{24}"
)
_MADE = {"timestamp", "updatedAt", "parentSession"}
"""Keys whose values a handoff makes afresh each time (its time, where its source lay)."""


def normalized(value: Any, names: dict[str, str] | None = None) -> Any:
    """``value`` with what each handoff makes afresh put in words: the times and the source's
    place, and every id named by the order it first appears in (so a chain of parents stays a
    chain)."""
    names = {} if names is None else names
    if isinstance(value, dict):
        return {k: f"<{k}>" if k in _MADE else normalized(v, names) for k, v in value.items()}
    if isinstance(value, list):
        return [normalized(v, names) for v in value]
    if isinstance(value, str) and _IDS.fullmatch(value):
        return names.setdefault(value, f"<id {len(names)}>")
    return value


def file_values(path: Path) -> Any:
    return normalized([orjson.loads(line) for line in path.read_bytes().splitlines()])


def placed_source(row: dict[str, Any], folder: Path) -> Path:
    """The case's source session, copied as the oracle placed it (a Claude Code file under its
    session id)."""
    source = PROJECT / row["source_path"]
    folder.mkdir(parents=True)
    name = f"{source.stem}.jsonl"
    if row["agent"] == "claude":
        values = (orjson.loads(line) for line in source.read_bytes().splitlines())
        name = next(f"{v['sessionId']}.jsonl" for v in values if "sessionId" in v)
    return Path(shutil.copy(source, folder / name))


@pytest.mark.parametrize("case", sorted(BY_CASE))
def test_the_agents_read_the_document_then_exactly_the_turns_kept(
    case: str, tmp_path: Path
) -> None:
    rows = BY_CASE[case]
    row = rows[0]
    source = placed_source(row, tmp_path / "source")
    out = tmp_path / "new"
    done = run_cli(
        source, "--model", "extractive", "--keep-recent", str(row["budget"]), "--to",
        row["target"], "--no-record", "--out-dir", out, "--json", "--quiet",
    )  # fmt: skip
    assert done.code == 0, done.stderr
    result = done.json()
    assert (result["kept_messages"], result["kept_tokens"], result["first_kept_entry_id"]) == (
        row["kept_messages"],
        row["kept_tokens"],
        row["first_kept_entry_id"],
    )
    written = Path(result["path"])
    assert file_values(written) == file_values(KEEP / f"{case}.session")
    for seen in rows:  # each agent that read the file we wrote then
        assert seen["opened"] and seen["document_first"], seen
        assert seen.get("suffix_of_source", True), seen  # verbatim, where the format is the same
        assert seen.get("texts", True), seen
        context = orjson.loads((KEEP / f"{case}.{seen['reader']}-context.json").read_bytes())
        shown = run_cli(
            "show", written, "--context", "--json", "--agent", READER_OF[seen["reader"]]
        )
        ours = shown.json()["messages"]
        assert normalized(ours) == normalized(context)
        assert (
            len(context) - (1 if seen["reader"] in ("omp", "omp-18.3.4", "pi") else 2)
            == (seen["kept_in_context"])
        )
    for run in WHOLE.get(case, []):  # the agent whole: its next request
        assert run["document_first"] and run["kept_texts_in_order"], run
        request = orjson.loads((KEEP / "whole" / f"{run['agent']}.request.json").read_bytes())
        assert "<handoff-context>" in str(request[1]["content"])
        assert "Plan the change in two steps." in str(request[-3]["content"])


# --- the cut, and the edges ----------------------------------------------------------------

MODEL = "anthropic/claude-sonnet-4-5"
HOUR_AGO = 1_700_000_000


def worked(entries: Entries) -> Entries:
    """Three turns of work: a read, a command with a long output, a last word."""
    entries.user("First, read the file.")
    entries.assistant("Reading it.", tool_call("c1", "read"), stop="toolUse")
    entries.result("c1", "the contents of the file")
    entries.assistant("Read it.")
    entries.user("Second: run the tests.")
    entries.assistant(tool_call("c2"), stop="toolUse")
    entries.result("c2", "test output line\n" * 40)
    entries.assistant("The tests pass.")
    entries.user("Third: sum it up.")
    entries.assistant("Read, tested, done.")
    return entries


def session_at(tmp_path: Path, entries: Entries, name: str = "s.jsonl") -> Path:
    return write_session(tmp_path / "sessions" / "project" / name, entries.items)


def lines_of(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def hand_off(path: Path, *args: str) -> tuple[dict[str, Any], Path, str]:
    """The handoff's JSON, its new file and its stderr (the built-in writer, not recorded)."""
    done = run_cli(path, "--model", "extractive", "--no-record", "--json", *args)
    assert done.code == 0, done.stderr
    return done.json(), Path(done.json()["path"]), done.stderr


def sent(path: Path) -> Any:
    return run_cli("show", path, "--context", "--json").json()["messages"]


def test_the_turns_kept_are_the_newest_whole_turns_that_fit(tmp_path: Path) -> None:
    path = session_at(tmp_path, worked(Entries()))
    session = load_session(path)
    context = build_context(branch(session, leaf(session, None)), OMP)
    messages = list(context.messages())
    starts = [i for i, m in enumerate(messages) if m["role"] == "user"]
    # Counted by hand as LiteLLM counts a request's messages for the session's model.
    assert tokens.encoding_name(MODEL) == "cl100k_base"
    count = tokens.Tiktoken("cl100k_base", fallback=lambda m: 0)
    turns = [(a, b) for a, b in zip(starts, [*starts[1:], len(messages)], strict=True)]
    sizes = [sum(count(chat) for chat in to_chat(messages[a:b])) for a, b in turns]
    assert len(turns) == 3 and sizes[1] > sizes[0] > sizes[2]
    edges = {sum(sizes[-n:]) + d for n in range(4) for d in (-1, 0, 1)}
    for budget in sorted(b for b in edges if b >= 0):
        fit = max(n for n in range(4) if sum(sizes[len(sizes) - n :]) <= budget)
        first = turns[len(turns) - fit][0] if fit else len(messages)
        kept = recent_turns(context, OMP, budget, MODEL).kept
        assert [k.message for k in kept.messages] == messages[first:], budget
        assert kept.tokens == sum(sizes[len(sizes) - fit :])
        assert all(k.starts_turn == (k.message["role"] == "user") for k in kept.messages)
    # A session that names no model (or one LiteLLM counts otherwise): o200k_base.
    text = {"role": "user", "content": "naïve café façade"}
    assert counter(None)(text) == tokens.Tiktoken("o200k_base", lambda m: 0)(text) != count(text)


def test_keep_recent_0_is_todays_handoff(tmp_path: Path) -> None:
    path = session_at(tmp_path, worked(Entries()))
    plain, plain_file, _ = hand_off(path, "--out-dir", str(tmp_path / "a"))
    zero, zero_file, _ = hand_off(path, "--out-dir", str(tmp_path / "b"), "--keep-recent", "0")
    assert "kept_messages" not in plain and "kept_messages" not in zero
    assert file_values(zero_file) == file_values(plain_file)
    assert len(sent(zero_file)) == 1  # the document alone


def test_the_kept_entries_follow_the_document_with_fresh_ids_in_one_chain(tmp_path: Path) -> None:
    path = session_at(tmp_path, worked(Entries()))
    result, new, _ = hand_off(path, "--keep-recent", "60")
    old = {e["id"]: e for e in lines_of(path)[1:]}
    entries = lines_of(new)[1:]
    document = next(i for i, e in enumerate(entries) if e.get("customType") == "handoff")
    named, *kept = entries[document + 1 :]  # the title, then the last turn
    assert named["type"] == "title_change" and [e["type"] for e in kept] == ["message"] * 2
    assert result["kept_messages"] == 2 and result["first_kept_entry_id"] == "e0000009"
    assert [e["message"] for e in kept] == [old["e0000009"]["message"], old["e000000a"]["message"]]
    assert all(e["id"] not in old for e in kept)
    assert [e["parentId"] for e in entries[1:]] == [e["id"] for e in entries[:-1]]
    assert sent(new)[1:] == sent(path)[-2:]


def test_a_last_turn_over_the_budget_keeps_nothing_and_says_so(tmp_path: Path) -> None:
    path = session_at(tmp_path, worked(Entries()))
    result, new, stderr = hand_off(path, "--keep-recent", "5")
    assert (result["kept_messages"], result["kept_tokens"]) == (0, 0)
    notes = [line for line in stderr.splitlines() if "--keep-recent" in line]
    assert len(notes) == 1 and re.fullmatch(
        r"note: the last turn is \d+ tokens, more than --keep-recent 5: no turn is kept, the new "
        r"session holds the document alone",
        notes[0],
    )
    assert len(sent(new)) == 1


@pytest.mark.parametrize("first_kept", ["e0000005", "e0000006"])
def test_a_budget_larger_than_the_branch_keeps_every_whole_turn_after_the_last_compaction(
    tmp_path: Path, first_kept: str
) -> None:
    entries = worked(Entries())  # the compaction keeps the second turn, or its answer only
    entries.add("compaction", summary="Read and tested.", firstKeptEntryId=first_kept)
    entries.user("Fourth: ship it.")
    entries.assistant("Shipped.")
    path = session_at(tmp_path, entries)
    result, new, _ = hand_off(path, "--keep-recent", "1000000")
    context = sent(path)
    assert context[0]["role"] == "compactionSummary"
    whole = next(i for i, m in enumerate(context) if i and m["role"] == "user")
    assert context[whole]["content"] == ("Second: run the tests." if first_kept == "e0000005"
                                         else "Third: sum it up.")  # fmt: skip
    assert sent(new)[1:] == context[whole:]
    assert result["kept_messages"] == len(context) - whole


def test_a_tool_call_nobody_answered_is_kept_as_the_agent_sends_it(tmp_path: Path) -> None:
    entries = worked(Entries())
    entries.user("Fourth: look again.")
    entries.assistant("Looking.", tool_call("c3"), stop="toolUse")  # never answered
    entries.user("Never mind.")
    entries.assistant("Fine.")
    path = session_at(tmp_path, entries)
    result, new, _ = hand_off(path, "--keep-recent", "100")
    kept = sent(new)[1:]
    assert result["kept_messages"] == len(kept) >= 4 and kept == sent(path)[-len(kept) :]
    assert kept[-3]["content"] == [{"type": "text", "text": "Looking."}]  # as oh-my-pi sends it
    assert b'"c3"' in path.read_bytes() and b'"c3"' not in new.read_bytes()


def test_what_a_pi_edit_changed_is_kept_as_pi_sends_it(tmp_path: Path) -> None:
    entries = worked(Entries())
    note = entries.custom_message("note", "Remember the flaky test.")
    asked = entries.user("Fourth: fix it.")
    entries.assistant("Fixed.")
    entries.add("context_edit", targetId=note, replacement={"content": "The test is fixed."})
    entries.add("context_edit", targetId=asked, replacement={"content": "Fourth: fix the test."})
    path = session_at(tmp_path, entries)
    result, new, _ = hand_off(path, "--keep-recent", "60")
    context = sent(path)
    edited = [m.get("content") for m in context[-3:-1]]
    assert edited == ["The test is fixed.", "Fourth: fix the test."]
    kept = result["kept_messages"]
    assert result["agent"] == "pi" and kept >= 3 and sent(new)[1:] == context[-kept:]
    assert b"Remember the flaky" not in new.read_bytes()


def test_our_recorded_exchange_is_never_kept(tmp_path: Path) -> None:
    path = session_at(tmp_path, worked(Entries()))
    assert run_cli(path, "--model", "extractive", "--quiet").code == 0  # recorded
    more = Entries()
    more.items = [{} for _ in lines_of(path)]  # ids after the file's own
    more.leaf = lines_of(path)[-1]["id"]
    more.user("Back at it: one more test.")
    more.assistant("Added.")
    with path.open("ab") as file:
        file.write(b"".join(orjson.dumps(e) + b"\n" for e in more.items if e))
    result, new, _ = hand_off(path, "--keep-recent", "1000000")
    assert result["kept_messages"] == 2
    assert [m["content"] for m in sent(new)[1:]] == [
        "Back at it: one more test.",
        [{"type": "text", "text": "Added."}],
    ]


def test_a_dry_run_shows_what_would_be_kept_and_sends_the_whole_branch(
    tmp_path: Path,
) -> None:
    path = session_at(tmp_path, worked(Entries()))
    env = {"HANDOFF_MODEL": FAKE_MODEL, "OPENAI_API_KEY": "sk-test"}
    plain = run_cli(path, "--dry-run", "--json", env=env)
    kept = run_cli(path, "--dry-run", "--json", "--keep-recent", "60", env=env)
    assert kept.code == 0, kept.stderr
    planned = kept.json()
    assert (planned["kept_messages"], planned["first_kept_entry_id"]) == (2, "e0000009")
    assert planned["kept_tokens"] > 0
    # The document is asked of the whole branch, whatever is kept.
    assert planned["messages"] == plain.json()["messages"]
    assert planned["requests"] == plain.json()["requests"]
    assert [p.name for p in path.parent.iterdir()] == [path.name]


def test_keep_recent_goes_with_a_new_session_only(tmp_path: Path) -> None:
    path = session_at(tmp_path, worked(Entries()))
    before = path.read_bytes()
    for command in ([path], ["rotate", path.parent]):
        done = run_cli(*command, "--in-place", "--keep-recent", "100", "--model", "extractive")
        assert done.code == 2
        assert done.stderr == (
            "Usage error: --keep-recent keeps turns after a new session's document; --in-place "
            "keeps the most recent turns by oh-my-pi's own rule: give one\n"
        )
    assert path.read_bytes() == before and len(list(path.parent.iterdir())) == 1


def test_rotate_keeps_the_recent_turns_too(tmp_path: Path) -> None:
    path = session_at(tmp_path, worked(Entries()))
    os.utime(path, (HOUR_AGO, HOUR_AGO))
    done = run_cli(
        "rotate", path.parent, "--model", "extractive", "--over-tokens", "1", "--idle", "1s",
        "--keep-recent", "60", "--json",
    )  # fmt: skip
    assert done.code == 0, done.stderr
    new = Path(orjson.loads(done.stdout.splitlines()[0])["new_path"])
    assert sent(new)[1:] == sent(path)[-4:-2]  # the last turn: before the recorded exchange
