"""The event loop the handoff's model calls run on, and the cancel that reaches them."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

_threads = threading.local()
INTERRUPTED = threading.Event()
"""Set by the signal that cancels a handoff, before its handler raises ``KeyboardInterrupt``
(and cleared as the handoff ends). That interrupt lands wherever the program is, and a library
may catch it there and raise its own error instead (pydantic, building a schema as LiteLLM
reads the stream, raises a ``SchemaError``, which LiteLLM reports as a broken stream): that
error is the interrupt, never one to retry or report."""


def run_on_loop(work: Coroutine[Any, Any, T]) -> T:
    """Run ``work`` to its end on this thread's event loop, which stays open between runs
    (LiteLLM keeps its HTTP clients per loop). An interrupt (Ctrl-C, SIGTERM) cancels the work
    first, so that its connection is closed before the interrupt goes on."""
    loop: asyncio.AbstractEventLoop | None = getattr(_threads, "loop", None)
    if loop is None:
        loop = _threads.loop = asyncio.new_event_loop()
    task = loop.create_task(work)
    try:
        return loop.run_until_complete(task)
    except BaseException as error:
        if not task.done():
            task.cancel()
            with contextlib.suppress(BaseException):
                loop.run_until_complete(task)
        if INTERRUPTED.is_set() and not isinstance(error, KeyboardInterrupt):
            raise KeyboardInterrupt from None  # whatever the interrupt was turned into
        raise
