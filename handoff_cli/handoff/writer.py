"""What writes the handoff document: one small protocol, two implementations, chosen once.

As simonw/llm gives each model a class behind one interface, a handoff holds one ``Writer``
and never asks which it is: the built-in writer (``builtin.Builtin``: the facts alone, no
conversation, no cost) or a model reached through LiteLLM (``llm.model.Model``: the
conversation planned into its window, asked, repaired). A resolver decides which, once: the
layer above hands its own in (the command line registers ``llm.model.resolve_model``); the
pipeline reads the session, gives the writer
what it asks for, and writes what it answers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, Protocol

from handoff_cli.handoff.plan import Plan, Sized
from handoff_cli.handoff.prompt import ChatMessage

if TYPE_CHECKING:
    from handoff_cli.agents.context import Context
    from handoff_cli.handoff.conversation import Conversation
    from handoff_cli.handoff.facts import Facts
    from handoff_cli.handoff.redact import Redactor
    from handoff_cli.handoff.report import Reporter
    from handoff_cli.options import Options


@dataclass(frozen=True)
class Answer:
    """What the writer answered, with what it cost."""

    text: str
    provider: str
    model: str
    input_tokens: int
    output_tokens: int
    input_cost_usd: float | None
    output_cost_usd: float | None
    cut_short: bool = False
    """The answer went on past the bound it was read to (``acomplete``'s ``most_tokens``):
    ``text`` is its start, and the rest was never read (a usage that the provider had not sent
    by then is estimated)."""

    @property
    def cost_usd(self) -> float | None:
        if self.input_cost_usd is None or self.output_cost_usd is None:
            return None
        return self.input_cost_usd + self.output_cost_usd

    def then(self, later: Answer) -> Answer:
        """``later``'s text, with the usage of both calls."""

        def total(a: float | None, b: float | None) -> float | None:
            return None if a is None or b is None else a + b

        return replace(
            later,
            input_tokens=self.input_tokens + later.input_tokens,
            output_tokens=self.output_tokens + later.output_tokens,
            input_cost_usd=total(self.input_cost_usd, later.input_cost_usd),
            output_cost_usd=total(self.output_cost_usd, later.output_cost_usd),
        )


class Written(NamedTuple):
    """A document written: the answer (the usage of every call made), the sections it lacks,
    and the plan its requests followed."""

    answer: Answer
    missing: list[str]
    plan: Plan


@dataclass(frozen=True)
class Planned:
    """The requests a writer would make (``--dry-run``), each with its size."""

    plan: Plan
    requests: tuple[Sized, ...]
    window: int | None
    """The window planned for; None: the writer reads no conversation."""
    budget_tokens: int | None
    """The most tokens a request may hold; None as ``window``."""


class Brief(Protocol):
    """What a writer is given (``pipeline.Request``): masked, fitted to the writer."""

    @property
    def conversation(self) -> Conversation: ...

    @property
    def prompt(self) -> ChatMessage: ...

    @property
    def facts(self) -> Facts: ...

    @property
    def focus(self) -> str | None: ...

    @property
    def sections(self) -> tuple[str, ...]:
        """The sections the document must hold."""
        ...


class Writer(Protocol):
    """Writes a handoff document."""

    @property
    def name(self) -> str:
        """As results and notes name it (LiteLLM's name, or ``handoff/extractive``)."""
        ...

    @property
    def window(self) -> int | None:
        """Input tokens a request may hold; None: it reads no conversation."""
        ...

    @property
    def prompted(self) -> bool:
        """Whether it follows the prompt (a model does; the built-in writer, reading the facts
        alone, does not: a prompt file changes nothing it writes)."""
        ...

    def price(self, input_tokens: int, output_tokens: int) -> float | None:
        """USD for so many tokens in and out; None if unknown."""
        ...

    def preload(self, path: Path) -> None:
        """Load now, before the session at ``path`` is read, what writing will take, if that
        is the better order for memory (docs/handoff.md §7)."""
        ...

    def fitted_focus(self, focus: str | None, reporter: Reporter) -> str | None:
        """The focus as it can be sent: never so long that it crowds out the conversation."""
        ...

    def conversation(
        self, context: Context, prompt: ChatMessage, mask: Redactor | None
    ) -> tuple[Conversation, ChatMessage]:
        """The conversation it reads of ``context`` (measured, masked by ``mask``), and the
        prompt cut as it must be for that: called before the prompt is masked, so that the
        conversation's secrets are numbered first."""
        ...

    def planned(self, brief: Brief) -> Planned:
        """The requests it would make for ``brief``; nothing is called."""
        ...

    async def write(self, brief: Brief, options: Options, reporter: Reporter) -> Written:
        """The document for ``brief`` (its ``<files>`` block is the caller's to add)."""
        ...

    async def revise(
        self, brief: Brief, document: str, request: str, options: Options, reporter: Reporter
    ) -> Answer | None:
        """``document`` written again from ``brief``'s conversation, as ``request`` asks (what
        the checks found: ``check.repair_prompt``); None: this writer cannot do better than it
        did."""
        ...


# --- who decides the writer ---------------------------------------------------------------------


class Resolve(Protocol):
    """Decides the writer: the model ``requested``, else the session's own (``session_model``),
    with the settings given (``llm.model.resolve_model`` is the one the program registers)."""

    def __call__(
        self,
        requested: str | None,
        session_model: str | None,
        *,
        api_key: str | None = None,
        api_base: str | None = None,
        context_window: int | None = None,
        prices: tuple[float, float] | None = None,
        warn: Callable[[str], None] = ...,
        planned: bool = False,
    ) -> Writer: ...


_RESOLVE: list[Resolve] = []


def register(resolve: Resolve) -> None:
    """Hand in the resolver handoffs decide their writer with."""
    _RESOLVE[:] = [resolve]


def resolver() -> Resolve:
    """The resolver handed in; none handed in is a program put together wrong."""
    if not _RESOLVE:
        raise RuntimeError(
            "no writer resolver: register(handoff_cli.llm.model.resolve_model) first"
        )
    return _RESOLVE[0]
