"""The command line: parse arguments, call the library, render the result.

``handoff SESSION ...`` with no command word runs the ``handoff`` command (a default group, as
simonw/llm and sqlite-utils do it). Every error the library raises is a ``HandoffError``;
``main`` turns it into one line on stderr and its exit code, in one place.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import click
import typer
from click_default_group import DefaultGroup
from typer.core import TyperGroup

from . import __version__
from .config import (
    DEFAULT_RETRIES,
    DEFAULT_SESSIONS_DIR,
    DEFAULT_TIMEOUT_S,
    MIN_CONTEXT_WINDOW,
    Options,
)
from .errors import CancelledError, ExitCode, HandoffError, exit_codes_help
from .listing import list_sessions, resolve_session
from .output import (
    Reporter,
    notice,
    reader_gone,
    reader_may_leave,
    report_load_problems,
    write_json,
    write_json_value,
)
from .session import Session, load_session
from .tree import branch, leaf


class _Commands(DefaultGroup, TyperGroup):
    """Typer's group, with ``handoff`` as the command run when no command word is given."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, default="handoff", **kwargs)


app = typer.Typer(
    cls=_Commands,
    help="Hand a pi / oh-my-pi coding-agent session over to a fresh one.\n\n"
    "`handoff SESSION [OPTIONS]` is short for `handoff handoff SESSION [OPTIONS]`.\n\n"
    + exit_codes_help()
    + ".",
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)

SessionArg = Annotated[
    str, typer.Argument(help="A session file, or a session id (or unique prefix of one).")
]
SessionsDir = Annotated[
    Path,
    typer.Option(
        "--sessions-dir",
        envvar="HANDOFF_SESSIONS_DIR",
        help="Where session ids are looked up.",
        show_default=True,
    ),
]
LeafOpt = Annotated[
    str | None, typer.Option("--leaf", help="Entry id (or prefix) to use as the leaf.")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON on stdout.")]


def _at_least(minimum: int) -> Callable[[click.Context, click.Parameter, int | None], int | None]:
    """A bound on an option, whose error names where the value came from: the flag, or the
    environment variable."""

    def check(context: click.Context, parameter: click.Parameter, value: int | None) -> int | None:
        if value is not None and value < minimum:
            source = context.get_parameter_source(parameter.name or "")
            given = parameter.opts[0]
            if source is click.core.ParameterSource.ENVIRONMENT and parameter.envvar:
                given = f"${parameter.envvar}"
            raise click.UsageError(f"{given} must be at least {minimum:,}, not {value}", context)
        return value

    return check


def _version(value: bool) -> None:
    if value:
        print(f"handoff {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print version.")
    ] = False,
) -> None:
    """Hand a pi / oh-my-pi coding-agent session over to a fresh one."""


def _open(session: str, sessions_dir: Path) -> Session:
    loaded = load_session(resolve_session(session, sessions_dir))
    report_load_problems(loaded)
    return loaded


