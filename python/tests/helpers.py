"""What the plugin's tests share: running the real `codex exec` against a sidecar."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import codex_parity


def codex_exec(codex_bin: str, sidecar: codex_parity.Sidecar, tmp: Path, prompt: str):
    """Runs `codex exec --json PROMPT` against the sidecar, hermetic: a CODEX_HOME of its
    own, HOME and TMPDIR in `tmp`, nothing of this environment but PATH, every proxy
    variable pointed at a closed port so that a request anywhere else fails."""
    for d in ("user-home", "tmp", "work"):
        (tmp / d).mkdir(parents=True, exist_ok=True)
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp / "user-home"),
        "TMPDIR": str(tmp / "tmp"),
        "LANG": "C.UTF-8",
        "NO_PROXY": "127.0.0.1,localhost",
        **{v: "http://127.0.0.1:9" for v in ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY")},
        **sidecar.write_codex_home(tmp / "codex-home"),
    }
    return subprocess.run(
        [codex_bin, "exec", "--json", "--disable", "plugins", "--skip-git-repo-check", prompt],
        cwd=tmp / "work",
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )


def agent_texts(stdout: str) -> list[str]:
    """The texts of the agent messages in `codex exec --json`'s events."""
    texts = []
    for line in stdout.splitlines():
        event = json.loads(line)
        item = event.get("item") or {}
        if event.get("type") == "item.completed" and item.get("type") == "agent_message":
            texts.append(item.get("text"))
    return texts
