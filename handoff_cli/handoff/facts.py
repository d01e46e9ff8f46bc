"""What can be known exactly of a branch: one value, computed once, for every writer.

Read from the whole branch, not only the context (which a compaction has cut): the original
task, the latest substantive request, the files read and changed, the commands run and how they
ended (and whether a failure was put right later), the error still open, the rules the user
stated, the sections of the latest summary and of every branch summary, and the handoff
document the branch already holds, if any (the anchor an update starts from). The prompt gives
these to the model as a verified block, the built-in writer builds its document from them, and
the ``<files>`` block is drawn from them: no module parses text that another one rendered.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field, replace
from functools import lru_cache
from itertools import pairwise
from typing import Any

from handoff_cli.agents.codex import patched_files
from handoff_cli.agents.omp import file_operation, listed_files
from handoff_cli.handoff.document import (
    HANDOFF_TYPE,
    Sections,
    is_handoff_prompt,
    is_handoff_start,
    is_handoff_start_message,
    js_order,
    opens_session,
    sections_of,
    summarised_document,
    unwrap_document,
)
from handoff_cli.sessions.js import js_string
from handoff_cli.sessions.jsonl import dumps, parse_line
from handoff_cli.sessions.session import Entry, Record, Session, gc_paused
from handoff_cli.text import one_line, text_of

COMMAND_CHARS = 200
OUTPUT_TAIL_LINES = 12
EXIT_REACH = 1_000
"""How far from the end of a shell tool's output its exit code is looked for."""


@dataclass(frozen=True)
class Command:
    """A shell command and how it ended."""

    text: str
    """One line, at most ``COMMAND_CHARS`` characters."""
    ok: bool
    exit_code: int | None
    resolved: bool = False
    """It failed, and later the same command, or one that covers its test target, passed."""

    @property
    def inspects(self) -> bool:
        """Whether it only looked (``grep``, ``ls``, ``git status``...): no progress to report."""
        return inspects(self.text)

    @property
    def known(self) -> bool:
        """Whether its exit status is its own, not a filter's it was piped into."""
        return not piped(self.text)

    @property
    def milestone(self) -> bool:
        """Whether it tests, builds, checks, installs or commits: a step whose outcome a reader
        of the document wants to know."""
        return is_milestone(self.text)


