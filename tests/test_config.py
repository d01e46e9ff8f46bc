"""Defaults from configuration files (``handoff_cli.config``), ``handoff config``, and the
user's own prompt (``--prompt-file``, ``--sections``): each precedence step, each error."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest

from handoff_cli.document import PROMPT_OPENINGS, SECTIONS
from handoff_cli.errors import ExitCode

from .conftest import (
    DOCUMENT,
    EXAMPLES,
    FIXTURES,
    Result,
    files_in,
    model_env,
    run_cli,
)
from .fakellm import FakeLLMServer, Reply

SOURCE = next(EXAMPLES.glob("-home-dev-projects-weather-cli/*.jsonl"))


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A project with a subfolder to run in; the user's file is under $XDG_CONFIG_HOME,
    which the tests point at ``tmp_path / "config"`` (conftest)."""
    (tmp_path / "project" / "sub").mkdir(parents=True)
    return tmp_path


def project(home: Path) -> Path:
    return home / "project"


def user_file(home: Path) -> Path:
    return home / "config" / "handoff" / "config.toml"


def toml(values: dict[str, Any]) -> str:
    """Keys and values as TOML (JSON's strings, numbers and arrays are TOML's too)."""
    return "".join(f"{key} = {json.dumps(value)}\n" for key, value in values.items())


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


def config_json(home: Path, *args: str, env: dict[str, str] | None = None) -> Any:
    result = run_cli("config", "--json", *args, env=env, cwd=project(home) / "sub")
    assert result.code == 0, result.stderr
    assert result.stderr == ""
    return result.json()


def config_error(home: Path, *args: str, env: dict[str, str] | None = None) -> str:
    """The one line ``handoff config`` says of what would stop a handoff, exit 2."""
    result = run_cli("config", *args, env=env, cwd=project(home) / "sub")
    assert result.code == ExitCode.USAGE, result.stdout
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    return result.stderr.strip()


# --- precedence: flag > env > project > user > built-in, for every key ---------------------

LAYERS = ("default", "user", "project", "env", "flag")
# Each key: its flag, its variable, and a value at each layer (user, project, env, flag), as
# given there, and as `config --json` shows it in force.
KEYS: dict[str, tuple[str, str, list[Any], list[Any]]] = {
    "model": (
        "--model",
        "HANDOFF_MODEL",
        ["u/m", "p/m", "e/m", "f/m"],
        ["u/m", "p/m", "e/m", "f/m"],
    ),
    "api_base": (
        "--api-base",
        "HANDOFF_API_BASE",
        ["http://u", "http://p", "http://e", "http://f"],
        ["http://u", "http://p", "http://e", "http://f"],
    ),
    "focus": ("--focus", "HANDOFF_FOCUS", ["u", "p", "e", "f"], ["u", "p", "e", "f"]),
    "over_tokens": ("--over-tokens", "HANDOFF_OVER_TOKENS", [11, 12, "13", "14"], [11, 12, 13, 14]),
    "idle": ("--idle", "HANDOFF_IDLE", ["1m", 120, "3m", "4m"], ["1m", "120", "3m", "4m"]),
    "max_doc_tokens": (
        "--max-doc-tokens",
        "HANDOFF_MAX_DOC_TOKENS",
        [301, 302, "303", "304"],
        [301, 302, 303, 304],
    ),
}
DEFAULTS = {
    "model": None,
    "api_base": None,
    "focus": None,
    "over_tokens": None,
    "idle": "10m",
    "max_doc_tokens": 2000,
}


@pytest.mark.parametrize("layer", LAYERS)
@pytest.mark.parametrize("key", KEYS)
def test_each_setting_comes_from_the_first_that_gives_it(home: Path, key: str, layer: str) -> None:
    flag, variable, given, shown = KEYS[key]
    depth = LAYERS.index(layer)
    if depth >= 1:
        write(user_file(home), toml({key: given[0]}))
    if depth >= 2:
        write(project(home) / ".handoff.toml", toml({key: given[1]}))
        if key == "api_base":  # a host: only from a project file the user trusts
            assert run_cli("trust", cwd=project(home) / "sub").code == 0
    env = {variable: str(given[2])} if depth >= 3 else {}
    args = [flag, str(given[3])] if depth >= 4 else []
    found = config_json(home, *args, env=env)["settings"][key]
    assert found["source"] == layer
    assert found["value"] == (shown[depth - 1] if depth else DEFAULTS[key])
    places = [None, str(user_file(home)), str(project(home) / ".handoff.toml"), variable, flag]
    assert found["from"] == places[depth]


