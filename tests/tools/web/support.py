"""Helpers shared by the web tool tests (no tests here): environment set-up and calling the tools.

Each test writes ``config.yaml`` (JSON is YAML) into a fresh HERMES_HOME and sets the variables it
needs; every web-related variable of the real environment is removed first, so a developer's own keys
never change a route under test.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import hermes.tools.web.extract
import hermes.tools.web.search  # noqa: F401  (registers the tools)
from hermes.tools.registry import registry

WEB_ENV = (
    "FIRECRAWL_API_KEY", "FIRECRAWL_API_URL", "TAVILY_API_KEY", "EXA_API_KEY", "BRAVE_API_KEY", "SEARXNG_URL",
    "TOOL_GATEWAY_USER_TOKEN", "FIRECRAWL_GATEWAY_URL", "TOOL_GATEWAY_DOMAIN", "TOOL_GATEWAY_SCHEME",
    "TOOL_GATEWAY_URL", "HERMES_PORTAL_BASE_URL", "NOUS_PORTAL_BASE_URL", "HTTP_PROXY", "HTTPS_PROXY",
    "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy", "DDGS_PROXY",
)


def configure(home: Path, monkeypatch: pytest.MonkeyPatch, config: dict[str, Any] | None = None,
              env: dict[str, str] | None = None) -> None:
    """Write ``config`` as HERMES_HOME/config.yaml and set exactly the web variables in ``env``."""
    for name in WEB_ENV:
        monkeypatch.delenv(name, raising=False)
    for name, value in (env or {}).items():
        monkeypatch.setenv(name, value)
    (home / "config.yaml").write_text(json.dumps(config or {}), encoding="utf-8")


def call(tool: str, args: Any) -> dict[str, Any]:
    """Dispatch one tool call and parse its JSON answer."""
    result = json.loads(registry.dispatch(tool, args))
    assert isinstance(result, dict)
    return result


def error_of(tool: str, args: Any) -> str:
    """The ``error`` of a call that must fail."""
    result = call(tool, args)
    assert "error" in result, result
    return str(result["error"])
