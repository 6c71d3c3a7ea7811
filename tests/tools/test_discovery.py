"""Finding tools without an import list (requirement REG-2, REG-12): built-in modules, plugin folders, entry points.

Plugin modules import the process-wide ``registry``, so plugin discovery is tested against it; the
``sandbox`` fixture removes whatever a test registered (tools, load errors, plugin modules) afterwards.
"""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes.tools.discovery import discover_builtin_tools, discover_plugins
from hermes.tools.registry import ToolRegistry, registry

# The seed's weather tool (seed 001) as a plugin module; only the registry import differs.
WEATHER_PLUGIN = (Path(__file__).parents[1] / "data" / "weather_tool.py").read_text(encoding="utf-8")


def tool_module(name: str, *, before: str = "", after: str = "", toolset: str | None = None) -> str:
    """Source of a plugin module registering a trivial tool ``name``."""
    return textwrap.dedent(
        f"""
        import json
        from hermes.tools.registry import registry
        {before}
        registry.register(
            name={name!r},
            toolset={(toolset or name)!r},
            schema={{"name": {name!r}, "description": "test tool",
                     "parameters": {{"type": "object", "properties": {{}}}}}},
            handler=lambda args, **kw: json.dumps({{"tool": {name!r}}}),
        )
        {after}
        """
    )


def write(path: Path, source: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source, encoding="utf-8")
    return path


def plugin_modules() -> set[str]:
    return {m for m in sys.modules if m == "hermes_plugins" or m.startswith("hermes_plugins.")}


@pytest.fixture
def sandbox() -> Iterator[ToolRegistry]:
    """The global registry (built-in tools discovered), restored after the test."""
    discover_builtin_tools(registry)  # part of the baseline: built-in modules import only once per process
    names = set(registry.names())
    errors = dict(registry.load_errors)
    modules = plugin_modules()
    yield registry
    for name in set(registry.names()) - names:
        registry.unregister(name)
    registry.load_errors.clear()
    registry.load_errors.update(errors)
    registry.current_source = "builtin"
    registry.invalidate_checks()
    for module in plugin_modules() - modules:
        sys.modules.pop(module, None)


@pytest.fixture
def plugins(tmp_path: Path) -> Path:
    folder = tmp_path / "plugins"
    folder.mkdir()
    return folder


# -- built-in tools -------------------------------------------------------------------------------------
def test_builtin_discovery_finds_todo_list(sandbox: ToolRegistry) -> None:
    from hermes.tools.registry import discover_builtin_tools as discover_global

    assert "hermes.tools.todo.tool" in sys.modules  # imported by the discovery the sandbox ran
    entry = sandbox.get("todo_list")
    assert entry is not None
    assert (entry.toolset, entry.source) == ("todo", "builtin")
    assert "hermes.tools.todo.tool" not in sandbox.load_errors
    assert discover_global() == [], "discovery runs once per registry"
    assert discover_builtin_tools(sandbox) == []


def test_a_registry_of_its_own_gets_the_builtin_tools(sandbox: ToolRegistry) -> None:
    own = ToolRegistry()
    discover_builtin_tools(own)
    assert own.names() == [e.name for e in sandbox.entries() if e.source == "builtin"]
    assert own.get("todo_list") is sandbox.get("todo_list")


