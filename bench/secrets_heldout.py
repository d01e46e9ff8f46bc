"""How the masker scores on the held-out set (tests/fixtures/secrets/heldout), which nobody
tunes it on.

    .venv/bin/python bench/secrets_heldout.py            # the scores
    .venv/bin/python bench/secrets_heldout.py --misses   # and every secret that got through

First each record's text alone through ``Redactor().text``: recall by class and overall (a
secret counts as caught when it is no longer whole in the output; "strict" also counts as missed
one masked in part, with half of it or more left), and the false positives on the ordinary
values (values changed / values). Then every place a session holds text, handed off for real as
``tests/test_secret_places.py`` does: the program run in this process against the loopback model
server (``tests/fakellm.py``), one session a place holding all the set's texts. A secret leaks
from a place when it is in the requests the server received, in the new session, or in what was
appended to the old one. The last place is the model's answer: the server answers with a
document that quotes every text, and the new session and the old one's appended part must hold
none of its secrets. Printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent)]

from handoff_cli.document import SECTIONS  # noqa: E402
from handoff_cli.handoff.redact import Redactor  # noqa: E402
from tests.conftest import Entries, litellm, run_cli, write_session  # noqa: E402
from tests.fakellm import FakeLLMServer, Reply  # noqa: E402
from tests.secrets_corpus import Positive  # noqa: E402
from tests.secrets_heldout import (  # noqa: E402
    CLASSES,
    Score,
    class_of,
    score,
    secrets,
)
from tests.test_secret_places import PLACES as SESSION_PLACES  # noqa: E402

MODEL = "openai/gpt-4o"
PLACES = [*SESSION_PLACES, "compaction summary", "file paths", "the focus", "model's answer"]
"""The places of the end-to-end test, and those only this set's texts can fill."""
ANSWER_SIZE = 6000
"""The most characters of the set's texts one answer quotes."""
SHAPED = ("prefix", "entropy", "private-key")
"""The classes whose secrets are known by their shape alone, with no name around them: those
a file's path can carry, where they have the shape of a file's name (not plain hex, which is
what a digest looks like too)."""


def mask(text: str) -> str:
    return Redactor().text(text)


# --- the texts alone ----------------------------------------------------------------------------


def print_text_scores(result: Score, misses: bool) -> None:
    total = sum(result.secrets.values())
    records = secrets()
    print(
        f"Held-out set: {total} secrets in {len(records)} records of"
        f" {len({p.kind for p in records})} kinds, {len(result.secrets)} classes;"
        f" {result.values} ordinary values in {result.records} records"
    )
    print("\nRecall, each record's text alone (Redactor().text)")
    print(f"  {'class':<18}{'secrets':>8}{'missed':>8}{'partial':>9}{'recall':>9}{'strict':>9}")
    for name in CLASSES:
        if name not in result.secrets:
            continue
        missed = sum(1 for p, _ in result.missed if class_of(p) == name)
        partial = sum(1 for p, _ in result.partial if class_of(p) == name)
        print(
            f"  {name:<18}{result.secrets[name]:>8}{missed:>8}{partial:>9}"
            f"{result.recall(name):>9.1%}{result.strict_recall(name):>9.1%}"
            f"   {CLASSES[name]}"
        )
    print(
        f"  {'overall':<18}{total:>8}{len(result.missed):>8}{len(result.partial):>9}"
        f"{result.recall():>9.1%}{result.strict_recall():>9.1%}"
    )
    share = len(result.changed) / result.values
    print(
        f"\nFalse positives on ordinary.txt: {len(result.changed)}/{result.values} values"
        f" changed ({share:.1%}); {result.records_changed}/{result.records} records changed"
    )
    if misses:
        print("\nSecrets missed (line of the record, kind, secret):")
        for positive, secret in result.missed:
            print(f"  {positive.line:>5}  {positive.kind:<45} {_short(secret)}")
        print("\nSecrets masked only in part:")
        for positive, secret in result.partial:
            print(f"  {positive.line:>5}  {positive.kind:<45} {_short(secret)}")
        print("\nOrdinary values changed (line of the record, note, value):")
        for record, index, _ in result.changed:
            print(f"  {record.line:>5}  {record.note[:45]:<45} {_short(record.value(index))}")


def _short(text: str, size: int = 70) -> str:
    text = text.replace("\n", "\\n")
    return text if len(text) <= size else text[: size - 3] + "..."


# --- every place of a session -------------------------------------------------------------------


