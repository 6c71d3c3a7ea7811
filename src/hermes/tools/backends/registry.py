"""Which plugin serves a ``terminal.backend`` value, and the settings it is built with.

Built in: ``local`` (default), ``ssh``, ``docker``, ``modal``. Other packages add backends through the
``hermes.backends`` entry point group (``name = "package.module:Class"``, a subclass of
:class:`~.base.Backend`). A backend's settings are the table ``terminal.<name>`` of config.yaml.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from hermes.errors import ConfigError
from hermes.tools.backends.base import Backend

DEFAULT = "local"
BUILT_IN: dict[str, str] = {
    "local": "hermes.tools.backends.local:LocalBackend",
    "ssh": "hermes.tools.backends.ssh:SSHBackend",
    "docker": "hermes.tools.backends.docker:DockerBackend",
    "modal": "hermes.tools.backends.modal:ModalBackend",
}
ENTRY_POINT_GROUP = "hermes.backends"


def plugins() -> dict[str, str]:
    """Every backend name and where its class lives (built-in names win over plugins)."""
    from importlib.metadata import entry_points

    found = {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}
    return {**found, **BUILT_IN}


def chosen_name(config: Any) -> str:
    """``terminal.backend`` of a config (anything with ``get(dotted_key)``), ``local`` when unset."""
    value = config.get("terminal.backend") if config is not None else None
    name = str(value).strip().lower() if value not in (None, "") else DEFAULT
    return name


def backend_class(name: str) -> type[Backend]:
    """The class of backend ``name``; a ConfigError naming the known ones for anything else."""
    known = plugins()
    target = known.get(name)
    if target is None:
        raise ConfigError(f"terminal.backend in config.yaml must be one of: {', '.join(sorted(known))}; got {name!r}")
    module_name, _, attr = target.partition(":")
    try:
        cls = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"the {name} backend cannot be loaded ({exc}); see docs/backends.md for what it needs") \
            from None
    if not (isinstance(cls, type) and issubclass(cls, Backend)):
        raise ConfigError(f"the {name} backend ({target}) is not a hermes Backend class")
    return cls


def settings_for(config: Any, name: str) -> dict[str, Any]:
    """The table ``terminal.<name>`` of a config (empty when missing)."""
    table = config.get(f"terminal.{name}") if config is not None else None
    return dict(table) if isinstance(table, Mapping) else {}


def build(config: Any, name: str | None = None) -> Backend:
    """A new backend for ``name`` (default: the config's ``terminal.backend``) with its settings."""
    chosen = name or chosen_name(config)
    return backend_class(chosen)(settings_for(config, chosen))
