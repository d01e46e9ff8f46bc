"""Imported by the zygote only (tests.helpers.zygote): the program, and LiteLLM as a handoff
imports it, with what its first use loads, so that no child of the zygote loads them again."""

from __future__ import annotations

import contextlib
import io
import threading
from pathlib import Path

from handoff_cli.cli.app import run

from . import zygote as zygote  # what the children run

SAMPLE = Path(__file__).parent.parent / "fixtures" / "omp" / "sample-v3.jsonl"


def _discarded() -> io.TextIOWrapper:
    return io.TextIOWrapper(io.BytesIO(), encoding="utf-8")  # the program writes bytes to it


# A dry run for a model outside LiteLLM's table imports LiteLLM, to ask it.
with contextlib.redirect_stdout(_discarded()), contextlib.redirect_stderr(_discarded()):
    run([str(SAMPLE), "--dry-run", "--model", "openai/not-in-the-table", "--api-key", "k"])
# The zygote forks its children: a thread alive at a fork would leave them its locks, held.
assert threading.active_count() == 1, threading.enumerate()
