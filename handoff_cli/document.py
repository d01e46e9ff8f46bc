"""The handoff document's form: its six sections, the wrapper a new session holds it in, the
``<files>`` block, and the marks by which a session shows that it holds one.

A small module of plain functions, so that every module that reads or writes documents (the
facts, the prompt, the built-in writer, the listing) agrees on one form (docs/handoff.md §4).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any, TypeGuard

from handoff_cli.text import URL_SCHEME

SECTIONS = (
    "Goal",
    "Constraints & Preferences",
    "Progress",
    "Key Decisions",
    "Critical Context",
    "Next Steps",
)


def section_list(sections: tuple[str, ...]) -> str:
    """Sections as the prompts name them, in order."""
    return ", ".join(f"`## {name}`" for name in sections)


HANDOFF_TYPE = "handoff"
"""The ``customType`` of the message a handed-off session starts with, and the ``method`` of
oh-my-pi's own in-place handoff (a compaction)."""

PROMPT_OPENINGS = (
    "Write a handoff document for the work in this conversation.",
    "Update the handoff document of this coding session.",
)
"""How our prompts begin: a user message that begins so is a handoff recorded in a session."""


STARTING_TYPES = frozenset({"model_change", "thinking_level_change", "turn_context"})
"""What an agent writes first in a session it starts, before anything else of it (Codex: the
model of its first turn)."""


def opens_session(entry: Any) -> bool:
    """Whether ``entry`` is one of what an agent writes first in a session it starts."""
    kind = entry.get("type") if isinstance(entry, dict) else None
    return isinstance(kind, str) and kind in STARTING_TYPES  # a list as the type is not hashable


def is_handoff_start(entry: Any) -> bool:
    """Whether ``entry``, the first of a session after those its start writes
    (``opens_session``), is a handoff document: the session was handed off to."""
    return (
        isinstance(entry, dict)
        and entry.get("type") == "custom_message"
        and entry.get("customType") == HANDOFF_TYPE
    )


def is_handoff_start_message(message: Any) -> TypeGuard[dict[str, Any]]:
    """Whether ``message`` is a handoff document as a message of the shared shape (a Claude
    Code session's first prompt, read as the pi family's handoff entry): it was handed off to."""
    return (
        isinstance(message, dict)
        and message.get("role") == "custom"
        and message.get("customType") == HANDOFF_TYPE
    )


def is_handoff_prompt(text: str) -> bool:
    """Whether a user message is one of our prompts, recorded by an earlier handoff."""
    return text.startswith(PROMPT_OPENINGS)


WRAPPER_OPEN = "<handoff-context>\n"
WRAPPER_CLOSE = (
    "\n</handoff-context>\n\nThe above is a handoff document from a previous session. "
    "Use this context to continue the work seamlessly."
)
_CLOSING_TAG = re.compile(r"<(\s*/\s*handoff-context\s*)>", re.IGNORECASE)
_ESCAPED_TAG = re.compile(r"&lt;(\s*/\s*handoff-context\s*)&gt;", re.IGNORECASE)


def wrap_document(document: str) -> str:
    """The content of the new session's handoff message, as the agent writes it. A closing
    tag inside the document is escaped, so the wrapper closes exactly once, at its end."""
    return WRAPPER_OPEN + _CLOSING_TAG.sub(r"&lt;\1&gt;", document) + WRAPPER_CLOSE


def unwrap_document(content: str) -> str:
    """The document a handoff message holds (what ``wrap_document`` wrapped)."""
    if content.startswith(WRAPPER_OPEN) and content.endswith(WRAPPER_CLOSE):
        content = content[len(WRAPPER_OPEN) : -len(WRAPPER_CLOSE)]
    return _ESCAPED_TAG.sub(r"<\1>", content).strip()


def summarised_document(summary: str) -> str | None:
    """The handoff document a compaction's summary holds when an in-place handoff wrote it as
    the agent's own compaction (Codex's: the agent's line of introduction, then the document
    wrapped as a new session holds it); None for any other summary."""
    at = summary.find(WRAPPER_OPEN)
    if at < 0 or (at > 0 and summary[at - 1] != "\n") or not summary.endswith(WRAPPER_CLOSE):
        return None
    return unwrap_document(summary[at:])


_HEADING = re.compile(r"^##[ \t]+(.+?)[ \t]*#*[ \t]*$", re.MULTILINE)

Sections = tuple[tuple[str, str], ...]
"""A Markdown document's ``## `` sections, in order: (heading, body)."""


