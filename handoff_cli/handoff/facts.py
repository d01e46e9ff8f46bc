"""What can be known exactly of a branch: one value, computed once, for every writer.

Read from the whole branch, not only the context (which a compaction has cut): the person's
requests (their own words, not what an agent or a harness injected: ``said``), the rules they
stated, the files read and changed (by the calls that succeeded: ``tools``; and, marked so,
by the shell commands that wrote them: ``shell``), the paths that were not there, the commands
run and how they ended (read from what they printed, and whether a failure was put right
later), the errors still open, the decisions the session states, whether the work was finished
or where it stopped, the sections of the latest summary and of every branch summary, and the
handoff document the branch already holds, if any (the anchor an update starts from). The
prompt gives these to the model as a verified block, the built-in writer builds its document
from them, ``show --facts`` prints them, and the ``<files>`` block is drawn from them: no
module parses text that another one rendered.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field, replace
from functools import lru_cache
from typing import Any

from handoff_cli.agents import claude
from handoff_cli.agents.omp import listed_files
from handoff_cli.document import (
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
from handoff_cli.handoff import shell, tools
from handoff_cli.said import (
    REQUEST_CHARS,
    asks,
    is_acknowledgement,
    only_a_template,
    own_words,
    request_in,
    templated,
)
from handoff_cli.sessions.js import js_string
from handoff_cli.sessions.jsonl import dumps, parse_line
from handoff_cli.sessions.session import Entry, Record, Session, gc_paused, parent_session
from handoff_cli.text import one_line, text_of

COMMAND_CHARS = shell.COMMAND_CHARS
OUTPUT_LINES = 12
"""The lines of a failed command's output kept: its first three (where most tools say what
went wrong) and its last, when it has more."""
REQUESTS_BUDGET = 48_000
"""The characters of requests held: the first always, then the latest that fit."""
DECISIONS_KEPT = 8
FAILED_STOPS = frozenset(("error", "aborted", "length"))
"""An assistant message that ended so did not finish its turn."""


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
        return shell.inspects(self.text)

    @property
    def known(self) -> bool:
        """Whether its exit status is its own, not a filter's it was piped into."""
        return not shell.piped(self.text)

    @property
    def milestone(self) -> bool:
        """Whether it tests, builds, checks, installs or commits: a step whose outcome a reader
        of the document wants to know."""
        return shell.is_milestone(self.text)