@pytest.mark.parametrize("layer", LAYERS)
def test_a_prompt_file_and_its_sections_come_from_the_first_that_gives_them(
    home: Path, layer: str
) -> None:
    depth = LAYERS.index(layer)
    prompts = [
        write(folder / name, f"Brief the next agent ({name}).")
        for folder, name in [
            (user_file(home).parent, "user.md"),
            (project(home), "project.md"),
            (home, "env.md"),
            (home, "flag.md"),
        ]
    ]
    if depth >= 1:  # named relative to the file that names them
        write(user_file(home), toml({"prompt_file": "user.md", "sections": ["U1", "U2"]}))
    if depth >= 2:
        write(
            project(home) / ".handoff.toml", toml({"prompt_file": "project.md", "sections": ["P"]})
        )
    env = {"HANDOFF_PROMPT_FILE": str(prompts[2]), "HANDOFF_SECTIONS": "E1, ## E2"}
    flag = ["--prompt-file", str(prompts[3]), "--sections", "F1,F2,F3"]
    found = config_json(home, *(flag if depth >= 4 else []), env=env if depth >= 3 else {})
    prompt, sections = found["settings"]["prompt_file"], found["settings"]["sections"]
    assert prompt["source"] == sections["source"] == layer
    expected = [None, ["U1", "U2"], ["P"], ["E1", "E2"], ["F1", "F2", "F3"]]
    assert prompt["value"] == (str(prompts[depth - 1]) if depth else None)
    assert sections["value"] == (expected[depth] or list(SECTIONS))


def test_a_files_sections_go_with_its_own_prompt_file(home: Path) -> None:
    """A prompt file named nearer, without sections, asks for the six: the sections of a
    prompt file further away describe that one."""
    write(user_file(home).parent / "user.md", "Brief them.")
    write(user_file(home), toml({"prompt_file": "user.md", "sections": ["Summary"]}))
    write(project(home) / "project.md", "Brief them in the six sections.")
    write(project(home) / ".handoff.toml", toml({"prompt_file": "project.md"}))
    found = config_json(home)["settings"]
    assert found["prompt_file"]["value"] == str(project(home) / "project.md")
    assert found["sections"] == {"value": list(SECTIONS), "source": "default", "from": None}


def test_config_shows_the_files_and_every_setting_for_people(home: Path) -> None:
    write(project(home) / "prompts" / "h.md", "Brief them: {focus}")
    write(
        project(home) / ".handoff.toml",
        toml({"model": "openai/gpt-4o-mini", "prompt_file": "prompts/h.md", "sections": ["A"]}),
    )
    write(user_file(home), toml({"max_doc_tokens": 900}))
    result = run_cli(
        "config", "--focus", "the tests", cwd=project(home) / "sub", env={"HANDOFF_IDLE": "2h"}
    )
    assert result.code == 0 and result.stderr == ""
    here, mine = project(home) / ".handoff.toml", user_file(home)
    assert result.stdout.splitlines() == [
        f"project file  {here}",
        f"user file     {mine}",
        "",
        f"model           openai/gpt-4o-mini                project  {here}",
        "api_base        (the provider's own)              default",
        "focus           the tests                         flag     --focus",
        f"prompt_file     {project(home) / 'prompts/h.md'}  project  {here}",
        f"sections        A                                 project  {here}",
        "over_tokens     (80% of the model's window)       default",
        "idle            2h                                env      $HANDOFF_IDLE",
        f"max_doc_tokens  900                               user     {mine}",
    ]


def test_config_with_no_files_says_so(home: Path) -> None:
    result = run_cli("config", cwd=project(home) / "sub")
    assert result.code == 0
    lines = result.stdout.splitlines()
    assert lines[:2] == [
        "project file  none, from here up",
        f"user file     {user_file(home)} (none there)",
    ]
    assert all(line.endswith("default") for line in lines[3:]), lines
    assert config_json(home)["files"] == {"project": None, "user": None}


