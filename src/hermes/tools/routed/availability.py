"""The availability check of a routed tool: the ``ready``/``missing`` of its route in the gateway report.

``hermes portal info`` and ``hermes status`` print :func:`~hermes.routing.report.load_report`; a routed
tool's ``check_fn`` reads the very same report, so ``hermes tools list`` marks a tool ✓ exactly when its
route's line says it can run (never for a gateway the person is not logged in to or not entitled to, a
local engine that is not installed, or a saved selection that cannot run), and ✗ with what is missing.
Offline and instant: the files under ``HERMES_HOME``, no network, no refresh.
"""

from __future__ import annotations

from collections.abc import Callable


def route_check(name: str) -> Callable[[], tuple[bool, str | None]]:
    """A registry ``check_fn`` for a tool served by the route ``name`` (``web.search``, ``image_gen``…)."""

    def check() -> tuple[bool, str | None]:
        from hermes.config.settings import Settings
        from hermes.errors import HermesError
        from hermes.routing.report import load_report

        try:
            settings = Settings.load()
            report = load_report(settings.paths.auth, settings.config.data, settings.env.as_dict())
        except HermesError as exc:
            return False, f"the settings cannot be read: {exc}"
        route = report.routes[name]
        return route.ready, route.missing

    check.__doc__ = f"Ready when the {name} route can run here (see hermes.tools.routed.availability)."
    return check
