"""A project laid over a session's configuration: what the file tools and the terminal read while it is open.

:func:`project_settings` returns settings whose ``config`` answers four keys from the project and
everything else from the configuration underneath (read live, so later changes still reach the session):

* ``file.allowed_roots`` — the project's folders (the file tools write only inside them);
* ``terminal.cwd`` — its first folder (commands start there);
* ``sandbox.writable_paths`` — the configured ones plus its other folders (sandboxed commands may write
  in every folder of the project, not only the first);
* ``sandbox.folder_identities`` — each folder's (device, inode) from when the person approved it: the
  sandbox leaves a folder read-only that resolves elsewhere or is another folder now
  (:func:`hermes.tools.sandbox.changed_folder`).

The layer is never written to config.yaml: saving it is refused.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from hermes.config.yamlfile import ConfigFile
from hermes.errors import ConfigError

if TYPE_CHECKING:
    from hermes.config.settings import Settings
    from hermes.tools.project.store import Project

_MISSING = object()


class LayeredConfig(ConfigFile):
    """``base``'s configuration with some dotted keys answered by ``layer`` (see the module docstring)."""

    def __init__(self, base: Settings, layer: dict[str, Any]) -> None:
        super().__init__(base.config.path)
        self.base = base
        self.layer = layer

    @property
    def data(self) -> dict[str, Any]:
        merged: dict[str, Any] = copy.deepcopy(dict(self.base.config.data))
        for key, value in self.layer.items():
            node = merged
            *parents, leaf = key.split(".")
            for part in parents:
                child = node.get(part)
                if not isinstance(child, dict):
                    child = node[part] = {}
                node = child
            node[leaf] = copy.deepcopy(value)
        return merged

    def get(self, key: str, default: Any = None) -> Any:
        if key in self.layer:
            return copy.deepcopy(self.layer[key])
        if any(k.startswith(f"{key}.") for k in self.layer):
            return ConfigFile(self.path, self.data).get(key, default)
        return self.base.config.get(key, default)

    def set(self, key: str, value: Any) -> None:
        raise ConfigError("a project's workspace is not config.yaml; change the configuration itself")

    def save(self) -> None:
        raise ConfigError("a project's workspace is not config.yaml; it is never saved")


def project_settings(base: Settings, project: Project) -> Settings:
    """``base`` with ``project`` laid over it (see the module docstring)."""
    from dataclasses import replace

    writable = base.config.get("sandbox.writable_paths")
    extra = [str(w) for w in writable] if isinstance(writable, list) else []
    layer = {"file.allowed_roots": list(project.folders), "terminal.cwd": project.primary,
             "sandbox.writable_paths": [*extra, *(f for f in project.folders[1:] if f not in extra)],
             "sandbox.folder_identities": {f: list(i) for f, i in project.pins().items()}}
    return replace(base, config=LayeredConfig(base, layer))
