"""The ``computer_use`` tool: a real X11 desktop driven by screenshots, pointer, keyboard and the
accessibility tree (requirement T-CU; docs/tools/computer-use.md)."""

#: actions that move the pointer or press keys (the rest only look or wait)
INPUT_ACTIONS = frozenset({
    "mouse_move", "click", "left_click", "right_click", "middle_click", "double_click", "triple_click",
    "left_click_drag", "left_mouse_down", "left_mouse_up", "type", "key", "scroll",
})
LOOK_ACTIONS = frozenset({"screenshot", "zoom", "cursor_position", "accessibility", "wait"})
ACTIONS = tuple(sorted(INPUT_ACTIONS | LOOK_ACTIONS))
