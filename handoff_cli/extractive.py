"""The built-in extractive handoff writer: the six-section document, made from the session itself.

No model, no key, no network: free, instant and reproducible (the same request gives the same
bytes). It reads the very request a real model would get, the chat messages built by
``prompt.to_chat`` followed by the handoff prompt, and picks the facts out of it: the first
request, the user's rules, files written and read, commands run and how they ended, the state
the conversation stopped in, and what the latest compaction summary already says.
``model.py`` offers it to LiteLLM as the model ``handoff/extractive``, so it runs through
exactly the same pipeline as any other model.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .jsonl import parse_line
from .prompt import (
    BASH_INTRO,
    BRANCH_INTRO,
    COMPACTION_INTRO,
    CUSTOM_INTRO,
    FOCUS_INTRO,
    RESULT_INTRO,
    SECTIONS,
    ChatMessage,
)
from .text import text_of

QUOTE_CHARS = 600
LIST_ITEMS = 12
OUTPUT_TAIL_LINES = 12

# Words that make a sentence a rule; "I don't ..." is a statement, not a rule.
_RULE = re.compile(
    r"\b(always|never|must|mustn't|should|shouldn't|prefer|avoid|make sure|no new)\b"
    r"|(?<!\bi )\b(don't|do not)\b|^(keep|stick to|stay)\b",
    re.IGNORECASE,
)
_SLASH_COMMAND = re.compile(r"/\S+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_PLAN = re.compile(r"\b(next|then|I'll|I will|will|plan|todo|remaining|left to)\b", re.IGNORECASE)
_EXIT_CODE = re.compile(r"\(exit code (-?\d+)\)")
_SUMMARY = re.compile(r"<summary>\n(.*)\n</summary>", re.DOTALL)
_PATH_KEYS = ("path", "file_path", "filePath", "filename", "file", "target_file", "notebook_path")
_WRITE_TOOLS = ("write", "edit", "patch", "replace", "create", "insert", "move", "delete")
_READ_TOOLS = ("read", "view", "cat", "open", "grep", "find", "ls", "glob", "search")
_SHELL_TOOLS = ("bash", "shell", "exec", "run", "terminal", "command")


@dataclass
class _Facts:
    """What the conversation shows, in order of appearance."""

    requests: list[str] = field(default_factory=list)
    answered_last_request: bool = True
    summaries: list[str] = field(default_factory=list)
    last_assistant: str = ""
    written: list[str] = field(default_factory=list)
    read: list[str] = field(default_factory=list)
    succeeded: list[str] = field(default_factory=list)
    failed_command: tuple[str, str, str] | None = None  # command, how it ended, output
    tool_error: tuple[str, str] | None = None  # tool, output


def write_document(messages: list[ChatMessage]) -> str:
    """The handoff document for a handoff request (context messages, then the prompt)."""
    focus = _focus(messages[-1]) if messages else None
    facts = _read(messages[:-1])
    summary = facts.summaries[-1] if facts.summaries else ""
    terms = _terms(focus)
    sections = {
        "Goal": _goal(facts, summary, focus),
        "Constraints & Preferences": _bullets(_constraints(facts, summary), terms),
        "Progress": _progress(facts, terms),
        "Key Decisions": _section_of(summary, "Key Decisions") or "- (none recorded)",
        "Critical Context": _critical(facts, terms),
        "Next Steps": _next_steps(facts),
    }
    return "\n\n".join(f"## {name}\n{sections[name]}" for name in SECTIONS) + "\n"


# --- reading the request -----------------------------------------------------------------------


def _focus(prompt: ChatMessage) -> str | None:
    text = text_of(prompt.get("content"), "\n")
    start = text.rfind(FOCUS_INTRO)
    return text[start + len(FOCUS_INTRO) :].strip() or None if start >= 0 else None


def _arguments(call: dict[str, Any]) -> dict[str, Any]:
    raw = call.get("function", {}).get("arguments", "")
    try:
        value = parse_line(raw.encode(errors="surrogatepass")) if isinstance(raw, str) else raw
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _path(arguments: dict[str, Any]) -> str | None:
    return next((arguments[k] for k in _PATH_KEYS if isinstance(arguments.get(k), str)), None)


def _command(arguments: dict[str, Any]) -> str | None:
    return next(
        (arguments[k] for k in ("command", "cmd", "script") if isinstance(arguments.get(k), str)),
        None,
    )


def _add(items: list[str], item: str) -> None:
    if item not in items:
        items.append(item)


def _read(messages: Iterable[ChatMessage]) -> _Facts:
    facts = _Facts()
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    for message in messages:
        role, text = message.get("role"), text_of(message.get("content"), "\n")
        if role == "user":
            _read_user(facts, text)
        elif role == "assistant":
            if text.strip():
                facts.last_assistant = text.strip()
            facts.answered_last_request = True
            for call in message.get("tool_calls") or []:
                name = str(call.get("function", {}).get("name", ""))
                calls[call.get("id", "")] = (name, _arguments(call))
        elif role == "tool":
            name, arguments = calls.get(message.get("tool_call_id", ""), ("", {}))
            _read_result(facts, name, arguments, text)
    return facts


def _read_user(facts: _Facts, text: str) -> None:
    if text.startswith((COMPACTION_INTRO, BRANCH_INTRO)):
        found = _SUMMARY.search(text)
        if found and text.startswith(COMPACTION_INTRO):
            facts.summaries.append(found.group(1))
    elif text.startswith(BASH_INTRO):
        command, _, rest = text[len(BASH_INTRO) :].partition("\n")
        code = _EXIT_CODE.search(rest)
        if code is None and "(cancelled)" not in rest:
            _add(facts.succeeded, command)
        elif code is not None:
            output = rest[: code.start()].strip().removeprefix("```").removesuffix("```")
            facts.failed_command = (command, f"exit code {code.group(1)}", output.strip())
    elif not text.startswith((RESULT_INTRO, CUSTOM_INTRO)) and text.strip():
        if _SLASH_COMMAND.fullmatch(text.strip()):
            return  # a command to the agent itself (e.g. "/model"), not a request
        facts.requests.append(text.strip())
        facts.answered_last_request = False


def _kind(name: str, family: tuple[str, ...]) -> bool:
    lowered = name.lower()
    return any(word in lowered for word in family)


def _read_result(facts: _Facts, name: str, arguments: dict[str, Any], text: str) -> None:
    failed = text.startswith("[error]")
    path, command = _path(arguments), _command(arguments)
    if failed:
        facts.tool_error = (name or "a tool", text.removeprefix("[error]").strip())
        if command is not None:
            code = _EXIT_CODE.search(text) or re.search(r"exit(?:ed with)? code (-?\d+)", text)
            status = f"exit code {code.group(1)}" if code else "failed"
            facts.failed_command = (command, status, facts.tool_error[1])
        return
    if path is not None and _kind(name, _WRITE_TOOLS):
        _add(facts.written, path)
    elif path is not None and _kind(name, _READ_TOOLS):
        _add(facts.read, path)
    elif command is not None and _kind(name, _SHELL_TOOLS):
        _add(facts.succeeded, command)


# --- writing the sections ----------------------------------------------------------------------


def _terms(focus: str | None) -> list[str]:
    return [w for w in re.findall(r"[\w./-]{3,}", (focus or "").casefold())]


def _focused(items: list[str], terms: list[str]) -> list[str]:
    """Items that mention the focus first, each group in its own order."""
    if not terms:
        return items
    hits = [i for i in items if any(t in i.casefold() for t in terms)]
    return hits + [i for i in items if i not in hits]


def _quote(text: str, limit: int = QUOTE_CHARS) -> str:
    text = text.strip()
    if len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    return "\n".join(f"> {line}" if line else ">" for line in text.splitlines())


def _section_of(summary: str, name: str) -> str:
    """A section's body in a Markdown summary written in the six-section format."""
    found = re.search(
        rf"^##[ \t]+{re.escape(name)}[ \t]*\n(.*?)(?=^##[ \t]+\S|\Z)", summary, re.M | re.S
    )
    return found.group(1).strip() if found else ""


