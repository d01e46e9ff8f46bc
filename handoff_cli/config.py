"""Defaults from configuration files, and where each setting in force came from.

Two files may set a handoff's defaults: the project's, found from the current directory up
(the nearest folder holding a ``.handoff.toml``, or a ``pyproject.toml`` with a
``[tool.handoff]`` table; in one folder, ``.handoff.toml`` wins), and the user's,
``$XDG_CONFIG_HOME/handoff/config.toml`` (else ``~/.config/handoff/config.toml``). A setting
is taken from the first that gives it: a flag, its ``HANDOFF_*`` variable (both parsed by the
CLI, which hands them to ``resolve``), the project file, the user file, the built-in default.
A file's ``sections`` go with its own ``prompt_file``: they describe that prompt.

Never a key: a provider's credentials stay in the environment, and a file naming one is
refused, as is a file with an unknown key or a value of the wrong type: one line naming the
file and the key (``errors.ConfigError``). A library module: it reads the files it is pointed
at and the environment it is given, and prints nothing.

A project's file comes with the repository, from whoever wrote it: what it sets that chooses
where the conversation and the key go (``api_base``, a host; a ``prompt_file`` outside the
project's folder, read into the prompt) is used only once the user has trusted that file as it
is now (``handoff trust``: a record in the user's folder of the file's path and of a digest of
its settings, refused again when they change). Until then each such setting is left out and
named in ``Config.refused``, for the CLI to say.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import re
import stat
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import orjson

from handoff_cli.document import SECTIONS
from handoff_cli.errors import ConfigError, UsageError, os_reason
from handoff_cli.options import (
    DEFAULT_DOCUMENT_TOKENS,
    DEFAULT_IDLE,
    MIN_DOCUMENT_TOKENS,
    check_api_base,
    parse_duration,
)

if sys.version_info >= (3, 11):
    import tomllib
else:  # the same parser, before it joined the standard library
    import tomli as tomllib

if TYPE_CHECKING:
    from handoff_cli.handoff.prompt import Template

PROJECT_FILE = ".handoff.toml"
PYPROJECT = "pyproject.toml"
USER_FILE = Path("handoff", "config.toml")
TRUST_FILE = "trusted.json"
"""Beside the user's file: the project files the user trusts, each with its settings' digest."""

FLAG, ENV, PROJECT, USER, DEFAULT = "flag", "env", "project", "user", "default"
"""Where a setting came from; the first that gives it decides, in this order."""

PROMPT_FILE, SECTIONS_KEY = "prompt_file", "sections"


@dataclass(frozen=True)
class Origin:
    """Where a setting came from: its source, and the flag, variable or file that gave it."""

    source: str
    place: str | None = None

    def names(self, key: str) -> str:
        """How a message names the setting given (never a default): its flag,
        ``$VARIABLE``, or ``FILE: key``."""
        if self.source == FLAG:
            return str(self.place)
        if self.source == ENV:
            return f"${self.place}"
        return f"{self.place}: {key}"


class Setting(NamedTuple):
    value: Any
    origin: Origin


BUILT_IN = Origin(DEFAULT)


@dataclass(frozen=True)
class File:
    """A configuration file read: where it is, how messages name it (a ``pyproject.toml`` with
    its table), whose it is (``PROJECT`` or ``USER``), and the settings it gives, checked."""

    path: Path
    label: str
    source: str
    values: Mapping[str, Any]
    digest: str = ""
    """Of the settings as written: what a trust record holds."""
    guarded: Mapping[str, str] = field(default_factory=dict)
    """The settings that choose where data goes, each with what it does: used only from a
    file the user trusts."""

    def setting(self, key: str) -> Setting | None:
        if key not in self.values:
            return None
        return Setting(self.values[key], Origin(self.source, self.label))


# --- the keys, and how a file's value of each is read --------------------------------------


def _kind(value: Any) -> str:
    """A TOML value's type, as a message names it."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a float"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "a table"
    return "a date or time"


def _name(value: Any, folder: Path) -> str:
    if not _text(value, folder):
        raise ValueError("must not be empty")
    return str(value)


def _text(value: Any, folder: Path) -> str:
    if not isinstance(value, str):
        raise ValueError(f"must be a string, not {_kind(value)}")
    return value


def _url(value: Any, folder: Path) -> str:
    return check_api_base(_name(value, folder))


def _file(value: Any, folder: Path) -> Path:
    """A path, relative to the folder of the file that names it."""
    return folder / Path(_name(value, folder)).expanduser()


