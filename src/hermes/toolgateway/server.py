"""Running the gateway with uvicorn (``hermes toolgateway serve``).

Graceful shutdown: on SIGINT or SIGTERM uvicorn stops accepting connections, lets in-flight requests
finish (at most ``grace`` seconds), then runs the app's lifespan shutdown, which closes the shared
HTTP client and the database. uvicorn re-raises the signal once it is done; :func:`serve` absorbs it,
so a stopped gateway exits 0 after saying so.
"""

from __future__ import annotations

import signal
import sys
import threading
from types import FrameType
from typing import IO

from hermes.toolgateway.config import GatewayConfig


def banner(config: GatewayConfig, relays: list[str]) -> str:
    """What ``serve`` prints on start: where the portal and each relay answer."""
    from hermes.toolgateway.storage.urls import mask_url

    base = config.base_url()
    port = f":{config.port}" if config.port not in (80, 443) else ""
    where = mask_url(config.database_url) if config.database_url else str(config.db_path)
    where += f", rate limits in {mask_url(config.redis_url)}" if config.redis_url else ""
    lines = [f"hermes Tool Gateway on {base}  (database {where})",
             f"  portal:  {base}/device   usage: {base}/api/usage   schema: {base}/openapi.json"]
    for label in relays:
        lines.append(f"  relay {label}: http://{label}-gateway.{config.domain}{port}  or  {base}/relay/{label}")
    return "\n".join(lines)


def serve(config: GatewayConfig, *, grace: int = 10, out: IO[str] | None = None) -> None:
    """Run until interrupted; returns after a graceful shutdown."""
    import uvicorn

    from hermes.toolgateway.app import create_app
    from hermes.toolgateway.relays import build_relays
    from hermes.toolgateway.services import Gateway

    gateway = Gateway(config)
    gateway.open()  # fail fast (bad database path or URL, unreadable secret, Redis down) before binding the port
    gateway.check_services()
    app = create_app(config, gateway=gateway)
    print(banner(config, sorted(build_relays(gateway))), file=out or sys.stderr, flush=True)
    server = uvicorn.Server(uvicorn.Config(
        app, host=config.host, port=config.port, log_level="warning", access_log=False, lifespan="on",
        timeout_graceful_shutdown=grace, server_header=False, proxy_headers=False,
    ))
    received: list[int] = []

    def note(sig: int, frame: FrameType | None) -> None:
        received.append(sig)

    main = threading.current_thread() is threading.main_thread()
    previous = {sig: signal.signal(sig, note) for sig in (signal.SIGINT, signal.SIGTERM)} if main else {}
    try:
        server.run()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if received:
        print(f"hermes Tool Gateway stopped ({signal.Signals(received[0]).name})", file=out or sys.stderr, flush=True)
