"""What masking by place alone would cost: the held-out set's recall and ordinary values
changed when, on top of the masker, every value in a place where credentials sit is masked
whatever it looks like, and then every token of 12 or more mixed characters anywhere.

    .venv/bin/python bench/secrets_frontier.py

Aggregates only, like ``bench/secrets_heldout.py``: the set is never read for tuning. This is
the experiment behind the note that recall of 98% and at most 1% of ordinary values masked
cannot both be had by rules on text: the values that get through look like ordinary ones.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent.parent)]

from handoff_cli.handoff.redact import Redactor  # noqa: E402
from tests.secrets_heldout import score  # noqa: E402

MASKER = Redactor()

# After `name=` or `name:`, a one-letter flag, a long flag, a URL's user name, a header, a query.
PLACE = (
    r"""(?:[=:]\s*["']?|\s-[A-Za-z]\s*|\s--[a-z][a-z-]{1,30}[ =]["']?|//[^/\s:@]+:"""
    r"""|\s[\w-]+:\s|[?&#][\w.-]+=)(?P<v>[^\s"'`,;)\]}>&<]{%d,})"""
)
ANY_TOKEN = re.compile(r"[A-Za-z0-9+/_=.~-]{12,}")


def plain(value: str, strictness: int) -> bool:
    """A value every variant but the strictest leaves: a word, a number, a dotted name, a path."""
    if strictness >= 3:
        return False
    if value.isdigit() or re.fullmatch(r"[\w.-]*/[\w./-]*", value):
        return True
    if strictness >= 2:
        return False
    return bool(value.isalpha() and (value.islower() or value.isupper() or value.istitle())) or (
        re.fullmatch(r"[a-z]+(?:[-_.][a-z]+)*", value) is not None
    )


def by_place(shortest: int, strictness: int) -> Callable[[str], str]:
    rx = re.compile(PLACE % shortest)

    def masked(match: re.Match[str]) -> str:
        if plain(match.group("v"), strictness):
            return match.group(0)
        return match.group(0)[: match.start("v") - match.start()] + "[X]"

    return lambda text: rx.sub(masked, MASKER.text(text))


def everywhere(text: str) -> str:
    mixed = by_place(4, 3)(text)
    return ANY_TOKEN.sub(
        lambda m: (
            m.group(0)
            if m.group(0).isalnum() and (m.group(0).isalpha() or m.group(0).isdigit())
            else "[Y]"
        ),
        mixed,
    )


VARIANTS: list[tuple[str, Callable[[str], str]]] = [
    ("the masker", MASKER.text),
    ("+ every value of 6+ in a place, words and paths left", by_place(6, 0)),
    ("+ every value of 12+ in a place, words and paths left", by_place(12, 0)),
    ("+ every value of 6+ in a place, numbers and paths left", by_place(6, 2)),
    ("+ every value of 4+ in a place", by_place(4, 3)),
    ("+ every mixed token of 12+ anywhere", everywhere),
]


def main() -> None:
    print(f"{'variant':<58}{'recall':>8}{'ordinary masked':>18}")
    for name, mask in VARIANTS:
        result = score(mask)
        total = sum(result.secrets.values())
        recall = 100 * (total - len(result.missed)) / total
        changed = 100 * len(result.changed) / result.values
        print(f"{name:<58}{recall:>7.1f}%{len(result.changed):>8}/{result.values} {changed:>5.1f}%")


if __name__ == "__main__":
    main()
