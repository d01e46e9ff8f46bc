"""Where the agents keep their sessions: the folders searched, in a fake home (each agent's own
folder rules are tested with its module: test_omp.py, test_pi.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from handoff_cli.agents import OMP, PI
from handoff_cli.agents.places import Root, agent_of, default_roots, roots

from .conftest import EXAMPLES, FIXTURES, HEADER, Entries, run_cli, write_session

HOME = Path("/home/u")


def test_default_roots_are_those_that_exist_each_once(tmp_path: Path) -> None:
    home = tmp_path / "home"
    for folder in (".omp/agent/sessions", ".pi/agent/sessions"):
        (home / folder).mkdir(parents=True)
    found = default_roots({}, home, tmp_path)
    assert found == [Root(home / ".omp/agent/sessions", OMP), Root(home / ".pi/agent/sessions", PI)]
    (tmp_path / "sessions").mkdir()
    assert default_roots({}, home, tmp_path) == found  # empty: none of the agents'
    shutil.copyfile(FIXTURES / "omp/sample-v3.jsonl", tmp_path / "sessions/s.jsonl")
    assert default_roots({}, home, tmp_path)[-1] == Root(tmp_path / "sessions")
    shared = {"PI_CODING_AGENT_DIR": str(home / ".pi/agent")}  # both agents read it
    assert default_roots(shared, home, tmp_path) == [
        Root(home / ".pi/agent/sessions", OMP),
        Root(tmp_path / "sessions"),
    ]


def test_named_folders_replace_the_defaults(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".pi/agent/sessions").mkdir(parents=True)
    named = roots([home / ".pi/agent/sessions", Path("~/x")], {}, home, tmp_path)
    assert named[0] == Root(home / ".pi/agent/sessions", PI)  # still known as pi's
    assert named[1] == Root(Path("~/x").expanduser())
    assert agent_of(home / ".pi/agent/sessions/--p--/s.jsonl", named) == PI
    assert agent_of(tmp_path / "s.jsonl", named) is None


# --- the program, in a fake home ----------------------------------------------------------------


def fake_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """A home where both agents have sessions, in their own layouts, for two projects."""
    home = tmp_path / "home"
    project = home / "code/app"
    project.mkdir(parents=True)
    monkeypatch.delenv("HANDOFF_SESSIONS_DIR")
    for name in ("PI_CODING_AGENT_DIR", "PI_CONFIG_DIR", "XDG_DATA_HOME", "OMP_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(home))
    omp = home / ".omp/agent/sessions/-code-app"
    pi = home / ".pi/agent/sessions/--elsewhere--"
    files = {
        "omp": omp / "2026-01-01T00-00-00-000Z_0199aaaa-0000-7000-8000-000000000001.jsonl",
        "pi": pi / "2026-01-02T00-00-00-000Z_0199aaaa-0000-7000-8000-000000000002.jsonl",
    }
    entries = Entries()
    entries.user("hello")
    entries.assistant("hi")
    write_session(files["omp"], entries.items, {**HEADER, "cwd": str(project)})
    second = {**HEADER, "id": "0199aaaa-0000-7000-8000-000000000002", "cwd": "/elsewhere"}
    write_session(files["pi"], entries.items, second)
    return {"home": home, "project": project, **files}


def test_list_and_lookups_work_from_any_folder_with_nothing_configured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    place = fake_home(tmp_path, monkeypatch)
    anywhere = tmp_path / "somewhere-else"
    anywhere.mkdir()
    listed = run_cli("list", "--json", cwd=anywhere)
    assert listed.code == 0, listed.stderr
    assert {(s["path"], s["agent"]) for s in listed.json()} == {
        (str(place["omp"]), "omp"),
        (str(place["pi"]), "pi"),
    }
    shown = run_cli("show", "0199aaaa-0000-7000-8000-000000000002", "--json", cwd=anywhere)
    assert shown.code == 0 and shown.json()["header"]["cwd"] == "/elsewhere"
    # A prefix both share: ambiguous elsewhere, the project's own inside the project.
    assert run_cli("show", "0199aaaa", cwd=anywhere).code == 2
    here = run_cli("show", "0199aaaa", "--json", cwd=place["project"])
    assert here.code == 0 and here.json()["header"]["cwd"] == str(place["project"])
    mine = run_cli("list", "--here", "--json", cwd=place["project"])
    assert [s["path"] for s in mine.json()] == [str(place["omp"])]
    other = run_cli("list", "--cwd", "/elsewhere", "--json", cwd=anywhere)
    assert [s["path"] for s in other.json()] == [str(place["pi"])]


def test_not_found_names_the_folders_searched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    place = fake_home(tmp_path, monkeypatch)
    missing = run_cli("show", "ffffffff", cwd=place["home"])
    assert missing.code == 4
    assert str(place["home"] / ".omp/agent/sessions") in missing.stderr
    assert str(place["home"] / ".pi/agent/sessions") in missing.stderr


def test_sessions_dirs_are_repeatable_and_take_a_tilde(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    place = fake_home(tmp_path, monkeypatch)
    extra = place["home"] / "more"
    extra.mkdir()
    shutil.copyfile(FIXTURES / "omp/sample-v3.jsonl", extra / "s.jsonl")
    both = run_cli("list", "--json", "--sessions-dir", "~/more", "--sessions-dir", "~/.pi")
    assert {Path(s["path"]).parent for s in both.json()} == {extra, place["pi"].parent}
    monkeypatch.setenv("HANDOFF_SESSIONS_DIR", "~/more:~/.omp")
    joined = run_cli("list", "--json")
    assert {Path(s["path"]).parent for s in joined.json()} == {extra, place["omp"].parent}


def test_list_names_each_sessions_agent_and_filters_by_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    place = fake_home(tmp_path, monkeypatch)
    listed = run_cli("list", cwd=place["home"])
    assert listed.code == 0, listed.stderr
    agents = {line.split()[0]: line.split()[5] for line in listed.stdout.splitlines()}
    assert agents == {
        "0199aaaa-0000-7000-8000-000000000001": OMP,
        "0199aaaa-0000-7000-8000-000000000002": PI,
    }
    only_pi = run_cli("list", "--agent", "pi", "--json", cwd=place["home"])
    assert [s["path"] for s in only_pi.json()] == [str(place["pi"])]
    only_omp = run_cli("list", "--agent", "omp", cwd=place["home"])
    assert [line.split()[5] for line in only_omp.stdout.splitlines()] == [OMP]
    assert run_cli("list", "--agent", "aider").code == 2


def test_a_projects_own_sessions_folder_is_left_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    place = fake_home(tmp_path, monkeypatch)
    app = tmp_path / "webapp"
    (app / "sessions/2026").mkdir(parents=True)
    (app / "sessions/cart.jsonl").write_text('{"user": 7, "items": []}\n')
    (app / "sessions/2026/login.jsonl").write_text("not json\n")
    (app / "sessions/flask.json").write_text("{}")
    assert [root.agent for root in default_roots({}, place["home"], app)] == [OMP, PI]
    listed = run_cli("list", cwd=app)
    assert listed.code == 0 and listed.stderr == ""  # no warning about the app's files
    assert len(listed.stdout.splitlines()) == 2
    shutil.copyfile(FIXTURES / "omp/sample-v3.jsonl", app / "sessions/2026/agent.jsonl")
    assert default_roots({}, place["home"], app)[-1] == Root(app / "sessions")
    with_it = run_cli("list", cwd=app)
    assert len(with_it.stdout.splitlines()) == 3 and "skipped" in with_it.stderr


CLAUDE_EXAMPLE = next(EXAMPLES.glob("-home-dev-projects-todo-api/*.jsonl"))
CODEX_MADE = FIXTURES / "codex/made/sessions"


@pytest.mark.parametrize(
    ("source", "placed"),
    [
        (CLAUDE_EXAMPLE, CLAUDE_EXAMPLE.relative_to(EXAMPLES)),  # one folder down
        *((p, p.relative_to(CODEX_MADE)) for p in sorted(CODEX_MADE.glob("*/*/*/*.jsonl"))[:1]),
    ],
    ids=["claude", "codex"],
)
def test_sessions_of_an_agent_with_a_format_of_its_own_are_found_in_dot_sessions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: Path, placed: Path
) -> None:
    """``./sessions`` holding only a Claude Code session, or only a Codex rollout in its date
    folders (``YYYY/MM/DD``), is searched: such a file opens with no header of the pi
    family's."""
    place = fake_home(tmp_path, monkeypatch)
    app = tmp_path / "app"
    (app / "sessions" / placed).parent.mkdir(parents=True)
    shutil.copyfile(source, app / "sessions" / placed)
    assert default_roots({}, place["home"], app)[-1] == Root(app / "sessions")
    listed = run_cli("list", "--json", cwd=app)
    assert listed.code == 0, listed.stderr
    assert str(app / "sessions" / placed) in {s["path"] for s in listed.json()}