def _count(minimum: int) -> Callable[[Any, Path], int]:
    def read(value: Any, folder: Path) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"must be an integer, not {_kind(value)}")
        if value < minimum:
            raise ValueError(f"must be at least {minimum:,}, not {value}")
        return value

    return read


def _duration(value: Any, folder: Path) -> str:
    """A duration as ``--idle`` takes it: a string (``"10m"``), or a number of seconds."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise ValueError(f'must be a duration such as "10m", not {_kind(value)}')
    parse_duration(str(value))
    return str(value)


def _sections(value: Any, folder: Path) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValueError(f"must be an array of strings, not {_kind(value)}")
    return section_names(value)


KEYS: dict[str, Callable[[Any, Path], Any]] = {
    "model": _name,
    "api_base": _url,
    "focus": _text,
    PROMPT_FILE: _file,
    SECTIONS_KEY: _sections,
    "over_tokens": _count(1),
    "idle": _duration,
    "max_doc_tokens": _count(MIN_DOCUMENT_TOKENS),
}
"""What a file may set, in the order ``handoff config`` shows it, each with its reader (which
raises ``ValueError`` with the reason a value is refused)."""

DEFAULTS: dict[str, Any] = {
    "model": None,
    "api_base": None,
    "focus": None,
    PROMPT_FILE: None,
    SECTIONS_KEY: SECTIONS,
    "over_tokens": None,
    "idle": DEFAULT_IDLE,
    "max_doc_tokens": DEFAULT_DOCUMENT_TOKENS,
}
UNSET = {
    "model": "the session's own",
    "api_base": "the provider's own",
    "focus": "none",
    PROMPT_FILE: "the built-in prompt",
    "over_tokens": "80% of the model's window",
}
"""What a setting left unset means, as ``handoff config`` says it."""

_CREDENTIAL = re.compile(r"(?:^|[_-])(?:api[_-]?key|key|token|secret|password)$", re.IGNORECASE)
"""A key name that holds a credential: ``api_key``, ``openai_api_key``, ``token``..."""


def section_names(names: list[str]) -> tuple[str, ...]:
    """The sections a prompt asks for, as named (``## `` before a name is dropped): at least
    one, each once."""
    found = tuple(name.strip().lstrip("#").strip() for name in names)
    if not found or not all(found):
        raise ValueError("names an empty section" if found else "names no section")
    seen: set[str] = set()
    for name in found:
        if name.casefold() in seen:
            raise ValueError(f"names {name!r} twice")
        seen.add(name.casefold())
    return found


def given_setting(key: str, value: Any, origin: Origin) -> Setting:
    """A setting given by a flag or a variable (as the CLI parsed it), checked as a file's
    would be where the parser leaves it as text: ``--sections`` (names separated by commas),
    ``--idle``."""
    try:
        if key == SECTIONS_KEY:
            value = section_names(str(value).split(","))
        elif key == "idle":
            parse_duration(str(value))
    except ValueError as error:
        raise UsageError(f"{origin.names(key)}: {error}") from None
    return Setting(value, origin)


# --- the files ---------------------------------------------------------------------------


def user_path(env: Mapping[str, str], home: Path) -> Path:
    """Where the user's file is, as the XDG convention places it (a relative
    ``$XDG_CONFIG_HOME`` is ignored, as the convention says)."""
    base = env.get("XDG_CONFIG_HOME", "")
    return (Path(base) if os.path.isabs(base) else home / ".config") / USER_FILE


def read_file(path: Path) -> bytes | None:
    """The bytes of the file at ``path``; None when there is none. ``ValueError`` when what
    is there is no regular file (a folder; a FIFO, which would block; a device), ``OSError``
    when it cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise ValueError("is a folder" if stat.S_ISDIR(mode) else "not a regular file")
        with open(fd, "rb", closefd=False) as file:
            return file.read()
    finally:
        os.close(fd)


def _file_bytes(path: Path) -> bytes | None:
    """``read_file``, its errors one line naming the file (``ConfigError``)."""
    try:
        return read_file(path)
    except ValueError as error:
        raise ConfigError(path, str(error)) from None
    except OSError as error:
        raise ConfigError(path, os_reason(error)) from None


