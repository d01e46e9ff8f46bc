"""The command line: parse arguments, call the library, render the result (one module a
command in ``cli/commands/``, the options they share in ``cli/flags``, where sessions are looked
for in ``cli/where``; this module puts them together).

``handoff SESSION ...`` with no command word runs the ``handoff`` command (a default group, as
simonw/llm and sqlite-utils do it). Every error the library raises is a ``HandoffError``;
``main`` turns it into one line on stderr and its exit code, in one place.
"""

from __future__ import annotations

import contextlib
import difflib
import os
import re
import signal
import sys
import threading
from functools import cache
from typing import Annotated, Any

import click
import typer
from click.shell_completion import CompletionItem
from click_default_group import DefaultGroup
from typer.core import TyperGroup

from handoff_cli import __version__
from handoff_cli.agents import UNLOADED
from handoff_cli.cli.commands import check, config, export, handoff, listing, rotate, show
from handoff_cli.cli.numbers import ascii_numbers
from handoff_cli.cli.output import (
    notice,
    reader_may_leave,
    write_line,
)
from handoff_cli.cli.signals import settle, unanswered
from handoff_cli.cli.where import check_cwd, complete_session
from handoff_cli.errors import (
    CancelledError,
    ExitCode,
    HandoffError,
    UsageError,
    exit_codes_help,
)

_ID = re.compile(r"[0-9a-fA-F-]+")
"""What a session id or a prefix of one looks like (the agents' ids are UUIDs)."""


class _Commands(DefaultGroup, TyperGroup):
    """Typer's group, with ``handoff`` as the command run when no command word is given."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, default="handoff", **kwargs)

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command. An interrupt it did not turn into its own cancel becomes
        ``Cancelled`` here (Typer would end with 130 and no word); once the command is over,
        successful or not, signals change nothing more (``signals.settle``)."""
        try:
            try:
                return super().invoke(ctx)
            finally:
                settle()
        except KeyboardInterrupt:  # the one a signal raises: it settled them before raising
            raise CancelledError("Cancelled") from None

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """A command word, or, as ``handoff SESSION`` is the main form, a session; a word that
        is neither a file nor an id but close to a command word is taken for a mistyped one."""
        word = args[0] if args else ""
        if word == "help" and not os.path.exists(word):
            topic = self.commands.get(args[1]) if len(args) > 1 else None
            if len(args) > 1 and topic is None:
                known = ", ".join(self.commands)
                raise UsageError(f"no such command {args[1]!r} (the commands: {known})")
            help_context = topic.make_context(args[1], ["--help"], parent=ctx) if topic else ctx
            click.echo(help_context.get_help())  # `handoff help [COMMAND]`, as `--help` prints it
            raise typer.Exit()
        if word not in self.commands and not os.path.exists(word) and not _ID.fullmatch(word):
            close = difflib.get_close_matches(word, [*self.commands, "help"], n=1, cutoff=0.6)
            if close:
                raise UsageError(f"no such command {word!r}; did you mean {close[0]!r}?")
        return super().resolve_command(ctx, args)

    def shell_complete(self, ctx: click.Context, incomplete: str) -> list[CompletionItem]:
        """The command words, and, as ``handoff SESSION`` is the main form, the sessions."""
        found = super().shell_complete(ctx, incomplete)
        if incomplete.startswith("-"):
            return found
        sessions = complete_session(incomplete)
        return found + [CompletionItem(value, help=title) for value, title in sessions]


app = typer.Typer(
    cls=_Commands,
    help="Hand a coding agent's session over to a fresh one.\n\n"
    "`handoff SESSION [OPTIONS]` is short for `handoff handoff SESSION [OPTIONS]`.\n\n"
    + exit_codes_help()
    + ".",
    add_completion=True,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        with reader_may_leave():
            write_line(f"handoff {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print version.")
    ] = False,
) -> None:
    """Hand a coding agent's session over to a fresh one."""


# The commands in the order --help lists them; ``handoff`` is also the default (``_Commands``).
app.command("handoff")(handoff.handoff_command)
app.command()(show.show)
app.command("export")(export.export_command)
app.command()(check.check)
app.command("list")(listing.list_command)
app.command()(rotate.rotate)
app.command("config")(config.config_command)
app.command("trust")(config.trust_command)


@cache
def _command() -> click.Command:
    """The click command of the app, built once a process (a tenth of a short command's time):
    each run gets a context of its own."""
    return ascii_numbers(typer.main.get_command(app))


def run(args: list[str]) -> int:
    """Run the program on ``args``: the one place errors become messages and exit codes."""
    handlers = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM)}
    try:
        check_cwd()
        for named, why in UNLOADED.items():
            notice(f"note: the agent plugin {named!r} was not loaded: {why}")
        command = _command()
        result = command.main(args=args, prog_name="handoff", standalone_mode=False)
        if unanswered():  # a signal while --help or --version ran: no command took it
            raise CancelledError("Cancelled")
        return result if isinstance(result, int) else ExitCode.OK
    except HandoffError as error:
        notice(str(error))
        return error.exit_code
    except click.exceptions.NoArgsIsHelpError as error:
        notice(error.format_message())  # a bare `handoff`: the help, on stderr, as a usage error
        return ExitCode.USAGE
    except click.ClickException as error:  # bad usage, mostly
        context = getattr(error, "ctx", None)
        hint = f" (see '{context.command_path} --help')" if context is not None else ""
        notice(f"Usage error: {error.format_message()}{hint}")
        return error.exit_code
    except (click.Abort, KeyboardInterrupt):
        notice("Cancelled")
        return ExitCode.CANCELLED
    finally:
        if threading.current_thread() is threading.main_thread():
            for number, handler in handlers.items():  # as they were (in a test's process)
                if handler is not None:
                    signal.signal(number, handler)


def main() -> None:
    """Entry point of the ``handoff`` program."""
    code = run(sys.argv[1:])
    # No interpreter teardown: it puts Python's own SIGTERM back (a silent end) before the
    # process is gone, and with LiteLLM loaded it takes about a second, where a cancel must be
    # prompt. Nothing of ours needs it: every file is closed and synced.
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, AttributeError):  # gone, or never there (>&-)
            stream.flush()
    os._exit(code)
