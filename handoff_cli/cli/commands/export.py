"""``handoff export SESSION``: the branch as a transcript."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import click
import typer

from handoff_cli.agents.places import expand
from handoff_cli.cli.flags import AgentOpt, LeafOpt, SessionArg, SessionsDirs
from handoff_cli.cli.output import (
    reader_may_leave,
    write_blocks,
    write_line,
)
from handoff_cli.cli.signals import interrupt, take
from handoff_cli.cli.where import choose, open_session
from handoff_cli.errors import (
    ExportWriteError,
    UsageError,
)
from handoff_cli.options import (
    AUTO,
)
from handoff_cli.sessions.tree import branch, leaf

if TYPE_CHECKING:
    pass


def export_command(
    session: SessionArg,
    format_name: Annotated[
        str | None,
        typer.Option(
            "--format",
            click_type=click.Choice(["md", "html"]),
            help="md (Markdown) or html (one self-contained page, no scripts) [default: html "
            "for an -o FILE named .html or .htm, else md].",
            show_default=False,
        ),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help="Write it to FILE, whole or not at all, and print FILE [default: stdout].",
            metavar="FILE",
        ),
    ] = None,
    no_redact: Annotated[
        bool, typer.Option("--no-redact", help="Keep secrets as they are (not masked).")
    ] = False,
    leaf_id: LeafOpt = None,
    agent: AgentOpt = AUTO,
    sessions_dirs: SessionsDirs = None,
) -> None:
    """Export SESSION's branch as a transcript to read or share: its messages, tool calls and
    thinking folded, compactions, handoffs and model changes marked; secrets masked."""
    take(interrupt)
    from handoff_cli.export import export, format_for

    target = _export_file(expand(output)) if output is not None and str(output) != "-" else None
    loaded = open_session(session, sessions_dirs)
    path = branch(loaded, leaf(loaded, leaf_id))
    chosen = choose(loaded, agent, sessions_dirs)
    made = export(loaded, path, chosen.agent, format_name or format_for(target), not no_redact)
    if target is None:
        with reader_may_leave():
            write_blocks(made)
        return
    from handoff_cli.sessions.files import write_file

    try:
        write_file(target, made)
    except OSError as error:
        raise ExportWriteError(target, error) from None
    with reader_may_leave():
        write_line(str(target))


def _export_file(path: Path) -> Path:
    """``export -o``'s file, refused before anything is read where it cannot be written whole,
    or would take a session's place."""
    if path.suffix.lower() == ".jsonl":
        raise UsageError(f"-o {path}: .jsonl names a session; an export is .md or .html")
    if path.is_dir():
        raise UsageError(f"-o {path}: is a folder; name the file to write")
    if not path.absolute().parent.is_dir():
        raise UsageError(f"-o {path}: {path.absolute().parent} is not a folder that exists")
    return path