@dataclass(frozen=True)
class Facts:
    """What the branch shows, exactly."""

    original_task: str | None = None
    """The first user request on the branch, even from before a compaction."""
    latest_request: str | None = None
    """The latest substantive request, verbatim."""
    acknowledgement: str | None = None
    """A trivial last message ("ok", "yes, do it all", an emoji) that acknowledged the latest
    request, when there is one."""
    go_ahead: bool = False
    """Whether the acknowledgement agreed to something the assistant proposed or asked, rather
    than only thanking it for an answer."""
    rules: tuple[str, ...] = ()
    """The rules the user stated in their requests, each once, in order."""
    read_files: tuple[str, ...] = ()
    """Files only read, sorted."""
    modified_files: tuple[str, ...] = ()
    """Files written or edited, sorted."""
    read_set: frozenset[str] = frozenset()
    """Every file read, modified or not: a modified one also read is marked RW."""
    commands: tuple[Command, ...] = ()
    open_error: str | None = None
    """The last failure that nothing put right: a command with its exit code and output tail,
    or a tool's error."""
    summary: Sections = ()
    """The sections of the latest compaction summary, or of the previous handoff document when
    that is newer."""
    branch_summaries: tuple[Sections, ...] = ()
    last_answer: str | None = None
    """The last assistant text: where the work stopped."""
    answered: bool = True
    """Whether the latest request has an answer."""
    previous_document: str | None = None
    """The handoff document the branch already holds: the one it starts from, or the latest
    recorded one. An update starts from it."""
    anchor: int | None = None
    """Where on the branch that document stands (an index into it)."""
    skipped: frozenset[str] = field(default_factory=frozenset)
    """Ids of our own recorded exchanges: never conversation again."""

    @property
    def notable_commands(self) -> tuple[Command, ...]:
        """The commands worth telling a model: all but those that only looked and passed."""
        return tuple(c for c in self.commands if not (c.ok and c.inspects))

    def to_json(self) -> dict[str, Any]:
        """The facts as JSON (to carry them to the built-in writer through LiteLLM)."""
        value = asdict(self)
        value["read_set"] = sorted(self.read_set)
        value["skipped"] = sorted(self.skipped)
        return value

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> Facts:
        tuples = ("rules", "read_files", "modified_files")
        fields: dict[str, Any] = {k: tuple(v) if k in tuples else v for k, v in value.items()}
        fields["read_set"] = frozenset(value.get("read_set", ()))
        fields["skipped"] = frozenset(value.get("skipped", ()))
        fields["commands"] = tuple(Command(**c) for c in value.get("commands", ()))
        fields["summary"] = tuple(tuple(s) for s in value.get("summary", ()))
        fields["branch_summaries"] = tuple(
            tuple(tuple(s) for s in b) for b in value.get("branch_summaries", ())
        )
        return cls(**fields)

    def masked(self, mask: Callable[[Any], Any]) -> Facts:
        """The facts with ``mask`` (which masks every string of a JSON-like value, in one go:
        ``Redactor.value``) applied to every text that could hold a secret."""
        texts = {
            "original_task": self.original_task,
            "latest_request": self.latest_request,
            "acknowledgement": self.acknowledgement,
            "rules": list(self.rules),
            "commands": [c.text for c in self.commands],
            "open_error": self.open_error,
            "summary": [list(s) for s in self.summary],
            "branch_summaries": [[list(s) for s in b] for b in self.branch_summaries],
            "last_answer": self.last_answer,
            "previous_document": self.previous_document,
            # Paths too: a token can be a folder's name, and the <files> block is written.
            "read_files": list(self.read_files),
            "modified_files": list(self.modified_files),
            "read_set": sorted(self.read_set),
        }
        done = mask(texts)
        return replace(
            self,
            original_task=done["original_task"],
            latest_request=done["latest_request"],
            acknowledgement=done["acknowledgement"],
            rules=tuple(done["rules"]),
            commands=tuple(
                Command(text, c.ok, c.exit_code, c.resolved)
                for c, text in zip(self.commands, done["commands"], strict=True)
            ),
            open_error=done["open_error"],
            summary=tuple((heading, body) for heading, body in done["summary"]),
            branch_summaries=tuple(
                tuple((heading, body) for heading, body in b) for b in done["branch_summaries"]
            ),
            last_answer=done["last_answer"],
            previous_document=done["previous_document"],
            read_files=tuple(done["read_files"]),
            modified_files=tuple(done["modified_files"]),
            read_set=frozenset(done["read_set"]),
        )


# --- reading the branch -----------------------------------------------------------------------


def facts_of(session: Session, branch: list[Record]) -> Facts:
    """The facts of ``branch`` (the entries from the root to the leaf) of ``session``: every
    message read again, with the cyclic GC paused as for the load."""
    reader = _Reader()
    with gc_paused(kept=False):
        for index, (record, entry) in enumerate(
            zip(branch, _entries(session, branch), strict=True)
        ):
            reader.entry(index, record, entry)
    return reader.facts()


def facts_of_messages(messages: Iterable[dict[str, Any]]) -> Facts:
    """The facts of a conversation in the agents' message shape, with no branch around it."""
    reader = _Reader()
    for index, message in enumerate(messages):
        reader.message(index, "", message)
    return reader.facts()


def facts_of_chat(messages: Iterable[dict[str, Any]]) -> Facts:
    """The facts of a conversation in OpenAI's chat shape (a caller of the built-in writer
    through LiteLLM who gave nothing else)."""
    agent: list[dict[str, Any]] = []
    for message in messages:
        role, content = message.get("role"), message.get("content")
        if role == "assistant":
            blocks: list[dict[str, Any]] = [{"type": "text", "text": text_of(content, "\n")}]
            for call in message.get("tool_calls") or []:
                function = call.get("function") or {}
                try:
                    arguments = parse_line(str(function.get("arguments", "{}")).encode())
                except ValueError:
                    arguments = {}
                blocks.append(
                    {
                        "type": "toolCall",
                        "id": call.get("id"),
                        "name": function.get("name"),
                        "arguments": arguments,
                    }
                )
            agent.append({"role": "assistant", "content": blocks})
        elif role == "tool":
            agent.append(
                {
                    "role": "toolResult",
                    "toolCallId": message.get("tool_call_id"),
                    "content": content,
                }
            )
        elif role == "user":
            agent.append({"role": "user", "content": content})
    if agent and agent[-1]["role"] == "user" and is_handoff_prompt(text_of(agent[-1]["content"])):
        agent.pop()  # the handoff prompt itself: no request
    return facts_of_messages(agent)


