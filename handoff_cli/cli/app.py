"""The command line: parse arguments, call the library, render the result.

``handoff SESSION ...`` with no command word runs the ``handoff`` command (a default group, as
simonw/llm and sqlite-utils do it). Every error the library raises is a ``HandoffError``;
``main`` turns it into one line on stderr and its exit code, in one place.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import click
import typer
from click.core import ParameterSource
from click.shell_completion import CompletionItem
from click_default_group import DefaultGroup
from typer.core import TyperGroup

from handoff_cli import __version__
from handoff_cli.agents import NAMES, get, load_session, omp
from handoff_cli.agents.choice import Choice, choose_agent
from handoff_cli.agents.places import Root, agent_of, expand, roots
from handoff_cli.cli.numbers import ascii_numbers
from handoff_cli.cli.output import (
    Reporter,
    notice,
    reader_gone,
    reader_may_leave,
    report_load_problems,
    write_blocks,
    write_json,
    write_json_value,
    write_line,
)
from handoff_cli.cli.signals import interrupt, settle, take, unanswered
from handoff_cli.errors import (
    CancelledError,
    ExitCode,
    ExportWriteError,
    HandoffError,
    NoDocumentHeldError,
    UsageError,
    exit_codes_help,
    os_reason,
)
from handoff_cli.options import (
    AUTO,
    DEFAULT_DOCUMENT_TOKENS,
    DEFAULT_IDLE,
    DEFAULT_JOBS,
    DEFAULT_MIN_SCORE,
    DEFAULT_RETRIES,
    DEFAULT_TIMEOUT_S,
    MIN_CONTEXT_WINDOW,
    MIN_DOCUMENT_TOKENS,
    Options,
    check_api_base,
    parse_duration,
    parse_shard,
)
from handoff_cli.sessions.catalog import (
    Catalog,
    SessionSummary,
    catalog,
    loop_warning,
    resolve_session,
    same_folder,
)
from handoff_cli.sessions.session import Record, Session
from handoff_cli.sessions.tree import branch, leaf

if TYPE_CHECKING:
    from handoff_cli.cli.render import RotateProgress
    from handoff_cli.config import Config, Origin
    from handoff_cli.handoff.check import Checked
    from handoff_cli.handoff.judge import Judgement
    from handoff_cli.handoff.pipeline import HandoffResult
    from handoff_cli.handoff.prompt import Template
    from handoff_cli.handoff.rotate import Outcome, RotateOptions, Rotation


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

    def shell_complete(self, ctx: click.Context, incomplete: str) -> list[CompletionItem]:
        """The command words, and, as ``handoff SESSION`` is the main form, the sessions."""
        found = super().shell_complete(ctx, incomplete)
        if incomplete.startswith("-"):
            return found
        sessions = _complete_session(incomplete)
        return found + [CompletionItem(value, help=title) for value, title in sessions]


app = typer.Typer(
    cls=_Commands,
    help="Hand a coding agent's session (oh-my-pi, pi, Claude Code, Codex) over to a fresh one.\n\n"
    "`handoff SESSION [OPTIONS]` is short for `handoff handoff SESSION [OPTIONS]`.\n\n"
    + exit_codes_help()
    + ".",
    add_completion=True,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _complete_session(incomplete: str) -> list[tuple[str, str]]:
    """SESSION completes to the ids of the sessions in the default folders, with titles."""
    try:
        found = catalog(_roots(None), missing_ok=True)
    except HandoffError:
        return []
    return [(s.id, found.title(s) or "") for s in found.sessions if s.id.startswith(incomplete)]


SessionArg = Annotated[
    str,
    typer.Argument(
        help="A session file, or a session id (or unique prefix of one).",
        autocompletion=_complete_session,
    ),
]
SessionsDirs = Annotated[
    list[Path] | None,
    typer.Option(
        "--sessions-dir",
        envvar="HANDOFF_SESSIONS_DIR",
        help="A folder of sessions, searched recursively; repeatable ($HANDOFF_SESSIONS_DIR: "
        "several, separated by ':'). [default: the agents' own folders, and ./sessions if "
        "it holds sessions]",
        show_default=False,
    ),
]
LeafOpt = Annotated[
    str | None, typer.Option("--leaf", help="Entry id (or prefix) to use as the leaf.")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON on stdout.")]
AgentOpt = Annotated[
    str,
    typer.Option(
        "--agent",
        envvar="HANDOFF_AGENT",
        click_type=click.Choice([*NAMES, AUTO]),
        help="Whose rules read the session: pi's, oh-my-pi's (omp), Claude Code's (claude), "
        "Codex's (codex), or auto: the agent whose folder holds it, else the one its content "
        "points to.",
    ),
]


def _given(context: click.Context, parameter: click.Parameter) -> str:
    """How an option's value was given, for its error: the flag, or the environment variable."""
    source = context.get_parameter_source(parameter.name or "")
    if source is ParameterSource.ENVIRONMENT and parameter.envvar:
        return f"${parameter.envvar}"
    return parameter.opts[0]