@dataclass(frozen=True)
class Facts:
    """What the branch shows, exactly."""

    cwd: str | None = None
    """The session's working folder (its header's): what relative paths are relative to."""
    spawned_by: str | None = None
    """The session whose subagent this one is (its requests are that session's instructions to
    it, not a person's), when it is one."""
    requests: tuple[str, ...] = ()
    """The person's substantive requests on the branch, in order, each verbatim (up to
    ``REQUEST_CHARS``): the first, then as many of the latest as ``REQUESTS_BUDGET`` holds."""
    requests_left_out: int = 0
    """How many requests between the first and those held were left out for the budget."""
    acknowledgement: str | None = None
    """A trivial last message ("ok", "yes, do it all", an emoji) that acknowledged the latest
    request, when there is one."""
    go_ahead: bool = False
    """Whether the acknowledgement agreed to something the assistant proposed or asked, rather
    than only thanking it for an answer."""
    rules: tuple[str, ...] = ()
    """The rules the user stated in their requests, each once: the firm ones (must, never,
    don't...) first, each group in order."""
    read_files: tuple[str, ...] = ()
    """Files only read (successfully), sorted."""
    modified_files: tuple[str, ...] = ()
    """Files changed by calls that succeeded, those the shell wrote included, sorted."""
    shell_files: tuple[str, ...] = ()
    """Those of ``modified_files`` known only from shell commands (best effort), sorted."""
    read_set: frozenset[str] = frozenset()
    """Every file read, modified or not: a modified one also read is marked RW."""
    missing_files: tuple[str, ...] = ()
    """Paths a call found missing and that nothing read or wrote later, sorted."""
    commands: tuple[Command, ...] = ()
    open_errors: tuple[str, ...] = ()
    """The failures of the last turn that nothing put right, oldest first: a command with its
    exit code and output tail, or a tool's error."""
    decisions: tuple[str, ...] = ()
    """Choices the session states, each quoted and attributed (``user: "…"``)."""
    summary: Sections = ()
    """The sections of the latest compaction summary, or of the previous handoff document when
    that is newer."""
    branch_summaries: tuple[Sections, ...] = ()
    last_answer: str | None = None
    """The last assistant text: where the work stopped."""
    answered: bool = True
    """Whether the latest request has an answer."""
    finished: bool = False
    """Whether the work asked for was finished: the latest request answered by a final
    message, nothing pending or failed after it, no promise of more work in it."""
    stopped: str | None = None
    """Where unfinished work stopped (a call with no result, a failed turn, an interruption,
    a question to the user, a promise of more)."""
    unanswered: str | None = None
    """The command of the last call the branch ends on with no result: what it did is
    unknown."""
    previous_document: str | None = None
    """The handoff document the branch already holds: the one it starts from, or the latest
    recorded one. An update starts from it."""
    anchor: int | None = None
    """Where on the branch that document stands (an index into it)."""
    skipped: frozenset[str] = field(default_factory=frozenset)
    """Ids of our own recorded exchanges: never conversation again."""
    calls_recorded: bool = True
    """False for a session whose agent kept its answers but not its tools' calls (Gemini CLI's
    and Qwen Code's older chats): what it never did is then not known."""

    def shown(self, path: str) -> str:
        """``path`` as the next session, in the same folder, names it: relative to ``cwd``
        when it is under it."""
        base = (self.cwd or "").rstrip("/\\")
        if (
            base
            and len(path) > len(base) + 1
            and path.startswith(base)
            and path[len(base)] in "/\\"
        ):
            return path[len(base) + 1 :]
        return path

    @property
    def original_task(self) -> str | None:
        """The first request on the branch, even from before a compaction."""
        return self.requests[0] if self.requests else None

    @property
    def latest_request(self) -> str | None:
        return self.requests[-1] if self.requests else None

    @property
    def open_error(self) -> str | None:
        """The last of the open errors."""
        return self.open_errors[-1] if self.open_errors else None

    @property
    def notable_commands(self) -> tuple[Command, ...]:
        """The commands worth telling a model: all but those that only looked and passed."""
        return tuple(c for c in self.commands if not (c.ok and c.inspects))

    def to_json(self) -> dict[str, Any]:
        """The facts as JSON (``show --facts --json``; and to carry them to the built-in
        writer through LiteLLM)."""
        value = asdict(self)
        value["read_set"] = sorted(self.read_set)
        value["skipped"] = sorted(self.skipped)
        return value

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> Facts:
        tuples = (
            "requests", "rules", "read_files", "modified_files", "shell_files", "missing_files",
            "open_errors", "decisions",
        )  # fmt: skip
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
        lists = (
            "requests", "rules", "open_errors", "decisions", "read_files", "modified_files",
            "shell_files", "missing_files",
        )  # fmt: skip
        texts: dict[str, Any] = {name: list(getattr(self, name)) for name in lists}
        texts |= {
            "acknowledgement": self.acknowledgement,
            "commands": [c.text for c in self.commands],
            "summary": [list(s) for s in self.summary],
            "branch_summaries": [[list(s) for s in b] for b in self.branch_summaries],
            "last_answer": self.last_answer,
            "stopped": self.stopped,
            "unanswered": self.unanswered,
            "previous_document": self.previous_document,
            # Paths too: a token can be a folder's name, and the <files> block is written.
            "read_set": sorted(self.read_set),
        }
        done = mask(texts)
        lists_done: dict[str, Any] = {name: tuple(done[name]) for name in lists}
        return replace(
            self,
            **lists_done,
            acknowledgement=done["acknowledgement"],
            commands=tuple(
                Command(text, c.ok, c.exit_code, c.resolved)
                for c, text in zip(self.commands, done["commands"], strict=True)
            ),
            summary=tuple((heading, body) for heading, body in done["summary"]),
            branch_summaries=tuple(
                tuple((heading, body) for heading, body in b) for b in done["branch_summaries"]
            ),
            last_answer=done["last_answer"],
            stopped=done["stopped"],
            unanswered=done["unanswered"],
            previous_document=done["previous_document"],
            read_set=frozenset(done["read_set"]),
        )


# --- reading the branch -----------------------------------------------------------------------


def facts_of(session: Session, branch: list[Record]) -> Facts:
    """The facts of ``branch`` (the entries from the root to the leaf) of ``session``: every
    message read again, with the cyclic GC paused as for the load."""
    reader = _Reader()
    earlier: list[Record] = []
    beside: dict[str, list[Record]] = {}
    if session.agent == claude.NAME:  # what Claude Code's way of storing leaves off the branch
        earlier = claude.before_compactions(session, branch)
        beside = claude.parallel_calls(session, earlier + branch)
    with gc_paused(kept=False):
        # Positions are the branch's (an anchor is one); what came before it is below 0.
        for index, record in enumerate(earlier + branch, -len(earlier)):
            reader.entry(index, record, _entry(record))
            for fragment in beside.get(record.id, ()):
                reader.entry(index, fragment, _entry(fragment))  # at its call's place
    cwd, parent = session.header.get("cwd"), parent_session(session.header)
    spawned_by = parent if session.header.get("subagent") is True else None
    return replace(
        reader.facts(),
        cwd=cwd if isinstance(cwd, str) else None,
        spawned_by=spawned_by,
        calls_recorded=session.header.get("callsUnrecorded") is not True,
    )


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


def _entry(record: Record) -> Entry | None:
    if record.entry is not None:
        return record.entry
    if record.has_message:
        return {"type": "message", "id": record.id, "message": record.message()}
    return None  # a message the agent would not send (a superseded retry)


# --- the user's rules ---------------------------------------------------------------------------

