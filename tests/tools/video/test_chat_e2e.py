"""video_generate through a real `hermes chat -q` run: opt-in toolset, the session-start description the
model receives, progress lines on stderr, the file in the session's media folder (T-VGEN, TS-3)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from fakes.model_server import call, text


def hermes(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "HERMES_MODEL")}
    env.update({"HERMES_HOME": str(home), "FAL_KEY": "fal-test"})
    return subprocess.run([sys.executable, "-m", "hermes", *args], capture_output=True, text=True, env=env,
                          timeout=90)


def test_chat_with_the_video_gen_toolset(home: Path, fakes: dict[str, Any], model_server: Any) -> None:
    (home / "config.yaml").write_text(f"video_gen:\n  provider: fal\n  model: fal-ai/veo3.1\n  poll_seconds: 0.001\n"
                                      f"  fal:\n    base_url: {fakes['fal_url']}\n", encoding="utf-8")
    plain = model_server([text("no video here")])
    assert hermes(home, "chat", "-q", "hi", "--base-url", plain.url, "--model", "m").returncode == 0
    assert "video_generate" not in [t["function"]["name"] for t in plain.requests[0].get("tools", [])]

    server = model_server([call("video_generate", {"prompt": "a paper boat", "duration": 4}), text("Done.")])
    proc = hermes(home, "chat", "-q", "make a video", "--toolsets", "hermes-cli,video_gen", "--base-url",
                  server.url, "--model", "m")
    assert proc.returncode == 0, proc.stderr
    offered = {t["function"]["name"]: t["function"] for t in server.requests[0]["tools"]}
    assert "Veo 3.1" in offered["video_generate"]["description"]
    assert offered["video_generate"]["parameters"]["properties"]["duration"]["enum"] == [4, 6, 8]
    assert "video_generate: job vid_" in proc.stderr and "waiting in the queue at position 2" in proc.stderr
    result = json.loads(next(m for m in server.requests[1]["messages"] if m["role"] == "tool")["content"])
    assert result["success"] is True, result
    saved = Path(result["path"])
    assert saved.parent.parent == home / "media" and saved.parent.name != "media"  # the session's own folder
    assert json.loads(Path(result["metadata_path"]).read_text())["session_id"] == saved.parent.name
