"""The options the commands share, declared once (as sqlite-utils shares its decorators), their
checks, and the ``Options`` a handoff is given from them and the configuration files."""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import click
import typer
from click.core import ParameterSource

from handoff_cli.agents import names
from handoff_cli.agents.places import expand
from handoff_cli.cli.output import (
    notice,
)
from handoff_cli.cli.where import complete_session
from handoff_cli.errors import (
    UsageError,
)
from handoff_cli.options import (
    AUTO,
    DEFAULT_MIN_SCORE,
    MIN_CONTEXT_WINDOW,
    MIN_DOCUMENT_TOKENS,
    Options,
    check_api_base,
)

if TYPE_CHECKING:
    from handoff_cli.config import Config
    from handoff_cli.handoff.prompt import Template


class AgentChoice(click.Choice[str]):
    """One of the agents registered when the command line is parsed (a plugin's too, whenever
    it was registered), or one of ``more``."""

    def __init__(self, *more: str) -> None:
        super().__init__(more)
        self.more = more

    @property
    def choices(self) -> tuple[str, ...]:
        return (*names(), *self.more)

    @choices.setter
    def choices(self, value: Any) -> None:
        """The registry says them: what ``click.Choice`` sets is ``more``."""


SessionArg = Annotated[
    str,
    typer.Argument(
        help="A session file, or a session id (or unique prefix of one).",
        autocompletion=complete_session,
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
        click_type=AgentChoice(AUTO),
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


def at_least(minimum: int) -> Callable[[click.Context, click.Parameter, int | None], int | None]:
    """A bound on an option, whose error names where the value came from."""

    def check(context: click.Context, parameter: click.Parameter, value: int | None) -> int | None:
        if value is not None and value < minimum:
            raise click.UsageError(
                f"{_given(context, parameter)} must be at least {minimum:,}, not {value}", context
            )
        return value

    return check


def finite(context: click.Context, parameter: click.Parameter, value: float | None) -> float | None:
    """The callback of every number option that takes a float: click reads ``nan``, ``inf``
    and ``-inf`` as numbers, and ``nan`` passes every range check (a cap that never fires, a
    timeout of "nan s")."""
    if value is not None and not math.isfinite(value):
        raise click.UsageError(
            f"{_given(context, parameter)} must be a finite number, not {value}", context
        )
    return value


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
        "-m",
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
        "--timeout", min=1, callback=finite, help="Seconds each answer may take, start to end."
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
        callback=at_least(MIN_CONTEXT_WINDOW),
        help="The model's window in tokens [default: as LiteLLM knows it, else 128000].",
    ),
]


MaxDocTokensOpt = Annotated[
    int,
    typer.Option(
        "--max-doc-tokens",
        envvar="HANDOFF_MAX_DOC_TOKENS",
        callback=at_least(MIN_DOCUMENT_TOKENS),
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
        callback=at_least(1),
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
        callback=finite,
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
        callback=finite,
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
        callback=finite,
        help="USD per million output tokens (with --price-in).",
    ),
]


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
        click_type=AgentChoice(),
        help="Start the new session as this agent's file, in its folder for the session's cwd "
        "[default: the session's own agent, beside it].",
        show_default=False,
    ),
]


