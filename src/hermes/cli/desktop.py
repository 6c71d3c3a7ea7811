"""``hermes desktop``: the desktop app — the app server with its web front end, opened in a window.

The page is served by the app server itself (``/``, the package's ``surfaces/appserver/web``) and
speaks only its JSON-RPC API. It opens in a pywebview window when pywebview is installed, else in the
default browser; ``--no-open`` only serves (tests, a browser of your choice). Loopback on any free
port by default, so it never clashes with a running ``hermes serve``; Ctrl-C (or closing the window)
stops it. ``--ssh HOST`` starts the app server on HOST instead (through a forwarded local port, as
``hermes tui --ssh``) and ``--url`` uses a running one: the page is then the remote server's own. Docs:
docs/desktop.md.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path


def configure(parser: argparse.ArgumentParser) -> None:
    from hermes.surfaces.appserver.remote_cli import add_remote_options

    parser.add_argument("--port", type=int, default=0, help="port to serve on (default 0: any free port)")
    parser.add_argument("--no-open", action="store_true", help="serve only; open no window or browser")
    add_remote_options(parser, verb="open the desktop app of")


def page_address(rpc_url: str) -> str:
    """The page a remote app server serves beside its API: ``ws://H:P/rpc`` → ``http://H:P/``."""
    from urllib.parse import urlsplit

    from hermes.errors import UsageError
    from hermes.surfaces.appserver.server import RPC_PATH

    parts = urlsplit(rpc_url)
    if parts.path not in ("", "/", RPC_PATH):
        raise UsageError(f"the desktop page is served at the server's root: give its address as "
                         f"ws://HOST:PORT{RPC_PATH} (got the path {parts.path!r})")
    return f"{'https' if parts.scheme == 'wss' else 'http'}://{parts.netloc}/"


def require_protected(rpc_url: str) -> None:
    """A page loaded over plain ``ws://``/``http://`` from another machine can be changed on the way, and a
    script slipped into it reads the token from the page's address: only loopback (or an SSH tunnel, which
    is loopback here) may go without TLS."""
    import ipaddress
    from urllib.parse import urlsplit

    from hermes.errors import UsageError

    parts = urlsplit(rpc_url)
    host = (parts.hostname or "").lower()
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if parts.scheme in ("ws", "http") and not loopback:
        raise UsageError(f"{host or rpc_url} is not this machine and ws:// has no TLS: the page and its token "
                         "could be read or changed on the way; use wss://HOST:PORT/rpc behind TLS, or --ssh HOST")


def run(args: argparse.Namespace) -> int:
    import signal

    from hermes.cli.serve import _exit_cleanly

    signal.signal(signal.SIGTERM, _exit_cleanly)
    if getattr(args, "ssh", None) or getattr(args, "url", None):
        return _remote(args)
    from hermes.cli.serve import open_server
    from hermes.surfaces.appserver.auth import token_path

    server, gate, home, _token = open_server("127.0.0.1", args.port)
    url = f"http://127.0.0.1:{server.port}/"
    print(f"hermes desktop on {url}", flush=True)
    # the page presents the token from its address's fragment (never sent to a server, never on a command line)
    opened = f"{url}#token={gate.token}" if gate.token_required and gate.token else url
    if args.no_open:
        if opened != url:
            print(f"serving only (--no-open); open {url}#token=<the token in {token_path(home)}>; Ctrl-C stops",
                  flush=True)
        else:
            print("serving only (--no-open); Ctrl-C stops", flush=True)
        server.serve_forever()
        return 0

    def ready() -> bool:
        return bool(server.server.started)

    _show(home, opened, ready, server.serve_forever, start=server.start, stop=server.stop)
    return 0


def _remote(args: argparse.Namespace) -> int:
    """``--ssh`` / ``--url``: the remote server's page, held open until Ctrl-C, SIGTERM or the window closes."""
    import threading

    from hermes.config.atomic import atomic_write
    from hermes.config.settings import Settings
    from hermes.surfaces.appserver.remote_cli import REMOTE_TOKEN_FILE, open_backend

    if getattr(args, "url", None):
        require_protected(args.url)
    settings = Settings.load()
    backend = open_backend(settings, args)
    assert backend is not None
    stop = threading.Event()

    def hold() -> None:
        try:
            while not stop.wait(0.5):
                pass
        except KeyboardInterrupt:
            pass

    with backend:
        url = page_address(backend.url)
        print(f"hermes desktop on {url} (the app server on {backend.where})", flush=True)
        opened = f"{url}#token={backend.token}" if backend.token else url
        home = settings.paths.ensure()
        if args.no_open:
            if backend.token:
                path = home / REMOTE_TOKEN_FILE
                atomic_write(path, backend.token + "\n", mode=0o600)
                print(f"serving only (--no-open); open {url}#token=<the token in {path}>; Ctrl-C stops", flush=True)
            else:
                print("serving only (--no-open); Ctrl-C stops", flush=True)
            hold()
            return 0
        _show(home, opened, lambda: True, hold)
    return 0


def _show(home: Path, opened: str, ready: Callable[[], bool], hold: Callable[[], None], *,
          start: Callable[[], None] = lambda: None, stop: Callable[[], None] = lambda: None) -> None:
    """Open ``opened`` in a pywebview window (between ``start()`` and ``stop()``, until the window closes) or
    in the browser once ``ready()``, then ``hold()`` (on this thread: Ctrl-C ends it)."""
    import importlib.util

    if importlib.util.find_spec("webview") is not None:
        import webview

        start()
        try:
            webview.create_window("hermes", opened, width=1280, height=860)
            webview.start()  # returns when the window closes
        finally:
            stop()
        return
    import threading
    import time
    import webbrowser

    launcher = _launcher(home, opened)

    def open_when_serving() -> None:
        deadline = time.monotonic() + 30
        while not ready() and time.monotonic() < deadline:
            time.sleep(0.02)
        webbrowser.open(launcher.as_uri())
        time.sleep(30)  # the browser has read it by now
        launcher.unlink(missing_ok=True)

    print("pywebview is not installed: opening the page in your browser (Ctrl-C stops)", flush=True)
    threading.Thread(target=open_when_serving, daemon=True).start()
    hold()


def _launcher(home: Path, address: str) -> Path:
    """A 0600 page that sends the browser on to ``address``: the token travels in a file only this user can
    read, not on the browser's command line (which every local user can see)."""
    import json
    import secrets

    from hermes.config.atomic import atomic_write

    folder = home / "cache" / "desktop"
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = folder / f"open-{secrets.token_hex(8)}.html"
    atomic_write(path, f"<!doctype html><meta charset=utf-8><title>hermes</title>"
                       f"<script>location.replace({json.dumps(address)})</script>\n", mode=0o600)
    return path
