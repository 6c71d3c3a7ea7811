"""Key names the models use (``ctrl+shift+t``, ``Return``, ``Page_Down``, ``cmd+c``) as X keysyms.

A combination is names joined by ``+`` (or spaces); each name is an alias below or any X keysym name
(``XF86AudioMute``, ``KP_Enter``, one character like ``a`` or ``/``). An unknown name is a
:class:`~hermes.errors.ToolArgumentError` that names it.
"""

from __future__ import annotations

import re

from hermes.errors import ToolArgumentError

#: spellings models and people use for keys whose X keysym names differ
ALIASES = {
    "ctrl": "Control_L", "control": "Control_L", "lctrl": "Control_L", "rctrl": "Control_R",
    "shift": "Shift_L", "lshift": "Shift_L", "rshift": "Shift_R",
    "alt": "Alt_L", "lalt": "Alt_L", "ralt": "Alt_R", "option": "Alt_L", "altgr": "ISO_Level3_Shift",
    "super": "Super_L", "win": "Super_L", "windows": "Super_L", "cmd": "Super_L", "command": "Super_L",
    "meta": "Super_L",
    "enter": "Return", "return": "Return", "esc": "Escape", "escape": "Escape", "tab": "Tab",
    "space": "space", "backspace": "BackSpace", "delete": "Delete", "del": "Delete", "insert": "Insert",
    "ins": "Insert", "home": "Home", "end": "End", "pageup": "Page_Up", "page_up": "Page_Up", "pgup": "Page_Up",
    "pagedown": "Page_Down", "page_down": "Page_Down", "pgdn": "Page_Down",
    "up": "Up", "down": "Down", "left": "Left", "right": "Right",
    "arrowup": "Up", "arrowdown": "Down", "arrowleft": "Left", "arrowright": "Right",
    "capslock": "Caps_Lock", "numlock": "Num_Lock", "printscreen": "Print", "print": "Print",
    "pause": "Pause", "menu": "Menu", "minus": "minus", "plus": "plus", "equal": "equal", "comma": "comma",
    "period": "period", "slash": "slash", "backslash": "backslash", "semicolon": "semicolon",
    "apostrophe": "apostrophe", "grave": "grave", "bracketleft": "bracketleft", "bracketright": "bracketright",
}
MODIFIERS = frozenset({"Control_L", "Control_R", "Shift_L", "Shift_R", "Alt_L", "Alt_R", "Super_L", "Super_R",
                       "ISO_Level3_Shift", "Meta_L", "Meta_R"})
_SPLIT = re.compile(r"\s*\+\s*|\s+")
#: combinations that end the person's session or lock them out; never sent
BLOCKED = (
    (frozenset({"Control_L", "Alt_L", "Delete"}), "ctrl+alt+Delete"),
    (frozenset({"Control_L", "Alt_L", "BackSpace"}), "ctrl+alt+BackSpace (kills the X server)"),
    (frozenset({"Super_L", "l"}), "super+l (locks the screen)"),
)


def keysym_of(name: str) -> int:
    """The X keysym for one key name; a ToolArgumentError for an unknown one."""
    from Xlib import XK

    canonical = ALIASES.get(name.lower(), name)
    if re.fullmatch(r"[Ff]([1-9]|1[0-9]|2[0-4])", canonical):
        canonical = canonical.upper()
    keysym = XK.string_to_keysym(canonical)
    if not keysym and len(canonical) == 1:
        keysym = char_keysym(canonical)
    if not keysym:
        raise ToolArgumentError(
            f"unknown key name {name!r}: use names like Return, Tab, Escape, BackSpace, Up, Page_Down, F5, "
            "ctrl, shift, alt, super, or one character, joined with '+' (e.g. 'ctrl+shift+t')")
    return int(keysym)


def parse_combo(text: str) -> list[tuple[str, int]]:
    """``ctrl+shift+t`` as [(name, keysym), ...] in press order; refuses empty and blocked combinations."""
    names = [n for n in _SPLIT.split(text.strip()) if n] if text.strip() != "+" else ["plus"]
    if not names:
        raise ToolArgumentError("'keys' is empty: give a key or a combination such as 'ctrl+s' or 'Return'")
    parsed = [(ALIASES.get(n.lower(), n), keysym_of(n)) for n in names]
    canonical = {name if len(name) > 1 else name.lower() for name, _ in parsed}
    canonical = {n.replace("_R", "_L") for n in canonical}
    for combo, shown in BLOCKED:
        if combo <= canonical:
            raise ToolArgumentError(f"the key combination {shown} is never sent by computer_use")
    return parsed


def char_keysym(char: str) -> int:
    """The keysym that types ``char`` (Latin-1 directly, other characters as Unicode keysyms)."""
    from Xlib import XK

    special = {"\n": "Return", "\t": "Tab", " ": "space"}
    if char in special:
        return int(XK.string_to_keysym(special[char]))
    code = ord(char)
    if 0x20 <= code <= 0x7E or 0xA0 <= code <= 0xFF:
        return code
    return 0x01000000 | code
