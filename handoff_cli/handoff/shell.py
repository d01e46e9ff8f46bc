"""Shell commands as the facts read them: what a command line runs, how it ended (read from
what its tool printed), whether a non-zero exit is only an answer, whether it tests, builds or
only looks, and which files it wrote.

Every agent runs commands through a shell tool whose output says how the command ended in its
own words: "Exit code 1" before the output (Claude Code), "(Command exited with code 2)" after
it (pi), "Exit code: 1" or "Process exited with code 1" in a header (Codex), a JSON object with
``metadata.exit_code`` (older Codex), "failed in sandbox ... exit code: 2". ``outcome`` reads
any of them; a tool's error flag, where it sets one, is the fallback.
"""

from __future__ import annotations

import posixpath
import re
from functools import lru_cache
from itertools import pairwise
from typing import NamedTuple

import orjson

COMMAND_CHARS = 200
EXIT_REACH = 1_000
"""How far from the end of a shell tool's output its exit code is looked for."""
HEAD_REACH = 400
"""How far from its start a denial is looked for."""
HEADER_REACH = 20_000
"""How far a header can go (the command it names may be a long script)."""


# --- how a command ended ---------------------------------------------------------------------


class Outcome(NamedTuple):
    """How a shell command ended, as its tool's output says."""

    code: int | None
    """Its exit code; None when nothing says one."""
    failed: bool
    """Whether it failed: a non-zero code, or a failure with no code (a sandbox's denial, a
    rejection, the tool's error flag)."""
    output: str
    """What the command printed, without the tool's own header (or JSON wrapper)."""


_HEAD_EXIT = re.compile(
    r"^[ \t]*(?:Exit code:?|Process exited with code)[ \t]*(-?\d+)\b", re.IGNORECASE | re.MULTILINE
)
"""An exit code in the header a tool writes before the output (Claude Code's, Codex's)."""
_EXIT = re.compile(r"(?:exit(?:ed with)? code|exit status)[: ]*(-?\d+)", re.IGNORECASE)
_DENIED = re.compile(
    r"^[ \t]*(?:sandbox (?:error|denied)|failed in sandbox|exec command rejected|command rejected"
    r"|execution error|Script failed|The user doesn't want to proceed with this tool use"
    r"|apply_patch verification failed|Failed to apply patch|invalid (?:hunk|patch))",
    re.IGNORECASE | re.MULTILINE,
)
_ABORTED = re.compile(r"\s*(?:command )?(?:aborted|cancell?ed|interrupted)\.?\s*", re.IGNORECASE)
"""Matched whole, its white space around it (as ``str.strip`` takes it): a long output is never
copied to be stripped."""


def outcome(output: str, flagged: bool) -> Outcome | None:
    """How a command ended, from its tool's ``output`` and error flag (``flagged``); None when
    the user stopped it (neither passed nor failed)."""
    if _ABORTED.fullmatch(output):
        return None
    if output.startswith('{"') and '"exit_code"' in output[-400:]:
        wrapped = _json_outcome(output)
        if wrapped is not None:
            return wrapped
    head = _HEAD_EXIT.match(output) or _HEAD_EXIT.search(output, 0, _header_end(output))
    if head is not None:
        code = int(head.group(1))
        return None if code in _CTRL_C else Outcome(code, code != 0, output[head.end() :])
    tail = _exit_at_end(output)
    if tail is not None:
        code = int(tail.group(1))
        return None if code in _CTRL_C else Outcome(code, code != 0, output)
    if _DENIED.search(output, 0, HEAD_REACH):
        return Outcome(None, True, output)
    return Outcome(1 if flagged else 0, flagged, output)


_CTRL_C = frozenset((3221225786, -1073741510))
"""Windows' exit status of a program stopped by Ctrl+C (``STATUS_CONTROL_C_EXIT``): the user
stopped it, as a dev server is."""


