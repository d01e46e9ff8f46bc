"""pi's own rules that only its module holds: where its sessions are (its context is held to
pi's own in test_context.py, beside oh-my-pi's)."""

from __future__ import annotations

import json
from pathlib import Path

from handoff_cli.agents.pi import sessions_folders

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
    (tmp_path / ".pi/settings.json").write_text(json.dumps({"sessionDir": "/srv/pi"}))
    # The project's settings override the agent folder's, as pi merges them.
    assert sessions_folders(ours, HOME, tmp_path) == [agent / "sessions", Path("/srv/pi")]
