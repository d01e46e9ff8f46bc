"""Listing a sessions folder and resolving session ids."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import orjson
import pytest

from handoff_cli.catalog import (
    Catalog,
    catalog,
    list_sessions,
    listcache,
    resolve_session,
    summarize,
    unique_prefixes,
)
from handoff_cli.cli.app import run
from handoff_cli.document import HANDOFF_TYPE
from handoff_cli.errors import SessionFileError, UsageError
from handoff_cli.handoff.pipeline import handoff
from handoff_cli.options import Options
from handoff_cli.sessions.files import append_entries
from handoff_cli.sessions.session import load_session

from .conftest import (
    EXAMPLES,
    FIXTURES,
    HEADER,
    REAL,
    Entries,
    line,
    quick_and_stress,
    run_cli,
    write_session,
)
from .test_limits import claude_session

WEATHER = "2026-11-27T09-14-03-512Z_019ac4d2-7f31-7a0e-9b6c-3e1f5a2d8c40.jsonl"


def make_folder(root: Path) -> dict[str, Path]:
    files = {
        "omp": FIXTURES / "omp/sample-v3.jsonl",
        "pi": FIXTURES / "generated/pi-001.jsonl",
        "v1": FIXTURES / "generated/v1-003.jsonl",
    }
    copies = {}
    for name, source in files.items():
        target = root / f"--cwd-{name}--" / source.name
        target.parent.mkdir(parents=True)
        shutil.copyfile(source, target)
        copies[name] = target
    return copies


def test_list_is_recursive_newest_first_and_skips_non_sessions(tmp_path: Path) -> None:
    copies = make_folder(tmp_path)
    (tmp_path / "notes.jsonl").write_text('{"hello": "world"}\n')
    (tmp_path / "README.md").write_text("not even jsonl")
    sessions, skipped = list_sessions(tmp_path)
    assert {s.path for s in sessions} == set(copies.values())
    stamps = [s.timestamp for s in sessions]
    assert stamps == sorted(stamps, reverse=True)
    assert [s.path.name for s in skipped] == ["notes.jsonl"]
    assert skipped[0].reason.startswith("not a session file")


def test_titles_come_from_slot_session_info_or_first_user_message(
    tmp_path: Path, entries: Entries
) -> None:
    entries.user("  Fix the\n flaky   test  ")
    plain = write_session(tmp_path / "a.jsonl", entries.items)
    assert summarize(plain).title == "Fix the flaky test"
    entries.add("session_info", name="Named by the user")
    named = write_session(tmp_path / "b.jsonl", entries.items)
    assert summarize(named).title == "Named by the user"
    slot = {"type": "title", "v": 1, "title": "Slot title", "updatedAt": "x", "pad": " "}
    titled = tmp_path / "c.jsonl"
    titled.write_bytes(line(slot) + named.read_bytes())
    assert summarize(titled).title == "Slot title"


def test_a_title_is_the_persons_request_not_what_was_injected(
    tmp_path: Path, entries: Entries
) -> None:
    entries.user("<environment_context>\n  <cwd>/w</cwd>\n</environment_context>")
    entries.user("Ahoy!")
    entries.user("[Request interrupted by user]")
    entries.user("Port the parser to Rust.")
    path = write_session(tmp_path / "a.jsonl", entries.items)
    assert summarize(path).title == load_session(path).title == "Port the parser to Rust."


def test_real_sessions_are_titled_by_the_persons_first_request() -> None:
    codex = next((REAL / "codex" / "Kooksun__Lotto645").glob("*.jsonl"))  # AGENTS.md first
    assert summarize(codex).title == "user story 1"  # the words typed into a template
    claude = next((REAL / "claude" / "natori-hrj__dotfiles").glob("f7885ed9*.jsonl"))
    assert (
        summarize(claude).title == "ダークモードとライトモードを切り替えるボタンが動作しないです。"
    )  # /plan before


@pytest.mark.parametrize("block", [64, 1 << 20])
def test_the_latest_name_is_found_anywhere_as_show_finds_it(
    tmp_path: Path, entries: Entries, monkeypatch: pytest.MonkeyPatch, block: int
) -> None:
    """A rename far past the head, and marks split across the blocks the file is read in."""
    monkeypatch.setattr("handoff_cli.catalog.SCAN_BLOCK", block)
    entries.user("first request")
    entries.add("session_info", name="Early name")
    for n in range(400):
        entries.assistant(f"step {n} " + "x" * 300)
    entries.add("session_info", name="Late name")
    entries.assistant('quoting a line: {"type":"session_info","name":"Not a name"}')
    path = write_session(tmp_path / "s.jsonl", entries.items)
    assert path.stat().st_size > 2 * 64 * 1024
    summary = summarize(path)
    assert summary.title == load_session(path).title == "Late name"
    assert summary.entries == len(entries.items)
    for cut in range(1, 40):  # every split of a mark across two blocks
        shifted = tmp_path / f"shift-{cut}.jsonl"
        data = path.read_bytes()
        at = data.rindex(b'"session_info"') + cut % 14
        padding = (-at) % 64  # the mark's split point lands on a block edge
        shifted.write_bytes(data.replace(b"first request", b"first request" + b"-" * padding))
        assert summarize(shifted).title == "Late name"


def test_summary_fields(tmp_path: Path) -> None:
    path = write_session(tmp_path / "s.jsonl", [], {**HEADER, "branchedFrom": "/old.jsonl"})
    found = catalog(tmp_path)
    (summary,) = found.sessions
    assert found.to_json(summary) == {
        "id": HEADER["id"],
        "path": str(path),
        "agent": None,
        "timestamp": HEADER["timestamp"],
        "modified": path.stat().st_mtime,
        "cwd": HEADER["cwd"],
        "title": None,
        "parent": {"id": None, "path": "/old.jsonl", "subagent": False},  # named, not found
        "children": [],
        "handed_off": False,
        "generation": 0,
        "entries": 0,
        "size": path.stat().st_size,
    }


def test_examples_are_listed_with_titles() -> None:
    sessions, skipped = list_sessions(EXAMPLES)
    assert skipped == []
    assert len(sessions) >= 2
    assert all(s.title for s in sessions)


def test_resolve_by_path_id_and_prefix(tmp_path: Path) -> None:
    copies = make_folder(tmp_path)
    omp_id = "01a22ac6-037e-775c-8089-58f5d6db35c2"
    assert resolve_session(str(copies["omp"]), tmp_path) == copies["omp"]
    assert resolve_session(omp_id, tmp_path) == copies["omp"]
    assert resolve_session(omp_id[:13], tmp_path) == copies["omp"]
    with pytest.raises(SessionFileError, match="no session with this id"):
        resolve_session("ffffffff", tmp_path)


def test_ambiguous_prefix_lists_the_candidates(tmp_path: Path) -> None:
    for number in (1, 2):
        write_session(tmp_path / f"{number}.jsonl", [], {**HEADER, "id": f"0199-{number}"})
    with pytest.raises(UsageError) as caught:
        resolve_session("0199", tmp_path)
    assert "0199-1" in str(caught.value) and "0199-2" in str(caught.value)


def test_missing_folder_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such folder"):
        list_sessions(tmp_path / "nope")


def test_a_fifo_named_like_a_session_is_passed_over(tmp_path: Path) -> None:
    copies = make_folder(tmp_path)
    os.mkfifo(tmp_path / "--cwd-omp--" / "waiting.jsonl")
    sessions, skipped = list_sessions(tmp_path)  # would hang if it opened the FIFO
    assert {s.path for s in sessions} == set(copies.values()) and skipped == []
    assert resolve_session("01a22ac6", tmp_path) == copies["omp"]


def test_usage_errors_say_so(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"^Usage error: .*no such folder"):
        list_sessions(tmp_path / "nope")
    for number in (1, 2):
        write_session(tmp_path / f"{number}.jsonl", [], {**HEADER, "id": f"0199-{number}"})
    with pytest.raises(UsageError, match=r"^Usage error: session id prefix '0199' is ambiguous"):
        resolve_session("0199", tmp_path)


def continue_session(path: Path, text: str) -> None:
    """The agent resumes a session and does some work in it."""
    session = load_session(path)
    parent = session.records[-1].id
    append_entries(
        path,
        [
            {
                "type": "message",
                "id": "c0ffee01",
                "parentId": parent,
                "timestamp": "2026-02-01T00:00:00.000Z",
                "message": {"role": "user", "content": text, "timestamp": 1},
            },
            {
                "type": "message",
                "id": "c0ffee02",
                "parentId": "c0ffee01",
                "timestamp": "2026-02-01T00:00:01.000Z",
                "message": {
                    "role": "assistant",
                    "content": [{"type": "text", "text": "done"}],
                    "provider": "x",
                    "model": "y",
                    "stopReason": "stop",
                    "timestamp": 2,
                },
            },
        ],
    )


def test_lineage_across_two_handoffs_and_a_fork(tmp_path: Path, capsys: Any) -> None:
    first = tmp_path / "first.jsonl"
    shutil.copyfile(EXAMPLES / "-home-dev-projects-weather-cli" / WEATHER, first)
    second = handoff(first, Options(model="extractive")).path
    continue_session(second, "now the docs")
    third = handoff(second, Options(model="extractive")).path
    fork = write_session(
        tmp_path / "fork.jsonl",
        [],
        {**HEADER, "id": "0199ffff-0000-7000-8000-00000000f0f0", "parentSession": str(first)},
    )
    found = catalog(tmp_path)
    by_path = {s.path: s for s in found.sessions}
    one, two, three = (by_path[p] for p in (first, second, third))
    assert found.to_json(one)["children"] == ["0199ffff-0000-7000-8000-00000000f0f0", two.id]
    assert [found.generation(s) for s in (one, two, three, by_path[fork])] == [0, 1, 2, 0]
    assert [found.handed_off(s) for s in (one, two, three)] == [True, True, False]
    assert found.to_json(three)["parent"] == {
        "id": two.id,
        "path": str(second),
        "subagent": False,
    }
    title = "Retry with backoff for the HTTP client"
    assert found.title(three) == found.title(two) == f"↳ {title}"
    # An id in parentSession links too, as the agents also write it.
    by_id = write_session(
        tmp_path / "by-id.jsonl", [], {**HEADER, "id": "0199eeee", "parentSession": three.id}
    )
    found = catalog(tmp_path)
    assert found.parent(found.at(by_id)) == found.at(third)  # type: ignore[arg-type]


def test_the_exchange_at_the_leaf_marks_a_session_handed_off(tmp_path: Path) -> None:
    """Even when the new session is gone (elsewhere with --out-dir, or lost to a kill), the
    exchange recorded at the leaf says that the session was handed off."""
    source = tmp_path / "s.jsonl"
    shutil.copyfile(EXAMPLES / "-home-dev-projects-weather-cli" / WEATHER, source)
    handoff(source, Options(model="extractive", out_dir=tmp_path / "elsewhere"))
    found = catalog(tmp_path)
    summary = found.at(source)
    assert summary is not None and summary.ends_with_handoff and found.handed_off(summary)
    continue_session(source, "one more thing")
    assert not catalog(tmp_path).at(source).ends_with_handoff  # type: ignore[union-attr]


# --- lineage that loops, and long chains ------------------------------------------------------


def handed_off_to(folder: Path, name: str, parent: str, minute: int) -> Path:
    """A session that starts from a handoff document, then asks for "request of NAME"; its
    header names ``parent``; it was made ``minute`` minutes into the day."""
    entries = Entries()
    entries.custom_message(HANDOFF_TYPE, "# Handoff\n\nthe document")
    entries.user(f"request of {name}")
    stamp = (datetime(2026, 1, 1, tzinfo=timezone.utc) + timedelta(minutes=minute)).isoformat()
    header = {**HEADER, "id": name, "timestamp": stamp, "parentSession": parent}
    return write_session(folder / f"{name}.jsonl", entries.items, header)


LOOPS = {"self": ["A"], "pair": ["A", "B"], "three": ["A", "B", "C"]}


def make_loop(folder: Path, shape: str, by: str) -> list[str]:
    """The sessions of ``shape``, oldest first, each naming the one before it (the first names
    the last) by path or by id, and a session T handed off from the newest; their ids, T's last."""
    names = LOOPS[shape]
    named = {n: str(folder / f"{n}.jsonl") if by == "path" else n for n in names}
    for index, name in enumerate(names):
        handed_off_to(folder, name, named[names[index - 1]], index)
    handed_off_to(folder, "T", named[names[-1]], len(names))
    return [*names, "T"]


