"""The gateway's Chrome DevTools Protocol proxy: a client's WebSocket ↔ one pooled Chromium.

Chromium is driven over its DevTools pipe (:mod:`hermes.toolgateway.browser.cdppipe`), never over a port. Each
client connection gets a browser session of its own on that pipe, so several clients (the agent-browser
daemon and the upstream dialog supervisor, say) can drive one session at once, each with its own CDP
sessions and events, as against a local Chromium's browser endpoint.

Messages from Chromium reach the client as Chromium sent them (the command ids and the client's
browser session restored). Messages from the client are parsed and **screened** first
(:func:`screen`): the Chromium runs on the gateway's host, so the few commands that reach that host's
files or ports are refused with a CDP error reply instead of being forwarded —

* navigation (``Page.navigate``, ``Target.createTarget``, request rewrites in ``Fetch``/``Network``)
  only to ``http``, ``https``, ``about`` and ``data`` URLs (no ``file:``, ``chrome:``, ``view-source:``…);
* ``DOM.setFileInputFiles``, drag events carrying files, ``Network.loadNetworkResource``;
* ``Target.exposeDevToolsProtocol`` and ``Target.sendMessageToTarget`` (both would carry commands past
  the screen), ``Target.setRemoteLocations``, proxies set per browser context;
* the ``Tethering``, ``Extensions`` and ``PWA`` domains.

Download folders are rewritten to the session's own directory. What is forwarded is the re-encoded
command the screen looked at, so Chromium cannot read a message differently (duplicate keys…).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from typing import Any

from starlette.websockets import WebSocket, WebSocketState

from hermes.toolgateway.browser.cdppipe import PipeClient, PipeClosed, encode, error_reply
from hermes.toolgateway.browser.pool import BrowserSession

ALLOWED_SCHEMES = frozenset({"http", "https", "about", "data"})
_HOST_ACCESS = "it reaches files or ports of the gateway's host"
REFUSED_METHODS: dict[str, str] = {
    "DOM.setFileInputFiles": _HOST_ACCESS,
    "Page.handleFileChooser": _HOST_ACCESS,
    "Network.loadNetworkResource": _HOST_ACCESS,
    "Target.exposeDevToolsProtocol": "it would give a page unscreened DevTools access",
    "Target.sendMessageToTarget": "use flat sessions (a sessionId on each message) instead",
    "Target.setRemoteLocations": "it makes the browser connect to other hosts",
}
REFUSED_DOMAINS: dict[str, str] = {"Tethering": _HOST_ACCESS, "Extensions": _HOST_ACCESS, "PWA": _HOST_ACCESS}
URL_METHODS = frozenset({"Page.navigate", "Target.createTarget", "Fetch.continueRequest",
                         "Network.continueInterceptedRequest"})
DOWNLOAD_METHODS = frozenset({"Browser.setDownloadBehavior", "Page.setDownloadBehavior"})
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
_URL_NOISE = re.compile(r"[\t\n\r]")


def url_allowed(url: str) -> bool:
    """Whether a navigation target has an allowed scheme (checked the way browsers clean URLs first)."""
    cleaned = _URL_NOISE.sub("", url).strip("".join(chr(c) for c in range(0x21)))
    if not cleaned:
        return True  # Chromium opens about:blank
    match = _SCHEME.match(cleaned)
    return match is not None and match.group(1).lower() in ALLOWED_SCHEMES


def _refusal(method: str, params: dict[str, Any], downloads: str) -> str | None:
    """Why ``method`` may not pass (None: it may); rewrites download folders in ``params``."""
    reason = REFUSED_METHODS.get(method) or REFUSED_DOMAINS.get(method.partition(".")[0])
    if reason:
        return reason
    if method in URL_METHODS and "url" in params:
        url = params["url"]
        if not isinstance(url, str) or not url_allowed(url):
            return "only http, https, about and data URLs may be opened"
    if method == "Target.createBrowserContext" and ("proxyServer" in params or "proxyBypassList" in params):
        return "the gateway chooses the browser's proxy"
    if method == "Input.dispatchDragEvent":
        data = params.get("data")
        if isinstance(data, dict) and data.get("files"):
            return _HOST_ACCESS
    if method in DOWNLOAD_METHODS:
        params["downloadPath"] = downloads
    return None


def screen_command(text: str, downloads: str) -> tuple[dict[str, Any] | None, str | None]:
    """``(command to forward, None)`` or ``(None, CDP error reply for the client)``."""
    try:
        message = json.loads(text)
    except ValueError:
        message = None
    if not isinstance(message, dict) or not isinstance(message.get("method"), str):
        return None, error_reply(message.get("id") if isinstance(message, dict) else None, -32600,
                                 "not a CDP command")
    params = message.get("params")
    if params is None:
        params = {}
    if not isinstance(params, dict):
        return None, error_reply(message.get("id"), -32602, "params must be an object")
    method = message["method"]
    reason = _refusal(method, params, downloads)
    if reason is not None:
        return None, error_reply(message.get("id"), -32000, f"{method} is refused by the gateway: {reason}",
                                 message.get("sessionId"))
    if "params" in message:
        message["params"] = params
    return message, None


def screen(text: str, downloads: str) -> tuple[str | None, str | None]:
    """:func:`screen_command` with the command as the JSON text that would be forwarded."""
    command, reply = screen_command(text, downloads)
    return (None, reply) if command is None else (encode(command), None)


async def _client_to_browser(ws: WebSocket, client: PipeClient, session: BrowserSession) -> None:
    downloads = str(session.downloads)
    while True:
        message = await ws.receive()
        if message["type"] == "websocket.disconnect":
            return
        text = message.get("text")
        if text is None:
            await ws.close(1003, "CDP messages are text")
            return
        session.touch()
        command, reply = screen_command(text, downloads)
        if command is not None:
            reply = await client.send(command)
        if reply is not None:
            await ws.send_text(reply)


async def _browser_to_client(ws: WebSocket, client: PipeClient) -> None:
    while (text := await client.receive()) is not None:
        await ws.send_text(text)


async def open_client(session: BrowserSession) -> PipeClient:
    """A new client on the session's pipe (raises PipeClosed, PipeError or TimeoutError: the browser is gone)."""
    if session.pipe is None:
        raise PipeClosed
    return await session.pipe.connect(timeout=10)


async def relay_cdp(ws: WebSocket, client: PipeClient, session: BrowserSession) -> None:
    """Accept ``ws`` and relay until the client leaves, Chromium closes, or the session ends."""
    tasks: list[asyncio.Task[Any]] = []
    try:
        await ws.accept()
        session.touch()
        tasks = [asyncio.create_task(_client_to_browser(ws, client, session)),
                 asyncio.create_task(_browser_to_client(ws, client)),
                 asyncio.create_task(session.ended.wait())]
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        # a closed socket on either side ends the relay: the tasks' exceptions are collected, not raised
        await asyncio.gather(*tasks, return_exceptions=True)
        client.close()
        if ws.application_state != WebSocketState.DISCONNECTED and ws.client_state != WebSocketState.DISCONNECTED:
            if session.ended.is_set():
                code, reason = 1001, "browser session ended"
            elif client.overflowed:
                code, reason = 1008, "the client did not read its messages"
            else:
                code, reason = 1011, "browser closed"
            with contextlib.suppress(Exception):
                await ws.close(code, reason)


__all__ = ["REFUSED_METHODS", "open_client", "relay_cdp", "screen", "screen_command", "url_allowed"]
