"""Views for people: a session's branch or tree, its context, and the list of sessions.

Written with rich to stdout; rich drops colour when stdout is not a terminal or ``NO_COLOR`` is
set, and lines are never wrapped, so the plain text stays greppable.
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.status import Status
from rich.text import Span, Text

from handoff_cli.agents import claude, get, names
from handoff_cli.agents.choice import Choice
from handoff_cli.agents.context import FAILED_STOP_REASONS, Context, Message
from handoff_cli.catalog import Catalog, SessionSummary, by_age
from handoff_cli.cli.output import Notices
from handoff_cli.sessions.js import UNDEFINED
from handoff_cli.sessions.jsonl import LONGEST_TEXT, dumps
from handoff_cli.sessions.session import Entry, Record, Session
from handoff_cli.sessions.tree import children, forks
from handoff_cli.text import one_line, text_of, visible

if TYPE_CHECKING:  # rotation's types; importing it (and the core) would slow `show` down
    from handoff_cli.handoff.facts import Facts
    from handoff_cli.handoff.pipeline import DryRun
    from handoff_cli.handoff.rotate import Estimate, Outcome, Totals

EXCERPT_CHARS = 90

ROLE_STYLES = {
    "user": "bold green",
    "assistant": "bold blue",
    "toolResult": "cyan",
    "bashExecution": "magenta",
    "custom": "yellow",
    "compactionSummary": "bold yellow",
    "branchSummary": "yellow",
}


def _conventions(**options: Any) -> dict[str, Any]:
    """rich's console options, with the conventions a terminal's user sets: ``NO_COLOR`` (any
    value but empty) takes away every escape, bold and dim too, which rich's own reading of it
    keeps; ``CLICOLOR_FORCE`` (but 0) styles what is not a terminal, as rich's ``FORCE_COLOR``
    does. Nothing is read as markup, emoji or a highlight."""
    plain = bool(os.environ.get("NO_COLOR"))
    if plain:
        options["color_system"] = None
    elif os.environ.get("CLICOLOR_FORCE", "0") not in ("", "0"):
        options["force_terminal"] = True
    return {"highlight": False, "emoji": False, "markup": False, **options}


class _Console(Console):
    def __init__(self, **options: Any) -> None:
        super().__init__(**_conventions(**options))

    def on_broken_pipe(self) -> None:
        # rich would exit with status 1; a reader that stops early is not a failure.
        self.quiet = True
        raise BrokenPipeError


class _View:
    """stdout for people: lines never wrapped, nothing read as markup or emoji, and what a
    terminal must not be given as it is made visible (``text.visible``), piece by styled
    piece: an escape is longer than its character, and each style stays on its own text."""

    def __init__(self) -> None:
        self._console = _Console(soft_wrap=True)

    @property
    def terminal(self) -> bool:
        """stdout is a terminal (not only styled as one: ``FORCE_COLOR``, ``CLICOLOR_FORCE``)."""
        return sys.stdout is not None and sys.stdout.isatty()

    def print(self, line: Text, fit: bool = False) -> None:
        """``line``, made visible; with ``fit``, on a terminal, cut to its width with an
        ellipsis rather than wrapped (a pipe gets it whole)."""
        shown = Text(style=line.style, end=line.end)
        edges = sorted({edge for span in line.spans for edge in (span.start, span.end)})
        for piece in line.divide(edges):  # each of its spans covers all of it
            start = len(shown)
            shown.append(visible(piece.plain))
            shown.spans.extend(Span(start, len(shown), span.style) for span in piece.spans)
        if fit and self.terminal:
            shown.truncate(self._console.width, overflow="ellipsis")
        self._console.print(shown)


def _shown(value: Any, absent: str = "?") -> str:
    """A field's value for people: text as it is, other values as JSON, absent ones marked."""
    if value is None or value is UNDEFINED:
        return absent
    return value if isinstance(value, str) else dumps(value).decode(errors="replace")


def _excerpt(text: str) -> str:
    return one_line(text, EXCERPT_CHARS)


