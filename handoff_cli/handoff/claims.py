"""What a document claims, and whether the branch contradicts it.

A handoff document states facts a fresh session will act on: this file was changed, that work
is done and this is still to do, this failure is fixed, that command was run. Each is read from
where it stands (a Progress part, Next Steps, any sentence) and checked against the branch: its
facts (``facts``: files read and changed, commands and how they ended, the errors left open,
what the last answer reported done) and everything it holds as text (``Said``: tool calls and
their outputs, written contents, the assistant's words). A claim is only called contradicted
when the branch shows the opposite; what it does not show either way is left alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import chain
from typing import Any

from handoff_cli.document import Sections, sections_of, without_files
from handoff_cli.handoff import shell, tools
from handoff_cli.handoff.facts import Facts, sentences
from handoff_cli.handoff.terms import HOLD_SHARE, Terms, key_terms
from handoff_cli.sessions.session import Record
from handoff_cli.text import text_of

PENDING_SHARE = 0.7
"""The share of a finished item's terms a pending item must hold to be the same work: a
restatement, not a mere mention."""

REPORT_CHARS = 4000
"""How much of the end of the last answer is read for the work it reports done."""

# --- a document's items -------------------------------------------------------------------------

_BULLET = re.compile(r"^\s*(?:[-*•+]|\d+[.)])\s+(?:\[[ xX]\]\s*)?")
_CHECKED = re.compile(r"^\s*(?:[-*•+]|\d+[.)])\s+\[[xX]\]")
_DONE_VERB = re.compile(
    r"\b(?:done|finished|fixed|completed?|implemented|added|merged|wrote|written|created|"
    r"updated|removed|renamed|moved|refactored|replaced|extracted|converted|passed|passing|"
    r"pass|passes|works)\b",
    re.IGNORECASE,
)
_NOT_YET = re.compile(r"\b(?:not|to|needs?|should|will|must|todo|pending|yet|still)\b", re.I)
_SUBHEADING = re.compile(r"^#{3,}\s*(.+?)\s*$")
_PENDING = re.compile(r"pending|\bto ?do\b|remaining|not started|next", re.IGNORECASE)
_DONE = re.compile(r"\bdone\b|complet|finish|accomplish", re.IGNORECASE)
_NEXT = re.compile(r"next step|to ?do|pending|remaining", re.IGNORECASE)


def items_of(body: str) -> list[str]:
    """A section's items: each bullet or numbered line with the lines that continue it, or a
    paragraph; placeholders such as "(none)" are none."""
    found: list[list[str]] = []
    for line in body.splitlines():
        bullet = _BULLET.match(line)
        if not line.strip() or _SUBHEADING.match(line):
            found.append([])
        elif bullet:
            found.append([line[bullet.end() :]])
        elif found:
            found[-1].append(line.strip())
        else:
            found.append([line])
    items = (" ".join(part.strip() for part in item).strip() for item in found)
    return [i for i in items if i and not re.fullmatch(r"\(?(?:none|nothing|n/a)[^)]*\)?\.?", i)]


def finished_item(item: str) -> bool:
    """Whether a progress item says its work is finished ("Export command added", "Done:
    ...", "all tests pass"), in its first clause, and not as what is still to be done."""
    clause = re.split(r"[.;:(](?:\s|$)", item, maxsplit=1)[0]
    verb = _DONE_VERB.search(clause)
    return verb is not None and _NOT_YET.search(clause[: verb.start()]) is None


def progress_parts(sections: Sections) -> list[tuple[str, str]]:
    """The parts of a Progress section: (``### `` heading, its text); a heading that carries an
    item after a colon (``### Pending: export added``) gives that item to its part."""
    parts: list[tuple[str, list[str]]] = []
    for heading, body in sections:
        if heading.casefold() != "progress":
            continue
        parts.append(("", []))
        for line in body.splitlines():
            sub = _SUBHEADING.match(line)
            if sub:
                name, _, inline = sub.group(1).partition(":")
                parts.append((name.strip(), [f"- {inline.strip()}"] if inline.strip() else []))
            else:
                parts[-1][1].append(line)
    return [(name, "\n".join(lines)) for name, lines in parts]


def pending_part(name: str) -> bool:
    return bool(name) and _PENDING.search(name) is not None and not _DONE.search(name)


def done_part(name: str) -> bool:
    return bool(name) and _DONE.search(name) is not None and not _PENDING.search(name)


def finished_work(summary: Sections) -> list[str]:
    """The work a summary calls finished: its Done items, and the items of a plain Progress
    list that say they are done (checked, or "added ...")."""
    done: list[str] = []
    for name, body in progress_parts(summary):
        if done_part(name):
            done += items_of(body)
        elif not name:
            lines = [line for line in body.splitlines() if _BULLET.match(line)]
            done += [
                item
                for line in lines
                for item in items_of(line)
                if _CHECKED.match(line) or finished_item(item)
            ]
    return done


_ARABIC_MARKS = re.compile("[\u064b-\u0652\u0640]")
"""Arabic's vowel marks and stretching: written or not, the same word."""


@dataclass(frozen=True)
class Item:
    """One item of a document, and where it stands: ``pending`` (a Pending part of Progress,
    or Next Steps), ``done`` (any other part of Progress: what the work did) or ``stated``
    (anywhere else)."""

    text: str
    place: str


def document_items(document: str) -> list[Item]:
    sections = sections_of(_ARABIC_MARKS.sub("", document))  # أُضيفت is أضيفت
    found: list[Item] = []
    for name, body in progress_parts(sections):  # done, in progress, blocked: the work's state
        found += [
            Item(item, "pending" if pending_part(name) else "done") for item in items_of(body)
        ]
    for heading, body in sections:
        if heading.casefold() == "progress":
            continue
        place = "pending" if _NEXT.search(heading) else "stated"
        found += [Item(item, place) for item in items_of(body)]
    return found


# --- file names -----------------------------------------------------------------------------------

_EXTENSIONS = (
    "py pyi ipynb js mjs cjs jsx ts tsx json jsonl toml yaml yml md mdx rst txt rs go java kt kts "
    "c h cc cpp hpp cs rb php sh bash zsh fish ps1 bat css scss sass less html htm sql ini cfg "
    "conf xml swift vue svelte astro lua ex exs zig dart scala gradle lock env proto tf tfvars hcl "
    "kdl typ tex nix vim el csv tsv log plist service prisma graphql gql j2 erb r jl sol"
).split()
_FILE = re.compile(
    r"(?<![\w/\\.@:+…-])((?:~/|/|[A-Za-z]:\\)?(?:[\w.+-]+[/\\])*[\w+][\w.+-]*\.(?:"
    + "|".join(_EXTENSIONS)
    + r"))(?![\w/\\-])"
)
_DOT_NAME = re.compile(
    r"(?:rc|ignore|profile|env|envrc|config|conf|modules|attributes|versions|history|local)$|"
    r"^\.env\b",
    re.IGNORECASE,
)
"""A bare dotfile's ending (`.zshrc`, `.gitignore`, `.env.local`): not a class (`.dark`)."""
_LIBRARY = re.compile(
    r"(?:node|vue|next|nuxt|express|react|three|d3|chart|socket|moment|ember|backbone|angular|"
    r"alpine|p5|anime|pixi|babylon|leaflet|day|deck|ml5|brain|tf|highlight|video|ts-node|sql|"
    r"pdf|marked|lunr|fuse|popper|swiper|howler|tone|matter|cannon|ammo|mathjax|discord|nest|"
    r"solid|svelte|preact|lit|hyperapp|knockout|zone|socket\.io|web3|ethers)\.js",
    re.IGNORECASE,
)
"""Libraries named as files are (Node.js, Chart.js): no file a document claims."""
_DOTFILE = re.compile(
    r"`((?:~/|/)?(?:[\w.-]+/)*\.[A-Za-z][\w.-]*)`|(?<![\w/.~])(~/(?:[\w.-]+/)*\.[A-Za-z][\w.-]*)(?![\w/-])"
)
"""A dotfile: named in backticks (`.gitmodules`), or in the home folder (~/.zshrc)."""


def named_files(text: str) -> list[str]:
    """The file names ``text`` holds (a name with a known extension, with its folders; a
    dotfile in backticks), in order; not a link, nor a name cut short (``a-...jsonl``)."""
    dotfiles = [a or b for a, b in _DOTFILE.findall(text) if b or "/" in a or _DOT_NAME.search(a)]
    dotfiles = [f.rstrip(".") for f in dotfiles if f.lstrip(".") not in _EXTENSIONS]
    found = [m.group(1) for m in _FILE.finditer(text)] + dotfiles
    found = [f for f in found if not re.search(r"://|\.\.\.|…", f) and not _LIBRARY.fullmatch(f)]
    return list(dict.fromkeys(sorted(found, key=text.find)))


def spans_of(text: str) -> list[str]:
    """What ``text`` holds in backticks."""
    return _SPAN.findall(text)


def base(path: str) -> str:
    return path.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]


