"""The program in processes of its own, forked from a zygote that has it and LiteLLM imported.

A fresh interpreter pays its start-up on every run: some 0.15 s of CPU for the program, over
4 s once a handoff imports LiteLLM. Tests that need a process only for what a process is (its
own peak memory, its own locks racing another's) fork one from a zygote instead: a
multiprocessing fork server, started once per test process, with both imported. Tests about
start-up itself (a kill while importing, signals, the console script) still start afresh.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.forkserver
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from multiprocessing.process import BaseProcess
from pathlib import Path

from handoff_cli.cli.app import run

_CONTEXT = multiprocessing.get_context("forkserver")
# The zygote imports the program and LiteLLM (tests.helpers.warm); this process does not.
_CONTEXT.set_forkserver_preload(["tests.helpers.warm"])


def _child(args: list[str], env: dict[str, str], folder: str, peak: bool, tty: str) -> None:
    os.environ.clear()
    os.environ.update(env)
    for fd, name in ((1, "stdout"), (2, "stderr")):
        if tty:  # a terminal's, by its name: a descriptor does not cross to the zygote
            os.dup2(os.open(tty, os.O_WRONLY | os.O_NOCTTY), fd)
        else:
            os.dup2(os.open(Path(folder) / name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), fd)
    code = run(args)
    sys.stdout.flush()
    sys.stderr.flush()
    if peak:
        # VmHWM of this process image: it starts at the zygote's resident size at the fork,
        # the same for every child, so the difference of two runs is what the files added.
        with open("/proc/self/status") as status:
            value = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
        (Path(folder) / "peak").write_text(value)
    os._exit(code)  # as the program's main() ends: no interpreter teardown


@dataclass(frozen=True)
class Forked:
    """A run of the program in a child of the zygote, printing into files in ``folder``."""

    process: BaseProcess
    folder: Path

    def poll(self) -> int | None:
        return self.process.exitcode

    def kill(self) -> None:
        """SIGKILL, as the ``Popen`` method."""
        self.process.kill()

    def send_signal(self, signum: int) -> None:
        assert self.process.pid is not None
        os.kill(self.process.pid, signum)

    def wait(self, timeout: float = 120) -> int:
        self.process.join(timeout)
        code = self.process.exitcode
        assert code is not None, f"still running after {timeout} s"
        return code

    @property
    def stdout(self) -> str:
        return (self.folder / "stdout").read_text(errors="replace")

    @property
    def stderr(self) -> str:
        return (self.folder / "stderr").read_text(errors="replace")

    @property
    def peak(self) -> int:
        """The child's peak resident memory, in bytes (a run started with ``peak``)."""
        return int((self.folder / "peak").read_text()) * 1024


def fork(
    args: list[str],
    folder: Path,
    env: Mapping[str, str | None] | None = None,
    peak: bool = False,
    tty: str = "",
) -> Forked:
    """Start the program with ``args`` in a child of the zygote, with this process's
    environment and ``env`` (None: a variable taken out); its output goes to files in ``folder``
    (made if need be), there from the start, so that they can be read while it runs, or to the
    terminal named ``tty``."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("stdout", "stderr"):
        (folder / name).write_bytes(b"")
    given = {**os.environ, **(env or {})}
    environment = {name: value for name, value in given.items() if value is not None}
    process = _CONTEXT.Process(target=_child, args=(args, environment, str(folder), peak, tty))
    process.start()
    return Forked(process, folder)


def ready() -> None:
    """Start the zygote now, if it is not running, and wait for its imports (else the first
    fork waits for their seconds): for a test that times its children."""
    child = _CONTEXT.Process(target=os.getpid)  # forked once the zygote serves
    child.start()
    child.join()


def started() -> bool:
    """Whether this process has started the zygote."""
    return multiprocessing.forkserver._forkserver._forkserver_pid is not None  # type: ignore[attr-defined]


def stop() -> None:
    """End the zygote, if it was started, and wait for it: so that its CPU time is counted as
    this process's children's (``time make test``), and no process outlives the tests."""
    # Private (typeshed omits it): the standard library has no public way to stop its server.
    multiprocessing.forkserver._forkserver._stop()  # type: ignore[attr-defined]
