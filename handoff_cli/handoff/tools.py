"""The tool calls that touch files, whichever agent or harness made them, and how to tell from a
result that a call failed.

Agents and their extensions name the same few operations differently: ``read``/``Read``/
``read_file``/``view``, ``write``/``Write``/``create_file``, ``edit``/``Edit``/``MultiEdit``/
``str_replace``/``replace``/``apply_diff``, ``apply_patch``; and the file under ``path``,
``file_path``, ``filePath``, ``file``, ``notebook_path``, ``target_file``... A call is read by the
family its name belongs to (case and separators aside) and the first path argument it has;
oh-my-pi's own ``read``, ``write`` and ``edit`` by the agent's rule (``omp.file_operation``),
which its compaction lists files by: a new session's ``<files>`` block and an in-place one
agree. A patch in Codex's grammar (``*** Update File: x``) is read wherever it is: an
``apply_patch`` call's input, or a shell command that pipes one to ``apply_patch``.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, NamedTuple

from handoff_cli.agents.omp import file_operation, strip_read_selector
from handoff_cli.text import is_url


class FileCall(NamedTuple):
    """The files a tool call reads and those it changes (writes, edits, creates, deletes,
    moves to or from)."""

    reads: tuple[str, ...] = ()
    changes: tuple[str, ...] = ()


def _family(*names: str) -> frozenset[str]:
    return frozenset(names)


_READS = _family(
    "read", "readfile", "view", "viewfile", "openfile", "cat", "readmanyfiles", "getfile",
    "getfilecontents", "readtextfile", "fileread",
)  # fmt: skip
_WRITES = _family(
    "write", "writefile", "createfile", "create", "filewrite", "savefile", "writetofile",
    "edit", "editfile", "multiedit", "multi_edit", "strreplace", "replace", "replaceinfile",
    "searchreplace", "searchandreplace", "applydiff", "insert", "insertcontent",
    "notebookedit", "editnotebook", "astedit", "filesedit", "patch", "deletefile", "removefile",
    "delete", "movefile", "renamefile", "move", "rename", "hashlineedit",
)  # fmt: skip
_EDITORS = _family("strreplaceeditor", "strreplacebasededittool", "texteditor", "fileeditor")
"""Tools that read or change by a ``command`` argument (``view`` reads, the rest change)."""
_PATCHERS = _family("applypatch")

_PATH_KEYS = (
    "path", "file_path", "filePath", "filepath", "file", "filename", "fileName", "notebook_path",
    "notebookPath", "target_file", "targetFile", "absolute_path", "absolutePath", "relative_path",
    "relativePath", "p",
)  # fmt: skip
_MOVE_KEYS = (
    ("source", "destination"), ("from", "to"), ("old_path", "new_path"), ("oldPath", "newPath"),
    ("src", "dst"), ("source_path", "destination_path"),
)  # fmt: skip
_LIST_KEYS = ("paths", "files", "file_paths", "filePaths")
_PATCH_KEYS = ("input", "patch", "diff", "content")
_PATCH_FILE = re.compile(r"^\*\*\* (?:(?:Add|Update|Delete) File|Move to): (.+?)\s*$", re.M)


@lru_cache(maxsize=256)  # a session calls the same few tools
def _normal(name: str) -> str:
    # The tool's own name, past any namespace (``mcp__fs__write_file``, ``functions.edit``).
    last = re.split(r"__|[.:/]", name)[-1]
    return re.sub(r"[^a-z0-9]", "", last.casefold())


def file_call(tool: Any, arguments: Any) -> FileCall | None:
    """What a call of ``tool`` with ``arguments`` reads and changes; None for a call that
    touches no file it names (a shell's command is read by ``shell.written_files``)."""
    if not isinstance(tool, str) or not isinstance(arguments, dict):
        return None
    own = file_operation(tool, arguments)
    if own is not None:
        return FileCall((), (own.path,)) if own.written else FileCall((own.path,), ())
    name = _normal(tool)
    if name in _PATCHERS:
        patch = next((arguments[k] for k in _PATCH_KEYS if isinstance(arguments.get(k), str)), "")
        return FileCall((), tuple(patched_files(patch)))
    if name in _EDITORS:
        reading = str(arguments.get("command", "")).casefold() == "view"
        paths = _paths(arguments)
        return FileCall(paths, ()) if reading else FileCall((), paths)
    if name in _READS:
        return FileCall(tuple(strip_read_selector(p) for p in _paths(arguments)), ())
    if name in _WRITES:
        return FileCall((), _paths(arguments))
    return None


def _paths(arguments: dict[str, Any]) -> tuple[str, ...]:
    found: list[str] = []
    for key in _PATH_KEYS:
        value = arguments.get(key)
        if isinstance(value, str) and value.strip():
            found.append(value)
            break
    for source, target in _MOVE_KEYS:
        found += [v for v in (arguments.get(source), arguments.get(target)) if isinstance(v, str)]
    for key in _LIST_KEYS:
        for item in arguments.get(key) or () if isinstance(arguments.get(key), list) else ():
            value = item if isinstance(item, str) else _first_path(item)
            if value:
                found.append(value)
    return tuple(p for p in dict.fromkeys(found) if not is_url(p))


def _first_path(item: Any) -> str | None:
    if not isinstance(item, dict):
        return None
    return next((item[k] for k in _PATH_KEYS if isinstance(item.get(k), str)), None)


def patched_files(text: str) -> list[str]:
    """The files a patch in Codex's grammar changes: each it adds, updates, deletes or moves to
    (its ``*** … File:`` and ``*** Move to:`` lines)."""
    if "*** " not in text:
        return []
    return list(dict.fromkeys(_PATCH_FILE.findall(text)))


# --- whether a result says the call failed -------------------------------------------------------

_FAILED_FIRST_LINE = re.compile(
    r"^\s*(?:<tool_use_error>|\{\s*\"status\"\s*:\s*\"error\"|error\b|\w*Error:|fatal:|failed\b"
    r"|ENOENT|EACCES|EISDIR|EPERM|permission denied|no such file|file not found|file does not "
    r"exist|could not find|cannot find|unable to|apply_patch verification failed|"
    r"The user doesn't want to proceed|Exit code:? [1-9])",
    re.IGNORECASE,
)
_MISSING = re.compile(
    r"ENOENT|no such file|file not found|does not exist|doesn't exist|cannot find the (?:file|path)"
    r"|could not find (?:the )?file|not found:|path not found|path '[^'\n]*' not found",
    re.IGNORECASE,
)
_REJECTED = re.compile(
    r"The user doesn't want to proceed with this tool use|rejected by (?:the )?user|"
    r"was cancell?ed by the user"
)
FIRST_LINE_CHARS = 400


def failed(text: str, flagged: bool) -> bool:
    """Whether a tool's result says the call failed: the agent's error flag, or an error's
    shape at the start of what it returned (an error tag, ``{"status": "error"}``, "Error:",
    ENOENT, "File does not exist", a rejection, a non-zero exit code)."""
    if flagged:
        return True
    return _FAILED_FIRST_LINE.match(text[:FIRST_LINE_CHARS]) is not None


def missing(text: str) -> bool:
    """Whether a failed result says that the file is not there."""
    return _MISSING.search(text[:FIRST_LINE_CHARS]) is not None


def rejected(text: str) -> bool:
    """Whether the user refused the call (it did not run)."""
    return _REJECTED.search(text[:FIRST_LINE_CHARS]) is not None