_SENTENCE_END = re.compile(
    r"(?<![\s(]\d[.])(?<=[.!?])\s+|(?<=[。！？])|(?<=[!?])(?=[\u3040-\u30ff\u4e00-\u9fff\uac00-\ud7af])|\n+"
)
"""Where a sentence ends: not after an item's number ("For 1. use the regex"); in Chinese,
Japanese or Korean, right after the mark."""
_CJK_CLAUSE = re.compile(r"([,，;；])")
_CONDITION = re.compile(r"如果|若|要是|假如|假设|当|もし|만약|만일")
CJK_SENTENCE_CHARS = 60
"""A sentence of Chinese, Japanese or Korean longer than this says several things, one to a
clause: a rule is the clause that states it."""
_CJK_QUESTION = re.compile(
    r"[吗呢]$|有什么办法|怎么办|怎么样|如何|能不能|可不可以|でしょうか$|ますか$|까요$|나요$"
)
"""A question in Chinese, Japanese or Korean, asked without its mark."""
_RULE = re.compile(
    r"^(?:always|never|don'?t|do not|must|only|avoid|prefer|make sure|be sure|ensure|no new|"
    r"stick to|stay within|keep (?:it|the|all|every|everything)\b|use|(?:please |just )?use|"
    r"please (?:don'?t|do not|avoid|keep|use|only|always|never|stick|ask|make)|ask me|"
    r"one at a time|test-driven|tdd)\b"
    r"|\b(?:must(?:n'?t| not)?|never|always|should|shouldn'?t|only|be sure to|make sure|"
    r"(?<!\bi )(?<!\bwe )(?<!\bthey )(?:don'?t|do not))\b"
    r"|\b(?:you'?re|you are|i'?m|i am|we'?re|we are) (?:in|on|using|running|working (?:in|on|"
    r"with)|limited to|restricted to|not allowed)\b|\b(?:we|they|i) (?:use|are using|prefer)\b"
    r"|\b(?:i|we|you) (?:can'?t|cannot|can not)\b|\b(?:can'?t|cannot|can not|unable to) (?:run|"
    r"use|install|access|touch|modify|change|upgrade|add|execute|open|call)\b"
    r"|\b(?:instead of|rather than|without (?:using|any|changing|touching|adding|breaking))\b"
    r"|\bno (?:more than|longer than|external|extra|new|\w+ (?:logs?|indices|comments|deps|"
    r"dependencies|frameworks?))\b|\b(?:would|'d) like to (?:use|keep|have)\b|\bneeds? to be\b"
    r"|\bno need (?:for|to)\b|\bshall(?: not|n'?t)?\b"
    r"|\b(?:answer|reply|respond|write) (?:me )?in (?:english|[A-Z]\w+)\b"
    r"|\b(?:first|top|highest) priority\b|\bmay be used\b|\bi approve\b|\bwill (?:go|live|be "
    r"stored) in\b|\bas each\b|\bonce (?:the|each) \w+ is\b",
    re.IGNORECASE,
)
_RULE_WORDS = (
    "always", "never", "don", "do not", "must", "only", "avoid", "prefer", "make sure", "no ",
    "stick to", "stay within", "keep", "should", "please", "'re", " are ", "i'm", "i am", "can",
    "unable", "instead", "rather", "without", "use", "sure", "ask me", "one at a time", "tdd",
    "test-driven", "like to", "need", "priority", "approve", "will ", "as each", "once ", "shall",
)  # fmt: skip
"""Each of ``_RULE``'s alternatives holds one of these (lowercased): a sentence of none is no
rule."""
_RULE_ELSEWHERE = re.compile(
    # Chinese, Japanese, Korean
    r"不要|不需要|禁止|必须|只能|不能|务必|请勿|一定要|不允许|不得|不准|别(?:用|改|动|碰|删)|"
    r"ないで(?!す)|必ず|のみ|だけ|してはいけない|しないこと|ではなく|使わず|なしです|は(?:なし|禁止)|"
    r"以后|今后|都(?:放在|存放|要)|用中文|中文回[答复]|日本語で|한국어로|한글로|"
    r"を(?:利用|使用|使って|参照)|参照して|で(?:作成|実装)して|にしようと思|"
    r"하지 ?마|금지|반드시|절대|참고하|사용해|"
    # Russian, Ukrainian
    r"\bне (?:надо|нужно|используй|трогай|меняй|удаляй|трогать|менять|треба|потрібно|"
    r"використовуй|чіпай|змінюй|видаляй)\b|\bнельзя\b|\bне можна\b|\bтолько\b|\bвсегда\b|"
    r"\bникогда\b|\bобязательно\b|\bлише\b|\bтільки\b|\bзавжди\b|\bніколи\b|\bобов'язково\b|"
    r"\bдолжн(?:о|а|ы|ен)\b|\bповинн?(?:о|а|і|ен)\b|"
    r"\bиспользуй|\bвикористовуй|"
    # Spanish, Portuguese, French, German, Italian
    r"\bno (?:uses|toques|cambies|borres|use|mexa|altere)\b|\bsiempre\b|\bnunca\b|\bsempre\b|"
    r"\bdeber[ií]an?\b|\bdebe(?:s|n|mos)?\b|\bdeve(?:m|ria)?\b|\btiene que\b|\btem que\b|\bsólo\b|"
    r"\bsolo\b|\bsó\b|\bimperativ[oa]\b|\bsin afectar\b|\bsem afetar\b|"
    r"\bdoit\b|\bdevrait\b|\bil faut\b|\bseulement\b|\bsans (?:toucher|modifier|changer)\b|"
    r"\bmuss\b|\bsollte?\b|\bdovrebbe\b|\bbisogna\b|"
    r"\bsem (?:alterar|mexer|estragar|código|mudar)|\bsin (?:cambiar|tocar)|\bapenas\b|"
    r"\bsomente\b|\bsolamente\b|\bnão (?:altere|mexa|use|mude)\b|"
    r"\bne (?:pas|jamais)\b|\btoujours\b|\bjamais\b|\bnicht\b|\bimmer\b|\bniemals\b|\bnur\b|"
    r"\bnon (?:usare|toccare|modificare)\b|"
    # Arabic
    r"لا ت|دائما|فقط|ممنوع|بدون",
    re.IGNORECASE,
)
_REMARK = re.compile(r"^(?:hm+|well|so|lol|haha|i guess|i see)\b", re.I)


