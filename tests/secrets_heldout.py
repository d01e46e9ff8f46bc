"""The held-out set of secrets and ordinary values in ``tests/fixtures/secrets/heldout``, and
how a masker scores on it.

The set is for measuring the masker, never for tuning it: nobody who changes the masker's rules
reads these files (``tests/fixtures/secrets/heldout/README.md``). ``bench/secrets_heldout.py``
prints the scores; no test asserts them. Only the standard library and the corpus's reader here.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from .secrets_corpus import CORPUS, MARK, Positive, _records

HELDOUT = CORPUS / "heldout"

CLASSES = {
    "place-assignment": "a: assigned in a config dialect or in code",
    "place-name": "a: under an unusual name",
    "place-header": "a: in a header",
    "place-flag": "a: after a tool's flag",
    "place-connstr": "a: in a connection string",
    "place-url": "a: in a URL (path, query, fragment, user-info)",
    "prefix": "b: known prefix of a provider",
    "private-key": "c: private key, not PEM-armored",
    "entropy": "d: random token, no name, no prefix",
    "context": "e: tricky context",
}
"""The classes of the secrets (the part of a record's kind before the dot), each with the group
of the set it belongs to."""


def class_of(positive: Positive) -> str:
    return positive.kind.partition(".")[0]


@dataclass(frozen=True)
class Ordinary:
    note: str
    text: str
    values: tuple[tuple[int, int], ...]
    """Where each value is in ``text``: ``(start, end)``."""
    line: int

    def value(self, index: int) -> str:
        start, end = self.values[index]
        return self.text[start:end]


def _texts(path: Path) -> Iterator[tuple[str, str, int]]:
    """The records of ``path`` as the corpus's reader gives them, without the comment lines
    (``% ...``) that sit between records and that it keeps at the end of the one before."""
    for header, text, line in _records(path):
        lines = text.split("\n")
        while lines and (lines[-1].startswith("% ") or lines[-1] in ("%", "")):
            lines.pop()
        yield header, "\n".join(lines), line


def secrets(folder: Path = HELDOUT) -> list[Positive]:
    """The records of ``positives.txt``: each with its kind, its text, its secrets."""
    return [
        Positive(kind, MARK.sub(r"\1", text), tuple(MARK.findall(text)), line)
        for kind, text, line in _texts(folder / "positives.txt")
    ]


def ordinary(folder: Path = HELDOUT) -> list[Ordinary]:
    """The records of ``ordinary.txt``: each with its text and where its values are in it."""
    found = []
    for note, marked, line in _texts(folder / "ordinary.txt"):
        text, spans, last = "", [], 0
        for match in MARK.finditer(marked):
            text += marked[last : match.start()]
            spans.append((len(text), len(text) + len(match.group(1))))
            text += match.group(1)
            last = match.end()
        text += marked[last:]
        found.append(Ordinary(note, text, tuple(spans), line))
    return found


def remnant(secret: str, out: str) -> bool:
    """Whether a piece of ``secret`` of half its length or more (8 characters at least) is still
    in ``out``: a secret masked in part."""
    size = max(8, -(-len(secret) // 2))
    if len(secret) < size:
        return False
    return any(secret[i : i + size] in out for i in range(len(secret) - size + 1))


def changed_values(record: Ordinary, out: str) -> list[int]:
    """The indices of the values of ``record`` that ``out`` (its text masked) did not keep as
    they were: those that an edit of the text overlaps."""
    edits = [
        (i1, i2)
        for tag, i1, i2, _, _ in difflib.SequenceMatcher(
            None, record.text, out, autojunk=False
        ).get_opcodes()
        if tag != "equal"
    ]
    return [
        index
        for index, (start, end) in enumerate(record.values)
        if any(i1 < end and (i2 > start if i2 > i1 else i1 > start) for i1, i2 in edits)
    ]


@dataclass
class Score:
    secrets: dict[str, int] = field(default_factory=dict)
    """How many secrets each class has."""
    missed: list[tuple[Positive, str]] = field(default_factory=list)
    """Secrets still whole in the output, with their record."""
    partial: list[tuple[Positive, str]] = field(default_factory=list)
    """Secrets not whole in the output, but with half of them or more still there."""
    values: int = 0
    records: int = 0
    changed: list[tuple[Ordinary, int, str]] = field(default_factory=list)
    """Ordinary values that came out changed: the record, the value's index, the output."""
    records_changed: int = 0

    def recall(self, name: str | None = None) -> float:
        total = sum(n for c, n in self.secrets.items() if name in (None, c))
        missed = sum(1 for p, _ in self.missed if name in (None, class_of(p)))
        return 1 - missed / total if total else 1.0

    def strict_recall(self, name: str | None = None) -> float:
        """Recall counting a secret masked in part as missed."""
        total = sum(n for c, n in self.secrets.items() if name in (None, c))
        lost = [p for p, _ in self.missed + self.partial if name in (None, class_of(p))]
        return 1 - len(lost) / total if total else 1.0


def score(mask: Callable[[str], str]) -> Score:
    """``mask`` takes a text and returns it masked (a fresh masker for each text)."""
    result = Score()
    for positive in secrets():
        name = class_of(positive)
        out = mask(positive.text)
        for secret in positive.secrets:
            result.secrets[name] = result.secrets.get(name, 0) + 1
            if secret in out:
                result.missed.append((positive, secret))
            elif remnant(secret, out):
                result.partial.append((positive, secret))
    for record in ordinary():
        out = mask(record.text)
        result.records += 1
        result.values += len(record.values)
        if out != record.text:
            result.records_changed += 1
            result.changed += [(record, i, out) for i in changed_values(record, out)]
    return result
