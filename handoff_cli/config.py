"""What a handoff is asked to do: its options and their defaults, defined once.

The CLI fills ``Options`` from flags and ``HANDOFF_*`` variables (a flag wins over a variable,
a variable over the default); the library reads nothing from the environment itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

OMP = "omp"
PI = "pi"
AGENTS = (OMP, PI)
"""The agents whose rules a session can be read by: oh-my-pi, and upstream pi."""
AUTO = "auto"
"""Read a session by the rules of the agent whose folder holds it, else of the one its content
points to."""

DEFAULT_TIMEOUT_S = 600.0
DEFAULT_RETRIES = 2
DEFAULT_SESSIONS_DIR = Path("sessions")
MIN_CONTEXT_WINDOW = 1_000
"""A smaller window leaves no room for the prompt and an answer."""


@dataclass(frozen=True)
class Options:
    """How to hand off."""

    focus: str | None = None
    model: str | None = None
    """A LiteLLM model name, or ``extractive``; None: the session's own model, if it can be
    reached, else the built-in writer."""
    api_key: str | None = None
    api_base: str | None = None
    leaf_id: str | None = None
    timeout: float = DEFAULT_TIMEOUT_S
    retries: int = DEFAULT_RETRIES
    record: bool = True
    """Record the exchange in the old session (``--no-record`` turns it off)."""
    out_dir: Path | None = None
    strict: bool = False
    context_window: int | None = None
    """Overrides the model's window as LiteLLM knows it."""
    redact: bool = True
    """Mask secrets in everything sent (``--no-redact`` turns it off)."""
    agent: str = AUTO
    """Whose rules read the session: ``omp``, ``pi``, or ``auto``."""
    folder_agent: str | None = None
    """With ``auto``: the agent whose sessions folder holds the file, if any (the CLI knows the
    folders); else the content decides."""
