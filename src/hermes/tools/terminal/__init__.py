"""The terminal tool family: ``terminal`` (shell commands) and ``process_manage`` (background processes).

* :mod:`~hermes.tools.terminal.approval` — command classification (floor / dangerous / unproven / safe);
* :mod:`~hermes.tools.terminal.proof` — proving a command safe (with ``known``, ``gitcheck``, ``scriptcheck``);
* :mod:`~hermes.tools.terminal.gate` — the approval flow (allow-lists, yolo mode, asking the person);
* :mod:`~hermes.tools.terminal.runner` — foreground runs, the scrubbed child environment, output caps;
* :mod:`~hermes.tools.terminal.processes` — the per-session background process manager;
* :mod:`~hermes.tools.terminal.tool` — the two tools' schemas, handlers and registration.

See docs/tools/terminal.md.
"""
