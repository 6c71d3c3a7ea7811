"""`hermes tools list/enable/disable` against real plugin folders and config files in HERMES_HOME."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from ruamel.yaml import YAML

DATA = Path(__file__).parents[1] / "data"

def hermes(home: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if k not in ("WEATHER_API_KEY", "HERMES_KANBAN_TASK")}
    full_env["HERMES_HOME"] = str(home)
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "hermes", *args], capture_output=True, text=True,
                          env=full_env, timeout=60)


def install_weather(home: Path) -> None:
    folder = home / "plugins" / "weather"
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(DATA / "weather_tool.py", folder / "weather_tool.py")


def line_of(output: str, start: str) -> str:
    matches = [line for line in output.splitlines() if line.strip().startswith(start)]
    assert matches, f"no line starting with {start!r} in:\n{output}"
    return matches[0].strip()


def config(home: Path) -> dict[str, object]:
    data = YAML(typ="safe").load((home / "config.yaml").read_text(encoding="utf-8")) or {}
    assert isinstance(data, dict)
    return data


def test_weather_plugin_unavailable_then_available(hermes_home: Path) -> None:
    """The seed's weather plugin: ✗ with the missing variable, then ✓ once the key is in .env."""
    install_weather(hermes_home)
    proc = hermes(hermes_home, "tools", "list")
    assert proc.returncode == 0, proc.stderr
    assert line_of(proc.stdout, "on        weather").startswith("on        weather          from plugin:weather")
    assert line_of(proc.stdout, "✗ weather") == "✗ weather — unavailable: missing WEATHER_API_KEY"
    assert "Changes apply from the next session" in proc.stdout

    set_env = hermes(hermes_home, "config", "set-env", "WEATHER_API_KEY", "weather-secret-1")
    assert set_env.returncode == 0, set_env.stderr
    proc = hermes(hermes_home, "tools", "list")
    assert line_of(proc.stdout, "✓ weather") == "✓ weather"
    assert "weather-secret-1" not in proc.stdout
    # an exported variable counts too
    (hermes_home / ".env").unlink()
    proc = hermes(hermes_home, "tools", "list", env={"WEATHER_API_KEY": "exported"})
    assert line_of(proc.stdout, "✓ weather") == "✓ weather"


def test_broken_plugin_is_listed_and_others_still_load(hermes_home: Path) -> None:
    install_weather(hermes_home)
    broken = hermes_home / "plugins" / "broken"
    broken.mkdir()
    (broken / "tool.py").write_text("import no_such_module_xyz\nregistry.register(\n")
    proc = hermes(hermes_home, "tools", "list")
    assert proc.returncode == 0, proc.stderr
    assert "Failed to load" in proc.stdout
    assert line_of(proc.stdout, "plugin:broken:").startswith("plugin:broken: ")
    assert "✗ weather" in proc.stdout and "✓ todo_list" in proc.stdout


def test_enable_opt_in_toolset_creates_toolsets_list(hermes_home: Path) -> None:
    proc = hermes(hermes_home, "tools", "enable", "video")
    assert proc.returncode == 0, proc.stderr
    assert "Enabled video" in proc.stdout and "next session" in proc.stdout
    assert config(hermes_home)["toolsets"] == ["hermes-cli", "video"]
    listing = hermes(hermes_home, "tools", "list", "--all").stdout
    assert line_of(listing, "on        video").startswith("on        video")
    assert "Session toolsets: hermes-cli, video" in listing
    # enabling it again changes nothing
    assert "is enabled" in hermes(hermes_home, "tools", "enable", "video").stdout
    assert config(hermes_home)["toolsets"] == ["hermes-cli", "video"]


def test_enable_appends_to_existing_list_keeping_comments(hermes_home: Path) -> None:
    text = "# mine\ntoolsets: [web, file]  # small\nmodel:\n  name: m   # keep\n"
    (hermes_home / "config.yaml").write_text(text)
    assert hermes(hermes_home, "tools", "enable", "memory").returncode == 0
    after = (hermes_home / "config.yaml").read_text()
    assert after.startswith("# mine\ntoolsets: [web, file, memory]")
    assert after.endswith("model:\n  name: m   # keep\n")


def test_disable_then_enable_round_trip(hermes_home: Path) -> None:
    install_weather(hermes_home)
    proc = hermes(hermes_home, "tools", "disable", "memory", "weather")
    assert proc.returncode == 0, proc.stderr
    assert config(hermes_home)["agent"] == {"disabled_toolsets": ["memory", "weather"]}
    listing = hermes(hermes_home, "tools", "list").stdout
    assert line_of(listing, "disabled  memory").startswith("disabled  memory")
    assert line_of(listing, "disabled  weather").startswith("disabled  weather")
    assert "Session toolsets: hermes-cli\n" in listing

    proc = hermes(hermes_home, "tools", "enable", "memory", "weather")
    assert proc.returncode == 0, proc.stderr
    # memory's tool comes with hermes-cli and plugin toolsets are on by default: no toolsets: entry
    assert config(hermes_home) == {}
    listing = hermes(hermes_home, "tools", "list").stdout
    assert "Session toolsets: hermes-cli, weather" in listing


