"""Test helpers for driving Chromium over the DevTools protocol and watching its processes."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


async def cdp_call(ws: Any, ident: Any, method: str, params: dict[str, Any] | None = None,
                   session: str | None = None, seen: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Send one command on the WebSocket ``ws`` and return its reply; other messages received meanwhile
    go to ``seen`` (when given)."""
    message: dict[str, Any] = {"id": ident, "method": method, "params": params or {}}
    if session:
        message["sessionId"] = session
    await ws.send(json.dumps(message))
    while True:
        reply = json.loads(await asyncio.wait_for(ws.recv(), 15))
        if "id" in reply and reply["id"] == ident:
            return dict(reply)
        if seen is not None:
            seen.append(reply)


def live_group(pgid: int) -> list[int]:
    """Processes of process group ``pgid`` that are not zombies."""
    found = []
    for entry in (e for e in Path("/proc").iterdir() if e.name.isdigit()):
        try:
            after = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(after[2]) == pgid and after[0] != "Z":
            found.append(int(entry.name))
    return found


def wait_until(predicate: Callable[[], Any], seconds: float = 10.0) -> bool:
    """Whether ``predicate`` holds within ``seconds`` (servers under test run in their own threads)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return bool(predicate())