def run_here(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    code = run([str(arg) for arg in args])
    out, err = capsys.readouterr()
    return code, out, err


def loop_warning_of(names: list[str]) -> str:
    """The one line on stderr for the loop of ``names`` (oldest first): from the oldest, each
    names the next as its parent."""
    if len(names) == 1:
        return f"warning: session {names[0]} names itself as its parent; taken as a root\n"
    up = [names[0], *reversed(names[1:]), names[0]]
    return (
        f"warning: sessions name each other as parents in a loop: {' → '.join(up)}; "
        f"{names[0]}, the oldest, is taken as its root\n"
    )


@pytest.mark.parametrize("by", ["path", "id"])
@pytest.mark.parametrize("shape", list(LOOPS))
def test_a_loop_of_parents_is_cut_at_its_oldest_session(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], shape: str, by: str
) -> None:
    """Two sessions naming each other, one naming itself, three in a ring: each is listed once,
    titles continue from the oldest, generations count from it, and the loop is reported once
    by every command, however many of its sessions are shown."""
    folder = tmp_path / "sessions"
    ids = make_loop(folder, shape, by)
    loop = ids[:-1]
    warning = loop_warning_of(loop)
    generations = {name: index for index, name in enumerate(ids)}
    titles = {name: "↳ request of A" for name in ids} | {"A": "request of A"}

    code, out, err = run_here(capsys, "list", "--json")
    assert (code, err) == (0, warning)
    rows = {row["id"]: row for row in orjson.loads(out)}
    assert {name: row["generation"] for name, row in rows.items()} == generations
    assert {name: row["title"] for name, row in rows.items()} == titles
    assert rows["A"]["parent"] == {
        "id": loop[-1],
        "path": str(folder / f"{loop[-1]}.jsonl"),
        "subagent": False,
    }

    code, out, err = run_here(capsys, "list", folder)
    assert (code, err) == (0, warning)
    assert sorted(row.split()[0] for row in out.splitlines()) == sorted(ids)

    code, out, err = run_here(capsys, "list", "--tree")
    assert (code, err) == (0, warning)
    drawn = out.splitlines()
    assert drawn[0].startswith("⟲ A  ") and f"← {loop[-1]}" in drawn[0]  # the root, marked
    assert [row.split()[1] for row in drawn[1:]] == ids[1:]  # a chain: one column
    assert all(row.startswith("⇢ ") for row in drawn[1:])

    parents = dict(zip(ids, [loop[-1], *ids], strict=False))
    for name in ids:
        code, out, err = run_here(capsys, "show", folder / f"{name}.jsonl")
        assert (code, err) == (0, warning)  # T too: its lineage runs into the loop
        header = dict(row.split(maxsplit=1) for row in out.splitlines()[:7])
        assert header["title"] == titles[name]
        parent = parents[name]
        assert header["parent"] == f"{parent} ({folder / f'{parent}.jsonl'})"
        below = [n for n in ids if parents[n] == name and n != name]  # none is its own child
        assert header["children"] == (", ".join(f"{n} (handoff)" for n in below) or "(none)")


