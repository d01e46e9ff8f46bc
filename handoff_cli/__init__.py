"""Hand a pi / oh-my-pi coding-agent session over to a fresh one."""

import sys

__version__ = "0.1.0"


def main() -> None:
    """The ``handoff`` program. A Ctrl-C while the command line's own modules are still being
    imported cancels as cleanly as one later on."""
    try:
        from .cli import main as run_program
    except KeyboardInterrupt:
        print("Cancelled", file=sys.stderr)
        sys.exit(130)
    run_program()
