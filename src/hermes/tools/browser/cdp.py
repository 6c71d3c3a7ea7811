"""The two CDP-only tools, ``browser_cdp`` and ``browser_dialog``, and the endpoint probe that gates them.

They are offered only when a Chrome DevTools Protocol endpoint (``BROWSER_CDP_URL`` or
``browser.cdp_url``) **answers** when the session starts: :func:`endpoint_answers` asks its
``/json/version`` with a one-second limit and remembers the answer for :data:`PROBE_TTL` seconds. This is
the one availability check that touches the network, and only when the person configured an endpoint
(a dead URL leaves the tools out instead of offering tools that cannot work).

* ``browser_cdp`` — one raw CDP method on the task's page (``Page.navigate`` targets pass the same URL
  guard as ``browser_navigate``), with a time limit;
* ``browser_dialog`` — accept or dismiss the JavaScript dialog the page is waiting on (snapshots list
  pending ones; with this backend dialogs wait for the model instead of being closed by the policy).
"""

from __future__ import annotations

import json
import re
import threading
import time
from typing import Any
from urllib.parse import urlsplit

from hermes.errors import ToolArgumentError, ToolError
from hermes.tools.registry import registry
from hermes.tools.untrusted import mark_untrusted

PROBE_TIMEOUT = 1.0
PROBE_TTL = 30.0
_METHOD = re.compile(r"^[A-Z][A-Za-z]*\.[a-z][A-Za-z]*$")
_probes: dict[str, tuple[float, bool]] = {}
_lock = threading.Lock()


def endpoint_answers(url: str, *, timeout: float = PROBE_TIMEOUT) -> bool:
    """Whether a DevTools endpoint answers ``GET /json/version`` at ``url`` (http, https, ws or wss;
    its host and port are what count) within ``timeout`` seconds; cached for :data:`PROBE_TTL`."""
    now = time.monotonic()
    with _lock:
        cached = _probes.get(url)
        if cached is not None and now - cached[0] < PROBE_TTL:
            return cached[1]
    ok = _probe(url, timeout)
    with _lock:
        _probes[url] = (time.monotonic(), ok)
    return ok


def probe_now(url: str, *, timeout: float = PROBE_TIMEOUT) -> bool:
    """:func:`endpoint_answers` without the cache (``/browser connect`` waiting for a Chromium it started);
    the answer replaces the cached one."""
    ok = _probe(url, timeout)
    with _lock:
        _probes[url] = (time.monotonic(), ok)
    return ok


def _probe(url: str, timeout: float) -> bool:
    import http.client  # here, not at start-up: discovery imports this module

    try:
        parts = urlsplit(url if "://" in url else f"http://{url}")
        secure = parts.scheme in ("https", "wss")
        host, port = parts.hostname, parts.port or (443 if secure else 80)
    except ValueError:
        return False
    if not host:
        return False
    kind = http.client.HTTPSConnection if secure else http.client.HTTPConnection
    connection = kind(host, port, timeout=timeout)
    try:
        connection.request("GET", "/json/version")
        response = connection.getresponse()
        body = response.read(65_536)
        return response.status == 200 and "webSocketDebuggerUrl" in json.loads(body or b"{}")
    except (OSError, ValueError, http.client.HTTPException):
        return False
    finally:
        connection.close()


def cdp_available() -> bool:
    """playwright installed, an endpoint configured, and that endpoint answering (see the module docstring)."""
    from hermes.errors import HermesError

    try:
        from hermes.config.settings import Settings
        from hermes.tools.browser.config import cdp_url_of, playwright_installed

        settings = Settings.load()
        data = settings.config.data if isinstance(settings.config.data, dict) else {}
        url = cdp_url_of(data, settings.env.as_dict())
    except HermesError:
        return False
    return bool(url) and playwright_installed() and endpoint_answers(str(url))


#: CDP domains and methods a model may not call: they open targets or windows, change where downloads
#: go, turn off request interception (the network checks) or reach the browser process itself
#: — or read what the person's browser keeps for every site (cookies, storage, caches, response bodies)
_REFUSED_DOMAINS = frozenset({"Target", "Browser", "SystemInfo", "Tethering", "Storage", "ServiceWorker",
                              "BackgroundService", "Extensions", "PWA", "DOMStorage", "IndexedDB", "CacheStorage",
                              "HeapProfiler", "Memory"})
_REFUSED_METHODS = frozenset({
    "Page.setDownloadBehavior", "Page.navigateToHistoryEntry", "Page.createIsolatedWorld", "Fetch.disable",
    "Fetch.enable", "Network.setRequestInterception", "Network.setBypassServiceWorker", "Page.setBypassCSP",
    "Security.setIgnoreCertificateErrors", "Network.setCookie", "Network.setCookies", "Input.dispatchDragEvent",
    "Network.getAllCookies", "Network.getCookies", "Network.getResponseBody", "Network.getRequestPostData",
    "Network.replayXHR", "Network.loadNetworkResource", "Page.getResourceContent", "Network.searchInResponseBody",
})