def _at_least(minimum: int) -> Callable[[click.Context, click.Parameter, int | None], int | None]:
    """A bound on an option, whose error names where the value came from."""

    def check(context: click.Context, parameter: click.Parameter, value: int | None) -> int | None:
        if value is not None and value < minimum:
            raise click.UsageError(
                f"{_given(context, parameter)} must be at least {minimum:,}, not {value}", context
            )
        return value

    return check


def _finite(
    context: click.Context, parameter: click.Parameter, value: float | None
) -> float | None:
    """The callback of every number option that takes a float: click reads ``nan``, ``inf``
    and ``-inf`` as numbers, and ``nan`` passes every range check (a cap that never fires, a
    timeout of "nan s")."""
    if value is not None and not math.isfinite(value):
        raise click.UsageError(
            f"{_given(context, parameter)} must be a finite number, not {value}", context
        )
    return value


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
    """Hand a coding agent's session (oh-my-pi, pi, Claude Code, Codex) over to a fresh one."""


def _roots(named: list[Path] | None) -> list[Root]:
    """The folders to search: those named, else the agents' own (see ``places``)."""
    return roots(named, os.environ, Path.home(), Path.cwd())


def _with_agent(root: Root) -> Root:
    """A folder named on the command line, as an agent's if it is under one of theirs."""
    return root if root.agent else Root(root.path, agent_of(root.path, _roots(None)))


def _find(session: str, sessions_dirs: list[Path] | None) -> Path:
    return resolve_session(session, _roots(sessions_dirs), Path.cwd())


def _open(session: str, sessions_dirs: list[Path] | None) -> Session:
    loaded = load_session(_find(session, sessions_dirs))
    report_load_problems(loaded)
    return loaded


def _text(context: click.Context, parameter: click.Parameter, value: str | None) -> str | None:
    """The callback of the options sent as text (the focus, the model, the key, the URL): the
    shell's bytes that are not UTF-8 reach Python as lone surrogates, which no request can
    carry. Refused here, as a usage error, rather than as a failed request."""
    if value is not None and any("\udc80" <= c <= "\udcff" for c in value):
        raise click.UsageError(f"{_given(context, parameter)} is not valid UTF-8 text", context)
    return value


def _api_base(context: click.Context, parameter: click.Parameter, value: str | None) -> str | None:
    """The callback of ``--api-base`` (and its variable): text (``_text``), and a server's URL
    (``options.check_api_base``), refused here rather than as that server's refusal."""
    value = _text(context, parameter, value)
    try:
        return check_api_base(value) if value is not None else None
    except ValueError as error:
        given = f"{_given(context, parameter)} {value!r}"
        raise click.UsageError(f"{given}: {error}", context) from None


