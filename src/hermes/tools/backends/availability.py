"""The availability check shared by every tool that acts through the execution backend.

``terminal``, ``process_manage``, ``execute_code`` and the file tools run on the backend that
``terminal.backend`` chooses; :func:`backend_check` asks
:func:`hermes.routing.readiness.backend_problem` about it (offline, instant: config.yaml, ``.env`` and
the stored portal login), so ``hermes tools list`` marks these tools ✗ with the reason while that backend
cannot run — a ``modal`` backend without a usable gateway route, a ``docker`` one without an engine —
and the tool's own local needs (bash, a Python) only count for the ``local`` backend.
"""

from __future__ import annotations

from collections.abc import Callable

Check = Callable[[], tuple[bool, str | None]]


def backend_check(local_check: Check | None = None) -> Check:
    """A registry ``check_fn``: ``local_check`` when the backend is ``local``, else the backend's readiness."""

    def check() -> tuple[bool, str | None]:
        from hermes.config.settings import Settings
        from hermes.errors import HermesError
        from hermes.routing.readiness import backend_problem
        from hermes.tools.backends.registry import DEFAULT, chosen_name
        from hermes.tools.backends.session import config_of

        if chosen_name(config_of(None)) == DEFAULT:  # config.yaml cached by its mtime: the common case is cheap
            return local_check() if local_check is not None else (True, None)
        try:
            settings = Settings.load()
        except HermesError as exc:
            return False, f"the settings cannot be read: {exc}"
        problem = backend_problem(settings.config.data, settings.env.as_dict(), settings.paths.auth)
        return problem is None, problem

    check.__doc__ = "Ready when terminal.backend can run here (see hermes.tools.backends.availability)."
    return check
