"""What an agent's module provides: the one protocol the rest of the package asks an agent.

Each agent whose sessions handoff_cli reads has a module in this folder (``omp``, ``pi``)
holding every rule of its own, and an object implementing ``Agent`` that the registry
(``handoff_cli.agents``) lists by name. What the agents share (their tree format, the walk
that builds a context, the catalog) lives in the shared modules and calls these methods where
the agents differ.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, NoReturn, Protocol

from handoff_cli.errors import InPlaceRefusedError
from handoff_cli.sessions.files import Change, Held
from handoff_cli.sessions.jsonl import parse_bounded, parse_line
from handoff_cli.sessions.session import (
    BOM,
    Entry,
    MessageFacts,
    Record,
    Session,
    file_lines,
    open_regular,
)

if TYPE_CHECKING:
    from handoff_cli.agents.context import Context

Message = dict[str, Any]
"""A message in the agent's in-memory shape (what ``show --context --json`` prints)."""
LINEAGE_TYPE = "handoff-cli"
"""Our line in a session of an agent with a format of its own, which the agent skips as a type
it does not know, naming the session a new one was handed off from (``parentSession``: its
path), as the pi family's header does."""


class Usage(NamedTuple):
    """The tokens an answer took, as its record says them."""

    input_tokens: int = 0
    output_tokens: int = 0


Mask = Callable[[Any], Any]
"""What masks the secrets in a value (a string, or dicts and lists of them) we write."""


class Compacted(NamedTuple):
    """What an in-place handoff appends: the agent's compaction, holding the document."""

    lines: list[Entry]
    entry_id: str | None
    """The id of the compaction appended (None: the agent's lines have none, as Codex's)."""
    tokens_after: int
    """The agent's estimate of the context from then on (its messages, without the system
    prompt and tools)."""


class Compaction(Protocol):
    """Where an in-place handoff compacts a branch, as the agent compacts a session itself
    (``Agent.compaction``), and how it writes that."""

    @property
    def first_kept_entry_id(self) -> str | None:
        """The first entry kept as it is (None: the agent replaces the whole history)."""

    @property
    def tokens_before(self) -> int | float:
        """The context's size before, as the agent counts it (NaN where a usage it adds up
        lacks a count, as JavaScript's arithmetic gives it: written as null)."""

    @property
    def kept(self) -> int:
        """How many entries of the branch, from the first kept one to the leaf, stay as they
        are."""

    def write(self, document: str, at: str, mask: Mask) -> Compacted:
        """The compaction holding ``document`` (its ``<files>`` block at its end, its secrets
        masked), made at ``at``; what it adds of the session's own (paths, say) is masked by
        ``mask``."""


class Opening(NamedTuple):
    """What a session's first lines tell ``list``, in a format of an agent's own."""

    header: Entry
    """The header ``load`` makes of them: the id, the first time and cwd, our lineage."""
    first_request: str | None
    """The first user request, on one line (``Session.title``'s rule)."""
    starts_from_handoff: bool
    """Its first message is a handoff document: it was handed off to."""
    own_words: bool = True
    """The request is the person's own words, not a template's (``said.TitleRequest``): read
    on where the lines read hold none."""


class KeptMessage(NamedTuple):
    """A message of the branch kept verbatim after a new session's document
    (``--keep-recent``)."""

    record: Record
    message: Message
    """As the context sends it, in the shared shape (pi's roles and blocks)."""
    starts_turn: bool
    """It opens a turn, by the rules of the agent that read it (``Agent.starts_turn``)."""
    changed: bool = False
    """The context sends it otherwise than it is stored (oh-my-pi's unanswered tool calls
    taken out, pi's ``context_edit``)."""


class Kept(NamedTuple):
    """The most recent whole turns of a branch, to follow the document in the new session."""

    agent: str
    """Whose rules read them, and so in whose file their records are (copied as they are into
    a file of that format)."""
    messages: tuple[KeptMessage, ...]
    shared: tuple[Message, ...]
    """The same in the shared shape, for another agent's file: an answer one message (where
    the file held it in several records), what is no turn of the conversation (a command the
    user ran, a summary, a custom message) a user's text, as a request sends it."""
    tokens: int
    """Their tokens, as a request sends them (``handoff.keep``)."""