def _human_size(size: int) -> str:
    if size < 1000:
        return f"{size} B"
    value = size / 1000
    for unit in ("kB", "MB", "GB"):
        if round(value, 1) < 1000 or unit == "GB":
            return f"{value:.1f} {unit}"
        value /= 1000
    raise AssertionError("unreachable")


def describe_message(message: Any) -> tuple[str, str]:
    """A message's role and a one-line excerpt of it, tool calls named."""
    if not isinstance(message, dict):
        return "?", ""
    role = _shown(message.get("role"))
    content = message.get("content")
    if role == "assistant":
        text = text_of(content)
        blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
        calls = [b for b in blocks if b.get("type") == "toolCall"]
        if calls and text:
            text += "  → " + ", ".join(_shown(b.get("name")) for b in calls)
        elif calls:  # the call is all there is to say: what it was given too
            text = "→ " + ", ".join(_call(b) for b in calls)
        elif not text:  # a turn of thinking alone (Claude Code writes each block a record)
            text = _thinking(blocks)
        stop = message.get("stopReason")
        if isinstance(stop, str) and stop in FAILED_STOP_REASONS:
            text = f"[{stop}] {text}"
        return role, text
    if role == "toolResult":
        flag = " (error)" if message.get("isError") else ""
        return role, f"{_shown(message.get('toolName'))}{flag}: {text_of(content)}"
    if role == "bashExecution":
        code = message.get("exitCode")
        status = f" (exit {_shown(code)})" if code not in (0, None) else ""
        command, output = _shown(message.get("command"), ""), _shown(message.get("output"), "")
        return role, f"$ {command}{status}: {output}"
    if role in ("compactionSummary", "branchSummary"):
        return role, _shown(message.get("summary"), "")
    if role == "custom":
        return role, f"{_shown(message.get('customType'), '')}: {text_of(content)}"
    return role, text_of(content)


def _call(block: Entry) -> str:
    arguments = block.get("arguments")
    given = f" {_shown(arguments)}" if arguments else ""
    return _shown(block.get("name")) + given


def _thinking(blocks: list[Entry]) -> str:
    """A turn's thinking, or that it thought where the text is not kept; "" for none."""
    thought = [b for b in blocks if b.get("type") in ("thinking", "redactedThinking")]
    if not thought:
        return ""
    texts = [b["thinking"] for b in thought if isinstance(b.get("thinking"), str)]
    said = " ".join(t for t in texts if t.strip())
    return f"thinking: {said}" if said else "thinking (redacted)"


def describe_entry(entry: Entry) -> tuple[str, str]:
    """An entry's kind and a one-line excerpt of it."""
    kind = _shown(entry.get("type"))
    if kind == "message":
        return describe_message(entry.get("message"))
    if kind == "compaction":
        tokens = entry.get("tokensBefore")
        before = f" ({tokens:,} tokens before)" if isinstance(tokens, int) else ""
        return "compaction", f"{_shown(entry.get('summary'), '')}{before}"
    if kind == "branch_summary":
        summary = _shown(entry.get("summary"), "")
        return "branch summary", f"from {_shown(entry.get('fromId'))}: {summary}"
    if kind == "custom_message":
        custom_type = _shown(entry.get("customType"))
        return "custom message", f"{custom_type}: {text_of(entry.get('content'))}"
    if kind == "model_change":
        model = entry.get("model") or (
            f"{_shown(entry.get('provider'), 'None')}/{_shown(entry.get('modelId'), 'None')}"
        )
        return "model", _shown(model)
    if kind == "thinking_level_change":
        return "thinking", _shown(entry.get("thinkingLevel"), "off")
    if kind == "label":
        label = _shown(entry.get("label"), "(removed)")
        return "label", f"{label} → {_shown(entry.get('targetId'))}"
    if kind == "session_info":
        return "name", _shown(entry.get("name"), "")
    if kind == "title_change":
        return "title", _shown(entry.get("title"), "")
    if kind == "custom":
        return "custom", _shown(entry.get("customType"), "")
    if kind == "turn_context":  # a rollout's: the model of the turns that follow
        return "turn", f"model {_shown(entry.get('model'))}"
    if isinstance(entry.get("message"), dict):  # a record of Claude Code's: its message says
        return describe_message(entry["message"])
    attachment = entry.get("attachment")
    if isinstance(attachment, dict):  # Claude Code's: what it attaches to a request
        return kind, _shown(attachment.get("type"), "")
    if kind == "system":  # Claude Code's: a compaction's boundary, a notice
        return kind, f"{_shown(entry.get('subtype'), '')}: {_shown(entry.get('content'), '')}"
    return kind, ""