def test_a_loop_is_reported_only_where_its_sessions_are_shown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "sessions"
    make_loop(folder, "pair", "path")
    write_session(folder / "elsewhere.jsonl", [], {**HEADER, "id": "Z", "cwd": str(tmp_path)})
    code, out, err = run_here(capsys, "list")
    assert (code, err) == (0, loop_warning_of(["A", "B"])) and len(out.splitlines()) == 4
    code, out, err = run_here(capsys, "list", "--cwd", tmp_path)
    assert (code, err) == (0, "") and out.split()[0] == "Z"
    code, _, err = run_here(capsys, "show", folder / "elsewhere.jsonl")
    assert (code, err) == (0, "")


def test_a_loop_id_cannot_drive_the_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "sessions"
    write_session(
        folder / "a.jsonl", [], {**HEADER, "id": "A\x1b[2J\nB", "parentSession": "A\x1b[2J\nB"}
    )
    code, _, err = run_here(capsys, "list")
    assert code == 0
    assert err == "warning: session A␛[2J␊B names itself as its parent; taken as a root\n"


@pytest.mark.parametrize("length", quick_and_stress(1_000, 10_000))
def test_a_long_chain_lists_draws_and_shows_in_linear_time(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, length: int
) -> None:
    """Generations and continued titles are worked out once a session, not once an ancestor:
    parents are looked up a few times a session, however long the chain."""
    folder = tmp_path / "sessions"
    names = [f"S{index:05d}" for index in range(length)]
    write_session(folder / "S00000.jsonl", [], {**HEADER, "id": names[0], "title": "Root task"})
    for index, name in enumerate(names[1:], 1):
        handed_off_to(folder, name, str(folder / f"{names[index - 1]}.jsonl"), index)
    calls: list[str] = []

    def counted(name: str) -> Callable[..., Any]:
        method = getattr(Catalog, name)

        def call(*args: Any) -> Any:
            calls.append(name)
            return method(*args)

        return call

    for name in ("parent", "tree_parent"):  # the lookups a walk up the chain makes
        if hasattr(Catalog, name):
            monkeypatch.setattr(Catalog, name, counted(name))
    code, out, err = run_here(capsys, "list", "--json")
    assert (code, err) == (0, "")
    rows = orjson.loads(out)
    assert [row["generation"] for row in rows] == list(reversed(range(length)))
    assert {row["title"] for row in rows[:-1]} == {"↳ Root task"}
    code, out, err = run_here(capsys, "list")
    assert (code, err, len(out.splitlines())) == (0, "", length)
    code, out, err = run_here(capsys, "list", "--tree")
    drawn = out.splitlines()
    assert (code, err, len(drawn)) == (0, "", length)
    assert drawn[-1].startswith(f"⇢ {names[-1]}  ")  # one column, not thousands of indents
    code, out, err = run_here(capsys, "show", folder / f"{names[-1]}.jsonl")
    assert (code, err) == (0, "") and "title    ↳ Root task" in out.splitlines()
    assert len(calls) <= 4 * 5 * length  # four commands; walking each chain anew: length² / 2 each