NOTHING_KEPT = Kept("", (), (), 0)
"""No turn kept: the new session holds the document alone."""


class Glance(NamedTuple):
    """What ``list`` reads of a session file in a format of an agent's own, from its head and
    its tail (``Format.glance``)."""

    opening: Opening
    ends_with_handoff: bool
    """Its leaf is a recorded handoff (our exchange, or a compaction ours in place)."""
    entries: int
    """How many entries it holds, as ``list`` counts them."""
    size: int | None = None
    """Its bytes, where they are not its file's (a session among others in a database: its
    messages as read)."""


class Format(Protocol):
    """The storage seam: what the module of an agent with a format of its own (Claude Code's,
    Codex's, a plugin's) provides beside its ``Agent``: how its files are named, known and read,
    and what a handoff writes, which the pipeline writes under its own rules (a new session
    whole or not at all; the old one, under its lock and checked unchanged, appended to in
    whole lines or rewritten whole: ``files.Change``)."""

    NAME: str
    SUFFIX: str
    """How its session files are named (``.jsonl``): what the catalog looks at."""
    OWNS_BYTES: int
    """How much of a file's start ``owns_head`` may need."""

    def owns_head(self, head: bytes) -> bool:
        """Whether a file starting with ``head`` is in this format."""

    def is_session_name(self, name: str) -> bool:
        """Whether a file named ``name`` may be one of its sessions (what else its folders
        hold, a log or a checkpoint, is never read as one)."""

    def load(self, path: Path) -> Session:
        """The file read into the shared ``Session``."""

    def is_subagent(self, path: Path) -> bool:
        """Whether the file at ``path`` is where the agent keeps a subagent's transcript (by
        its path alone): ``list`` shows one only under its session (``--tree``)."""

    def glance(self, path: Path, head: bytes, tail: bytes, size: int, lines: int) -> Glance:
        """What the file at ``path`` (``size`` bytes, ``lines`` newlines) says of its session,
        from its first and last bytes, as ``load`` would read it: the file may be opened again
        where they do not tell (a first request on a long line)."""

    def new_uuid(self) -> str:
        """A new session's id."""

    def new_path(self, folder: Path, session_id: str) -> Path:
        """Where a session started in ``folder`` (the old one's, or the agent's for a cwd) is
        written."""

    def new_session(
        self,
        old: Session,
        new_id: str,
        parent: Path,
        model: str | None,
        wrapped: str,
        at: str,
        kept: Kept = NOTHING_KEPT,
    ) -> bytes:
        """A new session holding the handoff document ``wrapped``, handed off from ``old``
        (at ``parent``), in ``model`` ("provider/model"), then the ``kept`` messages in its
        own shapes."""

    def exchange(
        self,
        old: Session,
        leaf_id: str,
        model: str | None,
        prompt: str,
        document: str,
        usage: Usage,
        asked_at: str,
        answered_at: str,
    ) -> list[Entry]:
        """The handoff recorded in ``old`` as the agent records a turn."""

    def recorded(self, lines: list[Entry], old: Session, since: bytes) -> Change:
        """How ``lines`` (an exchange, or a compaction in place) are written to ``old``'s file,
        now that others have appended ``since`` to it (the bytes after what was read, read
        under the lock): appended, numbered on from the file's last line where the format
        numbers its lines, or the file rewritten whole (then only where ``since`` is empty)."""


class Store(Format, Protocol):
    """A format one file of which holds many sessions, each named ``<file>/<session id>``
    (opencode's database): its file is written in transactions, never whole."""

    STORE: bool

    def members(self, path: Path) -> list[Path]:
        """The sessions the file at ``path`` holds, newest first."""

    def hold(self, path: Path) -> Held:
        """The session at ``path`` held for a write: a write transaction begun (waited for a
        bounded while), to be checked unchanged and written; committed when left without
        an error, else rolled back."""

    def write_new(self, path: Path, data: bytes, held: Held | None) -> Path:
        """The new session ``new_session`` made (``data``) written at ``path``: in the
        transaction ``held`` is where it holds the same file, else in one of its own."""

    def take_back(self, path: Path) -> None:
        """A new session written by ``write_new`` removed again."""


