"""pi's own rules that only its module holds: where its sessions are (its context is held to
pi's own in test_context.py, beside oh-my-pi's)."""

from __future__ import annotations

import json
from pathlib import Path

from handoff_cli.agents.pi import SETTINGS_BYTES, sessions_folders

from .test_check import fifo_let_go_later

HOME = Path("/home/u")


def test_pi_folder_rules(tmp_path: Path) -> None:
    assert sessions_folders({}, HOME, tmp_path) == [HOME / ".pi/agent/sessions"]
    assert sessions_folders({"PI_CODING_AGENT_DIR": "~/agents/pi"}, HOME, tmp_path) == [
        HOME / "agents/pi/sessions"
    ]
    flat = {"PI_CODING_AGENT_SESSION_DIR": "~/flat"}
    assert sessions_folders(flat, HOME, tmp_path) == [HOME / ".pi/agent/sessions", HOME / "flat"]
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "settings.json").write_text(json.dumps({"sessionDir": "/srv/global"}))
    ours = {"PI_CODING_AGENT_DIR": str(agent)}
    assert sessions_folders(ours, HOME, tmp_path) == [agent / "sessions", Path("/srv/global")]
    (tmp_path / ".pi").mkdir()
    (tmp_path / ".pi/settings.json").write_text(json.dumps({"sessionDir": "pi-sessions"}))
    # The project's settings override the agent folder's, as pi merges them.
    assert sessions_folders(ours, HOME, tmp_path) == [agent / "sessions", tmp_path / "pi-sessions"]


def test_a_projects_settings_name_no_folder_outside_the_project(tmp_path: Path) -> None:
    """A cloned repository's ``.pi/settings.json`` cannot point ``list`` and ``rotate`` at a
    folder of its choosing (another agent's sessions, ``/etc``): outside the project, by a path
    or by a link, its ``sessionDir`` is left, and the agent folder's counts."""
    agent, project = tmp_path / "agent", tmp_path / "project"
    agent.mkdir()
    (agent / "settings.json").write_text(json.dumps({"sessionDir": "/srv/global"}))
    (project / ".pi").mkdir(parents=True)
    (project / "out").symlink_to(tmp_path)
    ours = {"PI_CODING_AGENT_DIR": str(agent)}
    for outside in ("/srv/pi", "~/.claude/projects", "../elsewhere", "out/x"):
        (project / ".pi/settings.json").write_text(json.dumps({"sessionDir": outside}))
        assert sessions_folders(ours, HOME, project) == [agent / "sessions", Path("/srv/global")]


def test_a_projects_settings_are_read_only_from_a_regular_file_of_bounded_size(
    tmp_path: Path,
) -> None:
    """A project's ``.pi/settings.json`` is whoever wrote the repository's: one over
    ``SETTINGS_BYTES``, a FIFO (its open would wait for a writer) or a link to a device (which
    never ends) names no folder, and the agent folder's settings count instead."""
    agent, project = tmp_path / "agent", tmp_path / "project"
    agent.mkdir()
    (agent / "settings.json").write_text(json.dumps({"sessionDir": "/srv/global"}))
    (project / ".pi").mkdir(parents=True)
    ours = {"PI_CODING_AGENT_DIR": str(agent)}
    settings = project / ".pi/settings.json"
    settings.write_text(json.dumps({"sessionDir": "/srv/pi", "pad": " " * SETTINGS_BYTES}))
    assert sessions_folders(ours, HOME, project) == [agent / "sessions", Path("/srv/global")]
    settings.unlink()
    fifo_let_go_later(settings, json.dumps({"sessionDir": "/srv/pi"}).encode())
    assert sessions_folders(ours, HOME, project) == [agent / "sessions", Path("/srv/global")]
    settings.unlink()
    settings.symlink_to("/dev/zero")
    assert sessions_folders(ours, HOME, project) == [agent / "sessions", Path("/srv/global")]