def labels_of(session: Session) -> dict[str, str]:
    """The label on each entry: the latest label entry for it wins; none means removed."""
    labels: dict[str, str] = {}
    for record in session.records:
        if record.type == "label" and record.entry is not None:
            target, label = record.entry.get("targetId"), record.entry.get("label")
            if isinstance(target, str):
                if isinstance(label, str) and label:
                    labels[target] = label
                else:
                    labels.pop(target, None)
    return labels


def _entry_line(
    record: Record,
    entry: Entry,
    labels: dict[str, str],
    forks: int,
    mark: str = "",
    dated: bool = False,
) -> Text:
    shared = claude.shown_message(record, entry) if record.type == "message" else None
    if record.has_message and isinstance(entry.get("payload"), dict):
        kind, excerpt = describe_message(record.message())  # a rollout's line, read as a message
    elif shared is not None:  # a record of Claude Code's, read as the pi family's message
        kind, excerpt = describe_message(shared)
    else:
        kind, excerpt = describe_entry(entry)
    line = Text()
    line.append(mark)
    line.append(record.id, "dim")
    stamp = entry.get("timestamp")
    stamp = stamp if isinstance(stamp, str) and len(stamp) >= 19 else " " * 19
    clock = f"{stamp[:10]} {stamp[11:19]}" if dated else stamp[11:19]
    line.append(f" {clock} ", "dim")
    style = ROLE_STYLES.get(kind, "bold yellow" if kind == "compaction" else "")
    line.append(f"{kind:<14}", style)
    line.append(" " + _excerpt(excerpt))
    if record.id in labels:
        line.append(f"  [{labels[record.id]}]", "bold magenta")
    if forks > 1:
        line.append(f"  ⑂ {forks} branches", "bold red")
    return line


def _agent_row(chosen: Choice) -> str:
    return f"{get(chosen.agent).title} ({chosen.reason})"


def _header_lines(
    session: Session,
    branch: list[Record],
    tip: Record | None,
    family: Catalog | None,
    chosen: Choice | None,
) -> Iterator[Text]:
    header = session.header
    summary = family.at(session.path) if family is not None else None
    title = family.title(summary) if family is not None and summary else session.title
    rows = [
        ("session", session.id),
        ("file", str(session.path)),
        ("cwd", str(header.get("cwd", ""))),
        ("created", str(header.get("timestamp", ""))),
        ("title", title or "(none)"),
        ("parent", _parent_row(session, family, summary)),
    ]
    if family is not None and summary is not None:
        kinds = [f"{c.id} ({_kind(c)})" for c in family.children(summary)]
        rows.append(("children", ", ".join(kinds) or "(none)"))
    if chosen is not None:
        rows.append(("agent", _agent_row(chosen)))
    rows.append(
        (
            "entries",
            f"{len(session.records)} in the file, {len(branch)} on this branch, "
            f"leaf {tip.id if tip else '(none)'}",
        )
    )
    for name, value in rows:
        yield Text.assemble((f"{name:<8} ", "bold"), value)
    yield Text()


def _parent_row(session: Session, family: Catalog | None, summary: SessionSummary | None) -> str:
    named = session.parent
    if not named:
        return "(none)"
    parent = family.parent(summary) if family is not None and summary is not None else None
    if parent is None:
        return named if family is None else f"{named} (not found)"
    return f"{parent.id} ({parent.path})"


