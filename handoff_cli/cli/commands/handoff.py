"""``handoff SESSION``: write the document, start the new session, print its id."""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from handoff_cli.agents import get
from handoff_cli.agents.base import Agent
from handoff_cli.catalog import same_folder
from handoff_cli.cli.flags import (
    AgentOpt,
    ApiBaseOpt,
    ApiKeyOpt,
    ContextWindowOpt,
    DryRunOpt,
    FocusOpt,
    HandoffJsonOpt,
    InPlaceOpt,
    KeepRecentOpt,
    LeafOpt,
    MaxDocTokensOpt,
    MinScoreOpt,
    ModelOpt,
    NoRecordOpt,
    NoRedactOpt,
    OutDirOpt,
    PriceInOpt,
    PriceOutOpt,
    PromptFileOpt,
    QuietOpt,
    RetriesOpt,
    SectionsOpt,
    SessionArg,
    SessionsDirs,
    StrictOpt,
    TimeoutOpt,
    ToOpt,
    configured,
    handoff_options,
)
from handoff_cli.cli.output import (
    Notices,
    notice,
    reader_gone,
    reader_may_leave,
    write_json,
    write_json_value,
    write_line,
)
from handoff_cli.cli.signals import take
from handoff_cli.cli.where import (
    find_session,
    folder_agent,
    own_roots,
    project_folder,
    terminal_sessions,
)
from handoff_cli.errors import (
    CancelledError,
    UsageError,
)
from handoff_cli.options import (
    AUTO,
    DEFAULT_DOCUMENT_TOKENS,
    DEFAULT_RETRIES,
    DEFAULT_TIMEOUT_S,
)

if TYPE_CHECKING:
    from handoff_cli.handoff.pipeline import HandoffResult, Target
    from handoff_cli.options import Options
from handoff_cli.cli.flags import hand_in_the_model_writer


def handoff_command(
    ctx: typer.Context,
    session: SessionArg,
    focus: FocusOpt = None,
    model: ModelOpt = None,
    api_key: ApiKeyOpt = None,
    api_base: ApiBaseOpt = None,
    leaf_id: LeafOpt = None,
    json_out: HandoffJsonOpt = False,
    quiet: QuietOpt = False,
    timeout: TimeoutOpt = DEFAULT_TIMEOUT_S,
    retries: RetriesOpt = DEFAULT_RETRIES,
    no_record: NoRecordOpt = False,
    out_dir: OutDirOpt = None,
    dry_run: DryRunOpt = False,
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
    from handoff_cli.handoff.pipeline import on_signal

    hand_in_the_model_writer()

    if in_place and (no_record or out_dir is not None or to is not None):
        raise UsageError(
            "--in-place writes to the session itself: no --no-record, no --out-dir, no --to"
        )
    options = handoff_options(**configured(ctx))
    terminals = terminal_sessions()
    try:
        # Ctrl-C and SIGTERM both cancel, except while the result is being written.
        take(on_signal)
        path = find_session(session, sessions_dirs)
        target = _target(path, agent, sessions_dirs, terminals)
        result = _hand_off(path, options, target, quiet, json_out)
    except KeyboardInterrupt:
        raise CancelledError() from None
    if result is None:
        return
    _print_result(result, json_out)
    if not quiet:
        rules = get(to or result.agent)
        notice(f"continue in {rules.title}: {_resume_line(result, rules)}")


def _target(path: Path, agent: str, sessions_dirs: list[Path] | None, terminals: Path) -> Target:
    """Where the new session goes, and what the folders say of the old one."""
    from handoff_cli.handoff.pipeline import Target

    return Target(
        folder_agent=folder_agent(path, sessions_dirs) if agent == AUTO else None,
        terminal_sessions=terminals,
        project_folder=project_folder,
        agent_folders=own_roots(),
    )


def _hand_off(
    path: Path, options: Options, target: Target, quiet: bool, json_out: bool
) -> HandoffResult | None:
    """The handoff, or with ``--dry-run`` its plan printed (and None): for people, what it
    would send, cost and write; with ``--json``, every request whole."""
    from handoff_cli.handoff.pipeline import dry_run, handoff

    if options.dry_run:
        planned = dry_run(path, options, Notices(), target=target)
        with reader_may_leave():  # each request streamed, built as it is written
            if json_out:
                write_json(planned.to_json())
            else:
                from handoff_cli.cli.render import show_dry_run

                show_dry_run(planned)
        return None
    from handoff_cli.cli.render import HandoffProgress

    with HandoffProgress(quiet=quiet) as progress:
        return handoff(path, options, progress, target=target)


def _resume_line(result: HandoffResult, agent: Agent) -> str:
    """The command to go on with, started in the session's folder where the agent works where
    it is started (Claude Code, which also finds a session by its id only from its folder;
    Codex): not where that folder is this one, or is not on this machine."""
    folder = result.cwd
    if agent.works_in_session_folder or not folder or not os.path.isdir(folder):
        return result.resume_command
    if same_folder(folder, Path.cwd()):
        return result.resume_command
    return f"cd {shlex.quote(folder)} && {result.resume_command}"


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