async def browser_cdp(args: dict[str, Any], **kw: Any) -> dict[str, Any]:
    import asyncio  # the browser machinery is imported on the first call, not at start-up

    from hermes.tools.browser.backend import refuse_served
    from hermes.tools.browser.guard import address_refusal, url_refusal
    from hermes.tools.browser.page import first_line, refuse_scripts_after_fill, tab_of

    tab = await tab_of(kw)
    if tab.owns_context:
        raise ToolError("browser_cdp works on a CDP endpoint's browser (browser.cdp_url); this task uses the "
                        "local Chromium")
    refuse_scripts_after_fill(tab, "a raw CDP call")
    method = str(args["method"])
    if not _METHOD.match(method):
        raise ToolArgumentError(f"'method' must be Domain.method, such as Page.getLayoutMetrics, got {method[:100]!r}")
    params = args.get("params") or {}
    domain = method.split(".", 1)[0]
    if domain in _REFUSED_DOMAINS or method in _REFUSED_METHODS:
        raise ToolError(f"{method} is refused: it can open pages, write files or read what the browser keeps "
                        "for every site (cookies, storage, caches) outside the tools' checks (use browser_navigate "
                        "to open a page)")
    for key in ("url", "frameUrl", "downloadPath"):
        if isinstance(params, dict) and key in params and method != "Page.navigate":
            raise ToolError(f"{method} with '{key}' is refused: only Page.navigate opens a URL, and it is checked")
    if method == "Page.navigate":
        target = str(params.get("url", ""))
        allow = tab.config.allow_private_urls
        why = url_refusal(target, allow_private=allow) or await address_refusal(target, allow_private=allow)
        if why is not None:
            raise ToolError(f"refused to open {target[:200]}: {why}")
    if tab.cdp is None:
        tab.cdp = await tab.context.new_cdp_session(tab.page)
    timeout = float(args.get("timeout") or 30)
    try:
        value = await asyncio.wait_for(tab.cdp.send(method, params), timeout)
    except TimeoutError:
        raise ToolError(f"{method} did not answer within {timeout:g} s") from None
    except Exception as exc:
        raise ToolError(f"{method} failed: {first_line(exc)}") from None
    await refuse_served(tab)
    text = json.dumps(value, ensure_ascii=False, default=str)
    return {"method": method, "result": mark_untrusted(tab.page.url, text)}


async def browser_dialog(args: dict[str, Any], **kw: Any) -> dict[str, Any]:
    from hermes.tools.browser.page import dialog_notice, first_line, settle, tab_of

    tab = await tab_of(kw)
    if not tab.pending_dialogs:
        raise ToolError("no JavaScript dialog is open on this page")
    dialog = tab.pending_dialogs[0]
    shown = dialog_notice(tab)[0]
    action = str(args["action"])
    try:
        if action == "accept":
            prompt = args.get("prompt_text")
            await (dialog.accept(str(prompt)) if prompt is not None else dialog.accept())
        else:
            await dialog.dismiss()
    except Exception as exc:
        raise ToolError(f"the dialog could not be answered: {first_line(exc)}") from None
    tab.pending_dialogs.remove(dialog)
    if not tab.pending_dialogs:
        tab.dialog_opened.clear()
    tab.closed_dialogs.append({"type": shown["type"], "message": shown["message"], "closed": f"{action}ed"})
    await settle(tab)
    return {"result": f"{action}ed the {shown['type']} dialog", "dialog": shown, "url": tab.page.url,
            "pending_dialogs": dialog_notice(tab)}


BROWSER_CDP_SCHEMA: dict[str, Any] = {
    "name": "browser_cdp",
    "description": ("Send one raw Chrome DevTools Protocol command to this task's page (e.g. "
                    "'Runtime.evaluate', 'DOM.getDocument') and return its result; methods that read the browser's "
                    "cookies, storage or caches are refused."),
    "parameters": {
        "type": "object",
        "properties": {
            "method": {"type": "string", "minLength": 3, "maxLength": 100,
                       "description": "Domain.method, e.g. 'Page.getLayoutMetrics'."},
            "params": {"type": "object", "description": "The method's parameters."},
            "timeout": {"type": "number", "minimum": 1, "maximum": 300, "description": "Seconds (default 30)."},
        },
        "required": ["method"],
        "additionalProperties": False,
    },
}
BROWSER_DIALOG_SCHEMA: dict[str, Any] = {
    "name": "browser_dialog",
    "description": ("Accept or dismiss the JavaScript dialog (alert, confirm, prompt) the page waits on; "
                    "snapshots list pending dialogs."),
    "parameters": {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": ["accept", "dismiss"]},
            "prompt_text": {"type": "string", "maxLength": 10_000,
                            "description": "The answer to a prompt() dialog (with accept)."},
        },
        "required": ["action"],
        "additionalProperties": False,
    },
}

registry.register(name="browser_cdp", toolset="browser", schema=BROWSER_CDP_SCHEMA, handler=browser_cdp,
                  check_fn=cdp_available, is_async=True, needs_session=True)
registry.register(name="browser_dialog", toolset="browser", schema=BROWSER_DIALOG_SCHEMA, handler=browser_dialog,
                  check_fn=cdp_available, is_async=True, needs_session=True)
