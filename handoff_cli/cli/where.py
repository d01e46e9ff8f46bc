"""Where the command line looks for sessions, and which agent's they are: the folders searched,
a name or prefix found, a file loaded and its agent chosen."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from click.core import ParameterSource

from handoff_cli.agents import get, load_session, omp
from handoff_cli.agents.choice import Choice, choose_agent
from handoff_cli.agents.places import Root, agent_of, roots
from handoff_cli.catalog import (
    Catalog,
    SessionSummary,
    catalog,
    loop_warning,
    resolve_session,
)
from handoff_cli.cli.output import (
    notice,
    report_load_problems,
)
from handoff_cli.errors import (
    HandoffError,
    UsageError,
)
from handoff_cli.options import (
    AUTO,
)
from handoff_cli.sessions.session import Session

if TYPE_CHECKING:
    pass


def complete_session(incomplete: str) -> list[tuple[str, str]]:
    """SESSION completes to the ids of the sessions in the default folders, with titles."""
    try:
        found = catalog(session_roots(None), missing_ok=True)
    except HandoffError:
        return []
    return [(s.id, found.title(s) or "") for s in found.sessions if s.id.startswith(incomplete)]


def session_roots(named: list[Path] | None) -> list[Root]:
    """The folders to search: those named, else the agents' own (see ``places``)."""
    return roots(named, os.environ, Path.home(), Path.cwd())


def _with_agent(root: Root) -> Root:
    """A folder named on the command line, as an agent's if it is under one of theirs."""
    return root if root.agent else Root(root.path, agent_of(root.path, session_roots(None)))


def find_session(session: str, sessions_dirs: list[Path] | None) -> Path:
    return resolve_session(session, session_roots(sessions_dirs), Path.cwd())


def open_session(session: str, sessions_dirs: list[Path] | None) -> Session:
    loaded = load_session(find_session(session, sessions_dirs))
    report_load_problems(loaded)
    return loaded


def terminal_sessions() -> Path:
    """oh-my-pi's folder of terminal pointers, which a handoff moves to the new session."""
    return omp.terminal_sessions(os.environ, Path.home())


def project_folder(agent: str, cwd: str) -> Path | None:
    """The folder ``agent`` starts a session of ``cwd`` in, on this machine (``--to``)."""
    return get(agent).project_folder(os.environ, Path.home(), cwd)


def folder_agent(path: Path, sessions_dirs: list[Path] | None) -> str | None:
    """The agent whose sessions folder holds ``path``, if any (for ``--agent auto``)."""
    return agent_of(path, [*session_roots(sessions_dirs), *session_roots(None)])


def choose(loaded: Session, agent: str, sessions_dirs: list[Path] | None) -> Choice:
    folder = folder_agent(loaded.path, sessions_dirs) if agent == AUTO else None
    return choose_agent(loaded, agent, folder)


def own_roots() -> tuple[Root, ...]:
    """The agents' own sessions folders (not those named on the command line)."""
    return tuple(root for root in session_roots(None) if root.agent is not None)


def cache_folder() -> Path:
    """The user's cache folder for this program, as the XDG convention places it."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    return (Path(base) if os.path.isabs(base) else Path.home() / ".cache") / "handoff_cli"


def named_roots(
    ctx: typer.Context, directories: list[Path] | None, sessions_dirs: list[Path] | None
) -> list[Root]:
    """The folders ``list`` and ``rotate`` search: those named on the command line win over
    ``$HANDOFF_SESSIONS_DIR``; with neither, the agents' own."""
    if directories and ctx.get_parameter_source("sessions_dirs") is ParameterSource.ENVIRONMENT:
        sessions_dirs = None
    named = [*(directories or []), *(sessions_dirs or [])] or None
    return [_with_agent(root) for root in session_roots(named)]


def warn_loops(family: Catalog, shown: list[SessionSummary]) -> None:
    """Each loop of parents that the lineage of ``shown`` runs into, once."""
    loops = {id(loop): loop for s in shown if (loop := family.loop_of(s)) is not None}
    for loop in loops.values():
        notice(loop_warning(loop))


def check_cwd() -> None:
    # Every command looks for the current directory's sessions and settings.
    try:
        os.getcwd()
    except FileNotFoundError:
        raise UsageError("the current directory no longer exists: cd to one that does") from None
