"""``handoff rotate``: every long, idle session, each handed off once."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from handoff_cli.agents.places import expand
from handoff_cli.catalog import (
    catalog,
)
from handoff_cli.cli.flags import (
    AgentOpt,
    ApiBaseOpt,
    ApiKeyOpt,
    ContextWindowOpt,
    CwdOpt,
    FocusOpt,
    HereOpt,
    IdleOpt,
    InPlaceOpt,
    JobsOpt,
    KeepRecentOpt,
    MaxCostOpt,
    MaxDocTokensOpt,
    MinScoreOpt,
    ModelOpt,
    NoRedactOpt,
    OverTokensOpt,
    PriceInOpt,
    PriceOutOpt,
    PromptFileOpt,
    QuietOpt,
    RetriesOpt,
    RotateDirectoriesArg,
    RotateDryRunOpt,
    RotateJsonOpt,
    SectionsOpt,
    SessionsDirs,
    ShardOpt,
    StrictOpt,
    TimeoutOpt,
    configured,
    handoff_options,
)
from handoff_cli.cli.output import (
    reader_may_leave,
    write_json_value,
    write_line,
)
from handoff_cli.cli.signals import interrupt, take
from handoff_cli.cli.where import named_roots, terminal_sessions
from handoff_cli.errors import (
    UsageError,
)
from handoff_cli.options import (
    AUTO,
    DEFAULT_DOCUMENT_TOKENS,
    DEFAULT_IDLE,
    DEFAULT_JOBS,
    DEFAULT_RETRIES,
    DEFAULT_TIMEOUT_S,
    parse_duration,
    parse_shard,
)

if TYPE_CHECKING:
    from handoff_cli.catalog import Catalog
    from handoff_cli.cli.render import RotateProgress
    from handoff_cli.handoff.rotate import Outcome, RotateOptions, Rotation
from handoff_cli.cli.flags import hand_in_the_model_writer


def rotate(
    ctx: typer.Context,
    directories: RotateDirectoriesArg = None,
    over_tokens: OverTokensOpt = None,
    idle: IdleOpt = DEFAULT_IDLE,
    here: HereOpt = False,
    cwd: CwdOpt = None,
    focus: FocusOpt = None,
    model: ModelOpt = None,
    api_key: ApiKeyOpt = None,
    api_base: ApiBaseOpt = None,
    jobs: JobsOpt = DEFAULT_JOBS,
    shard: ShardOpt = None,
    dry_run: RotateDryRunOpt = False,
    max_cost: MaxCostOpt = None,
    json_out: RotateJsonOpt = False,
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
    Prints `OLD_ID NEW_ID` for each session handed off (--json: a JSON object a session)."""
    take(interrupt)
    options = _rotate_options(**configured(ctx))
    found = catalog(named_roots(ctx, directories, sessions_dirs))
    return _rotate(found, options, dry_run, max_cost, json_out, quiet)


def _rotate(
    found: Catalog,
    options: RotateOptions,
    dry_run: bool,
    max_cost: float | None,
    json_out: bool,
    quiet: bool,
) -> int | None:
    """Plan the rotation, check its budget, and (but for a dry run) run it."""
    hand_in_the_model_writer()
    from handoff_cli.cli.render import RotateProgress
    from handoff_cli.handoff.pipeline import Target
    from handoff_cli.handoff.rotate import check_budget, plan_rotation
    from handoff_cli.handoff.rotate import rotate as rotate_all

    target = Target(terminal_sessions=terminal_sessions())
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
    configuration files: ``configured``)."""
    from handoff_cli.handoff.rotate import RotateOptions

    if here and cwd is not None:
        raise UsageError("--here and --cwd both choose a directory: give one")
    try:
        idle_s = parse_duration(idle)
        shares = parse_shard(shard) if shard is not None else None
    except ValueError as error:
        raise UsageError(str(error)) from None
    return RotateOptions(
        handoff=handoff_options(**given),
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
