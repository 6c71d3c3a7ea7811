"""The self-hostable Tool Gateway server (SPEC GW-1, GW-10, GW-14, GW-15; issue 7).

One ASGI process (Starlette, run by uvicorn) on one port serves:

* the **portal** — device-code login, token refresh with rotation, the account endpoint, an approval
  page (:mod:`.portal`, :mod:`.oauth`);
* **relays** per vendor label, reachable by ``Host: {label}-gateway.<domain>`` or under
  ``/relay/{label}`` for pinned origins (:mod:`.app`, :mod:`.relays`);
* **metering and quotas** in SQLite (:mod:`.metering`), a per-token rate limit (:mod:`.ratelimit`),
  usage views (:mod:`.api`).

Layout of the package (each module documents its part)::

    config      GatewayConfig from a TOML/YAML file and flags
    keys        signing secret and admin token files (0600, created once)
    jwt         HS256 sign/verify
    db          gateway.db: connection and ordered migrations
    accounts    users, plans, access tokens, claims, revocation
    oauth       device codes, refresh rotation with reuse detection, login links
    auth        token → Principal; entitlement checks
    metering    atomic quota reservation, usage log, summaries
    ratelimit   token buckets keyed on the verified credential
    services    Gateway: the process's resources
    app         create_app, host/prefix routing
    portal, api HTTP endpoints;  openapi: the schema;  accesslog: JSON access lines
    relays/     base (pipeline), vendor (retries, error mapping), firecrawl
    safefetch   SSRF-safe page fetching;  html2md: HTML → Markdown
    server      uvicorn runner

The package shares ``hermes.config`` (and later ``hermes.vendors``) with the client, nothing of the
agent. Heavy imports (starlette, httpx, uvicorn) load only when the server or its CLI runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hermes.toolgateway.app import create_app
    from hermes.toolgateway.config import GatewayConfig, load_config

__all__ = ["GatewayConfig", "create_app", "load_config"]


def __getattr__(name: str) -> Any:
    if name == "create_app":
        from hermes.toolgateway.app import create_app

        return create_app
    if name in ("GatewayConfig", "load_config"):
        from hermes.toolgateway import config

        return getattr(config, name)
    raise AttributeError(name)