@app.command("handoff")
def handoff_command(
    session: SessionArg,
    focus: Annotated[
        str | None, typer.Option("--focus", help="What the document should focus on.")
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            envvar="HANDOFF_MODEL",
            help="LiteLLM model name [default: the session's own model].",
        ),
    ] = None,
    api_key: Annotated[
        str | None,
        typer.Option(
            "--api-key",
            envvar="HANDOFF_API_KEY",
            help="Key for the model's provider [default: the provider's usual variable].",
            show_envvar=True,
        ),
    ] = None,
    api_base: Annotated[
        str | None,
        typer.Option(
            "--api-base",
            envvar="HANDOFF_API_BASE",
            help="URL of an OpenAI-compatible server (vLLM, llama.cpp, Ollama's /v1).",
        ),
    ] = None,
    leaf_id: LeafOpt = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", help="No progress on stderr.")] = False,
    timeout: Annotated[
        float, typer.Option("--timeout", min=1, help="Seconds to wait for the model.")
    ] = DEFAULT_TIMEOUT_S,
    retries: Annotated[
        int, typer.Option("--retries", min=0, help="Retries on rate limits and server errors.")
    ] = DEFAULT_RETRIES,
    no_record: Annotated[
        bool, typer.Option("--no-record", help="Leave the old session untouched.")
    ] = False,
    out_dir: Annotated[
        Path | None,
        typer.Option("--out-dir", help="Folder for the new session [default: the old one's]."),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the request as JSON; call and write nothing.")
    ] = False,
    strict: Annotated[
        bool, typer.Option("--strict", help="Fail (exit 5) if the document lacks a section.")
    ] = False,
    context_window: Annotated[
        int | None,
        typer.Option(
            "--context-window",
            envvar="HANDOFF_CONTEXT_WINDOW",
            callback=_at_least(MIN_CONTEXT_WINDOW),
            help="The model's window in tokens [default: as LiteLLM knows it, else 128000].",
        ),
    ] = None,
    no_redact: Annotated[
        bool, typer.Option("--no-redact", help="Send secrets as they are (not masked).")
    ] = False,
    sessions_dir: SessionsDir = DEFAULT_SESSIONS_DIR,
) -> None:
    """Write a handoff document for SESSION and start a new session holding only it.

    Prints the new session's id (or, with --json, what was done) on stdout.
    """
    from .core import dry_run as plan_only
    from .core import handoff, on_signal

    # Ctrl-C and SIGTERM both cancel, except while the result is being written.
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    options = Options(
        focus=focus,
        model=model,
        api_key=api_key,
        api_base=api_base,
        leaf_id=leaf_id,
        timeout=timeout,
        retries=retries,
        record=not no_record,
        out_dir=out_dir,
        strict=strict,
        context_window=context_window,
        redact=not no_redact,
    )
    try:
        path = resolve_session(session, sessions_dir)
        if dry_run:
            write_json_value(plan_only(path, options, Reporter()))
            return
        from .render import HandoffProgress

        with HandoffProgress(quiet=quiet) as progress:
            result = handoff(path, options, progress)
    except KeyboardInterrupt:
        raise CancelledError() from None
    try:
        if json_out:
            write_json_value(result.to_json())
        else:
            print(result.id, flush=True)
    except BrokenPipeError:
        reader_gone()
        notice(f"new session {result.id} ({result.path}); stdout is closed")


@app.command()
def show(
    session: SessionArg,
    context: Annotated[
        bool, typer.Option("--context", help="Show the context the agent would send.")
    ] = False,
    tree: Annotated[bool, typer.Option("--tree", help="Show every branch, not just one.")] = False,
    json_out: JsonOpt = False,
    leaf_id: LeafOpt = None,
    sessions_dir: SessionsDir = DEFAULT_SESSIONS_DIR,
) -> None:
    """Show a session: its current branch (or --tree), or the context the agent would send."""
    loaded = _open(session, sessions_dir)
    tip = leaf(loaded, leaf_id)
    path = branch(loaded, tip)
    with reader_may_leave():  # `| head` is not a failure
        if context:
            from .context import build_context

            built = build_context(path)
            if json_out:
                fields = {"messages": built.serialized(), "thinkingLevel": built.thinking_level}
                write_json({**fields, "model": built.model})
            else:
                from .render import show_context

                show_context(built)
        elif json_out:
            write_json(
                {
                    "header": loaded.header,
                    "leaf": tip.id if tip else None,
                    "branch": loaded.entries(path),
                }
            )
        else:
            from .render import show_branch, show_tree

            (show_tree if tree else show_branch)(loaded, path, tip)


@app.command("list")
def list_command(
    directory: Annotated[
        Path | None,
        typer.Argument(
            envvar="HANDOFF_SESSIONS_DIR",
            help="Folder to search, recursively [default: $HANDOFF_SESSIONS_DIR or ./sessions].",
            show_default=False,
        ),
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """List the sessions under a folder, newest first."""
    sessions, skipped = list_sessions(directory or DEFAULT_SESSIONS_DIR)
    for problem in skipped:
        notice(f"warning: skipped {problem.path}: {problem.reason}")
    with reader_may_leave():
        if json_out:
            write_json_value([s.to_json() for s in sessions])
        else:
            from .render import show_list

            show_list(sessions)


def run(args: list[str]) -> int:
    """Run the program on ``args``: the one place errors become messages and exit codes."""
    try:
        command = typer.main.get_command(app)
        result = command.main(args=args, prog_name="handoff", standalone_mode=False)
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


def main() -> None:
    """Entry point of the ``handoff`` program."""
    code = run(sys.argv[1:])
    if "litellm" in sys.modules:
        # Tearing down LiteLLM's module state takes about a second at exit, and a cancel must
        # be prompt. Nothing of ours needs the teardown: every file is closed and synced.
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError):  # a reader that went away
                stream.flush()
        os._exit(code)
    sys.exit(code)
