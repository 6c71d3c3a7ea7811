"""Whether a route can run on this machine now: the one answer ``portal info``, ``status`` and ``tools list`` share.

:func:`~hermes.routing.report.build_report` turns each route into a
:class:`~hermes.routing.report.RouteStatus` with ``ready`` and ``missing``, and the routed tools'
availability checks (:mod:`hermes.tools.routed.availability`) read that same status, so a line that
says "active" and a tool marked ✓ can never disagree. Beyond selection and entitlement, this module
adds what only this machine can answer, offline and instantly:

* a local backend's programs (one of them on ``PATH`` of the environment given) and Python packages
  (found with ``importlib.util.find_spec``, never imported);
* whether any tool of this installation serves the route at all (``Category.tools``); a category
  without one is "not built yet", whatever its keys.
"""

from __future__ import annotations

import importlib.util
import shutil
from collections.abc import Mapping

from hermes.routing.categories import CATEGORIES, Vendor

NOT_BUILT = "not built yet — no tool uses it"
NOT_BUILT_BACKEND = "not built yet — no tool drives this backend"


def serving_tools(name: str) -> tuple[str, ...]:
    """The tools that serve the route ``name`` (``web.search``, ``tts``…); empty when none is built."""
    head, _, function = name.partition(".")
    category = CATEGORIES[head]
    return tuple(category.tools.get(function or category.functions[0], ()))


def _package_found(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def local_problem(vendor: Vendor, env: Mapping[str, str]) -> str | None:
    """What a local backend lacks here (``"espeak-ng (or espeak) on PATH"``), or None when it can run."""
    hint = f" ({vendor.install_hint})" if vendor.install_hint else ""
    if vendor.programs:
        path = env.get("PATH", "")
        if not any(shutil.which(program, path=path) for program in vendor.programs):
            first, *others = vendor.programs
            alternatives = f"{first} (or {' or '.join(others)})" if others else first
            return f"the program {alternatives} on PATH{hint}"
    missing = [p for p in vendor.packages if not _package_found(p)]
    if missing:
        return f"the Python package {', '.join(missing)}{hint}"
    return None
