"""The agents whose sessions handoff_cli reads, each in a module of its own holding all of its
rules (``omp``: oh-my-pi; ``pi``: upstream pi; ``claude``: Claude Code; ``codex``: Codex), and
the registry everything else asks.

Adding an agent is adding a module with an object that implements ``base.Agent`` and listing
it in ``REGISTERED``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import BinaryIO

from handoff_cli.agents import claude, codex, omp, pi
from handoff_cli.agents.base import Agent, Format
from handoff_cli.agents.context import Context
from handoff_cli.errors import SessionFileError
from handoff_cli.sessions import session
from handoff_cli.sessions.jsonl import parse_line
from handoff_cli.sessions.session import (
    BOM,
    Record,
    Session,
    is_header,
    is_title_slot,
    open_regular,
)

REGISTERED: dict[str, Agent] = {
    agent.name: agent for agent in (omp.AGENT, pi.AGENT, claude.AGENT, codex.AGENT)
}
"""The agents by name (``--agent``), in the order their marks on a file are weighed."""
NAMES = tuple(REGISTERED)
OMP = omp.NAME
PI = pi.NAME
CLAUDE = claude.NAME
CODEX = codex.NAME
FORMATS: dict[str, Format] = {claude.NAME: claude, codex.NAME: codex}
"""The agents that write a format of their own, each read by its module (``base.Format``)."""
HEAD_BYTES = max(claude.OWNS_BYTES, codex.OWNS_BYTES)
"""How much of a file's start tells whose format it is in."""
DEFAULT = OMP
"""Whose rules read a file nothing in which names its agent."""
PI_FAMILY = (OMP, PI)
"""The agents that write the shared format: each one's rules can read the other's files."""


def get(name: str) -> Agent:
    """The agent called ``name`` (one of ``NAMES``)."""
    return REGISTERED[name]


def readers(loaded: Session) -> tuple[str, ...]:
    """The agents whose rules can read ``loaded``: its format's one agent, else the family's."""
    return (loaded.agent,) if loaded.agent is not None else PI_FAMILY


def build_context(branch: list[Record], agent: str) -> Context:
    """The context the agent called ``agent`` builds for ``branch`` (docs/session-format.md
    §6)."""
    return REGISTERED[agent].context(branch)


def format_of(head: bytes) -> Format | None:
    """The format of its own of the agent whose file starts with ``head``, if any."""
    return next((f for f in FORMATS.values() if f.owns_head(head)), None)


def format_head(file: BinaryIO, head: bytes, size: int) -> bytes:
    """``head``, the first bytes of ``file`` (``size`` long), read on up to ``HEAD_BYTES`` when
    they cannot tell whose format the file is in: no agent's own seen, and no header of the pi
    family's first (a first line of a pasted image or a long paste is cut). Listing, looking up
    and loading a file so decide its format on the same bytes."""
    if len(head) >= min(size, HEAD_BYTES) or format_of(head) is not None or _shared(head):
        return head
    return head + os.pread(file.fileno(), HEAD_BYTES - len(head), len(head))


def _shared(head: bytes) -> bool:
    """Whether ``head`` opens with the pi family's header (or omp's title slot), whole."""
    first, newline, _ = head.removeprefix(BOM).partition(b"\n")
    try:
        value = parse_line(first) if newline else None
    except ValueError:
        return False
    return is_header(value) or is_title_slot(value)


def load_session(path: Path | str) -> Session:
    """Read a session file in whichever format it is: an agent's own (``FORMATS``), else the
    pi family's (``sessions.session.load_session``, which says why a file is none of them)."""
    path = Path(path)
    try:
        with open_regular(path) as file:
            found = format_of(file.read(HEAD_BYTES))
    except (OSError, SessionFileError):
        found = None  # the shared loader says why
    return found.load(path) if found is not None else session.load_session(path)