def sections_of(document: str) -> Sections:
    """The ``## `` sections of a Markdown document; text before the first heading (but the
    ``<files>`` block), if any, under the heading ''."""
    document = without_files(document)
    found: list[tuple[str, str]] = []
    matches = list(_HEADING.finditer(document))
    head = document[: matches[0].start()] if matches else document
    if head.strip():
        found.append(("", head.strip()))
    ends = [m.start() for m in matches[1:]] + [len(document)] * bool(matches)
    for match, end in zip(matches, ends, strict=True):
        body = document[match.end() : end].strip()
        found.append((" ".join(match.group(1).rstrip(":").split()), body))
    return tuple(found)


def missing_sections(document: str, sections: tuple[str, ...] = SECTIONS) -> list[str]:
    """The required ``sections`` the document lacks, or has out of order (empty when it is
    right)."""
    found = [heading.casefold() for heading, _ in sections_of(document) if heading]
    missing: list[str] = []
    position = 0
    for name in sections:
        try:
            position = found.index(name.casefold(), position) + 1
        except ValueError:
            missing.append(name)
    return missing


# --- the <files> block, as oh-my-pi 18 appends it to its handoff and compaction summaries ---

FILES_SHOWN = 20
_FILE_TAGS = re.compile(
    r"<files>[\s\S]*?</files>\s*|<read-files>[\s\S]*?</read-files>\s*"
    r"|<modified-files>[\s\S]*?</modified-files>\s*"
)


def without_files(document: str) -> str:
    """The document without its file blocks (ours, or the older read/modified pair)."""
    return _FILE_TAGS.sub("", document).rstrip()


def files_block(
    read_files: Iterable[str], modified_files: Iterable[str], read_set: set[str] | frozenset[str]
) -> str:
    """The ``<files>`` tag: the paths as a folded folder tree (``# dir/`` headers, one ``#`` a
    level, bare names), each marked ``(Read)``, ``(Write)`` or ``(RW)`` (changed after being
    read); the first 20 in JavaScript's sort order, then a line saying how many were left out.
    Empty when there are no files."""
    mode = {path: "Read" for path in read_files}
    for path in modified_files:
        mode[path] = "RW" if path in read_set else "Write"
    if not mode:
        return ""
    ordered = sorted(mode, key=js_order)
    lines = _tree_lines(ordered[:FILES_SHOWN], lambda path: f" ({mode[path]})")
    if len(ordered) > FILES_SHOWN:
        lines.append(f"[…{len(ordered) - FILES_SHOWN} files elided…]")
    return "<files>\n" + "\n".join(lines) + "\n</files>"


def with_files(document: str, block: str) -> str:
    """The document with ``block`` as its one file block, at its end."""
    base = without_files(document)
    if not block:
        return base
    return f"{base}\n\n{block}" if base else block


def js_order(text: str) -> bytes:
    """JavaScript's default sort order (UTF-16 code units), which the agents list files in."""
    return text.encode("utf-16-be", "surrogatepass")


class _Folder:
    def __init__(self) -> None:
        self.files: dict[str, str] = {}  # name -> the path it came from, in first-seen order
        self.folders: dict[str, _Folder] = {}


def _tree_lines(paths: list[str], mark: Callable[[str], str]) -> list[str]:
    root = _Folder()
    for path in paths:
        normal = path.replace("\\", "/")
        if URL_SCHEME.match(normal):  # a resource, listed whole
            root.files.setdefault(normal, path)
            continue
        is_folder = normal.endswith("/")
        trimmed = normal[:-1] if is_folder else normal
        if not trimmed:
            continue
        segments = trimmed.split("/")
        node = root
        for folder in segments if is_folder else segments[:-1]:
            node = node.folders.setdefault(folder, _Folder())
        if not is_folder:
            node.files.setdefault(segments[-1], path)
    lines = [name + mark(path) for name, path in root.files.items()]
    # Depth first, as written: a folder's line, its files, then its folders. A stack of its
    # own: a path of a thousand folders is not a thousand calls deep.
    stack = [(iter(root.folders.items()), 0)]
    while stack:
        folders, depth = stack[-1]
        for name, inner in folders:
            chain = [name]
            while not inner.files and len(inner.folders) == 1:
                ((only, inner),) = inner.folders.items()
                chain.append(only)
            lines.append(f"{'#' * (depth + 1)} {'/'.join(chain)}/")
            lines.extend(file + mark(path) for file, path in inner.files.items())
            stack.append((iter(inner.folders.items()), depth + 1))
            break
        else:
            stack.pop()
    return lines
