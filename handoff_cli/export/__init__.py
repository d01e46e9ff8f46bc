"""``handoff export``: a session's branch as a transcript to read, share, or keep as a CI
artifact (docs/handoff.md §17).

``transcript`` reads the branch into parts, whichever agent wrote it; one renderer a format
(``as_markdown``, ``as_html``) writes them. Read in one pass and written as it is made: time
linear in the session, and beyond what loading it holds, memory for one step of the agent (a
message, or a turn's tool calls waiting for their results), never for the whole transcript.
Nothing here writes a file or imports LiteLLM; the command line says where the bytes go.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from handoff_cli.export import as_html, as_markdown
from handoff_cli.export.transcript import Transcript, transcript_of
from handoff_cli.handoff.redact import Redactor
from handoff_cli.sessions.session import Record, Session

RENDERERS: dict[str, Callable[[Transcript], Iterator[str]]] = {
    "md": as_markdown.render,
    "html": as_html.render,
}
"""Each format's renderer, by the name ``--format`` takes."""
FORMATS = tuple(RENDERERS)
BLOCK = 1 << 16
"""Bytes gathered into one write: a transcript is made of many small pieces."""


def format_for(path: Path | None) -> str:
    """The format a file's name asks for: HTML for ``.html`` or ``.htm``, else Markdown."""
    return "html" if path is not None and path.suffix.lower() in (".html", ".htm") else "md"


def export(
    session: Session, branch: list[Record], agent: str, format: str = "md", redact: bool = True
) -> Iterator[bytes]:
    """``branch`` of ``session``, read by the rules of the agent called ``agent``, as a
    transcript in ``format`` (one of ``FORMATS``), UTF-8, in blocks as it is made; its secrets
    masked unless not ``redact``."""
    made = transcript_of(session, branch, agent, Redactor() if redact else None)
    return _blocks(RENDERERS[format](made))


def _blocks(pieces: Iterable[str]) -> Iterator[bytes]:
    gathered: list[str] = []
    size = 0
    for piece in pieces:
        gathered.append(piece)
        size += len(piece)
        if size >= BLOCK:
            yield "".join(gathered).encode()
            gathered, size = [], 0
    if gathered:
        yield "".join(gathered).encode()
