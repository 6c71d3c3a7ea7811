"""``/browser connect [URL]`` in the chat: drive a debuggable Chromium for the rest of the session.

:func:`connect` probes the DevTools endpoint at ``URL`` (default ``http://127.0.0.1:9222``); when nothing
answers there and the address is this machine's (loopback), it starts Chromium with
``--remote-debugging-port`` on that port and a profile folder of its own
(``HERMES_HOME/browser/connect-profile``, 0700), and waits for the endpoint. The URL is then kept in
the session's state under :data:`SESSION_KEY`; :func:`~hermes.tools.browser.page.config_of` reads it
over ``browser.cdp_url``, so the session's next browser call opens its page there (an open tab of the
session is closed first). A Chromium hermes started is stopped when the process exits.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import subprocess
import time
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from hermes.errors import ToolError

SESSION_KEY = "browser_connect_url"
DEFAULT_URL = "http://127.0.0.1:9222"
START_WAIT = 20.0
_started: list[subprocess.Popen[bytes]] = []


def _loopback(host: str) -> bool:
    return host in ("127.0.0.1", "localhost", "::1") or host.startswith("127.")


def connect(state: MutableMapping[str, Any], task_id: str, url: str, *, home: Path,
            chromium: str | None) -> str:
    """Point the session at the endpoint ``url`` (starting a local Chromium when needed); what happened,
    in words. A ToolError when nothing answers and nothing could be started."""
    from hermes.tools.browser.cdp import probe_now

    url = (url or DEFAULT_URL).strip()
    if "://" not in url:
        url = f"http://{url}"
    try:
        parts = urlsplit(url)
        host, port = parts.hostname or "", parts.port
    except ValueError:
        raise ToolError(f"not an endpoint address: {url[:200]}") from None
    if parts.scheme not in ("http", "https", "ws", "wss") or not host:
        raise ToolError(f"not an endpoint address: {url[:200]} (http://HOST:PORT of a DevTools endpoint)")
    how = "found a debuggable Chromium"
    if not probe_now(url):
        if not _loopback(host) or port is None:
            raise ToolError(f"no DevTools endpoint answers at {url}; start Chromium there with "
                            "--remote-debugging-port=PORT (hermes starts one itself only on this machine)")
        if chromium is None:
            raise ToolError(f"no DevTools endpoint answers at {url} and no Chromium is installed to start one")
        _start(chromium, port, home)
        deadline = time.monotonic() + START_WAIT
        while not probe_now(url):
            if time.monotonic() > deadline:
                raise ToolError(f"Chromium was started for {url} but its endpoint did not answer within "
                                f"{START_WAIT:g} s")
            time.sleep(0.2)
        how = f"started Chromium ({chromium}) with its DevTools endpoint"
    state[SESSION_KEY] = url
    _close_open_tab(task_id)
    return f"{how} at {url}; this session's browser tools now drive it"


def _start(chromium: str, port: int, home: Path) -> None:
    profile = home / "browser" / "connect-profile"
    profile.mkdir(parents=True, exist_ok=True, mode=0o700)
    args = [chromium, f"--remote-debugging-port={port}", "--remote-debugging-address=127.0.0.1",
            f"--user-data-dir={profile}", "--no-first-run", "--no-default-browser-check", "about:blank"]
    if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        args.insert(1, "--headless=new")
    if os.geteuid() == 0:
        args.insert(1, "--no-sandbox")  # Chromium's sandbox refuses to run as root
    process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    if not _started:
        atexit.register(stop_started)
    _started.append(process)


def stop_started() -> None:
    """Stop the Chromium processes :func:`connect` started (process exit, tests)."""
    while _started:
        process = _started.pop()
        with contextlib.suppress(OSError):
            process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()


def _close_open_tab(task_id: str) -> None:
    from hermes.tools.asyncbridge import run_sync
    from hermes.tools.browser.backend import hub

    with contextlib.suppress(Exception):
        run_sync(hub().close_tab(task_id), timeout=30)
