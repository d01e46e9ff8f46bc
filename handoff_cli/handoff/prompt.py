"""The handoff request: the context as chat messages, then the handoff prompt.

The context (the agent's own messages) becomes OpenAI-format chat messages, which LiteLLM
translates for every provider. The conversation is made valid for the strictest providers:
each tool call is answered by results that directly follow it, and each tool result answers
such a call; anything else is kept as plain user-side text rather than dropped.

Also here: the prompt's six sections, and the user's own prompt in their place
(``Template``, ``--prompt-file``). The prompt and the focus are sent literally: a template's
one placeholder, ``{focus}``, is filled in once, and the focus itself is never read for one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from handoff_cli.agents.context import Message
from handoff_cli.document import PROMPT_OPENINGS, SECTIONS, section_list
from handoff_cli.errors import UsageError
from handoff_cli.handoff.facts import Facts
from handoff_cli.llm.table import ChatMessage as ChatMessage
from handoff_cli.options import DEFAULT_DOCUMENT_TOKENS
from handoff_cli.sessions.js import js_string
from handoff_cli.sessions.jsonl import dumps
from handoff_cli.text import CutText

_TASK = """\
A new session of the coding agent will continue the work with this document as its only \
context: it cannot see this conversation, the tool results, or anything said so far.

Answer with the Markdown document alone, made of exactly these six sections, in this order:

## Goal
What the user is trying to achieve, in their own terms, and the task in hand right now.

## Constraints & Preferences
Every rule, requirement and preference the user stated or the work depends on.

## Progress
### Done
### In Progress
### Pending
What is finished, what is half done (and in what state), and what has not been started.

## Key Decisions
The choices made and why, including approaches tried and abandoned.

## Critical Context
What the next session cannot work without: exact file paths, names of functions, classes and \
variables, commands and what they printed, error messages, versions, and the exact state of any \
unfinished change.

## Next Steps
A numbered list of what to do next, the most urgent first.

Be concrete: keep paths, names, commands and errors exactly as they appear, and do not invent \
anything the conversation does not show. Write nothing before the first heading or after the \
last section. Keep the document under about {tokens:,} tokens."""

HANDOFF_PROMPT = PROMPT_OPENINGS[0] + " " + _TASK
_PREVIOUS = (
    " Its previous handoff document is below; the messages before this one are what happened "
    "since it was written. Rewrite the document so that it holds what is still true, changed "
    "where the work changed it and with what the work added: it must not grow with each "
    "update, so drop what no longer matters.\n\n<document>\n{document}\n</document>\n\n"
)
UPDATE_PROMPT = PROMPT_OPENINGS[1] + _PREVIOUS + _TASK
REQUEST_CHARS = 160
REQUESTS_CHARS = 1_200
REQUESTS_WINDOW = 16_000
"""The requests between the first and the latest, as the verified facts quote them: the latest
of them that fit, each cut (the prompt goes with every request of a conversation sent in
parts)."""
FACTS_INTRO = (
    "Verified facts, read from the session file by a program: they are exact. Keep each in "
    "the document, in its place, as written:"
)

REPAIR_PROMPT = """\
The handoff document below does not have the required structure. Rewrite it so that it \
consists of exactly these Markdown sections, in this order: {sections}. Keep every fact it \
holds and add none. Answer with the rewritten document alone.

<document>
{document}
</document>"""

COMPACTION_INTRO = "The conversation before this point was condensed into this summary:"
BRANCH_INTRO = "The conversation went down another path first, which ended as summarised here:"
BASH_INTRO = "I ran this command myself:\n$ "
CUSTOM_INTRO = "[Context added by the agent: "
RESULT_INTRO = "[Result of "
IMAGE_LEFT_OUT = "[an image was here; left out for size]"
FOCUS_INTRO = "\n\nAdditional focus: "


FOCUS = "focus"
"""A template's one placeholder, ``{focus}``."""
_FIELD = re.compile(
    r"\{\{(?P<escaped>[A-Za-z_][A-Za-z0-9_]*(?:[!:][^{}\n]*)?)\}\}"
    r"|\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?P<spec>[!:][^{}\n]*)?\}"
)
"""A field of a template as Python's ``format`` would read one (``{name}``, ``{name:spec}``,
``{name!r}``), or one written doubled (``{{name}}``) to send its braces. Every other brace
(``{}``, ``{0}``, JSON, code) is text."""