@pytest.mark.parametrize("kind", [["model_change"], {"a": 1}, 3, None])
def test_an_entry_whose_type_is_not_a_string_is_listed_and_shown(
    tmp_path: Path, capsys: Any, kind: Any
) -> None:
    """A first entry whose ``type`` is a list, an object or a number (the fuzzer's find): the
    session is listed and shown, never a traceback."""
    entry = {"type": kind, "id": "e1", "parentId": None, "timestamp": HEADER["timestamp"]}
    message = {"type": "message", "id": "e2", "parentId": "e1", "timestamp": HEADER["timestamp"]}
    message["message"] = {"role": "user", "content": "hello", "timestamp": 1}
    path = write_session(tmp_path / "s.jsonl", [entry, message])
    assert [s.path for s in list_sessions(tmp_path)[0]] == [path]
    assert run(["list", str(tmp_path), "--json"]) == 0
    assert run(["show", str(path)]) == 0
    assert "hello" in capsys.readouterr().out


# The cache of what lies in the whole of each file (``sessions/listcache.py``): a pure
# accelerator, so every listing below is compared with one made without it.

HOUR_AGO_NS = (int(datetime.now(timezone.utc).timestamp()) - 3600) * 10**9


def cached_folder(root: Path, sessions: int = 3, turns: int = 40) -> list[Path]:
    """Sessions big enough that their middles lie outside the head and the tail that are
    always read, named in their middle, and quiet (changed an hour ago)."""
    paths = []
    for index in range(sessions):
        chain = Entries()
        chain.user(f"Task {index}")
        for turn in range(turns):
            if turn == turns // 2:
                chain.add("session_info", name=f"Name {index} in the middle")
            chain.assistant("x" * 4000)
        header = {**HEADER, "id": f"0199{index:04d}-0000-7000-8000-000000000000"}
        path = write_session(root / f"--p{index}--" / f"{index}.jsonl", chain.items, header)
        os.utime(path, ns=(HOUR_AGO_NS, HOUR_AGO_NS))
        paths.append(path)
    return paths