def test_the_user_file_is_under_the_xdg_folder_else_under_home(home: Path) -> None:
    write(home / "h" / ".config" / "handoff" / "config.toml", toml({"focus": "home's"}))
    for xdg in ("", "relative/folder"):  # a relative one is ignored, as the convention says
        found = config_json(home, env={"XDG_CONFIG_HOME": xdg, "HOME": str(home / "h")})
        assert found["settings"]["focus"]["value"] == "home's", xdg
        assert found["files"]["user"] == str(home / "h" / ".config" / "handoff" / "config.toml")


# --- a project's file, from whoever wrote the repository -----------------------------------


def trust(home: Path, *args: str) -> Result:
    return run_cli("trust", *args, cwd=project(home) / "sub")


@pytest.mark.litellm
def test_an_untrusted_project_file_cannot_send_the_conversation_elsewhere(
    home: Path, session: Path, llm_server: FakeLLMServer
) -> None:
    with FakeLLMServer() as theirs:
        write(user_file(home), toml({"api_base": llm_server.base_url}))
        here = write(project(home) / ".handoff.toml", toml({"api_base": theirs.base_url}))
        llm_server.script(Reply(DOCUMENT))
        env = {"HANDOFF_MODEL": "openai/gpt-4o-mini", "HANDOFF_API_KEY": "sk-users-own-key"}
        result = hand_off(home, session, "--no-record", "--retries", "0", env=env)
        assert result.code == 0, result.stderr
        assert theirs.requests == [] and len(llm_server.requests) == 1
        assert f"note: {here}: api_base left out: it sends the conversation and the key to " in (
            result.stderr
        )
        assert trust(home).stdout == f"{here}\n"
        theirs.script(Reply(DOCUMENT))
        assert hand_off(home, session, "--no-record", "--retries", "0", env=env).code == 0
        assert len(theirs.requests) == 1 and len(llm_server.requests) == 1  # trusted: it may
        write(here, toml({"api_base": theirs.base_url, "focus": "changed since"}))
        found = config_json_noted(home)
        assert found["settings"]["api_base"]["source"] == "user"  # a change ends the trust
        assert found["refused"] == [
            {"key": "api_base", "does": f"sends the conversation and the key to {theirs.base_url}"}
        ]


def config_json_noted(home: Path) -> Any:
    """``config --json``, with the lines it says of what it left out."""
    result = run_cli("config", "--json", cwd=project(home) / "sub")
    assert result.code == 0 and "left out" in result.stderr, result.stderr
    return result.json()


def test_an_untrusted_project_file_reads_no_file_outside_the_project(home: Path) -> None:
    secret = write(home / "elsewhere" / "notes.txt", "Brief them: a file of the user's own.")
    write(project(home) / "prompts" / "ours.md", "Brief them.")
    (project(home) / "prompts" / "link.md").symlink_to(secret)
    cases = {"../elsewhere/notes.txt": False, "prompts/link.md": False, "prompts/ours.md": True}
    for named, used in cases.items():
        write(project(home) / ".handoff.toml", toml({"prompt_file": named, "sections": ["A"]}))
        result = run_cli("config", "--json", cwd=project(home) / "sub")
        assert result.code == 0, result.stderr
        prompt, sections = (result.json()["settings"][k] for k in ("prompt_file", "sections"))
        assert (prompt["source"], sections["source"]) == (
            ("project",) * 2 if used else ("default",) * 2
        )
        assert ("outside the project, into the prompt" in result.stderr) is not used
    assert trust(home).code == 0  # as it is now: the link is trusted
    assert config_json(home)["settings"]["prompt_file"]["source"] == "project"


def test_trust_is_kept_by_the_settings_not_the_rest_of_pyproject(home: Path) -> None:
    here = project(home) / "pyproject.toml"
    write(here, '[project]\nname = "x"\n\n[tool.handoff]\napi_base = "http://example.test"\n')
    assert trust(home, str(here)).code == 0
    write(here, '[project]\nname = "y"\n\n[tool.handoff]\napi_base = "http://example.test"\n')
    assert config_json(home)["settings"]["api_base"]["source"] == "project"
    assert trust(home, "--forget").code == 0
    assert config_json_noted(home)["settings"]["api_base"]["source"] == "default"