def _read(path: Path, source: str, pyproject: bool = False) -> File | None:
    """The settings of the file at ``path``; None if there is no such file (or, for a
    ``pyproject.toml``, no ``[tool.handoff]`` in it)."""
    data = _file_bytes(path)
    if data is None:
        return None
    if pyproject and b"handoff" not in data:
        return None  # not ours: never parsed, so another tool's broken file stops nothing
    try:
        table: Any = tomllib.loads(data.decode())
    except UnicodeDecodeError:
        raise ConfigError(path, "not UTF-8 text") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(path, f"not valid TOML: {error}") from None
    label = str(path)
    if pyproject:
        table = table.get("tool", {})
        table = table.get("handoff") if isinstance(table, dict) else None
        if table is None:
            return None
        label = f"{path} [tool.handoff]"
        if not isinstance(table, dict):
            raise ConfigError(label, f"must be a table, not {_kind(table)}")
    values = _values(table, label, path.parent)
    digest = hashlib.sha256(orjson.dumps(table, option=orjson.OPT_SORT_KEYS)).hexdigest()
    guarded = _guarded(values, path.parent) if source == PROJECT else {}
    return File(path, label, source, values, digest, guarded)


def _guarded(values: Mapping[str, Any], folder: Path) -> dict[str, str]:
    """What of a project's settings chooses where the conversation or the key goes: a host,
    or a file outside the project's folder (as its links lead) read into the prompt."""
    found = {}
    if values.get("api_base") is not None:
        found["api_base"] = f"sends the conversation and the key to {values['api_base']}"
    prompt = values.get(PROMPT_FILE)
    if prompt is not None and not Path(os.path.realpath(prompt)).is_relative_to(
        os.path.realpath(folder)
    ):
        found[PROMPT_FILE] = f"reads {prompt}, outside the project, into the prompt"
    return found


def _values(table: dict[str, Any], label: str, folder: Path) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for key, value in table.items():
        if _CREDENTIAL.search(key):
            raise ConfigError(
                label,
                "a key is never read from a file: keep it in the environment "
                "($HANDOFF_API_KEY, or the provider's own variable, such as OPENAI_API_KEY)",
                key,
            )
        read = KEYS.get(key)
        if read is None:
            near = difflib.get_close_matches(key.replace("-", "_"), KEYS, n=1)
            hint = f"did you mean {near[0]}? " if near else ""
            raise ConfigError(label, f"unknown key ({hint}the keys: {', '.join(KEYS)})", key)
        try:
            values[key] = read(value, folder)
        except ValueError as error:
            raise ConfigError(label, str(error), key) from None
    if SECTIONS_KEY in values and PROMPT_FILE not in values:
        raise ConfigError(label, f"name them with the {PROMPT_FILE} they describe", SECTIONS_KEY)
    return values


def read_project(path: Path) -> File | None:
    """The project file at ``path``: a ``.handoff.toml``, or a ``pyproject.toml`` with a
    ``[tool.handoff]`` table; None for a file of another name, never read as one."""
    if path.name not in (PROJECT_FILE, PYPROJECT):
        return None
    return _read(path, PROJECT, pyproject=path.name == PYPROJECT)


def project_file(cwd: Path) -> File | None:
    """The project's file: the nearest from ``cwd`` up."""
    for folder in (cwd, *cwd.parents):
        found = _read(folder / PROJECT_FILE, PROJECT) or _read(
            folder / PYPROJECT, PROJECT, pyproject=True
        )
        if found is not None:
            return found
    return None


# --- trust in a project's file -----------------------------------------------------------


class Refused(NamedTuple):
    """A setting of an untrusted project file left out: its key, and what it would have done."""

    key: str
    does: str


def trust_path(env: Mapping[str, str], home: Path) -> Path:
    return user_path(env, home).parent / TRUST_FILE


def _trusted(path: Path) -> dict[str, str]:
    """The trust records at ``path``: a project file's path, the digest of its settings."""
    data = _file_bytes(path)
    if data is None:
        return {}
    try:
        records = orjson.loads(data)
    except orjson.JSONDecodeError:
        records = None
    if not isinstance(records, dict) or not all(isinstance(v, str) for v in records.values()):
        raise ConfigError(path, "not a record of trusted files (remove it, and trust them again)")
    return records


def is_trusted(file: File, store: Path) -> bool:
    return _trusted(store).get(_record_key(file)) == file.digest


def _record_key(file: File) -> str:
    return os.path.realpath(file.path)  # one record, by whichever link the file is reached


def trust(file: File, store: Path, *, forget: bool = False) -> None:
    """Record that the user trusts ``file`` as it is now (or, ``forget``, no longer): written
    whole to a temporary file, then renamed over the record."""
    records = _trusted(store)
    if forget:
        records.pop(_record_key(file), None)
    else:
        records[_record_key(file)] = file.digest
    store.parent.mkdir(parents=True, exist_ok=True)
    temporary = store.with_name(f".{store.name}.{os.getpid()}.tmp")
    try:
        temporary.write_bytes(orjson.dumps(records, option=orjson.OPT_INDENT_2) + b"\n")
        os.replace(temporary, store)
    except OSError as error:
        temporary.unlink(missing_ok=True)
        raise ConfigError(store, os_reason(error)) from None


