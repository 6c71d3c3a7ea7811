"""The display a session drives: a private Xvfb hermes starts (with a window manager, a D-Bus session
bus and the accessibility bus), or the person's own ``DISPLAY``.

hermes's own display is locked with a fresh MIT-MAGIC-COOKIE in a 0600 file, so no other program on
the machine can connect to it and read the screen; the programs hermes starts on it
(``computer_use.startup``) get the cookie through ``XAUTHORITY``. Every process started here runs in
its own process group and is ended with it when the session ends.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from hermes.errors import ToolError
from hermes.tools.computer_use.config import ComputerUseConfig, find_window_manager
from hermes.tools.computer_use.screen import Camera, Scale
from hermes.tools.computer_use.xinput import Input

AT_SPI_LAUNCHERS = ("/usr/libexec/at-spi-bus-launcher", "/usr/lib/at-spi2-core/at-spi-bus-launcher",
                    "/usr/lib/at-spi2/at-spi-bus-launcher")
_ENV_LOCK = threading.Lock()
#: displays hermes started and has not stopped yet (stopped at exit, should a session not end cleanly)
_LIVE: set[Desktop] = set()
_FAMILY_LOCAL = 256


def _field(data: bytes) -> bytes:
    return len(data).to_bytes(2, "big") + data


def write_xauthority(path: Path, cookie: bytes) -> None:
    """One MIT-MAGIC-COOKIE-1 entry for this host, any display number (libXau's file format)."""
    entry = (_FAMILY_LOCAL.to_bytes(2, "big") + _field(socket.gethostname().encode()) + _field(b"")
             + _field(b"MIT-MAGIC-COOKIE-1") + _field(cookie))
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(entry)


@contextlib.contextmanager
def _xauthority(path: str | None) -> Iterator[None]:
    """``XAUTHORITY`` set while a client library connects (python-xlib and libxcb read only the
    environment)."""
    if path is None:
        yield
        return
    with _ENV_LOCK:
        before = os.environ.get("XAUTHORITY")
        os.environ["XAUTHORITY"] = path
        try:
            yield
        finally:
            if before is None:
                os.environ.pop("XAUTHORITY", None)
            else:
                os.environ["XAUTHORITY"] = before


def open_x(name: str, xauthority: str | None) -> Any:
    """A python-xlib connection to display ``name``; a ToolError saying why it cannot be opened."""
    from Xlib import display, error

    try:
        with _xauthority(xauthority):
            return display.Display(name)
    except (error.DisplayError, error.ConnectionClosedError, OSError) as exc:
        raise ToolError(f"cannot open the X display {name}: {exc}") from None


class Desktop:
    """One display, its input and capture, and the processes hermes started for it."""

    def __init__(self, cfg: ComputerUseConfig, name: str, *, own: bool, env: dict[str, str],
                 xauthority: str | None = None, folder: Path | None = None) -> None:
        self.cfg = cfg
        self.name = name
        self.own = own
        #: the environment programs started on this display get
        self.env = env
        self.xauthority = xauthority
        self.folder = folder
        self.processes: list[subprocess.Popen[bytes]] = []
        self.killed: str | None = None
        self.x: Any = None
        self.camera = Camera(name)
        self.lock = threading.Lock()
        self.input: Input | None = None
        self.scale: Scale | None = None
        self.hotkey: Any = None
        #: the running call's interrupt check (the turn's cancel flag), set per call
        self.cancelled: Callable[[], bool] | None = None

    # -- starting -----------------------------------------------------------------------------------
    @classmethod
    def open_own(cls, cfg: ComputerUseConfig) -> Desktop:
        name = os.environ.get("DISPLAY", "")
        if not name:
            raise ToolError("computer_use.display is 'own' but DISPLAY is not set")
        desktop = cls(cfg, name, own=True, env=dict(os.environ))
        desktop._connect()
        return desktop

    @classmethod
    def start_xvfb(cls, cfg: ComputerUseConfig) -> Desktop:
        program = shutil.which(cfg.xvfb)
        if program is None:
            raise ToolError(f"{cfg.xvfb} not found on PATH (install the Debian package 'xvfb')")
        folder = Path(tempfile.mkdtemp(prefix="hermes-desktop-"))
        xauthority = folder / "Xauthority"
        write_xauthority(xauthority, os.urandom(16))
        read_end, write_end = os.pipe()
        width, height = cfg.screen_size
        log = open(folder / "xvfb.log", "wb")  # noqa: SIM115 - the child keeps it
        try:
            server = subprocess.Popen(
                [program, "-displayfd", str(write_end), "-screen", "0", f"{width}x{height}x24", "-nolisten", "tcp",
                 "-auth", str(xauthority), "-nocursor"],
                pass_fds=(write_end,), stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
        finally:
            os.close(write_end)
            log.close()
        try:
            number = _read_display_number(read_end, server)
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        finally:
            os.close(read_end)
        env = {k: v for k, v in os.environ.items() if k not in ("WAYLAND_DISPLAY", "DBUS_SESSION_BUS_ADDRESS")}
        env.update(DISPLAY=f":{number}", XAUTHORITY=str(xauthority))
        desktop = cls(cfg, f":{number}", own=False, env=env, xauthority=str(xauthority), folder=folder)
        desktop.processes.append(server)
        try:
            desktop._connect()
            if cfg.accessibility:
                desktop._start_accessibility()
            manager = find_window_manager(cfg.window_manager)
            if manager is not None:
                desktop.spawn(desktop._manager_argv(manager), "window-manager")
            desktop._wait_for_manager(manager is not None)
            before = len(desktop.client_windows())
            for i, command in enumerate(cfg.startup):
                desktop.spawn(["/bin/sh", "-c", command], f"startup-{i}")
            if cfg.startup:
                desktop.wait_for_windows(before + len(cfg.startup), 10.0)
        except BaseException:
            desktop.stop()
            raise
        _LIVE.add(desktop)
        return desktop

    def _manager_argv(self, manager: str) -> list[str]:
        """openbox gets a configuration without its root menu and program keys (see openbox.py)."""
        if Path(manager).name != "openbox" or self.folder is None:
            return [manager]
        from hermes.tools.computer_use.openbox import write_config

        return [manager, "--config-file", str(write_config(self.folder))]

    def _connect(self) -> None:
        self.x = open_x(self.name, self.xauthority)
        with _xauthority(self.xauthority):
            size = self.camera.screen_size()
        self.scale = Scale.fit(size, self.cfg.screenshot_size)
        self.input = Input(self.x, self.stop_reason)

    def spawn(self, argv: list[str], label: str) -> subprocess.Popen[bytes]:
        """Start a program on this display, in its own process group, output to a log in the folder."""
        log_path = (self.folder or Path(tempfile.gettempdir())) / f"{label}.log"
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(argv, env=self.env, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                    start_new_session=True, cwd=str(self.folder or Path.home()))
        self.processes.append(proc)
        return proc

    def _start_accessibility(self) -> None:
        """A private session bus and the AT-SPI bus on it, so toolkits publish their accessibility trees."""
        daemon = shutil.which("dbus-daemon")
        launcher = next((p for p in AT_SPI_LAUNCHERS if os.access(p, os.X_OK)), None)
        if daemon is None or launcher is None or self.folder is None:
            return
        bus = self.folder / "bus"
        self.spawn([daemon, "--session", f"--address=unix:path={bus}", "--nofork", "--nopidfile"], "dbus")
        deadline = time.monotonic() + 5
        while not bus.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        self.env["DBUS_SESSION_BUS_ADDRESS"] = f"unix:path={bus}"
        self.env.pop("NO_AT_BRIDGE", None)
        self.env["GTK_A11Y"] = "atspi"
        self.spawn([launcher, "--launch-immediately"], "at-spi")

    # -- windows ------------------------------------------------------------------------------------
    def client_windows(self) -> list[Any]:
        """The top-level windows of programs (the window manager's list, else mapped root children)."""
        from Xlib import X

        root = self.x.screen().root
        atom = self.x.intern_atom("_NET_CLIENT_LIST", only_if_exists=True)
        if atom:
            prop = root.get_full_property(atom, X.AnyPropertyType)
            if prop is not None:
                return [self.x.create_resource_object("window", w) for w in prop.value]
        out = []
        for child in root.query_tree().children:
            attrs = child.get_attributes()
            if attrs.map_state == X.IsViewable and not attrs.override_redirect:
                out.append(child)
        return out

    def _wait_for_manager(self, started: bool, seconds: float = 5.0) -> None:
        if not started:
            return
        atom = self.x.intern_atom("_NET_SUPPORTING_WM_CHECK")
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.x.screen().root.get_full_property(atom, 0) is not None:
                return
            time.sleep(0.02)

    def wait_for_windows(self, count: int, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if len(self.client_windows()) >= count:
                time.sleep(0.2)  # let the program draw once
                return True
            time.sleep(0.05)
        return False

    # -- stopping -----------------------------------------------------------------------------------
    def stop_reason(self) -> str | None:
        if self.killed:
            return self.killed
        if self.cancelled is not None and self.cancelled():
            return "the turn was interrupted"
        return None

    def kill(self, why: str) -> None:
        """The kill switch: refuse all further input on this display (thread-safe, at once)."""
        self.killed = why

    def stop(self) -> None:
        """End the session's display: close connections, end every process group hermes started."""
        _LIVE.discard(self)
        if self.hotkey is not None:
            self.hotkey.stop()
        with contextlib.suppress(Exception):
            self.camera.close()
        if self.input is not None and self.own:
            with contextlib.suppress(Exception):
                self.input.close()
        if self.x is not None:
            with contextlib.suppress(Exception):
                self.x.close()
        for proc in reversed(self.processes):
            _end_group(proc)
        self.processes.clear()
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)


def _read_display_number(fd: int, server: subprocess.Popen[bytes], seconds: float = 15.0) -> int:
    data = b""
    deadline = time.monotonic() + seconds
    while b"\n" not in data:
        left = deadline - time.monotonic()
        if left <= 0 or server.poll() is not None:
            _end_group(server)
            raise ToolError("Xvfb did not start (no display number within 15 s)" if left <= 0
                            else f"Xvfb exited at start with status {server.returncode}")
        ready, _, _ = select.select([fd], [], [], min(left, 0.2))
        if ready:
            piece = os.read(fd, 64)
            if not piece:
                continue
            data += piece
    return int(data.strip())


def _end_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the process group ``proc`` leads, SIGKILL it after a second."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=2.0)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)  # what the leader left behind in its group


@atexit.register
def _stop_all() -> None:
    for desktop in list(_LIVE):
        with contextlib.suppress(Exception):
            desktop.stop()