FocusOpt = Annotated[
    str | None,
    typer.Option(
        "--focus",
        envvar="HANDOFF_FOCUS",
        callback=_text,
        help="What the document should focus on (sent as it is, never expanded).",
    ),
]
ModelOpt = Annotated[
    str | None,
    typer.Option(
        "--model",
        envvar="HANDOFF_MODEL",
        callback=_text,
        help="LiteLLM model name, or 'extractive' [default: the session's own model].",
    ),
]
ApiKeyOpt = Annotated[
    str | None,
    typer.Option(
        "--api-key",
        envvar="HANDOFF_API_KEY",
        callback=_text,
        help="Key for the model's provider [default: the provider's usual variable].",
        show_envvar=True,
    ),
]
ApiBaseOpt = Annotated[
    str | None,
    typer.Option(
        "--api-base",
        envvar="HANDOFF_API_BASE",
        callback=_api_base,
        help="URL of an OpenAI-compatible server (vLLM, llama.cpp, Ollama's /v1).",
    ),
]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="No progress on stderr.")]
TimeoutOpt = Annotated[
    float,
    typer.Option(
        "--timeout", min=1, callback=_finite, help="Seconds each answer may take, start to end."
    ),
]
RetriesOpt = Annotated[
    int, typer.Option("--retries", min=0, help="Retries on rate limits and server errors.")
]
StrictOpt = Annotated[
    bool, typer.Option("--strict", help="Fail (exit 5) if the document lacks a section.")
]
ContextWindowOpt = Annotated[
    int | None,
    typer.Option(
        "--context-window",
        envvar="HANDOFF_CONTEXT_WINDOW",
        callback=_at_least(MIN_CONTEXT_WINDOW),
        help="The model's window in tokens [default: as LiteLLM knows it, else 128000].",
    ),
]
MaxDocTokensOpt = Annotated[
    int,
    typer.Option(
        "--max-doc-tokens",
        envvar="HANDOFF_MAX_DOC_TOKENS",
        callback=_at_least(MIN_DOCUMENT_TOKENS),
        help="Cap of the document in tokens: the built-in writer's limit, a model's guidance.",
    ),
]
PromptFileOpt = Annotated[
    Path | None,
    typer.Option(
        "--prompt-file",
        envvar="HANDOFF_PROMPT_FILE",
        help="A file of your own handoff prompt, in place of the six sections' instructions; "
        "{focus} in it is replaced by the focus (else the focus is appended). [default: the "
        "built-in prompt]",
        show_default=False,
    ),
]
SectionsOpt = Annotated[
    str | None,
    typer.Option(
        "--sections",
        envvar="HANDOFF_SECTIONS",
        help="The sections the prompt file asks for, separated by commas: the document is "
        "checked for them. [default: the six]",
        show_default=False,
    ),
]
OverTokensOpt = Annotated[
    int | None,
    typer.Option(
        "--over-tokens",
        envvar="HANDOFF_OVER_TOKENS",
        callback=_at_least(1),
        help="Hand off a session whose context is over this many tokens "
        "[default: 80% of the model's window].",
    ),
]
IdleOpt = Annotated[
    str,
    typer.Option(
        "--idle",
        envvar="HANDOFF_IDLE",
        help="Only sessions not written to for this long (30s, 10m, 2h, 1d).",
    ),
]
NoRedactOpt = Annotated[
    bool, typer.Option("--no-redact", help="Send secrets as they are (not masked).")
]
PriceInOpt = Annotated[
    float | None,
    typer.Option(
        "--price-in",
        envvar="HANDOFF_PRICE_IN",
        min=0,
        callback=_finite,
        help="USD per million input tokens, for a model LiteLLM has no price for (with "
        "--price-out) [default: LiteLLM's price table].",
    ),
]
MinScoreOpt = Annotated[
    float | None,
    typer.Option(
        "--min-score",
        envvar="HANDOFF_MIN_SCORE",
        min=0,
        max=1,
        callback=_finite,
        help="Refuse (exit 5, nothing written) a document the probes score under this, after "
        f"one repair request (handoff check; {DEFAULT_MIN_SCORE} advised) [default: none refused].",
        show_default=False,
    ),
]
PriceOutOpt = Annotated[
    float | None,
    typer.Option(
        "--price-out",
        envvar="HANDOFF_PRICE_OUT",
        min=0,
        callback=_finite,
        help="USD per million output tokens (with --price-in).",
    ),
]


def _options(
    *,
    focus: str | None,
    model: str | None,
    api_key: str | None,
    api_base: str | None,
    timeout: float,
    retries: int,
    strict: bool,
    context_window: int | None,
    max_doc_tokens: int,
    no_redact: bool,
    agent: str,
    in_place: bool,
    price_in: float | None,
    price_out: float | None,
    min_score: float | None = None,
    to: str | None = None,
    keep_recent: int = 0,
    leaf_id: str | None = None,
    no_record: bool = False,
    out_dir: Path | None = None,
    dry_run: bool = False,
    template: Template | None = None,
    **others: Any,
) -> Options:
    """What the user said to ``handoff`` or ``rotate`` (their flags, ``ctx.params``, with the
    settings of the configuration files: ``_configured``; the command's others are its own)
    as the ``Options`` of each handoff."""
    if in_place and keep_recent:
        raise UsageError(
            "--keep-recent keeps turns after a new session's document; --in-place keeps the "
            "most recent turns by oh-my-pi's own rule: give one"
        )
    return Options(
        focus=focus,
        model=model,
        api_key=api_key,
        api_base=api_base,
        leaf_id=leaf_id,
        timeout=timeout,
        retries=retries,
        record=not no_record,
        out_dir=_out_dir(expand(out_dir)) if out_dir is not None else None,
        strict=strict,
        context_window=context_window,
        max_doc_tokens=max_doc_tokens,
        redact=not no_redact,
        agent=agent,
        in_place=in_place,
        prices=_prices(price_in, price_out),
        min_score=min_score,
        to=to,
        keep_recent=keep_recent,
        dry_run=dry_run,
        template=template,
    )


def _configuration(ctx: click.Context) -> Config:
    """The settings in force (``handoff_cli.config``): each of the command's options that a
    file may set as its flag or its variable gave it, else as the files give it, else its
    default."""
    from handoff_cli import config

    given: dict[str, config.Setting] = {}
    for parameter in ctx.command.params:
        key = parameter.name or ""
        if key not in config.KEYS:
            continue
        source = ctx.get_parameter_source(key)
        if source is ParameterSource.ENVIRONMENT:
            origin = config.Origin(config.ENV, str(parameter.envvar))
        elif source is ParameterSource.COMMANDLINE:
            origin = config.Origin(config.FLAG, parameter.opts[0])
        else:
            continue
        value = ctx.params[key]
        value = expand(value) if isinstance(value, Path) else value
        given[key] = config.given_setting(key, value, origin)
    return config.load(given, Path.cwd(), os.environ, Path.home())


