"""Where the agents keep their sessions: the folders to search when none is named.

Each agent has its own rules (docs/session-format.md §2), followed here as the agents' own code
follows them, so that `handoff list` finds on a machine exactly the sessions the agents would:

- oh-my-pi: ``~/.omp/agent/sessions``. ``PI_CONFIG_DIR`` replaces ``.omp``; a profile
  (``OMP_PROFILE``, else ``PI_PROFILE``) lives under ``<config>/profiles/<name>``;
  ``PI_CODING_AGENT_DIR`` replaces the agent folder (not for a profile); on Linux and macOS,
  with the default agent folder, ``$XDG_DATA_HOME/omp/sessions`` is used once
  ``$XDG_DATA_HOME/omp`` exists.
- pi: ``~/.pi/agent/sessions``; ``PI_CODING_AGENT_DIR`` (``~`` expanded) replaces
  ``~/.pi/agent``; ``PI_CODING_AGENT_SESSION_DIR`` and the ``sessionDir`` of pi's settings
  (the project's ``.pi/settings.json``, else the agent folder's ``settings.json``) name a flat
  folder of their own.

Folder names are lossy; nothing here decodes one: a session's cwd is read from its header.
The environment is passed in, so the rules are plain functions of it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from handoff_cli.options import DEFAULT_SESSIONS_DIR
from handoff_cli.options import OMP as OMP  # the agents' names, as the roots carry them
from handoff_cli.options import PI as PI


@dataclass(frozen=True)
class Root:
    """A folder that holds sessions, and the agent that keeps it there (None: not an agent's)."""

    path: Path
    agent: str | None = None


def expand(path: str | Path) -> Path:
    """A path as the user typed it: ``~`` expanded."""
    return Path(path).expanduser()


def omp_sessions(env: Mapping[str, str], home: Path, platform: str = sys.platform) -> Path:
    """oh-my-pi's sessions folder."""
    return _omp_agent_part(env, home, "XDG_DATA_HOME", platform) / "sessions"


def omp_terminal_sessions(env: Mapping[str, str], home: Path, platform: str = sys.platform) -> Path:
    """Where oh-my-pi remembers, per terminal, the session last opened there (a file per
    terminal: the cwd, then the session file); its ``--continue`` opens that one."""
    return _omp_agent_part(env, home, "XDG_STATE_HOME", platform) / "terminal-sessions"


def _omp_agent_part(env: Mapping[str, str], home: Path, xdg_variable: str, platform: str) -> Path:
    """oh-my-pi's agent folder, or, for the default one on Linux and macOS, the XDG folder of
    the kind named by ``xdg_variable`` once ``<that folder>/omp`` exists (omp's own rule: it
    flattens ``agent/`` away there)."""
    profile = env["OMP_PROFILE"] if "OMP_PROFILE" in env else env.get("PI_PROFILE", "")
    config = home / (env.get("PI_CONFIG_DIR") or ".omp")
    if profile:
        config = config / "profiles" / profile
    default_agent = config / "agent"
    override = env.get("PI_CODING_AGENT_DIR")
    agent = Path(override).resolve() if override and not profile else default_agent
    xdg = env.get(xdg_variable)
    if xdg and agent == default_agent and platform in ("linux", "darwin"):
        app = Path(xdg) / "omp"
        kept = app / "profiles" / profile if profile else app
        if kept.exists():
            return kept
    return agent


def pi_sessions(env: Mapping[str, str], home: Path, cwd: Path) -> list[Path]:
    """pi's sessions folders: its agent folder's, and any flat one its settings name."""
    override = env.get("PI_CODING_AGENT_DIR")
    agent = _expand_from(override, home) if override else home / ".pi" / "agent"
    folders = [agent / "sessions"]
    named = env.get("PI_CODING_AGENT_SESSION_DIR")
    # The project's settings override the agent folder's, as pi merges them.
    for settings in (cwd / ".pi" / "settings.json", agent / "settings.json"):
        named = named or _setting(settings, "sessionDir")
    if named:
        folders.append(_expand_from(named, home))
    return folders


def default_roots(env: Mapping[str, str], home: Path, cwd: Path) -> list[Root]:
    """The folders searched when none is named: those of both agents that exist, and
    ``./sessions`` when it exists, each once."""
    candidates = [
        Root(omp_sessions(env, home), OMP),
        *(Root(folder, PI) for folder in pi_sessions(env, home, cwd)),
        Root(cwd / DEFAULT_SESSIONS_DIR),
    ]
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


def _expand_from(value: str, home: Path) -> Path:
    return home / value[2:] if value == "~" or value.startswith("~/") else Path(value)


def _setting(path: Path, key: str) -> str | None:
    try:
        value = json.loads(path.read_text()).get(key)
    except (OSError, ValueError, AttributeError):
        return None
    return value if isinstance(value, str) and value else None


def _existing_once(candidates: list[Root]) -> list[Root]:
    seen: set[Path] = set()
    found: list[Root] = []
    for root in candidates:
        resolved = root.path.resolve()
        if resolved not in seen and root.path.is_dir():
            seen.add(resolved)
            found.append(root)
    return found