def listings(root: Path, cache: Path) -> list[str]:
    """``list`` as text, ``--json`` and ``--tree``, each run once with ``cache``."""
    shown = []
    for flags in ([], ["--json"], ["--tree"]):
        result = run_cli("list", root, *flags, "--cache-dir", cache)
        assert result.code == 0 and result.stderr == "", result.stderr
        shown.append(result.stdout)
    return shown


def uncached(root: Path, fresh: Path) -> list[str]:
    """The listings as a first run makes them, with an empty cache folder."""
    shutil.rmtree(fresh, ignore_errors=True)
    return listings(root, fresh)


def _append_entry(path: Path) -> None:
    with path.open("ab") as file:
        file.write(line({"type": "message", "id": "f1", "parentId": None, "message": {}}))


def _append_name(path: Path) -> None:
    with path.open("ab") as file:
        file.write(line({"type": "session_info", "id": "f2", "parentId": None, "name": "Late"}))


def _append_in_two_writes(path: Path) -> None:
    """An append seen half written by one list and whole by the next."""
    whole = line({"type": "session_info", "id": "f3", "parentId": None, "name": "Halves"})
    with path.open("ab") as file:
        file.write(whole[:30])
    run_cli("list", path.parent, "--cache-dir", path.parent.parent.parent / "cache")
    with path.open("ab") as file:
        file.write(whole[30:])


def _rewrite_same_size(path: Path) -> None:
    """The name in the middle changed in place, the size and mtime as they were: only the
    ctime tells."""
    data = path.read_bytes()
    path.write_bytes(data.replace(b"in the middle", b"IN THE MIDDLE"))
    os.utime(path, ns=(HOUR_AGO_NS, HOUR_AGO_NS))


def _truncate(path: Path) -> None:
    """Cut back to before the name: the name and every later line are gone."""
    data = path.read_bytes()
    with path.open("r+b") as file:
        file.truncate(data.rindex(b"\n", 0, data.index(b'"session_info"')) + 1)


def _replace_whole(path: Path) -> None:
    """Rewritten to a new file (a new inode) that is longer, its old bytes changed."""
    data = path.read_bytes().replace(b"in the middle", b"renamed, now") + b"\n"
    replacement = path.with_suffix(".new")
    replacement.write_bytes(data)
    replacement.replace(path)


