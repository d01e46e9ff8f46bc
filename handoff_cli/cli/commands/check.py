"""``handoff check SESSION``: the quality gate on a document."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from handoff_cli.agents.places import expand
from handoff_cli.cli.flags import (
    ApiBaseOpt,
    ApiKeyOpt,
    CheckMinScoreOpt,
    DocumentOpt,
    JsonOpt,
    LeafOpt,
    ProbeModelOpt,
    RetriesOpt,
    SessionArg,
    SessionsDirs,
    TimeoutOpt,
)
from handoff_cli.cli.output import (
    notice,
    reader_may_leave,
    write_json_value,
    write_line,
)
from handoff_cli.cli.signals import interrupt, take
from handoff_cli.cli.where import open_session
from handoff_cli.errors import (
    ExitCode,
    UsageError,
    os_reason,
)
from handoff_cli.options import (
    DEFAULT_MIN_SCORE,
    DEFAULT_RETRIES,
    DEFAULT_TIMEOUT_S,
)
from handoff_cli.sessions.tree import branch, leaf

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from handoff_cli.handoff.check import Checked
    from handoff_cli.handoff.judge import Judgement
    from handoff_cli.handoff.writer import Answer
    from handoff_cli.llm.table import ChatMessage


def check(
    session: SessionArg,
    document: DocumentOpt = None,
    leaf_id: LeafOpt = None,
    min_score: CheckMinScoreOpt = DEFAULT_MIN_SCORE,
    probe_model: ProbeModelOpt = None,
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
    loaded = open_session(session, sessions_dirs)
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
    from handoff_cli.handoff.loop import run_on_loop
    from handoff_cli.llm.model import Model, resolve_model

    model = resolve_model(name, None, api_key=api_key, api_base=api_base, warn=notice)
    if not isinstance(model, Model):
        raise UsageError("--probe-model takes a model reached through LiteLLM, not extractive")
    if model.missing_keys:
        keys = " or ".join(model.missing_keys)
        raise ModelError(f"{model.name}: no credentials: set {keys}, or pass --api-key")
    notice(f"asking {model.name} the probes…")
    from handoff_cli.llm.model import acomplete

    def ask(request: list[ChatMessage]) -> Awaitable[Answer]:
        return acomplete(request, model, timeout=timeout, retries=retries)

    return run_on_loop(ajudge(checked.report, checked.document, model.name, ask))


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