def _folders(path: str) -> list[str]:
    """The names of the folders ``path`` names on its way to its file."""
    return [part for part in path.replace("\\", "/").split("/")[:-1] if part not in ("", ".", "..")]


# --- what the branch says -------------------------------------------------------------------------


class Said:
    """What a branch holds as text, read when first asked and not kept: the calls its tools
    were given (and the commands run), the failures it ends on, and whether it names a text
    anywhere (requests, answers, thinking, calls, outputs, written contents, summaries).
    Looking for names reads the branch once for all of them (``look_for``); a name not looked
    for then costs a read of its own."""

    def __init__(self, records: Sequence[Record] = (), facts: Facts | None = None) -> None:
        self._records = records
        self._facts = facts
        self._found: dict[str, bool] = {}

    @cached_property
    def _kept(self) -> tuple[list[str], list[str]]:
        calls: list[str] = []
        failing: dict[str, list[str]] = {}  # by tool: its failures since its last success
        last = ""  # and the last result of all: nothing came after it to put it right
        for message in self._messages():
            calls += _calls_of(message)
            if message.get("role") == "toolResult":
                last = "\n".join(_strings(message))
                tool = str(message.get("toolName", ""))
                text = text_of(message.get("content"), "\n")
                if tools.failed(text, bool(message.get("isError"))) or _error_in(message):
                    failing.setdefault(tool, []).append(last)
                else:
                    failing.pop(tool, None)
        ended = [last] if _ERROR_WORDS.search(last[:ERROR_CHARS]) else []
        return calls, [*(t for texts in failing.values() for t in texts), *ended]

    def _messages(self) -> Iterator[dict[str, Any]]:
        for record in self._records:
            value = record.message() if record.has_message else record.entry
            if isinstance(value, dict):
                yield value

    def _facts_texts(self) -> Iterator[str]:
        facts = self._facts
        if facts is None:
            return
        yield from (*facts.requests, *facts.rules, *facts.open_errors, *facts.decisions)
        yield from (facts.last_answer or "", facts.previous_document or "", facts.stopped or "")
        for sections in (facts.summary, *facts.branch_summaries):
            yield from (text for section in sections for text in section)
        yield from (c.text for c in facts.commands)

    def look_for(self, texts: Iterable[str]) -> None:
        """Find out, in one read of the branch, which of ``texts`` it holds anywhere."""
        wanted = {t for t in texts if t and t not in self._found}
        pending = set(wanted)
        said = chain(self._facts_texts(), (t for m in self._messages() for t in _strings(m)))
        for text in said if pending else ():
            pending -= {t for t in pending if t in text}
            if not pending:
                break
        self._found.update((t, t not in pending) for t in wanted)

    def names(self, text: str) -> bool:
        """Whether the branch holds ``text`` anywhere."""
        self.look_for((text,))
        return self._found.get(text, False)

    @property
    def last_failures(self) -> list[str]:
        """The failures of each tool since its last success, and the last result of all when
        it reads as an error: what nothing after put right."""
        return self._kept[1]

    @cached_property
    def commands(self) -> list[str]:
        """The commands the facts know were run, in lower case: asked first, as the records
        are read again only when they do not tell."""
        return [c.text.casefold() for c in self._facts.commands] if self._facts else []

    @cached_property
    def calls(self) -> list[str]:
        """The calls' arguments and the commands run, in lower case."""
        return [call.casefold() for call in self._kept[0]]

    def ran(self, command: str) -> bool:
        """Whether a call ran ``command``: a step of it run by the same program or script
        (``_needle``; a function, such as ``json.load``, anywhere in it), with half the words
        after it or more (a file by its name)."""
        needle = _needle(command)
        folded = command.casefold().split()
        at = next((i for i, w in enumerate(folded) if needle.split()[0] in w), 0)
        words = [base(w) for w in folded[at + len(needle.split()) :]]
        words = [w for w in words if len(w) > 1]
        function = re.search(r"[.(]", needle) is not None and named_files(needle) != [needle]
        for call in chain(self.commands, self.calls if self._records else ()):
            if needle not in call or sum(w in call for w in words) < len(words) / 2:
                continue
            if function or any(_needle(" ".join(w)) == needle for _, w in shell.segments(call)):
                return True  # each simple command, through `bash -lc '…'` and `pwsh -Command`
        return False


