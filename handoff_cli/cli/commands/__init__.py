"""The commands, one module each; ``cli.app`` registers them."""
