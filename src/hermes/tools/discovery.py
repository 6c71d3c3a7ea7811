"""Finding tools without an import list (requirement REG-2, REG-12).

* Built-in tools: every module inside a family package of ``hermes.tools`` (``hermes/tools/<family>/``)
  whose source calls ``registry.register(`` or uses ``@registry.tool`` at top level is imported at
  start-up. Only the source text is scanned before importing, so helper modules cost nothing.
* Plugins: Python entry points in the group ``hermes.plugins`` (the object is a module that registers
  on import, or a callable taking the registry), and folders ``HERMES_HOME/plugins/<name>/`` holding
  modules that call ``registry.register(...)`` at top level. ``plugins/<kind>/<name>/`` backend folders
  (e.g. ``plugins/video_gen/xai/``) are left to the feature that loads that kind of backend.

A module that fails to import is skipped with the reason logged and kept in
``registry.load_errors``; the rest of the registry is unaffected.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import re
import sys
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

from hermes.plugins.loader import entry_points as plugin_entry_points
from hermes.plugins.loader import import_file
from hermes.tools.registry import ToolRegistry
from hermes.tools.registry import registry as global_registry

logger = logging.getLogger(__name__)

#: what a registering module has at the start of a line: ``registry.register(`` or ``@registry.tool``
_REGISTER_CALL = "registry.register("
_REGISTER_DECORATOR = "@registry.tool"
ENTRY_POINT_GROUP = "hermes.plugins"
#: plugin sub-folders holding backends for one feature rather than tools
BACKEND_KINDS = frozenset({"video_gen"})

_discovered: weakref.WeakSet[ToolRegistry] = weakref.WeakSet()
_plugins_loaded: weakref.WeakKeyDictionary[ToolRegistry, set[str]] = weakref.WeakKeyDictionary()


@contextmanager
def _loading(registry: ToolRegistry, source: str) -> Iterator[None]:
    """Register under ``source``; if loading fails, take back every tool it registered."""
    targets = {id(r): r for r in (registry, global_registry)}.values()
    before = {id(r): set(r.names()) for r in targets}
    for r in targets:
        r.current_source = source
    try:
        yield
    except BaseException:
        for r in targets:
            for name in set(r.names()) - before[id(r)]:
                r.unregister(name)
        raise
    else:  # tool modules register into the process-wide catalog; honour the registry asked for
        if registry is not global_registry:
            for name in sorted(set(global_registry.names()) - before[id(global_registry)]):
                entry = global_registry.get(name)
                if entry is not None and name not in registry:
                    registry.add(entry)
    finally:
        for r in targets:
            r.current_source = "builtin"


def _record_failure(registry: ToolRegistry, key: str, what: str, exc: BaseException) -> None:
    registry.load_errors[key] = f"{type(exc).__name__}: {exc}"
    logger.warning("%s skipped: %s: %s", what, type(exc).__name__, exc)


def _registers_at_top_level(path: Path) -> bool:
    """Whether a line of the source starts with a registration (a plain scan, no import).

    This reads every module of every tool family at each start-up, so it avoids a regular expression
    (about ten times slower over half a megabyte of source) and decodes only the files that mention
    the registry at all.
    """
    try:
        data = path.read_bytes()
    except OSError:
        return False
    if b"registry.register(" not in data and b"@registry.tool" not in data:
        return False
    text = data.decode("utf-8")
    return _starts_a_line(text, _REGISTER_CALL) or _starts_a_line(text, _REGISTER_DECORATOR, whole_word=True)


def _starts_a_line(text: str, token: str, *, whole_word: bool = False) -> bool:
    at = text.find(token)
    while at != -1:
        after = text[at + len(token) : at + len(token) + 1]
        if (at == 0 or text[at - 1] == "\n") and not (whole_word and (after.isalnum() or after == "_")):
            return True
        at = text.find(token, at + 1)
    return False


def discover_builtin_tools(registry: ToolRegistry) -> list[str]:
    """Import the built-in tool modules once per registry; returns the module names imported."""
    if registry in _discovered:
        return []
    if registry is not global_registry:
        # the modules register into the process-wide catalog once; another registry gets their entries
        names = discover_builtin_tools(global_registry)
        _discovered.add(registry)
        for entry in global_registry.entries():
            if entry.source == "builtin" and entry.name not in registry:
                registry.add(entry)
        registry.load_errors.update(global_registry.load_errors)
        return names
    _discovered.add(registry)
    import hermes.tools as pkg

    root = Path(pkg.__file__).parent
    imported: list[str] = []
    for family in sorted(p for p in root.iterdir() if p.is_dir() and (p / "__init__.py").exists()):
        for path in sorted(family.glob("*.py")):
            if not _registers_at_top_level(path):
                continue
            modname = f"hermes.tools.{family.name}" + ("" if path.stem == "__init__" else f".{path.stem}")
            try:
                with _loading(registry, "builtin"):
                    importlib.import_module(modname)
                imported.append(modname)
            except Exception as exc:
                _record_failure(registry, modname, f"tool module {modname}", exc)
    return imported


#: what an upstream-style tool file writes to reach the registry (the seed's ``from tools.registry import
#: registry``); such a file loads unchanged as a plugin
_SEED_IMPORTS = (b"from tools.registry import", b"import tools.registry", b"from tools import registry")


@contextmanager
def _seed_style_imports(path: Path) -> Iterator[None]:
    """While an upstream-style plugin file is imported, ``tools.registry`` is this registry's module.

    Only for that import and only when the file asks for it; a ``tools`` package that is already
    imported stays (only its ``registry`` submodule is answered for, when it has none loaded), and
    nothing stays in ``sys.modules`` afterwards.
    """
    try:
        wants = any(marker in path.read_bytes() for marker in _SEED_IMPORTS)
    except OSError:
        wants = False
    if not wants or "tools.registry" in sys.modules:
        yield
        return
    import hermes.tools.registry as registry_module

    added: dict[str, ModuleType] = {"tools.registry": registry_module}
    if "tools" not in sys.modules:
        shim = ModuleType("tools", "upstream-style imports of hermes plugins (tools.registry)")
        shim.__path__ = []
        added["tools"] = shim
    sys.modules.update(added)
    try:
        yield
    finally:
        for name, module in added.items():
            if sys.modules.get(name) is module:
                del sys.modules[name]


def _load_plugin_folder(registry: ToolRegistry, folder: Path) -> list[str]:
    name = folder.name
    pkgname = f"hermes_plugins.{re.sub(r'[^0-9A-Za-z_]', '_', name)}"
    loaded: list[str] = []
    init = folder / "__init__.py"
    if init.exists():
        import_file(pkgname, init)
        loaded.append(pkgname)
    else:
        # a package without __init__.py, so the plugin's modules can import each other relatively
        package = ModuleType(pkgname)
        package.__path__ = [str(folder)]
        package.__package__ = pkgname
        sys.modules[pkgname] = package
    for path in sorted(folder.glob("*.py")):
        if path.name == "__init__.py" or not _registers_at_top_level(path):
            continue
        modname = f"{pkgname}.{path.stem}"
        sys.modules.pop(modname, None)
        with _seed_style_imports(path):
            import_file(modname, path)
        loaded.append(modname)
    return loaded


def discover_plugins(registry: ToolRegistry, plugins_dir: Path | None, *, entry_points: bool = True) -> list[str]:
    """Load plugin tools once per registry and folder; a broken plugin is skipped with its reason recorded."""
    seen = _plugins_loaded.setdefault(registry, set())
    if str(plugins_dir) in seen:
        return []
    seen.add(str(plugins_dir))
    loaded: list[str] = []
    if "hermes_plugins" not in sys.modules:
        ns = ModuleType("hermes_plugins")
        ns.__path__ = []
        sys.modules["hermes_plugins"] = ns
    if plugins_dir is not None and plugins_dir.is_dir():
        for item in sorted(plugins_dir.iterdir()):
            if item.name.startswith((".", "_")) or item.name in BACKEND_KINDS:
                continue
            if not item.is_dir() and item.suffix != ".py":
                continue
            source = f"plugin:{item.stem}"
            try:
                with _loading(registry, source):
                    if item.is_dir():
                        loaded += _load_plugin_folder(registry, item)
                    else:
                        modname = f"hermes_plugins.{re.sub(r'[^0-9A-Za-z_]', '_', item.stem)}"
                        import_file(modname, item)
                        loaded.append(modname)
            except Exception as exc:
                prefix = f"hermes_plugins.{re.sub(r'[^0-9A-Za-z_]', '_', item.stem)}"
                for modname in [m for m in sys.modules if m == prefix or m.startswith(prefix + ".")]:
                    del sys.modules[modname]
                _record_failure(registry, source, f"plugin {item}", exc)
    if entry_points:
        for ep in plugin_entry_points(ENTRY_POINT_GROUP):
            source = f"entrypoint:{ep.name}"
            try:
                with _loading(registry, source):
                    obj = ep.load()
                    if callable(obj):
                        obj(registry)
                loaded.append(source)
            except Exception as exc:
                _record_failure(registry, source, f"plugin entry point {ep.name}", exc)
    return loaded