def _header_end(output: str) -> int:
    """Where a header of Codex's ends (its ``Output:`` line, after the command, the chunk and
    the wall time): 0 for an output without one."""
    if not output.startswith(("Command:", "Chunk ID:", "Wall time:")):
        return 0
    return max(output.find("\nOutput:", 0, HEADER_REACH), 0)


def _json_outcome(output: str) -> Outcome | None:
    """An older Codex shell's ``{"output": ..., "metadata": {"exit_code": N}}``."""
    try:
        value = orjson.loads(output)
    except orjson.JSONDecodeError:
        return None
    metadata = value.get("metadata") if isinstance(value, dict) else None
    code = metadata.get("exit_code") if isinstance(metadata, dict) else None
    if not isinstance(code, int) or isinstance(code, bool):
        return None
    text = value.get("output")
    return Outcome(code, code != 0, text if isinstance(text, str) else "")


def _exit_at_end(output: str) -> re.Match[str] | None:
    """Where the end of a shell tool's output says its exit code (``_EXIT``), if it does; an
    end of plain ASCII without "exit" in any case is not searched."""
    start = max(0, len(output) - EXIT_REACH)
    end = output[start:]
    if end.isascii() and "exit" not in end.lower():
        return None
    return _EXIT.search(output, start)


# --- what a command line runs ----------------------------------------------------------------

_PREFIXES = frozenset(
    ("sudo", "time", "nice", "env", "exec", "nohup", "command", "do", "then", "else", "{", "!")
)
_OPERATORS = frozenset(("&&", "||", ";", "|", "|&", "&", ";;"))
_HEREDOC = re.compile(
    r"<<-?[ \t]*(['\"]?)([\w.-]+)\1([^\n]*)\n(.*?)(?:\n[ \t]*\2[ \t]*(?=\n|$)|\Z)", re.S
)


def _without_heredocs(command: str) -> str:
    """The command with each here-document's body taken out (``cat > f <<EOF`` ... ``EOF``):
    its lines are data, not commands."""
    if "<<" not in command:
        return command
    return _HEREDOC.sub(lambda m: f"<< {m.group(2)}{m.group(3)}\n", command)


_DISCARDED = re.compile(r"(?<![<>\w])[0-9]*>>?[ \t]*/dev/null\b|(?<![<>\w])[0-9]*>&[0-9-]")


_TOKEN = re.compile(
    r"""(?P<space>\s+)|(?P<comment>#[^\n]*)|(?P<op>&&|\|\||;;|\|&|[|&;()]|[<>]+)"""
    r"""|(?P<word>(?:'[^']*'|"(?:\\.|[^"\\])*"|\\.|[^\s|&;()<>'"\\])+)"""
)
"""A shell's tokens: white space, a comment, an operator or redirection, a word (its quoted
and escaped pieces in it)."""
_PIECE = re.compile(r"""'([^']*)'|"((?:\\.|[^"\\])*)"|\\(.)|([^'"\\]+)""", re.DOTALL)
_IN_DOUBLE_QUOTES = re.compile(r'\\([\\"$`])')
_DRIVE = re.compile(r"(?<![\w])[A-Za-z]:\\")
_BACKSLASH = re.compile(r"'[^']*'|\\")


def _words(command: str) -> list[str]:
    """The words and operators of a command line, quotes taken off as a POSIX shell takes
    them; a line a shell would not read (an unclosed quote) split at white space and
    operators."""
    if _DRIVE.search(command):
        # A Windows line (``del c:\Users\a.txt``): its backslashes separate folders, they
        # escape nothing; kept, outside single quotes, by doubling them.
        command = _BACKSLASH.sub(lambda m: m.group() if m.group()[0] == "'" else r"\\", command)
    found: list[str] = []
    at = 0
    for token in _TOKEN.finditer(command):
        if token.start() != at:
            break
        at = token.end()
        if token.lastgroup == "op":
            found.append(token.group())
        elif token.lastgroup == "word":
            found.append("".join(_unquoted(piece) for piece in _PIECE.finditer(token.group())))
    if at == len(command):
        return found
    return re.sub(r"(&&|\|\||[;|&])", r" \1 ", command).split()


