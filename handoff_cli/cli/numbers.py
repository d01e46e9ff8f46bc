"""Number options read in ASCII digits only.

click reads a number option with ``int()`` or ``float()``, which take any script's decimal
digits (``--jobs`` of an Arabic-Indic three is 3): a value no one typed as a number on
purpose, taken silently. ``ascii_numbers`` gives every number option of a command a type that
refuses such a value first, as one usage line, and is click's own otherwise (its ranges, its
help).
"""

from __future__ import annotations

from typing import Any

import click


class _AsciiDigits:
    """Mixed into a number type of click's: the text checked, then read by that type."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and not value.isascii():
            message = f"{value!r} is not a number in ASCII digits (0-9)"
            raise click.BadParameter(message, ctx=ctx, param=param)
        return super().convert(value, param, ctx)  # type: ignore[misc]  # click's type, after


class _Int(_AsciiDigits, click.types.IntParamType):
    pass


class _IntRange(_AsciiDigits, click.IntRange):
    pass


class _Float(_AsciiDigits, click.types.FloatParamType):
    pass


class _FloatRange(_AsciiDigits, click.FloatRange):
    pass


def _ascii(number: click.ParamType[Any, Any]) -> click.ParamType[Any, Any]:
    if isinstance(number, click.IntRange):
        return _IntRange(number.min, number.max, number.min_open, number.max_open, number.clamp)
    if isinstance(number, click.FloatRange):
        return _FloatRange(number.min, number.max, number.min_open, number.max_open, number.clamp)
    if isinstance(number, click.types.IntParamType):
        return _Int()
    if isinstance(number, click.types.FloatParamType):
        return _Float()
    return number


def ascii_numbers(command: click.Command) -> click.Command:
    """``command``, every number option of it and of its subcommands reading ASCII digits
    only (changed in place)."""
    for parameter in command.params:
        parameter.type = _ascii(parameter.type)
    if isinstance(command, click.Group):
        for subcommand in command.commands.values():
            ascii_numbers(subcommand)
    return command
