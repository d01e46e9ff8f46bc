"""The person's own words in a user message (said.py): what agents, IDEs and harnesses inject
is not the task, a greeting or a bare yes is no request, in any language."""

from __future__ import annotations

import pytest

from handoff_cli.said import (
    TitleRequest,
    is_acknowledgement,
    is_greeting,
    only_a_template,
    own_words,
    request_in,
    templated,
)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("<environment_context>\n  <cwd>/w</cwd>\n</environment_context>", ""),
        (
            "# AGENTS.md instructions for /w\n\n<INSTRUCTIONS>\nUse pnpm.\n</INSTRUCTIONS>",
            "",
        ),
        ("<user_instructions>Be brief.</user_instructions>", ""),
        ('<subagent_notification>{"status": "done"}</subagent_notification>', ""),
        (
            "Implement the plan.\n<system-reminder>\nFiles: a.py\n</system-reminder>",
            "Implement the plan.",
        ),
        (
            "<command-name>/review</command-name>\n<command-message>review</command-message>\n"
            "<command-args>the auth module</command-args>",
            "the auth module",
        ),
        ("<command-name>/exit</command-name>\n<command-args></command-args>", ""),
        ("<local-command-stdout>Bye!</local-command-stdout>", ""),
        ("[Request interrupted by user for tool use]", ""),
        (
            "<task-notification>\n<status>killed</status>\n</task-notification>\nRead the output "
            "file to retrieve the result: /tmp/x.output",
            "",
        ),
        (
            "# Context from my IDE setup:\n\n## Open tabs:\n- a.lua\n\n## My request for Codex:\n"
            "找出内存泄漏的原因",
            "找出内存泄漏的原因",
        ),
        (
            "\n## User Input\n\n```text\nuser story 1\n```\n\nYou **MUST** consider the user input "
            "before proceeding (if not empty).\n\n## Outline\n\n1. Run the script.",
            "user story 1",
        ),
        (
            "You are running as a subagent (depth 1/1). Report back briefly.\n\nFind every caller "
            "of parse().",
            "Find every caller of parse().",
        ),
        ("Fix the <div> layout in index.html", "Fix the <div> layout in index.html"),
        (  # a custom command's file, the command line the person typed appended to it
            "---\ndescription: Plan the work\n---\n\n## User Input\n\n```text\n$ARGUMENTS\n```"
            "\n\nPlan it.\n\n\n/sp.plan Create a plan for the book in Docusaurus",
            "Create a plan for the book in Docusaurus",
        ),
        ("Run this:\n\n/usr/bin/env python3 x.py", "Run this:\n\n/usr/bin/env python3 x.py"),
        (  # an @path's file read in after the prompt (Gemini CLI, Qwen Code)
            "fix @a.lua\n--- Content from referenced files ---\nContent from @a.lua:\nx = 1\n"
            "--- End of content ---",
            "fix @a.lua",
        ),
        ("[Function Response: read_many_files]", ""),
    ],
)
def test_what_the_person_said(text: str, words: str) -> None:
    assert own_words(text) == words


def test_a_template_with_no_words_is_its_own_request() -> None:
    template = (
        "\n## User Input\n\n```text\n\n```\n\nYou **MUST** consider the user input before "
        "proceeding (if not empty).\n\n## Outline\n\nYou are updating the project constitution."
    )
    assert own_words(template).startswith("## Outline\n\nYou are updating the project")
    assert only_a_template(template)
    assert not only_a_template(template.replace("```text\n\n```", "```text\nFND-001\n```"))


@pytest.mark.parametrize(
    "text", ["hi", "Ahoy!", "hello there", "Good morning!", "привет", "你好", "こんにちは", "hola"]
)
def test_greetings(text: str) -> None:
    assert is_greeting(text) and request_in(text) is None


@pytest.mark.parametrize(
    "text",
    [
        "ok", "OK!", "yes, do it all", "👍", "lgtm", "sounds good, go ahead", "k thx", "continue",
        "try again", "Can we continue from where we left off?", "はい", "ありがとうございます",
        "解決しました。ありがとうございます", "好的", "继续", "да, продолжай", "так, дякую",
        "sí, gracias", "ja, weiter", "네 좋아요", "تمام",
    ],
)  # fmt: skip
def test_acknowledgements(text: str) -> None:
    assert is_acknowledgement(text) and request_in(text) is None


@pytest.mark.parametrize(
    "text",
    [
        "ok, now add tests", "yes but keep the old API", "fix the build", "do it in Go", "2",
        "C", "pushしてください。", "不要修改测试", "добавь тесты",
    ],
)  # fmt: skip
def test_requests_are_not_acknowledgements(text: str) -> None:
    assert not is_acknowledgement(text) and request_in(text) == text


def test_a_slash_command_alone_asks_for_nothing() -> None:
    assert request_in("/compact") is None and request_in("/model gpt-5") == "/model gpt-5"


def test_a_session_is_called_by_the_persons_own_words_not_a_templates() -> None:
    front = "---\ndescription: Create or update the feature specification.\n---\n\nThe input."
    activation = (
        'You must fully embody this agent\'s persona.\n\n<agent-activation CRITICAL="TRUE">\n'
        "1. LOAD the agent file\n</agent-activation>"
    )
    for template in (front, activation, "## Outline\n\n" + "Run the script. " * 120):
        assert templated(template), template[:30]
        titled = TitleRequest()
        assert not titled.offer(template) and titled.request == template.strip()
        assert not titled.offer("yes")  # no request
        assert titled.offer("schreibe alles auf deutsch")
        assert titled.request == "schreibe alles auf deutsch"
    assert not templated("## A heading, then a short request")
