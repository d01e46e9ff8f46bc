"""The fact-recall suite: for each session, the facts a document must hold and the statements it
must not, for the built-in writer and for a model (whose request must carry every fact).

Goal: recall 100%, no forbidden statement, every built-in document within its cap, and a
model's document ending with the ``<files>`` block.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest

from handoff_cli.document import SECTIONS, unwrap_document
from handoff_cli.handoff.pipeline import handoff
from handoff_cli.options import Options

from .conftest import EXAMPLES, FIXTURES, Entries, handoff_entry, write_session
from .fakellm import FakeLLMServer, Reply

pytestmark = pytest.mark.litellm  # its handoffs call the model in this process

DOCUMENT = "\n\n".join(f"## {name}\n- as the model wrote it" for name in SECTIONS)
OUR_PROMPT = (
    "Be concrete: keep paths",
    "Answer with the Markdown document alone",
    "Verified facts",
)


@dataclass(frozen=True)
class Case:
    name: str
    facts: tuple[str, ...]
    """Must appear in the document (and in a model's request)."""
    forbidden: tuple[str, ...] = ()


def weather(folder: Path) -> Path:
    return copy(next(EXAMPLES.glob("-home-dev-projects-weather-cli/*.jsonl")), folder)


def notes(folder: Path) -> Path:
    return copy(next(EXAMPLES.glob("--home-dev-projects-notes-app--/*.jsonl")), folder)


def pi_large(folder: Path) -> Path:
    return copy(FIXTURES / "pi/large-session.jsonl", folder)


def copy(source: Path, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copyfile(source, folder / source.name))


def compacted_then_more(folder: Path) -> Path:
    """Work, a compaction, then more work; a branch summary; a test failing, then passing; and
    a trivial last message."""
    entries = Entries()
    entries.user("Build a CSV importer in importer/csv.py. Never load the whole file in memory.")
    entries.assistant("Starting with the reader.")
    kept = entries.user("Handle quoted newlines too.")
    summary = (
        "## Goal\nA streaming CSV importer.\n\n## Progress\n### Done\n- [x] Reader with quoted "
        "newlines.\n\n## Key Decisions\n- **csv module**: the standard one, streaming.\n\n"
        "## Next Steps\n1. Add the --delimiter option."
    )
    entries.add("compaction", summary=summary, firstKeptEntryId=kept, tokensBefore=50_000)
    entries.add("branch_summary", fromId=kept, summary="Tried pandas first: too much memory.")
    call = {
        "type": "toolCall",
        "id": "t1",
        "name": "bash",
        "arguments": {"command": "pytest tests/test_csv.py"},
    }
    entries.assistant("Testing.", call, stop="toolUse")
    entries.message(
        {
            "role": "toolResult",
            "toolCallId": "t1",
            "toolName": "bash",
            "isError": True,
            "content": [{"type": "text", "text": "1 failed\nCommand exited with code 1"}],
            "timestamp": 3,
        }
    )
    edit = {
        "type": "toolCall",
        "id": "e1",
        "name": "edit",
        "arguments": {"path": "importer/csv.py"},
    }
    entries.assistant("Fixing the off-by-one.", edit, stop="toolUse")
    entries.result("e1", "Successfully replaced text in importer/csv.py.")
    again = {"type": "toolCall", "id": "t2", "name": "bash", "arguments": {"command": "pytest"}}
    entries.assistant(again, stop="toolUse")
    entries.result("t2", "12 passed")
    entries.assistant("All 12 tests pass. Next I will add the --delimiter option.")
    entries.user("ok")
    return write_session(folder / "csv.jsonl", entries.items)


CASES = {
    weather: Case(
        "weather-cli",
        (
            "The forecast command fails whenever the API hiccups",  # the original task
            "Also read WEATHER_RETRIES from the environment",  # the latest request
            "weather_cli/cli.py",
            "weather_cli/http.py",  # the files changed
            "_with_retries",  # the summary's Done
            "Cap total backoff at 4.5 s",  # its Key Decisions
            "Add `--retries` to the argparse parser",  # its Next Steps
            "Never retry 4xx except 429",  # a rule
        ),
        ("The error still open",),  # the failing test was fixed
    ),
    notes: Case(
        "notes-app",
        ("emoji in the title crashes the export", "Groceries 🛒", "src/export.ts"),
        ("The error still open",),  # `npx vitest run` passed after the targeted failure
    ),
    pi_large: Case(
        "pi-large",
        (
            "read packages/coding-agent/docs/theme.md in full",
            "packages/coding-agent/src/tui/footer.ts",
            "invalid themes must NEVER explode",
            "npm run publish",  # the error still open
        ),
    ),
    compacted_then_more: Case(
        "compaction, branch summary, fixed test, trivial last message",
        (
            "Build a CSV importer in importer/csv.py",  # from before the compaction
            "Never load the whole file in memory",
            "Reader with quoted newlines",
            "csv module",
            "Tried pandas first",
            "importer/csv.py",
            "Add the --delimiter option",
        ),
        ("The error still open", "Pick up from the last request: ok"),
    ),
}


def document_of(new_session: Path) -> str:
    return unwrap_document(handoff_entry(new_session)["content"])


@pytest.mark.parametrize("make", list(CASES), ids=lambda m: CASES[m].name)
def test_the_builtin_writer_recalls_every_fact(tmp_path: Path, make: object) -> None:
    case = CASES[make]  # type: ignore[index]
    path = make(tmp_path)  # type: ignore[operator]
    document = document_of(handoff(path, Options(model="extractive")).path)
    missing = [fact for fact in case.facts if fact not in document]
    assert missing == [], f"recall {1 - len(missing) / len(case.facts):.0%}"
    assert [s for s in (*case.forbidden, *OUR_PROMPT) if s in document] == []
    assert len(document) <= 2_000 * 4 + 1_500  # the cap, and the <files> block after it
    again = document_of(handoff(path, Options(model="extractive")).path)
    assert len(again) <= len(document) and [s for s in OUR_PROMPT if s in again] == []


@pytest.mark.parametrize("make", list(CASES), ids=lambda m: CASES[m].name)
def test_a_models_request_carries_every_fact(
    tmp_path: Path, make: object, llm_server: FakeLLMServer
) -> None:
    case = CASES[make]  # type: ignore[index]
    path = make(tmp_path)  # type: ignore[operator]
    llm_server.default = Reply(DOCUMENT)
    options = Options(model="openai/test-model", api_base=llm_server.base_url, retries=0)
    result = handoff(path, options)
    sent = orjson.dumps([r.messages for r in llm_server.requests]).decode()
    sent = orjson.loads(sent)  # the text as the model reads it, escapes undone
    text = str(sent)
    missing = [fact for fact in case.facts if fact not in text]
    assert missing == [], f"recall {1 - len(missing) / len(case.facts):.0%}"
    document = document_of(result.path)
    assert document.startswith(DOCUMENT) and document.endswith("</files>")
    # A second handoff sends neither our prompt nor our document back as conversation.
    llm_server.script(Reply(DOCUMENT))
    count = len(llm_server.requests)
    handoff(path, options)
    conversation = llm_server.requests[count].messages[:-1]
    assert not any("Write a handoff document" in str(m.get("content")) for m in conversation)
    assert "Update the handoff document" in llm_server.requests[count].messages[-1]["content"]