def _configured(ctx: click.Context) -> dict[str, Any]:
    """The command's parameters, those a file may set as in force, and the prompt file read
    (``template``)."""
    found = _configuration(ctx)
    _say_refused(found)
    settings = {key: found.value(key) for key in ctx.params if key in found.settings}
    return {**ctx.params, **settings, "template": found.template()}


def _say_refused(found: Config) -> None:
    """A line for each setting of the project's file left out, untrusted."""
    for refused in found.refused:
        label = found.project.label if found.project else "the project's file"
        notice(
            f"note: {label}: {refused.key} left out: it {refused.does}, and this project's "
            "file is not trusted (`handoff trust` here, once you have read it)"
        )


def _out_dir(folder: Path) -> Path:
    """``--out-dir``: made if missing, as ``mkdir`` makes one, in a folder that exists; a
    mistyped path is not made whole."""
    parent = folder.absolute().parent
    if not folder.exists() and not parent.exists():
        raise UsageError(f"--out-dir {folder}: {parent} does not exist (make it first)")
    return folder


def _terminal_sessions() -> Path:
    """oh-my-pi's folder of terminal pointers, which a handoff moves to the new session."""
    return omp.terminal_sessions(os.environ, Path.home())


def _prices(price_in: float | None, price_out: float | None) -> tuple[float, float] | None:
    """USD a token in and out, from the prices per million given: both, or neither."""
    if price_in is None and price_out is None:
        return None
    if price_in is None or price_out is None:
        raise UsageError("--price-in and --price-out go together: give both")
    return price_in / 1e6, price_out / 1e6


InPlaceOpt = Annotated[
    bool,
    typer.Option(
        "--in-place",
        help="As the agent compacts a session itself (oh-my-pi's /handoff, Claude Code's and "
        "Codex's /compact): append a compaction holding the document to the same session, "
        "keeping the most recent messages (Claude Code: none; Codex: the user's); no new "
        "session.",
    ),
]


KeepRecentOpt = Annotated[
    int,
    typer.Option(
        "--keep-recent",
        metavar="TOKENS",
        min=0,
        help="Keep the most recent whole turns, up to this many tokens, verbatim after the "
        "document in the new session (0: the document alone).",
    ),
]


ToOpt = Annotated[
    str | None,
    typer.Option(
        "--to",
        click_type=click.Choice(list(NAMES)),
        help="Start the new session as this agent's file, in its folder for the session's cwd "
        "[default: the session's own agent, beside it].",
        show_default=False,
    ),
]


def _project_folder(agent: str, cwd: str) -> Path | None:
    """The folder ``agent`` starts a session of ``cwd`` in, on this machine (``--to``)."""
    return get(agent).project_folder(os.environ, Path.home(), cwd)


def _folder_agent(path: Path, sessions_dirs: list[Path] | None) -> str | None:
    """The agent whose sessions folder holds ``path``, if any (for ``--agent auto``)."""
    return agent_of(path, [*_roots(sessions_dirs), *_roots(None)])


def _choose(loaded: Session, agent: str, sessions_dirs: list[Path] | None) -> Choice:
    folder = _folder_agent(loaded.path, sessions_dirs) if agent == AUTO else None
    return choose_agent(loaded, agent, folder)