def test_a_plugin_loads_into_the_registry_asked_for(sandbox: ToolRegistry, plugins: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    write(plugins / "weather" / "weather_tool.py", WEATHER_PLUGIN)
    monkeypatch.setenv("WEATHER_API_KEY", "weather-key-0123456789")
    own = ToolRegistry()
    assert discover_plugins(own, plugins, entry_points=False) == ["hermes_plugins.weather.weather_tool"]
    entry = own.get("weather")
    assert entry is not None and entry.source == "plugin:weather"
    assert json.loads(own.dispatch("weather", {"location": "Oslo"}))["location"] == "Oslo"


# -- plugin folders -----------------------------------------------------------------------------------
def test_seed_weather_plugin_is_discovered_and_dispatchable(
    sandbox: ToolRegistry, plugins: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(plugins / "weather" / "weather_tool.py", WEATHER_PLUGIN)
    monkeypatch.setenv("WEATHER_API_KEY", "weather-key-0123456789")
    loaded = discover_plugins(sandbox, plugins, entry_points=False)
    assert loaded == ["hermes_plugins.weather.weather_tool"]
    entry = sandbox.get("weather")
    assert entry is not None
    assert (entry.source, entry.toolset, entry.requires_env) == ("plugin:weather", "weather", ("WEATHER_API_KEY",))
    assert sandbox.current_source == "builtin", "the source is reset after each plugin"
    assert sandbox.toolsets()["weather"] == ["weather"]
    assert json.loads(sandbox.dispatch("weather", {"location": "London"})) == {
        "location": "London", "temp": 22, "units": "metric",
    }
    assert "plugin:weather" not in sandbox.load_errors


def test_a_seed_style_plugin_loads_unchanged(sandbox: ToolRegistry, plugins: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The seed's file imports ``tools.registry``; it loads as it is, and no alias stays behind (here, where
    ``tools`` is this test folder's package, only its ``registry`` submodule is answered for)."""
    seed = Path(__file__).resolve().parent.parent / "data" / "seed_weather_tool.py"
    assert "from tools.registry import registry" in seed.read_text()
    write(plugins / "weather" / "weather_tool.py", seed.read_text())
    monkeypatch.setenv("WEATHER_API_KEY", "weather-key-0123456789")
    assert discover_plugins(sandbox, plugins, entry_points=False) == ["hermes_plugins.weather.weather_tool"]
    assert "plugin:weather" not in sandbox.load_errors
    assert json.loads(sandbox.dispatch("weather", {"location": "Rome"})) == {
        "location": "Rome", "temp": 22, "units": "metric"}
    assert "tools.registry" not in sys.modules


def test_plugin_tool_without_its_key_is_unavailable(
    sandbox: ToolRegistry, plugins: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("WEATHER_API_KEY", raising=False)
    write(plugins / "weather" / "weather_tool.py", WEATHER_PLUGIN)
    discover_plugins(sandbox, plugins, entry_points=False)
    assert sandbox.definitions(["weather"]) == []
    message = json.loads(sandbox.dispatch("weather", {"location": "London"}))["error"]
    assert "not available" in message and "WEATHER_API_KEY" in message


@pytest.mark.parametrize(
    "broken",
    [
        tool_module("broken_tool", before='raise ImportError("needs libweather >= 2")'),
        tool_module("broken_tool", before="import hermes_test_module_that_does_not_exist"),
        tool_module("broken_tool", before="def oops(: pass"),
    ],
    ids=["raises-ImportError", "missing-dependency", "syntax-error"],
)
def test_broken_plugin_is_skipped_and_the_rest_load(
    sandbox: ToolRegistry, plugins: Path, monkeypatch: pytest.MonkeyPatch, broken: str
) -> None:
    monkeypatch.setenv("WEATHER_API_KEY", "weather-key-0123456789")
    write(plugins / "aaa_broken" / "broken_tool.py", broken)  # sorts before the good plugin
    write(plugins / "weather" / "weather_tool.py", WEATHER_PLUGIN)
    loaded = discover_plugins(sandbox, plugins, entry_points=False)
    assert loaded == ["hermes_plugins.weather.weather_tool"]
    reason = sandbox.load_errors["plugin:aaa_broken"]
    assert reason.split(":")[0] in {"ImportError", "ModuleNotFoundError", "SyntaxError"}
    assert "broken_tool" not in sandbox
    assert json.loads(sandbox.dispatch("weather", {"location": "Oslo"}))["temp"] == 22
    assert not any(m.startswith("hermes_plugins.aaa_broken") for m in sys.modules)


def test_plugin_cannot_replace_a_builtin_tool(sandbox: ToolRegistry, plugins: Path) -> None:
    builtin = sandbox.get("todo_list")
    assert builtin is not None and builtin.source == "builtin"
    write(plugins / "evil" / "evil_tool.py", tool_module("todo_list", toolset="evil"))
    write(plugins / "fine" / "fine_tool.py", tool_module("fine_tool"))
    discover_plugins(sandbox, plugins, entry_points=False)
    assert sandbox.get("todo_list") is builtin
    reason = sandbox.load_errors["plugin:evil"]
    assert "ValueError" in reason and "todo_list" in reason and "plugin:evil" in reason
    fine = sandbox.get("fine_tool")
    assert fine is not None and fine.source == "plugin:fine"


def test_single_file_and_package_plugins(sandbox: ToolRegistry, plugins: Path) -> None:
    write(plugins / "hello.py", tool_module("hello_tool"))
    write(plugins / "pkg" / "__init__.py", tool_module("pkg_init_tool"))
    write(plugins / "pkg" / "helpers.py", "VALUE = 41\n")
    write(plugins / "pkg" / "extra_tool.py", tool_module("pkg_extra_tool", before="from .helpers import VALUE"))
    loaded = discover_plugins(sandbox, plugins, entry_points=False)
    assert set(loaded) == {"hermes_plugins.hello", "hermes_plugins.pkg", "hermes_plugins.pkg.extra_tool"}
    sources = {n: sandbox.get(n).source for n in ("hello_tool", "pkg_init_tool", "pkg_extra_tool")}  # type: ignore[union-attr]
    assert sources == {"hello_tool": "plugin:hello", "pkg_init_tool": "plugin:pkg", "pkg_extra_tool": "plugin:pkg"}
    assert json.loads(sandbox.dispatch("hello_tool", {})) == {"tool": "hello_tool"}


def test_modules_that_do_not_register_are_not_imported(sandbox: ToolRegistry, plugins: Path) -> None:
    write(plugins / "quiet" / "helper.py", "raise RuntimeError('must not be imported')\n")
    write(plugins / "quiet" / "quiet_tool.py", tool_module("quiet_tool"))
    discover_plugins(sandbox, plugins, entry_points=False)
    assert "quiet_tool" in sandbox
    assert "plugin:quiet" not in sandbox.load_errors


def test_backend_folders_and_hidden_entries_are_skipped(sandbox: ToolRegistry, plugins: Path) -> None:
    write(plugins / "video_gen" / "xai" / "backend.py", tool_module("xai_backend_tool"))
    write(plugins / "video_gen" / "backend_tool.py", tool_module("video_gen_backend_tool"))
    write(plugins / ".hidden" / "h_tool.py", tool_module("hidden_tool"))
    write(plugins / "_private" / "p_tool.py", tool_module("private_tool"))
    assert discover_plugins(sandbox, plugins, entry_points=False) == []
    for name in ("xai_backend_tool", "video_gen_backend_tool", "hidden_tool", "private_tool"):
        assert name not in sandbox


def test_missing_plugins_folder_is_fine(sandbox: ToolRegistry, tmp_path: Path) -> None:
    before = sandbox.names()
    assert discover_plugins(sandbox, tmp_path / "nope", entry_points=False) == []
    assert discover_plugins(sandbox, None, entry_points=False) == []
    assert sandbox.names() == before


def test_plugin_failing_after_registering_leaves_no_tools(sandbox: ToolRegistry, plugins: Path) -> None:
    write(plugins / "half" / "half_tool.py", tool_module("half_tool", after='raise RuntimeError("config missing")'))
    discover_plugins(sandbox, plugins, entry_points=False)
    assert "RuntimeError: config missing" in sandbox.load_errors["plugin:half"]
    assert "half_tool" not in sandbox


def test_plugin_folder_module_can_import_a_sibling(sandbox: ToolRegistry, plugins: Path) -> None:
    write(plugins / "multi" / "client.py", "def fetch():\n    return 'ok'\n")
    write(plugins / "multi" / "multi_tool.py", tool_module("multi_tool", before="from .client import fetch"))
    discover_plugins(sandbox, plugins, entry_points=False)
    assert "plugin:multi" not in sandbox.load_errors
    assert "multi_tool" in sandbox


# -- entry points ----------------------------------------------------------------------------------------
def install_distribution(root: Path, entry_points: str, modules: dict[str, str]) -> None:
    dist = root / "hermes_test_plugins-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: hermes-test-plugins\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(entry_points)
    for name, source in modules.items():
        (root / f"{name}.py").write_text(source)


def test_entry_point_plugins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = tmp_path / "site"
    install_distribution(
        site,
        "[hermes.plugins]\n"
        "ep_callable = hermes_ep_callable_mod:setup\n"
        "ep_broken = hermes_ep_module_that_does_not_exist:setup\n",
        {
            "hermes_ep_callable_mod": textwrap.dedent(
                """
                def setup(registry):
                    registry.register(
                        name="ep_tool", toolset="ep",
                        schema={"name": "ep_tool", "parameters": {"type": "object", "properties": {}}},
                        handler=lambda args, **kw: '{"from": "entry point"}',
                    )
                """
            )
        },
    )
    monkeypatch.syspath_prepend(str(site))
    reg = ToolRegistry()
    try:
        loaded = discover_plugins(reg, None, entry_points=True)
    finally:
        sys.modules.pop("hermes_ep_callable_mod", None)
    assert "entrypoint:ep_callable" in loaded
    entry = reg.get("ep_tool")
    assert entry is not None and entry.source == "entrypoint:ep_callable"
    assert json.loads(reg.dispatch("ep_tool", {})) == {"from": "entry point"}
    assert "ModuleNotFoundError" in reg.load_errors["entrypoint:ep_broken"]
    assert "entrypoint:ep_broken" not in loaded
    assert reg.current_source == "builtin"


def test_discovery_and_availability_import_no_network_or_async_stack() -> None:
    """Start-up finds every tool and checks which can run without importing asyncio, http.client, ssl or
    httpx: those cost a tenth of a second at each start on a slow machine and are imported where used."""
    import subprocess

    script = textwrap.dedent(
        """
        import sys
        from hermes.tools.discovery import discover_builtin_tools
        from hermes.tools.registry import registry
        from hermes.tools.toolsets import Surface, resolve_toolsets
        discover_builtin_tools(registry)
        resolved = resolve_toolsets(Surface.ONESHOT, None, disabled=(), registered=registry.toolsets())
        [registry.is_available(t) for t in resolved.tools if t in registry]
        print(sorted(m for m in ("asyncio", "http.client", "ssl", "httpx") if m in sys.modules))
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip().splitlines()[-1] == "[]"
