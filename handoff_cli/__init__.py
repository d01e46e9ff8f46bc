"""Hand a pi / oh-my-pi coding-agent session over to a fresh one."""

__version__ = "0.1.0"


def main() -> None:
    """The ``handoff`` program. Its first act takes SIGINT and SIGTERM, so that either one,
    however early it comes, ends it as cleanly as later on (``signals``)."""
    from .signals import hold

    hold()
    from .cli import main as run_program

    run_program()