@pytest.mark.parametrize(
    "change",
    [
        _append_entry,
        _append_name,
        _append_in_two_writes,
        _rewrite_same_size,
        _truncate,
        _replace_whole,
    ],
)
def test_list_with_the_cache_is_list_without_it_after_any_change(
    tmp_path: Path, change: Callable[[Path], None]
) -> None:
    root, cache = tmp_path / "s", tmp_path / "cache"
    paths = cached_folder(root)
    before = listings(root, cache)
    assert before == uncached(root, tmp_path / "fresh")
    assert (cache / "list.json").exists()
    assert "Name 1 in the middle" in before[0]
    change(paths[1])
    after = listings(root, cache)
    assert after == uncached(root, tmp_path / "fresh")
    assert after != before


def test_a_warm_list_reads_heads_and_tails_not_whole_files(tmp_path: Path) -> None:
    root, cache = tmp_path / "s", tmp_path / "cache"
    cached_folder(root, sessions=4, turns=400)  # about 1.6 MB each

    start = bytes_read()
    cold = run_cli("list", root, "--json", "--cache-dir", cache)
    middle = bytes_read()
    warm = run_cli("list", root, "--json", "--cache-dir", cache)
    end = bytes_read()
    assert cold.stdout == warm.stdout and "Name 3 in the middle" in warm.stdout
    assert middle - start > 4 * 1_500_000
    assert end - middle < 4 * 200_000  # a head and a tail of 64 kB each, and the cache


@pytest.mark.parametrize(
    "content", [b"{not json", b"[]", b'{"format": "0:old", "sessions": {}}', b"\xff" * 100]
)
def test_a_corrupt_or_foreign_cache_is_rebuilt(tmp_path: Path, content: bytes) -> None:
    root, cache = tmp_path / "s", tmp_path / "cache"
    cached_folder(root)
    cache.mkdir()
    (cache / "list.json").write_bytes(content)
    assert listings(root, cache) == uncached(root, tmp_path / "fresh")
    rebuilt = orjson.loads((cache / "list.json").read_bytes())
    assert len(rebuilt["sessions"]) == 3
    assert (cache / "list.json").stat().st_mode & 0o777 == 0o600


def test_a_cache_entry_of_the_wrong_shape_is_not_trusted(tmp_path: Path) -> None:
    root, cache = tmp_path / "s", tmp_path / "cache"
    cached_folder(root)
    listings(root, cache)
    data = orjson.loads((cache / "list.json").read_bytes())
    for entry in data["sessions"].values():
        entry[7] = "many"  # the line count
    (cache / "list.json").write_bytes(orjson.dumps(data))
    assert listings(root, cache) == uncached(root, tmp_path / "fresh")


def test_an_unwritable_cache_folder_changes_nothing(tmp_path: Path) -> None:
    root = tmp_path / "s"
    cached_folder(root)
    (tmp_path / "a-file").write_text("")
    assert listings(root, tmp_path / "a-file" / "cache") == uncached(root, tmp_path / "fresh")
    assert (tmp_path / "fresh" / "list.json").exists()


def test_the_cache_is_in_the_users_cache_folder(tmp_path: Path) -> None:
    root = tmp_path / "s"
    cached_folder(root)
    assert run_cli("list", root, env={"XDG_CACHE_HOME": str(tmp_path / "xdg")}).code == 0
    assert (tmp_path / "xdg" / "handoff_cli" / "list.json").exists()
    assert run_cli("list", root, env={"HANDOFF_CACHE_DIR": str(tmp_path / "named")}).code == 0
    assert (tmp_path / "named" / "list.json").exists()


def test_two_lists_at_once_share_one_cache(tmp_path: Path) -> None:
    """In processes of their own: both write the cache as the other reads it."""
    root, cache = tmp_path / "s", tmp_path / "cache"
    cached_folder(root, sessions=60, turns=10)
    expected = uncached(root, tmp_path / "fresh")[1]
    command = [sys.executable, "-m", "handoff_cli", "list", str(root), "--json"]
    for _ in range(3):
        shutil.rmtree(cache, ignore_errors=True)
        runs = [
            subprocess.Popen([*command, "--cache-dir", str(cache)], stdout=subprocess.PIPE)
            for _ in range(2)
        ]
        outputs = [run.communicate(timeout=60)[0].decode() for run in runs]
        assert [run.returncode for run in runs] == [0, 0]
        assert outputs == [expected, expected]
        assert sorted(p.name for p in cache.iterdir()) == ["list.json"]
        assert len(orjson.loads((cache / "list.json").read_bytes())["sessions"]) == 60


def test_a_name_with_no_json_spelling_is_listed_and_left_out_of_the_cache(tmp_path: Path) -> None:
    root, cache = tmp_path / "s", tmp_path / "cache"
    paths = cached_folder(root)
    with paths[0].open("ab") as file:
        file.write(b'{"type":"session_info","id":"f4","parentId":null,"name":"lone \\ud800"}\n')
    first = listings(root, cache)
    assert first == listings(root, cache) == uncached(root, tmp_path / "fresh")
    assert len(orjson.loads((cache / "list.json").read_bytes())["sessions"]) == 2


