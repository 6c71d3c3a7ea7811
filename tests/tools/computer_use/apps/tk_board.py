"""A Tk test window for computer_use: a red target square, a text field and a button.

Usage: python tk_board.py STATE_FILE. The window writes its state as JSON to STATE_FILE (atomically)
once it is on screen and after every event: where the target is (root pixels), where it was clicked,
where the field and the button are, the field's text, how often the button was pressed and the keys the field received.
"""

import json
import os
import sys
import tkinter as tk

STATE = sys.argv[1]
root = tk.Tk()
root.title("Hermes Tk board")
root.geometry("420x260+60+50")
state = {"target": None, "target_clicks": [], "releases": [], "right_clicks": [], "shift_clicks": 0,
         "double_clicks": 0, "wheel": {"up": 0, "down": 0}, "text": "", "saved": 0, "saved_text": None,
         "keys": []}


def write(*_args):
    state["text"] = entry.get()
    target = canvas.winfo_rootx() + 40, canvas.winfo_rooty() + 30
    state["target"] = [target[0], target[1], 9, 9]
    state["canvas"] = [canvas.winfo_rootx(), canvas.winfo_rooty(), canvas.winfo_width(), canvas.winfo_height()]
    for name, widget in (("entry", entry), ("button", button)):
        state[name] = [widget.winfo_rootx(), widget.winfo_rooty(), widget.winfo_width(), widget.winfo_height()]
    tmp = STATE + ".tmp"
    with open(tmp, "w") as out:
        json.dump(state, out)
    os.replace(tmp, STATE)


canvas = tk.Canvas(root, width=400, height=80, bg="white", highlightthickness=0)
canvas.pack(pady=4)
canvas.create_rectangle(40, 30, 48, 38, fill="#ff0000", outline="#ff0000")


def on_canvas(event):
    state["target_clicks"].append([event.x_root, event.y_root])
    if event.state & 1:
        state["shift_clicks"] += 1
    write()


def record(key, value):
    def handler(event):
        if key == "wheel":
            state["wheel"][value] += 1
        elif key == "double_clicks":  # this binding wins over <Button-1> for a second click
            state["double_clicks"] += 1
            state["target_clicks"].append([event.x_root, event.y_root])
        else:
            state[key].append([event.x_root, event.y_root])
        write()

    return handler


canvas.bind("<Button-1>", on_canvas)
canvas.bind("<ButtonRelease-1>", record("releases", None))
canvas.bind("<Button-3>", record("right_clicks", None))
canvas.bind("<Double-Button-1>", record("double_clicks", None))
canvas.bind("<Button-4>", record("wheel", "up"))
canvas.bind("<Button-5>", record("wheel", "down"))
entry = tk.Entry(root, width=30)
entry.pack(pady=4)
entry.bind("<KeyRelease>", lambda e: (state["keys"].append(e.keysym), write()))


def save():
    state["saved"] += 1
    state["saved_text"] = entry.get()
    write()


button = tk.Button(root, text="Save", command=save)
button.pack(pady=4)
root.after(300, write)
root.mainloop()
