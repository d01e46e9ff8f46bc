"""The one error hierarchy of handoff_cli, and the exit codes.

Every failure the tool can report is a ``HandoffError`` carrying its exit code; ``cli.main``
turns any of them into one line on stderr and that code, in one place. The codes and what they
mean are defined here once: ``--help`` and the README's table are built from, or checked
against, ``EXIT_CODES``.
"""

from __future__ import annotations

from enum import IntEnum
from pathlib import Path


class ExitCode(IntEnum):
    OK = 0
    FAILED = 1
    USAGE = 2
    NOTHING_TO_HAND_OFF = 3
    BAD_SESSION = 4
    NO_DOCUMENT = 5
    OVER_BUDGET = 6
    CANCELLED = 130


EXIT_CODES: dict[ExitCode, str] = {
    ExitCode.OK: "success",
    ExitCode.FAILED: (
        "the handoff failed: model, credentials, network, rate limit, timeout, disk (export: "
        "its file cannot be written)"
    ),
    ExitCode.USAGE: (
        "usage error: bad option, unknown entry id, ambiguous id prefix, a text option that is "
        "not UTF-8, a configuration or prompt file that cannot be used"
    ),
    ExitCode.NOTHING_TO_HAND_OFF: (
        "nothing to hand off: fewer than two message entries (of any role) on the branch, as "
        "oh-my-pi's own guard counts; or, --in-place, nothing to compact; or, show --document "
        "or check, no document"
    ),
    ExitCode.BAD_SESSION: (
        "the session file is missing, unreadable or not a session file, it changed while the "
        "handoff ran, or another process held its lock all the while we waited"
    ),
    ExitCode.NO_DOCUMENT: (
        "no usable document: empty answer, one far over the cap without every section, "
        "sections missing with --strict, or a score under --min-score (handoff check: under "
        "its threshold)"
    ),
    ExitCode.OVER_BUDGET: "over budget: the estimated cost is over --max-cost, nothing started",
    ExitCode.CANCELLED: "cancelled (Ctrl-C, SIGTERM)",
}
"""What each exit code means, in one line."""


def exit_codes_help() -> str:
    """The exit codes for ``--help``: one short phrase each."""
    return "Exit codes: " + ", ".join(
        f"{int(code)} {meaning.split(':')[0]}" for code, meaning in EXIT_CODES.items()
    )


def os_reason(error: OSError) -> str:
    """What went wrong with a file, in the few words every message uses."""
    if isinstance(error, FileNotFoundError):
        return "no such file"
    if isinstance(error, IsADirectoryError):
        return "is a directory, not a session file"
    if isinstance(error, PermissionError):
        return "permission denied"
    if isinstance(error, NotADirectoryError):
        return "not a folder"
    return (error.strerror or str(error)).rstrip(".")


class HandoffError(Exception):
    """Base of every error the tool reports; ``str(error)`` is the one-line message."""

    exit_code: ExitCode = ExitCode.FAILED


class UsageError(HandoffError):
    """The command line asks for something that cannot be done (bad option value, unknown id)."""

    exit_code = ExitCode.USAGE

    def __init__(self, reason: str) -> None:
        super().__init__(f"Usage error: {reason}")


class ConfigError(UsageError):
    """A configuration file that cannot be used (not TOML, an unknown key, a value of the wrong
    type, a key of a provider's): named with the file and the key."""

    def __init__(self, path: Path | str, reason: str, key: str | None = None) -> None:
        self.path = str(path)
        self.key = key
        super().__init__(f"{path}: {key}: {reason}" if key else f"{path}: {reason}")


class SessionFileError(HandoffError):
    """A session file is missing, unreadable, or not a session file at all."""

    exit_code = ExitCode.BAD_SESSION

    def __init__(self, path: Path | str, reason: str, line: int | None = None) -> None:
        self.path = str(path)
        self.reason = reason
        self.line = line
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {reason}")


class NothingToHandOffError(HandoffError):
    """The branch holds fewer than two message entries."""

    exit_code = ExitCode.NOTHING_TO_HAND_OFF

    def __init__(self) -> None:
        super().__init__("Nothing to hand off (no messages yet)")


class AlreadyCompactedError(NothingToHandOffError):
    """An in-place handoff with nothing to compact: nothing follows the branch's last
    compaction."""

    def __init__(self) -> None:
        HandoffError.__init__(self, "Nothing to hand off (already compacted)")


