"""The agents whose sessions handoff_cli reads, each in a module of its own holding all of its
rules (``omp``: oh-my-pi; ``pi``: upstream pi), and the registry everything else asks.

Adding an agent is adding a module with an object that implements ``base.Agent`` and listing
it in ``REGISTERED``.
"""

from __future__ import annotations

from handoff_cli.agents import omp, pi
from handoff_cli.agents.base import Agent
from handoff_cli.agents.context import Context
from handoff_cli.sessions.session import Record

REGISTERED: dict[str, Agent] = {agent.name: agent for agent in (omp.AGENT, pi.AGENT)}
"""The agents by name (``--agent``), in the order their marks on a file are weighed."""
NAMES = tuple(REGISTERED)
OMP = omp.NAME
PI = pi.NAME
DEFAULT = OMP
"""Whose rules read a file nothing in which names its agent."""


def get(name: str) -> Agent:
    """The agent called ``name`` (one of ``NAMES``)."""
    return REGISTERED[name]


def build_context(branch: list[Record], agent: str) -> Context:
    """The context the agent called ``agent`` builds for ``branch`` (docs/session-format.md
    §6)."""
    return REGISTERED[agent].context(branch)