def _kind(child: SessionSummary) -> str:
    return "subagent" if child.subagent else "handoff" if child.starts_from_handoff else "fork"


_MARKS = {"subagent": "⤷ ", "handoff": "⇢ ", "fork": "⑂ "}
"""How ``list --tree`` marks a child by its kind."""


def _spans_days(branch: list[Record]) -> bool:
    days = {r.stamp[:10] for r in branch if isinstance(r.stamp, str) and len(r.stamp) >= 19}
    return len(days) > 1


def _begin(
    session: Session,
    branch: list[Record],
    tip: Record | None,
    family: Catalog | None,
    chosen: Choice | None,
) -> tuple[_View, dict[str, str], dict[str, int]]:
    """Print the session's header; return the view, the labels and the entries that fork
    (``tree.forks``)."""
    console = _View()
    for line in _header_lines(session, branch, tip, family, chosen):
        console.print(line)
    return console, labels_of(session), forks(session)


def show_branch(
    session: Session,
    branch: list[Record],
    tip: Record | None,
    family: Catalog | None = None,
    chosen: Choice | None = None,
) -> None:
    """The header (with parent and children when ``family`` is given, and the agent whose
    rules read it when ``chosen`` is), then each entry of the branch on one line; dates shown
    when the branch spans more than a day."""
    console, labels, forked = _begin(session, branch, tip, family, chosen)
    dated = _spans_days(branch)
    for record, entry in zip(branch, session.entries(branch, LONGEST_TEXT), strict=False):
        console.print(_entry_line(record, entry, labels, forked.get(record.id, 0), dated=dated))


def _tree_order(session: Session) -> Iterator[tuple[Record, int]]:
    """Every entry with its depth; a chain stays at one depth, each fork goes one deeper."""
    kids = children(session)
    roots = kids.get(None, [])
    stack = [(r, 1 if len(roots) > 1 else 0) for r in reversed(roots)]
    seen: set[str] = set()
    while stack:
        record, depth = stack.pop()
        if record.id in seen:
            continue
        seen.add(record.id)
        yield record, depth
        below = [c for c in kids.get(record.id, ()) if c is not record]
        deeper = depth + (1 if len(below) > 1 else 0)
        stack.extend((child, deeper) for child in reversed(below))


def show_tree(
    session: Session,
    branch: list[Record],
    tip: Record | None,
    family: Catalog | None = None,
    chosen: Choice | None = None,
) -> None:
    """Every branch of the tree; entries of the current branch are marked with ``*``."""
    console, labels, forked = _begin(session, branch, tip, family, chosen)
    on_branch = {r.id for r in branch}
    order = list(_tree_order(session))
    dated = _spans_days(session.records)
    entries = session.entries((record for record, _ in order), LONGEST_TEXT)
    for (record, depth), entry in zip(order, entries, strict=False):
        mark = ("* " if record.id in on_branch else "  ") + "  " * depth
        console.print(_entry_line(record, entry, labels, forked.get(record.id, 0), mark, dated))


def show_context(context: Context, chosen: Choice | None = None) -> None:
    """The messages the agent would send, one line each, after a line naming the agent (and
    why it was chosen), the model, the thinking level and the count."""
    console = _View()
    agent = _agent_row(chosen) if chosen is not None else context.agent.title
    console.print(
        Text.assemble(
            ("agent ", "bold"),
            agent,
            ("  model ", "bold"),
            context.model or "(unknown)",
            ("  thinking ", "bold"),
            _shown(context.thinking_level),
            ("  messages ", "bold"),
            str(len(context)),
        )
    )
    for number, message in enumerate(context.messages(), 1):
        console.print(_message_line(number, message))


def _message_line(number: int, message: Message) -> Text:
    role, excerpt = describe_message(message)
    return Text.assemble(
        (f"{number:>4} ", "dim"),
        (f"{role:<18}", ROLE_STYLES.get(role, "")),
        _excerpt(excerpt),
    )


