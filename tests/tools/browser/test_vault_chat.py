"""The vault through `hermes chat -q`: a scripted model signs in on a loopback page with a stored login and
a TOTP code. The password, the TOTP secret and the code reach the page's server — and no model request,
no output or debug log, and no file under HERMES_HOME (the stored session in state.db included)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import pyotp
import pytest

from fakes.model_server import Reply, call, text
from hermes.tools.browser.vault import Vault
from tools.browser.pages import VAULT_ROUTES, PageServer
from tools.browser.support import need_browser

pytestmark = pytest.mark.browser

PASSWORD = "s3cret-Pass-Never-Shown-41"
TOTP_SECRET = "KRSXG5CTMVRXEZLUKRSXG5CT"


@pytest.fixture
def site() -> Iterator[PageServer]:
    server = PageServer(dict(VAULT_ROUTES)).start()
    yield server
    server.stop()


def test_a_model_signs_in_with_the_vault_and_never_sees_the_secrets(hermes_home: Path, model_server: Any,
                                                                    site: PageServer,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    need_browser()
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")  # the vault's key in a file
    (hermes_home / "config.yaml").write_text(
        "browser:\n  allow_private_urls: true\n  vault:\n    enabled: true\n", encoding="utf-8")
    entry = Vault(hermes_home).add(site.url("/"), "ivy@example.com", PASSWORD, TOTP_SECRET)
    seen: list[dict[str, Any]] = []
    steps = [
        lambda _: call("browser_navigate", {"url": site.url("/signin")}),
        lambda _: call("browser_vault_list", {}),
        lambda last: call("browser_vault_fill", {"handle": re.findall(r"v-[0-9a-f]{10}", last)[0]}),
        lambda _: call("browser_press", {"key": "Enter"}),
        lambda _: call("browser_navigate", {"url": site.url("/two-step")}),
        lambda _: call("browser_vault_totp", {"handle": entry.handle}),
        lambda _: call("browser_press", {"key": "Enter"}),
    ]

    def script(request: dict[str, Any]) -> Reply:
        seen.append(request)
        tools = [m for m in request["messages"] if m["role"] == "tool"]
        if len(tools) < len(steps):
            return steps[len(tools)](tools[-1]["content"] if tools else "")
        return text("Signed in and verified.")

    server = model_server(script)
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "HERMES_MODEL")}
    env["HERMES_HOME"] = str(hermes_home)
    proc = subprocess.run([sys.executable, "-m", "hermes", "chat", "-q", "Sign in to the site", "--verbose",
                           "--base-url", server.url, "--model", "test-model"],
                          capture_output=True, text=True, env=env, timeout=180)
    assert proc.returncode == 0, proc.stderr
    assert "Signed in and verified." in proc.stdout

    posted = dict(site.posts)
    assert parse_qs(posted["/welcome"]) == {"login": ["ivy@example.com"], "pw": [PASSWORD]}
    code = parse_qs(posted["/verified"])["otp"][0]
    assert pyotp.TOTP(TOTP_SECRET).verify(code, valid_window=2)
    results = [m["content"] for m in seen[-1]["messages"] if m["role"] == "tool"]
    assert "filled username and password of ivy@example.com" in results[2], results[2]
    assert "filled the one-time code" in results[5], results[5]

    secrets = (PASSWORD, TOTP_SECRET, code)
    requests = json.dumps(seen)
    assert not [s for s in secrets if s in requests]
    assert not [s for s in secrets if s in proc.stdout + proc.stderr]
    stored = [p for p in hermes_home.rglob("*") if p.is_file()]
    database = hermes_home / "state.db"
    assert database in stored and b"browser_vault_fill" in database.read_bytes() + _wal(database)
    leaks = [(str(p), s) for p in stored for s in secrets if s.encode() in p.read_bytes()]
    assert leaks == []


def _wal(database: Path) -> bytes:
    wal = database.with_name(database.name + "-wal")
    return wal.read_bytes() if wal.exists() else b""
