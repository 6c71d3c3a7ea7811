"""The toolset table and its resolver (requirement REG-8, TS-1…TS-4, TS-9).

A toolset is data: a description, the tools it holds and other toolsets it includes. What a session
gets is computed once, at its start, by :func:`resolve_toolsets`:

1. the requested names (``--toolsets``, else ``toolsets:`` in config.yaml, else the surface's platform
   bundle such as ``hermes-cli``) are expanded through ``includes`` (cycles are harmless), where
   ``all`` means every toolset that may be part of ``all``;
2. toolsets the surface may not have are dropped (``catalog`` and ``desktop_ui`` only on desktop, the
   platform toolsets only on messaging, ...), even when they are listed explicitly;
3. ``agent.disabled_toolsets`` removes toolsets last;
4. toolsets registered by plugins and unknown to this table are added by default (a plugin the user
   installed is meant to be used) unless disabled;
5. the tool names are then filtered by the registry: unknown tools and tools whose ``check_fn`` fails
   are left out of the schema the model sees.

The result is frozen for the session: later config changes apply from the next session (TS-9).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from hermes.errors import ConfigError


class Surface(StrEnum):
    """Where a session meets (or does not meet) a person."""

    CLI = "cli"
    TUI = "tui"
    ONESHOT = "oneshot"
    CRON = "cron"
    KANBAN = "kanban"
    MESSAGING = "messaging"
    DESKTOP = "desktop"

    @property
    def has_person(self) -> bool:
        """Whether someone can answer clarify questions and approvals during the session."""
        return self in (Surface.CLI, Surface.TUI, Surface.MESSAGING, Surface.DESKTOP)


ALL_SURFACES = frozenset(Surface)


@dataclass(frozen=True)
class Toolset:
    """A named group of tools, the toolsets it includes and the surfaces that may have it."""

    name: str
    description: str
    tools: tuple[str, ...] = ()
    includes: tuple[str, ...] = ()
    #: surfaces that may have this toolset; others never get it, even when it is listed
    surfaces: frozenset[Surface] = ALL_SURFACES
    #: left out when "all" is expanded (TS-4)
    in_all: bool = True
    #: not part of any default bundle; added with --toolsets or toolsets: in config (TS-3)
    opt_in: bool = False
    #: added automatically on these surfaces whatever was requested
    auto_on: frozenset[Surface] = field(default_factory=frozenset)


BROWSER_CORE = (
    "browser_navigate", "browser_snapshot", "browser_click", "browser_type", "browser_scroll",
    "browser_back", "browser_press", "browser_get_images", "browser_vision", "browser_console",
)
BROWSER_CDP = ("browser_cdp", "browser_dialog")
#: offered only with browser.vault.enabled (hermes.tools.browser.vault_tools)
BROWSER_VAULT = (
    "browser_vault_list", "browser_vault_fill", "browser_vault_totp", "browser_vault_save", "browser_vault_status",
)
#: the kanban worker's lifecycle tools and the orchestrator's board tools (TS-7; hermes.tools.kanban)
KANBAN_WORKER = (
    "kanban_show", "kanban_complete", "kanban_block", "kanban_heartbeat", "kanban_comment", "kanban_attach",
    "kanban_attach_url", "kanban_attachments", "kanban_request_review",
)
#: tools whose effect outlives a kanban worker's run: never offered on the kanban surface
KANBAN_PERSISTENT = ("cronjob_manage", "skill_manage", "memory")
KANBAN_BOARD = ("kanban_list", "kanban_create", "kanban_link", "kanban_unblock", "kanban_review")
DESKTOP_UI = (
    "read_terminal", "close_terminal", "desktop_preview", "drive_preview", "annotate_preview",
    "read_window_below", "focus_pane", "react_to_message", "gui_tour", "show_tip", "set_theme",
)

#: Tools every platform bundle gets (requirement REG-8). A new general-purpose tool is added here.
CORE_TOOLS: tuple[str, ...] = (
    "web_search", "web_extract",
    "read_file", "write_file", "patch", "search_files",
    "terminal", "process_manage",
    "execute_code",
    "vision_analyze", "image_generate", "text_to_speech",
    *BROWSER_CORE, *BROWSER_CDP, *BROWSER_VAULT,
    "memory", "todo_list", "session_search",
    "skills_list", "skill_view", "skill_manage",
    "clarify", "delegate_task", "cronjob_manage",
)

YUANBAO = ("yb_query_group_info", "yb_query_group_members", "yb_send_dm", "yb_search_sticker", "yb_send_sticker")
FEISHU_DRIVE = ("feishu_drive_list_comments", "feishu_drive_list_comment_replies", "feishu_drive_reply_comment",
                "feishu_drive_add_comment")
_DESKTOP = frozenset({Surface.DESKTOP})
_MESSAGING = frozenset({Surface.MESSAGING})


def _ts(name: str, description: str, *tools: str, **kw: object) -> Toolset:
    return Toolset(name, description, tuple(tools), **kw)  # type: ignore[arg-type]


TOOLSETS: dict[str, Toolset] = {
    t.name: t
    for t in (
        _ts("web", "Web search and page extraction", "web_search", "web_extract"),
        _ts("file", "Read, write, patch and search files", "read_file", "write_file", "patch", "search_files"),
        _ts("terminal", "Shell commands and background processes", "terminal", "process_manage"),
        _ts("code_execution", "Run Python scripts that can call tools", "execute_code"),
        _ts("browser", "Drive a web browser", *BROWSER_CORE, *BROWSER_CDP, "browser_exec", *BROWSER_VAULT),
        _ts("vision", "Analyse images and video", "vision_analyze", "video_analyze"),
        _ts("image_gen", "Generate images", "image_generate"),
        _ts("tts", "Text to speech", "text_to_speech"),
        _ts("x_search", "Search posts on X", "x_search"),
        _ts("memory", "Long-term memory across sessions", "memory"),
        _ts("todo", "A task list for the current session", "todo_list"),
        _ts("session_search", "Search past conversations", "session_search"),
        _ts("skills", "Load and manage skills", "skills_list", "skill_view", "skill_manage"),
        _ts("clarify", "Ask the person clarifying questions", "clarify"),
        _ts("delegation", "Delegate sub-tasks to child agents", "delegate_task"),
        _ts("cronjob", "Schedule recurring agent jobs", "cronjob_manage"),
        _ts("computer_use", "Control a desktop with screenshots, mouse and keyboard (opt-in)", "computer_use",
            opt_in=True, in_all=False),
        _ts("connections", "Managed connectors and local MCP servers", "connections"),
        _ts("video", "Generate and edit video (opt-in)", "video_generate", "xai_video_edit",
            "xai_video_extend", opt_in=True),
        _ts("video_gen", "Video generation through a backend plugin (opt-in)", "video_generate", opt_in=True),
        _ts("kanban", "Kanban board tools for task workers and orchestrators", *KANBAN_WORKER, *KANBAN_BOARD,
            auto_on=frozenset({Surface.KANBAN})),
        _ts("project", "Desktop projects: named workspaces of several folders", "desktop_project",
            surfaces=frozenset({Surface.DESKTOP, Surface.TUI})),
        _ts("catalog", "The desktop app's catalog: what this installation can do", "catalog", surfaces=_DESKTOP,
            in_all=False, auto_on=_DESKTOP),
        _ts("desktop_ui", "Desktop app panes, previews, tours and tips", *DESKTOP_UI, surfaces=_DESKTOP,
            in_all=False, auto_on=_DESKTOP),
        _ts("discord", "Discord server tools", "discord", surfaces=_MESSAGING, in_all=False),
        _ts("discord_admin", "Discord administration tools", "discord_admin", surfaces=_MESSAGING, in_all=False),
        _ts("yuanbao", "Yuanbao DM, group and sticker tools", *YUANBAO, surfaces=_MESSAGING, in_all=False),
        _ts("feishu_doc", "Feishu document comments (comment handler only)", "feishu_doc_read",
            surfaces=frozenset(), in_all=False),
        _ts("feishu_drive", "Feishu drive comments (comment handler only)", *FEISHU_DRIVE, surfaces=frozenset(),
            in_all=False),
        # platform bundles
        _ts("hermes-cli", "Everything the command-line chat gets", *CORE_TOOLS),
        _ts("hermes-tui", "The terminal UI bundle", includes=("hermes-cli",)),
        _ts("hermes-oneshot", "One-shot runs (hermes -z)", includes=("hermes-cli",)),
        _ts("hermes-cron", "Scheduled jobs", *[t for t in CORE_TOOLS if t != "cronjob_manage"]),
        _ts("hermes-kanban", "Kanban workers", includes=("hermes-cli", "kanban")),
        _ts("hermes-messaging", "Messaging platforms", *CORE_TOOLS),
        _ts("hermes-discord", "Discord", includes=("hermes-messaging", "discord", "discord_admin"),
            in_all=False, surfaces=_MESSAGING),
        _ts("hermes-yuanbao", "Yuanbao", includes=("hermes-messaging", "yuanbao"), in_all=False,
            surfaces=_MESSAGING),
        _ts("hermes-desktop", "The desktop app", includes=("hermes-cli", "desktop_ui", "catalog", "project")),
    )
}

#: The default bundle of each surface.
SURFACE_BUNDLES: dict[Surface, str] = {
    Surface.CLI: "hermes-cli",
    Surface.TUI: "hermes-tui",
    Surface.ONESHOT: "hermes-oneshot",
    Surface.CRON: "hermes-cron",
    Surface.KANBAN: "hermes-kanban",
    Surface.MESSAGING: "hermes-messaging",
    Surface.DESKTOP: "hermes-desktop",
}

#: Tools a surface never gets, whatever its toolsets say.
SURFACE_EXCLUDED_TOOLS: dict[Surface, frozenset[str]] = {
    Surface.CRON: frozenset({"cronjob_manage"}),
    # a kanban worker has the lifecycle tools of its own task, never the board tools (TS-7), and nothing
    # that outlives its run: no cron jobs (which could be given the board tools), no skills or memories
    # that later sessions load (a task body is model-written input)
    Surface.KANBAN: frozenset({*KANBAN_BOARD, *KANBAN_PERSISTENT}),
}


@dataclass(frozen=True)
class ResolvedToolsets:
    """What one session may use; computed once at session start and then frozen (TS-9)."""

    surface: Surface
    toolsets: tuple[str, ...]
    tools: tuple[str, ...]
    #: toolsets that were asked for but dropped, with the reason
    dropped: tuple[tuple[str, str], ...] = ()


def _expand(
    names: Iterable[str], table: Mapping[str, Toolset], dynamic: Mapping[str, list[str]], *, follow_all: bool = True
) -> list[str]:
    """Expand includes depth-first, each toolset once (so cycles terminate)."""
    out: list[str] = []
    seen: set[str] = set()
    stack = list(reversed(list(names)))
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        if name == "all":
            if not follow_all:
                continue
            # every toolset that may be part of "all"; bundles are skipped so their includes cannot
            # drag in toolsets that must stay out (TS-4)
            members = [n for n, t in table.items() if t.in_all and not n.startswith("hermes-")]
            stack.extend(reversed(members + sorted(dynamic)))
            continue
        out.append(name)
        ts = table.get(name)
        if ts is not None:
            stack.extend(reversed(ts.includes))
    return out


def resolve_toolsets(
    surface: Surface,
    requested: Iterable[str] | None,
    *,
    disabled: Iterable[str] = (),
    registered: Mapping[str, list[str]] | None = None,
    table: Mapping[str, Toolset] = TOOLSETS,
) -> ResolvedToolsets:
    """Work out the toolsets and tool names of a session (see the module docstring).

    ``registered`` maps toolset names declared by registered tools to their tool names; toolsets in it
    that the table does not know (plugins, MCP servers) are "dynamic" toolsets.
    """
    registered = registered or {}
    dynamic = {k: v for k, v in registered.items() if k not in table}
    names = list(requested) if requested is not None else [SURFACE_BUNDLES[surface]]
    unknown = [n for n in names if n != "all" and n not in table and n not in dynamic]
    if unknown:
        known = sorted(set(table) | set(dynamic) | {"all"})
        raise ConfigError(f"unknown toolset(s): {', '.join(unknown)}. Known toolsets: {', '.join(known)}")
    auto = [n for n, t in table.items() if surface in t.auto_on and n not in names]
    expanded = _expand([*names, *auto], table, dynamic)
    for name in sorted(dynamic):
        if name not in expanded:
            expanded.append(name)

    # disabling a bundle disables what it includes, too
    disabled_set = set(_expand(disabled, table, {}, follow_all=False)) if disabled else set()
    dropped: list[tuple[str, str]] = []
    kept: list[str] = []
    for name in expanded:
        spec = table.get(name)
        if name in disabled_set:
            dropped.append((name, "disabled in agent.disabled_toolsets"))
        elif spec is not None and surface not in spec.surfaces:
            dropped.append((name, f"not available on the {surface.value} surface"))
        else:
            kept.append(name)

    excluded = SURFACE_EXCLUDED_TOOLS.get(surface, frozenset())
    disabled_tools = {
        t for n in disabled_set for t in (*(table[n].tools if n in table else ()), *registered.get(n, []))
    }
    tools: list[str] = []
    for name in kept:
        members = list(table[name].tools) if name in table else []
        members += registered.get(name, [])
        for tool in members:
            if tool not in tools and tool not in excluded and tool not in disabled_tools:
                tools.append(tool)
    return ResolvedToolsets(surface, tuple(kept), tuple(tools), tuple(dropped))


def toolset_of(tool: str, table: Mapping[str, Toolset] = TOOLSETS) -> list[str]:
    """The non-bundle toolsets listing ``tool``."""
    return [n for n, t in table.items() if tool in t.tools and not n.startswith("hermes-")]
