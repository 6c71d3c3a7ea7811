"""``portal info``, ``status --full`` and ``tools list`` agree with each other and with what can run here.

Each configuration runs the three commands as a person would (subprocesses on one fresh HERMES_HOME)
and compares them: a category line says "active" exactly when every tool serving it is marked ✓, a
category no tool serves never says "active", an unavailable tool says what is missing, and status's
gateway section and per-surface tool counts are the same as the other two commands'. The logged-in
configurations use a token issued by the real Tool Gateway server (:class:`GatewayHarness`).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from fakes.vendors.harness import GatewayHarness

#: what serves each line of ``portal info``, written out here rather than read from the code under test
SERVED_BY: dict[str, tuple[str, ...]] = {
    "Web tools": ("web_search", "web_extract"), "Web search": ("web_search",), "Web extract": ("web_extract",),
    "Image generation": ("image_generate",), "Text to speech": ("text_to_speech",),
    "Speech to text": (), "Video generation": ("video_generate",),
    "Browser": ("browser_navigate", "browser_snapshot", "browser_click", "browser_type", "browser_scroll",
                "browser_back", "browser_press", "browser_get_images", "browser_vision", "browser_console",
                "browser_exec"),
}
ROUTED_TOOLS = ("web_search", "web_extract", "image_generate", "text_to_speech")
_ROW = re.compile(r"^  (\S.{0,16}?)\s+([✓○✗]) (.*)$")
_TOOL = re.compile(r"^\s+([✓✗]) (\w+)(?: — (?:unavailable|off): (.*?))?(?:  \(not in this session\))?$")


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayHarness]:
    with GatewayHarness(tmp_path_factory.mktemp("gw_status"), org_id="acme") as harness:
        harness.user("alice", "paid")
        harness.user("fred", "free")
        yield harness


def fake_program(folder: Path, name: str) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    program = folder / name
    program.write_text("#!/bin/sh\nexit 0\n")
    program.chmod(0o755)
    return str(folder)


def hermes(home: Path, env: dict[str, str], *args: str) -> str:
    full = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_KEY", "_URL", "_TOKEN"))}
    full.update({"HERMES_HOME": str(home), **env})
    proc = subprocess.run([sys.executable, "-m", "hermes", *args], capture_output=True, text=True, env=full,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def portal_rows(text: str) -> dict[str, tuple[str, str]]:
    rows = {}
    for line in text.splitlines():
        match = _ROW.match(line)
        if match and match.group(1) in SERVED_BY:
            rows[match.group(1)] = (match.group(2), match.group(3))
    return rows


def tool_marks(text: str) -> dict[str, str | None]:
    """tool → None when ✓, else the reason shown after "unavailable:"."""
    marks: dict[str, str | None] = {}
    for line in text.splitlines():
        match = _TOOL.match(line)
        if match:
            marks[match.group(2)] = None if match.group(1) == "✓" else (match.group(3) or "")
    return marks


def check_agreement(home: Path, env: dict[str, str]) -> tuple[dict[str, tuple[str, str]], dict[str, str | None]]:
    info = hermes(home, env, "portal", "info")
    listing = hermes(home, env, "tools", "list")
    status = hermes(home, env, "status", "--full")
    rows, marks = portal_rows(info), tool_marks(listing)
    assert rows and set(ROUTED_TOOLS) <= set(marks), (info, listing)
    for label, (mark, message) in rows.items():
        active = message.startswith("active")
        tools = SERVED_BY[label]
        if not tools:
            assert not active and message.startswith("not built yet"), (label, message)
        for tool in tools:
            assert (marks[tool] is None) == active, (label, mark, message, tool, marks[tool])
            if marks[tool] is not None:
                assert marks[tool] and marks[tool] != "requirements not met", (tool, marks[tool])
    # status --full: the same gateway block, and the tools ready for a cli session as tools list counts them
    block = info.split("\n\n", 1)[0]
    assert block in status, (block, status)
    ready = re.search(r"A new cli session gets (\d+) tools?\.", listing)
    cli = re.search(r"^  cli +.* — (\d+) tools ready", status, re.M)
    assert ready and cli and ready.group(1) == cli.group(1), (listing, status)
    return rows, marks


def test_fresh_home_without_espeak(tmp_path: Path) -> None:
    rows, marks = check_agreement(tmp_path / "home", {"PATH": fake_program(tmp_path / "bin", "bash")})
    assert rows["Text to speech"][1].startswith("not available — local eSpeak needs the program espeak-ng")
    assert "espeak-ng" in (marks["text_to_speech"] or "")
    assert rows["Speech to text"][1].startswith("not built yet")
    assert rows["Browser"][1].startswith("not available — local Chromium needs the program chromium")
    assert "FAL_KEY" in (marks["image_generate"] or "")


def test_fresh_home_with_espeak(tmp_path: Path) -> None:
    path = fake_program(tmp_path / "bin", "espeak-ng") + os.pathsep + os.environ.get("PATH", "")
    rows, marks = check_agreement(tmp_path / "home", {"PATH": path})
    assert rows["Text to speech"] == ("○", "active via local eSpeak") and marks["text_to_speech"] is None


def test_fal_key_makes_images_and_video_active_and_says_video_is_opt_in(tmp_path: Path) -> None:
    rows, marks = check_agreement(tmp_path / "home", {"FAL_KEY": "fal-test"})
    assert rows["Image generation"][1] == "active via FAL key" and marks["image_generate"] is None
    assert rows["Video generation"][1] == "active via FAL key; opt-in: not enabled (hermes tools enable video_gen)"
    assert marks["video_generate"] is None


def test_a_vendor_key(tmp_path: Path) -> None:
    rows, marks = check_agreement(tmp_path / "home", {"OPENAI_API_KEY": "sk-test"})
    assert rows["Image generation"][1] == "active via OpenAI key"
    assert rows["Text to speech"][1] == "active via OpenAI TTS key" and marks["text_to_speech"] is None


def test_gateway_selected_while_logged_out(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text("web:\n  backend: nous\nimage_gen:\n  provider: nous\n")
    rows, marks = check_agreement(home, {})
    assert rows["Web tools"][0] == "✗" and "not logged in" in (marks["web_search"] or "")
    assert marks["image_generate"] and "hermes portal login" in marks["image_generate"]


def test_a_broken_selection(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text("image_gen:\n  provider: fal\n")
    rows, marks = check_agreement(home, {})
    assert rows["Image generation"][0] == "✗" and "FAL_KEY" in (marks["image_generate"] or "")


@pytest.mark.parametrize(("user", "tts_active"), [("alice", True), ("fred", False)])
def test_logged_in_to_a_gateway(tmp_path: Path, gateway: GatewayHarness, user: str, tts_active: bool) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text("web:\n  backend: nous\nimage_gen:\n  provider: nous\n"
                                      "tts:\n  provider: nous\nbrowser:\n  cloud_provider: nous\n")
    env = {"TOOL_GATEWAY_USER_TOKEN": gateway.token(user)}
    rows, marks = check_agreement(home, env)
    assert rows["Web tools"] == ("✓", "active via Nous subscription") and marks["web_search"] is None
    assert (marks["text_to_speech"] is None) is tts_active
    # the browser through the gateway's browser-use relay: active exactly when the plan covers it
    assert (rows["Browser"] == ("✓", "active via Nous subscription")) is tts_active
    assert (marks["browser_navigate"] is None) is tts_active
