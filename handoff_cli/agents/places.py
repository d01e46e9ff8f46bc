"""Where the agents keep their sessions: the folders to search when none is named.

Each agent has its own rules (docs/session-format.md §2), followed in its module
(``Agent.sessions_folders``) as the agent's own code follows them, so that `handoff list` finds
on a machine exactly the sessions the agents would. Folder names are lossy; nothing here
decodes one: a session's cwd is read from its header. The environment is passed in, so the
rules are plain functions of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from handoff_cli.agents import REGISTERED
from handoff_cli.options import DEFAULT_SESSIONS_DIR


@dataclass(frozen=True)
class Root:
    """A folder that holds sessions, and the agent that keeps it there (None: not an agent's)."""

    path: Path
    agent: str | None = None


def expand(path: str | Path) -> Path:
    """A path as the user typed it: ``~`` expanded."""
    return Path(path).expanduser()


def default_roots(env: Mapping[str, str], home: Path, cwd: Path) -> list[Root]:
    """The folders searched when none is named: those of every agent that exist, and
    ``./sessions`` when it exists, each once."""
    candidates = [
        Root(folder, agent.name)
        for agent in REGISTERED.values()
        for folder in agent.sessions_folders(env, home, cwd)
    ]
    candidates.append(Root(cwd / DEFAULT_SESSIONS_DIR))
    return _existing_once(candidates)


def roots(named: list[Path] | None, env: Mapping[str, str], home: Path, cwd: Path) -> list[Root]:
    """The folders to search: the ones named (``--sessions-dir``, ``$HANDOFF_SESSIONS_DIR``),
    which replace the defaults, else the defaults. An agent's folder named by hand is still
    known as that agent's."""
    if not named:
        return default_roots(env, home, cwd)
    agents = {root.path.resolve(): root.agent for root in default_roots(env, home, cwd)}
    return [Root(p, agents.get(p.resolve())) for p in (expand(n) for n in named)]


def agent_of(path: Path, known: list[Root]) -> str | None:
    """Which agent keeps the session file at ``path``, judged by the folder it is under."""
    resolved = path.resolve()
    for root in known:
        if root.agent is not None and resolved.is_relative_to(root.path.resolve()):
            return root.agent
    return None


def _existing_once(candidates: list[Root]) -> list[Root]:
    seen: set[Path] = set()
    found: list[Root] = []
    for root in candidates:
        resolved = root.path.resolve()
        if resolved not in seen and root.path.is_dir():
            seen.add(resolved)
            found.append(root)
    return found