def test_trust_names_a_project_file_or_says_there_is_none(home: Path) -> None:
    other = write(project(home) / "settings.toml", toml({"api_base": "http://example.test"}))
    for args in ([], [str(other)], [str(home / "missing")]):
        result = trust(home, *args)
        assert result.code == ExitCode.USAGE and result.stdout == ""
        assert result.stderr.count("\n") == 1 and "no project file" in result.stderr
    assert not (home / "config" / "handoff" / "trusted.json").exists()
    write(home / "config" / "handoff" / "trusted.json", "[1, 2]")
    write(project(home) / ".handoff.toml", toml({"api_base": "http://example.test"}))
    assert "not a record of trusted files" in config_error(home)


# --- which project file -------------------------------------------------------------------


def test_the_nearest_project_file_wins(home: Path) -> None:
    write(home / ".handoff.toml", toml({"focus": "outer", "idle": "5m"}))
    write(project(home) / ".handoff.toml", toml({"focus": "inner"}))
    found = config_json(home)
    assert found["files"]["project"] == str(project(home) / ".handoff.toml")
    assert found["settings"]["focus"]["value"] == "inner"
    assert found["settings"]["idle"]["source"] == "default"  # the outer file is not read


def test_tool_handoff_in_pyproject_is_a_project_file(home: Path) -> None:
    write(home / ".handoff.toml", toml({"focus": "outer"}))
    pyproject = '[project]\nname = "x"\n\n[tool.handoff]\nfocus = "in pyproject"\nidle = "1h"\n'
    write(project(home) / "pyproject.toml", pyproject)
    found = config_json(home)
    assert found["files"]["project"] == str(project(home) / "pyproject.toml")
    assert found["settings"]["focus"]["value"] == "in pyproject"
    assert found["settings"]["focus"]["from"] == str(project(home) / "pyproject.toml")
    shown = run_cli("config", cwd=project(home) / "sub").stdout
    assert f"project file  {project(home) / 'pyproject.toml'} [tool.handoff]" in shown


def test_a_pyproject_without_tool_handoff_is_passed_over(home: Path) -> None:
    write(home / ".handoff.toml", toml({"focus": "outer"}))
    write(project(home) / "pyproject.toml", '[project]\nname = "handoff-ish"\n[tool.ruff]\n')
    write(project(home) / "sub" / "pyproject.toml", "this is [not TOML, and names no one")
    found = config_json(home)
    assert found["files"]["project"] == str(home / ".handoff.toml")
    assert found["settings"]["focus"]["value"] == "outer"


def test_handoff_toml_wins_over_pyproject_in_one_folder(home: Path) -> None:
    write(project(home) / "pyproject.toml", '[tool.handoff]\nfocus = "pyproject"\n')
    write(project(home) / ".handoff.toml", toml({"focus": "own file"}))
    assert config_json(home)["settings"]["focus"]["value"] == "own file"


# --- what a file cannot hold: one line naming the file and the key, exit 2 ----------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('api_key = "sk-live-0123456789abcdef"\n', "api_key: a key is never read from a file"),
        ('openai_api_key = "sk-0123"\n', "openai_api_key: a key is never read from a file"),
        ('token = "ghp_0123"\n', "token: a key is never read from a file"),
        ("max-doc-tokens = 900\n", "max-doc-tokens: unknown key (did you mean max_doc_tokens?"),
        ("colour = true\n", "colour: unknown key (the keys: model, api_base, focus, prompt_file"),
        ('max_doc_tokens = "900"\n', "max_doc_tokens: must be an integer, not a string"),
        ("max_doc_tokens = 50\n", "max_doc_tokens: must be at least 200, not 50"),
        ("over_tokens = 0\n", "over_tokens: must be at least 1, not 0"),
        ("over_tokens = true\n", "over_tokens: must be an integer, not a boolean"),
        ("model = 4\n", "model: must be a string, not an integer"),
        ('model = ""\n', "model: must not be empty"),
        ('api_base = "file:///etc/passwd"\n', "api_base: not an http(s) URL with a host"),
        ('api_base = "not-a-url"\n', "api_base: not an http(s) URL with a host"),
        ("focus = [1]\n", "focus: must be a string, not an array"),
        ('idle = "soon"\n', "idle: not a duration: 'soon' (say 30s, 10m, 2h or 1d)"),
        ("idle = 1.5\n", 'idle: must be a duration such as "10m", not a float'),
        ('sections = "Goal"\nprompt_file = "p.md"\n', "sections: must be an array of strings"),
        ('sections = ["A", "a"]\nprompt_file = "p.md"\n', "sections: names 'a' twice"),
        ('sections = ["A"]\n', "sections: name them with the prompt_file they describe"),
        ("model = \n", "not valid TOML: "),
        ("[model]\nname = 1\n", "model: must be a string, not a table"),
    ],
)
def test_a_file_that_cannot_be_used_is_one_line_naming_it(
    home: Path, text: str, expected: str
) -> None:
    path = write(project(home) / ".handoff.toml", text)
    said = config_error(home)
    assert said.startswith(f"Usage error: {path}: {expected}"), said
    assert "sk-" not in said and "ghp_" not in said  # a key's value is never repeated


