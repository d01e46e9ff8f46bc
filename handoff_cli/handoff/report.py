"""How a handoff tells how it goes, as it goes: which of its steps begins, how its answer
streams, what a person should know. This base says nothing: the command line's reporter prints
(``cli.output.Notices``), a rotation's holds and names (``handoff.rotate``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from handoff_cli.sessions.session import Session


ABOUT = ": for "
"""Where a note's cause ends and what it is about begins (``note: <cause>: for <subject>``):
the notes of one cause, about several subjects, can be told as one."""


class Reporter:
    """Told each step of a handoff; silent unless a subclass says otherwise."""

    def loaded(self, session: Session) -> None:
        """The session is loaded (what it had to skip is in it)."""

    def stage(self, text: str) -> None:
        """A step begins (asking the model, writing)."""

    def streamed(self, pieces: int) -> None:
        """The answer is streaming in."""

    def warn(self, text: str) -> None:
        """Something the user should know, which does not stop the handoff."""
