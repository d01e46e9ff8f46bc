"""``handoff list``: the sessions, newest first, or their chains."""

from __future__ import annotations

import time
from pathlib import Path

import typer

from handoff_cli.agents.places import expand
from handoff_cli.catalog import (
    Catalog,
    catalog,
    same_folder,
)
from handoff_cli.cli.flags import (
    CacheDirOpt,
    CwdOpt,
    HereOpt,
    JsonOpt,
    LimitOpt,
    ListAgentOpt,
    ListDirectoriesArg,
    SessionsDirs,
    SinceOpt,
    TreeOpt,
)
from handoff_cli.cli.output import (
    notice,
    reader_may_leave,
    write_json_value,
)
from handoff_cli.cli.signals import interrupt, take
from handoff_cli.cli.where import cache_folder, named_roots, warn_loops
from handoff_cli.errors import (
    UsageError,
)
from handoff_cli.options import parse_since


def _none_shown(found: Catalog, project: Path | None, agent: str | None, since: str | None) -> str:
    """Why ``list`` shows nothing: no session found, or what left out the ones found."""
    if not found.sessions:
        return f"no sessions under {found.searched()}"
    kept = [f"of {project}" if project else "", f"of {agent}" if agent else ""]
    kept.append(f"written to since {since}" if since else "")
    which = " ".join(k for k in kept if k)
    return f"no sessions {which} among the {len(found.sessions)} under {found.searched()}"


def list_command(
    ctx: typer.Context,
    directories: ListDirectoriesArg = None,
    here: HereOpt = False,
    cwd: CwdOpt = None,
    tree: TreeOpt = False,
    agent: ListAgentOpt = None,
    json_out: JsonOpt = False,
    limit: LimitOpt = None,
    since: SinceOpt = None,
    sessions_dirs: SessionsDirs = None,
    cache_dir: CacheDirOpt = None,
) -> None:
    """List the sessions, newest first (with --tree: chains, oldest first)."""
    take(interrupt)
    if tree and json_out:
        raise UsageError("--tree draws the chains for people; --json already has them")
    if here and cwd is not None:
        raise UsageError("--here and --cwd both choose a directory: give one")
    try:
        after = parse_since(since, time.time()) if since is not None else None
    except ValueError as error:
        raise UsageError(f"--since: {error}") from None
    cache = expand(cache_dir) if cache_dir is not None else cache_folder()
    found = catalog(named_roots(ctx, directories, sessions_dirs), cache=cache, subagents=tree)
    for problem in found.skipped:
        notice(f"warning: skipped {problem.path}: {problem.reason}")
    project = Path.cwd() if here else (expand(cwd) if cwd is not None else None)
    shown = [
        s
        for s in found.sessions
        if (project is None or same_folder(s.cwd, project))
        and agent in (None, s.agent)
        and (after is None or s.modified >= after)
    ][:limit]
    if not shown:
        notice(_none_shown(found, project, agent, since))
    warn_loops(found, shown)
    with reader_may_leave():
        if json_out:
            write_json_value([found.to_json(s) for s in shown])
        else:
            from handoff_cli.cli.render import show_list, show_list_tree

            (show_list_tree if tree else show_list)(found, shown)
