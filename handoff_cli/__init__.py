"""Hand a pi / oh-my-pi coding-agent session over to a fresh one."""
