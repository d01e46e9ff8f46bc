"""The agents whose sessions handoff_cli reads, each in a module of its own holding all of its
rules (``omp``: oh-my-pi; ``pi``: upstream pi; ``claude``: Claude Code; ``codex``: Codex), and
the registry everything else asks.

An agent is a module with an ``AGENT`` implementing ``base.Agent``; one that keeps its sessions
in a format of its own (not the pi family's) also implements ``base.Format``, the storage seam.
Adding one is registering its module: the built-in ones below, a plugin's by the entry point
group ``handoff_cli.agents`` (``name = "package.module"`` in its package's metadata), as
simonw/llm finds its plugins.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from typing import Any

from handoff_cli.agents import claude, codex, gemini, omp, opencode, pi, qwen
from handoff_cli.agents.base import Agent, Format, Store
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

REGISTERED: dict[str, Agent] = {}
"""The agents by name (``--agent``), in the order their marks on a file are weighed."""
FORMATS: dict[str, Format] = {}
"""The agents that keep a format of their own, each read and written by its module."""
STORES: dict[str, Store] = {}
"""Those whose one file holds many sessions (a database), each ``<file>/<session id>``."""
SHARED_SUFFIX = ".jsonl"
"""How the pi family's session files are named."""
OMP = omp.NAME
PI = pi.NAME
CLAUDE = claude.NAME
CODEX = codex.NAME
DEFAULT = OMP
"""Whose rules read a file nothing in which names its agent."""
PI_FAMILY = (OMP, PI)
"""The agents that write the shared format: each one's rules can read the other's files."""
ENTRY_POINTS = "handoff_cli.agents"
"""The entry point group a plugin names its agent's module in."""


def register(module: Any) -> None:
    """Add the agent of ``module`` (its ``AGENT``), and its format if it has one of its own
    (``module`` implements ``base.Format``: it has ``owns_head``). An entry point names such a
    module, or an object in one (``package.module:object``)."""
    agent: Agent = module.AGENT
    REGISTERED[agent.name] = agent
    if hasattr(module, "owns_head"):
        FORMATS[agent.name] = module
    if getattr(module, "STORE", False):
        STORES[agent.name] = module


def names() -> tuple[str, ...]:
    """The names of the agents registered."""
    return tuple(REGISTERED)


def suffixes() -> tuple[str, ...]:
    """How the session files of every agent are named."""
    return (SHARED_SUFFIX, *sorted({f.SUFFIX for f in FORMATS.values()} - {SHARED_SUFFIX}))


def session_name(name: str) -> bool:
    """Whether a file named ``name`` may be a session: the pi family's suffix, or a name an
    agent's own format gives its sessions."""
    return name.endswith(SHARED_SUFFIX) or any(f.is_session_name(name) for f in FORMATS.values())


def store_of(path: Path) -> Store | None:
    """The store whose file holds the session at ``path`` (``<file>/<session id>``), if one
    does: a file in its format."""
    holder = path.parent
    if not STORES or not holder.is_file():
        return None
    try:
        with open_regular(holder) as file:
            head = file.read(head_bytes())
    except (OSError, SessionFileError):
        return None
    return next((store for store in STORES.values() if store.owns_head(head)), None)


def head_bytes() -> int:
    """How much of a file's start tells whose format it is in."""
    return max(f.OWNS_BYTES for f in FORMATS.values())


def get(name: str) -> Agent:
    """The agent called ``name`` (one of ``names()``)."""
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


def format_head(fd: int, head: bytes, size: int) -> bytes:
    """``head``, the first bytes of the file open at ``fd`` (``size`` long), read on up to
    ``head_bytes()`` when they cannot tell whose format the file is in: no agent's own seen,
    and no header of the pi family's first (a first line of a pasted image or a long paste is
    cut). Listing, looking up and loading a file so decide its format on the same bytes."""
    most = head_bytes()
    if len(head) >= min(size, most) or format_of(head) is not None or _shared(head):
        return head
    return head + os.pread(fd, most - len(head), len(head))


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
    store = store_of(path)
    if store is not None:
        return store.load(path)
    try:
        with open_regular(path) as file:
            found = format_of(file.read(head_bytes()))
    except (OSError, SessionFileError):
        found = None  # the shared loader says why
    return found.load(path) if found is not None else session.load_session(path)


def plugins(folders: list[str]) -> list[str]:
    """The modules the installed packages under ``folders`` (``sys.path``) name in the group
    ``ENTRY_POINTS`` of their ``entry_points.txt``. Read here rather than by
    ``importlib.metadata``, whose import alone would cost every command 20-40 ms."""
    found: list[str] = []
    for folder in folders:
        try:
            with os.scandir(folder or ".") as entries:
                infos = [e.path for e in entries if e.name.endswith((".dist-info", ".egg-info"))]
        except OSError:
            continue
        for info in sorted(infos):
            try:
                text = Path(info, "entry_points.txt").read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            found += _group(text, ENTRY_POINTS)
    return found


def _group(text: str, group: str) -> list[str]:
    """The objects an ``entry_points.txt`` names in ``group`` (``name = module:attr``)."""
    named, inside = [], False
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("["):
            inside = line == f"[{group}]"
        elif inside and "=" in line and not line.startswith(("#", ";")):
            named.append(line.partition("=")[2].strip())
    return named


def _load(named: str) -> None:
    module, _, attribute = (part.strip() for part in named.partition(":"))
    found = importlib.import_module(module)
    register(getattr(found, attribute) if attribute else found)


UNLOADED: dict[str, str] = {}
"""The plugins named that could not be registered, and why (the command line says so)."""
# Gemini CLI's and Qwen Code's marks are weighed before Claude Code's, which take any sessionId.
for _module in (omp, pi, gemini, qwen, claude, codex, opencode):
    register(_module)
for _named in dict.fromkeys(plugins(sys.path)):
    try:
        _load(_named)
    except Exception as error:  # a broken plugin costs its agent, not every command
        UNLOADED[_named] = f"{type(error).__name__}: {error}"