def _entries(session: Session, branch: list[Record]) -> Iterator[Entry | None]:
    for record in branch:
        if record.entry is not None:
            yield record.entry
        elif record.has_message:
            yield {"type": "message", "id": record.id, "message": record.message()}
        else:
            yield None  # a message the agent would not send (a superseded retry)


_ACKNOWLEDGEMENT_WORDS = frozenset(
    "ok okay k kk yes yep yeah ya sure thanks thank thx ty you go ahead do it all please pls "
    "continue proceed lgtm sounds good great perfect fine right cool nice awesome that's that is "
    "yup alright alrighty done agreed correct exactly works y ship".split()
)
_WORD = re.compile(r"[a-z']+")


def is_acknowledgement(text: str) -> bool:
    """A message that only says yes: "ok", "yes, do it all", "👍", "LGTM!"."""
    if len(text) > 60:  # before any scan: most texts are long, and only a short one says yes
        return False
    words = _WORD.findall(text.lower())
    if len(words) > 6:
        return False
    return all(word in _ACKNOWLEDGEMENT_WORDS for word in words)


_SLASH_COMMAND = re.compile(r"/[\w:-]+(\s.*)?", re.DOTALL)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_RULE = re.compile(
    r"^(?:always|never|don'?t|do not|must|only|avoid|prefer|make sure|no new|stick to|"
    r"stay within|keep (?:it|the|all|every|everything)\b)\b"
    r"|\b(?:must(?:n'?t| not)?|never|always|should(?:n'?t| not| never| always)|"
    r"(?<!\bi )(?<!\bwe )(?<!\bthey )(?:don'?t|do not))\b",
    re.IGNORECASE,
)


_RULE_WORDS = (
    "always",
    "never",
    "don",
    "do not",
    "must",
    "only",
    "avoid",
    "prefer",
    "make sure",
    "no new",
    "stick to",
    "stay within",
    "keep",
    "should",
)
"""Each of ``_RULE``'s alternatives holds one of these (lowercased): a sentence of none is no
rule."""


_PROPOSAL = re.compile(
    r"\?\s*$|\b(?:shall I|should I|want me to|would you like|do you want|let me know|ready to|"
    r"I can|I could|I'll|I will|next,? I|if you agree|okay to|ok to)\b",
    re.IGNORECASE,
)
_REMARK = re.compile(r"^(?:ok(?:ay)?|hm+|well|so|lol|haha|yeah|i think|i guess|i see)\b", re.I)


def is_rule(sentence: str) -> bool:
    """A sentence with a rule's force: not a question, not a remark ("hm, that should never
    happen")."""
    sentence = sentence.strip()
    words = sentence.split()
    if len(words) < 3 or sentence.endswith("?") or len(sentence) > 300:
        return False
    if sentence.isascii():  # lowercased, it then matches as the rule's case-blind pattern does
        lowered = sentence.lower()
        if not any(word in lowered for word in _RULE_WORDS):
            return False  # most sentences: the pattern's dozen alternatives tried at no place
    return _REMARK.match(sentence) is None and _RULE.search(sentence) is not None


_TEST_RUNNERS = (  # longer first: "npx vitest run" is a runner, not "npx vitest" with "run"
    ("npx", "vitest", "run"),
    ("pnpm", "vitest", "run"),
    ("vitest", "run"),
    ("python", "-m", "pytest"),
    ("python3", "-m", "pytest"),
    ("uv", "run", "pytest"),
    ("pytest",),
    ("npm", "test"),
    ("npm", "run", "test"),
    ("pnpm", "test"),
    ("yarn", "test"),
    ("bun", "test"),
    ("go", "test"),
    ("cargo", "test"),
    ("npx", "vitest"),
    ("npx", "jest"),
    ("vitest",),
    ("jest",),
    ("make", "test"),
    ("tox",),
    ("deno", "test"),
)