def _bullets(items: list[str], terms: list[str], empty: str = "- (none recorded)") -> str:
    chosen = _focused(items, terms)[:LIST_ITEMS]
    return "\n".join(f"- {item}" for item in chosen) if chosen else empty


def _code(text: str) -> str:
    return f"`{text}`" if "`" not in text and "\n" not in text else text.replace("\n", " ")


def _goal(facts: _Facts, summary: str, focus: str | None) -> str:
    parts = []
    earlier = _section_of(summary, "Goal")
    if earlier:
        parts.append("From the latest compaction summary:\n" + _quote(earlier))
    if facts.requests:
        parts.append("The first request in the conversation:\n" + _quote(facts.requests[0]))
    if focus:
        parts.append(f"Focus of this handoff: {focus}")
    return "\n\n".join(parts) or "- (no request recorded)"


def _constraints(facts: _Facts, summary: str) -> list[str]:
    found: list[str] = []
    seen: set[str] = set()
    for request in facts.requests:
        for sentence in _SENTENCE_END.split(request):
            sentence = " ".join(sentence.split()).strip("-* ")
            if sentence and _RULE.search(sentence) and sentence.casefold() not in seen:
                seen.add(sentence.casefold())
                found.append(sentence)
    for line in _section_of(summary, "Constraints & Preferences").splitlines():
        item = line.strip().lstrip("-* ").strip()
        if item and item.casefold() not in seen:
            seen.add(item.casefold())
            found.append(item)
    return found