def test_a_users_file_is_named_in_its_errors_too(home: Path) -> None:
    path = write(user_file(home), b'focus = "caf\xe9"\n')
    assert config_error(home) == f"Usage error: {path}: not UTF-8 text"


def test_a_bad_tool_handoff_is_named_with_its_table(home: Path) -> None:
    path = write(project(home) / "pyproject.toml", "[tool]\nhandoff = 5\n")
    said = config_error(home)
    assert said == f"Usage error: {path} [tool.handoff]: must be a table, not an integer"
    write(path, '[tool.handoff]\nidle = "later"\n')
    assert config_error(home).startswith(f"Usage error: {path} [tool.handoff]: idle: not a")


def test_a_broken_pyproject_that_may_hold_ours_is_an_error(home: Path) -> None:
    path = write(project(home) / "pyproject.toml", "[tool.handoff\nfocus = 1\n")
    assert config_error(home).startswith(f"Usage error: {path}: not valid TOML: ")


def test_bad_flags_and_variables_name_themselves(home: Path) -> None:
    said = config_error(home, "--sections", "A,,B", "--prompt-file", str(SOURCE))
    assert said == "Usage error: --sections: names an empty section"
    said = config_error(home, env={"HANDOFF_IDLE": "whenever"})
    assert said.startswith("Usage error: $HANDOFF_IDLE: not a duration: 'whenever'")
    said = config_error(home, env={"HANDOFF_MAX_DOC_TOKENS": "20"})
    assert said == (
        "Usage error: $HANDOFF_MAX_DOC_TOKENS must be at least 200, not 20 "
        "(see 'handoff config --help')"
    )


def test_sections_without_a_prompt_file_are_refused(home: Path) -> None:
    said = config_error(home, "--sections", "Summary")
    assert said == (
        "Usage error: --sections names the sections a prompt file asks for: give the prompt "
        "file too (--prompt-file)"
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Write it.\nKeep it under {tokens:,} tokens.\n", "2: {tokens:,} is not a placeholder"),
        ("Focus on {focus!r}.", "1: {focus!r} is not a placeholder"),
        ("One\n\ntwo {Focus}", "3: {Focus} is not a placeholder"),
    ],
)
def test_a_template_with_another_field_is_one_line_naming_it(
    home: Path, text: str, expected: str
) -> None:
    path = write(home / "h.md", text)
    said = config_error(home, "--prompt-file", str(path))
    field = expected.split(": ")[1].split(" ")[0]
    assert said == (
        f"Usage error: {path}:{expected}: only {{focus}} is filled in (write {{{field}}} to "
        "send it as it is)"
    )


def test_a_prompt_file_that_cannot_be_read_names_who_named_it(home: Path) -> None:
    write(project(home) / ".handoff.toml", toml({"prompt_file": "gone.md"}))
    said = config_error(home)
    here = project(home) / ".handoff.toml"
    assert said == f"Usage error: {here}: prompt_file {project(home) / 'gone.md'}: no such file"
    write(project(home) / "gone.md", "  \n")
    said = config_error(home)
    assert said.endswith("gone.md: the prompt file is empty")
    write(project(home) / "gone.md", b"\xff\xfe")
    assert config_error(home).endswith("gone.md: not UTF-8 text")


# --- the settings reach the handoff and the rotation ---------------------------------------


@pytest.fixture
def session(home: Path) -> Path:
    target = home / "sessions" / SOURCE.parent.name / SOURCE.name
    target.parent.mkdir(parents=True)
    shutil.copyfile(SOURCE, target)
    return target


def hand_off(home: Path, *args: str | Path, env: dict[str, str] | None = None) -> Result:
    return run_cli(*args, env=env, cwd=project(home) / "sub")