def _withheld(file: File, store: Path) -> tuple[File, tuple[Refused, ...]]:
    """``file`` without the settings it may not give, untrusted, and those left out (with the
    sections that describe a prompt file left out)."""
    if not file.guarded or is_trusted(file, store):
        return file, ()
    refused = tuple(Refused(key, does) for key, does in file.guarded.items())
    left = set(file.guarded) | ({SECTIONS_KEY} if PROMPT_FILE in file.guarded else set())
    values = {key: value for key, value in file.values.items() if key not in left}
    return replace(file, values=values), refused


@dataclass(frozen=True)
class Config:
    """The settings in force, each with where it came from, and the files read for them."""

    settings: dict[str, Setting]
    project: File | None
    user: File | None
    user_path: Path
    """Where the user's file is looked for."""
    refused: tuple[Refused, ...] = ()
    """The project file's settings left out: the user does not trust it."""

    def value(self, key: str) -> Any:
        return self.settings[key].value

    def template(self) -> Template | None:
        """The prompt file in force, read (``prompt.parse_template``: UTF-8, not empty, no
        field but ``{focus}``), with its sections; None: the built-in prompt."""
        from handoff_cli.handoff.prompt import parse_template

        prompt, sections = self.settings[PROMPT_FILE], self.settings[SECTIONS_KEY]
        if prompt.value is None:
            if sections.origin.source != DEFAULT:
                raise UsageError(
                    f"{sections.origin.names(SECTIONS_KEY)} names the sections a prompt file "
                    "asks for: give the prompt file too (--prompt-file)"
                )
            return None
        path = Path(prompt.value)
        named = f"{prompt.origin.names(PROMPT_FILE)} {path}"
        try:
            data = read_file(path)
        except ValueError as error:
            raise UsageError(f"{named}: {error}") from None
        except OSError as error:
            raise UsageError(f"{named}: {os_reason(error)}") from None
        if data is None:
            raise UsageError(f"{named}: no such file")
        try:
            text = data.decode()
        except UnicodeDecodeError:
            raise UsageError(f"{named}: not UTF-8 text") from None
        return parse_template(text, path, named, tuple(sections.value))

    def to_json(self) -> dict[str, Any]:
        def shown(value: Any) -> Any:
            return str(value) if isinstance(value, Path) else value

        return {
            "files": {
                PROJECT: str(self.project.path) if self.project else None,
                USER: str(self.user.path) if self.user else None,
            },
            "refused": [{"key": r.key, "does": r.does} for r in self.refused],
            "settings": {
                key: {
                    "value": shown(s.value),
                    "source": s.origin.source,
                    "from": _from(s.origin, self),
                }
                for key, s in self.settings.items()
            },
        }


def _from(origin: Origin, found: Config) -> str | None:
    """The flag, the variable, or the file's path, that gave a setting (for ``--json``)."""
    for file in (found.project, found.user):
        if file is not None and origin.source == file.source:
            return str(file.path)
    return origin.place


def load(given: Mapping[str, Setting], cwd: Path, env: Mapping[str, str], home: Path) -> Config:
    """The settings in force: ``given`` (the flags and variables the CLI parsed), else the
    project file's, else the user file's, else the defaults; ``sections`` from the one that
    gave ``prompt_file``, unless given."""
    project, where = project_file(cwd), user_path(env, home)
    refused: tuple[Refused, ...] = ()
    if project is not None:
        project, refused = _withheld(project, trust_path(env, home))
    user = _read(where, USER)
    files = [file for file in (project, user) if file is not None]
    settings: dict[str, Setting] = {}
    for key in KEYS:
        found = given.get(key)
        if found is None and key != SECTIONS_KEY:
            found = next((s for f in files if (s := f.setting(key)) is not None), None)
        settings[key] = found or Setting(DEFAULTS[key], BUILT_IN)
    if SECTIONS_KEY not in given:
        prompt = settings[PROMPT_FILE].origin
        owner = next((f for f in files if f.source == prompt.source), None)
        settings[SECTIONS_KEY] = (owner and owner.setting(SECTIONS_KEY)) or Setting(
            SECTIONS, BUILT_IN
        )
    return Config(settings, project, user, where, refused)