RULE_CHARS = 300
"""A sentence longer than this is not one rule."""


def is_rule(sentence: str) -> bool:
    """A sentence with a rule's force, in any of the languages read: not a question, not a
    remark ("hm, that should never happen")."""
    sentence = sentence.strip()
    if sentence.isascii():
        if len(sentence.split()) < 3 or sentence.endswith("?") or len(sentence) > RULE_CHARS:
            return False
        if _REMARK.match(sentence) is not None:
            return False
        lowered = sentence.lower()  # as the rule's case-blind pattern matches it
        if any(word in lowered for word in _RULE_WORDS) and _RULE.search(sentence) is not None:
            return True
        return _RULE_ELSEWHERE.search(sentence) is not None  # Spanish written without accents
    if len(sentence) < 4 or len(sentence) > RULE_CHARS or sentence.endswith(("?", "？")):
        return False
    if _REMARK.match(sentence) is not None:
        return False
    return _RULE.search(sentence) is not None or _RULE_ELSEWHERE.search(sentence) is not None


_FIRM = re.compile(
    r"\b(?:must|never|always|don'?t|do not|avoid|shouldn'?t|should not|can'?t|cannot|not allowed|"
    r"make sure|be sure|ensure|only)\b|^(?:no|keep|stick to|stay within)\b|"
    r"不要|禁止|必须|只能|不能|务必|请勿|ないで(?!す)|必ず|하지 ?마|반드시|절대|"
    r"нельзя|никогда|всегда|обязательно|не можна|"
    r"ніколи|завжди|nunca|siempre|niemals|immer|jamais|toujours|ممنوع|دائما|لا ت",
    re.IGNORECASE,
)
"""A rule's firmer words: such rules are listed first (``firm_first``)."""


def firm_first(rules: Iterable[str]) -> tuple[str, ...]:
    """The rules, those with a firm word (must, never, don't...) first, each group in order."""
    found = list(rules)
    firm = [rule for rule in found if _FIRM.search(rule)]
    return (*firm, *(rule for rule in found if not _FIRM.search(rule)))


def _rules(request: str, seen: set[str]) -> Iterator[str]:
    """The rules ``request`` states that are not in ``seen`` (casefolded), which it joins."""
    for sentence in _SENTENCE_END.split(request):
        sentence = " ".join(sentence.split()).strip("-*• ")
        if _CJK_QUESTION.search(sentence):
            continue
        for part in _clauses_of(sentence):
            if is_rule(part) and part.casefold() not in seen:
                seen.add(part.casefold())
                yield part


def _clauses_of(sentence: str) -> list[str]:
    """A sentence's parts that may each state a rule: a long one in Chinese, Japanese or Korean
    by its clauses, a condition kept with the clause it governs (如果…, 那就…); one too long to
    be a rule, written without full stops, by its commas."""
    if len(sentence) <= CJK_SENTENCE_CHARS:
        return [sentence]
    if len(_CJK.findall(sentence)) * 2 <= len(sentence):
        if len(sentence) <= RULE_CHARS:
            return [sentence]
        return [c for c in _COMMA.split(sentence) if c]
    pieces = _CJK_CLAUSE.split(sentence)  # clause, mark, clause, mark, ...
    clauses: list[str] = []
    condition = False  # the last clause is a condition alone
    for at in range(0, len(pieces), 2):
        clause = pieces[at].strip()
        if condition:
            clauses[-1] += pieces[at - 1] + clause
            condition = False
        elif clause:
            clauses.append(clause)
            condition = bool(_CONDITION.match(clause)) and not is_rule(clause)
    return clauses


_CJK = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff\uac00-\ud7af]")
_COMMA = re.compile(r"\s*[,;]\s+|\s+,\s*")


# --- what an answer says --------------------------------------------------------------------