def _unquoted(piece: re.Match[str]) -> str:
    single, double, escaped, plain = piece.groups()
    if double is not None:
        return _IN_DOUBLE_QUOTES.sub(r"\1", double)
    return single if single is not None else escaped if escaped is not None else plain


@lru_cache(maxsize=4096)
def segments(command: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The simple commands of a shell line: each with the operator before it ('' for the
    first) and its words, program first (its base name, after ``VAR=value``, ``sudo``...)."""
    # Each line a command of its own (a line break inside quotes adds a ';' to a string).
    command = _without_heredocs(command).replace("\\\n", " ").replace("\n", " ;\n")
    command = _DISCARDED.sub(" ", command)  # `2>/dev/null`, `2>&1`: no word of the command
    words = _words(command)
    parts: list[tuple[str, list[str]]] = [("", [])]
    for word in words:
        if word in _OPERATORS or word in ("(", ")"):
            parts.append((word, []))
        else:
            parts[-1][1].append(word)
    programs: list[tuple[str, tuple[str, ...]]] = []
    for operator, segment in parts:
        while segment and (
            segment[0] in _PREFIXES or ("=" in segment[0] and not segment[0].startswith("-"))
        ):
            segment = segment[1:]  # VAR=value, sudo, time... before the program
        if not segment:
            continue
        simple = (segment[0].rsplit("/", 1)[-1], *segment[1:])
        script = _script_of(simple)
        if script is None:
            programs.append((operator, simple))
            continue
        inner = segments(script)  # bash -lc '...': the script's own commands
        programs += [(operator, inner[0][1]), *inner[1:]] if inner else []
    return tuple(programs)


def piped(command: str) -> bool:
    """Whether the line ends in a pipe (``npm test | tail -5``): its exit status is then the
    last filter's, which says nothing of how the command before it went."""
    found = segments(command)
    return bool(found) and found[-1][0] in ("|", "|&")


_LOOKING = frozenset(
    "ag ack awk basename bat cat cd column cut date df diff dirname du echo egrep fd "
    "fgrep file find grep head hexdump jq less ls more nl od printf pwd readlink realpath rg "
    "sort stat tail test tree tr true type uniq wc which xxd zgrep [ [[ pgrep cmp "
    "Get-ChildItem Get-Content Select-String Test-Path Get-Item dir where".split()
)
_PACKAGE_MANAGERS = {
    **dict.fromkeys(("npm", "pnpm", "yarn"), frozenset(("list", "ls", "view", "outdated", "why"))),
    **dict.fromkeys(("pip", "pip3"), frozenset(("show", "list", "freeze"))),
}
"""Package managers' views: what is installed, and why."""
_GIT_LOOKING = frozenset(
    "status log show diff blame grep rev-parse ls-files ls-remote ls-tree describe shortlog "
    "reflog cat-file config".split()
)


def inspects(command: str) -> bool:
    """Whether every part of ``command`` only reads: listing, searching, printing, git's views."""

    def looks(words: tuple[str, ...]) -> bool:
        program = words[0]
        targets = [after for word, after in pairwise(words) if word in (">", ">>", ">|")]
        if any(target != "/dev/null" for target in targets):
            return False  # it writes a file
        if program == "git":
            if len(words) > 1 and words[1] in _GIT_LISTING:  # `git branch -a`, not `git tag v1`
                return all(w.startswith("-") or w == "list" for w in words[2:])
            return len(words) > 1 and words[1] in _GIT_LOOKING
        if program == "sed":
            return not any(w.startswith(("-i", "--in-place")) for w in words[1:])
        if program in _PACKAGE_MANAGERS:  # `npm list x`: exits 1 when x is not installed
            return len(words) > 1 and words[1] in _PACKAGE_MANAGERS[program]
        return program in _LOOKING

    found = segments(command)
    return bool(found) and all(looks(words) for _, words in found)


_NO_MATCH_IS_ONE = frozenset(
    "ag ack cmp diff egrep fgrep grep pgrep pkill rg test which zgrep [ [[ Select-String "
    "Test-Path".split()
)
"""Programs whose exit code 1 says "no match", "different" or "false", not that they failed."""


def only_an_answer(command: str, code: int | None, output: str = "") -> bool:
    """Whether a non-zero exit ``code`` of ``command`` is an answer, not a failure to put right:
    a line that only looked (a search that found nothing, a listing of what is not there, a
    comparison that found differences, a test that was false: ``cd x && ls specs``, ``git
    branch | rg y``), a ``pkill`` that found no process, an ``rm`` of what was not there."""
    if not code:
        return False
    found = segments(command)
    if not found:
        return False
    if inspects(command):
        return True
    last = found[-1][1]
    if code == 1 and last[0] in _NO_MATCH_IS_ONE:
        return True
    if len(found) == 1 and last[0] == "rm":
        return _NOT_THERE.search(output) is not None
    return len(found) == 1 and last[0] == "mkdir" and _THERE.search(output) is not None


_NOT_THERE = re.compile(r"No such file or directory|cannot remove .*: No such file", re.I)
_THERE = re.compile(r"File exists|already exists", re.I)
"""A folder made that was there already (POSIX's mkdir, cmd's "A subdirectory or file x
already exists.")."""
_GIT_LISTING = frozenset(("branch", "tag", "stash", "remote", "worktree"))


# --- what kind of step it is -----------------------------------------------------------------

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
    """A test command's runner and the targets it names (none: the whole suite), from the
    line's first part that runs tests (``cd app && npm test``); None for a command that runs
    no tests."""
    for operator, words in segments(command):
        if operator in ("|", "|&"):
            break  # a filter of the output
        for runner in _TEST_RUNNERS:
            if words[: len(runner)] == runner:
                rest = words[len(runner) :]
                return runner, frozenset(w for w in rest if not w.startswith("-"))
    return None


@lru_cache(maxsize=4096)
def core(command: str) -> str:
    """A command without what only filters its output (``2>&1 | tail -5``), spaces normalised."""
    return " ".join(re.sub(r"\s*2>&1|\s+\|\s.*$", "", command).split())


def covers(later: str, earlier: str) -> bool:
    """Whether a pass of ``later`` shows ``earlier`` to pass too: the same command (or one that
    runs it after steps of its own: ``pip install x && pytest``), or the same test runner over
    the whole suite or over every target ``earlier`` named."""
    mine, theirs = core(later), core(earlier)
    if mine == theirs or mine.endswith(("&& " + theirs, "; " + theirs)):
        return True
    first, second = runner_and_targets(later), runner_and_targets(earlier)
    if first is None or second is None or first[0] != second[0]:
        return False
    return not first[1] or second[1] <= first[1]


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
    for _, words in segments(command):
        program = words[0]
        if program == "git" and len(words) > 1 and words[1] in _GIT_STEPS:
            return True
        if program in _BUILDERS or runner_and_targets(" ".join(words)) is not None:
            return True
        if program.startswith("python") and words[1:3] == ("-m", "pytest"):
            return True
    return False


# --- the files it writes -----------------------------------------------------------------------

_REDIRECTS = frozenset((">", ">>", ">|", "&>", "&>>", "1>", "1>>"))
_SCRATCH = ("/dev/", "/tmp/", "/private/tmp/", "/var/folders/", "$TMPDIR", "${TMPDIR")
_OPTIONS_WITH_VALUE = {
    "sed": frozenset(("-e", "-f", "--expression", "--file")),
    "perl": frozenset(("-e", "-E", "-M", "-I")),
}
_POWERSHELL_WRITES = frozenset(
    "set-content add-content out-file new-item remove-item move-item copy-item".split()
)
_REMOVES = frozenset(("rm", "unlink", "del", "erase", "rd", "rmdir"))
_CMD_OPTION = re.compile(r"/-?[A-Za-z](?::\S*)?")
"""An option of cmd's own commands (``del /f /q``, ``copy /-Y``), where a POSIX path is not."""


def written_files(command: str, workdir: str | None = None) -> list[str]:
    """The files a command line that succeeded wrote, created, moved to or removed, as far as
    its words show (redirections, ``tee``, ``sed -i``, ``perl -i``, ``mv``, ``cp``, ``rm``,
    ``touch``, ``git mv``/``git rm``, PowerShell's content and item commands, cmd's ``del``,
    ``erase``, ``rd``, ``move`` and ``copy``): best effort,
    never a file under a scratch folder. Relative paths are taken from ``workdir`` and the
    line's own ``cd``."""
    if _WRITES.search(command) is None:
        return []  # most lines: nothing in them writes
    found: list[str] = []
    here = workdir
    loops: dict[str, tuple[str, ...]] = {}
    removed: set[str] = set()
    """Written, then removed by the same line: scratch, nothing changed."""
    for _, words in segments(command):
        program = words[0]
        if program == "cd" and len(words) == 2:
            here = _joined(here, words[1])
            continue
        if program == "for" and len(words) > 3 and words[2] == "in":
            loops[words[1]] = words[3:]  # `for f in a b; do ... > "$f"; done`
            continue
        redirected = [after for word, after in pairwise(words) if word in _REDIRECTS]
        targets = redirected + _program_targets(program, words[1:])
        operands = set(targets) - set(redirected)
        for target in targets:
            variable = _VARIABLE.fullmatch(target)
            named = loops.get(variable.group(1), ()) if variable else (target,)
            removes = program.casefold() in _REMOVES or words[1:2] == ("rm",)
            paths = [
                _joined(here, t)
                for t in named
                if (_is_operand(t, removes) if target in operands else _is_file_word(t))
            ]
            if program.casefold() in _REMOVES:
                removed.update(p for p in paths if p in found)
            found += paths
    return [path for path in dict.fromkeys(found) if path not in removed]


_WRITES = re.compile(
    r">|\b(?:tee|sed|perl|mv|cp|install|rm|unlink|touch|git|Set-Content|Add-Content|Out-File|"
    r"New-Item|Remove-Item|Move-Item|Copy-Item|del|erase|rd|rmdir|move|copy)\b|-o\b|-O\b|-out|"
    r"--out|-keyout",
    re.IGNORECASE,
)
"""A word of every way ``written_files`` knows to write a file: a line without one writes none."""
_VARIABLE = re.compile(r"\$\{?(\w+)\}?")
_OUTPUT_OPTIONS = frozenset(("--output", "--out", "--output-file", "-out", "-keyout", "--outfile"))
_OUTPUT_O = frozenset("curl gcc g++ cc clang clang++ go rustc zig pandoc".split())


SHELLS = frozenset(
    "bash sh zsh dash ksh fish pwsh pwsh.exe powershell powershell.exe cmd.exe".split()
)


def _script_of(words: tuple[str, ...]) -> str | None:
    """The script a shell is given to run (``bash -lc 'script'``, ``pwsh -Command script``)."""
    if words[0] not in SHELLS:
        return None
    for flag, script in pairwise(words):
        if flag.startswith("-") and flag.casefold().lstrip("-") in ("c", "lc", "ic", "command"):
            return script
    return None


def _program_targets(program: str, args: tuple[str, ...]) -> list[str]:
    outputs = [v for o, v in pairwise(args) if o in _OUTPUT_OPTIONS or (o == "-o" and program in
               _OUTPUT_O) or (o == "-O" and program == "wget")]  # fmt: skip
    outputs += [
        a.split("=", 1)[1] for a in args if a.split("=", 1)[0] in _OUTPUT_OPTIONS and "=" in a
    ]
    return outputs + _named_targets(program, args)


def _named_targets(program: str, args: tuple[str, ...]) -> list[str]:
    plain = _operands(program, args)
    lowered = program.casefold()
    if program == "tee" or program == "touch":
        return plain
    if program in ("sed", "perl") and any(a.startswith(("-i", "--in-place", "-pi")) for a in args):
        explicit = any(a in _OPTIONS_WITH_VALUE[program] for a in args)
        return plain if explicit else plain[1:]  # the first operand is the script
    if program in ("mv", "cp", "install") and len(plain) >= 2:
        return plain[-1:] + (plain[:-1] if program == "mv" else [])
    if program in ("rm", "unlink"):
        return plain
    if lowered in ("del", "erase", "rd", "rmdir", "move", "copy"):
        named = [a for a in plain if _CMD_OPTION.fullmatch(a) is None]
        if lowered in ("del", "erase", "rd", "rmdir"):
            return named
        return (named[-1:] + (named[:-1] if lowered == "move" else [])) if len(named) >= 2 else []
    if program == "git" and plain[:1] == ["mv"] and len(plain) >= 3:
        return plain[1:]
    if program == "git" and plain[:1] == ["rm"]:
        return plain[1:]
    if lowered in _POWERSHELL_WRITES:
        return _powershell_paths(args)
    return []


def _operands(program: str, args: tuple[str, ...]) -> list[str]:
    """The words that are not options (nor an option's value) and not redirections."""
    valued = _OPTIONS_WITH_VALUE.get(program, frozenset())
    kept: list[str] = []
    skip = False
    for word, previous in zip(args, ("", *args), strict=False):
        if skip or not word:  # an option's value, or '' (`sed -i ''`, no suffix)
            skip = False
            continue
        if word in _REDIRECTS or previous in _REDIRECTS or word in ("<", "<<", "2>", "2>>"):
            continue
        if word.startswith("-") and len(word) > 1:
            skip = word in valued
            continue
        kept.append(word)
    return kept


def _powershell_paths(args: tuple[str, ...]) -> list[str]:
    named = [after for word, after in pairwise(args) if word.casefold() in ("-path", "-filepath",
             "-literalpath", "-destination")]  # fmt: skip
    if named:
        return named
    first = next((a for a in args if not a.startswith("-")), None)
    return [first] if first else []


def _is_file_word(word: str) -> bool:
    """A word shaped as a path (a folder in it, or a name with an extension), not an option,
    a glob or a scratch file: what a line that is no shell's (a password in angle brackets,
    a PHP array) splits into is seldom so."""
    if word.startswith(("-", "/dev/")) or word.startswith(_SCRATCH):
        return False
    return _PATH_SHAPED.fullmatch(word) is not None and any(c.isalnum() for c in word)


def _is_operand(word: str, removes: bool) -> bool:
    """A file a program named to write, move or remove (``mv a b``, ``rm build.*``): any word
    that is no option or scratch file, a folder too, and a glob as written when it removes
    what matches (a glob moved is said by where it went)."""
    if word.startswith(("-", "/dev/")) or word.startswith(_SCRATCH):
        return False
    if not removes and any(c in word for c in "*?["):
        return False
    return _OPERAND.fullmatch(word) is not None and any(c.isalnum() for c in word)


_OPERAND = re.compile(r"[\w.~/\\:@+$%{}*?\[\]-]+")
_PATH_SHAPED = re.compile(r"(?=.*[./\\])[\w.~/\\:@+$%{}-]+")


def _joined(folder: str | None, path: str) -> str:
    if folder is None or path.startswith(("/", "~", "$")) or re.match(r"[A-Za-z]:[\\/]", path):
        return path
    return posixpath.normpath(posixpath.join(folder, path))
