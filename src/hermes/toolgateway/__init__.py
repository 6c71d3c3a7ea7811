"""The self-hostable Tool Gateway server (requirement GW-1, GW-10, GW-14, GW-15; issue 7).

One ASGI process (Starlette, run by uvicorn) on one port serves:

* the **portal** — device-code login, token refresh with rotation, the account endpoint, an approval
  page (:mod:`.portal`);
* **relays** per vendor label, reachable by ``Host: {label}-gateway.<domain>`` or under
  ``/relay/{label}`` for pinned origins (:mod:`.app`, :mod:`.relays`);
* **metering and quotas** in the database (:mod:`.storage.metering`), a per-token rate limit
  (:mod:`.storage.ratelimit`), usage views (:mod:`.api`, :mod:`.dashboard`).

Layout of the package (each module documents its part)::

    app         create_app, host/prefix routing; the lifespan builds the relay table
    services    Gateway: the process's shared resources (it builds no relay)
    config      GatewayConfig from a TOML/YAML file and flags (configread: the file and its tables)
    errors      the JSON error shape; storage errors become 503/400 here
    api         health, readiness, usage;  openapi: the schema;  accesslog: JSON access lines
    server      uvicorn runner
    relays/     base (pipeline), vendor (retries, error mapping), one module per label, connectors
    portal/     accounts, oauth, auth, jwt, keys (users, tokens, device login); routes (endpoints)
    dashboard/  usage pages: routes, session, pages, chart
    browser/    the local Chromium pool behind a fenced CDP proxy
    sandbox/    the local sandbox engine of the modal relay
    storage/    SQLite | PostgreSQL, rate limiters, and the stores: metering, jobs, connector accounts,
                uploads (imports nothing of the layers above)

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
