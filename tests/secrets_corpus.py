"""The corpus of secrets and traps in ``tests/fixtures/secrets``, and how a redactor scores on it.

Used by ``tests/test_redact.py`` and by ``bench/redactors.py``, which also scores other
redactors on it: only the standard library here, and the redactor's list of the blobs it
never reads.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "fixtures" / "secrets"
SESSIONS = (ROOT / "tests" / "fixtures", ROOT / "sessions")
MARK = re.compile("«([^»]*)»")


@dataclass(frozen=True)
class Positive:
    kind: str
    """The kind of placeholder expected."""
    text: str
    secrets: tuple[str, ...]
    line: int


def _records(path: Path) -> Iterator[tuple[str, str, int]]:
    """``(header, text, line)`` for each record: a line ``%% header``, then the text."""
    header, lines, line = None, list[str](), 0
    for number, raw in enumerate([*path.read_text().splitlines(), "%% end"], 1):
        if raw.startswith("%% "):
            if header is not None:
                yield header, "\n".join(lines).strip("\n"), line
            header, lines, line = raw[3:].strip(), [], number
        elif header is not None:
            lines.append(raw)


def positives() -> list[Positive]:
    return [
        Positive(kind, MARK.sub(r"\1", text), tuple(MARK.findall(text)), line)
        for kind, text, line in _records(CORPUS / "positives.txt")
    ]


def traps() -> list[str]:
    return [text for _, text, _ in _records(CORPUS / "negatives.txt")]


def session_strings() -> list[str]:
    """Every string in the session files, keys and values, as the redactor would see it: but
    a provider's opaque blobs, which it leaves as they are."""
    from handoff_cli.handoff.redact import OPAQUE

    found: list[str] = []

    def walk(value: object) -> None:
        if isinstance(value, str):
            found.append(value)
        elif isinstance(value, list):
            for item in value:
                walk(item)
        elif isinstance(value, dict):
            for key, item in value.items():
                found.append(key)
                if key not in OPAQUE:
                    walk(item)

    for folder in SESSIONS:
        for path in sorted(folder.rglob("*.jsonl")):
            if "real" in path.relative_to(folder).parts[:1]:
                continue  # the real sessions, read by their own tests
            for line in path.read_bytes().removeprefix(b"\xef\xbb\xbf").splitlines():
                try:
                    walk(json.loads(line))
                except ValueError:
                    continue  # the malformed lines of the edge fixtures
    return found


@dataclass
class Score:
    secrets: int = 0
    negatives: int = 0
    missed: list[tuple[Positive, str]] = field(default_factory=list)
    """Secrets still in the output, with their record."""
    changed: list[tuple[str, str]] = field(default_factory=list)
    """Negatives that came out changed: the input, the output."""
    kinds: set[str] = field(default_factory=set)

    @property
    def recall(self) -> float:
        return 1 - len(self.missed) / self.secrets

    def summary(self) -> str:
        return (
            f"recall {self.recall:.1%} ({self.secrets - len(self.missed)}/{self.secrets} secrets"
            f" of {len(self.kinds)} kinds), false positives {len(self.changed)}/{self.negatives}"
        )


def score(mask: Callable[[str], str]) -> Score:
    """``mask`` takes a text and returns it with its secrets masked (a fresh redactor each)."""
    result = Score()
    for positive in positives():
        out = mask(positive.text)
        result.kinds.add(positive.kind)
        for secret in positive.secrets:
            result.secrets += 1
            if secret in out:
                result.missed.append((positive, secret))
    for text in traps() + session_strings():
        result.negatives += 1
        out = mask(text)
        if out != text:
            result.changed.append((text, out))
    return result


DEV2 = CORPUS / "dev2"
DEV3 = CORPUS / "dev3"
DEV4 = CORPUS / "dev4"


@dataclass
class DevScore:
    """How a redactor does on a development set (``dev2`` to ``dev4``, each written by another
    hand without the masker in view): secrets left, and ordinary records changed."""

    secrets: int = 0
    missed: list[tuple[str, int, str]] = field(default_factory=list)
    """(class, line, secret) of each secret still in the output."""
    records: int = 0
    changed: list[int] = field(default_factory=list)
    """The lines of the ordinary records that came out changed."""

    @property
    def recall(self) -> float:
        return 1 - len(self.missed) / self.secrets


def dev_score(mask: Callable[[str], str], folder: Path = DEV2) -> DevScore:
    result = DevScore()
    for kind, text, line in _records(folder / "positives.txt"):
        out = mask(MARK.sub(r"\1", text))
        for secret in MARK.findall(text):
            result.secrets += 1
            if secret in out:
                result.missed.append((kind, line, secret))
    for _, text, line in _records(folder / "ordinary.txt"):
        result.records += 1
        if mask(text) != text:
            result.changed.append(line)
    return result
