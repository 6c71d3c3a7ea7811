"""What is on the screen as elements: the AT-SPI accessibility tree of the active window, read over
D-Bus (jeepney, no GObject), or — where no toolkit publishes one — the X11 window list.

Elements come numbered in reading order with role, name, state words and bounds in the model's
coordinates; ``computer_use`` actions take ``element=N`` to act at the centre of one. The listing
says which source it came from, so the model knows when it only has windows, not widgets.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

from hermes.tools.computer_use.screen import Scale

_REGISTRY = "org.a11y.atspi.Registry"
_ROOT = "/org/a11y/atspi/accessible/root"
_ACCESSIBLE = "org.a11y.atspi.Accessible"
#: AT-SPI StateType bits worth telling the model
_STATES = {1: "active", 4: "checked", 7: "editable", 8: "enabled", 12: "focused", 23: "selected",
           25: "showing"}
_SHOWING, _VISIBLE, _ACTIVE = 25, 30, 1
#: roles that are only layout
_LAYOUT = frozenset({"filler", "panel", "scroll pane", "viewport", "layered pane", "glass pane", "root pane",
                     "redundant object", "section", "invalid"})
_TIMEOUT = 2.0


@dataclass(frozen=True)
class Element:
    index: int
    role: str
    name: str
    #: real pixels: left, top, width, height
    bounds: tuple[int, int, int, int]
    states: tuple[str, ...] = ()
    text: str | None = None

    def centre(self) -> tuple[int, int]:
        left, top, width, height = self.bounds
        return left + width // 2, top + height // 2

    def shown(self, scale: Scale) -> dict[str, Any]:
        out: dict[str, Any] = {"element": self.index, "role": self.role, "name": self.name,
                               "bounds": scale.box_to_model(*self.bounds)}
        if self.states:
            out["states"] = list(self.states)
        if self.text is not None:
            out["text"] = self.text
        return out


class _Bus:
    def __init__(self, conn: Any) -> None:
        self.conn = conn

    def call(self, name: str, path: str, iface: str, method: str, sig: str | None = None,
             body: tuple[Any, ...] = ()) -> Any:
        from jeepney import DBusAddress, new_method_call

        address = DBusAddress(path, bus_name=name, interface=iface)
        return self.conn.send_and_get_reply(new_method_call(address, method, sig, body), timeout=_TIMEOUT).body

    def prop(self, name: str, path: str, iface: str, prop: str) -> Any:
        from jeepney import DBusAddress, Properties

        address = DBusAddress(path, bus_name=name, interface=iface)
        return self.conn.send_and_get_reply(Properties(address).get(prop), timeout=_TIMEOUT).body[0][1]


def _states(bits: list[int]) -> set[int]:
    return {i + 32 * word for word, value in enumerate(bits[:2]) for i in range(32) if value >> i & 1}


def _a11y_bus(session_address: str) -> Any:
    from jeepney import DBusAddress, new_method_call
    from jeepney.io.blocking import open_dbus_connection

    with open_dbus_connection(bus=session_address) as session:
        launcher = DBusAddress("/org/a11y/bus", bus_name="org.a11y.Bus", interface="org.a11y.Bus")
        address = session.send_and_get_reply(new_method_call(launcher, "GetAddress"), timeout=_TIMEOUT).body[0]
    return open_dbus_connection(bus=address)


def atspi_elements(session_address: str, limit: int) -> tuple[list[Element], str | None]:
    """The elements of the active window (or of every window when none is active) and its title."""
    from jeepney.wrappers import DBusErrorResponse

    conn = _a11y_bus(session_address)
    bus = _Bus(conn)
    try:
        frames: list[tuple[str, str, set[int], str]] = []
        for app_name, app_path in bus.call(_REGISTRY, _ROOT, _ACCESSIBLE, "GetChildren")[0]:
            with contextlib.suppress(DBusErrorResponse, TimeoutError, OSError):
                for name, path in bus.call(app_name, app_path, _ACCESSIBLE, "GetChildren")[0]:
                    states = _states(bus.call(name, path, _ACCESSIBLE, "GetState")[0])
                    if _SHOWING in states:
                        frames.append((name, path, states, str(bus.prop(name, path, _ACCESSIBLE, "Name"))))
        active = [f for f in frames if _ACTIVE in f[2]]
        chosen = active[:1] or frames
        elements: list[Element] = []
        for name, path, _states_of, _title in chosen:
            _walk(bus, name, path, elements, limit, 0)
        return elements, (active[0][3] if active else None)
    finally:
        conn.close()


def _walk(bus: _Bus, name: str, path: str, out: list[Element], limit: int, depth: int) -> None:
    from jeepney.wrappers import DBusErrorResponse

    if len(out) >= limit or depth > 40:
        return
    try:
        states = _states(bus.call(name, path, _ACCESSIBLE, "GetState")[0])
        if _SHOWING not in states and depth > 0:
            return
        role = str(bus.call(name, path, _ACCESSIBLE, "GetRoleName")[0])
        label = str(bus.prop(name, path, _ACCESSIBLE, "Name"))
        bounds = tuple(int(v) for v in bus.call(name, path, "org.a11y.atspi.Component", "GetExtents", "u", (0,))[0])
        children = bus.call(name, path, _ACCESSIBLE, "GetChildren")[0]
    except (DBusErrorResponse, TimeoutError, OSError):
        return
    text = None
    if 7 in states:  # editable: its current text
        with contextlib.suppress(DBusErrorResponse, TimeoutError, OSError):
            count = int(bus.prop(name, path, "org.a11y.atspi.Text", "CharacterCount"))
            text = str(bus.call(name, path, "org.a11y.atspi.Text", "GetText", "ii", (0, min(count, 500)))[0])
    if role not in _LAYOUT and bounds[2] > 0 and bounds[3] > 0:
        words = tuple(_STATES[s] for s in sorted(states) if s in _STATES and s not in (_SHOWING, 8))
        if 8 not in states:
            words = (*words, "disabled")
        out.append(Element(len(out) + 1, role, label, bounds[:4], words, text))  # type: ignore[arg-type]
    for child_name, child_path in children:
        _walk(bus, child_name, child_path, out, limit, depth + 1)


def x11_windows(xdisplay: Any, windows: list[Any], limit: int) -> tuple[list[Element], str | None]:
    """The programs' top-level windows (title, class, root-relative frame) and the active one's title."""
    from Xlib import X, error

    root = xdisplay.screen().root
    active_id = None
    atom = xdisplay.intern_atom("_NET_ACTIVE_WINDOW", only_if_exists=True)
    if atom:
        prop = root.get_full_property(atom, X.AnyPropertyType)
        if prop is not None and len(prop.value):
            active_id = int(prop.value[0])
    out: list[Element] = []
    title = None
    for window in windows[:limit]:
        try:
            name = _window_name(xdisplay, window)
            geometry = window.get_geometry()
            origin = window.translate_coords(root, 0, 0)
        except error.XError:
            continue
        states = ("active",) if window.id == active_id else ()
        if states:
            title = name
        left, top = -int(origin.x), -int(origin.y)
        out.append(Element(len(out) + 1, "window", name, (left, top, int(geometry.width), int(geometry.height)),
                           states))
    return out, title


def _window_name(xdisplay: Any, window: Any) -> str:
    from Xlib import X

    atom = xdisplay.intern_atom("_NET_WM_NAME", only_if_exists=True)
    if atom:
        prop = window.get_full_property(atom, X.AnyPropertyType)
        if prop is not None:
            value = prop.value
            return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
    name = window.get_wm_name()
    return name.decode("latin-1") if isinstance(name, bytes) else str(name or "")