@lru_cache(maxsize=4096)  # a session runs the same few commands again and again
def runner_and_targets(command: str) -> tuple[tuple[str, ...], frozenset[str]] | None:
    """A test command's runner and the targets it names (none: the whole suite); None for a
    command that runs no tests."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    while words and "=" in words[0] and not words[0].startswith("-"):
        words = words[1:]  # VAR=value before the command
    for runner in _TEST_RUNNERS:
        if tuple(words[: len(runner)]) == runner:
            rest = words[len(runner) :]
            return runner, frozenset(w for w in rest if not w.startswith("-"))
    return None


@lru_cache(maxsize=4096)
def _core(command: str) -> str:
    """A command without what only filters its output (``2>&1 | tail -5``), spaces normalised."""
    return " ".join(re.sub(r"\s*2>&1|\s+\|\s.*$", "", command).split())


def covers(later: str, earlier: str) -> bool:
    """Whether a pass of ``later`` shows ``earlier`` to pass too: the same command, or the same
    test runner over the whole suite or over every target ``earlier`` named."""
    if _core(later) == _core(earlier):
        return True
    first, second = runner_and_targets(later), runner_and_targets(earlier)
    if first is None or second is None or first[0] != second[0]:
        return False
    return not first[1] or second[1] <= first[1]


_LOOKING = frozenset(
    "ag ack awk basename bat cat cd column command cut date df diff dirname du echo egrep fd "
    "fgrep file find grep head hexdump jq less ls more nl od printf pwd readlink realpath rg "
    "sort stat tail test tree tr true type uniq wc which xxd zgrep [ [[".split()
)
_GIT_LOOKING = frozenset("status log show diff blame grep remote rev-parse ls-files".split())
_NO_MATCH_IS_ONE = frozenset(
    "ag ack cmp diff egrep fgrep grep pgrep rg test which zgrep [ [[".split()
)
"""Programs whose exit code 1 says "no match", "different" or "false", not that they failed."""
_PREFIXES = frozenset(("sudo", "time", "nice", "env", "exec", "nohup"))
_OPERATORS = frozenset(("&&", "||", ";", "|", "|&", "&", ";;"))


@lru_cache(maxsize=4096)
def _segments(command: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The simple commands of a shell line: each with the operator before it ('' for the
    first) and its words, program first (its base name, after ``VAR=value``, ``sudo``...)."""
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        words = list(lexer)
    except ValueError:
        words = re.sub(r"(&&|\|\||[;|&])", r" \1 ", command).split()
    segments: list[tuple[str, list[str]]] = [("", [])]
    for word in words:
        if word in _OPERATORS or word in ("(", ")"):
            segments.append((word, []))
        else:
            segments[-1][1].append(word)
    programs: list[tuple[str, tuple[str, ...]]] = []
    for operator, segment in segments:
        while segment and (
            segment[0] in _PREFIXES or ("=" in segment[0] and not segment[0].startswith("-"))
        ):
            segment = segment[1:]  # VAR=value, sudo, time... before the program
        if segment:
            programs.append((operator, (segment[0].rsplit("/", 1)[-1], *segment[1:])))
    return tuple(programs)


def piped(command: str) -> bool:
    """Whether the line ends in a pipe (``npm test | tail -5``): its exit status is then the
    last filter's, which says nothing of how the command before it went."""
    segments = _segments(command)
    return bool(segments) and segments[-1][0] in ("|", "|&")


def inspects(command: str) -> bool:
    """Whether every part of ``command`` only reads: listing, searching, printing, git's views."""

    def looks(words: tuple[str, ...]) -> bool:
        program = words[0]
        targets = [after for word, after in pairwise(words) if word in (">", ">>", ">|")]
        if any(target != "/dev/null" for target in targets):
            return False  # it writes a file
        if program == "git":
            return len(words) > 1 and words[1] in _GIT_LOOKING
        if program == "sed":
            return not any(w.startswith(("-i", "--in-place")) for w in words[1:])
        return program in _LOOKING

    segments = _segments(command)
    return bool(segments) and all(looks(words) for _, words in segments)