@app.command("handoff")
def handoff_command(
    ctx: typer.Context,
    session: SessionArg,
    focus: FocusOpt = None,
    model: ModelOpt = None,
    api_key: ApiKeyOpt = None,
    api_base: ApiBaseOpt = None,
    leaf_id: LeafOpt = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    quiet: QuietOpt = False,
    timeout: TimeoutOpt = DEFAULT_TIMEOUT_S,
    retries: RetriesOpt = DEFAULT_RETRIES,
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
    strict: StrictOpt = False,
    context_window: ContextWindowOpt = None,
    max_doc_tokens: MaxDocTokensOpt = DEFAULT_DOCUMENT_TOKENS,
    prompt_file: PromptFileOpt = None,
    sections: SectionsOpt = None,
    no_redact: NoRedactOpt = False,
    agent: AgentOpt = AUTO,
    in_place: InPlaceOpt = False,
    to: ToOpt = None,
    keep_recent: KeepRecentOpt = 0,
    price_in: PriceInOpt = None,
    price_out: PriceOutOpt = None,
    min_score: MinScoreOpt = None,
    sessions_dirs: SessionsDirs = None,
) -> None:
    """Write a handoff document for SESSION and start a new session holding only it.

    Prints the new session's id (or, with --json, what was done) on stdout. With --in-place,
    the document becomes a compaction in SESSION itself, and its own id is printed.
    """
    from handoff_cli.handoff.pipeline import Target, handoff, on_signal
    from handoff_cli.handoff.pipeline import dry_run as plan_only

    if in_place and (no_record or out_dir is not None or to is not None):
        raise UsageError(
            "--in-place writes to the session itself: no --no-record, no --out-dir, no --to"
        )
    options = _options(**_configured(ctx))
    terminals = _terminal_sessions()
    try:
        # Ctrl-C and SIGTERM both cancel, except while the result is being written.
        take(on_signal)
        path = _find(session, sessions_dirs)
        folder = _folder_agent(path, sessions_dirs) if agent == AUTO else None
        target = Target(
            folder_agent=folder,
            terminal_sessions=terminals,
            project_folder=_project_folder,
            agent_folders=_own(),
        )
        if dry_run:
            planned = plan_only(path, options, Reporter(), target=target)
            with reader_may_leave():  # each request streamed, built as it is written
                write_json(planned.to_json())
            return
        from handoff_cli.cli.render import HandoffProgress

        with HandoffProgress(quiet=quiet) as progress:
            result = handoff(path, options, progress, target=target)
    except KeyboardInterrupt:
        raise CancelledError() from None
    _print_result(result, json_out)
    if not quiet:
        notice(f"continue in {get(to or result.agent).title}: {result.resume_command}")


def _own() -> tuple[Root, ...]:
    """The agents' own sessions folders (not those named on the command line)."""
    return tuple(root for root in _roots(None) if root.agent is not None)


def _print_result(result: HandoffResult, json_out: bool) -> None:
    try:
        if json_out:
            write_json_value(result.to_json())
        else:
            write_line(result.id)
    except BrokenPipeError:
        reader_gone()
        done = "handed off in place:" if result.in_place else "new session"
        notice(f"{done} {result.id} ({result.path}); stdout is closed")


@app.command()
def show(
    session: SessionArg,
    context: Annotated[
        bool, typer.Option("--context", help="Show the context the agent would send.")
    ] = False,
    tree: Annotated[bool, typer.Option("--tree", help="Show every branch, not just one.")] = False,
    document: Annotated[
        bool,
        typer.Option("--document", help="Show the handoff document it starts from or recorded."),
    ] = False,
    facts: Annotated[
        bool,
        typer.Option(
            "--facts",
            help="Show the facts a handoff is told (requests, files, commands, errors, done or "
            "not), masked as a handoff masks them.",
        ),
    ] = False,
    json_out: JsonOpt = False,
    leaf_id: LeafOpt = None,
    agent: AgentOpt = AUTO,
    sessions_dirs: SessionsDirs = None,
) -> None:
    """Show a session: its current branch (or --tree), the context the agent would send, its
    handoff document, or the facts a handoff is told."""
    take(interrupt)
    if document + context + facts > 1:
        raise UsageError("--document, --context and --facts show different things: give one")
    if tree and (json_out or context or document or facts):
        raise UsageError(
            "--tree shows the branches for people: not with --json, --context, --document or "
            "--facts"
        )
    loaded = _open(session, sessions_dirs)
    tip = leaf(loaded, leaf_id)
    path = branch(loaded, tip)
    with reader_may_leave():  # `| head` is not a failure
        if document:
            _show_document(loaded, path, json_out)
        elif facts:
            _show_facts(loaded, path, json_out)
        elif context:
            _show_context(path, _choose(loaded, agent, sessions_dirs), json_out)
        elif json_out:
            fields = {"header": loaded.header, "leaf": tip.id if tip else None}
            write_json({**fields, "branch": loaded.entries_json(path)})
        else:
            from handoff_cli.cli.render import show_branch, show_tree

            family = catalog([*_roots(sessions_dirs), Root(loaded.path.parent)], missing_ok=True)
            summary = family.at(loaded.path)
            _warn_loops(family, [summary] if summary is not None else [])
            chosen = _choose(loaded, agent, sessions_dirs)  # its header row says whose and why
            (show_tree if tree else show_branch)(loaded, path, tip, family, chosen)


def _show_context(path: list[Record], chosen: Choice, json_out: bool) -> None:
    from handoff_cli.agents import build_context

    if chosen.note:
        notice(chosen.note)
    built = build_context(path, chosen.agent)
    if json_out:
        write_json(built.to_json())
    else:
        from handoff_cli.cli.render import show_context

        show_context(built, chosen)


def _show_document(loaded: Session, path: list[Record], json_out: bool) -> None:
    from handoff_cli.handoff.facts import facts_of

    text = facts_of(loaded, path).previous_document
    if text is None:
        raise NoDocumentHeldError(loaded.path)
    if json_out:
        write_json_value({"id": loaded.id, "document": text})
    else:
        from handoff_cli.cli.render import show_markdown

        show_markdown(text)


