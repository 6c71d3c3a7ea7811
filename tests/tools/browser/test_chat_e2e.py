"""The browser tools through `hermes chat -q`: a scripted model opens a loopback page and clicks on it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fakes.model_server import Reply, call, text
from tools.browser.pages import PageServer
from tools.browser.support import need_browser

pytestmark = pytest.mark.browser


def test_a_model_opens_and_clicks_a_page_in_one_chat(hermes_home: Path, model_server: Any,
                                                      pages: PageServer) -> None:
    need_browser()
    (hermes_home / "config.yaml").write_text("browser:\n  allow_private_urls: true\n", encoding="utf-8")
    seen: list[dict[str, Any]] = []

    def script(request: dict[str, Any]) -> Reply:
        seen.append(request)
        tools = [m for m in request["messages"] if m["role"] == "tool"]
        if not tools:
            return call("browser_navigate", {"url": pages.url("/changing")})
        if len(tools) == 1:
            ref = re.search(r'button \\"Replace\\" \[(@e\d+)\]', tools[0]["content"])
            assert ref is not None, tools[0]["content"][:2000]
            return call("browser_click", {"ref": ref.group(1)})
        return text("Clicked: " + json.loads(tools[1]["content"])["result"])

    server = model_server(script)
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "HERMES_MODEL")}
    env["HERMES_HOME"] = str(hermes_home)
    proc = subprocess.run([sys.executable, "-m", "hermes", "chat", "-q", "Press Replace on the page",
                           "--base-url", server.url, "--model", "test-model"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().startswith('Clicked: clicked button "Replace"')
    offered = {t["function"]["name"] for t in seen[0]["tools"]}
    assert {"browser_navigate", "browser_click"} <= offered and "browser_cdp" not in offered
