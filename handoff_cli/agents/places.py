"""Where the agents keep their sessions: the folders to search when none is named.

Each agent has its own rules (docs/session-format.md §2), followed in its module
(``Agent.sessions_folders``) as the agent's own code follows them, so that `handoff list` finds
on a machine exactly the sessions the agents would. Folder names are lossy; nothing here
decodes one: a session's cwd is read from its header. The environment is passed in, so the
rules are plain functions of it.
"""

from __future__ import annotations

import io
import itertools
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from handoff_cli.agents import REGISTERED, format_head, format_of, suffixes
from handoff_cli.errors import SessionFileError
from handoff_cli.options import DEFAULT_SESSIONS_DIR
from handoff_cli.sessions.session import numbered, open_regular, read_head


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
    ``./sessions`` when it holds sessions (``holds_sessions``), each once."""
    candidates = [
        Root(folder, agent.name)
        for agent in REGISTERED.values()
        for folder in agent.sessions_folders(env, home, cwd)
    ]
    here = cwd / DEFAULT_SESSIONS_DIR
    if holds_sessions(here):  # a project's own sessions/ (a web app's) is none of ours
        candidates.append(Root(here))
    return _existing_once(candidates)


HEAD_BYTES = 1 << 16
"""Enough of a file's start to know it: omp's title slot is a few hundred bytes, and a cut
first line still says it is a Codex rollout."""
LOOKED_AT = 16
"""Files opened at most: in a folder of sessions the first one is one; in a folder of other
things, every command would otherwise read them all."""
_DATED = "[0-9][0-9][0-9][0-9]/[0-9][0-9]/[0-9][0-9]/rollout-*.jsonl"
"""Codex's date folders: digits only, so that a web app's own tree is not walked."""


def _layouts() -> list[str]:
    """Where the agents put session files in their folders: in it or one folder down (the pi
    family's, Claude Code's, most), in date folders (Codex's)."""
    return [f"{down}*{suffix}" for down in ("", "*/") for suffix in suffixes()] + [_DATED]


def holds_sessions(folder: Path) -> bool:
    """Whether ``folder`` holds an agent's session, laid out as the agents lay them out
    (``_layouts``): a file that opens with a session header, or in an agent's own format."""
    if not folder.is_dir():
        return False
    files = itertools.chain.from_iterable(sorted(folder.glob(layout)) for layout in _layouts())
    return any(_is_session(path) for path in itertools.islice(files, LOOKED_AT))


def _is_session(path: Path) -> bool:
    try:
        with open_regular(path) as file:
            size = os.fstat(file.fileno()).st_size
            head = format_head(file.fileno(), file.read(HEAD_BYTES), size)
        if format_of(head) is not None:
            return True
        lines = list(io.BytesIO(head))
        read_head(path, iter(numbered(lines[:-1] if len(head) < size else lines)))
    except (OSError, SessionFileError):
        return False
    return True


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