def _show_facts(loaded: Session, path: list[Record], json_out: bool) -> None:
    from handoff_cli.handoff.facts import facts_of
    from handoff_cli.handoff.redact import Redactor

    found = facts_of(loaded, path).masked(Redactor().value)
    if json_out:
        write_json_value({"id": loaded.id, **found.to_json()})
    else:
        from handoff_cli.cli.render import show_facts

        show_facts(found)


@app.command("export")
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
    loaded = _open(session, sessions_dirs)
    path = branch(loaded, leaf(loaded, leaf_id))
    chosen = _choose(loaded, agent, sessions_dirs)
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


@app.command()
def check(
    session: SessionArg,
    document: Annotated[
        Path | None,
        typer.Option(
            "--document",
            help="Check this file (- for stdin) against the branch's facts, instead of the "
            "latest document the session holds.",
        ),
    ] = None,
    leaf_id: LeafOpt = None,
    min_score: Annotated[
        float,
        typer.Option(
            "--min-score",
            min=0,
            max=1,
            callback=_finite,
            help="Exit 5 when the document scores under this.",
        ),
    ] = DEFAULT_MIN_SCORE,
    probe_model: Annotated[
        str | None,
        typer.Option(
            "--probe-model",
            callback=_text,
            help="Also have this LiteLLM model answer the probes from the document alone, its "
            "answers compared with the facts (the gate stays the deterministic score).",
        ),
    ] = None,
    api_key: ApiKeyOpt = None,
    api_base: ApiBaseOpt = None,
    timeout: TimeoutOpt = DEFAULT_TIMEOUT_S,
    retries: RetriesOpt = DEFAULT_RETRIES,
    json_out: JsonOpt = False,
    sessions_dirs: SessionsDirs = None,
) -> int:
    """Probe a handoff document: what the session's facts say it must hold, and what it gets
    wrong. Prints the score (--json: every probe); exit 5 when it is under --min-score."""
    take(interrupt)
    from handoff_cli.handoff.check import check_session

    text = _read_document(document) if document is not None else None
    loaded = _open(session, sessions_dirs)
    checked = check_session(loaded, branch(loaded, leaf(loaded, leaf_id)), text)
    report = checked.report
    judgement = None
    if probe_model is not None:
        judgement = _judge(checked, probe_model, api_key, api_base, timeout, retries)
    with reader_may_leave():
        if json_out:
            fields = {"id": loaded.id, "source": checked.source, "min_score": min_score}
            found = {**fields, "passed": report.passes(min_score), **report.to_json()}
            if judgement is not None:
                found["probe_model"] = judgement.to_json()
            write_json_value(found)
        else:
            write_line(f"{report.overall:.3f}")
    if not json_out:
        from handoff_cli.cli.quality import show_check

        show_check(checked, min_score, judgement)
    return ExitCode.OK if report.passes(min_score) else ExitCode.NO_DOCUMENT


def _judge(
    checked: Checked,
    name: str,
    api_key: str | None,
    api_base: str | None,
    timeout: float,
    retries: int,
) -> Judgement:
    """The probes answered by the model ``name`` from the document alone."""
    from handoff_cli.errors import ModelError
    from handoff_cli.handoff.judge import ajudge
    from handoff_cli.llm.model import Model, resolve_model, run_on_loop

    model = resolve_model(name, None, api_key=api_key, api_base=api_base, warn=notice)
    if not isinstance(model, Model):
        raise UsageError("--probe-model takes a model reached through LiteLLM, not extractive")
    if model.missing_keys:
        keys = " or ".join(model.missing_keys)
        raise ModelError(f"{model.name}: no credentials: set {keys}, or pass --api-key")
    notice(f"asking {model.name} the probes…")
    judged = ajudge(checked.report, checked.document, model, timeout=timeout, retries=retries)
    return run_on_loop(judged)


def _read_document(path: Path) -> str:
    """The text of ``--document``: a file, or stdin for ``-`` (``check.read_document``)."""
    from handoff_cli.handoff.check import read_document

    if str(path) == "-" and sys.stdin is None:  # fd 0 closed (<&-): Python leaves no stream
        raise UsageError("--document -: stdin is closed")
    try:
        return read_document(sys.stdin.buffer if str(path) == "-" else expand(path))
    except OSError as error:
        raise UsageError(f"--document {path}: {os_reason(error)}") from None
    except ValueError as error:
        raise UsageError(f"--document {path}: {error}") from None