def test_a_handoff_takes_its_defaults_from_the_files(home: Path, session: Path) -> None:
    write(user_file(home), toml({"model": "extractive", "max_doc_tokens": 250}))
    write(project(home) / ".handoff.toml", toml({"focus": "the --retries flag"}))
    result = hand_off(home, session, "--json", "--no-record")
    assert result.code == 0, result.stderr
    done = result.json()
    assert done["model"] == "handoff/extractive" and done["focus"] == "the --retries flag"
    document = orjson.loads(Path(done["path"]).read_bytes().splitlines()[-2])["content"]
    assert len(document) < 400 * 4  # its cap, 250 tokens, and the wrapper
    # A variable over the files, a flag over both.
    found = hand_off(home, session, "--dry-run", "--json", env={"HANDOFF_FOCUS": "env's"}).json()
    assert found["messages"][-1]["content"].endswith("Additional focus: env's")
    found = hand_off(
        home, session, "--dry-run", "--json", "--focus", "flag's", env={"HANDOFF_FOCUS": "x"}
    )
    assert found.json()["messages"][-1]["content"].endswith("Additional focus: flag's")


def test_a_bad_file_stops_a_handoff_and_a_rotation_before_anything(
    home: Path, session: Path
) -> None:
    before = session.read_bytes()
    path = write(project(home) / ".handoff.toml", 'api_key = "sk-abc"\n')
    runs: list[tuple[str | Path, ...]] = [
        (session, "--model", "extractive"),
        ("rotate", session.parent, "--json"),
    ]
    for args in runs:
        result = hand_off(home, *args)
        assert result.code == ExitCode.USAGE and result.stdout == ""
        assert result.stderr.startswith(f"Usage error: {path}: api_key: a key is never read")
    assert session.read_bytes() == before and files_in(session.parent) == [session.name]


def test_a_rotation_takes_over_tokens_and_idle_from_the_files(home: Path, session: Path) -> None:
    write(
        project(home) / ".handoff.toml",
        toml({"model": "extractive", "over_tokens": 100, "idle": "0s"}),
    )
    plan = hand_off(home, "rotate", session.parent, "--dry-run", "--json").json()
    assert [s["path"] for s in plan["sessions"]] == [str(session)]
    plan = hand_off(home, "rotate", session.parent, "--dry-run", "--json", "--over-tokens", "1e7")
    assert plan.code == ExitCode.USAGE  # a flag is checked as the flag it is
    plan = hand_off(
        home, "rotate", session.parent, "--dry-run", "--json", "--over-tokens", "9999999"
    )
    assert plan.json()["sessions"] == []
    # The copy was written just now: a day's idleness from the variable leaves it alone.
    plan = hand_off(
        home, "rotate", session.parent, "--dry-run", "--json", env={"HANDOFF_IDLE": "1d"}
    )
    assert plan.json()["sessions"] == []


# --- the prompt file in the request -------------------------------------------------------


def prompt_of(home: Path, session: Path, *args: str, server: FakeLLMServer) -> str:
    """The handoff prompt a dry run would send."""
    result = hand_off(home, session, "--dry-run", "--json", *args, env=model_env(server))
    assert result.code == 0, result.stderr
    return str(result.json()["messages"][-1]["content"])


def test_a_prompt_file_replaces_the_instructions_and_places_the_focus(
    home: Path, session: Path, llm_server: FakeLLMServer
) -> None:
    template = write(home / "h.md", "Brief the next agent, on {focus} above all.\n")
    sent = prompt_of(
        home, session, "--prompt-file", str(template), "--focus", "retries", server=llm_server
    )
    assert sent.startswith(
        f"{PROMPT_OPENINGS[0]}\n\nBrief the next agent, on retries above all.\n\n"
    )
    assert "## Goal" not in sent and "Additional focus" not in sent
    assert "Verified facts, read from the session file" in sent  # the facts are still ours
    plain = prompt_of(home, session, "--prompt-file", str(template), server=llm_server)
    assert "on  above all." in plain  # no focus: the placeholder is left empty


def test_the_focus_is_never_expanded_in_a_template(
    home: Path, session: Path, llm_server: FakeLLMServer
) -> None:
    template = write(
        home / "h.md", 'Brief them. {focus} | {{focus}} {{tokens}} {} {0} {"a": {"b": 1}}'
    )
    focus = "{x} {focus} {{focus}} {tokens:,} }{"
    sent = prompt_of(
        home, session, "--prompt-file", str(template), "--focus", focus, server=llm_server
    )
    line = sent.split("\n\n")[1]
    assert line == f'Brief them. {focus} | {{focus}} {{tokens}} {{}} {{0}} {{"a": {{"b": 1}}}}'