class _Ids:
    """The ids of a list: each cut to one width, the longest of the shown sessions' shortest
    unique prefixes (``Catalog.short_ids``), so that every id shown is one ``show`` finds and
    the columns stay aligned; on a terminal, the unique part bold and the rest dim."""

    def __init__(self, family: Catalog, shown: list[SessionSummary]) -> None:
        self._short = family.short_ids()
        self.width = max((len(self._short.get(s.id, s.id)) for s in shown), default=0)

    def append(self, line: Text, session_id: str, style: str = "bold") -> None:
        unique = self._short.get(session_id, session_id)
        line.append(unique, style)
        line.append(session_id[len(unique) : max(self.width, len(unique))], "dim")


CWD_WIDTH = 40
"""The widest the cwd column grows; a longer folder is shown by its end."""


class _Columns:
    """The widths of ``list``'s columns for the sessions shown."""

    def __init__(self, family: Catalog, shown: list[SessionSummary]) -> None:
        self.ids = _Ids(family, shown)
        self.agent = max(map(len, names()))
        self.cwd = min(CWD_WIDTH, max((len(visible(s.cwd)) for s in shown), default=0))

    def cwd_of(self, cwd: str) -> str:
        shown = visible(cwd)
        return shown if len(shown) <= self.cwd else "…" + shown[len(shown) - self.cwd + 1 :]

    def header(self) -> Text:
        """The columns' names, for a terminal."""
        id_width = max(self.ids.width, 2)
        line = f"{'ID':<{id_width}}  {'CREATED':<19}  {'SIZE':>8}  {'AGENT':<{self.agent}}"
        return Text(f"{line}  {'CWD':<{self.cwd}}  TITLE", "bold")


def _list_line(family: Catalog, summary: SessionSummary, columns: _Columns, mark: str = "") -> Text:
    line = Text(mark)
    columns.ids.append(line, summary.id)
    line.append(f"  {summary.timestamp[:19].replace('T', ' '):<19}", "dim")
    line.append(f"  {_human_size(summary.size):>8}")
    line.append(f"  {summary.agent or '?':<{columns.agent}}", "magenta")
    line.append(f"  {columns.cwd_of(summary.cwd):<{columns.cwd}}", "cyan")
    line.append(f"  {family.title(summary) or '(untitled)'}")
    parent = family.parent(summary)
    if summary.parent_session:
        line.append("  ← ", "dim")
        if parent is not None:
            columns.ids.append(line, parent.id, "dim")
        else:
            line.append(summary.parent_session, "dim")
    if family.handed_off(summary):
        line.append("  ⇢ handed off", "green")
    return line


def show_list(family: Catalog, sessions: Iterable[SessionSummary]) -> None:
    """One line per session: id (as short as it can be and still be unique), creation time,
    size, the agent whose folder holds it (``?``: no agent's), cwd, title, where it came from,
    and whether it was handed off; on a terminal, under the columns' names and cut to its
    width."""
    console = _View()
    shown = list(sessions)
    columns = _Columns(family, shown)
    if console.terminal and shown:
        console.print(columns.header(), fit=True)
    for summary in shown:
        console.print(_list_line(family, summary, columns), fit=True)


