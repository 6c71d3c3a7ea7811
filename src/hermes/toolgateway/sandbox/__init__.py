"""The local engine behind the ``modal`` relay: sandboxes and execs on the gateway host.

* :mod:`.engine` — :class:`~.engine.SandboxEngine`: creating, running in and terminating sandboxes;
* :mod:`.fs` — each sandbox's home folder, opened without following links;
* :mod:`.proc` — the child processes: user switch, limits, process groups, capped output;
* :mod:`.store` — the records of sandboxes and execs in this process's memory;
* :mod:`.config` — the ``[relays.modal]`` settings (kept free of the rest, so the gateway config can import it).

Nothing is imported here: each module is loaded where it is used.
"""
