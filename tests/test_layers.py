"""The package's layers import one way: each module imports only from its own layer and those
below it (docs/architecture.md). Every import counts, at the top of a module or inside a
function, but those made for annotations only (``if TYPE_CHECKING:``)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).parent.parent / "handoff_cli"
LAYERS = (
    ("core", ("handoff_cli", "errors", "options", "text", "said", "document")),
    ("sessions", ("sessions",)),
    ("agents", ("agents",)),
    ("catalog", ("catalog",)),
    ("models", ("llm.table", "llm.tokens")),
    ("handoff", ("handoff",)),
    ("export", ("export",)),
    ("writers", ("llm", "llm.model")),
    ("config", ("config",)),
    ("cli", ("cli", "__main__")),
)
"""Lowest first: a room, and the modules in it (named within ``handoff_cli``)."""


def layer(module: str) -> int:
    """The index of the room ``module`` is in: the one with the longest name that holds it."""
    best, found = -1, 0
    for index, (_, names) in enumerate(LAYERS):
        for name in names:
            full = "handoff_cli" if name == "handoff_cli" else f"handoff_cli.{name}"
            if (module == full or module.startswith(full + ".")) and len(full) > best:
                best, found = len(full), index
    assert best >= 0, module
    return found


def module_of(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path) -> Iterator[str]:
    """The modules of the package that ``path`` imports, at run time."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {
        id(child)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
        for child in ast.walk(node)
    }
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name.startswith("handoff_cli"))
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("handoff_cli"):
            base = str(node.module)
            for alias in node.names:  # a module imported from its package is that module
                sub = PACKAGE.parent / Path(*f"{base}.{alias.name}".split("."))
                exists = sub.with_suffix(".py").is_file() or (sub / "__init__.py").is_file()
                yield f"{base}.{alias.name}" if exists else base


def test_every_import_goes_down_or_stays_in_its_room() -> None:
    upward = []
    for path in sorted(PACKAGE.rglob("*.py")):
        here = module_of(path)
        if here == "handoff_cli":
            continue  # the program's entry point: it starts the command line
        for there in imported(path):
            if layer(there) > layer(here):
                upward.append(f"{here} ({LAYERS[layer(here)][0]}) imports {there}")
    assert not upward, "\n".join(sorted(set(upward)))
