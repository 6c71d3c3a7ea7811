"""``hermes tools``: which backend each tool category uses, what a session gets, toolsets on and off.

* ``hermes tools`` in a terminal (or ``hermes tools pick``) — the interactive picker (GW-8): per tool
  category "Nous Subscription" first and every vendor, logged in or not; choosing the gateway starts the
  portal login on the spot when needed, and only that category's selection key is written. Without a
  terminal, ``hermes tools`` is ``hermes tools list``.
* ``hermes tools set CATEGORY BACKEND`` — the same choice for scripts (``hermes tools set web nous``,
  ``hermes tools set web.search firecrawl``).
* ``hermes tools list [--surface S] [--all]`` — the toolsets a new session on surface ``S`` (default
  ``cli``) would get, why others are off or dropped, each registered tool with ✓ available or
  ✗ unavailable and the reason (e.g. ``missing WEATHER_API_KEY``), and modules that failed to load.
* ``hermes tools enable NAME...`` / ``hermes tools disable NAME...`` — edit ``agent.disabled_toolsets``
  and ``toolsets:`` in config.yaml. Like every schema change they apply from the next session (TS-9).

Subcommands are registered in :data:`SUBCOMMANDS`. Only argparse is imported at module level.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from prompt_toolkit.input import Input
    from prompt_toolkit.output import Output

    from hermes.config.settings import Settings
    from hermes.routing.choose import SelectionChange
    from hermes.tools.registry import ToolRegistry
    from hermes.tools.toolsets import ResolvedToolsets, Surface

SURFACE_NAMES = ("cli", "tui", "oneshot", "cron", "kanban", "messaging", "desktop")


def _configure_list(p: argparse.ArgumentParser) -> None:
    p.add_argument("--surface", choices=SURFACE_NAMES, default="cli",
                   help="the kind of session to show (default: cli)")
    p.add_argument("--all", action="store_true", dest="show_all",
                   help="also show bundles, toolsets this surface never gets and unregistered tool names")


def _configure_names(p: argparse.ArgumentParser) -> None:
    p.add_argument("names", nargs="+", metavar="NAME", help="toolset names (see 'hermes tools list --all')")
    p.add_argument("--surface", choices=SURFACE_NAMES, default="cli",
                   help="the surface whose default bundle decides whether a toolset must be listed "
                        "under toolsets: (default: cli)")


#: name -> (help, configure, run); add an entry to add a subcommand
SUBCOMMANDS: dict[
    str,
    tuple[str, Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]],
] = {}


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the ``tools`` subcommands (``list`` when none is given)."""
    sub = parser.add_subparsers(dest="tools_command", metavar="SUBCOMMAND")
    for name, (help_text, conf, _) in SUBCOMMANDS.items():
        sp = sub.add_parser(name, help=help_text, description=help_text)
        conf(sp)
    parser.set_defaults(surface="cli", show_all=False)


def run(args: argparse.Namespace) -> int:
    """Run the chosen ``tools`` subcommand (the picker in a terminal, else ``list``, when none is given)."""
    import sys

    command = getattr(args, "tools_command", None)
    if command is None:
        command = "pick" if sys.stdin.isatty() and sys.stdout.isatty() else "list"
    return SUBCOMMANDS[command][2](args)


# -- discovery ----------------------------------------------------------------------------------
def load_registry(settings: Settings) -> ToolRegistry:
    """Discover built-in tools and plugins with ``.env`` visible to availability checks."""
    from hermes.cli.common import export_dotenv
    from hermes.config.optional_env import declare_from_loaded_plugins
    from hermes.tools.discovery import discover_plugins
    from hermes.tools.registry import discover_builtin_tools, registry

    export_dotenv(settings)
    discover_builtin_tools()
    discover_plugins(registry, settings.paths.plugins)
    declare_from_loaded_plugins()
    registry.invalidate_checks()
    return registry


def _surface(name: str) -> Surface:
    from hermes.tools.toolsets import Surface

    return Surface(name)


