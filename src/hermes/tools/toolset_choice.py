"""Turning toolsets on and off in config.yaml (``hermes tools enable/disable``, the app server's
``toolsets.enable/disable``), and the state of each toolset for a new session (TS-9: from the next session).

* :func:`disable` adds names to ``agent.disabled_toolsets``;
* :func:`enable` takes them out of it and, when the surface's bundle does not already give them, adds
  them to ``toolsets:`` (starting from the surface's bundle when ``toolsets:`` was not set);
* :func:`state` says ``on``, ``partly``, ``off``, ``disabled`` or ``dropped`` and why.

Both edits save the file (atomically, comments kept) and return the lines to tell the person.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from hermes.errors import ConfigError
from hermes.tools.toolsets import SURFACE_BUNDLES, TOOLSETS, ResolvedToolsets, Surface, resolve_toolsets

if TYPE_CHECKING:
    from hermes.config.settings import Settings

NEXT_SESSION = "Changes apply from the next session; a running session keeps the toolsets it started with."


def check_known(names: list[str], registered: Mapping[str, list[str]]) -> None:
    """A ConfigError listing the known toolsets when a name is neither in the table nor registered."""
    unknown = [n for n in names if n not in TOOLSETS and n not in registered]
    if unknown:
        known = sorted(set(TOOLSETS) | set(registered))
        hint = " ('all' is set with: hermes config set toolsets '[all]')" if "all" in unknown else ""
        raise ConfigError(f"unknown toolset(s): {', '.join(unknown)}. Known toolsets: {', '.join(known)}{hint}")


def disable(settings: Settings, names: list[str], registered: Mapping[str, list[str]]) -> list[str]:
    """Add ``names`` to ``agent.disabled_toolsets`` and save; the lines saying what changed."""
    names = list(dict.fromkeys(names))
    check_known(names, registered)
    cfg = settings.config
    current = cfg.get("agent.disabled_toolsets")
    if current is not None and not isinstance(current, list):
        raise ConfigError("agent.disabled_toolsets must be a list of toolset names")
    added = [n for n in names if current is None or n not in current]
    if added:
        if current is None:
            cfg.set("agent.disabled_toolsets", added)
        else:
            current.extend(added)
        cfg.save()
    return [f"Disabled {n} (added to agent.disabled_toolsets in {settings.paths.config})." if n in added
            else f"{n} was already disabled." for n in names]


def enable(settings: Settings, names: list[str], surface: Surface,
           registered: Mapping[str, list[str]]) -> list[str]:
    """Turn ``names`` on for new ``surface`` sessions (see the module docstring); the lines saying what changed."""
    names = list(dict.fromkeys(names))
    check_known(names, registered)
    cfg = settings.config
    lines: list[str] = []
    changed = emptied = False
    disabled = cfg.get("agent.disabled_toolsets")
    if isinstance(disabled, list):
        for name in names:
            while name in disabled:
                disabled.remove(name)
                changed = True
                lines.append(f"Removed {name} from agent.disabled_toolsets.")
        emptied = changed and not disabled
    requested = settings.requested_toolsets()
    still_disabled = [str(x) for x in disabled] if isinstance(disabled, list) else []
    for name in names:
        ts = TOOLSETS.get(name)
        if ts is not None and surface not in ts.surfaces:
            where = ", ".join(sorted(s.value for s in ts.surfaces)) or "no interactive surface"
            lines.append(f"{name} is only given to sessions on: {where}; it is not added to toolsets:.")
            continue
        res = resolve_toolsets(surface, requested, disabled=still_disabled, registered=registered)
        members = set(ts.tools) if ts else set(registered.get(name, []))
        if name in res.toolsets or (bool(members) and members <= set(res.tools)):
            lines.append(f"{name} is enabled for {surface.value} sessions.")
            continue
        toolsets = cfg.get("toolsets")
        if isinstance(toolsets, str):
            toolsets = [t.strip() for t in toolsets.split(",") if t.strip()]
            cfg.set("toolsets", toolsets)
        if toolsets is None:
            cfg.set("toolsets", [SURFACE_BUNDLES[surface], name])
        elif isinstance(toolsets, list):
            toolsets.append(name)
        else:
            raise ConfigError("toolsets must be a list of toolset names")
        requested = [str(t) for t in cfg.get("toolsets")]
        changed = True
        lines.append(f"Enabled {name} (added to toolsets: in {settings.paths.config}).")
    if changed:
        cfg.save()
    if emptied:
        cfg.delete_preserving_comments("agent.disabled_toolsets")
    return lines


def state(name: str, resolved: ResolvedToolsets, disabled: tuple[str, ...],
          registered: Mapping[str, list[str]]) -> tuple[str, str]:
    """``(state, note)``: on, partly, off, disabled or dropped, and why."""
    dropped = dict(resolved.dropped)
    ts = TOOLSETS.get(name)
    if name in disabled:
        return "disabled", f"in agent.disabled_toolsets; 'hermes tools enable {name}' turns it back on"
    if name in dropped:
        return "dropped", dropped[name]
    if name in resolved.toolsets:
        return "on", ""
    members = set(ts.tools if ts else ()) | set(registered.get(name, []))
    if ts is not None and resolved.surface not in ts.surfaces:
        return "off", f"never given to {resolved.surface.value} sessions"
    covered = members & set(resolved.tools)
    if members and covered == members:
        return "on", "its tools come with the session's bundle"
    if covered:
        return "partly", f"{len(covered)} of {len(members)} tools come with the session's bundle"
    if ts is not None and ts.opt_in:
        return "off", f"opt-in: 'hermes tools enable {name}'"
    return "off", f"'hermes tools enable {name}' adds it"
