"""``hermes desktop``: the desktop app — the app server with its web front end, opened in a window.

The page is served by the app server itself (``/``, the package's ``surfaces/appserver/web``) and
speaks only its JSON-RPC API. It opens in a pywebview window when pywebview is installed, else in the
default browser; ``--no-open`` only serves (tests, a browser of your choice). Loopback on any free
port by default, so it never clashes with a running ``hermes serve``; Ctrl-C (or closing the window)
stops it. Docs: docs/desktop.md.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port", type=int, default=0, help="port to serve on (default 0: any free port)")
    parser.add_argument("--no-open", action="store_true", help="serve only; open no window or browser")


def run(args: argparse.Namespace) -> int:
    import importlib.util
    import signal

    from hermes.cli.serve import _exit_cleanly, open_server
    from hermes.surfaces.appserver.auth import token_path

    server, gate, home, _token = open_server("127.0.0.1", args.port)
    url = f"http://127.0.0.1:{server.port}/"
    print(f"hermes desktop on {url}", flush=True)
    # the page presents the token from its address's fragment (never sent to a server, never on a command line)
    opened = f"{url}#token={gate.token}" if gate.token_required and gate.token else url
    signal.signal(signal.SIGTERM, _exit_cleanly)
    if args.no_open:
        if opened != url:
            print(f"serving only (--no-open); open {url}#token=<the token in {token_path(home)}>; Ctrl-C stops",
                  flush=True)
        else:
            print("serving only (--no-open); Ctrl-C stops", flush=True)
        server.serve_forever()
        return 0
    if importlib.util.find_spec("webview") is not None:
        import webview

        server.start()
        try:
            webview.create_window("hermes", opened, width=1280, height=860)
            webview.start()  # returns when the window closes
        finally:
            server.stop()
        return 0
    import threading
    import time
    import webbrowser

    launcher = _launcher(home, opened)

    def open_when_serving() -> None:
        deadline = time.monotonic() + 30
        while not server.server.started and time.monotonic() < deadline:
            time.sleep(0.02)
        webbrowser.open(launcher.as_uri())
        time.sleep(30)  # the browser has read it by now
        launcher.unlink(missing_ok=True)

    print("pywebview is not installed: opening the page in your browser (Ctrl-C stops)", flush=True)
    threading.Thread(target=open_when_serving, daemon=True).start()
    server.serve_forever()
    return 0


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