class LineEnds(NamedTuple):
    """How a format of JSON lines tells that a file ends with a recorded handoff."""

    exchange: Callable[[list[Any]], bool]
    """Its last lines' values are our exchange."""
    compaction: Callable[[bytes], bool]
    """Its last bytes are our compaction in place (however long its line)."""


def glance_lines(
    path: Path,
    head: bytes,
    tail: bytes,
    size: int,
    entries: int,
    opening: Callable[[Path, Iterable[Any]], Opening],
    ends: LineEnds,
) -> Glance:
    """``Format.glance`` of a format of JSON lines: ``opening`` made of the values of the
    head's lines (the file read again, a line at a time, where they hold no request in the
    person's own words), ``ends`` told the values of the tail's whole lines, and its bytes."""
    found = opening(path, _parsed(io.BytesIO(head.removeprefix(BOM))))
    if not found.own_words and len(head) < size:
        with open_regular(path) as file:  # a long line read once, by its offset
            lines = file_lines(file, path)
            raws = (raw.removeprefix(BOM) if number == 1 else raw for number, _, raw in lines)
            found = opening(path, _parsed(raws))
    ended = io.BytesIO(tail).readlines()
    values = _values(ended if len(tail) == size else ended[1:])
    return Glance(found, ends.exchange(values) or ends.compaction(tail), entries)


def _parsed(lines: Iterable[bytes]) -> Iterator[Any]:
    """The value of each line, None for one that does not parse (a line cut by the head's end
    is no JSON object); its long texts as their heads and tails (``parse_bounded``): a first
    request of 100 MB names a session by its start."""
    for raw in lines:
        try:
            yield parse_bounded(raw)
        except ValueError:
            yield None


def _values(lines: Iterable[bytes]) -> list[Any]:
    """The values of the lines that parse."""
    values = []
    for raw in lines:
        try:
            values.append(parse_line(raw))
        except ValueError:
            continue
    return values


class Agent(Protocol):
    """One agent's rules."""

    @property
    def name(self) -> str:
        """What ``--agent`` calls it."""

    @property
    def title(self) -> str:
        """What people call it."""

    @property
    def title_slot(self) -> bool:
        """Whether a session it starts may open with a title slot (``sessions.files``)."""

    # --- where its sessions are, and how a file is known as its --------------------------------

    def sessions_folders(self, env: Mapping[str, str], home: Path, cwd: Path) -> list[Path]:
        """The folders it keeps sessions in, by the environment it would see."""

    def project_folder(self, env: Mapping[str, str], home: Path, cwd: str) -> Path | None:
        """The folder it starts a new session of ``cwd`` in (None: none it would name)."""

    def wrote_header(self, session: Session) -> bool:
        """Whether only this agent writes ``session``'s header (or title slot) as it is."""

    @property
    def roles(self) -> frozenset[str]:
        """The roles of the messages only this agent writes."""

    def wrote(self, record: Record) -> bool:
        """Whether ``record``, an entry other than a message, is one only this agent writes."""

    # --- its context ---------------------------------------------------------------------------

    def context(self, branch: list[Record]) -> Context:
        """The context it builds for ``branch`` (its ``buildSessionContext``)."""

    def compaction(self, session: Session, branch: list[Record]) -> Compaction:
        """Where an in-place handoff (``--in-place``) compacts ``branch`` (root to leaf) of
        ``session``, as the agent compacts a session itself. ``InPlaceRefusedError`` where
        the agent has no such handoff; ``AlreadyCompactedError`` or ``NothingToCompactError``
        where there is nothing to compact."""

    def loaded(self, message: Message, facts: MessageFacts) -> Message:
        """A message entry's message as the agent holds it once loaded."""

    def queued_prompt(self, entry: Entry) -> str | None:
        """The user's words an entry that is no message holds, if it is one that does: a
        prompt sent while the agent was at work, which it keeps apart (for a transcript)."""

    def starts_turn(self, record: Record, previous: Record | None) -> bool:
        """Whether ``record``, an entry its context sends (after ``previous``, None for the
        first), opens a turn: where its own compaction may cut a branch and keep whole turns
        (``--keep-recent``)."""

    def custom(self, entry: Entry) -> Message:
        """The message a ``custom_message`` entry becomes."""

    # --- what it writes: entry shapes and key orders -----------------------------------------

    def model_change(self, entry: Entry, model: str, switched: bool) -> Entry:
        """``entry`` (type, id, parent, time) completed as its ``model_change`` to ``model``
        ("provider/model"); ``switched``: the user switched models, not a session's start."""

    def thinking_change(self, entry: Entry, thinking: Entry) -> Entry:
        """``entry`` completed as its ``thinking_level_change`` to ``thinking``'s level."""

    def naming(self, entry: Entry, title: str) -> Entry:
        """``entry`` completed as the entry it writes when a session's title is set."""

    def handoff_message(self, content: str, entry_id: str, parent: str | None, at: str) -> Entry:
        """The custom message holding a handoff document that starts a new session."""

    def header_title(self, title: str) -> Entry:
        """The header fields that title a new session without a title slot ({}: none)."""

    def loses_model(self, branch: list[Record]) -> bool:
        """Whether an assistant answer appended to ``branch`` would become the session's model
        when the agent resumes it."""

    # --- how its user goes on ------------------------------------------------------------------

    @property
    def works_in_session_folder(self) -> bool:
        """Whether, resuming a session, it works in the session's own folder wherever it is
        started (oh-my-pi's and pi's ``--session``); else it works where it is started, and
        the line that says how to go on starts it in that folder."""

    def resume_command(self, session_id: str, path: Path, own_folder: bool) -> list[str]:
        """The command line (argv) that opens the session ``session_id``, kept at ``path``
        (``own_folder``: under one of the agent's own sessions folders), in the agent: what a
        handoff tells its user to run next."""


