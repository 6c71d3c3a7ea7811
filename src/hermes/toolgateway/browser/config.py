"""The ``[relays.browser-use]`` table: which backend serves cloud browsers, and the local pool's limits.

::

    [relays.browser-use]
    backend = "local"                 # vendor | local | off (default: vendor when url or a key is set, else off)
    url = "https://api.browser-use.com/api/v3"   # vendor: the Browser Use API
    api_key_env = "BROWSER_USE_API_KEY"          # or api_key = "…"
    chromium = "/usr/bin/chromium"    # local: the browser program
    max_sessions = 4                  # local: Chromium processes at once (503 beyond)
    max_sessions_per_user = 2         # local: per user (429 beyond)
    idle_timeout = 300                # local: seconds without a CDP command before a session is ended
    max_lifetime = 3600               # seconds a session may live (caps the client's `timeout` minutes)
    start_timeout = 20                # local: seconds Chromium may take to start
    allow_loopback = false            # local: browsers may open 127.0.0.0/8, ::1 (tests; never the fence's port)
    allow_private = false             # local: browsers may open RFC 1918 / ULA / CGNAT addresses (intranets)
    work_dir = ""                     # local: where per-session profiles go (default: the system temp dir)
    run_as = "hermes-browser"         # local: the Unix user Chromium runs as (required when the gateway is root)
    chromium_sandbox = true           # local: Chromium's own sandbox (false: --no-sandbox; needs user namespaces)

Kept free of the rest of the gateway so :mod:`hermes.toolgateway.config` can import it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hermes.errors import ConfigError
from hermes.toolgateway.configread import TableReader

BROWSER_BACKENDS = ("vendor", "local", "off")
DEFAULT_URL = "https://api.browser-use.com/api/v3"
DEFAULT_KEY_ENV = "BROWSER_USE_API_KEY"
DEFAULT_CHROMIUM = "/usr/bin/chromium"
_PREFIX = "relays.browser-use."


@dataclass(frozen=True)
class BrowserUseConfig:
    """Backend of the ``browser-use`` relay and the limits of the local Chromium pool."""

    backend: str = "off"
    url: str = DEFAULT_URL
    api_key: str | None = field(default=None, repr=False)
    chromium: str = DEFAULT_CHROMIUM
    max_sessions: int = 4
    max_sessions_per_user: int = 2
    idle_timeout: float = 300.0
    max_lifetime: float = 3600.0
    start_timeout: float = 20.0
    allow_loopback: bool = False
    allow_private: bool = False
    work_dir: Path | None = None
    run_as: str | None = None  # checked against the gateway's own user by browserpool.browser_identity
    chromium_sandbox: bool = True


def browser_use_config(table: Mapping[str, Any], env: Mapping[str, str]) -> BrowserUseConfig:
    """Read the ``[relays.browser-use]`` table (a :class:`ConfigError` names a wrong key)."""
    read = TableReader(table, _PREFIX)
    key_env = read.text("api_key_env") or DEFAULT_KEY_ENV
    api_key = read.text("api_key") or env.get(key_env) or None
    url = (read.text("url") or DEFAULT_URL).rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"gateway config: {_PREFIX}url must be an http(s) URL")
    default_backend = "vendor" if "url" in table or api_key is not None else "off"
    backend = read.text("backend") or default_backend
    if backend not in BROWSER_BACKENDS:
        raise ConfigError(f"gateway config: {_PREFIX}backend must be one of {', '.join(BROWSER_BACKENDS)}, "
                          f"not {backend!r}")
    work_dir = read.text("work_dir") or None
    max_sessions = read.integer("max_sessions", 4, minimum=1)
    return BrowserUseConfig(
        backend=backend,
        url=url,
        api_key=api_key,
        chromium=read.text("chromium") or DEFAULT_CHROMIUM,
        max_sessions=max_sessions,
        max_sessions_per_user=read.integer("max_sessions_per_user", min(2, max_sessions), minimum=1),
        idle_timeout=read.number("idle_timeout", 300.0, minimum=0.5),
        max_lifetime=read.number("max_lifetime", 3600.0, minimum=1.0),
        start_timeout=read.number("start_timeout", 20.0, minimum=1.0),
        allow_loopback=read.flag("allow_loopback", False),
        allow_private=read.flag("allow_private", False),
        work_dir=Path(work_dir).expanduser() if work_dir else None,
        run_as=read.word("run_as"),
        chromium_sandbox=read.flag("chromium_sandbox", True),
    )


__all__ = ["BROWSER_BACKENDS", "BrowserUseConfig", "browser_use_config"]