@dataclass
class Place:
    name: str
    placed: dict[str, Positive] = field(default_factory=dict)
    """The secrets put in the place, each with its record."""
    leaked: list[str] = field(default_factory=list)
    redacted: int = 0
    seconds: float = 0.0
    error: str = ""


def _call(entries: Entries, name: str, arguments: dict[str, Any], result: str = "ok") -> None:
    call_id = f"c{len(entries.items)}"
    call = {"type": "toolCall", "id": call_id, "name": name, "arguments": arguments}
    entries.assistant(call, stop="toolUse")
    entries.result(call_id, result)


def _lines(records: list[Positive]) -> list[tuple[str, list[tuple[str, Positive]]]]:
    """Each line of the texts that holds a secret whole in its first 200 characters (what a
    label or a session's name keeps), with those secrets."""
    found = []
    for positive in records:
        for line in positive.text.split("\n"):
            short = line[:200]
            held = [(s, positive) for s in positive.secrets if s in short]
            if held:
                found.append((short, held))
    return found


def path_shaped(positive: Positive, secret: str) -> bool:
    return (
        class_of(positive) in SHAPED
        and len(secret) <= 100
        and re.fullmatch(r"[\w.-]+", secret) is not None
        and re.fullmatch(r"(0x)?[0-9a-fA-F]+", secret) is None
    )


def session_for(folder: Path, place: str, records: list[Positive]) -> tuple[Path, Place]:
    """A session with every text of ``records`` in ``place`` (none for the focus and the
    model's answer, which carry them themselves), and what was put there."""
    result = Place(place)
    entries = Entries()
    entries.user("start the work")
    entries.assistant("on it")
    everything = {s: p for p in records for s in p.secrets}
    if place in ("user text", "assistant text", "thinking", "tool result", "custom message"):
        for positive in records:
            if place == "user text":
                entries.user(positive.text)
            elif place == "assistant text":
                entries.assistant(positive.text)
            elif place == "thinking":
                entries.assistant({"type": "thinking", "thinking": positive.text}, "noted")
            elif place == "tool result":
                _call(entries, "bash", {"command": "cat notes"}, positive.text)
            else:
                entries.custom_message("note", positive.text)
        result.placed = everything
    elif place == "tool-call arguments":  # a record of JSON arguments is those arguments
        for positive in records:
            try:
                arguments = json.loads(positive.text)
            except ValueError:
                arguments = None
            if not isinstance(arguments, dict):
                arguments = {"command": positive.text}
            _call(entries, "bash", arguments)
        result.placed = everything
    elif place == "branch summary":
        for positive in records:
            entries.add("branch_summary", fromId="root", summary=positive.text)
        result.placed = everything
    elif place in ("label", "session name"):
        for line, held in _lines(records):
            if place == "label":
                entries.add("label", targetId=entries.leaf, label=line)
            else:
                entries.add("session_info", name=line)
            result.placed.update(held)
    elif place == "compaction summary":
        entries.add(
            "compaction",
            summary="\n\n".join(p.text for p in records),
            firstKeptEntryId=entries.leaf,
            tokensBefore=1000,
        )
        result.placed = everything
    elif place == "file paths":
        for positive in records:
            for secret in positive.secrets:
                if path_shaped(positive, secret):
                    _call(entries, "read", {"path": f"build/{secret}/out.txt"})
                    edit = {"path": f"src/{secret}.py", "oldText": "a", "newText": "b"}
                    _call(entries, "edit", edit)
                    result.placed[secret] = positive
    elif place in ("the focus", "model's answer"):
        result.placed = everything
    else:
        raise AssertionError(place)
    entries.user("go on")
    entries.assistant("done")
    return write_session(folder / "sessions" / "s.jsonl", entries.items), result


def document(records: list[Positive]) -> str:
    """An answer with every section a document needs, quoting every text under one of them."""
    quoted = "\n\n".join(f"```\n{p.text}\n```" for p in records)
    parts = {name: f"- {name.lower()}" for name in SECTIONS}
    parts[SECTIONS[-2]] += "\n- What the session held:\n\n" + quoted
    return "\n\n".join(f"## {name}\n{body}" for name, body in parts.items())


def _forms(secret: str) -> set[str]:
    """The secret as it is, and as JSON writes it inside a string."""
    return {secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1]}


