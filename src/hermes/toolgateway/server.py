"""Running the gateway with uvicorn (``hermes toolgateway serve``).

Graceful shutdown: on SIGINT or SIGTERM uvicorn stops accepting connections, lets in-flight requests
finish (at most ``grace`` seconds), then runs the app's lifespan shutdown, which closes the shared
HTTP client and the database. uvicorn re-raises the signal once it is done; :func:`serve` absorbs it,
so a stopped gateway exits 0 after saying so.

The port is bound *before* the banner (:func:`bind`): a port already in use is one
:class:`~hermes.errors.ConfigError` line naming the address and what to do, not a uvicorn traceback; the
bound socket is handed to uvicorn, so nothing can take the port in between. While the server runs,
``HERMES_HOME/toolgateway/serving.json`` records the address people reach it at
(:mod:`hermes.toolgateway.running`), for ``users login-link`` to print.
"""

from __future__ import annotations

import errno
import signal
import socket
import sys
import threading
from types import FrameType
from typing import IO

from hermes.errors import ConfigError
from hermes.toolgateway.config import GatewayConfig


def banner(config: GatewayConfig) -> str:
    """What ``serve`` prints on start: where the portal, the dashboards and each relay answer, and which
    relays are off and what would turn them on."""
    from hermes.toolgateway.offer import relay_states
    from hermes.toolgateway.storage.urls import mask_url

    base = config.base_url()
    port = f":{config.port}" if config.port not in (80, 443) else ""
    where = mask_url(config.database_url) if config.database_url else str(config.db_path)
    where += f", rate limits in {mask_url(config.redis_url)}" if config.redis_url else ""
    lines = [f"hermes Tool Gateway on {base}  (database {where})",
             f"  portal:    {base}/device   usage: {base}/api/usage   schema: {base}/openapi.json",
             f"  dashboard: {base}/dashboard (users)   {base}/admin/dashboard (admin)"]
    states = relay_states(config)
    for state in (s for s in states if s.on):
        lines.append(f"  relay {state.label}: http://{state.label}-gateway.{config.domain}{port}  or  "
                     f"{base}/relay/{state.label}  — {state.detail}")
    for state in (s for s in states if not s.on):
        lines.append(f"  relay {state.label}: {state.detail}")
    return "\n".join(lines)


def bind(config: GatewayConfig) -> socket.socket:
    """A listening socket on ``config.host:config.port``; ConfigError (one line) when it cannot be had."""
    family = socket.AF_INET6 if ":" in config.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((config.host, config.port))
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        where = f"{config.host}:{config.port}"
        if exc.errno == errno.EADDRINUSE:
            raise ConfigError(f"port {config.port} is already in use on {config.host} (another gateway or "
                              f"program listens there); stop it, or start this one with --port N "
                              f"(or port = N in the gateway config)") from None
        if exc.errno == errno.EACCES:
            raise ConfigError(f"not allowed to listen on {where} (ports below 1024 need privileges); "
                              "choose another with --port N") from None
        raise ConfigError(f"cannot listen on {where}: {exc.strerror or exc}; check --host and --port") from None
    sock.set_inheritable(True)
    return sock


def serve(config: GatewayConfig, *, grace: int = 10, out: IO[str] | None = None) -> None:
    """Run until interrupted; returns after a graceful shutdown."""
    import uvicorn

    from hermes.toolgateway.app import create_app
    from hermes.toolgateway.running import Serving
    from hermes.toolgateway.services import Gateway

    gateway = Gateway(config)
    gateway.open()  # fail fast (bad database path or URL, unreadable secret, Redis down) before binding the port
    gateway.check_services()
    try:
        listening = bind(config)
    except ConfigError:
        gateway.close_db()
        raise
    app = create_app(config, gateway=gateway)
    print(banner(config), file=out or sys.stderr, flush=True)
    server = uvicorn.Server(uvicorn.Config(
        app, host=config.host, port=config.port, log_level="warning", access_log=False, lifespan="on",
        timeout_graceful_shutdown=grace, server_header=False, proxy_headers=False,
    ))
    received: list[int] = []

    def note(sig: int, frame: FrameType | None) -> None:
        received.append(sig)

    main = threading.current_thread() is threading.main_thread()
    previous = {sig: signal.signal(sig, note) for sig in (signal.SIGINT, signal.SIGTERM)} if main else {}
    record = Serving(config)
    try:
        record.write()
        server.run(sockets=[listening])
    finally:
        record.remove()
        listening.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if received:
        print(f"hermes Tool Gateway stopped ({signal.Signals(received[0]).name})", file=out or sys.stderr, flush=True)