def test_a_template_without_the_placeholder_has_the_focus_appended(
    home: Path, session: Path, llm_server: FakeLLMServer
) -> None:
    template = write(home / "h.md", f"{PROMPT_OPENINGS[0]} Then brief them.")
    sent = prompt_of(
        home, session, "--prompt-file", str(template), "--focus", "{x}", server=llm_server
    )
    assert sent.startswith(f"{PROMPT_OPENINGS[0]}\n\nThen brief them.\n\n")  # said once
    assert sent.endswith("\n\nAdditional focus: {x}")


def test_a_second_handoff_with_a_template_updates_the_document(
    home: Path, session: Path, llm_server: FakeLLMServer
) -> None:
    template = write(home / "h.md", "Brief them. {focus}")
    first = hand_off(home, session, "--model", "extractive", "--prompt-file", str(template))
    assert first.code == 0, first.stderr
    sent = prompt_of(
        home, session, "--prompt-file", str(template), "--focus", "x", server=llm_server
    )
    assert sent.startswith(PROMPT_OPENINGS[1] + " Its previous handoff document is below")
    assert "\n</document>\n\nBrief them. x\n\nVerified facts" in sent


def test_the_built_in_writer_says_a_prompt_file_is_not_used(home: Path, session: Path) -> None:
    template = write(home / "h.md", "Brief them.")
    result = hand_off(home, session, "--model", "extractive", "--prompt-file", template, "--json")
    assert result.code == 0, result.stderr
    assert result.stderr.count(f"the prompt file {template} is not used") == 1
    assert result.json()["missing_sections"] == []  # its own six, whatever the template asks


def test_in_place_takes_the_prompt_file(home: Path, llm_server: FakeLLMServer) -> None:
    path = home / "sessions" / "inplace.jsonl"
    write(path, (FIXTURES / "inplace/generated-omp-020-20000.jsonl").read_bytes())
    template = write(home / "h.md", "Condense it: {focus}")
    flags = ("--in-place", "--dry-run", "--json", "--prompt-file", template, "--focus", "tabs")
    result = hand_off(home, path, *flags, env=model_env(llm_server))
    assert result.code == 0, result.stderr
    assert result.json()["mode"] == "in_place"
    assert result.json()["messages"][-1]["content"].startswith(
        f"{PROMPT_OPENINGS[0]}\n\nCondense it: tabs\n"
    )


# --- the sections a prompt file asks for, checked on a model's answer ---------------------

SHORT = (
    "## Summary\n- the retries are in weather_cli/http.py\n\n## Next Steps\n1. read WEATHER_RETRIES"
)


@pytest.mark.litellm
def test_the_document_is_checked_for_the_sections_named(
    home: Path, session: Path, llm_server: FakeLLMServer
) -> None:
    template = write(home / "h.md", "Answer with ## Summary and ## Next Steps. {focus}")
    llm_server.script(Reply(SHORT))
    args = ("--prompt-file", template, "--sections", "Summary, Next Steps", "--json", "--strict")
    result = hand_off(home, session, *args, env=model_env(llm_server))
    assert result.code == 0, result.stderr
    assert result.json()["missing_sections"] == [] and len(llm_server.requests) == 1
    assert "warning" not in result.stderr


@pytest.mark.litellm
def test_without_sections_a_prompt_file_is_held_to_the_six(
    home: Path, session: Path, llm_server: FakeLLMServer
) -> None:
    template = write(home / "h.md", "Answer with ## Summary and ## Next Steps.")
    llm_server.script(Reply(SHORT), Reply(SHORT))
    result = hand_off(home, session, "--prompt-file", template, "--json", env=model_env(llm_server))
    assert result.code == 0, result.stderr
    assert result.json()["missing_sections"] == list(SECTIONS[:5])  # out of order: Next Steps
    repair = llm_server.requests[1].messages[-1]["content"]
    assert "`## Goal`, `## Constraints & Preferences`" in repair


