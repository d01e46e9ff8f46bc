"""Secrets out, before anything leaves the machine.

Every text of the request (the conversation, tool calls and results, the focus) is scanned for
credentials of known shapes, each replaced by ``[REDACTED:kind:n]``: the same secret always gets
the same number, so the model (and the document, and the next session) can still tell two
secrets apart without seeing either. Only precise shapes are matched, never "random-looking"
strings: the next session needs its hashes, ids and paths exactly.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .prompt import ChatMessage

# One alternation, so each text is scanned once. Where only part of a match is the secret
# (a URL's password, a variable's value), that part is the group named after the kind.
_SHAPES = {
    "private-key": r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----[\s\S]*?"
    r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----",
    "anthropic-key": r"\bsk-ant-[A-Za-z0-9_-]{20,}",
    "openai-key": r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}",
    "aws-access-key": r"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b",
    "github-token": r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})",
    "slack-token": r"\b(?:xox[abposr]|xapp)-[A-Za-z0-9-]{10,}",
    "jwt": r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
    "url-password": r"(?<=://)[^/\s:@]+:(?P<url_password_value>[^/\s@]{3,})(?=@)",
    "query-secret": r"[?&](?:access_token|token|api_key|apikey|key|password|secret|sig)="
    r"(?P<query_secret_value>[^&\s#\"']{6,})",
    # Environment assignments: upper-case names, as in env files and shells; not references
    # (``$OTHER``), numbers (``MAX_TOKENS=4096``) or placeholders in docs (``sk-ant-...``).
    "env-secret": r"\b[A-Z][A-Z0-9_]*(?:PASSWORD|PASSWD|SECRET|TOKEN|API_KEY|APIKEY|ACCESS_KEY)"
    r"[A-Z0-9_]*=[\"']?(?P<env_secret_value>(?![$<{*])(?!\d+\b)(?![^\s\"'&;]*\.\.\.)"
    r"[^\s\"'&;]{4,})",
}
_PATTERN = re.compile("|".join(f"(?P<{k.replace('-', '_')}>{v})" for k, v in _SHAPES.items()))
_INNER = ("url_password_value", "query_secret_value", "env_secret_value")


@dataclass
class Redactor:
    """Replaces secrets in texts; remembers which secret got which number."""

    numbers: dict[tuple[str, str], int] = field(default_factory=dict)

    @property
    def count(self) -> int:
        """How many distinct secrets were masked."""
        return len(self.numbers)

    def text(self, text: str) -> str:
        if not text:
            return text
        return _PATTERN.sub(self._replace, text)

    def _replace(self, match: re.Match[str]) -> str:
        inner = next((g for g in _INNER if match.group(g) is not None), None)
        outer = next(k for k in _SHAPES if match.group(k.replace("-", "_")) is not None)
        kind = outer
        secret = match.group(inner) if inner else match.group(0)
        number = self.numbers.setdefault((kind, secret), len(self.numbers) + 1)
        placeholder = f"[REDACTED:{kind}:{number}]"
        if inner is None:
            return placeholder
        start, end = match.span(inner)
        whole = match.group(0)
        offset = match.start()
        return whole[: start - offset] + placeholder + whole[end - offset :]

    def value(self, value: Any) -> Any:
        """``value`` with every string in it redacted (dicts and lists walked)."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.value(v) for v in value]
        if isinstance(value, dict):
            return {k: v if k in _UNTOUCHED else self.value(v) for k, v in value.items()}
        return value

    def messages(self, messages: Iterable[ChatMessage]) -> list[ChatMessage]:
        return [self.value(m) for m in messages]


# Keys whose values are never free text: ids, roles, image data.
_UNTOUCHED = frozenset({"role", "type", "id", "tool_call_id", "image_url", "name"})
