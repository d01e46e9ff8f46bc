"""SIGINT and SIGTERM, from the program's first instruction to its last (docs/handoff.md §11).

Left to Python, a SIGTERM ends the process without a word, and a SIGINT that lands inside an
import or inside the command-line library comes out as a traceback, or as exit 130 with no
message. So the program's first act (``handoff_cli.main``) is ``hold``: from then on both
signals reach the one handler here, and what it does is set as the program goes:

- while the program starts (its imports, the command line parsed), a signal is *held*:
  remembered, not acted upon, so that it never lands half way through an import;
- a command ``take``\\s the signals with its response once it can cancel cleanly, and a signal
  held until then is handed to that response at once. The response raises
  ``KeyboardInterrupt``, which the command turns into its one line and exit 130, or, for a
  handoff whose writes have begun, does nothing;
- a response runs once: from then on signals are ignored, so that a second Ctrl-C cannot cut
  the cancel's own clean-up and message short; and once the command has its outcome
  (``settle``), they are ignored to the exit.

Only the interpreter's own start-up, before the first line of ``handoff_cli`` runs, is
Python's.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from types import FrameType

Response = Callable[[int, FrameType | None], None]

SIGNALS = (signal.SIGINT, signal.SIGTERM)

_HOLD = "hold"
_SETTLED = "settled"
_response: Response | str = _HOLD
_held: int | None = None


def _on_signal(signum: int, frame: FrameType | None) -> None:
    global _response, _held
    response = _response
    if response == _HOLD:
        _held = _held or signum
    elif callable(response):
        _response = _SETTLED  # before it runs: what it raises is never raised twice
        response(signum, frame)


def _install() -> None:
    if threading.current_thread() is threading.main_thread():  # else: no signal reaches us
        for number in SIGNALS:
            signal.signal(number, _on_signal)


def hold() -> None:
    """Take both signals, holding any that comes until a command takes them."""
    global _response
    _response = _HOLD
    _install()


def take(response: Response) -> None:
    """From here the first signal calls ``response``; one held since start-up calls it now."""
    global _response, _held
    _install()  # in case the program did not start at ``hold`` (the tests call ``cli.run``)
    held, _held = _held, None
    _response = response
    if held is not None:
        _on_signal(held, None)


def settle() -> None:
    """The command has its outcome: from here to the exit, a signal changes nothing."""
    global _response
    _response = _SETTLED


def unanswered() -> bool:
    """Whether a signal came while the program started, and no command took it."""
    return _held is not None


def interrupt(signum: int, frame: FrameType | None) -> None:
    """The response of a command that has nothing to finish: stop where it is."""
    raise KeyboardInterrupt
