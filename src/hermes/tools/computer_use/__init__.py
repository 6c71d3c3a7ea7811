"""The ``computer_use`` tool: a real X11 desktop driven by screenshots, pointer, keyboard and the
accessibility tree (requirement T-CU; docs/tools/computer-use.md)."""