@dataclass(frozen=True)
class Template:
    """A handoff prompt of the user's (``--prompt-file``): it takes the place of the six
    sections' instructions; the opening sentence that marks our prompt in a session, the
    previous document of an update and the verified facts are still ours to add."""

    text: str
    path: Path
    sections: tuple[str, ...] = SECTIONS
    """The sections it asks for: the document is checked for these (``--sections``)."""

    def filled(self, focus: str | None) -> tuple[str, bool]:
        """The text with ``{focus}`` replaced by ``focus`` (nothing, without one) in one pass,
        so that nothing in the focus is read as a field; and whether it had the placeholder."""
        placed = False

        def field(found: re.Match[str]) -> str:
            nonlocal placed
            if found["escaped"] is not None:
                return "{" + found["escaped"] + "}"
            placed = True  # parse_template lets no other field through
            return focus or ""

        return _FIELD.sub(field, self.text), placed


def parse_template(
    text: str, path: Path, named: str, sections: tuple[str, ...] = SECTIONS
) -> Template:
    """The template ``text`` of the file at ``path`` (``named`` says where it was named, for
    errors): not empty, its only field ``{focus}``; a first sentence that is our prompt's
    opening is dropped, as it is added again."""
    for found in _FIELD.finditer(text):
        if found["name"] is not None and (found["name"] != FOCUS or found["spec"] is not None):
            line = text.count("\n", 0, found.start()) + 1
            raise UsageError(
                f"{path}:{line}: {found[0]} is not a placeholder: only {{{FOCUS}}} is filled in "
                f"(write {{{found[0]}}} to send it as it is)"
            )
    text = text.strip()
    if text.startswith(PROMPT_OPENINGS[0]):
        text = text[len(PROMPT_OPENINGS[0]) :].lstrip()
    if not text:
        raise UsageError(f"{named}: the prompt file is empty")
    return Template(text, path, sections)


def required_sections(template: Template | None) -> tuple[str, ...]:
    """The sections a document must hold: the template's, else the six."""
    return template.sections if template is not None else SECTIONS


def handoff_prompt(
    focus: str | None = None,
    facts: Facts | None = None,
    tokens: int = DEFAULT_DOCUMENT_TOKENS,
    template: Template | None = None,
    window: int | None = None,
) -> str:
    """The instruction sent as the last user message: a new document, or, when the session
    already holds one, an update of it; then the verified facts; ``focus`` appended as given,
    unless the template places it. A template replaces the six sections' instructions (and
    their length, ``tokens``), after the opening sentence by which a session shows the
    prompt is ours (``document.is_handoff_prompt``)."""
    previous = facts.previous_document if facts else None
    placed = False
    if template is not None:
        task, placed = template.filled(focus)
        if previous:
            text = PROMPT_OPENINGS[1] + _PREVIOUS.format(document=previous) + task
        else:
            text = f"{PROMPT_OPENINGS[0]}\n\n{task}"
    elif previous:
        text = UPDATE_PROMPT.format(document=previous, tokens=tokens)
    else:
        text = HANDOFF_PROMPT.format(tokens=tokens)
    block = facts_block(facts, window) if facts else ""
    appended = f"{FOCUS_INTRO}{focus}" if focus and not placed else ""
    return text + (f"\n\n{block}" if block else "") + appended


def spawned(parent: str) -> str:
    """What a subagent's conversation is, said once for the model and the built-in writer."""
    return (
        f"This is a subagent's conversation, spawned by session {parent}: its requests are that "
        "session's instructions to it."
    )