@pytest.mark.litellm
def test_a_document_missing_a_named_section_is_repaired_then_refused_with_strict(
    home: Path, session: Path, llm_server: FakeLLMServer
) -> None:
    write(project(home) / "h.md", "Answer with ## Summary and ## Risks and ## Next Steps.")
    config = {"prompt_file": "h.md", "sections": ["Summary", "Risks", "Next Steps"]}
    write(project(home) / ".handoff.toml", toml(config))
    llm_server.script(Reply(SHORT), Reply(SHORT))
    before = session.read_bytes()
    result = hand_off(home, session, "--strict", env=model_env(llm_server))
    assert result.code == ExitCode.NO_DOCUMENT
    assert result.stderr.strip().endswith("Handoff failed: the document lacks the sections Risks")
    repair = llm_server.requests[1].messages[-1]["content"]
    assert "`## Summary`, `## Risks`, `## Next Steps`" in repair
    assert session.read_bytes() == before and files_in(session.parent) == [session.name]


@pytest.mark.litellm
def test_a_rotation_with_a_prompt_file_hands_each_session_off_once(
    home: Path, session: Path, llm_server: FakeLLMServer
) -> None:
    """Our prompt's opening stays before the template: the exchange recorded is known as a
    handoff, so a second rotation chooses nothing, and the title is the old one continued."""
    write(project(home) / "brief.md", "Brief the next agent: {focus}")
    config = {"prompt_file": "brief.md", "focus": "the flag", "over_tokens": 1, "idle": "0s"}
    write(project(home) / ".handoff.toml", toml(config))
    llm_server.script(Reply(DOCUMENT))
    first = hand_off(home, "rotate", session.parent, "--json", env=model_env(llm_server))
    assert first.code == 0, first.stderr
    done = [orjson.loads(line) for line in first.stdout.splitlines()]
    assert [d["status"] for d in done] == ["handed_off"]
    sent = llm_server.requests[0].messages[-1]["content"]
    assert sent.startswith(f"{PROMPT_OPENINGS[0]}\n\nBrief the next agent: the flag\n\n")
    again = hand_off(home, "rotate", session.parent, "--json", env=model_env(llm_server))
    assert again.code == 0 and again.stdout == "" and len(llm_server.requests) == 1
    listed = {s["id"]: s for s in run_cli("list", "--json", session.parent).json()}
    assert listed[done[0]["new_id"]]["title"].startswith("↳ ")


def test_a_chunked_plans_drafts_ask_for_the_sections_named(
    home: Path, llm_server: FakeLLMServer
) -> None:
    path = write(home / "large.jsonl", (FIXTURES / "pi/large-session.jsonl").read_bytes())
    template = write(home / "h.md", "Answer with ## Summary and ## Next Steps.")
    small = ("--dry-run", "--json", "--context-window", "20000")
    args = (*small, "--prompt-file", template, "--sections", "Summary,Next Steps")
    result = hand_off(home, path, *args, env=model_env(llm_server))
    assert result.code == 0, result.stderr
    planned = result.json()
    assert planned["strategy"] == "chunked" and len(planned["requests"]) >= 3
    asked = [r["messages"][-1]["content"] for r in planned["requests"]]
    assert "these Markdown sections, in this order: `## Summary`, `## Next Steps`." in asked[0]
    assert "in the same sections (`## Summary`, `## Next Steps`)." in asked[1]
    assert asked[-1].startswith(f"{PROMPT_OPENINGS[0]}\n\nAnswer with ## Summary")
    six = hand_off(home, path, *small, env=model_env(llm_server)).json()["requests"]
    assert "in the same six sections." in six[1]["messages"][-1]["content"]


def test_a_fifo_or_a_folder_is_no_file_and_never_waited_on(home: Path) -> None:
    fifo = project(home) / ".handoff.toml"
    os.mkfifo(fifo)  # read as a file, it would block until a writer came
    assert config_error(home) == f"Usage error: {fifo}: not a regular file"
    fifo.unlink()
    os.mkfifo(home / "h.md")
    said = config_error(home, "--prompt-file", str(home / "h.md"))
    assert said == f"Usage error: --prompt-file {home / 'h.md'}: not a regular file"
    said = config_error(home, "--prompt-file", str(home))
    assert said == f"Usage error: --prompt-file {home}: is a folder"
    said = config_error(home, "--prompt-file", "/dev/zero")  # endless, were it read
    assert said == "Usage error: --prompt-file /dev/zero: not a regular file"