_ERROR_WORDS = re.compile(
    r"error|exception|traceback|\bfail|not found|denied|unexpected|invalid|cannot|can't|unable|"
    r"is not a function|undefined",
    re.IGNORECASE,
)
"""What the last result of a branch says when it is a failure its tool did not flag."""
ERROR_CHARS = 300


def _error_in(message: dict[str, Any]) -> bool:
    """Whether a result's details carry an error its text does not (pi's tools put one in
    ``details``: "Trace completed." with an ``errorMessage`` inside)."""
    stack: list[Any] = [message.get("details")]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, value in item.items():
                if key in ("errorMessage", "error") and isinstance(value, str) and value.strip():
                    return True
                stack.append(value)
        elif isinstance(item, list):
            stack.extend(item)
    return False


def _calls_of(message: dict[str, Any]) -> list[str]:
    """What a message ran: a shell execution's command, each tool call's command (a tool
    named as a program: its name and arguments)."""
    calls: list[str] = []
    if message.get("role") == "bashExecution":
        calls += _strings(message.get("command"))
    content = message.get("content")
    for block in content if isinstance(content, list) else ():
        if isinstance(block, dict) and block.get("type") == "toolCall":
            arguments = block.get("arguments")
            if not isinstance(arguments, dict):
                continue
            name = block.get("name")
            if isinstance(name, str) and name.casefold() in _PROGRAMS - shell.SHELLS:  # a program
                calls.append(" ".join((name, *_strings(arguments))))
            else:  # what runs, not what is written or read
                calls += _strings([arguments.get(key) for key in _RUN_KEYS])
    return calls


_RUN_KEYS = ("command", "cmd", "script", "code", "input")
"""The arguments of a tool call that hold what it runs."""