def handoff_once(server: FakeLLMServer, folder: Path, place: str, records: list[Positive]) -> Place:
    """One handoff of a session with ``records`` in ``place``: what leaked from it."""
    path, result = session_for(folder, place, records)
    before = path.read_bytes()
    focus = "\n".join(p.text for p in records) if place == "the focus" else "the tests"
    answer = document(records) if place == "model's answer" else document([])
    server.script(Reply(answer))
    already = len(server.requests)
    start = time.perf_counter()
    done = run_cli(
        path,
        "--model",
        MODEL,
        "--api-key",
        "k",
        "--api-base",
        server.base_url,
        "--focus",
        focus,
        "--retries",
        "0",
        "-q",
        "--json",
        env={"HANDOFF_SESSIONS_DIR": str(folder / "sessions")},
    )
    result.seconds = time.perf_counter() - start
    if done.code != 0:
        result.error = f"exit {done.code}: {done.stderr.strip()[-300:]}"
        return result
    printed = done.json()
    result.redacted = int(printed.get("redacted", 0))
    sent = json.dumps([request.body for request in server.requests[already:]])
    new = Path(printed["path"]).read_text()
    recorded = path.read_bytes()[len(before) :].decode()
    result.leaked = [
        secret
        for secret in result.placed
        if any(form in text for form in _forms(secret) for text in (sent, new, recorded))
    ]
    return result


def batches(records: list[Positive], size: int) -> list[list[Positive]]:
    """``records`` in runs of at most ``size`` characters of text (one record at least)."""
    found: list[list[Positive]] = [[]]
    for positive in records:
        if found[-1] and sum(len(p.text) for p in found[-1]) + len(positive.text) > size:
            found.append([])
        found[-1].append(positive)
    return found


def run_place(server: FakeLLMServer, work: Path, place: str, records: list[Positive]) -> Place:
    folder = work / re.sub(r"\W+", "-", place)
    if place == "model's answer":
        # A document of the whole set would run past what the program reads of an answer
        # (four times --max-doc-tokens): the answers quote the texts a batch at a time.
        runs = batches(records, ANSWER_SIZE)
    elif place == "session name":
        # The latest name is the session's: one handoff for each line that holds a secret.
        runs = []
        for line, held in _lines(records):
            owner = held[0][1]  # a line is one record's
            runs.append([Positive(owner.kind, line, tuple(s for s, _ in held), owner.line)])
    else:
        return handoff_once(server, folder, place, records)
    result = Place(place)
    for number, run in enumerate(runs):
        one = handoff_once(server, folder / str(number), place, run)
        result.placed.update(one.placed)
        result.leaked += one.leaked
        result.redacted += one.redacted
        result.seconds += one.seconds
        result.error = result.error or one.error
    return result


def clean_environment(work: Path) -> None:
    """No key or setting of the developer's, and nothing written outside ``work`` (as
    ``tests/conftest.py`` arranges for each test)."""
    for name in list(os.environ):
        if name.endswith("_API_KEY") or name.startswith("HANDOFF_"):
            del os.environ[name]
    os.environ["HANDOFF_SESSIONS_DIR"] = str(work / "sessions")
    os.environ["NO_COLOR"] = "1"
    os.environ["XDG_CACHE_HOME"] = str(work / "cache")
    os.environ["XDG_CONFIG_HOME"] = str(work / "config")


def print_places(places: list[Place], misses: bool) -> None:
    print("\nRecall in every place of a session, handed off over HTTP to the loopback model")
    print(f"  {'place':<22}{'secrets':>8}{'leaked':>8}{'recall':>9}{'redacted':>10}{'seconds':>9}")
    for place in places:
        if place.error:
            print(f"  {place.name:<22}  not run: {place.error}")
            continue
        total = len(place.placed)
        recall = 1 - len(place.leaked) / total if total else 1.0
        print(
            f"  {place.name:<22}{total:>8}{len(place.leaked):>8}{recall:>9.1%}"
            f"{place.redacted:>10}{place.seconds:>9.1f}"
        )
    if misses:
        for place in places:
            if place.leaked:
                print(f"\nLeaked from {place.name} (line of the record, kind, secret):")
                for secret in place.leaked:
                    positive = place.placed[secret]
                    print(f"  {positive.line:>5}  {positive.kind:<45} {_short(secret)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--misses", action="store_true", help="list every secret that got through")
    parser.add_argument("--no-places", action="store_true", help="the texts alone, no handoffs")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    print_text_scores(score(mask), args.misses)
    if not args.no_places:
        records = secrets()
        with tempfile.TemporaryDirectory() as temporary, FakeLLMServer() as server:
            work = Path(temporary)
            clean_environment(work)
            litellm()  # imported once, before the first run (tests/conftest.py says why)
            places = [run_place(server, work, place, records) for place in PLACES]
        print_places(places, args.misses)
    print(f"\n({time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
