"""Integrated terminals of the desktop app: a shell on a pseudo-terminal per tab, streamed to its page.

``terminal.open`` starts the person's shell (``$SHELL``, else ``/bin/bash``) on a new pseudo-terminal in
``cwd`` (default: the server's working directory) and answers its id; what the shell writes reaches the
client that opened it as ``terminal.screen`` notifications (``terminal``, ``lines``, ``cursor``,
``scrolled``: what the screen emulated on the server, :mod:`.term_screen`, shows), at most one per
:data:`FRAME_S` while output keeps coming — or, without the emulator, as ``terminal.output``
notifications (``terminal``, ``data``: the raw text); its end as ``terminal.exited`` (``terminal``, ``code``).
``terminal.input`` types into it (keys as the bytes a terminal sends), ``terminal.resize`` sets its size,
``terminal.close`` ends it. The page keeps the rendered screen: ``read_terminal`` reads it there. Every
shell ends when the server stops.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import select
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hermes.surfaces.appserver.term_screen import EMULATED_TERM, TerminalScreen, new_screen

if TYPE_CHECKING:
    from hermes.surfaces.appserver.rpc import AppApi, Client

MAX_TERMINALS = 16
FRAME_S = 0.03  # screen updates are sent at most this often while output keeps coming


class _Terminal:
    def __init__(self, terminal_id: str, proc: subprocess.Popen[bytes], master: int, client: Client,
                 screen: TerminalScreen | None) -> None:
        self.id, self.proc, self.master, self.client, self.screen = terminal_id, proc, master, client, screen
        self.lock = threading.Lock()  # the screen: fed by the pump, resized by terminal.resize

    def pump(self, forget: Callable[[str], None]) -> None:
        """Forward the shell's output until it ends (on its own thread); screen updates are coalesced: one
        when output pauses, and at most one per FRAME_S while it keeps coming."""
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        pending, sent_at = False, 0.0
        while True:
            if pending and not select.select([self.master], [], [], FRAME_S)[0]:
                pending, sent_at = False, self._send_screen()
                continue
            try:
                chunk = os.read(self.master, 65536)
            except OSError:
                break
            if not chunk:
                break
            if self.screen is None:  # plain lines: the page keeps them from the raw text
                with contextlib.suppress(Exception):
                    self.client.notify("terminal.output", {"terminal": self.id, "data": decoder.decode(chunk)})
            else:
                with self.lock:
                    self.screen.feed(chunk)
                pending = True
                if time.monotonic() - sent_at >= FRAME_S:
                    pending, sent_at = False, self._send_screen()
        if pending:
            self._send_screen()
        code = self.proc.wait()
        with contextlib.suppress(OSError):
            os.close(self.master)
        forget(self.id)
        with contextlib.suppress(Exception):
            self.client.notify("terminal.exited", {"terminal": self.id, "code": code})

    def _send_screen(self) -> float:
        assert self.screen is not None
        with self.lock:
            update = self.screen.update()
        with contextlib.suppress(Exception):
            self.client.notify("terminal.screen", update.as_params(self.id))
        return time.monotonic()

    def resize(self, rows: int, cols: int) -> None:
        _set_size(self.master, rows, cols)
        if self.screen is not None:
            with self.lock:
                self.screen.resize(rows, cols)


class Terminals:
    """The open terminals of one app server and their methods."""

    def __init__(self, api: AppApi) -> None:
        self.api = api
        self._open: dict[str, _Terminal] = {}
        self._lock = threading.Lock()

    def methods(self) -> dict[str, Callable[[Client, dict[str, Any]], Any]]:
        return {"terminal.open": self.open, "terminal.input": self.input, "terminal.resize": self.resize,
                "terminal.close": self.close_one, "terminal.list": self.list}

    def open(self, client: Client, params: dict[str, Any]) -> dict[str, Any]:
        import pty

        from hermes.surfaces.appserver.rpc import APP_ERROR, INVALID_PARAMS, RpcError

        cwd = params.get("cwd") or os.getcwd()
        if not isinstance(cwd, str) or not os.path.isdir(os.path.expanduser(cwd)):
            raise RpcError(INVALID_PARAMS, f"'cwd' must be an existing folder, not {cwd!r}")
        with self._lock:
            if len(self._open) >= MAX_TERMINALS:
                raise RpcError(APP_ERROR, f"{MAX_TERMINALS} terminals are open already; close one first")
        rows, cols = _size(params.get("rows"), params.get("cols"))
        master, slave = pty.openpty()
        _set_size(master, rows, cols)
        screen = new_screen(rows, cols)
        shell = os.environ.get("SHELL") or "/bin/bash"
        env = {**os.environ, "TERM": EMULATED_TERM if screen is not None else "dumb", "PS1": "$ ",
               "HERMES_DESKTOP_TERMINAL": "1"}
        try:
            proc = subprocess.Popen([shell, "-i"] if shell.endswith("sh") else [shell], stdin=slave, stdout=slave,
                                    stderr=slave, cwd=os.path.expanduser(cwd), env=env, start_new_session=True)
        except OSError as exc:
            os.close(master)
            raise RpcError(APP_ERROR, f"cannot start {shell}: {exc}") from None
        finally:
            os.close(slave)
        terminal = _Terminal(f"term-{uuid.uuid4().hex[:8]}", proc, master, client, screen)
        with self._lock:
            self._open[terminal.id] = terminal
        threading.Thread(target=terminal.pump, args=(self._forget,), name=f"hermes-{terminal.id}",
                         daemon=True).start()
        return {"terminal": terminal.id, "cwd": os.path.expanduser(cwd), "shell": shell,
                "screen": "emulated" if screen is not None else "lines"}

    def input(self, client: Client, params: dict[str, Any]) -> dict[str, Any]:
        from hermes.surfaces.appserver.rpc import INVALID_PARAMS, RpcError

        terminal = self._get(params)
        data = params.get("data")
        if not isinstance(data, str):
            raise RpcError(INVALID_PARAMS, "'data' must be text")
        os.write(terminal.master, data.encode("utf-8"))
        return {"written": len(data)}

    def resize(self, client: Client, params: dict[str, Any]) -> dict[str, Any]:
        terminal = self._get(params)
        terminal.resize(*_size(params.get("rows"), params.get("cols")))
        return {"resized": True}

    def close_one(self, client: Client, params: dict[str, Any]) -> dict[str, Any]:
        terminal = self._get(params)
        _end(terminal.proc)
        return {"closed": terminal.id}

    def list(self, client: Client, params: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            return {"terminals": [{"terminal": t.id, "pid": t.proc.pid} for t in self._open.values()]}

    def close(self) -> None:
        with self._lock:
            terminals = list(self._open.values())
        for terminal in terminals:
            _end(terminal.proc)

    def _get(self, params: dict[str, Any]) -> _Terminal:
        from hermes.surfaces.appserver.rpc import INVALID_PARAMS, RpcError

        with self._lock:
            terminal = self._open.get(str(params.get("terminal")))
        if terminal is None:
            raise RpcError(INVALID_PARAMS, f"no open terminal {params.get('terminal')!r}")
        return terminal

    def _forget(self, terminal_id: str) -> None:
        with self._lock:
            self._open.pop(terminal_id, None)


def _size(rows: Any, cols: Any) -> tuple[int, int]:
    """Rows and columns asked for, each in its range (else the default 24 × 100)."""
    ok_rows = isinstance(rows, int) and not isinstance(rows, bool) and 2 <= rows <= 500
    ok_cols = isinstance(cols, int) and not isinstance(cols, bool) and 10 <= cols <= 1000
    return (rows if ok_rows else 24), (cols if ok_cols else 100)


def _set_size(fd: int, rows: int, cols: int) -> None:
    import fcntl
    import struct
    import termios

    with contextlib.suppress(OSError):
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def _end(proc: subprocess.Popen[bytes]) -> None:
    """Hang up the shell's process group (as closing a terminal window does), then kill what is left."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGHUP)
    try:
        proc.wait(2)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