def handoff_options(
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
    settings of the configuration files: ``configured``; the command's others are its own)
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


def configuration(ctx: click.Context) -> Config:
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


def configured(ctx: click.Context) -> dict[str, Any]:
    """The command's parameters, those a file may set as in force, and the prompt file read
    (``template``)."""
    found = configuration(ctx)
    say_refused(found)
    settings = {key: found.value(key) for key in ctx.params if key in found.settings}
    return {**ctx.params, **settings, "template": found.template()}


def say_refused(found: Config) -> None:
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


def _prices(price_in: float | None, price_out: float | None) -> tuple[float, float] | None:
    """USD a token in and out, from the prices per million given: both, or neither."""
    if price_in is None and price_out is None:
        return None
    if price_in is None or price_out is None:
        raise UsageError("--price-in and --price-out go together: give both")
    return price_in / 1e6, price_out / 1e6


# The options of one command each.
NoRecordOpt = Annotated[bool, typer.Option("--no-record", help="Leave the old session untouched.")]
OutDirOpt = Annotated[
    Path | None,
    typer.Option("--out-dir", help="Folder for the new session [default: the old one's]."),
]
DryRunOpt = Annotated[
    bool, typer.Option("--dry-run", help="Print the request as JSON; call and write nothing.")
]
RotateDirectoriesArg = Annotated[
    list[Path] | None,
    typer.Argument(help="Folders of sessions, as with --sessions-dir.", show_default=False),
]
LimitOpt = Annotated[
    int | None,
    typer.Option("--limit", "-n", min=1, help="Only the N newest sessions.", show_default=False),
]
SinceOpt = Annotated[
    str | None,
    typer.Option(
        "--since",
        help="Only the sessions written to in this long (2h, 3d) or since this date (2026-11-30).",
        show_default=False,
    ),
]
HereOpt = Annotated[
    bool, typer.Option("--here", help="Only the sessions of the current directory.")
]
CwdOpt = Annotated[Path | None, typer.Option("--cwd", help="Only the sessions of this directory.")]
JobsOpt = Annotated[int, typer.Option("--jobs", "-j", min=1, help="Handoffs in flight at once.")]
ShardOpt = Annotated[
    str | None,
    typer.Option("--shard", help="K/N: the K-th of N stable shares of the sessions (by id)."),
]
RotateDryRunOpt = Annotated[
    bool,
    typer.Option("--dry-run", help="Print the selection, plans and costs; call nothing."),
]
MaxCostOpt = Annotated[
    float | None,
    typer.Option(
        "--max-cost",
        min=0,
        callback=finite,
        help="Refuse to start (exit 6) if the estimate is over this many USD; start no "
        "more handoffs once this much is spent.",
    ),
]
RotateJsonOpt = Annotated[
    bool, typer.Option("--json", help="JSON Lines on stdout, a session a line.")
]
ListDirectoriesArg = Annotated[
    list[Path] | None,
    typer.Argument(
        help="Folders to search, recursively, as with --sessions-dir.", show_default=False
    ),
]
TreeOpt = Annotated[
    bool,
    typer.Option("--tree", help="Draw the chains: each session's handoffs, forks and subagents."),
]
ListAgentOpt = Annotated[
    str | None,
    typer.Option(
        "--agent",
        click_type=AgentChoice(),
        help="Only the sessions in this agent's folders.",
        show_default=False,
    ),
]
CacheDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--cache-dir",
        envvar="HANDOFF_CACHE_DIR",
        help="Where list remembers what it read of each file, to read only what is appended "
        "since. [default: $XDG_CACHE_HOME/handoff_cli, else ~/.cache/handoff_cli]",
        show_default=False,
    ),
]
DocumentOpt = Annotated[
    Path | None,
    typer.Option(
        "--document",
        help="Check this file (- for stdin) against the branch's facts, instead of the "
        "latest document the session holds.",
    ),
]
CheckMinScoreOpt = Annotated[
    float,
    typer.Option(
        "--min-score",
        min=0,
        max=1,
        callback=finite,
        help="Exit 5 when the document scores under this.",
    ),
]
ProbeModelOpt = Annotated[
    str | None,
    typer.Option(
        "--probe-model",
        callback=_text,
        help="Also have this LiteLLM model answer the probes from the document alone, its "
        "answers compared with the facts (the gate stays the deterministic score).",
    ),
]
HandoffJsonOpt = Annotated[bool, typer.Option("--json", help="Print the result as JSON.")]


def hand_in_the_model_writer() -> None:
    """The writer a handoff is decided by: a model through LiteLLM, or the built-in writer
    (``llm.model.resolve_model``), handed to the layer below (``handoff.writer.register``)."""
    from handoff_cli.handoff.writer import register
    from handoff_cli.llm.model import resolve_model

    register(resolve_model)
