"""Loading plugin code: the one file importer and entry-point pre-check that every plugin kind uses.

Tool plugins (:mod:`hermes.tools.discovery`: ``HERMES_HOME/plugins/<name>/`` and the ``hermes.plugins``
entry points) and backend plugins (:mod:`hermes.plugins.video_gen.discovery`:
``HERMES_HOME/plugins/video_gen/<name>/`` and ``hermes.video_gen``) import a plugin's files and look up
its entry points the same way, through these functions:

* :func:`import_file` imports one file under a module name of the caller's choosing (a package when the
  file is an ``__init__.py``, so the plugin's own modules can import each other relatively); a file that
  fails leaves nothing behind in ``sys.modules``;
* :func:`any_distribution_declares` says, without importlib.metadata (about ten milliseconds at every
  start), whether any installed distribution declares an entry point group at all;
* :func:`entry_points` lists that group's entry points (empty, cheaply, when none declares it).
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any


def import_file(modname: str, path: Path) -> ModuleType:
    """Import ``path`` as ``modname`` (registered in ``sys.modules``; removed again when it raises)."""
    spec = importlib.util.spec_from_file_location(
        modname, path, submodule_search_locations=[str(path.parent)] if path.name == "__init__.py" else None
    )
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[modname] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(modname, None)
        raise
    return module


def any_distribution_declares(group: str) -> bool:
    """A cheap pre-check: does any installed distribution's entry_points.txt name ``group``?

    Importing importlib.metadata and scanning with it costs ~10 ms; reading the few entry_points.txt
    files directly costs well under one, and in the common case (no plugin packages) is all we need.
    """
    marker = f"[{group}]".encode()
    for entry in sys.path:
        try:
            with os.scandir(entry or ".") as it:
                folders = [d.path for d in it if d.name.endswith((".dist-info", ".egg-info"))]
        except OSError:
            continue
        for folder in folders:
            try:  # plain open and bytes: most folders have no entry_points.txt, and this runs at every start
                with open(os.path.join(folder, "entry_points.txt"), "rb") as fh:
                    if marker in fh.read():
                        return True
            except OSError:
                continue
    return False


def entry_points(group: str) -> list[Any]:
    """The entry points of ``group`` (``importlib.metadata.EntryPoint``), read only when one is declared."""
    if not any_distribution_declares(group):
        return []
    from importlib.metadata import entry_points as _entry_points

    return list(_entry_points(group=group))