class NothingToCompactError(NothingToHandOffError):
    """An in-place handoff with nothing to compact: all of the branch (since its last
    compaction, if any) fits in the tokens the compaction keeps as they are."""

    def __init__(self, kept_tokens: int, compacted: bool) -> None:
        what = "what follows the last compaction fits" if compacted else "the branch fits"
        HandoffError.__init__(
            self, f"Nothing to compact: {what} in the {kept_tokens:,} tokens kept"
        )


class NoDocumentHeldError(HandoffError):
    """``show --document`` of a session that neither starts from a handoff document nor
    records one: nothing to show."""

    exit_code = ExitCode.NOTHING_TO_HAND_OFF

    def __init__(self, path: Path | str) -> None:
        super().__init__(
            f"{path} holds no handoff document: it neither starts from one nor records one"
        )


class NothingToCheckError(HandoffError):
    """``check`` of a session whose document's facts cannot be read (the session it was handed
    off from is gone, or records no such document)."""

    exit_code = ExitCode.NOTHING_TO_HAND_OFF


class ModelError(HandoffError):
    """The model could not be reached or refused the request (after retries)."""

    exit_code = ExitCode.FAILED

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(f"Handoff failed: {reason}")


class NoDocumentError(HandoffError):
    """The model answered, but with no usable handoff document."""

    exit_code = ExitCode.NO_DOCUMENT

    def __init__(self, reason: str = "the model returned no text") -> None:
        super().__init__(f"Handoff failed: {reason}")


class UnderScoreError(NoDocumentError):
    """The document scores under ``--min-score``, after one repair: nothing was written."""

    def __init__(self, score: float, min_score: float, missing: list[str]) -> None:
        self.score = score
        self.missing = missing
        more = len(missing) - 3
        shown = "; ".join(missing[:3]) + (f"; and {more} more" if more > 0 else "")
        super().__init__(
            f"the document scores {score:.3f}, under --min-score {min_score:g}; nothing "
            f"written; it misses {shown}"
        )


class CancelledError(HandoffError):
    """The user cancelled (Ctrl-C, SIGTERM) before anything was written: ``Handoff
    cancelled``, or for a command that hands nothing off, ``Cancelled``."""

    exit_code = ExitCode.CANCELLED

    def __init__(self, message: str = "Handoff cancelled") -> None:
        super().__init__(message)


class HandedOffError(NothingToHandOffError):
    """Rotation found the session handed off by another run (its leaf is a recorded handoff
    or a compaction of one, or a handoff session newer than its last entry starts from it)."""

    def __init__(self) -> None:
        HandoffError.__init__(self, "Nothing to hand off (handed off by another run)")


class InPlaceRefusedError(UsageError):
    """``--in-place`` on a session read by rules that have no in-place handoff."""


class SessionChangedError(HandoffError):
    """The session file is no longer the one read (emptied, cut short, replaced, rewritten),
    or, where nothing may come between, something was added to it: nothing was written, and
    a new session made for it was taken back."""

    exit_code = ExitCode.BAD_SESSION

    def __init__(self, path: Path | str, detail: str) -> None:
        self.path = str(path)
        self.detail = detail
        super().__init__(
            f"Handoff failed: {path}: the session changed while the handoff ran ({detail}); "
            "nothing written"
        )


class SessionLockedError(HandoffError):
    """Another process held the session's lock all the while we waited for it
    (``files.LOCK_WAIT_S``): a backup tool, a process stopped with the lock held. Nothing was
    written."""

    exit_code = ExitCode.BAD_SESSION

    def __init__(self, path: Path | str, waited: float) -> None:
        self.path = str(path)
        super().__init__(
            f"Handoff failed: {path}: the session is locked by another process (waited "
            f"{waited:g} s); nothing written"
        )


class OverBudgetError(HandoffError):
    """Rotation would cost more than allowed; nothing was started."""

    exit_code = ExitCode.OVER_BUDGET


class WriteError(HandoffError):
    """A session file could not be written (full disk, permissions); nothing was left behind."""

    exit_code = ExitCode.FAILED

    def __init__(self, path: Path | str, error: OSError) -> None:
        super().__init__(f"Handoff failed: cannot write {path}: {os_reason(error)}")


class ExportWriteError(HandoffError):
    """An export's file could not be written; what was there before is as it was."""

    exit_code = ExitCode.FAILED

    def __init__(self, path: Path | str, error: OSError) -> None:
        super().__init__(f"Export failed: cannot write {path}: {os_reason(error)}")
