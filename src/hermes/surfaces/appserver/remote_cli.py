"""The ``--ssh HOST`` / ``--url URL`` options of the app server's clients (``hermes desktop``, ``hermes tui``,
``hermes serve``): one hook to add them to a command and one call to open what they name.

Only argparse is imported at module level (command modules import this while building ``hermes --help``).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hermes.config.settings import Settings
    from hermes.surfaces.appserver.remote import Backend

REMOTE_TOKEN_FILE = "remote_token"


def add_remote_options(parser: argparse.ArgumentParser, *, verb: str = "use", by_url: bool = True) -> None:
    """``--ssh HOST``, ``--ssh-option``, ``--remote-command`` and (``by_url``) ``--url URL``, ``--token-file``."""
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--ssh", metavar="HOST", help=f"{verb} the app server on HOST: started there over SSH "
                                                      "(hermes serve), reached through a forwarded local port")
    if by_url:
        where.add_argument("--url", metavar="URL", help=f"{verb} a running app server (ws://HOST:PORT/rpc)")
        parser.add_argument("--token-file", help="with --url: a file holding the server's bearer token "
                                                 "(else HERMES_SERVE_TOKEN; never given on the command line)")
    parser.add_argument("--ssh-option", action="append", default=None, metavar="OPT",
                        help="with --ssh: one more argument for ssh (repeatable, e.g. --ssh-option=-p2222); "
                             "serve.ssh_options in config.yaml lists more")
    parser.add_argument("--remote-command", help="with --ssh: how to run hermes there (default: "
                                                 "serve.remote_command, else 'hermes')")


def read_token(path: str | None) -> str | None:
    """The bearer token from ``path`` or ``HERMES_SERVE_TOKEN`` (None: none given)."""
    import os
    from pathlib import Path

    from hermes.errors import UsageError

    if path:
        try:
            return Path(path).expanduser().read_text(encoding="utf-8").strip() or None
        except OSError as exc:
            raise UsageError(f"cannot read the token file {path}: {exc}") from None
    return os.environ.get("HERMES_SERVE_TOKEN") or None


def open_backend(settings: Settings, args: argparse.Namespace) -> Backend | None:
    """The remote backend ``args`` name (``--ssh`` or ``--url``), open; None when they name none."""
    from hermes.surfaces.appserver.remote import by_url, over_ssh

    if getattr(args, "url", None):
        return by_url(args.url, read_token(getattr(args, "token_file", None)))
    if not getattr(args, "ssh", None):
        return None
    configured = settings.get("serve.ssh_options") or []
    options = [str(o) for o in configured] + list(getattr(args, "ssh_option", None) or [])
    command = getattr(args, "remote_command", None) or str(settings.get("serve.remote_command") or "hermes")
    return over_ssh(args.ssh, ssh_options=options, remote_command=command)


def hold_remote(settings: Settings, args: argparse.Namespace) -> int:
    """``hermes serve --ssh HOST``: open the tunnel, say where it is, keep it until Ctrl-C or SIGTERM.

    The token goes to ``HERMES_HOME/remote_token`` (0600) for local clients
    (``hermes tui --url URL --token-file PATH``); its value is never printed.
    """
    import signal
    import threading

    from hermes.config.atomic import atomic_write

    backend = open_backend(settings, args)
    assert backend is not None
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        path = settings.paths.ensure() / REMOTE_TOKEN_FILE
        if backend.token:
            atomic_write(path, backend.token + "\n", mode=0o600)
        print(f"the app server on {backend.where} is at {backend.url}", flush=True)
        if backend.token:
            print(f"clients must send the bearer token stored in {path} (Ctrl-C closes the tunnel)", flush=True)
        try:
            while not stop.wait(0.5):
                pass
        except KeyboardInterrupt:
            pass
    finally:
        backend.close()
    return 0