def show_list_tree(family: Catalog, sessions: Iterable[SessionSummary]) -> None:
    """The chains: each root session, oldest first, with its handoffs (``⇢``), forks (``⑂``)
    and subagents (``⤷``)
    beneath, newest last. An only child stays in its parent's column, so a chain of handoffs
    reads down one column however long it is; a session where a loop of parents is cut is a
    root, marked ``⟲``. Drawn from a stack, not by recursion."""
    console = _View()
    shown = list(sessions)
    columns = _Columns(family, shown)
    keys = {s.key for s in shown}

    def beneath(summary: SessionSummary) -> list[SessionSummary]:
        return [c for c in family.tree_children(summary) if c.key in keys]

    def is_root(summary: SessionSummary) -> bool:
        parent = family.tree_parent(summary)
        return parent is None or parent.key not in keys

    roots = sorted(filter(is_root, shown), key=by_age)
    # Each: a session, the columns before it, its branch ("" for a root or an only child).
    stack = [(root, "", "") for root in reversed(roots)]
    while stack:
        summary, prefix, branch = stack.pop()
        if is_root(summary):
            kind = "⟲ " if family.cuts_loop(summary) else ""
        else:
            kind = _MARKS[_kind(summary)]
        console.print(_list_line(family, summary, columns, prefix + branch + kind), fit=True)
        below = beneath(summary)
        inner = prefix + {"├─ ": "│  ", "└─ ": "   "}.get(branch, "")
        if len(below) == 1:
            stack.append((below[0], inner, ""))
        else:
            last = len(below) - 1
            stack += [(c, inner, "└─ " if i == last else "├─ ") for i, c in enumerate(below)][::-1]


def show_markdown(text: str) -> None:
    """A handoff document: rendered Markdown on a terminal, the raw text otherwise (a lone
    surrogate, which UTF-8 cannot encode, as U+FFFD).

    On a terminal nothing in it becomes a hyperlink (a link shows its text and its real
    target, an image its name), and HTML is shown as the text it is: a document's first line
    as a tag would otherwise hide the whole first section."""
    console = _Console()
    if console.is_terminal:
        console.print(_document(visible(text, lines=True)))
    else:
        printable = _LONE_SURROGATE.sub("\ufffd", text)
        sys.stdout.buffer.write(printable.encode() + (b"" if text.endswith("\n") else b"\n"))
        sys.stdout.flush()


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def show_facts(facts: Facts) -> None:
    """The facts of a branch as a Markdown page (``show --facts``)."""
    show_markdown(facts_page(facts))


def facts_page(facts: Facts) -> str:
    def listed(items: Iterable[str], code: bool = False) -> str:
        lines = [f"- `{item}`" if code else f"- {item}" for item in items]
        return "\n".join(lines) or "- (none)"

    def quoted(text: str) -> str:
        return "\n".join(f"> {line}" if line else ">" for line in text.strip().splitlines())

    requests = [f"{n}.\n{quoted(r)}" for n, r in enumerate(facts.requests, 1)]
    if facts.requests_left_out:
        requests.insert(1, f"({facts.requests_left_out} more between the first and these)")
    state = "finished" if facts.finished else f"not finished: {facts.stopped or 'no request'}"
    shell = set(facts.shell_files)
    changed = [
        f"`{p}`" + (" (by a shell command)" if p in shell else "") for p in facts.modified_files
    ]
    commands = []
    for command in facts.commands:
        how = "passed" if command.ok else "failed, fixed later" if command.resolved else "failed"
        code = f", exit code {command.exit_code}" if command.exit_code and not command.ok else ""
        commands.append(f"`{command.text}`: {how}{code}")
    errors = [f"```\n{e}\n```" for e in facts.open_errors]
    parts = {
        "Requests": "\n\n".join(requests) or "- (none)",
        "State": state
        + (f"\n\nLast answer:\n{quoted(facts.last_answer)}" if facts.last_answer else ""),
        "Rules the user stated": listed(facts.rules),
        "Decisions": listed(facts.decisions),
        "Files changed": listed(changed),
        "Files read": listed(facts.read_files, code=True),
        "Paths not found": listed(facts.missing_files, code=True),
        "Commands": listed(commands),
        "Errors still open": "\n\n".join(errors) or "- (none)",
    }
    return "\n\n".join(f"## {name}\n{body}" for name, body in parts.items()) + "\n"


def _document(text: str) -> Any:
    from markdown_it import MarkdownIt
    from rich.markdown import Markdown

    rendered = Markdown(text, hyperlinks=False)
    parser = MarkdownIt("commonmark", {"html": False}).enable(["strikethrough", "table"])
    rendered.parsed = parser.parse(text)
    return rendered