def facts_block(facts: Facts, window: int | None = None) -> str:
    """The facts as a list the model is told to keep; the requests between the first and the
    latest only for a model whose ``window`` is ``REQUESTS_WINDOW`` or more (a small one
    needs its room for the conversation, which holds them anyway)."""
    lines: list[str] = []
    if facts.spawned_by:
        lines.append(f"- {spawned(facts.spawned_by)}")
    requests = list(facts.requests)
    if requests:
        lines.append(f"- The original task: {_quoted(requests.pop(0))}")
    latest = requests.pop() if requests else None
    if requests and (window is None or window >= REQUESTS_WINDOW):
        quoted: list[str] = []
        for number, request in reversed(list(enumerate(requests, 2))):  # the latest first
            quoted.insert(0, f"{number}. {_quoted(request, REQUEST_CHARS)}")
            if sum(map(len, quoted)) > REQUESTS_CHARS:
                quoted.pop(0)
                break
        left = len(requests) - len(quoted) + facts.requests_left_out
        note = f" ({left} earlier ones left out)" if left else ""
        lines.append(f"- The requests since, in order{note}: {' '.join(quoted)}")
    if latest is not None:
        lines.append(f"- The latest request: {_quoted(latest)}")
    if facts.acknowledgement:
        said = _quoted(facts.acknowledgement)
        lines.append(
            f"- Then the user only said {said}, agreeing to what the assistant proposed: go ahead."
            if facts.go_ahead
            else f"- Then the user only said {said}, acknowledging the answer."
        )
    if facts.finished:
        lines.append(
            "- Done or not: the work asked for is done, as the last answer reports; nothing is "
            "pending."
        )
    elif facts.requests and facts.stopped:
        lines.append(f"- Done or not: not finished. {facts.stopped}")
    lines += [f"- A rule the user stated: {_quoted(rule)}" for rule in facts.rules[:20]]
    lines += [f"- A decision: {decision}" for decision in facts.decisions]
    shell = set(facts.shell_files)
    changed = [p for p in facts.modified_files if p not in shell]
    if changed:
        # Every one: a file changed is a required probe (check), and the <files> block elides.
        lines.append("- Files changed: " + ", ".join(f"`{p}`" for p in changed))
    if shell:
        lines.append(
            "- Files written by shell commands (read from the command lines): "
            + ", ".join(f"`{p}`" for p in facts.shell_files)
        )
    if facts.missing_files:
        lines.append("- Paths not found: " + ", ".join(f"`{p}`" for p in facts.missing_files))
    if facts.read_files:
        lines.append("- Files read: " + ", ".join(f"`{p}`" for p in facts.read_files[:20]))
    for command in facts.notable_commands[-12:]:
        how = "failed, fixed later" if command.resolved else "failed"
        if command.ok:
            how = "passed" if command.known else "ran (piped: its own exit status is unknown)"
        code = f", exit code {command.exit_code}" if command.exit_code and not command.ok else ""
        lines.append(f"- Ran `{command.text}`: {how}{code}")
    lines += [f"- The error still open: {error}" for error in facts.open_errors]
    return FACTS_INTRO + "\n" + "\n".join(lines) if lines else ""


def _quoted(text: str, limit: int = 600) -> str:
    folded = " ".join(text.split())
    return f'"{folded if len(folded) <= limit else folded[: limit - 1] + "…"}"'


def repair_prompt(document: str, sections: tuple[str, ...] = SECTIONS) -> str:
    """Asks for the document again, in the required ``sections``."""
    return REPAIR_PROMPT.format(sections=section_list(sections), document=document)


# --- the context as chat messages ------------------------------------------------------------


def _text_parts(content: Any) -> list[dict[str, Any]]:
    """Text and image blocks as chat content parts; images the agent stored away are noted."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    parts: list[dict[str, Any]] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            parts.append({"type": "text", "text": block["text"]})
        elif block.get("type") == "image":
            parts.append(_image_part(block))
    return parts


def _image_part(block: dict[str, Any]) -> dict[str, Any]:
    data, mime = block.get("data"), block.get("mimeType", "image/png")
    if isinstance(data, CutText):  # read in part (far larger than any provider takes): no image
        return {"type": "text", "text": IMAGE_LEFT_OUT}
    if not isinstance(data, str) or not data or data.startswith("blob:"):
        return {"type": "text", "text": "[an image was here; it is not available]"}
    return {"type": "image_url", "image_url": {"url": f"data:{mime};base64,{data}"}}


def _plain(parts: list[dict[str, Any]]) -> str:
    return "\n".join(p["text"] for p in parts if p["type"] == "text")


def _user(content: str | list[dict[str, Any]]) -> ChatMessage:
    if isinstance(content, list) and all(p["type"] == "text" for p in content):
        content = _plain(content)
    return {"role": "user", "content": content}


def _string(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _printed(value: Any) -> str:
    """A field as the agent's template literal prints it (any depth: no recursion)."""
    return value if isinstance(value, str) else js_string(value)


def _bash_text(message: Message) -> str:
    text = f"{BASH_INTRO}{_string(message.get('command'))}\n"
    output = _string(message.get("output"))
    text += f"```\n{output.rstrip()}\n```" if output else "(no output)"
    code = message.get("exitCode")
    if message.get("cancelled"):
        text += "\n(cancelled)"
    elif code not in (0, None):
        text += f"\n(exit code {_printed(code)})"
    if message.get("truncated"):
        text += "\n(output truncated)"
    return text


def side_text(message: Message) -> str | None:
    """User-side text for the messages that are not turns of the conversation."""
    role = message.get("role")
    if role == "compactionSummary":
        summary = _printed(message.get("summary", ""))
        return f"{COMPACTION_INTRO}\n\n<summary>\n{summary}\n</summary>"
    if role == "branchSummary":
        summary = _printed(message.get("summary", ""))
        return f"{BRANCH_INTRO}\n\n<summary>\n{summary}\n</summary>"
    if role == "bashExecution":
        return None if message.get("excludeFromContext") else _bash_text(message)
    if role == "pythonExecution":
        code, output = _string(message.get("code")), _string(message.get("output"))
        return (
            f"I ran this Python code myself:\n```python\n{code}\n```\nOutput:\n```\n{output}\n```"
        )
    text = _plain(_text_parts(message.get("content")))
    if role == "custom" and text:
        return f"{CUSTOM_INTRO}{_printed(message.get('customType', 'custom'))}]\n{text}"
    return text or None