def test_each_id_has_its_shortest_unique_prefix() -> None:
    ids = [
        "01a2308c-1b2e-7000-8000-000000000001",
        "01a2308c-1b3f-7000-8000-000000000002",
        "01a2308c-9c00-7000-8000-000000000003",
        "01a2309f-0000-7000-8000-000000000004",
        "01a23090-0000-7000-8000-000000000005",
        "01a23090-0000-7000-8000-000000000005",  # the same session twice: one id
        "short",
        "short-and-longer",
    ]
    assert unique_prefixes(ids) == {
        "01a2308c-1b2e-7000-8000-000000000001": "01a2308c-1b2",
        "01a2308c-1b3f-7000-8000-000000000002": "01a2308c-1b3",
        "01a2308c-9c00-7000-8000-000000000003": "01a2308c-9",  # past the dash, never at it
        "01a2309f-0000-7000-8000-000000000004": "01a2309f",  # eight at least
        "01a23090-0000-7000-8000-000000000005": "01a23090",
        "short": "short",  # another id starts with it: given whole
        "short-and-longer": "short-an",
    }


# --- Claude Code's sessions, listed from their heads and tails too ----------------------------


def bytes_read() -> int:
    """The bytes this process has read so far, from any file."""
    with open("/proc/self/io") as io_counts:
        return int(next(f for f in io_counts if f.startswith("rchar")).split()[1])


def claude_folder(root: Path, sessions: int = 3, megabytes: float = 1.5) -> list[Path]:
    """Claude Code sessions of ``megabytes`` each (``test_limits.CLAUDE_SHAPE``), quiet."""
    paths = []
    for index in range(sessions):
        folder = root / f"-home-u-p{index}"
        folder.mkdir(parents=True)
        path = claude_session(folder / f"c8e5e286-ae88-42dd-9175-{index:012d}.jsonl", megabytes)
        os.utime(path, ns=(HOUR_AGO_NS, HOUR_AGO_NS))
        paths.append(path)
    return paths


def _hand_off_extractively(path: Path) -> None:
    """Handed off: the exchange recorded in it, a new session beside it."""
    handoff(path, Options(model="extractive"))


def _append_claude_prompt(path: Path) -> None:
    last = orjson.loads(path.read_bytes().rsplit(b"\n", 2)[-2])
    record = {**last, "parentUuid": last["uuid"], "type": "user", "uuid": "late-1"}
    with path.open("ab") as file:
        file.write(line({**record, "message": {"role": "user", "content": "one more"}}))


def _retitle_claude_in_place(path: Path) -> None:
    """The first prompt changed in place, the size and mtime as they were."""
    data = path.read_bytes()
    path.write_bytes(data.replace(b"step 0: fix the parser", b"step 0: FIX THE PARSER", 1))
    os.utime(path, ns=(HOUR_AGO_NS, HOUR_AGO_NS))