_PROPOSAL = re.compile(
    r"\?\s*$|\b(?:shall I|should I|want me to|would you like|do you want|let me know|ready to|"
    r"I can|I could|I'll|I will|next,? I|if you agree|okay to|ok to)\b",
    re.IGNORECASE,
)
_GO_ON = re.compile(
    r"\b(?:continue|go on|proceed|keep going|carry on|go ahead|resume|try again|again)\b|继续|続け"
    r"|продолж|продовж|weiter|sigue|continua|اكمل",
    re.IGNORECASE,
)
_PROMISE = re.compile(
    r"\b(?:next,? I(?:'ll| will)|(?:now )?I(?:'ll| will) (?:now |next )?(?:start|begin|continue|"
    r"proceed|run|check|fix|update|implement|add|create|write|look|try|investigate|make|move|"
    r"go)|let me(?! know)|I'm going to|I am going to|I need to|continuing|proceeding)\b|"
    r"\bI(?:'ll| will) (?!be\b|keep\b|wait\b|remember\b)\w+[^.?!\n]*\bnow\b|"
    r"次に|これから|接下来|我将|我会继续|我正在|正在(?:核对|检查|排查|修改|处理|查看)|"
    r"сейчас (?:я )?(?:сделаю|проверю|исправлю)|далее я|"
    r"\b(?:je vais|voy a|ich werde)\b",
    re.IGNORECASE,
)
_ADMITS_FAILURE = re.compile(
    r"\b(?:I (?:could ?n[o']t|can ?n[o']t|cannot|was unable|wasn't able|am unable|apologi[sz]e)|"
    r"unable to|not able to|(?:still|repeated(?:ly)?) fail\w*|fail(?:ed|s) again)\b|"
    r"できない|できません|失敗しました|无法|没能|未能|仍然失败|не удалось|не могу|не вдалося|"
    r"je n'ai pas pu|impossible de|no (?:pude|es posible)|لم أتمكن|لا أستطيع|فشل",
    re.IGNORECASE,
)
"""A final answer saying the work could not be done: with a failure left open, it waits."""
_DONE_REPORT = re.compile(
    r"\b(?:done|finished|complete[ds]?|completed|fixed|resolved|implemented|added|created|"
    r"updated|removed|renamed|committed|pushed|deployed|merged|passe[sd]|passing|works|working "
    r"(?:now|correctly|as expected)|ready|in place|set up|summary|all set)\b|"
    r"完成|已(?:经)?(?:修复|添加|更新|创建|实现|提交|修改|删除)|完了|しました|できました|ました。|"
    r"готово|сделано|исправл|добавл|создан|обновл|зроблено|виправ|додан|створ|"
    r"완료|했습니다|됐습니다|되었습니다|تم",
    re.IGNORECASE,
)
_DECIDED = re.compile(
    r"\b(?:I(?:'ve| have)? (?:decided|chose|opted|went with|switched)|(?:I|we)(?:'ll| will) "
    r"(?:use|go with|keep|switch to)|decided to|chose to|going with|opted for|abandon(?:ed|ing)?|"
    r"switched to|gave up on|the (?:best|simplest|safest|cleanest) (?:option|approach|fix|way) "
    r"(?:is|was)|(?:I|we)\b[^.]{0,60}\b(?:instead of|rather than))\b|"
    r"我决定|决定(?:用|采用|改为)|改用|放弃了|採用しました|にしました|решил|выбрал|вирішив|결정했",
    re.IGNORECASE,
)
_DECIDED_WORDS = (
    "decided", "chose", "opted", "went with", "switched", "'ll ", " will ", "decided to",
    "going with", "abandon", "switched to", "gave up", "the best", "the simplest", "the safest",
    "the cleanest", "instead of", "rather than",
)  # fmt: skip
"""Each of ``_DECIDED``'s English alternatives holds one of these (lowercased)."""
_PICKED = re.compile(
    r"\b(?:option|approach|variant|choice|plan|proposal|solution)\s*#?\s*\d+\b|\blet'?s (?:go "
    r"with|use|try|do)\b|\bgo with\b|\bi (?:prefer|choose|pick)\b|^(?:use|try|pick) |"
    r"\d+\s*번|方案|选项|オプション|вариант",
    re.IGNORECASE,
)
_ASKED_ANSWERS = re.compile(r'"([^"\n]{1,300})"\s*=\s*"([^"\n]{1,600})"')
"""An answer to an agent's question tool: ``"question"="answer"`` (Claude Code's
AskUserQuestion)."""
_ASKING_TOOLS = frozenset(("askuserquestion", "askuser", "askfollowupquestion", "requestuserinput"))


def sentences(text: str) -> list[str]:
    """The sentences of ``text``, each on one line."""
    return [" ".join(s.split()) for s in _SENTENCE_END.split(text) if s and s.strip()]


def reports_done(answer: str) -> bool:
    """Whether a final answer reports the work done, or only answers: not a promise of more
    work in its last sentences, not a question back unless it reports something done."""
    last = sentences(answer.rstrip()[-600:])[-2:] or [""]
    if any(_PROMISE.search(sentence) for sentence in last):
        return False
    if not last[-1].endswith(("?", "？")):
        return True
    # What it says it did, not what it offers ("I could: - Set up a package.json") nor asks.
    stated = [s for s in sentences(_OFFERED.sub("", answer)) if not s.endswith(("?", "？"))]
    return _DONE_REPORT.search("\n".join(stated)) is not None


_OFFERED = re.compile(
    r"^[^\n]*\b(?:I|we) (?:could|can)\b[^\n]*:[ \t]*\n(?:[ \t]*(?:[-*•]|\d+[.)])[^\n]*\n?)+",
    re.IGNORECASE | re.MULTILINE,
)
"""A list of what the agent could do, offered: none of it done."""


# --- the reader ------------------------------------------------------------------------------


@dataclass
class _Call:
    """A tool call not answered yet: what its result is read with (an answered one is let
    go: a branch's calls would be held at once)."""

    name: str
    command: str | None = None
    workdir: str | None = None
    files: tools.FileCall | None = None
    options: tuple[str, ...] = ()
    """The options a question tool offered."""