@app.command("list")
def list_command(
    ctx: typer.Context,
    directories: Annotated[
        list[Path] | None,
        typer.Argument(
            help="Folders to search, recursively, as with --sessions-dir.", show_default=False
        ),
    ] = None,
    here: Annotated[
        bool, typer.Option("--here", help="Only the sessions of the current directory.")
    ] = False,
    cwd: Annotated[
        Path | None, typer.Option("--cwd", help="Only the sessions of this directory.")
    ] = None,
    tree: Annotated[
        bool,
        typer.Option(
            "--tree", help="Draw the chains: each session's handoffs, forks and subagents."
        ),
    ] = False,
    agent: Annotated[
        str | None,
        typer.Option(
            "--agent",
            click_type=click.Choice(NAMES),
            help="Only the sessions in this agent's folders.",
            show_default=False,
        ),
    ] = None,
    json_out: JsonOpt = False,
    sessions_dirs: SessionsDirs = None,
    cache_dir: Annotated[
        Path | None,
        typer.Option(
            "--cache-dir",
            envvar="HANDOFF_CACHE_DIR",
            help="Where list remembers what it read of each file, to read only what is appended "
            "since. [default: $XDG_CACHE_HOME/handoff_cli, else ~/.cache/handoff_cli]",
            show_default=False,
        ),
    ] = None,
) -> None:
    """List the sessions, newest first (with --tree: chains, oldest first)."""
    take(interrupt)
    if tree and json_out:
        raise UsageError("--tree draws the chains for people; --json already has them")
    if here and cwd is not None:
        raise UsageError("--here and --cwd both choose a directory: give one")
    cache = expand(cache_dir) if cache_dir is not None else _cache_folder()
    found = catalog(_named_roots(ctx, directories, sessions_dirs), cache=cache, subagents=tree)
    for problem in found.skipped:
        notice(f"warning: skipped {problem.path}: {problem.reason}")
    project = Path.cwd() if here else (expand(cwd) if cwd is not None else None)
    shown = [
        s
        for s in found.sessions
        if (project is None or same_folder(s.cwd, project)) and agent in (None, s.agent)
    ]
    _warn_loops(found, shown)
    with reader_may_leave():
        if json_out:
            write_json_value([found.to_json(s) for s in shown])
        else:
            from handoff_cli.cli.render import show_list, show_list_tree

            (show_list_tree if tree else show_list)(found, shown)


def _cache_folder() -> Path:
    """The user's cache folder for this program, as the XDG convention places it."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    return (Path(base) if os.path.isabs(base) else Path.home() / ".cache") / "handoff_cli"


def _named_roots(
    ctx: typer.Context, directories: list[Path] | None, sessions_dirs: list[Path] | None
) -> list[Root]:
    """The folders ``list`` and ``rotate`` search: those named on the command line win over
    ``$HANDOFF_SESSIONS_DIR``; with neither, the agents' own."""
    if directories and ctx.get_parameter_source("sessions_dirs") is ParameterSource.ENVIRONMENT:
        sessions_dirs = None
    named = [*(directories or []), *(sessions_dirs or [])] or None
    return [_with_agent(root) for root in _roots(named)]


def _warn_loops(family: Catalog, shown: list[SessionSummary]) -> None:
    """Each loop of parents that the lineage of ``shown`` runs into, once."""
    loops = {id(loop): loop for s in shown if (loop := family.loop_of(s)) is not None}
    for loop in loops.values():
        notice(loop_warning(loop))