class HandoffProgress(Notices):
    """The handoff's progress on stderr: live on a terminal, a line per step otherwise, and
    nothing but warnings with ``--quiet``."""

    def __init__(self, quiet: bool = False) -> None:
        self._console = Console(**_conventions(stderr=True, soft_wrap=True))
        self._quiet = quiet
        self._live = self._console.is_terminal and not quiet
        self._status: Status | None = None
        self._stage = ""
        self._started = time.monotonic()

    def __enter__(self) -> HandoffProgress:
        if self._live:
            self._status = self._console.status("loading")
            self._status.start()
        return self

    def __exit__(self, *_: object) -> None:
        if self._status is not None:
            self._status.stop()

    def stage(self, text: str) -> None:
        text = visible(text)
        self._stage = text
        if self._status is not None:
            self._status.update(text)
        elif not self._quiet:
            self._console.print(f"{text}…", style="dim")

    def streamed(self, pieces: int) -> None:
        if self._status is not None:
            elapsed = time.monotonic() - self._started
            self._status.update(f"{self._stage} · ~{pieces} tokens · {elapsed:.1f} s")

    def warn(self, text: str) -> None:
        self._console.print(visible(text, lines=True), style="yellow")


def show_dry_run(planned: DryRun) -> None:
    """What a handoff would do, for people: the writer, its window, the requests and their
    tokens, the cost, what is masked and kept, where the new session would go; then the
    document the built-in writer would write."""
    console = _View()
    requests = len(planned.requests)
    rows = [("writer", planned.writer)]
    if planned.window is not None:
        rows.append(("window", f"{planned.window:,} tokens"))
    asks = planned.document is None  # the built-in writer answers here, for nothing
    if asks:
        sizes = ", ".join(f"{r.tokens:,}" for r in planned.requests[:5])
        more = f" and {requests - 5} more" if requests > 5 else ""
        rows.append(("requests", f"{requests} ({planned.strategy}): {sizes}{more} tokens"))
        cost = planned.cost_usd
        rows.append(("cost", "price unknown" if cost is None else f"${cost:.4f} (estimated)"))
    else:
        rows.append(("requests", "none: the built-in writer answers here, at no cost"))
    rows.append(("masked", f"{planned.redacted} secrets"))
    if planned.kept is not None:
        kept = planned.kept
        rows.append(("kept", f"{len(kept.messages)} messages ({kept.tokens:,} tokens)"))
    where = planned.compaction
    if where is None:
        rows.append(("writes", f"a new session in {planned.goes_to}"))
    else:
        rows.append(("writes", f"{planned.agent}'s compaction, keeping {where.kept} entries"))
    for name, value in rows:
        console.print(Text.assemble((f"{name:<9}", "dim"), value))
    if planned.document is not None:
        console.print(Text(""))
        for line in planned.document.splitlines():
            console.print(Text(line))
    if asks:
        console.print(Text("(--json: every request, whole)", "dim"))


def show_estimates(estimates: list[Estimate], total: Totals) -> None:
    """The rotation a dry run plans: a line a session, then the totals."""
    console = _View()
    for each in estimates:
        summary = each.candidate.summary
        line = Text()
        line.append(summary.id, "bold")
        line.append(f"  ~{each.candidate.tokens:,} tokens of context  {each.candidate.writer.name}")
        requests = f"{each.requests} request{'s' * (each.requests != 1)}"
        line.append(f"  {each.strategy}: {requests}, {each.input_tokens:,} tokens in", "cyan")
        line.append(f"  {_money(each.cost_usd)}")
        line.append(f"  {summary.title or ''}", "dim")
        console.print(line)
    console.print(
        Text.assemble(
            ("total ", "bold"),
            f"{total.sessions} sessions, {total.input_tokens:,} tokens in, "
            f"~{total.output_tokens:,} out, {_money(total.cost_usd)}",
        )
    )


def _money(cost: float | None) -> str:
    return "price unknown" if cost is None else f"${cost:.4f}"