@dataclass
class _Reader:
    """Walks a branch once, in order."""

    first_request: str | None = None
    requests: deque[str] = field(default_factory=deque)
    """The latest requests (after the first) that the budget holds."""
    held: int = 0
    left_out: int = 0
    rules: list[str] = field(default_factory=list)
    seen_rules: set[str] = field(default_factory=set)
    acknowledgement: str | None = None
    go_ahead: bool = False
    answered: bool = True
    read: set[str] = field(default_factory=set)
    written: set[str] = field(default_factory=set)
    by_shell: set[str] = field(default_factory=set)
    missing: set[str] = field(default_factory=set)
    commands: list[Command] = field(default_factory=list)
    tails: dict[int, str] = field(default_factory=dict)
    """The tail of each failed command's output, by its index."""
    open_by_core: dict[str, list[int]] = field(default_factory=dict)
    """The failures nothing has put right yet, by command (its output filters aside)."""
    open_tests: list[tuple[int, tuple[str, ...], frozenset[str]]] = field(default_factory=list)
    """The test runs among them, with runner and targets, which a wider pass puts right."""
    tool_errors: list[tuple[int, str, str, tuple[str, str | None]]] = field(default_factory=list)
    """(position, tool, message, what puts it right) of each failed tool call."""
    failed_changes: dict[str | None, int] = field(default_factory=dict)
    """The files a change of failed on, not changed since, and where."""
    recovered: dict[tuple[str, str | None], int] = field(default_factory=dict)
    """The position of the latest success of each (tool, path) that failed before it: what
    tells a failure put right (every success would be held for a branch of many calls)."""
    calls: dict[Any, _Call] = field(default_factory=dict)
    turn_start: int = 0
    """Where the latest request is: failures before it are not the open ones."""
    command_start: int = 0
    decisions: deque[str] = field(default_factory=lambda: deque(maxlen=DECISIONS_KEPT))
    summary: Sections = ()
    branch_summaries: list[Sections] = field(default_factory=list)
    last_answer: str | None = None
    last_stop: str | None = None
    """How the last assistant message ended, when it did not finish its turn."""
    stop_error: str | None = None
    interrupted: bool = False
    """The user interrupted, or refused a call, after the last answer."""
    worked: bool = False
    """Calls were made after the last answer: the turn went on past it."""
    last_result: tuple[_Call, str] | None = None
    """The last tool result's call and the end of its output."""
    refused: str | None = None
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
            self._user(index, entry_id, text_of(message.get("content"), "\n").strip())
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
            if message.get("cancelled"):
                return  # stopped by the user: neither passed nor failed
            code = message.get("exitCode")
            code = code if isinstance(code, int) else None
            command = js_string(message.get("command", ""))
            output = message.get("output")
            output = output if isinstance(output, str) else ""
            ok = code in (0, None) or shell.only_an_answer(command, code, output)
            self._command(index, command, ok, code, output)

    def _user(self, index: int, entry_id: str, text: str) -> None:
        if is_handoff_prompt(text):
            self.asked_at = entry_id
            return
        if "[Request interrupted by user" in text:
            self.interrupted = True
        words = own_words(text)
        request = words if asks(words) else None
        if request is None:
            if words and is_acknowledgement(words) and self.first_request is not None:
                self._acknowledged(words)
            return
        self._request(index, request[:REQUEST_CHARS])
        if not (only_a_template(text) or templated(words)):
            self.rules += _rules(request, self.seen_rules)  # a template's are its author's
        if self.last_answer and _PICKED.search(request) and len(request) <= 300:
            self.decisions.append(f'user: "{one_line(request, 300)}"')

    def _acknowledged(self, words: str) -> None:
        self.acknowledgement = words
        proposed = bool(self.last_answer and _PROPOSAL.search(self.last_answer[-400:]))
        self.go_ahead = proposed
        if proposed or _GO_ON.search(words):
            self.answered = False  # it asks for more: the work goes on
            self.interrupted = False

    def _request(self, index: int, request: str) -> None:
        if self.first_request is None:
            self.first_request = request
        else:
            self.requests.append(request)
            self.held += len(request)
            while self.held > REQUESTS_BUDGET and len(self.requests) > 1:
                self.held -= len(self.requests.popleft())
                self.left_out += 1
        self.acknowledgement = None
        self.go_ahead = False
        self.answered = False
        self.interrupted = False
        self.refused = None
        self.calls.clear()
        self.worked = False
        self.turn_start = index
        self.command_start = len(self.commands)

    def _assistant(self, index: int, message: dict[str, Any]) -> None:
        content = message.get("content")
        text = text_of(content, "\n").strip()
        stop = message.get("stopReason")
        self.last_stop = stop if isinstance(stop, str) and stop in FAILED_STOPS else None
        error = message.get("errorMessage")
        self.stop_error = error if isinstance(error, str) and self.last_stop else None
        if text:
            self.answered = True
            self.interrupted = False
            self.refused = None
            self.worked = False
            self.calls.clear()  # what an earlier turn left without a result never gets one
            if not is_acknowledgement(text):  # "👍" back to an "ok" says nothing new
                self.last_answer = text
                self._decided(text)
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "toolCall":
                self.worked = True
                self._call(block)

    def _call(self, block: dict[str, Any]) -> None:
        arguments = block.get("arguments")
        arguments = arguments if isinstance(arguments, dict) else {}
        name = js_string(block.get("name", ""))
        command = arguments.get("command", arguments.get("cmd"))
        if isinstance(command, list):
            command = " ".join(str(word) for word in command)
        workdir = arguments.get("workdir", arguments.get("cwd"))
        call = _Call(
            name,
            command if isinstance(command, str) else None,
            workdir if isinstance(workdir, str) else None,
            tools.file_call(name, arguments),
        )
        if _tool_name(name) in _ASKING_TOOLS:
            call.options = tuple(_options(arguments))
        self.calls[_key(block.get("id"))] = call

    def _result(self, index: int, message: dict[str, Any]) -> None:
        call = self.calls.pop(_key(message.get("toolCallId")), None)
        if call is None:
            return
        text = text_of(message.get("content"), "\n")
        flagged = bool(message.get("isError"))
        self.last_result = (call, text[-2_000:])  # said in words only if the turn ends here
        asking = call.options or _tool_name(call.name) in _ASKING_TOOLS
        if asking and not (flagged and not tools.rejected(text)):
            self._answers(index, text, call.options)
            return  # a question that failed (its arguments refused) is an error, below
        if tools.rejected(text):
            self.interrupted = True
            self.refused = call.name
            return
        if call.command is not None and call.files is None:
            found = shell.outcome(text, flagged)
            if found is None:
                return  # stopped by the user: neither passed nor failed
            ok = not found.failed or shell.only_an_answer(call.command, found.code, found.output)
            self._command(index, call.command, ok, found.code, found.output, call.workdir)
            return
        failed = tools.failed(text, flagged)
        files = call.files
        path = next(iter((files.changes + files.reads) if files else ()), None)
        # A file is put right by any later success on it; another tool's error by its own.
        key = ("a file", path) if files is not None else (call.name or "a tool", path)
        if failed:
            if files is not None and files.reads and tools.missing(text):
                self.missing.update(files.reads)  # not there: an answer, no error to fix
                return
            self.tool_errors.append((index, call.name or "a tool", one_line(text, 300), key))
            self.recovered.setdefault(key, -1)
            if files is not None and files.changes:
                self.failed_changes[path] = index
            return
        if key in self.recovered:
            self.recovered[key] = index
        if files is not None:
            for changed in files.changes:
                self.failed_changes.pop(changed, None)
            self.read.update(files.reads)
            self.written.update(files.changes)
            self.by_shell.difference_update(files.changes)
            self.missing.difference_update(files.reads, files.changes)

    def _answers(self, index: int, text: str, options: tuple[str, ...]) -> None:
        """What the user answered an agent's question with: an option picked is a decision,
        words of their own a request."""
        for question, answer in _ASKED_ANSWERS.findall(text):
            if answer.casefold() in (o.casefold() for o in options):
                self.decisions.append(
                    f'user: "{one_line(question, 120)}" → "{one_line(answer, 200)}"'
                )
                continue
            request = request_in(answer)
            if request is not None:
                self._request(index, request[:REQUEST_CHARS])
                self.rules += _rules(request, self.seen_rules)

    def _command(
        self,
        index: int,
        command: str,
        ok: bool,
        code: int | None,
        output: str,
        workdir: str | None = None,
    ) -> None:
        """One command run, and, if it passed, the earlier failures it puts right (``covers``)
        and the files it wrote."""
        line = one_line(command, COMMAND_CHARS)
        at = len(self.commands)
        if ok and not shell.piped(command):
            self._fixed_by(line)
        if ok:
            for path in tools.patched_files(command) if "apply_patch" in command else ():
                self.written.add(path)
                self.missing.discard(path)
            for path in shell.written_files(command, workdir):
                if path not in self.written:
                    self.by_shell.add(path)
                self.written.add(path)
                self.missing.discard(path)
                self.failed_changes.pop(path, None)
                if ("a file", path) in self.recovered:
                    self.recovered["a file", path] = index
        else:
            self.tails[at] = _excerpt(output)
            self.open_by_core.setdefault(shell.core(line), []).append(at)
            tests = shell.runner_and_targets(line)
            if tests is not None:
                self.open_tests.append((at, *tests))
        self.commands.append(Command(line, ok, code))

    def _fixed_by(self, line: str) -> None:
        """Mark resolved the open failures a pass of ``line`` puts right."""
        if not self.open_by_core:
            return
        fixed = [
            i
            for core, found in self.open_by_core.items()
            if shell.covers(line, core)
            for i in found
        ]
        for core in [c for c in self.open_by_core if shell.covers(line, c)]:
            del self.open_by_core[core]
        tests = shell.runner_and_targets(line) if self.open_tests else None
        if tests is not None:
            runner, targets = tests
            wider = [
                t for t in self.open_tests if t[1] == runner and (not targets or t[2] <= targets)
            ]
            fixed += [t[0] for t in wider]
            self.open_tests = [t for t in self.open_tests if t not in wider]
        for index in fixed:
            done = self.commands[index]
            self.commands[index] = Command(done.text, done.ok, done.exit_code, resolved=True)

    def _decided(self, text: str) -> None:
        if text.isascii():
            lowered = text.lower()
            if not any(word in lowered for word in _DECIDED_WORDS):
                return  # most answers: the pattern's alternatives tried at no place
        if not _DECIDED.search(text):
            return
        for sentence in sentences(text):
            if (
                _DECIDED.search(sentence)
                and 20 <= len(sentence) <= 400
                and not sentence.endswith("?")
            ):
                quoted = f'assistant: "{sentence}"'
                if quoted not in self.decisions:
                    self.decisions.append(quoted)

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
            self.anchor = index if index >= 0 else None  # before the branch: all of it is after
            self.summary = sections_of(document)

    def facts(self) -> Facts:
        requests = ([self.first_request] if self.first_request else []) + list(self.requests)
        stopped = self._stopped()
        return Facts(
            requests=tuple(requests),
            requests_left_out=self.left_out,
            acknowledgement=self.acknowledgement,
            go_ahead=self.go_ahead,
            rules=firm_first(self.rules),
            read_files=tuple(sorted(self.read - self.written, key=js_order)),
            modified_files=tuple(sorted(self.written, key=js_order)),
            shell_files=tuple(sorted(self.by_shell, key=js_order)),
            read_set=frozenset(self.read),
            missing_files=tuple(sorted(self.missing - self.read - self.written, key=js_order)),
            commands=tuple(self.commands),
            open_errors=tuple(self._open_errors()),
            decisions=tuple(self.decisions),
            summary=self.summary,
            branch_summaries=tuple(self.branch_summaries),
            last_answer=self.last_answer,
            answered=self.answered,
            finished=bool(requests) and stopped is None,
            stopped=stopped,
            unanswered=next((c.command for c in reversed(self.calls.values()) if c.command), None),
            previous_document=self.previous_document,
            anchor=self.anchor,
            skipped=frozenset(self.skipped),
        )

    def _stopped(self) -> str | None:
        """Where the work stopped, if it is not finished; None when it is."""
        if self.calls:
            named = ", ".join(dict.fromkeys(c.name or "a tool" for c in self.calls.values()))
            pending = [c.command for c in self.calls.values() if c.command]
            detail = f": `{one_line(pending[-1], 160)}`" if pending else ""
            return f"A call to {named} was made and has no result{detail}."
        if self.last_stop is not None:
            why = f": {one_line(self.stop_error, 200)}" if self.stop_error else ""
            return f"The last answer did not finish (it ended with {self.last_stop}){why}."
        if self.refused is not None:
            return f"The user refused the call to {self.refused} and stopped the work."
        if self.interrupted:
            return "The user interrupted the work."
        if self.worked:
            said = f": {_returned(*self.last_result)}" if self.last_result else "."
            return f"The last turn ended on a tool's result, with no answer after it{said}"
        if not self.answered:
            return "The latest request has no answer yet."
        failed = [path for path, at in self.failed_changes.items() if at >= self.turn_start]
        if failed:
            return f"Changing `{failed[-1]}` failed, and it was not changed after."
        answer = self.last_answer or ""
        last = (sentences(answer.rstrip()[-400:]) or [""])[-1]
        question = last.endswith(("?", "？"))
        if answer and not reports_done(answer):
            return f'The assistant stopped at: "{one_line(last, 300)}"'
        if answer and (question or _ADMITS_FAILURE.search(answer)) and any(self._open_errors()):
            # A question back, or word that it could not be done, after a failure nothing put
            # right: it waits on the user.
            return f'The assistant stopped at: "{one_line(last, 300)}"'
        return None

    def _open_errors(self) -> Iterator[str]:
        """The failures since the latest request that nothing put right, oldest first."""
        found: list[tuple[int, str]] = []
        for at in range(self.command_start, len(self.commands)):
            command = self.commands[at]
            if command.ok or command.resolved:
                continue
            code = f"exit code {command.exit_code}" if command.exit_code is not None else "failed"
            tail = self.tails[at]
            found.append((at, f"`{command.text}` ({code})" + (f"\n{tail}" if tail else "")))
        errors = [
            (i, f"{tool}: {text}")
            for i, tool, text, key in self.tool_errors
            if i >= self.turn_start and self.recovered[key] < i
        ]
        # Commands by their order among commands, tool errors by position: a command's index
        # is not a position, so each list keeps its own order, commands first.
        yield from dict.fromkeys(text for _, text in [*found, *errors])  # each once
        if self.last_stop == "error" and self.stop_error:
            yield f"The model's last answer failed: {one_line(self.stop_error, 300)}"