# -- list ---------------------------------------------------------------------------------------
def _list(args: argparse.Namespace) -> int:
    from hermes.cli.common import load_settings
    from hermes.tools.toolsets import SURFACE_BUNDLES, TOOLSETS, resolve_toolsets

    settings = load_settings(args)
    reg = load_registry(settings)
    surface = _surface(args.surface)
    registered = reg.toolsets()
    requested = settings.requested_toolsets()
    disabled = settings.agent().disabled_toolsets
    resolved = resolve_toolsets(surface, requested, disabled=disabled, registered=registered)

    bundle = SURFACE_BUNDLES[surface]
    if requested is None:
        print(f"Surface: {surface.value} — default bundle {bundle}")
    else:
        print(f"Surface: {surface.value} — requested toolsets: {', '.join(requested)} (default: {bundle})")
    print(f"Session toolsets: {', '.join(resolved.toolsets) or '(none)'}")
    for line in session_summary(surface.value, resolved.tools, reg, settings):
        print(line)
    _say_next_session()
    print()

    from hermes.agent.session import switched_off_by

    names = [n for n in TOOLSETS if args.show_all or not n.startswith("hermes-")]
    names += sorted(n for n in registered if n not in TOOLSETS)
    for name in names:
        ts = TOOLSETS.get(name)
        state, note = _state(name, resolved, disabled, registered)
        member_tools = list(ts.tools) if ts else []
        member_tools += [t for t in registered.get(name, []) if t not in member_tools]
        present = [t for t in member_tools if t in reg]
        if not args.show_all and not present and state not in ("dropped", "disabled"):
            continue
        desc = ts.description if ts else f"from {_source_of(reg, present)}"
        print(f"{state:<9} {name:<16} {desc}" + (f" — {note}" if note else ""))
        if name.startswith("hermes-"):
            includes = f"includes {', '.join(ts.includes)}; " if ts and ts.includes else ""
            print(f"            {includes}{len(member_tools)} tools of its own, {len(present)} registered")
            continue
        for tool in member_tools:
            if tool not in reg:
                if args.show_all:
                    print(f"            · {tool}  (not registered)")
                continue
            ok, reason = reg.availability(tool)
            mark = f"✓ {tool}" if ok else f"✗ {tool} — unavailable: {reason}"
            if ok and (switch := switched_off_by(settings, tool, reg)) is not None:
                mark = f"✗ {tool} — off: {switch} is false (hermes config set {switch} true)"
            extra = "" if tool in resolved.tools or state not in ("on", "partly") else "  (not in this session)"
            print(f"            {mark}{extra}")
    if settings.get("mcp_servers"):
        from hermes.tools.mcp.tool import report_lines, server_report

        print()
        print("MCP servers (mcp_servers in config.yaml; each session connects them in the background, as toolsets "
              "mcp-<server>; 'hermes mcp test NAME' checks one now):")
        for line in report_lines(server_report(settings)):
            print(line)
    if reg.load_errors:
        print()
        print("Failed to load (these tools are missing):")
        for source_name, reason in sorted(reg.load_errors.items()):
            print(f"  {source_name}: {reason}")
    return 0


def tool_counts(tools: tuple[str, ...], reg: ToolRegistry, settings: Settings) -> dict[str, list[str]]:
    """The tool names of a session split into ``ready``, ``switched_off`` (runs here, but its own config
    toggle such as ``display.in_app_tips`` leaves it out of new sessions), ``unavailable`` (registered,
    check fails here) and ``not_built`` (named by a toolset, no tool registered under that name)."""
    from hermes.agent.session import switched_off_by

    runnable = [t for t in tools if t in reg and reg.is_available(t)]
    off = [t for t in runnable if switched_off_by(settings, t, reg) is not None]
    return {"ready": [t for t in runnable if t not in off], "switched_off": off,
            "unavailable": [t for t in tools if t in reg and t not in runnable],
            "not_built": [t for t in tools if t not in reg]}


def session_summary(surface: str, tools: tuple[str, ...], reg: ToolRegistry, settings: Settings) -> list[str]:
    """How many tools a new session gets, which it names but cannot have here, and which are not built."""
    counts = tool_counts(tools, reg, settings)
    ready, unavailable, unbuilt = counts["ready"], counts["unavailable"], counts["not_built"]
    lines = [f"A new {surface} session gets {len(ready)} tool{'' if len(ready) == 1 else 's'}."]
    if counts["switched_off"]:
        lines.append(f"  Switched off by their settings ({len(counts['switched_off'])}; shown below): "
                     f"{', '.join(counts['switched_off'])}")
    if unavailable:
        lines.append(f"  Unavailable here ({len(unavailable)}; what is missing is shown below): "
                     f"{', '.join(unavailable)}")
    if unbuilt:
        shown = ", ".join(unbuilt[:4]) + (", …" if len(unbuilt) > 4 else "")
        lines.append(f"  Not built yet ({len(unbuilt)} names in the toolsets, no tool behind them; --all lists "
                     f"them): {shown}")
    return lines


def _source_of(reg: ToolRegistry, tools: list[str]) -> str:
    sources = sorted({e.source for t in tools if (e := reg.get(t)) is not None})
    return ", ".join(sources) or "a plugin"


def _state(
    name: str, resolved: ResolvedToolsets, disabled: tuple[str, ...], registered: dict[str, list[str]]
) -> tuple[str, str]:
    """``(state, note)``: on, partly, off, disabled or dropped, and why."""
    from hermes.tools.toolset_choice import state

    return state(name, resolved, disabled, registered)


def _say_next_session() -> None:
    from hermes.tools.toolset_choice import NEXT_SESSION

    print(NEXT_SESSION)