_BUILDERS = frozenset(
    "biome bun cargo cmake deno docker dotnet eslint go gradle make mvn mypy ninja nox npm "
    "pip pnpm poetry pre-commit prettier pyright ruff tox tsc uv yarn".split()
)
_GIT_STEPS = frozenset(
    "am apply checkout cherry-pick commit merge pull push rebase reset restore revert stash "
    "switch tag".split()
)


def is_milestone(command: str) -> bool:
    """Whether some part of ``command`` runs tests, a build, a check, an install or a git step
    that changes history."""
    for _, words in _segments(command):
        program = words[0]
        if program == "git" and len(words) > 1 and words[1] in _GIT_STEPS:
            return True
        if program in _BUILDERS or runner_and_targets(" ".join(words)) is not None:
            return True
        if program.startswith("python") and words[1:3] == ("-m", "pytest"):
            return True
    return False


def _no_match(command: str, code: int | None) -> bool:
    """An exit code 1 that means "nothing found" (``grep``, ``rg``, ``diff``...): the exit
    status is the last command's in the line."""
    segments = _segments(command)
    return code == 1 and bool(segments) and segments[-1][1][0] in _NO_MATCH_IS_ONE


_ABORTED = re.compile(r"\s*(?:command )?(?:aborted|cancell?ed|interrupted)\.?\s*", re.IGNORECASE)
"""Matched whole, its white space around it (as ``str.strip`` takes it): a long output is never
copied to be stripped."""
_EXIT = re.compile(r"(?:exit(?:ed with)? code|exit status)[: ]*(-?\d+)", re.IGNORECASE)
_SHELL_TOOLS = ("bash", "shell", "exec", "run_command", "terminal")


def _exit_code(output: str) -> re.Match[str] | None:
    """Where the end of a shell tool's output says its exit code (``_EXIT``), if it does; an
    end of plain ASCII without "exit" in any case is not searched."""
    start = max(0, len(output) - EXIT_REACH)
    end = output[start:]
    if end.isascii() and "exit" not in end.lower():
        return None
    return _EXIT.search(output, start)


_RESULT_ARGUMENTS = ("command", "cmd", "path")
"""The arguments of a tool call that its result is read with (``_Reader._result``)."""


