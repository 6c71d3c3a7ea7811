"""A GTK 3 test window for computer_use's accessibility tree (run with the system Python and its gi).

Usage: python3 gtk_form.py STATE_FILE. A text field and a Save button; pressing Save writes the field's
text and the number of presses to STATE_FILE as JSON (atomically).
"""

import json
import os
import sys

import gi

gi.require_version("Gtk", "3.0")
from gi.repository import Gtk  # noqa: E402

STATE = sys.argv[1]
state = {"saved": 0, "text": None}
window = Gtk.Window(title="Hermes test form")
window.set_default_size(360, 120)
box = Gtk.Box(orientation=Gtk.Orientation.VERTICAL, spacing=6)
entry = Gtk.Entry()
button = Gtk.Button(label="Save")


def save(_button):
    state["saved"] += 1
    state["text"] = entry.get_text()
    with open(STATE + ".tmp", "w") as out:
        json.dump(state, out)
    os.replace(STATE + ".tmp", STATE)


button.connect("clicked", save)
box.pack_start(entry, False, False, 0)
box.pack_start(button, False, False, 0)
window.add(box)
window.connect("destroy", Gtk.main_quit)
window.show_all()
Gtk.main()
