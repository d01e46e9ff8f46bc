"""``handoff show SESSION``: the branch, the context, the document or the facts."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from handoff_cli.agents.choice import Choice
from handoff_cli.agents.places import Root
from handoff_cli.catalog import (
    catalog,
)
from handoff_cli.cli.flags import AgentOpt, JsonOpt, LeafOpt, SessionArg, SessionsDirs
from handoff_cli.cli.output import (
    notice,
    reader_may_leave,
    write_json,
    write_json_value,
)
from handoff_cli.cli.signals import interrupt, take
from handoff_cli.cli.where import choose, open_session, session_roots, warn_loops
from handoff_cli.errors import (
    NoDocumentHeldError,
    UsageError,
)
from handoff_cli.options import (
    AUTO,
)
from handoff_cli.sessions.session import Record, Session
from handoff_cli.sessions.tree import branch, leaf

if TYPE_CHECKING:
    pass


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
    loaded = open_session(session, sessions_dirs)
    tip = leaf(loaded, leaf_id)
    path = branch(loaded, tip)
    with reader_may_leave():  # `| head` is not a failure
        if document:
            _show_document(loaded, path, json_out)
        elif facts:
            _show_facts(loaded, path, json_out)
        elif context:
            _show_context(path, choose(loaded, agent, sessions_dirs), json_out)
        elif json_out:
            fields = {"header": loaded.header, "leaf": tip.id if tip else None}
            write_json({**fields, "branch": loaded.entries_json(path)})
        else:
            from handoff_cli.cli.render import show_branch, show_tree

            beside = loaded.path.parent  # a database's session: the database's folder
            folder = beside.parent if beside.is_file() else beside
            family = catalog([*session_roots(sessions_dirs), Root(folder)], missing_ok=True)
            summary = family.at(loaded.path)
            warn_loops(family, [summary] if summary is not None else [])
            chosen = choose(loaded, agent, sessions_dirs)  # its header row says whose and why
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