# -- enable / disable ---------------------------------------------------------------------------
def _known(settings: Settings, names: list[str]) -> dict[str, list[str]]:
    """Registered toolsets (loading plugins only when a name is not in the table); unknown → error."""
    from hermes.tools.toolset_choice import check_known
    from hermes.tools.toolsets import TOOLSETS

    registered: dict[str, list[str]] = {}
    if any(n not in TOOLSETS for n in names):
        registered = load_registry(settings).toolsets()
    check_known(names, registered)
    return registered


def _disable(args: argparse.Namespace) -> int:
    from hermes.config.settings import Settings
    from hermes.tools.toolset_choice import disable

    settings = Settings.load()
    for line in disable(settings, list(args.names), _known(settings, list(args.names))):
        print(line)
    _say_next_session()
    return 0


def _enable(args: argparse.Namespace) -> int:
    from hermes.config.settings import Settings
    from hermes.tools.toolset_choice import enable

    settings = Settings.load()
    for line in enable(settings, list(args.names), _surface(args.surface), _known(settings, list(args.names))):
        print(line)
    _say_next_session()
    return 0


# -- choosing backends (GW-8) ------------------------------------------------------------------------
def _configure_set(p: argparse.ArgumentParser) -> None:
    p.add_argument("target", metavar="CATEGORY",
                   help="web, web.search, web.extract, image_gen, tts, stt, browser or video_gen")
    p.add_argument("value", metavar="BACKEND", help="nous (the Tool Gateway) or a vendor, e.g. firecrawl, fal")
    p.add_argument("--login", action="store_true",
                   help="with nous: log in to Nous Portal now when not logged in")


def _logged_in(settings: Settings) -> bool:
    from hermes.cli.portal import gateway_report

    return gateway_report(settings).auth.status not in ("not_logged_in", "expired")


def _set(args: argparse.Namespace) -> int:
    from hermes.config.settings import Settings
    from hermes.routing.categories import GATEWAY_VALUE
    from hermes.routing.choose import apply_selection, normalise_value, parse_target

    settings = Settings.load()
    target = parse_target(args.target)
    value = normalise_value(target, args.value)
    if value == GATEWAY_VALUE and args.login and not _logged_in(settings):
        from hermes.cli.portal import run_login

        run_login(settings, print)
    report_change(apply_selection(settings.paths.config, target, value), print)
    return 0


def report_change(change: SelectionChange, out: Callable[[str], None], *, whole_category: bool = True) -> None:
    """What was written, and the route the category now takes (the answer the tools act on); without
    ``whole_category`` only the route of the target itself (the picker's "route separately" steps, where
    the other web function is chosen next)."""
    from hermes.cli.portal import gateway_report
    from hermes.config.settings import Settings

    target = change.target
    if change.changed:
        written = ", ".join(f"{k} = {v}" for k, v in change.set_keys.items()) or "nothing new"
        out(f"Set {written}" + (f"; removed {', '.join(change.removed)}" if change.removed else "") + ".")
    else:
        out(f"{target.key} was already {change.value}.")
    report = gateway_report(Settings.load())
    rows = report.rows() if whole_category else [(target.display, report.routes[target.name])]
    for label, route in rows:
        if route.name == target.name or route.name.split(".")[0] == target.category.name:
            out(f"  {label:<18}{route.mark} {route.message}")
            if route.error:
                out(f"  {route.error}")
    if change.value == "nous" and report.auth.status in ("not_logged_in", "expired"):
        out("Not logged in to Nous Portal: run 'hermes portal login' (or choose it in 'hermes tools').")


def _pick(args: argparse.Namespace) -> int:
    import sys

    from hermes.config.settings import Settings
    from hermes.errors import ConfigError

    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise ConfigError("the tools picker needs a terminal; in scripts use 'hermes tools set CATEGORY BACKEND'")
    run_picker(Settings.load(), print)
    return 0


def run_picker(settings: Settings, out: Callable[[str], None], *, input: Input | None = None,
               output: Output | None = None) -> None:
    """The interactive picker (:class:`hermes.surfaces.picker.ToolsPicker`) wired to the portal login."""
    from hermes.cli.portal import run_login
    from hermes.surfaces.picker import ToolsPicker

    def login(current: Settings) -> None:
        run_login(current, out)

    def after(change: SelectionChange) -> None:
        report_change(change, out, whole_category=change.target.function is None)

    ToolsPicker(settings, out, login=login, after=after,
                input=input, output=output).run()


SUBCOMMANDS.update({
    "pick": ("choose each tool category's backend interactively (Nous Subscription or your own key)",
             lambda p: None, _pick),
    "set": ("choose a category's backend: 'set web nous', 'set web.search firecrawl'", _configure_set, _set),
    "list": ("list toolsets and tools with their availability", _configure_list, _list),
    "enable": ("turn toolsets on (removes them from agent.disabled_toolsets, adds opt-in ones to "
               "toolsets:)", _configure_names, _enable),
    "disable": ("turn toolsets off (adds them to agent.disabled_toolsets)", _configure_names, _disable),
})
