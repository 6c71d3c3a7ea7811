"""Finding video generation backends: built-in packages, plugin folders and entry points (REG-12).

Three sources, each giving one :class:`~hermes.plugins.video_gen.base.VideoBackend` per name:

1. **built-in**: every sub-package ``hermes/plugins/video_gen/<name>/`` exposing ``BACKEND``;
2. **plugin folders**: ``HERMES_HOME/plugins/video_gen/<name>/__init__.py`` exposing ``BACKEND`` (an
   instance, or a subclass of ``VideoBackend`` taking no arguments), imported under a private module name
   so it cannot shadow anything;
3. **entry points** of the group ``hermes.video_gen``: the object is a backend, a backend class, or a
   module exposing ``BACKEND``.

A built-in name cannot be taken over by a plugin; a plugin that fails to import, or exposes no backend,
is skipped with the reason kept in :attr:`Backends.errors`. Imports happen once per folder per process
(nothing is imported until a video tool or command asks), through the loader every plugin kind shares
(:mod:`hermes.plugins.loader`, also the tool plugins').
"""

from __future__ import annotations

import importlib
import logging
import pkgutil
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from hermes.plugins.loader import entry_points, import_file
from hermes.plugins.video_gen.base import VideoBackend

logger = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "hermes.video_gen"
PLUGIN_KIND = "video_gen"
NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,39}$")


@dataclass
class Backends:
    """The backends found, by name, with where each came from and what failed to load."""

    found: dict[str, VideoBackend] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)

    def get(self, name: str) -> VideoBackend | None:
        return self.found.get(name)

    def names(self) -> list[str]:
        return sorted(self.found)

    def _add(self, backend: VideoBackend, source: str) -> None:
        name = backend.name
        if not NAME.match(name):
            self.errors[source] = f"backend name {name!r} is not lower-case letters, digits, '-' or '_'"
            return
        held = self.sources.get(name)
        if held is not None:
            self.errors[source] = f"the name {name!r} is already taken by {held}"
            return
        self.found[name] = backend
        self.sources[name] = source


def _backend_of(obj: Any, where: str) -> VideoBackend:
    if isinstance(obj, ModuleType):
        obj = getattr(obj, "BACKEND", None)
    if isinstance(obj, type) and issubclass(obj, VideoBackend):
        obj = obj()
    if not isinstance(obj, VideoBackend):
        raise TypeError(f"{where} exposes no VideoBackend (set BACKEND = YourBackend())")
    return obj


_lock = threading.Lock()
_builtin: Backends | None = None
_folders: dict[Path, tuple[float, Backends]] = {}


def builtin_backends() -> Backends:
    """The backends shipped in this package (imported once)."""
    global _builtin
    with _lock:
        if _builtin is None:
            found = Backends()
            package = importlib.import_module("hermes.plugins.video_gen")
            for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
                if not info.ispkg:
                    continue
                module_name = f"hermes.plugins.video_gen.{info.name}"
                try:
                    found._add(_backend_of(importlib.import_module(module_name), module_name), "builtin")
                except Exception as exc:  # a broken built-in must not hide the others
                    found.errors[module_name] = f"{type(exc).__name__}: {exc}"
                    logger.warning("video backend %s skipped: %s", module_name, exc)
            _builtin = found
        return _builtin


def _load_folder(folder: Path, into: Backends) -> None:
    for path in sorted(folder.iterdir()) if folder.is_dir() else ():
        init = path / "__init__.py"
        if not init.is_file() or not NAME.match(path.name):
            continue
        source = f"plugin:{path.name}"
        module_name = f"_hermes_video_gen_plugin_{path.name.replace('-', '_')}"
        try:
            into._add(_backend_of(import_file(module_name, init), str(init)), source)
        except Exception as exc:
            into.errors[source] = f"{type(exc).__name__}: {exc}"
            logger.warning("video backend plugin %s skipped: %s", init, exc)


def _load_entry_points(into: Backends) -> None:
    for ep in entry_points(ENTRY_POINT_GROUP):
        source = f"entrypoint:{ep.name}"
        try:
            into._add(_backend_of(ep.load(), source), source)
        except Exception as exc:
            into.errors[source] = f"{type(exc).__name__}: {exc}"
            logger.warning("video backend entry point %s skipped: %s", ep.name, exc)


def find_backends(plugins_dir: Path | None) -> Backends:
    """Built-in backends, then those under ``plugins_dir/video_gen/`` (``HERMES_HOME/plugins``) and the
    entry points. A folder is read again when its modification time changes."""
    builtin = builtin_backends()
    folder = plugins_dir / PLUGIN_KIND if plugins_dir is not None else None
    try:
        stamp = folder.stat().st_mtime if folder is not None else 0.0
    except OSError:
        stamp = 0.0
    key = folder.resolve() if folder is not None else Path("/")
    with _lock:
        cached = _folders.get(key)
        if cached is not None and cached[0] == stamp:
            return cached[1]
    found = Backends(dict(builtin.found), dict(builtin.sources), dict(builtin.errors))
    if folder is not None:
        _load_folder(folder, found)
    _load_entry_points(found)
    with _lock:
        _folders[key] = (stamp, found)
    return found
