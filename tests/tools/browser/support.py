"""Calling the browser tools the way the agent does: through a ToolSession of the browser toolset."""

from __future__ import annotations

import itertools
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from hermes.config.paths import HermesPaths
from hermes.config.settings import Settings
from hermes.tools.session import SessionContext, ToolSession
from hermes.tools.toolsets import BROWSER_CDP, BROWSER_CORE
from tools.browser.pages import PageServer

CHROMIUM = "/usr/bin/chromium"
_TASKS = itertools.count(1)


def need_browser() -> None:
    """Skip without Chromium or Playwright on a developer machine; fail under CI (which installs both)."""
    import importlib.util
    import shutil

    missing = [what for what, ok in (("chromium", shutil.which("chromium") is not None),
                                     ("playwright", importlib.util.find_spec("playwright") is not None)) if not ok]
    if missing:
        reason = f"the browser tests need {' and '.join(missing)}"
        if os.environ.get("CI"):
            pytest.fail(f"{reason} (CI is set: the CI script installs them)")
        pytest.skip(reason)


class BrowserHarness:
    """A HERMES_HOME, the page server, and sessions of the browser tools."""

    def __init__(self, home: Path, pages: PageServer) -> None:
        self.home = home
        self.pages = pages
        import hermes.tools.browser.cdp
        import hermes.tools.browser.script
        import hermes.tools.browser.tool  # noqa: F401 - registers the core tools
        from hermes.tools.registry import registry

        self.registry = registry

    def configure(self, yaml_text: str) -> None:
        (self.home / "config.yaml").write_text(yaml_text, encoding="utf-8")
        self.registry.invalidate_checks()

    def settings(self) -> Settings:
        return Settings.load(HermesPaths(self.home))

    def session(self, task_id: str | None = None) -> ToolSession:
        task = task_id or f"task-{next(_TASKS)}"
        context = SessionContext.from_settings(self.settings(), task_id=task)
        return ToolSession(self.registry, (*BROWSER_CORE, *BROWSER_CDP, "browser_exec"), context)

    def shutdown(self) -> None:
        from hermes.tools.asyncbridge import run_sync
        from hermes.tools.browser.backend import hub

        run_sync(hub().shutdown(), timeout=60)


def call(session: ToolSession, name: str, **args: Any) -> dict[str, Any]:
    """The tool's JSON result as a dict."""
    result = session.dispatch(name, args)
    value = json.loads(result.text)
    assert isinstance(value, dict), result.text
    return value


def refs_of(text: str) -> list[str]:
    """The refs shown in a snapshot, in order."""
    return re.findall(r"\[(@e\d+)\]", text)


def ref_named(text: str, role: str, name: str) -> str:
    """The ref of the line ``- role "name"`` in a snapshot."""
    match = re.search(rf'- {role} "{re.escape(name)}"[^\n]*?\[(@e\d+)\]', text)
    assert match is not None, f"no {role} {name!r} in:\n{text[:3000]}"
    return match.group(1)


def close(session: ToolSession) -> None:
    """End the session the way the agent does (its session-end callbacks)."""
    from hermes.tools.context import SESSION_END_KEY

    for callback in session.state.pop(SESSION_END_KEY, {}).values():
        callback()
