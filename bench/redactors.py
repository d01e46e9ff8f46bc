"""How redactors score on the secrets corpus (tests/fixtures/secrets), and how fast they are.

    python bench/redactors.py              # ours
    /tmp/bl/bin/python bench/redactors.py  # also betterleaks-py, and both, where it is installed
                                           # (with orjson; this folder's parent on PYTHONPATH)

For each redactor: recall (the share of the corpus's secrets no longer in the output), false
positives (traps and session strings that came out changed), speed on the session text of
``bench.py``'s redaction benchmark (as one text, one call a message, and for ours the messages at
once as a handoff masks them), import time, and the size of the installed package. Printed,
never asserted; the tests assert ours.
"""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

from bench import _strings, session_messages  # noqa: E402
from handoff_cli.handoff.redact import Redactor  # noqa: E402
from tests.secrets_corpus import score  # noqa: E402

Mask = Callable[[str], str]


def ours(text: str) -> str:
    return Redactor().text(text)


def betterleaks_mask() -> Mask | None:
    try:
        import betterleaks  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        return None

    def mask(text: str) -> str:
        for finding in betterleaks.scan_string(text):
            secret = finding.secret or finding.match.full
            if secret:
                text = text.replace(secret, "[REDACTED:betterleaks]")
        return text

    return mask


def speed(name: str, mask: Mask, texts: list[str], runs: int = 3) -> None:
    size = sum(len(t.encode()) for t in texts)
    joined = "\n".join(texts)
    whole = each = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        mask(joined)
        whole = min(whole, time.perf_counter() - start)
        start = time.perf_counter()
        for text in texts:
            mask(text)
        each = min(each, time.perf_counter() - start)
    print(
        f"  {name:12} {size / whole / 1e6:6.1f} MB/s as one text,"
        f" {size / each / 1e6:6.1f} MB/s a call a message"
    )


def footprint(module: str, distribution: str) -> str:
    code = f"import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
    runs = [
        float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout)
        for _ in range(5)
    ]
    try:
        files = importlib.metadata.distribution(distribution).files or []
    except importlib.metadata.PackageNotFoundError:
        files = []
    paths = [Path(str(f.locate())) for f in files]
    size = sum(p.stat().st_size for p in paths if p.exists())
    return f"import {min(runs) * 1000:.0f} ms, installed {size / 1e6:.1f} MB"


def main() -> None:
    maskers: dict[str, Mask] = {"ours": ours}
    theirs = betterleaks_mask()
    if theirs:
        maskers["betterleaks"] = theirs
        maskers["both"] = lambda text: ours(theirs(text))
    print("on the corpus:")
    for name, mask in maskers.items():
        result = score(mask)
        print(f"  {name:12} {result.summary()}")
        missed = sorted({p.kind for p, _ in result.missed})
        if missed:
            print(f"  {'':12} missed kinds: {', '.join(missed)}")
        for text, _ in result.changed[:10]:
            print(f"  {'':12} changed: {text[:90]!r}")
    messages, _ = session_messages(4)
    texts: list[str] = []
    _strings(messages, texts)
    print(f"speed, {sum(len(t.encode()) for t in texts) / 1e6:.1f} MB of session text:")
    for name, mask in maskers.items():
        speed(name, mask, texts)
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        Redactor().messages(messages)
        best = min(best, time.perf_counter() - start)
    size = sum(len(t.encode()) for t in texts)
    print(f"  {'ours':12} {size / best / 1e6:6.1f} MB/s the messages at once (Redactor.messages)")
    print("footprint:")
    project = footprint("handoff_cli.handoff.redact", "handoff_cli")
    print(f"  {'ours':12} {project} (the whole project)")
    if theirs:
        print(f"  {'betterleaks':12} {footprint('betterleaks', 'betterleaks-py')}")


if __name__ == "__main__":
    main()