def test_unknown_toolset_lists_known_ones(hermes_home: Path) -> None:
    proc = hermes(hermes_home, "tools", "enable", "nosuch")
    assert proc.returncode == 1
    assert "hermes: error: unknown toolset(s): nosuch. Known toolsets:" in proc.stderr
    assert "video" in proc.stderr and "web" in proc.stderr
    assert not (hermes_home / "config.yaml").exists()
    assert hermes(hermes_home, "tools", "disable", "nosuch").returncode == 1


def test_surface_gating_is_reported(hermes_home: Path) -> None:
    (hermes_home / "config.yaml").write_text("toolsets: [hermes-cli, catalog]\n")
    cli = hermes(hermes_home, "tools", "list").stdout
    assert line_of(cli, "dropped   catalog").endswith("not available on the cli surface")
    desktop = hermes(hermes_home, "tools", "list", "--surface", "desktop").stdout
    assert "Session toolsets: hermes-cli, catalog, desktop_ui" in desktop
    # catalog cannot be given to CLI sessions: enable does not add it to toolsets:
    (hermes_home / "config.yaml").write_text("agent:\n  disabled_toolsets: [catalog]\n")
    proc = hermes(hermes_home, "tools", "enable", "catalog")
    assert "only given to sessions on: desktop" in proc.stdout
    assert config(hermes_home) == {}


def test_subcommands_are_extensible() -> None:
    """Another command (e.g. `tools set CATEGORY VENDOR`) plugs into the same subparser table."""
    from hermes.cli import tools

    def conf(p: argparse.ArgumentParser) -> None:
        p.add_argument("category")

    def run(args: argparse.Namespace) -> int:
        return 7 if args.category == "web" else 0

    original = dict(tools.SUBCOMMANDS)
    try:
        tools.SUBCOMMANDS["set"] = ("choose a vendor", conf, run)
        parser = argparse.ArgumentParser()
        tools.configure(parser)
        assert tools.run(parser.parse_args(["set", "web"])) == 7
        assert parser.parse_args([]).tools_command is None
    finally:
        tools.SUBCOMMANDS.clear()
        tools.SUBCOMMANDS.update(original)
    assert original == tools.SUBCOMMANDS


@pytest.mark.parametrize("surface", ["cli", "tui", "oneshot", "cron", "kanban", "messaging", "desktop"])
def test_every_surface_lists(hermes_home: Path, surface: str) -> None:
    proc = hermes(hermes_home, "tools", "list", "--surface", surface, "--all")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"Surface: {surface} — default bundle hermes-{surface}")


def test_toolsets_doc_matches_the_table() -> None:
    """docs/toolsets.md holds the output of scripts/gen_toolsets_doc.py for the current TOOLSETS."""
    root = Path(__file__).parents[2]
    proc = subprocess.run([sys.executable, str(root / "scripts" / "gen_toolsets_doc.py")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "| `video` | Generate and edit video (opt-in) |" in proc.stdout
    doc = (root / "docs" / "toolsets.md").read_text(encoding="utf-8")
    assert proc.stdout in doc, "docs/toolsets.md is stale: run scripts/gen_toolsets_doc.py --write"


def test_tools_list_shows_the_browser_only_when_its_backend_can_run(tmp_path: Path) -> None:
    import importlib.util

    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text("browser:\n  chromium: /nonexistent/chromium\n", encoding="utf-8")
    missing = hermes(home, "tools", "list")
    assert missing.returncode == 0, missing.stderr
    assert "✗ browser_navigate — unavailable" in missing.stdout
    assert "✗ browser_cdp — unavailable" in missing.stdout  # no endpoint configured, none probed
    if shutil.which("chromium") and importlib.util.find_spec("playwright"):
        (home / "config.yaml").write_text("{}\n", encoding="utf-8")
        present = hermes(home, "tools", "list")
        assert "✓ browser_navigate" in present.stdout and "✗ browser_cdp" in present.stdout


def test_tools_switched_off_by_their_config_toggle_are_listed_off_with_the_key(hermes_home: Path) -> None:
    """show_tip / gui_tour / memory turned off by display.in_app_tips / in_app_tours / memory.enabled are
    not in a new session, so tools list and the session count say so instead of ✓."""
    on = hermes(hermes_home, "tools", "list", "--surface", "desktop").stdout
    assert line_of(on, "✓ show_tip") == "✓ show_tip" and line_of(on, "✓ gui_tour") == "✓ gui_tour"
    count_on = int(line_of(on, "A new desktop session gets").split()[5])
    (hermes_home / "config.yaml").write_text(
        "display:\n  in_app_tips: false\n  in_app_tours: false\nmemory:\n  enabled: false\n", encoding="utf-8")
    off = hermes(hermes_home, "tools", "list", "--surface", "desktop").stdout
    assert line_of(off, "✗ show_tip") == ("✗ show_tip — off: display.in_app_tips is false "
                                          "(hermes config set display.in_app_tips true)")
    assert line_of(off, "✗ gui_tour") == ("✗ gui_tour — off: display.in_app_tours is false "
                                          "(hermes config set display.in_app_tours true)")
    assert line_of(off, "✗ memory").startswith("✗ memory — off: memory.enabled is false")
    assert line_of(off, "A new desktop session gets") == f"A new desktop session gets {count_on - 3} tools."
    assert "  Switched off by their settings (3; shown below): memory, gui_tour, show_tip" in off
    status = hermes(hermes_home, "status", "--full").stdout
    assert line_of(status, "desktop ").split(" — ")[-1].startswith(f"{count_on - 3} tools ready"), status