@dataclass
class _Reader:
    """Walks a branch once, in order."""

    first_request: str | None = None
    latest_request: str | None = None
    """Of the substantive requests (not the acknowledgements): a branch's are never all held."""
    rules: list[str] = field(default_factory=list)
    seen_rules: set[str] = field(default_factory=set)
    acknowledgement: str | None = None
    go_ahead: bool = False
    answered: bool = True
    read: set[str] = field(default_factory=set)
    written: set[str] = field(default_factory=set)
    commands: list[Command] = field(default_factory=list)
    tails: dict[int, str] = field(default_factory=dict)
    """The tail of each failed command's output, by its index."""
    open_by_core: dict[str, list[int]] = field(default_factory=dict)
    """The failures nothing has put right yet, by command (its output filters aside)."""
    open_tests: list[tuple[int, tuple[str, ...], frozenset[str]]] = field(default_factory=list)
    """The test runs among them, with runner and targets, which a wider pass puts right."""
    tool_errors: list[tuple[int, str, str, str | None]] = field(default_factory=list)
    """(position, tool, message, path) of each failed tool call."""
    recovered: dict[tuple[str, str | None], int] = field(default_factory=dict)
    """The position of the latest success of each (tool, path) that failed before it: what
    tells a failure put right (every success would be held for a branch of many calls)."""
    calls: dict[Any, tuple[str, dict[str, Any]]] = field(default_factory=dict)
    """The tool calls not answered yet (an answered one is let go: a branch's calls would be
    held at once)."""
    summary: Sections = ()
    branch_summaries: list[Sections] = field(default_factory=list)
    last_answer: str | None = None
    previous_document: str | None = None
    anchor: int | None = None
    skipped: set[str] = field(default_factory=set)
    asked_at: str | None = None
    """The id of our handoff prompt just read: the next assistant message is its answer."""
    opening: bool = True
    """Only what a session's start writes has been read so far."""

    def entry(self, index: int, record: Record, entry: Entry | None) -> None:
        opening, self.opening = self.opening, self.opening and opens_session(entry)
        if entry is None:
            return
        kind = entry.get("type")
        message = entry.get("message")
        if opening and kind == "message" and is_handoff_start_message(message):
            self._anchor(index, unwrap_document(text_of(message.get("content"), "\n")))
        elif kind == "message" and isinstance(message, dict):
            self.message(index, record.id, message)
        elif kind == "compaction":
            self._compaction(index, entry)
        elif kind == "branch_summary":
            text = entry.get("summary")
            if isinstance(text, str) and text.strip():
                self.branch_summaries.append(sections_of(text))
        elif opening and is_handoff_start(entry):
            self._anchor(index, unwrap_document(text_of(entry.get("content"), "\n")))

    def message(self, index: int, entry_id: str, message: dict[str, Any]) -> None:
        role = message.get("role")
        if role == "user":
            self._user(entry_id, text_of(message.get("content"), "\n").strip())
        elif role == "assistant":
            if self.asked_at is not None:  # the answer to our handoff prompt: a document
                self.skipped.update((self.asked_at, entry_id))
                self.asked_at = None
                self._anchor(index, text_of(message.get("content"), "\n").strip())
                return
            self._assistant(index, message)
        elif role == "toolResult":
            self._result(index, message)
        elif role == "compactionSummary" and message.get("method") == HANDOFF_TYPE:
            self._compaction(index, message)  # an in-place handoff, read as a message (Claude's)
        elif role == "compactionSummary":
            summary = message.get("summary")
            document = summarised_document(summary) if isinstance(summary, str) else None
            if document is not None:  # an in-place handoff's, in an agent's own format
                self._anchor(index, document)
        elif role == "bashExecution" and not message.get("excludeFromContext"):
            code = message.get("exitCode")
            code = code if isinstance(code, int) else None
            command = js_string(message.get("command", ""))
            if message.get("cancelled"):
                return  # stopped by the user: neither passed nor failed
            ok = code in (0, None) or _no_match(command, code)
            output = message.get("output")
            self._command(command, ok, code, output if isinstance(output, str) else "")

    def _user(self, entry_id: str, text: str) -> None:
        if not text or _SLASH_COMMAND.fullmatch(text):
            return
        if is_handoff_prompt(text):
            self.asked_at = entry_id
            return
        if is_acknowledgement(text) and self.first_request is not None:
            self.acknowledgement = text
            self.go_ahead = bool(self.last_answer and _PROPOSAL.search(self.last_answer[-400:]))
            return
        if self.first_request is None:
            self.first_request = text
        self.latest_request = text
        self.rules += _rules(text, self.seen_rules)
        self.acknowledgement = None
        self.answered = False

    def _assistant(self, index: int, message: dict[str, Any]) -> None:
        content = message.get("content")
        text = text_of(content, "\n").strip()
        if text:
            self.answered = True
            if not is_acknowledgement(text):  # "👍" back to an "ok" says nothing new
                self.last_answer = text
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "toolCall":
                arguments = block.get("arguments")
                arguments = arguments if isinstance(arguments, dict) else {}
                name = js_string(block.get("name", ""))
                # Only what its result is read with: a branch's calls are all held at once.
                kept = {k: arguments[k] for k in _RESULT_ARGUMENTS if k in arguments}
                self.calls[_key(block.get("id"))] = (name, kept)
                self._file(block.get("name"), arguments)

    def _file(self, tool: Any, arguments: dict[str, Any]) -> None:
        """The file a tool call read or changed, by oh-my-pi's rule (its ``<files>`` block), or
        those a Codex patch changes."""
        operation = file_operation(tool, arguments)
        if operation is not None:
            (self.written if operation.written else self.read).add(operation.path)
        self.written.update(patched_files(tool, arguments))

    def _result(self, index: int, message: dict[str, Any]) -> None:
        tool, arguments = self.calls.pop(_key(message.get("toolCallId")), ("", {}))
        text = text_of(message.get("content"), "\n")
        failed = bool(message.get("isError"))
        command = arguments.get("command") or arguments.get("cmd")
        if isinstance(command, str) and (tool in _SHELL_TOOLS or not tool):
            if _ABORTED.fullmatch(text):
                return  # stopped by the user: neither passed nor failed
            found = _exit_code(text)
            code = int(found.group(1)) if found else (1 if failed else 0)
            ok = (code == 0 and not failed) or _no_match(command, code)
            self._command(command, ok, code, text)
            return
        path = arguments.get("path") if isinstance(arguments.get("path"), str) else None
        if failed:
            self.tool_errors.append((index, tool or "a tool", one_line(text, 300), path))
            self.recovered.setdefault((tool or "a tool", path), -1)
        elif (tool, path) in self.recovered:
            self.recovered[tool, path] = index

    def _command(self, command: str, ok: bool, code: int | None, output: str) -> None:
        """One command run, and, if it passed, the earlier failures it puts right (``covers``)."""
        line = one_line(command, COMMAND_CHARS)
        at = len(self.commands)
        if ok and not piped(command):
            fixed = self.open_by_core.pop(_core(line), []) if self.open_by_core else []
            tests = runner_and_targets(line) if self.open_tests else None
            if tests is not None:
                runner, targets = tests
                wider = [
                    t
                    for t in self.open_tests
                    if t[1] == runner and (not targets or t[2] <= targets)
                ]
                fixed += [t[0] for t in wider]
                self.open_tests = [t for t in self.open_tests if t not in wider]
            for index in fixed:
                done = self.commands[index]
                self.commands[index] = Command(done.text, done.ok, done.exit_code, resolved=True)
        elif not ok:
            self.tails[at] = "\n".join(output.rstrip().splitlines()[-OUTPUT_TAIL_LINES:])
            self.open_by_core.setdefault(_core(line), []).append(at)
            tests = runner_and_targets(line)
            if tests is not None:
                self.open_tests.append((at, *tests))
        self.commands.append(Command(line, ok, code))

    def _compaction(self, index: int, entry: Entry) -> None:
        summary = entry.get("summary")
        if isinstance(summary, str) and summary.strip():
            self.summary = sections_of(summary)
        read, written = listed_files(entry.get("details"))
        self.read.update(read)
        self.written.update(written)
        if entry.get("method") == HANDOFF_TYPE and isinstance(summary, str):
            self._anchor(index, summary)

    def _anchor(self, index: int, document: str) -> None:
        if document:
            self.previous_document = document
            self.anchor = index
            self.summary = sections_of(document)

    def facts(self) -> Facts:
        modified = sorted(self.written, key=js_order)
        return Facts(
            original_task=self.first_request,
            latest_request=self.latest_request,
            acknowledgement=self.acknowledgement,
            go_ahead=self.go_ahead,
            rules=tuple(self.rules),
            read_files=tuple(sorted(self.read - self.written, key=js_order)),
            modified_files=tuple(modified),
            read_set=frozenset(self.read),
            commands=tuple(self.commands),
            open_error=self._open_error(),
            summary=self.summary,
            branch_summaries=tuple(self.branch_summaries),
            last_answer=self.last_answer,
            answered=self.answered,
            previous_document=self.previous_document,
            anchor=self.anchor,
            skipped=frozenset(self.skipped),
        )

    def _open_error(self) -> str | None:
        failed = [i for i, c in enumerate(self.commands) if not c.ok and not c.resolved]
        errors = [
            (tool, text)
            for i, tool, text, path in self.tool_errors
            if self.recovered[tool, path] < i
        ]
        if failed and (failed[-1] == len(self.commands) - 1 or not errors):
            command = self.commands[failed[-1]]
            code = f"exit code {command.exit_code}" if command.exit_code is not None else "failed"
            tail = self.tails[failed[-1]]
            return f"`{command.text}` ({code})" + (f"\n{tail}" if tail else "")
        if errors:
            tool, text = errors[-1]
            return f"{tool}: {text}"
        return None


def _key(value: Any) -> Any:
    # A value of any depth, compared as its JSON (repr would recurse).
    return value if isinstance(value, (str, int, float)) else dumps(value)


def _rules(request: str, seen: set[str]) -> Iterator[str]:
    """The rules ``request`` states that are not in ``seen`` (casefolded), which it joins."""
    for sentence in _SENTENCE_END.split(request):
        sentence = " ".join(sentence.split()).strip("-*• ")
        if is_rule(sentence) and sentence.casefold() not in seen:
            seen.add(sentence.casefold())
            yield sentence
