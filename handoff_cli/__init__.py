"""Hand a coding agent's session over to a fresh one."""

__version__ = "0.1.0"


def main() -> None:
    """The ``handoff`` program. Its first act takes SIGINT and SIGTERM, so that either one,
    however early it comes, ends it as cleanly as later on (``signals``)."""
    from handoff_cli.cli.signals import hold

    hold()
    from handoff_cli.cli.app import main as run_program

    run_program()
