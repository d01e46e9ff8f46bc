"""What a handoff is asked to do: its options and their defaults, defined once.

The CLI fills ``Options`` from flags, ``HANDOFF_*`` variables and the configuration files (a
flag wins over a variable, a variable over the files, the files over the default:
``handoff_cli.config``); the library reads nothing from the environment itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from handoff_cli.handoff.prompt import Template

AUTO = "auto"
"""Read a session by the rules of the agent whose folder holds it, else of the one its content
points to."""

DEFAULT_TIMEOUT_S = 600.0
DEFAULT_RETRIES = 2
DEFAULT_SESSIONS_DIR = Path("sessions")
DEFAULT_IDLE = "10m"
"""Rotation leaves alone a session written to more recently: an agent may be at work in it."""
DEFAULT_JOBS = 4
DEFAULT_DOCUMENT_TOKENS = 2_000
"""The most a handoff document should take: the built-in writer's cap, and models are told."""
MIN_DOCUMENT_TOKENS = 200
"""Fewer leaves no room for the six headings and the original task."""
MIN_CONTEXT_WINDOW = 1_000
"""A smaller window leaves no room for the prompt and an answer."""
DEFAULT_MIN_SCORE = 0.8
"""The score ``handoff check`` passes a document at, and the one advised for ``--min-score``:
a document that misses a required probe never reaches it (``check.REQUIRED_CAP``)."""


# Digits are ASCII ones: ``\d``, ``int()`` and ``float()`` also read other scripts' (٣ as 3), and
# ``str.isdigit()`` takes superscripts, which ``int()`` then refuses with its own message.
_DURATION = re.compile(r"([0-9]+(?:\.[0-9]+)?)\s*(s|sec|m|min|h|d)?", re.IGNORECASE)
_UNITS = {"": 1, "s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "d": 86400}
_COUNT = re.compile(r"\s*[0-9]+\s*")


def parse_duration(text: str) -> float:
    """Seconds in a duration as people write it: ``90``, ``90s``, ``10m``, ``2h``, ``1d``."""
    found = _DURATION.fullmatch(text.strip())
    if found is None:
        raise ValueError(f"not a duration: {text!r} (say 30s, 10m, 2h or 1d)")
    return float(found.group(1)) * _UNITS[(found.group(2) or "").lower()]


def parse_since(text: str, now: float) -> float:
    """The moment (Unix seconds) ``--since`` names: a duration back from ``now`` (``2h``,
    ``3d``), or a day or moment as ISO 8601 writes it (``2026-11-30``, ``2026-11-30T09:00``;
    local time unless it says its zone)."""
    try:
        return now - parse_duration(text)
    except ValueError:
        pass
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"not a duration or a date: {text!r} (say 2h, 3d or 2026-11-30)") from None
    return moment.timestamp() if moment.tzinfo else moment.astimezone().timestamp()


def parse_shard(text: str) -> tuple[int, int]:
    """``K/N``: the K-th of N shares, 1 <= K <= N."""
    number, _, count = text.partition("/")
    if not (_COUNT.fullmatch(number) and _COUNT.fullmatch(count)):
        raise ValueError(f"not a shard: {text!r} (say K/N, as 1/4)")
    k, n = int(number), int(count)
    if not 1 <= k <= n:
        raise ValueError(f"shard {text!r}: K must be from 1 to N")
    return k, n


def check_api_base(url: str) -> str:
    """``url``, if it can be the model server's address (``--api-base``, ``$HANDOFF_API_BASE``,
    a configuration file's ``api_base``): an http or https URL with a host, in printable ASCII
    (an international name in its ``xn--`` form). Else ``ValueError``, saying so: LiteLLM
    would send the request somewhere else (a ``file:`` URL, or a bare word, as a path on the
    default server) and report that server's refusal."""
    try:
        parts = urlsplit(url)
        port = parts.port  # a port that is no number, or past 65535: ValueError
        usable = parts.scheme in ("http", "https") and bool(parts.hostname) and port != 0
    except ValueError:  # that, or brackets of an IPv6 address that do not close
        usable = False
    if not (usable and url.isascii() and url.isprintable() and " " not in url):
        raise ValueError("not an http(s) URL with a host (say http://127.0.0.1:8000/v1)")
    return url


@dataclass(frozen=True)
class Options:
    """How to hand off, as the user said it (flags, variables, defaults). What the caller knows
    besides (the agents' folders, rotation's exactly-once guard) is ``pipeline.Target``."""

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
    max_doc_tokens: int = DEFAULT_DOCUMENT_TOKENS
    agent: str = AUTO
    """Whose rules read the session: an agent's name (``handoff_cli.agents.NAMES``), or
    ``auto``."""
    in_place: bool = False
    """Hand off as oh-my-pi's own ``/handoff`` does: a compaction entry in the same session,
    the document its summary, instead of a new session and the recorded exchange."""
    prices: tuple[float, float] | None = None
    """USD per token in and out (``--price-in`` / ``--price-out``, given per million); None:
    LiteLLM's price table."""
    min_score: float | None = None
    """Refuse a document that the probes (``check``) score under this, after one repair;
    None: every document is scored, none refused."""
    to: str | None = None
    """The agent whose file the new session is, in that agent's folder for the session's cwd
    (``--to``); None: the session's own agent, beside the old file."""
    keep_recent: int = 0
    """Tokens of the branch's most recent whole turns to keep verbatim after the document in
    the new session (``--keep-recent``); 0: the document alone."""
    dry_run: bool = False
    """Only planned (``--dry-run``): what the notes say would be done is not done."""
    template: Template | None = None
    """The user's prompt in place of the six sections' instructions (``--prompt-file``, with
    the sections it asks for, ``--sections``); None: ours."""
