"""A gateway under test: the real app served by uvicorn on 127.0.0.1, plus a side door to its database.

``GatewayHarness(home, **config)`` builds a :class:`GatewayConfig` (no file; keys as in the config
file, ``firecrawl={...}`` for ``[relays.firecrawl]``), serves :func:`create_app` on an ephemeral port
and opens a second connection to the same SQLite file — as ``hermes toolgateway users …`` would — to
add users and issue tokens.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx

from fakes.vendors.server import ServerThread
from hermes.toolgateway.app import create_app
from hermes.toolgateway.config import GatewayConfig, load_config
from hermes.toolgateway.portal.accounts import User
from hermes.toolgateway.services import Gateway


def gateway_config(home: Path, *, firecrawl: dict[str, Any] | None = None, env: dict[str, str] | None = None,
                   **top: Any) -> GatewayConfig:
    overrides: dict[str, Any] = {"access_log": "off", **top}
    for key, value in (firecrawl or {}).items():
        overrides[f"firecrawl.{key}"] = value
    return load_config(None, overrides=overrides, env=env or {}, home=home)


class GatewayHarness:
    def __init__(self, home: Path, *, clock: Callable[[], float] | None = None, port: int = 0, **config: Any) -> None:
        self.config = gateway_config(home, **config)
        self.side = Gateway(self.config).open()
        served = Gateway(self.config, clock=clock) if clock is not None else None  # an injected clock
        self.app = create_app(self.config, gateway=served)
        self.server = ServerThread(self.app, lifespan="on", port=port)

    # -- lifecycle -----------------------------------------------------------------------------------
    def start(self) -> GatewayHarness:
        self.server.start()
        return self

    def stop(self) -> None:
        self.server.stop()
        self.side.close_db()

    def __enter__(self) -> GatewayHarness:
        return self.start()

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.stop()

    # -- addresses -----------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        return self.server.url

    def relay_url(self, label: str) -> str:
        """The pinned-origin form: ``http://127.0.0.1:PORT/relay/LABEL``."""
        return f"{self.server.url}/relay/{label}"

    def relay_host(self, label: str) -> str:
        """The Host header of the host-routed form: ``LABEL-gateway.localhost:PORT``."""
        return f"{label}-gateway.{self.config.domain}:{self.server.port}"

    # -- accounts ------------------------------------------------------------------------------------
    def user(self, name: str, plan: str = "paid", plan_expires: float | None = None) -> User:
        return self.side.accounts.add_user(name, plan, plan_expires=plan_expires)

    def token(self, name: str, *, ttl: float = 3600, scope: str = "inference:invoke tool:invoke") -> str:
        user = self.side.accounts.get_user(name)
        return self.side.accounts.issue_access_token(user, ttl=ttl, scope=scope).token

    def usage_rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        """``sql`` on the side connection, after the served process wrote out its journalled usage rows:
        the admin usage view writes them out before it reads, as every usage view does."""
        resp = httpx.get(self.url + "/api/admin/usage", headers={"authorization": f"Bearer {self.side.admin_token}"},
                         timeout=30)
        assert resp.status_code == 200, resp.text
        return list(self.side.conn.execute(sql, params).fetchall())

    def client(self, **kwargs: Any) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=30, **kwargs)