def _returned(call: _Call, output: str) -> str:
    """A call and the last lines of what it returned, in one line."""
    named = call.files.changes + call.files.reads if call.files else ()
    what = f"`{one_line(call.command, 120)}`" if call.command else call.name or "a tool"
    what += f" of `{named[0]}`" if named and not call.command else ""
    tail = "\n".join(output.rstrip().splitlines()[-3:])
    return f"{what}, which returned: {one_line(tail, 300)}" if tail else what


def _excerpt(output: str) -> str:
    lines = output.strip().splitlines()
    if len(lines) <= OUTPUT_LINES:
        return "\n".join(lines)
    return "\n".join([*lines[:3], "[…]", *lines[3 - OUTPUT_LINES :]])


@lru_cache(maxsize=256)  # a session calls the same few tools
def _tool_name(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.casefold())


def _options(arguments: dict[str, Any]) -> Iterator[str]:
    """The options an agent's question tool offered (``questions[].options[].label``)."""
    questions = arguments.get("questions")
    for question in questions if isinstance(questions, list) else []:
        options = question.get("options") if isinstance(question, dict) else None
        for option in options if isinstance(options, list) else []:
            label = option.get("label") if isinstance(option, dict) else option
            if isinstance(label, str):
                yield label


def _key(value: Any) -> Any:
    # A value of any depth, compared as its JSON (repr would recurse).
    return value if isinstance(value, (str, int, float)) else dumps(value)