def _progress(facts: _Facts, terms: list[str]) -> str:
    done = [f"Wrote or edited {_code(p)}" for p in facts.written]
    done += [f"Ran {_code(c)} (succeeded)" for c in facts.succeeded]
    in_progress = _quote(facts.last_assistant) if facts.last_assistant else "- (nothing)"
    pending = "- (none)"
    if facts.requests and not facts.answered_last_request:
        pending = "The last request has no answer yet:\n" + _quote(facts.requests[-1])
    return (
        f"### Done\n{_bullets(done, terms, '- (nothing recorded)')}\n\n"
        f"### In Progress\nThe last assistant message:\n{in_progress}\n\n"
        f"### Pending\n{pending}"
    )


def _critical(facts: _Facts, terms: list[str]) -> str:
    lines = []
    if facts.read:
        lines.append("- Files read: " + ", ".join(_code(p) for p in _focused(facts.read, terms)))
    if facts.written:
        modified = ", ".join(_code(p) for p in _focused(facts.written, terms))
        lines.append("- Files modified: " + modified)
    if facts.failed_command is not None:
        command, status, output = facts.failed_command
        tail = "\n".join(output.splitlines()[-OUTPUT_TAIL_LINES:])
        lines.append(f"- Last failing command: {_code(command)} ({status})")
        if tail:
            lines.append("```\n" + tail + "\n```")
    if facts.tool_error is not None and (
        facts.failed_command is None or facts.tool_error[1] != facts.failed_command[2]
    ):
        name, output = facts.tool_error
        lines.append(f"- Last tool error ({name}): " + " ".join(output.split())[:300])
    return "\n".join(lines) or "- (nothing recorded)"


def _next_steps(facts: _Facts) -> str:
    steps = []
    if facts.requests:
        last = " ".join(facts.requests[-1].split())
        steps.append(f"Pick up from the last request: {last[:QUOTE_CHARS]}")
    plan = [s for s in _SENTENCE_END.split(facts.last_assistant) if _PLAN.search(s)]
    if plan:
        steps.append("Follow the assistant's stated plan: " + " ".join(plan)[:QUOTE_CHARS])
    elif facts.last_assistant:
        steps.append("Check where the last assistant message left off (see Progress).")
    return "\n".join(f"{n}. {step}" for n, step in enumerate(steps, 1)) or "1. (none recorded)"
