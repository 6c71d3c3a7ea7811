"""openbox on the private display without a way to start programs.

openbox's stock configuration opens a root menu on a right click on the desktop ("Terminal emulator",
…) and binds keys to programs (``Execute``): on the private display that would be a shell outside
every approval. :func:`write_config` writes an ``rc.xml`` for ``openbox --config-file``: the system's
own (its focus, raise and move bindings), less every ``Execute`` and ``Restart`` action and every
``ShowMenu`` of the root menu, reading only a menu file whose root menu is empty.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

SYSTEM_RC = Path("/etc/xdg/openbox/rc.xml")
_RC_NS = "http://openbox.org/3.4/rc"
_MENU_NS = "http://openbox.org/3.4/menu"
#: actions that start a program (``Restart`` takes a ``command`` to run in openbox's place)
_RUNS_PROGRAMS = frozenset({"Execute", "Restart"})
#: used where the system has no rc.xml: focus and raise on a click, move by the title bar
_MINIMAL_RC = f"""<?xml version="1.0" encoding="UTF-8"?>
<openbox_config xmlns="{_RC_NS}">
  <focus><focusNew>yes</focusNew></focus>
  <mouse>
    <context name="Frame"><mousebind button="Left" action="Press"><action name="Focus"/><action name="Raise"/>
    </mousebind></context>
    <context name="Client"><mousebind button="Left" action="Press"><action name="Focus"/><action name="Raise"/>
    </mousebind></context>
    <context name="Titlebar"><mousebind button="Left" action="Drag"><action name="Move"/></mousebind>
    </context>
  </mouse>
  <menu/>
</openbox_config>
"""


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _runs_something(action: ET.Element) -> bool:
    name = action.get("name", "")
    if name in _RUNS_PROGRAMS:
        return True
    return name == "ShowMenu" and any(_local(c.tag) == "menu" and (c.text or "").strip() == "root-menu"
                                      for c in action)


def safe_rc(source: str, menu_file: Path) -> str:
    """``source`` (an openbox rc.xml) without program-starting actions, its menus read from ``menu_file``."""
    ET.register_namespace("", _RC_NS)
    root = ET.fromstring(source)
    parents = {child: parent for parent in root.iter() for child in parent}
    for action in [e for e in root.iter() if _local(e.tag) == "action" and _runs_something(e)]:
        parents[action].remove(action)
    menus = [e for e in root if _local(e.tag) == "menu"]
    if not menus:
        menus = [ET.SubElement(root, f"{{{_RC_NS}}}menu")]
    for menu in menus:
        for old in [c for c in menu if _local(c.tag) == "file"]:
            menu.remove(old)
        ET.SubElement(menu, f"{{{_RC_NS}}}file").text = str(menu_file)
    return ET.tostring(root, encoding="unicode")


def write_config(folder: Path) -> Path:
    """``rc.xml`` and an empty ``menu.xml`` in ``folder``; returns the rc.xml for ``--config-file``."""
    menu_file = folder / "openbox-menu.xml"
    menu_file.write_text(f'<?xml version="1.0" encoding="UTF-8"?>\n<openbox_menu xmlns="{_MENU_NS}">'
                         '<menu id="root-menu" label="hermes"/></openbox_menu>\n', encoding="utf-8")
    try:
        source = SYSTEM_RC.read_text(encoding="utf-8")
        rc = safe_rc(source, menu_file)
    except (OSError, ET.ParseError):
        rc = safe_rc(_MINIMAL_RC, menu_file)
    path = folder / "openbox-rc.xml"
    path.write_text(rc, encoding="utf-8")
    return path