def _truncate_in_half(path: Path) -> None:
    data = path.read_bytes()
    with path.open("r+b") as file:
        file.truncate(data.index(b"\n", len(data) // 2) + 1)


@pytest.mark.parametrize(
    "change",
    [_hand_off_extractively, _append_claude_prompt, _retitle_claude_in_place, _truncate_in_half],
)
def test_a_warm_list_of_claude_code_sessions_reads_heads_and_tails(
    tmp_path: Path, change: Callable[[Path], None]
) -> None:
    """Listed as the others are: the cache's line count, the head up to the first request,
    the tail for our exchange; and after any change, as a first run lists them."""
    root, cache = tmp_path / "projects", tmp_path / "cache"
    paths = claude_folder(root)

    cold = listings(root, cache)
    start = bytes_read()
    warm = listings(root, cache)
    assert bytes_read() - start < 3 * 3 * 200_000  # three lists, a head and a tail a file
    assert warm == cold == uncached(root, tmp_path / "fresh")
    change(paths[1])
    after = listings(root, cache)
    assert after == uncached(root, tmp_path / "fresh") and after != cold


# --- Codex's rollouts, listed from their heads and tails too ----------------------------------

CODEX_TOOLS = (
    FIXTURES
    / "codex/made/sessions/2026/12/01"
    / "rollout-2026-12-01T13-43-14-01a231d8-6485-70d0-866d-03e1c0f10e57.jsonl"
)


def codex_rollout(path: Path, session_id: str, megabytes: float) -> Path:
    """A rollout of about ``megabytes`` MB: the ``session_meta`` Codex wrote for ``made/tools``
    (its base instructions included), then turns of a prompt, a call and its long output."""
    meta = orjson.loads(CODEX_TOOLS.read_bytes().split(b"\n", 1)[0])
    meta["payload"] |= {"id": session_id, "session_id": session_id}
    lines = [meta]
    turn = 0
    while sum(len(orjson.dumps(v)) for v in lines) < megabytes * 1_000_000:
        call = f"call_{turn}"
        for payload in (
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": f"step {turn}: fix the parser"}],
            },
            {"type": "function_call", "name": "exec_command", "arguments": "{}", "call_id": call},
            {"type": "function_call_output", "call_id": call, "output": "x" * 20_000},
        ):
            lines.append({"type": "response_item", "payload": payload})
        turn += 1
    with open(path, "wb") as out:
        for ordinal, value in enumerate(lines):
            out.write(line({"timestamp": "2026-12-01T13:43:14.000Z", "ordinal": ordinal} | value))
    return path


def codex_folder(
    root: Path, sessions: int = 3, megabytes: float = 1.5, day: str = "2026/12/01"
) -> list[Path]:
    """Rollouts of ``megabytes`` each in the date folder ``day`` of ``root``, quiet."""
    folder = root / day
    folder.mkdir(parents=True)
    paths = []
    for index in range(sessions):
        session_id = f"01a231d8-0000-7000-8000-{index:012d}"
        name = f"rollout-2026-12-01T13-43-14-{session_id}.jsonl"
        path = codex_rollout(folder / name, session_id, megabytes)
        os.utime(path, ns=(HOUR_AGO_NS, HOUR_AGO_NS))
        paths.append(path)
    return paths


def _append_codex_prompt(path: Path) -> None:
    last = orjson.loads(path.read_bytes().rsplit(b"\n", 2)[-2])["ordinal"]
    prompt = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "?"}]}
    with path.open("ab") as file:
        file.write(
            line(
                {"timestamp": "", "ordinal": last + 1, "type": "response_item"}
                | {"payload": prompt}
            )
        )


def _retitle_codex_in_place(path: Path) -> None:
    """The first prompt changed in place, the size and mtime as they were."""
    data = path.read_bytes()
    path.write_bytes(data.replace(b"step 0: fix the parser", b"step 0: FIX THE PARSER", 1))
    os.utime(path, ns=(HOUR_AGO_NS, HOUR_AGO_NS))


@pytest.mark.parametrize(
    "change",
    [_hand_off_extractively, _append_codex_prompt, _retitle_codex_in_place, _truncate_in_half],
)
def test_a_warm_list_of_codex_rollouts_reads_heads_and_tails(
    tmp_path: Path, change: Callable[[Path], None]
) -> None:
    """Listed as the others are: the cache's line count, the head up to the first request
    (past a ``session_meta`` of Codex's base instructions), the tail for our exchange; and
    after any change, as a first run lists them."""
    root, cache = tmp_path / "sessions", tmp_path / "cache"
    paths = codex_folder(root)

    def bytes_read() -> int:
        with open("/proc/self/io") as io_counts:
            return int(next(f for f in io_counts if f.startswith("rchar")).split()[1])

    cold = listings(root, cache)
    start = bytes_read()
    warm = listings(root, cache)
    assert bytes_read() - start < 3 * 3 * 200_000  # three lists, a head and a tail a file
    assert warm == cold == uncached(root, tmp_path / "fresh")
    assert "step 0: fix the parser" in warm[0]
    change(paths[1])
    after = listings(root, cache)
    assert after == uncached(root, tmp_path / "fresh") and after != cold


def test_the_cache_forgets_the_files_of_a_folder_that_is_gone(tmp_path: Path) -> None:
    """A temporary folder's entries are not kept for ever: once the folder is gone, the next
    listing that writes the cache leaves them out (and one entry of the wrong shape is one
    file read again, not the whole cache passed over)."""
    cache = tmp_path / "cache"
    cached_folder(tmp_path / "gone", sessions=2)
    listings(tmp_path / "gone", cache)
    entries = orjson.loads((cache / listcache.FILE_NAME).read_bytes())["sessions"]
    assert len(entries) == 2
    shutil.rmtree(tmp_path / "gone")
    kept = cached_folder(tmp_path / "kept", sessions=1)
    listings(tmp_path / "kept", cache)
    entries = orjson.loads((cache / listcache.FILE_NAME).read_bytes())["sessions"]
    assert list(entries) == [str(kept[0].resolve())]
    spoilt = {"format": listcache.FORMAT, "sessions": {**entries, "/x/y.jsonl": ["not", 1]}}
    (cache / listcache.FILE_NAME).write_bytes(orjson.dumps(spoilt))
    loaded = listcache.load(cache)
    assert loaded.get("/x/y.jsonl") is None and loaded.get(str(kept[0].resolve())) is not None