@app.command()
def rotate(
    ctx: typer.Context,
    directories: Annotated[
        list[Path] | None,
        typer.Argument(help="Folders of sessions, as with --sessions-dir.", show_default=False),
    ] = None,
    over_tokens: OverTokensOpt = None,
    idle: IdleOpt = DEFAULT_IDLE,
    here: Annotated[
        bool, typer.Option("--here", help="Only the sessions of the current directory.")
    ] = False,
    cwd: Annotated[
        Path | None, typer.Option("--cwd", help="Only the sessions of this directory.")
    ] = None,
    focus: FocusOpt = None,
    model: ModelOpt = None,
    api_key: ApiKeyOpt = None,
    api_base: ApiBaseOpt = None,
    jobs: Annotated[
        int, typer.Option("--jobs", "-j", min=1, help="Handoffs in flight at once.")
    ] = DEFAULT_JOBS,
    shard: Annotated[
        str | None,
        typer.Option("--shard", help="K/N: the K-th of N stable shares of the sessions (by id)."),
    ] = None,
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", help="Print the selection, plans and costs; call nothing."),
    ] = False,
    max_cost: Annotated[
        float | None,
        typer.Option(
            "--max-cost",
            min=0,
            callback=_finite,
            help="Refuse to start (exit 6) if the estimate is over this many USD; start no "
            "more handoffs once this much is spent.",
        ),
    ] = None,
    json_out: Annotated[
        bool, typer.Option("--json", help="JSON Lines on stdout, a session a line.")
    ] = False,
    quiet: QuietOpt = False,
    timeout: TimeoutOpt = DEFAULT_TIMEOUT_S,
    retries: RetriesOpt = DEFAULT_RETRIES,
    strict: StrictOpt = False,
    context_window: ContextWindowOpt = None,
    max_doc_tokens: MaxDocTokensOpt = DEFAULT_DOCUMENT_TOKENS,
    prompt_file: PromptFileOpt = None,
    sections: SectionsOpt = None,
    no_redact: NoRedactOpt = False,
    agent: AgentOpt = AUTO,
    in_place: InPlaceOpt = False,
    keep_recent: KeepRecentOpt = 0,
    price_in: PriceInOpt = None,
    price_out: PriceOutOpt = None,
    min_score: MinScoreOpt = None,
    sessions_dirs: SessionsDirs = None,
) -> int | None:
    """Hand off every long, idle session under the folders, each exactly once: for CI and cron.

    Prints `OLD_ID NEW_ID` for each session handed off (--json: a JSON object a session).
    """
    take(interrupt)
    from handoff_cli.cli.render import RotateProgress
    from handoff_cli.handoff.pipeline import Target
    from handoff_cli.handoff.rotate import check_budget, plan_rotation
    from handoff_cli.handoff.rotate import rotate as rotate_all

    options = _rotate_options(**_configured(ctx))
    found = catalog(_named_roots(ctx, directories, sessions_dirs))
    target = Target(terminal_sessions=_terminal_sessions())
    estimated = dry_run or max_cost is not None
    with RotateProgress(quiet=quiet) as progress:
        rotation = plan_rotation(found, options, time.time(), progress, target, estimated)
        finished = _rotation_lines(progress, json_out and not dry_run)
        for outcome in rotation.skipped:
            finished(outcome)
        if dry_run:
            _show_rotation_plan(rotation, json_out)
        check_budget(rotation.estimates, max_cost)
        if dry_run:
            return None
        priced = all(c.writer.price(0, 0) is not None for c in rotation.candidates)
        progress.begin(len(rotation.candidates), priced)
        rotated = rotate_all(rotation, options, target, finished, progress)
        progress.summary([*rotation.skipped, *rotated.outcomes], rotated.cancelled)
    return rotated.exit_code


def _rotate_options(
    *,
    over_tokens: int | None,
    idle: str,
    here: bool,
    cwd: Path | None,
    jobs: int,
    shard: str | None,
    max_cost: float | None,
    **given: Any,
) -> RotateOptions:
    """What the user said to ``rotate`` (its flags, ``ctx.params``, with the settings of the
    configuration files: ``_configured``)."""
    from handoff_cli.handoff.rotate import RotateOptions

    if here and cwd is not None:
        raise UsageError("--here and --cwd both choose a directory: give one")
    try:
        idle_s = parse_duration(idle)
        shares = parse_shard(shard) if shard is not None else None
    except ValueError as error:
        raise UsageError(str(error)) from None
    return RotateOptions(
        handoff=_options(**given),
        over_tokens=over_tokens,
        idle_s=idle_s,
        project=Path.cwd() if here else (expand(cwd) if cwd is not None else None),
        jobs=jobs,
        shard=shares,
        max_cost=max_cost,
    )


def _rotation_lines(progress: RotateProgress, json_out: bool) -> Callable[[Outcome], None]:
    """What is told of each session's outcome as it comes: a line on stdout for each handed
    off (with ``json_out``, a JSON object for each), and the progress."""

    def finished(outcome: Outcome) -> None:
        from handoff_cli.handoff.rotate import HANDED_OFF

        progress.finished(outcome)
        with reader_may_leave(), progress.aside():
            if json_out:
                write_json_value(outcome.to_json())
            elif outcome.status == HANDED_OFF:
                write_line(f"{outcome.id} {outcome.new_id}")

    return finished


def _show_rotation_plan(rotation: Rotation, json_out: bool) -> None:
    from handoff_cli.cli.render import show_estimates

    total = rotation.total
    with reader_may_leave():
        if json_out:
            write_json_value(
                {
                    "sessions": [e.to_json() for e in rotation.estimates],
                    "skipped": [o.to_json() for o in rotation.skipped],
                    "total": total.to_json(),
                }
            )
        else:
            show_estimates(rotation.estimates, total)


@app.command("config")
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
    found = _configuration(ctx)
    _say_refused(found)
    found.template()  # read, as a handoff would read it
    with reader_may_leave():
        if json_out:
            write_json_value(found.to_json())
        else:
            _show_config(found)


@app.command("trust")
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


def _check_cwd() -> None:
    # Every command looks for the current directory's sessions and settings.
    try:
        os.getcwd()
    except FileNotFoundError:
        raise UsageError("the current directory no longer exists: cd to one that does") from None


def run(args: list[str]) -> int:
    """Run the program on ``args``: the one place errors become messages and exit codes."""
    handlers = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM)}
    try:
        _check_cwd()
        command = ascii_numbers(typer.main.get_command(app))
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