class OwnFormatAgent:
    """What every agent with a file format of its own (Claude Code, Codex) answers alike: it
    writes none of the pi family's entries (a session of it is started by its module's
    ``new_session``, and names its model, title and thinking in its own records), and its
    messages are read into the shared shape once, when loaded. Each subclass says the rest."""

    name: str
    title: str
    title_slot = False
    roles: frozenset[str] = frozenset()
    works_in_session_folder = False

    def wrote_header(self, session: Session) -> bool:
        return session.agent == self.name

    def compaction(self, session: Session, branch: list[Record]) -> Compaction:
        refuse_in_place(self.title)

    def wrote(self, record: Record) -> bool:
        return False  # its records are never in a file of the pi family's format

    def loaded(self, message: Message, facts: MessageFacts) -> Message:
        return message

    def queued_prompt(self, entry: Entry) -> str | None:
        return None

    def starts_turn(self, record: Record, previous: Record | None) -> bool:
        return record.facts is not None and record.facts.role == "user"

    def loses_model(self, branch: list[Record]) -> bool:
        return False  # the answer we record names the session's model itself

    def custom(self, entry: Entry) -> Message:
        return {"role": "custom", "content": entry.get("content")}

    def model_change(self, entry: Entry, model: str, switched: bool) -> Entry:
        raise NotImplementedError(f"{self.title} names its model in its own records")

    def thinking_change(self, entry: Entry, thinking: Entry) -> Entry:
        raise NotImplementedError(f"{self.title} keeps no thinking level entries")

    def naming(self, entry: Entry, title: str) -> Entry:
        raise NotImplementedError(f"{self.title}'s sessions are named by their first prompt")

    def handoff_message(self, content: str, entry_id: str, parent: str | None, at: str) -> Entry:
        raise NotImplementedError(f"a {self.title} session is started by its ``new_session``")

    def header_title(self, title: str) -> Entry:
        return {}


def model_name(model: str | None) -> str | None:
    """The name an answer we record in an agent's own format gives its model: the session's
    ("provider/model"), its provider taken off."""
    return model.partition("/")[2] or model if model else None


def refuse_in_place(title: str, hint: str = "") -> NoReturn:
    """``--in-place`` on a session read by the rules of an agent that has no handoff in place
    that we write."""
    raise InPlaceRefusedError(
        "--in-place writes an agent's own compaction (oh-my-pi's, Claude Code's, Codex's); "
        f"this session is read by {title}'s rules{hint}"
    )
