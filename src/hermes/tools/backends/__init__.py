"""Execution backends: where ``terminal``, ``process_manage``, ``execute_code`` and the file tools act.

One interface (:class:`~.base.Backend`) — run a command with a timeout and an output cap, background
processes, read/write/stat files, upload/download — and one plugin per place:

* ``local`` (:mod:`.local`, the default): this machine. The tools keep their own in-process path for it
  (the OS sandbox of :mod:`hermes.tools.sandbox`, the local file rules of :mod:`hermes.tools.paths`);
* ``ssh`` (:mod:`.ssh`): a server reached with asyncssh;
* ``docker`` (:mod:`.docker`): a container of the Docker Engine;
* ``modal`` (:mod:`.modal`): a sandbox behind the Tool Gateway's ``modal`` relay.

:mod:`.registry` maps ``terminal.backend`` to a plugin (third-party ones through the ``hermes.backends``
entry point group); :mod:`.session` keeps one backend per task, reused across its calls and closed when
the session ends. This package registers no tool: it is shared by the families (architecture rule).
"""
