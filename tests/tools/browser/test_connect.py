"""`/browser connect [URL]` in `hermes chat`: nothing answers at the URL, so hermes starts a debuggable
Chromium there, and the session's browser tools then drive that Chromium (its /json/list shows the page
the model opened); the Chromium is stopped when the chat ends."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from fakes.model_server import Reply, call, text
from hermes.tools.browser.cdp import probe_now
from tools.browser.pages import PageServer
from tools.browser.support import need_browser

pytestmark = pytest.mark.browser


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_browser_connect_starts_a_chromium_and_the_tools_drive_it(hermes_home: Path, model_server: Any,
                                                                   pages: PageServer) -> None:
    need_browser()
    (hermes_home / "config.yaml").write_text("browser:\n  allow_private_urls: true\n", encoding="utf-8")
    endpoint = f"http://127.0.0.1:{free_port()}"
    targets: list[list[dict[str, Any]]] = []

    def script(request: dict[str, Any]) -> Reply:
        tools = [m for m in request["messages"] if m["role"] == "tool"]
        if not tools:
            return call("browser_navigate", {"url": pages.url("/form")})
        with urllib.request.urlopen(f"{endpoint}/json/list", timeout=5) as reply:
            targets.append(json.loads(reply.read()))
        return text("Opened: " + json.loads(tools[0]["content"])["title"])

    server = model_server(script)
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "HERMES_MODEL",
                                                            "BROWSER_CDP_URL")}
    env["HERMES_HOME"] = str(hermes_home)
    lines = f"/browser\n/browser connect ftp://nowhere\n/browser connect {endpoint}\nOpen the form\n/exit\n"
    proc = subprocess.run([sys.executable, "-m", "hermes", "chat", "--base-url", server.url, "--model", "test-model"],
                          input=lines, capture_output=True, text=True, env=env, timeout=180)
    assert proc.returncode == 0, proc.stderr
    assert "usage: /browser connect [URL]" in proc.stdout
    assert "/browser connect: not an endpoint address: ftp://nowhere" in proc.stdout
    assert f"started Chromium (/usr/bin/chromium) with its DevTools endpoint at {endpoint}" in proc.stdout
    assert "Opened: Form" in proc.stdout
    (listed,) = targets
    assert pages.url("/form") in [t.get("url") for t in listed], listed
    assert not probe_now(endpoint)  # stopped with the chat
