"""The desktop app's page as a tool target: ``desktop_ui`` tools ask the page, the page answers.

A desktop page says who it is with ``ui.hello`` once it has connected. A ``desktop_ui`` tool sends a
``ui`` request through its session's sink (:class:`~hermes.tools.requests.Request` of kind ``"ui"``);
the session's :class:`~hermes.surfaces.appserver.rpc.Conversation` hands it to :meth:`UiBridge.call`,
which sends the ``ui`` notification (``call_id``, ``action``, ``args``, the current ``prefs``) to the
desktop pages following that session and waits for the first ``ui.result`` with that ``call_id``.
What the page answers — what happened on screen, or ``{"error": ...}`` — is the tool's result.

The appearance preferences (``display.in_app_tips``, ``display.in_app_tours``) are read from
config.yaml at each call, so a change made in the app's settings (``ui.prefs.set``) or with
``hermes config set`` reaches a running session's page at once: the page refuses tips or tours that are
off (the model's schema changes only from the next session, TS-9). The tips rotation
(:mod:`~hermes.surfaces.appserver.tips`) is asked through ``tips.poll``.
"""

from __future__ import annotations

import threading
import uuid
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hermes.surfaces.appserver.tips import TipRotation

if TYPE_CHECKING:
    from hermes.surfaces.appserver.rpc import AppApi, Client

#: seconds a page has to answer a ``ui`` request
UI_TIMEOUT = 30.0
PREF_KEYS = {"in_app_tips": "display.in_app_tips", "in_app_tours": "display.in_app_tours",
             "theme": "display.theme"}


class _Call:
    def __init__(self) -> None:
        self.done = threading.Event()
        self.result: Any = None


class UiBridge:
    """Which clients are desktop pages, the ``ui`` calls waiting for them, prefs and tips methods."""

    def __init__(self, api: AppApi, *, clock: Callable[[], float] | None = None) -> None:
        self.api = api
        self._pages: weakref.WeakSet[Any] = weakref.WeakSet()
        self._calls: dict[str, _Call] = {}
        self._lock = threading.Lock()
        self.tips = TipRotation(api.settings.paths.home / "desktop" / "tips.json", clock=clock)

    def methods(self) -> dict[str, Callable[[Client, dict[str, Any]], Any]]:
        return {"ui.hello": self.hello, "ui.result": self.result, "ui.prefs": self.prefs_get,
                "ui.prefs.set": self.prefs_set, "tips.poll": self.tips_poll, "tips.restart": self.tips_restart}

    # -- the tool side ----------------------------------------------------------------------------------

    def call(self, key: str, payload: dict[str, Any], timeout: float = UI_TIMEOUT) -> dict[str, Any]:
        """Ask the desktop pages following session ``key``; what the first one answers."""
        with self._lock:
            pages = [c for c in self.api.followers(key) if c in self._pages]
        if not pages:
            return {"error": "no desktop app window shows this session (the desktop_ui tools act on the "
                             "app's window; open the session in `hermes desktop`)"}
        call_id = uuid.uuid4().hex[:12]
        waiting = _Call()
        with self._lock:
            self._calls[call_id] = waiting
        params = {"session": key, "call_id": call_id, "action": payload.get("action"),
                  "args": payload.get("args") or {}, "prefs": self.prefs()}
        try:
            for page in pages:
                page.notify("ui", params)
            if not waiting.done.wait(timeout):
                return {"error": f"the desktop app did not answer within {timeout:.0f} s"}
        finally:
            with self._lock:
                self._calls.pop(call_id, None)
        answer = waiting.result
        if not isinstance(answer, dict):
            return {"error": "the desktop app answered something that is not an object"}
        if payload.get("action") == "show_tip" and "error" not in answer:
            self.tips.agent_tip()  # a tip from the agent shares the rotation's cadence
        return answer

    # -- methods --------------------------------------------------------------------------------------

    def hello(self, client: Client, params: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self._pages.add(client)
        return {"prefs": self.prefs()}

    def result(self, client: Client, params: dict[str, Any]) -> dict[str, Any]:
        from hermes.surfaces.appserver.rpc import INVALID_PARAMS, RpcError

        call_id = params.get("call_id")
        with self._lock:
            waiting = self._calls.get(str(call_id))
        if waiting is None or waiting.done.is_set():
            return {"accepted": False}  # answered already, timed out or unknown
        if "result" not in params:
            raise RpcError(INVALID_PARAMS, "'result' is required (what happened on screen, or {error: ...})")
        waiting.result = params["result"]
        waiting.done.set()
        return {"accepted": True}

    def prefs(self) -> dict[str, Any]:
        from hermes.config.schema import SCHEMA
        from hermes.config.yamlfile import ConfigFile

        config = ConfigFile.load(self.api.settings.paths.config)
        return {name: SCHEMA.read(config, key) for name, key in PREF_KEYS.items()}

    def prefs_get(self, client: Client, params: dict[str, Any]) -> dict[str, Any]:
        return {"prefs": self.prefs()}

    def prefs_set(self, client: Client, params: dict[str, Any]) -> dict[str, Any]:
        """Write the appearance keys given (config.yaml, checked by the schema); the prefs now."""
        from hermes.config.schema import SCHEMA
        from hermes.config.yamlfile import ConfigFile
        from hermes.surfaces.appserver.rpc import INVALID_PARAMS, RpcError

        unknown = sorted(set(params) - set(PREF_KEYS))
        if unknown or not params:
            raise RpcError(INVALID_PARAMS, f"give one or more of {', '.join(PREF_KEYS)}"
                                           + (f"; unknown: {', '.join(unknown)}" if unknown else ""))
        config = ConfigFile.load(self.api.settings.paths.config)
        for name, value in params.items():
            SCHEMA.check_assignment(PREF_KEYS[name], value)
            config.set(PREF_KEYS[name], value)
        config.save()
        if params.get("in_app_tips") is True:
            self.tips.restart()  # turning tips back on starts a fresh pass
        return {"prefs": self.prefs()}

    def tips_poll(self, client: Client, params: dict[str, Any]) -> dict[str, Any]:
        """The rotation's tip due now (``idle``: the person is idle), or none."""
        if not self.prefs()["in_app_tips"]:
            return {"tip": None}
        return {"tip": self.tips.due(idle=params.get("idle") is True)}

    def tips_restart(self, client: Client, params: dict[str, Any]) -> dict[str, Any]:
        self.tips.restart()
        return {"restarted": True}
