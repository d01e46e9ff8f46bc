"""``handoff config`` and ``handoff trust``: the settings in force, and a project's file trusted."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from handoff_cli.agents.places import expand
from handoff_cli.cli.flags import (
    ApiBaseOpt,
    FocusOpt,
    IdleOpt,
    JsonOpt,
    MaxDocTokensOpt,
    ModelOpt,
    OverTokensOpt,
    PromptFileOpt,
    SectionsOpt,
    configuration,
    say_refused,
)
from handoff_cli.cli.output import (
    notice,
    reader_may_leave,
    write_json_value,
    write_line,
)
from handoff_cli.cli.signals import interrupt, take
from handoff_cli.errors import (
    UsageError,
)
from handoff_cli.options import (
    DEFAULT_DOCUMENT_TOKENS,
    DEFAULT_IDLE,
)

if TYPE_CHECKING:
    from handoff_cli.config import Config, Origin


def config_command(
    ctx: typer.Context,
    model: ModelOpt = None,
    api_base: ApiBaseOpt = None,
    focus: FocusOpt = None,
    prompt_file: PromptFileOpt = None,
    sections: SectionsOpt = None,
    over_tokens: OverTokensOpt = None,
    idle: IdleOpt = DEFAULT_IDLE,
    max_doc_tokens: MaxDocTokensOpt = DEFAULT_DOCUMENT_TOKENS,
    json_out: JsonOpt = False,
) -> None:
    """Show the settings a handoff or a rotation here would use, and where each came from: a
    flag, its HANDOFF_* variable, the project's file (.handoff.toml, or [tool.handoff] in
    pyproject.toml, the nearest from here up), the user's
    ($XDG_CONFIG_HOME/handoff/config.toml), or the default. Its options are the handoff's
    and rotate's: what they would change. A file, or prompt file, that would stop a handoff
    stops this too (exit 2)."""
    take(interrupt)
    found = configuration(ctx)
    say_refused(found)
    found.template()  # read, as a handoff would read it
    with reader_may_leave():
        if json_out:
            write_json_value(found.to_json())
        else:
            _show_config(found)


def trust_command(
    path: Annotated[
        Path | None,
        typer.Argument(
            help="The project's file (.handoff.toml, pyproject.toml), or a folder: the "
            "nearest project file from there up. Default: from here up.",
            show_default=False,
        ),
    ] = None,
    forget: Annotated[bool, typer.Option("--forget", help="No longer trust it.")] = False,
) -> None:
    """Trust a project's file as it is now: let it choose the model server (api_base) and a
    prompt file outside the project. A change to its settings ends the trust.

    Prints the file's path."""
    take(interrupt)
    from handoff_cli import config

    where = expand(path) if path is not None else Path.cwd()
    if where.is_dir():
        found = config.project_file(where.absolute())
    else:
        found = config.read_project(where.absolute())
    if found is None:
        raise UsageError(
            f"{where}: no project file (.handoff.toml, or [tool.handoff] in "
            "pyproject.toml) there" + (" or above" if where.is_dir() else "")
        )
    config.trust(found, config.trust_path(os.environ, Path.home()), forget=forget)
    if forget:
        notice(f"{found.label}: no longer trusted")
    else:
        allowed = "; ".join(f"{key} {does}" for key, does in found.guarded.items())
        notice(f"{found.label}: trusted as it is now" + (f" ({allowed})" if allowed else ""))
    write_line(str(found.path))


CONFIG_COLUMN = 32


"""The widest a column of ``handoff config``'s view grows."""


def _show_config(found: Config) -> None:
    """The files read, then a line a setting: its value, its source, and the flag, variable
    or file that gave it."""
    from handoff_cli.config import UNSET

    user = str(found.user_path) + ("" if found.user else " (none there)")
    project = found.project.label if found.project else "none, from here up"
    if found.refused:
        project += f" (not trusted: {', '.join(r.key for r in found.refused)} left out)"
    write_line(f"project file  {project}")
    write_line(f"user file     {user}")
    write_line("")
    rows = [
        (key, _setting_text(s.value, UNSET.get(key, "")), s.origin.source, _place(s.origin))
        for key, s in found.settings.items()
    ]
    # A long value (a focus, the six sections) runs past its column rather than widen it.
    widths = [min(CONFIG_COLUMN, max(len(row[column]) for row in rows)) for column in range(3)]
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        write_line("  ".join([*cells, row[3]]).rstrip())


def _place(origin: Origin) -> str:
    """The flag, ``$VARIABLE`` or file that gave a setting, as the view shows it."""
    from handoff_cli.config import ENV

    return f"${origin.place}" if origin.source == ENV else origin.place or ""


def _setting_text(value: Any, unset: str) -> str:
    if value is None:
        return f"({unset})"
    if isinstance(value, tuple):
        return ", ".join(value)
    return str(value)
