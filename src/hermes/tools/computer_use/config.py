"""The ``computer_use.*`` settings and the offline check of whether a display can be opened here.

Nothing here starts a process or touches the network: :func:`display_ready` looks for the Python
packages and the Xvfb program (hermes's own display), or connects to the local X server socket of
``DISPLAY`` (the person's own display, ``computer_use.display: own``), which takes microseconds.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import socket
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hermes.config.schema import SCHEMA
from hermes.errors import ConfigError

if TYPE_CHECKING:
    from hermes.config.settings import Settings

#: the Python packages the backend needs (import name -> what pip installs)
PACKAGES = {"mss": "mss", "Xlib": "python-xlib", "PIL": "pillow"}
#: tried in order for ``computer_use.window_manager: auto``
#: what ``auto`` picks: openbox (started without its root menu, see openbox.py) or matchbox (none); icewm,
#: fluxbox and twm open menus that start a terminal, so only a person's explicit setting starts them
WINDOW_MANAGERS = ("openbox", "matchbox-window-manager")
_SIZE = re.compile(r"^\s*(\d{2,5})\s*[xX×]\s*(\d{2,5})\s*$")
_DISPLAY = re.compile(r"^(?P<host>[A-Za-z0-9.\-]*):(?P<number>\d+)(?:\.\d+)?$")


@dataclass(frozen=True)
class ComputerUseConfig:
    """What the tool reads from config.yaml (docs/tools/computer-use.md)."""

    #: "xvfb": a display hermes starts for the session; "own": the person's DISPLAY
    display: str = "xvfb"
    xvfb: str = "Xvfb"
    screen_size: tuple[int, int] = (1280, 800)
    #: the largest screenshot the model gets; larger screens are scaled down (coordinates mapped back)
    screenshot_size: tuple[int, int] = (1280, 800)
    image_format: str = "png"
    window_manager: str = "auto"
    startup: tuple[str, ...] = ()
    accessibility: bool = True
    kill_hotkey: str = "ctrl+alt+Escape"
    #: whether screenshots are attached for the session's model (``model.vision``)
    model_sees_images: bool = False

    @property
    def own(self) -> bool:
        return self.display == "own"


def parse_size(text: str, key: str) -> tuple[int, int]:
    match = _SIZE.match(text)
    if not match:
        raise ConfigError(f"{key} in config.yaml must be a size like 1280x800; got {text!r}")
    width, height = int(match.group(1)), int(match.group(2))
    if not (64 <= width <= 8192 and 64 <= height <= 8192):
        raise ConfigError(f"{key} in config.yaml must be between 64x64 and 8192x8192; got {text!r}")
    return width, height


def computer_use_config(settings: Settings) -> ComputerUseConfig:
    """The settings of one session; a ConfigError naming the key when one is malformed."""
    def read(name: str) -> object:
        return SCHEMA.read(settings, f"computer_use.{name}")

    startup = read("startup") or ()
    if not all(isinstance(c, str) and c.strip() for c in startup):  # type: ignore[attr-defined]
        raise ConfigError("computer_use.startup in config.yaml must be a list of command lines")
    return ComputerUseConfig(
        display=str(read("display")),
        xvfb=str(read("xvfb")),
        screen_size=parse_size(str(read("screen_size")), "computer_use.screen_size"),
        screenshot_size=parse_size(str(read("screenshot_size")), "computer_use.screenshot_size"),
        image_format=str(read("image_format")),
        window_manager=str(read("window_manager")),
        startup=tuple(str(c) for c in startup),  # type: ignore[attr-defined]
        accessibility=bool(read("accessibility")),
        kill_hotkey=str(read("kill_hotkey")),
        model_sees_images=bool(SCHEMA.read(settings, "model.vision")),
    )


def missing_packages() -> list[str]:
    """The pip names of the backend's packages that cannot be imported (looked up, not imported)."""
    return [pip for module, pip in PACKAGES.items() if importlib.util.find_spec(module) is None]


def find_window_manager(configured: str) -> str | None:
    """The window manager program to start (None: none wanted or none found)."""
    if configured == "none":
        return None
    for name in WINDOW_MANAGERS if configured == "auto" else (configured,):
        found = shutil.which(name)
        if found:
            return found
    return None


def x_socket_open(display: str, timeout: float = 0.2) -> tuple[bool, str]:
    """Whether an X server answers at ``display`` on this machine (a socket connect; no X request)."""
    match = _DISPLAY.match(display.strip())
    if not match:
        return False, f"DISPLAY={display!r} is not an X display name like ':0'"
    host, number = match.group("host"), int(match.group("number"))
    if host in ("", "unix"):
        for address in (f"\0/tmp/.X11-unix/X{number}", f"/tmp/.X11-unix/X{number}"):
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.settimeout(timeout)
                try:
                    sock.connect(address)
                    return True, f"the X display {display}"
                except OSError:
                    continue
        return False, f"no X server answers at DISPLAY={display} (nothing listens on /tmp/.X11-unix/X{number})"
    if host not in ("localhost", "127.0.0.1"):
        return False, f"DISPLAY={display} is on another machine; computer_use drives local displays only"
    try:
        with socket.create_connection(("127.0.0.1", 6000 + number), timeout=timeout):
            return True, f"the X display {display} (ssh forwarding)"
    except OSError:
        return False, f"no X server answers at DISPLAY={display} (127.0.0.1:{6000 + number} refused)"


def display_ready(settings: Settings) -> tuple[bool, str]:
    """(whether a display can be opened here, why not / which one) — offline and fast."""
    missing = missing_packages()
    if missing:
        return False, (f"the Python packages {', '.join(missing)} are missing "
                       "(pip install 'hermes[computer-use]')")
    cfg = computer_use_config(settings)
    if cfg.own:
        display = os.environ.get("DISPLAY", "")
        if not display:
            wayland = " (a Wayland session without XWayland is not supported)" if os.environ.get(
                "WAYLAND_DISPLAY") else ""
            return False, f"computer_use.display is 'own' but DISPLAY is not set{wayland}"
        return x_socket_open(display)
    if shutil.which(cfg.xvfb) is None:
        return False, f"{cfg.xvfb} not found on PATH (install the Debian package 'xvfb' or set computer_use.xvfb)"
    return True, f"a private Xvfb display ({cfg.screen_size[0]}x{cfg.screen_size[1]})"