def _strings(value: Any) -> list[str]:
    """Every string in a JSON value, however deep (walked without recursion)."""
    found: list[str] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            found.append(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


# --- contradictions -------------------------------------------------------------------------


@dataclass(frozen=True)
class Contradiction:
    """A claim of the document that the branch shows to be false."""

    dimension: str
    question: str
    answer: str


_CHANGE = re.compile(
    r"\b(?:created|added|edited|modified|updated|wrote|written|changed|rewrote|rewritten|"
    r"patched|refactored|renamed|deleted|removed|implemented|extended|fixed|moved|guarded|"
    r"tightened|replaced|converted|switched|bumped|saved|backed up)\b|"
    # The same in the languages sessions are written in, as their words for it.
    r"(?:已[^\uff0c\u3002\uff1b,.;]{0,12}?(?:修改|添加|新增|新建|删除|更新|重写|创建|写入)|"
    r"(?:修改|添加|新增|新建|删除|更新|重写|创建|写入)了|改为|改成|"
    r"(?:追加|追記|修正|変更|削除|作成|書き換え|編集|更新|保存|上書き)(?:した|しました|済み|済)|"
    r"补上|补充了|加了|改了|cập nhật|đã sửa|đã thêm|thêm vào|đã tạo|"
    r"изменен|добавлен|обновлен|удален|создан|исправлен|переписан|сохранен|"
    r"alterad|adicionad|atualizad|removid|criad|corrigid|trocad|modificad|editad|salv[oa]|"
    r"añadid|agregad|actualizad|eliminad|cread|cambiad|geändert|hinzugefügt|aktualisiert|"
    r"entfernt|erstellt|korrigiert|bearbeitet|modifié|ajouté|supprimé|créé|corrigé|"
    r"أضيف|أضفت|عدّل|عدل|تعديل|حذف|أنشئ|كتابة|كتبت|تحديث|أعيدت)",
    re.IGNORECASE,
)
_LOOKED = frozenset(
    "read reviewed inspected analyzed analysed checked examined looked searched found listed "
    "explored investigated confirmed verified identified noticed ran tested compared studied "
    "traced located opened scanned audited grepped viewed used called named based related "
    "required expected needed failed passed detected tried asked answered discussed "
    "considered proposed suggested planned".split()
)
"""Past tenses that report looking, not changing."""
_PAST = re.compile(r"(?:^|\b(?:was|were|is now|are now|has been|have been|now)\s+)([A-Za-z]+ed)\b")
_BY_AGENT = re.compile(
    r"\b(?:the agent|the assistant|the session|we|I|it|Claude|Codex|pi)\s+(?:also\s+|then\s+|"
    r"has\s+|have\s+|had\s+)?$",
    re.IGNORECASE,
)
"""A clause whose subject, right before its verb, is the agent that did the work."""
_BY_TOOL = re.compile(
    r"^\W*running\b|`[^`]*\.(?:sh|py|js|ps1)\b[^`]*`\s*(?:\w+\s+){0,2}$", re.IGNORECASE
)
"""Before a change verb: a script or a command is what changed the file, not the agent."""
_INSTRUMENT = re.compile(r"\b(?:with|using|via|by|through|from)\s+(?:the\s+)?`[^`]+`", re.I)
"""A file named as what the work used, not what it changed ("created with `x.sh`")."""
_BY_USER = re.compile(
    r"\b(?:the user|user|you|they|he|she)\b(?:\s+\w+){0,2}\s+$|\b(?:himself|herself|manually)\b",
    re.I,
)
"""A clause whose subject, just before its verb, is the person, not the agent."""
_NEGATED = re.compile(
    r"\b(?:not|never|no|n't|nothing|none|without|yet|to be|needs? to|should|will|não|nicht|nie|"
    r"pas|nunca)\b|"
    r"(?:未|没有|沒有|ない|なかった|не |لم |لا |ما |không|chưa)",
    re.I,
)
_CLAUSE_END = re.compile(r"[;:]|\.\s|,\s(?:and\s)?(?=\w+ed\b)|\s(?:and|but|then)\s(?=\w+ed\b)")
_CONTRAST = re.compile(
    r"\b(?:rather than|instead of|without|but not|not|except|while|whereas|left|only)\b", re.I
)
"""Where what a change verb claims ends, inside its clause."""
_UNTOUCHED = re.compile(
    r"\b(?:not|never|n't)\s+(?:been\s+|yet\s+)?(?:changed|modified|touched|edited|updated)\b|"
    r"\bunchanged\b|\buntouched\b|\bno changes?\s+(?:to|in|were made to)\b",
    re.IGNORECASE,
)
_TO_CREATE = re.compile(
    r"\b(?<!git )(?:create|write|add|scaffold)\s+(?:(?:a|an|the|new|missing)\s+)*(?:file\s+)?`?",
    re.IGNORECASE,
)
_TO_PUBLISH = re.compile(
    r"^\W*(?P<todo>commit|push)\b|\b(?P<todo2>commit|push) (?:is|are) (?:still )?(?:pending|to "
    r"do|outstanding)|\bnot (?:been )?(?:yet (?P<not>committed|pushed)|(?P<not2>committed|pushed) "
    r"yet)\b",
    re.IGNORECASE,
)
_COMMIT = re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b")
"""A commit's hash: a commit or push of it listed as to do is of work already committed."""
_FIXED = re.compile(
    r"\b(?:fixed|resolved|(?:pass|passes|passed|passing)(?! as| to| in| into| via| through| with)|"
    r"(?:is|are|now|all|went|turned|stays?) green|succeeds|succeeded|works(?: now)?|"
    r"now works|no longer fails|went away|is gone)\b|"
    r"(?:已修复|已解决|跑通|通过了|解消|解決|修正済|直った|成功し|исправлен|решен|работает|"
    r"corrigid|resolvid|funciona|corregid|resuelt|behoben|funktioniert|corrigé|résolu|"
    r"fonctionne|يعمل|تم إصلاح|تم حل|نجح)",
    re.IGNORECASE,
)
_STILL = re.compile(
    r"\b(?:still|not|n't|never|fails?|failing|failed|broken|open|unresolved|red)\b|"
    r"(?:仍|还是|未|失败|没有|まだ|失敗|ещё|еще|не |ainda|não|todavía|noch|nicht|encore|"
    r"pas |لا |لم |فشل)",
    re.I,
)
_RAN = re.compile(
    r"\b(?:(?:re-?)?ran|(?:re-?)?executed|validated|verified|checked|tested|confirmed|linted|"
    r"compiled|built|(?:was|were|has been|have been) run)\b",
    re.IGNORECASE,
)
"""Past tenses: a claim that something ran, wherever it stands."""
_RAN_OTHER = re.compile(
    r"运行了|执行了|跑了|做了|检查了|验证了|测试了|実行し(?!て?い?な|ませ|ておらず)|実行済|確認した|"
    r"запущен|выполнен|проверен|executad|rodad|validad|verificad|ejecutad|ausgeführt|geprüft|"
    r"exécuté|vérifié|شغل|تشغيل|نفذ|đã chạy|chạy thử|đã kiểm tra|đã được nạp|nạp thử|"
    r"(?:作成|実行|確認|コミット)済",
    re.IGNORECASE,
)
"""The same in other languages, where a past and a command can look alike (Arabic's شغل): a
claim only outside what is still to do."""
_SPAN = re.compile(r"`([^`\n]{2,200})`")
_WRAPPERS = frozenset(
    "sudo python python3 uv uvx npx bunx poetry pipenv -m run exec env time".split()
)
_INTERPRETERS = frozenset("sh bash zsh python python3 node deno ruby perl php".split())
_SETUP = frozenset("cd pushd export source set . unset".split())
_SUBCOMMANDS = frozenset(
    "npm yarn pnpm bun cargo go git make docker kubectl dotnet mvn gradle deno gh".split()
)
_PROGRAMS = frozenset(
    "pytest mypy ruff tsc eslint jest vitest tox nox black flake8 pylint prettier biome cargo "
    "go npm yarn pnpm bun make cmake ninja gradle mvn dotnet docker kubectl terraform deno git "
    "mkdir rm cp mv bash sh zsh node python python3 pip uv curl gh ls cat grep rg find sed "
    "awk chmod brew apt systemctl".split()
)
"""Programs a span may begin with to be a command (besides those the branch ran)."""


def contradictions(facts: Facts, said: Said, document: str) -> Iterator[Contradiction]:
    """Each claim of ``document`` the branch contradicts, once."""
    items = document_items(without_files(document))
    changed = {base(p) for p in facts.modified_files}
    read = {base(p) for p in (*facts.read_files, *facts.read_set)} - changed
    seen: set[str] = set()
    recorded = facts.calls_recorded  # else what it never did is not told by what it kept
    for found in (
        *(_said_changed(items, changed, read, said) if recorded else ()),
        *_said_untouched(items, changed),
        *_said_unread(items, read),
        *_pending_but_written(items, changed),
        *_pending_but_published(items, facts),
        *(_said_published(items, said) if recorded else ()),
        *_pending_but_reported(items, facts),
        *_said_fixed(items, facts, said),
        *_shown_open(document, facts),
        *(_said_ran(items, said) if recorded else ()),
    ):
        if found.answer not in seen:
            seen.add(found.answer)
            yield found


def _clauses(text: str) -> list[str]:
    """A text's clauses; an item that opens with its subject (`` `a.py`: now guarded``) keeps
    it with what follows."""
    subject = _SUBJECT.match(text)
    head = subject.group(0) if subject else ""
    found = [c for c in _CLAUSE_END.split(text[len(head) :]) if c.strip()]
    return [head + found[0], *found[1:]] if head and found else found or [text]


_SUBJECT = re.compile(r"^\W*`[^`]+`\s*(?::|\u2014|\u2013|-)\s*")


def _change_verb(clause: str) -> re.Match[str] | None:
    """Where a clause says something was changed: a verb of changing, or a past tense that
    reports no mere looking at the start or after "was", "is now"."""
    verb = _CHANGE.search(clause)
    for past in _PAST.finditer(clause.lstrip("`*_ ")):
        if past.group(1).casefold() not in _LOOKED:
            found = _CHANGE.search(clause, clause.find(past.group(1)))  # where it stands
            return (
                verb
                if verb is not None and (found is None or verb.start() < found.start())
                else re.search(re.escape(past.group(1)), clause)
            )
    return verb


def _said_changed(
    items: list[Item], changed: set[str], read: set[str], said: Said
) -> Iterator[Contradiction]:
    """A file said to be changed that the branch only read, or only named."""
    for item in items:
        for clause in _clauses(item.text):
            verb = _change_verb(clause)
            if verb is None or _NEGATED.search(clause[: verb.start()]):
                continue
            opens = item.text.startswith(clause) and _CHANGE.match(clause.lstrip("`*_ "))
            if item.place != "done" and not (opens or _BY_AGENT.search(clause[: verb.start()])):
                continue  # outside Progress, only what the agent is said to have done (its
                # subject, or an item that opens with the verb): not what others changed (a
                # diff under review), nor what is still to do
            if _BY_TOOL.search(clause[: verb.start()]):
                continue  # what a script or a command did ("running `x.sh` created `A.md`")
            contrast = _CONTRAST.search(clause, verb.end())
            claimed = _INSTRUMENT.sub(" ", clause[: contrast.start()] if contrast else clause)
            for path in named_files(claimed):
                name = base(path)
                if name in changed or not (name in read or said.names(name)):
                    continue  # changed; or never named as a file (`untouched` says so)
                if any(folder in changed for folder in _folders(path)):
                    continue  # in a folder changed whole (removed, moved: `rd /s /q skills`)
                how = "only read" if name in read else "never changed"
                yield Contradiction(
                    "artifacts",
                    "a file said to be changed",
                    f"`{path}`: the document says it was changed; the session {how} it",
                )


def _files_said(items: list[Item], phrase: re.Pattern[str], before: bool) -> Iterator[str]:
    """The files a clause says ``phrase`` of (with ``before``, those named before it: "`a.py`
    has not been read")."""
    for item in items:
        for clause in _clauses(item.text):
            found = phrase.search(clause)
            if found:
                yield from named_files(clause[: found.start()] if before else clause)


def _said_untouched(items: list[Item], changed: set[str]) -> Iterator[Contradiction]:
    for path in _files_said(items, _UNTOUCHED, before=False):
        if base(path) in changed:
            yield Contradiction(
                "artifacts",
                "a changed file said to be untouched",
                f"`{path}`: the document says it was not changed; the session changed it",
            )


def _said_unread(items: list[Item], read: set[str]) -> Iterator[Contradiction]:
    """Files said not to have been read yet that the branch read."""
    for path in _files_said(items, _UNREAD, before=True):
        if base(path) in read:
            yield Contradiction(
                "state",
                "finished work listed as pending",
                f"`{path}`: the document says it was not read yet; the session read it",
            )


_UNREAD = re.compile(
    r"\b(?:not|never)\s+(?:been\s+|yet\s+)*(?:opened|read|reviewed|looked at|inspected)\b|"
    r"\bunread\b",
    re.IGNORECASE,
)


def _pending_but_written(items: list[Item], changed: set[str]) -> Iterator[Contradiction]:
    """Writing a file listed as to do, when the branch wrote it."""
    for item in items:
        if item.place != "pending":
            continue
        for verb in _TO_CREATE.finditer(item.text):
            paths = named_files(item.text[verb.end() : verb.end() + 120])
            first = paths[0] if paths else ""
            right_after = item.text[verb.end() :].lstrip("`").startswith(first)
            if first and right_after and base(first) in changed:
                yield Contradiction(
                    "state",
                    "finished work listed as pending",
                    f"`{first}`: the document lists writing it as to do; the session wrote it",
                )


def _last_run(facts: Facts, needle: str) -> bool | None:
    """How the last command known by ``needle`` ended: True passed; None: never run."""
    runs = [c.ok for c in facts.commands if _needle(c.text) == needle]
    return runs[-1] if runs else None


def _pending_but_published(items: list[Item], facts: Facts) -> Iterator[Contradiction]:
    """A commit or a push listed as to do (or "not committed yet") that the branch made, and
    that no command of the same kind failed after."""
    for item in items:
        step = _TO_PUBLISH.search(item.text)
        stated = step is not None and (step["not"] or step["not2"] or step["todo2"])
        named = step is not None and step["todo"] and _COMMIT.search(item.text)
        if step is None or not (stated or (named and item.place == "pending")):
            continue  # "commit" alone may be of work still to come
        word = next(g for g in step.groups() if g).casefold()
        needle = "git commit" if word.startswith("commit") else "git push"
        if _last_run(facts, needle):
            yield Contradiction(
                "state",
                "finished work listed as pending",
                f"`{needle}`: the document lists it as to do; the session ran it, and it passed",
            )


def _said_published(items: list[Item], said: Said) -> Iterator[Contradiction]:
    """A commit or a push said to have been made when no call of the branch made one."""
    for item in items:
        if item.place == "pending":
            continue
        for sentence in sentences(item.text):
            made = _PUBLISHED.search(sentence)
            if made is None or _NEGATED.search(sentence[: made.start()] + sentence[made.end() :]):
                continue
            step = "push" if re.search("push|プッシュ|推送", made.group(0), re.I) else "commit"
            if not any(f" {step}" in call for call in said.calls):
                yield Contradiction(
                    "state",
                    "a commit or push said to have been made",
                    f"`git {step}`: the document says it was made; no call of the session made one",
                )


_PUBLISHED = re.compile(
    r"\b(?:committed|commité|comitad[oa]|committet|pushed|gepusht)\b|"
    r"(?:コミット|プッシュ)(?:済|した|しました)|已提交|提交了|已推送|推送了",
    re.IGNORECASE,
)
"""Words that say a commit or a push was made."""


def _pending_but_reported(items: list[Item], facts: Facts) -> Iterator[Contradiction]:
    """Work the branch's summaries, or its last answer, report finished, listed as to do."""
    finished = [i for s in (facts.summary, *facts.branch_summaries) for i in finished_work(s)]
    if facts.last_answer:
        report = facts.last_answer[-REPORT_CHARS:]  # where an answer says what it did
        finished += [s for s in sentences(report) if finished_item(s)]
    finished = [f for f in finished if len(key_terms(f)) >= 3]
    pending = [item.text for item in items if item.place == "pending"]
    for work in finished:
        terms = key_terms(work)
        for listed in pending:
            there = set(key_terms(listed, len(listed)))
            if sum(t in there for t in terms) / len(terms) >= PENDING_SHARE:
                yield Contradiction(
                    "state",
                    "finished work listed as pending",
                    f"{work[:200]}: finished, and the document lists it as pending",
                )
                break


def _open_failures(facts: Facts) -> list[str]:
    """The commands whose failure nothing put right."""
    found = [c.text for c in facts.commands if not c.ok and not c.resolved and c.milestone]
    for error in facts.open_errors:
        command = re.match(r"`([^`]+)`", error)
        if command:
            found.append(command.group(1))
    return list(dict.fromkeys(shell.core(c) for c in found))


def _said_fixed(items: list[Item], facts: Facts, said: Said) -> Iterator[Contradiction]:
    """A failure said to be fixed, or its command to pass, while it still fails: named by its
    command, or by a quote of its message."""
    failing = _open_failures(facts)
    for item in items:
        if item.place == "pending":
            continue
        for sentence in sentences(item.text):
            words = _SPAN.sub(" ", sentence)  # what it says, not what it quotes
            fixed = _FIXED.search(words)
            if fixed is None or _STILL.search(_clause_at(words, fixed.start())):
                continue
            if _MODAL.search(words[max(0, fixed.start() - 24) : fixed.start()]):
                continue  # "must be passed", "should work": no claim that it does
            folded, spans = sentence.casefold(), _SPAN.findall(sentence)
            quotes = [s for s in spans if len(s) >= 12]
            errors = (*facts.open_errors, *said.last_failures) if quotes else ()
            quoted = [s for s in quotes if any(s in error for error in errors)]
            named = [
                c for c in failing if c.casefold() in folded or _needle(c) in map(_needle, spans)
            ]
            runners = {_needle(c) for c in failing if shell.runner_and_targets(c)}
            tests = any(re.search(rf"\b{re.escape(r)}\b", folded) for r in runners)
            if quoted or named or tests:
                what = f"`{(quoted or named or failing)[0]}`"
                yield Contradiction(
                    "errors",
                    "a failure said to be fixed",
                    f"{what} still fails at the end of the session; the document says "
                    f"{fixed.group(0)}",
                )


_MODAL = re.compile(r"\b(?:must|should|shall|need|needs|will|would|can|could|to be|may)\b", re.I)


def _clause_at(text: str, at: int) -> str:
    """The clause of ``text`` that holds position ``at``."""
    starts = [m.end() for m in _CLAUSE_MARK.finditer(text, 0, at)]
    end = _CLAUSE_MARK.search(text, at)
    return text[starts[-1] if starts else 0 : end.start() if end else len(text)]


_CLAUSE_MARK = re.compile(r"[,;:()\uff0c\uff1b\u3001\u3002]|\s(?:and|but|while|though)\s")


def _shown_open(document: str, facts: Facts) -> Iterator[Contradiction]:
    """A failure since put right, shown as still open: a line with its command that says it
    fails and not that it was fixed."""
    lines = without_files(document).splitlines()
    still_open = facts.open_error.partition("\n")[0] if facts.open_error else ""
    for command in facts.commands:
        text = command.text
        if not command.resolved or text in still_open:
            continue
        if any(text in line and _OPEN.search(line) and not _FIXED.search(line) for line in lines):
            yield Contradiction(
                "errors",
                "a fixed failure shown as open",
                f"`{text}` failed, then passed: the document shows it open",
            )


_OPEN = re.compile(
    r"still (?:open|fail|broken|red)|\bfail(?:s|ing)\b|error still open|unresolved|not (?:yet )?"
    r"fixed|\bbroken\b|\bopen error\b",
    re.IGNORECASE,
)
"""A line that shows a failure open."""


# --- what a document says of a command ---------------------------------------------------------


def said_unknown(document: str, command: str) -> bool:
    """Whether the document names ``command`` (a call left with no result) as one whose outcome
    is unknown, or to be checked."""
    return _said_of(document, command, _UNKNOWN)


def said_failing(document: str, command: str) -> bool:
    """Whether the document names ``command`` as one that failed."""
    return _said_of(document, command, _FAILING)


def _said_of(document: str, command: str, how: re.Pattern[str]) -> bool:
    """An item that names ``command`` (half its key terms, or its program and subcommand) and
    says ``how`` it stands."""
    needle = _needle(command).split()
    for item in document_items(without_files(document)):
        held = Terms(item.text)
        named = held.share(command) >= HOLD_SHARE or (needle and all(map(held.holds, needle)))
        if named and how.search(item.text):
            return True
    return False


_UNKNOWN = re.compile(
    r"\b(?:unknown|unconfirmed|unclear|unverified|uncertain|whether|no (?:output|result|"
    r"response|reply)|not (?:recorded|known|confirmed|verified)|never (?:returned|came back|"
    r"finished|completed)|cut off|interrupted|check|verify|confirm)|"
    r"chưa biết|không có kết quả|không rõ|kiểm tra|xác nhận|不知道|是否|未知|确认|確認|不明|"
    r"かどうか|没有(?:任何)?(?:输出|结果)|알 수 없|확인|неизвестн|не ясно|провер|подтверд|"
    r"não se sabe|desconhecid|desconocid|sem resultado|sin resultado|verific|confirm|unbekannt|"
    r"unklar|\bob\b|prüf|inconnu|incertain|vérifi|aucun résultat|غير معروف|تحقق|تأكد",
    re.IGNORECASE,
)
"""Words that say an outcome is not known, or is to be checked."""
_FAILING = re.compile(
    r"\b(?:fail\w*|errors?|broken|never pass\w*|not pass\w*|crash\w*|cannot|can't|could not|"
    r"couldn't|unable|timed? ?out|timeout|exit(?: code)? [1-9]\d*|EPERM|EACCES)\b|"
    r"失败|失敗|エラー|실패|오류|ошибк|не удал|falh|fall[oó]|fehl|échou|فشل|lỗi|thất bại",
    re.IGNORECASE,
)
"""Words that say a command failed."""


def _needle(command: str) -> str:
    """What a command is known by: its program (and a subcommand, for the tools that have
    them: ``npm run build``), past the steps that only set up (``cd app &&``) and the wrappers
    that only run it (``uv run``, ``python -m``); a call by its function's name."""
    steps = [step.split() for step in re.split(r"&&|\|\||;|\n", command)]
    words = next((w for w in steps if w and w[0] not in _SETUP), [])
    while words and words[0] in _WRAPPERS:
        words = words[1:]
    if not words:
        return ""
    if words[0] in _INTERPRETERS and len(words) > 1 and not words[1].startswith("-"):
        return base(words[1]).casefold()  # a script is known by its name
    kept = [base(words[0]).split("(")[0]]
    for word in words[1:]:
        if word.startswith("-") or kept[0] not in _SUBCOMMANDS or len(kept) == 3:
            break
        kept.append(word)
        if word not in ("run", "exec", "x"):
            break
    return " ".join(kept).casefold()


def _command_like(span: str) -> bool:
    """Whether a span reads as a command line: a known program with arguments, or a program's
    name (small letters) given options, paths or a pipe (`luac -p`, `ghostty +show-config |
    grep font`), not a setting (`theme "dark"`) or a message."""
    words = span.split()
    if len(words) < 2:
        return False
    if words[0] in _PROGRAMS | _WRAPPERS:
        return True
    named = re.fullmatch(r"[a-z][a-z0-9_-]*", words[0]) is not None
    return named and any(w[0] in "-+|&" or "/" in w for w in words[1:])


def _unquoted(after: str) -> list[str]:
    """The commands named without backticks right after a verb of running ("ran make test and
    npm run lint", "validated with json.load"): from a program's name to the next mark."""
    found = []
    for piece in re.split(r"\s+(?:and|then|&)\s+|[,;:()]", _SPAN.sub(" ", after))[:3]:
        words = piece.split()
        while words and words[0].casefold() in _FILLERS:
            words = words[1:]
        ends = [i for i, w in enumerate(words) if w.casefold() in _AFTER_COMMAND]
        words = words[: min([*ends, 5])]
        if words and words[0] in _PROGRAMS | _WRAPPERS:
            found.append(" ".join(words).rstrip("."))
    return found


_FILLERS = frozenset("the a an with using via by through also again both all it them this".split())
_AFTER_COMMAND = frozenset(
    "after before on in for to from with so which that when while and but".split()
)


_PARTS = re.compile(r"[;\uff1b]\s*|,\s+(?=`)")
"""Where a sentence's parts end: each says of its own commands whether they ran."""


def _said_ran(items: list[Item], said: Said) -> Iterator[Contradiction]:
    """A command said to have been run ("ran", "was run", "validated with", or the like in
    another language, that outside what is still to do) that no call of the branch ran: in
    backticks, or named right after the verb; not what the user ran by hand."""
    for item in items:
        for sentence in (c for s in sentences(item.text) for c in _PARTS.split(s)):
            verb = _RAN.search(sentence)  # a past tense: a claim, even among what is to do
            if verb is None and item.place != "pending":
                verb = _RAN_OTHER.search(sentence)
            before = sentence[: verb.start()] if verb else ""
            claimed = verb is not None and not _NEGATED.search(before)
            if verb is not None and _BY_USER.search(before):
                continue  # what the user ran, on their own machine: no call of the session
            named = _SPAN.findall(sentence)
            if verb is not None and claimed:
                named += _unquoted(sentence[verb.end() :])
            for span in named:
                needle = _needle(span)
                if (
                    len(needle) < 3
                    or named_files(span) == [span]
                    or "/" in needle
                    or re.search(r"…|\.\.\.", span)
                ):
                    continue  # a file, a command cut short, or too short to look for
                if not (_command_like(span) or (claimed and needle in _PROGRAMS)):
                    continue  # a name, not a command
                if not claimed or said.ran(span):
                    continue  # said as what it is (a Dockerfile's CMD, what to run), or ran
                yield Contradiction(
                    "state",
                    "a command said to have run",
                    f"`{span}`: the document says it was run; no call of the session ran it",
                )
