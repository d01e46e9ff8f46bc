"""The agents whose sessions handoff_cli reads, each in a module of its own holding all of its
rules (``omp``: oh-my-pi; ``pi``: upstream pi; ``claude``: Claude Code), and the registry
everything else asks.

Adding an agent is adding a module with an object that implements ``base.Agent`` and listing
it in ``REGISTERED``.
"""

from __future__ import annotations

from pathlib import Path

from handoff_cli.agents import claude, omp, pi
from handoff_cli.agents.base import Agent
from handoff_cli.agents.context import Context
from handoff_cli.sessions import session
from handoff_cli.sessions.session import Record, Session

REGISTERED: dict[str, Agent] = {agent.name: agent for agent in (omp.AGENT, pi.AGENT, claude.AGENT)}
"""The agents by name (``--agent``), in the order their marks on a file are weighed."""
NAMES = tuple(REGISTERED)
OMP = omp.NAME
PI = pi.NAME
CLAUDE = claude.NAME
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


def load_session(path: Path | str) -> Session:
    """Read a session file in whichever format it is: Claude Code's (``claude.load``), else
    the pi family's (``sessions.session.load_session``, which says why a file is neither)."""
    path = Path(path)
    return claude.load(path) if claude.owns(path) else session.load_session(path)