def _result_text(message: Message) -> str:
    text = _plain(_text_parts(message.get("content"))) or "(no output)"
    return f"[error] {text}" if message.get("isError") else text


class _Lookahead:
    """The context's messages one at a time, the next one in sight: never all at once (a
    long session's messages, parsed, are several times its size)."""

    def __init__(self, messages: Iterable[Message]) -> None:
        self._items = iter(messages)
        self.next: Message | None = next(self._items, None)
        self.taken = 0
        """How many were taken."""

    def take(self) -> Message:
        taken, self.next = self.next, next(self._items, None)
        assert taken is not None, "taken only when there is one"
        self.taken += 1
        return taken


def to_chat(messages: Iterable[Message]) -> list[ChatMessage]:
    """The context as chat messages that every provider accepts."""
    return [chat for _, _, step in chat_steps(messages) for chat in step]


def chat_steps(messages: Iterable[Message]) -> Iterator[tuple[int, int, list[ChatMessage]]]:
    """``to_chat``, a step at a time: where in ``messages`` each step starts and ends, and the
    chat messages it makes (none, or a message, or an assistant turn and the results that
    answer it). A step starts with a message that is not a tool result: from there, the rest
    can be made again alone, and a step can be made alone from its messages."""
    ahead = _Lookahead(messages)
    while ahead.next is not None:
        at = ahead.taken
        message = ahead.take()
        role = message.get("role")
        chat: list[ChatMessage] = []
        if role == "user":
            parts = _text_parts(message.get("content"))
            if parts:
                chat.append(_user(parts))
        elif role == "assistant":
            _assistant_turn(message, ahead, chat)
        elif role == "toolResult":
            # Its call is not right before it (e.g. it was summarised away): plain text then.
            name, call = message.get("toolName", "a tool"), message.get("toolCallId", "?")
            intro = f"{RESULT_INTRO}{_printed(name)} call {_printed(call)}]"
            chat.append(_user(f"{intro}\n{_result_text(message)}"))
        else:
            text = side_text(message)
            if text:
                chat.append(_user(text))
        yield at, ahead.taken, chat


def _assistant_turn(message: Message, ahead: _Lookahead, chat: list[ChatMessage]) -> None:
    """Append an assistant turn and the results that directly follow it (taken from
    ``ahead``)."""
    content = message.get("content")
    blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
    text = "\n".join(
        b["text"] for b in blocks if b.get("type") == "text" and isinstance(b.get("text"), str)
    )
    calls = {
        b["id"]: b
        for b in blocks
        if b.get("type") == "toolCall" and isinstance(b.get("id"), str) and b["id"]
    }
    results: list[ChatMessage] = []
    answered: set[str] = set()
    while ahead.next is not None and ahead.next.get("role") == "toolResult":
        call = ahead.next.get("toolCallId")
        if not isinstance(call, str) or call not in calls or call in answered:
            break
        answered.add(call)
        results.append(
            {"role": "tool", "tool_call_id": call, "content": _result_text(ahead.take())}
        )
    tool_calls = [_tool_call(calls[call]) for call in calls if call in answered]
    # Calls whose results do not follow directly cannot be sent as calls: say them in words.
    for call, block in calls.items():
        if call not in answered:
            arguments = _tool_call(block)["function"]["arguments"]
            name = _printed(block.get("name", "a tool"))
            text += f"\n[Called {name} (call {call}) with {arguments}]"
    text = text.strip("\n")
    if not text and not tool_calls:
        return
    turn: ChatMessage = {"role": "assistant", "content": text or None}
    if tool_calls:
        turn["tool_calls"] = tool_calls
    chat.append(turn)
    chat.extend(results)


def _tool_call(block: dict[str, Any]) -> dict[str, Any]:
    arguments = block.get("arguments", {})
    return {
        "id": block["id"],
        "type": "function",
        "function": {
            "name": _printed(block.get("name", "tool")),
            "arguments": arguments if isinstance(arguments, str) else dumps(arguments).decode(),
        },
    }


def handoff_request(
    context_messages: Iterable[Message],
    focus: str | None,
    facts: Facts | None = None,
    tokens: int = DEFAULT_DOCUMENT_TOKENS,
) -> list[ChatMessage]:
    """The whole request: the context as chat messages, then the handoff prompt."""
    prompt = handoff_prompt(focus, facts, tokens)
    return [*to_chat(context_messages), {"role": "user", "content": prompt}]
