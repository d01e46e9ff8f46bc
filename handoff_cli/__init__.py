"""Hand a pi / oh-my-pi coding-agent session over to a fresh one."""

__version__ = "0.1.0"