class RotateProgress(Notices):
    """A rotation's progress on stderr: a bar on a terminal (sessions, tokens, cost so far),
    else a line a session; warnings always, each once; a summary at the end."""

    def __init__(self, quiet: bool = False) -> None:
        self._console = Console(**_conventions(stderr=True, soft_wrap=True))
        self._quiet = quiet
        self._said: set[str] = set()
        self._bar: Progress | None = None
        self._task: TaskID | None = None
        self._tokens = 0
        self._cost: float | None = 0.0
        """None once a session handed off had no known price."""

    def __enter__(self) -> RotateProgress:
        return self

    def __exit__(self, *_: object) -> None:
        if self._bar is not None:
            self._bar.stop()

    def begin(self, total: int, priced: bool = True) -> None:
        """The handoffs start: ``total`` of them (``priced``: each by a writer whose prices are
        known)."""
        if not priced:
            self._cost = None
        if self._console.is_terminal and not self._quiet and total:
            self._bar = Progress(
                TextColumn("rotating"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[tokens]:,} tokens · {task.fields[cost]}"),
                TimeElapsedColumn(),
                console=self._console,
                transient=True,  # stopped, it is gone: no stale bar above what follows
            )
            cost = _money(self._cost)
            self._task = self._bar.add_task("rotate", total=total, tokens=0, cost=cost)
            self._bar.start()
        elif not self._quiet:
            self._console.print(f"rotating {total} session{'s' * (total != 1)}…", style="dim")

    def finished(self, outcome: Outcome) -> None:
        """One session's outcome."""
        from handoff_cli.handoff.rotate import FAILED, HANDED_OFF, SKIPPED

        self._tokens += outcome.tokens or 0
        if outcome.status == HANDED_OFF:
            spent = outcome.cost_usd
            self._cost = None if self._cost is None or spent is None else self._cost + spent
        if self._bar is not None and self._task is not None:
            cost = _money(self._cost)
            self._bar.update(self._task, advance=1, refresh=True, tokens=self._tokens, cost=cost)
        if self._quiet and outcome.status != FAILED:
            return
        text = f"{outcome.status.replace('_', ' ')} {outcome.id}"
        if outcome.new_id:
            text += f" → {outcome.new_id}"
        if outcome.reason:
            text += f": {one_line(outcome.reason, 200)}"
        style = {FAILED: "red", SKIPPED: "yellow"}.get(outcome.status, "")
        self._console.print(visible(text), style=style)

    @contextmanager
    def aside(self) -> Iterator[None]:
        """Room for a line on stdout: when stdout is the terminal the bar is drawn on, the bar
        is taken away while it is written, and drawn again below it (the two would share a
        line otherwise)."""
        bar = self._bar
        shared = bar is not None and sys.stdout is not None and sys.stdout.isatty()
        if bar is not None and shared:
            bar.stop()
        try:
            yield
        finally:
            if bar is not None and shared:
                bar.start()

    def warn(self, text: str) -> None:
        if text not in self._said:
            self._said.add(text)
            self._console.print(visible(text, lines=True), style="yellow")

    def summary(self, outcomes: list[Outcome], cancelled: bool) -> None:
        """The run in one line."""
        from handoff_cli.handoff.rotate import FAILED, HANDED_OFF, SKIPPED

        if self._bar is not None:
            self._bar.stop()
            self._bar = None
        counts = {status: 0 for status in (HANDED_OFF, SKIPPED, FAILED)}
        for outcome in outcomes:
            counts[outcome.status] += 1
        costs = [o.cost_usd for o in outcomes if o.status == HANDED_OFF]
        cost = _money(None if None in costs else sum(c or 0.0 for c in costs))
        line = (
            f"{counts[HANDED_OFF]} handed off, {counts[SKIPPED]} skipped, {counts[FAILED]} "
            f"failed; {self._tokens:,} tokens, {cost}"
        )
        self._console.print(("cancelled: " if cancelled else "") + line, style="bold")
