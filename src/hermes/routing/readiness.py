"""Whether a route can run on this machine now: the one answer ``portal info``, ``status`` and ``tools list`` share.

:func:`~hermes.routing.report.build_report` turns each route into a
:class:`~hermes.routing.report.RouteStatus` with ``ready`` and ``missing``, and the routed tools'
availability checks (:mod:`hermes.tools.routed.availability`) read that same status, so a line that
says "active" and a tool marked ✓ can never disagree. Beyond selection and entitlement, this module
adds what only this machine can answer, offline and instantly:

* a local backend's programs (one of them on ``PATH`` of the environment given) and Python packages
  (found with ``importlib.util.find_spec``, never imported);
* whether any tool of this installation serves the route at all (``Category.tools``); a category
  without one is "not built yet", whatever its keys;
* whether the execution backend chosen by ``terminal.backend`` can run (:func:`backend_problem`): the
  terminal, process_manage, execute_code and the file tools act through it, so their availability
  checks ask it, and ``tools list`` never marks them ready for a backend that cannot start.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

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


def _table(config: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    terminal = config.get("terminal") if isinstance(config, Mapping) else None
    table = terminal.get(name) if isinstance(terminal, Mapping) else None
    return table if isinstance(table, Mapping) else {}


def backend_problem(config: Mapping[str, Any], env: Mapping[str, str], auth_path: Path | None) -> str | None:
    """What keeps ``terminal.backend`` from running commands now (None: it can), offline and instant.

    ``local``: nothing. ``modal``: the gateway route (login, entitlement, origin — the same answer as the
    Terminal line of ``portal info``). ``docker``: the ``docker`` package, and for a Unix-socket engine
    the socket. ``ssh``: the ``asyncssh`` package and ``terminal.ssh.host``. A backend from another
    package is not judged here (its own errors say what is missing when it starts).
    """
    from hermes.routing.terminal import chosen_backend, terminal_route

    backend = chosen_backend(config)
    if backend == "modal":
        from hermes.routing.credentials import load_credentials

        if auth_path is None:
            return "terminal.backend is modal, but no Nous Portal login can be read here"
        route = terminal_route(config, env, load_credentials(auth_path, env))
        return None if route.ready else (route.missing or route.message)
    if backend == "docker":
        if not _package_found("docker"):
            return "terminal.backend is docker but the docker package is not installed (pip install 'hermes[docker]')"
        base = str(_table(config, "docker").get("base_url") or env.get("DOCKER_HOST")
                   or os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock")
        if base.startswith("unix://") and not os.path.exists(base[len("unix://"):]):
            return (f"terminal.backend is docker but no Docker Engine is reachable: {base[len('unix://'):]} does "
                    "not exist (start the engine, or set terminal.docker.base_url or DOCKER_HOST)")
        return None
    if backend == "ssh":
        if not _package_found("asyncssh"):
            return "terminal.backend is ssh but the asyncssh package is not installed (pip install 'hermes[ssh]')"
        if not str(_table(config, "ssh").get("host") or "").strip():
            return ("terminal.backend is ssh but terminal.ssh.host is not set; run 'hermes setup terminal' "
                    "or 'hermes config set terminal.ssh.host HOST'")
    return None
