"""Starting and resuming sessions: from settings to a ready :class:`~hermes.agent.loop.Agent`.

At start the tools are discovered (built-ins and plugins), the session's toolsets are resolved for
its surface and frozen, the system prompt is built and stored as the first message. Resuming reuses
the stored messages and the stored tool list, so a running conversation keeps the toolset it started
with even if the configuration changed since (TS-9).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from hermes.agent.events import EventSink
from hermes.agent.loop import Agent, AgentConfig
from hermes.agent.prompt import build_system_prompt
from hermes.agent.provider import ChatProvider, OpenAICompatProvider
from hermes.config.settings import LOCAL_PROVIDER, ModelSettings, Settings
from hermes.errors import SessionNotFound
from hermes.tools.discovery import discover_builtin_tools, discover_plugins
from hermes.tools.registry import ToolRegistry, registry
from hermes.tools.toolsets import ResolvedToolsets, Surface, resolve_toolsets

if TYPE_CHECKING:
    from hermes.store.sessions import SessionStore


@dataclass
class SessionRequest:
    surface: Surface
    resume: str | None = None
    continue_last: bool = False
    title: str | None = None


def load_tools(settings: Settings, reg: ToolRegistry = registry) -> ToolRegistry:
    """Discover built-in tools, plugins and MCP servers' tools into ``reg`` (the catalog sessions are built
    from). MCP servers connect in the background; their tools come from the last listing until then."""
    discover_builtin_tools(reg)
    discover_plugins(reg, settings.paths.plugins)
    if settings.get("mcp_servers"):
        from hermes.tools.mcp.tool import load_mcp_tools

        load_mcp_tools(settings, reg)
    return reg


def resolve_for(settings: Settings, surface: Surface, reg: ToolRegistry = registry) -> ResolvedToolsets:
    return resolve_toolsets(
        surface,
        settings.requested_toolsets(),
        disabled=settings.agent().disabled_toolsets,
        registered=reg.toolsets(),
    )


def make_provider(settings: Settings, model: ModelSettings) -> ChatProvider:
    """The provider for ``model``: the embedded llama.cpp model for ``local``, else the HTTP client."""
    if model.provider == LOCAL_PROVIDER:
        from hermes.agent.local_provider import LocalProvider

        return LocalProvider(model, prefix_dir=settings.paths.cache / "local_prefix")
    from hermes.routing.inference import with_portal_key

    return OpenAICompatProvider(with_portal_key(model, settings), stream=bool(settings.get("model.stream", True)))


def _config(settings: Settings) -> AgentConfig:
    agent_settings = settings.agent()
    return AgentConfig(
        max_iterations=agent_settings.max_iterations, max_parallel_tools=agent_settings.max_parallel_tools
    )


def switched_off_by(settings: Settings, tool: str, reg: ToolRegistry = registry) -> str | None:
    """The config key that turns ``tool`` off here (``memory.enabled: false``, or the flag named by its
    ``switch=`` registration option, such as ``display.in_app_tips`` for ``show_tip``), else None."""
    if tool != "memory":
        entry = reg.get(tool)
        switch = entry.options.get("switch") if entry is not None else None
        if not isinstance(switch, str):
            return None
        from hermes.config.schema import SCHEMA

        return None if SCHEMA.read(settings.config, switch) else switch
    from hermes.tools.memory.store import memory_enabled

    return None if memory_enabled(settings) else "memory.enabled"


def _switched_on(settings: Settings, tool: str, reg: ToolRegistry = registry) -> bool:
    """False for a tool its own config toggle turns off (see :func:`switched_off_by`)."""
    return switched_off_by(settings, tool, reg) is None


def prompt_sections(settings: Settings, tools: tuple[str, ...]) -> list[str]:
    """What a new session's system prompt freezes: the memory snapshot and the skills index."""
    sections: list[str] = []
    if "memory" in tools:
        from hermes.tools.memory.store import memory_prompt_section

        sections.append(memory_prompt_section(settings))
    if "skill_view" in tools:
        from hermes.tools.skills.store import skills_index_section

        sections.append(skills_index_section(settings.paths.home / "skills"))
    return sections


def new_agent(
    settings: Settings,
    surface: Surface,
    sink: EventSink,
    *,
    requested: list[str] | None = None,
    provider: ChatProvider | None = None,
    store: SessionStore | None = None,
    title: str | None = None,
    reg: ToolRegistry = registry,
    disabled: tuple[str, ...] = (),
) -> Agent:
    """A fresh session; ``requested`` toolsets override the configured ones (batch runs use this) and
    ``disabled`` ones are turned off on top of ``agent.disabled_toolsets`` (the app server's per-session choice)."""
    load_tools(settings, reg)
    model = settings.model()
    provider = provider or make_provider(settings, model)
    agent_settings = settings.agent()
    if requested is None and not disabled:
        resolved = resolve_for(settings, surface, reg)
    else:
        resolved = resolve_toolsets(
            surface, settings.requested_toolsets() if requested is None else requested,
            disabled=(*agent_settings.disabled_toolsets, *disabled), registered=reg.toolsets()
        )
    tools = tuple(t for t in resolved.tools if t in reg and reg.is_available(t) and _switched_on(settings, t, reg))
    system = build_system_prompt(surface, tools, custom=agent_settings.system_prompt,
                                 sections=prompt_sections(settings, tools))
    session_id = None
    if store is not None:
        session_id = store.create_session(
            surface=surface.value, model=model.model, toolsets=list(resolved.toolsets), tools=list(tools),
            title=title, meta={"base_url": model.base_url, "provider": model.provider},
        )
    agent = Agent(
        provider=provider, registry=reg, sink=sink, surface=surface, tools=tools, messages=[],
        config=_config(settings), store=store, session_id=session_id, settings=settings,
    )
    agent.append({"role": "system", "content": system})
    return _started(agent, settings, sink)


#: the tools whose unfinished renders a session start follows again (``video_gen.auto_resume``)
VIDEO_TOOLS = frozenset({"video_generate", "xai_video_edit", "xai_video_extend"})
#: ``Agent.state`` key of the thread following them (joined by tests and by nothing else)
VIDEO_RESUME_KEY = "video_auto_resume"


def _started(agent: Agent, settings: Settings, sink: EventSink) -> Agent:
    """A session that starts with a video tool picks up the renders a crash or restart left waiting."""
    if VIDEO_TOOLS.isdisjoint(agent.tools):
        return agent
    from hermes.agent.events import Notice
    from hermes.tools.video.autoresume import resume_in_background

    thread = resume_in_background(settings, lambda text: sink.emit(Notice("info", text)))
    if thread is not None:
        agent.state[VIDEO_RESUME_KEY] = thread
    return agent


def check_request(settings: Settings, request: SessionRequest, reg: ToolRegistry = registry) -> None:
    """Raise what :func:`open_agent` would raise about the request itself (unknown toolsets, a session
    to resume that does not exist), before anything about the model is said."""
    resolve_for(settings, request.surface, load_tools(settings, reg))
    if request.resume or request.continue_last:
        from hermes.store.sessions import SessionStore

        store = SessionStore(settings.paths.database)
        resume_id = _resume_id(store, request)
        if resume_id:
            store.get_session(resume_id)


def _resume_id(store: SessionStore, request: SessionRequest) -> str | None:
    """The id (or prefix) of the session to resume: ``--resume ID``, or the latest for ``--continue``."""
    if request.continue_last and not request.resume:
        latest = store.latest_session()
        if latest is None:
            raise SessionNotFound("there is no stored session to continue yet")
        return latest.id
    return request.resume


def open_agent(
    settings: Settings,
    request: SessionRequest,
    sink: EventSink,
    *,
    provider: ChatProvider | None = None,
    reg: ToolRegistry = registry,
    store: SessionStore | None = None,
) -> Agent:
    """Create a new stored session or resume one, ready for :meth:`Agent.run_turn` (in ``store`` when
    given — a process hosting many sessions shares one — else in the settings' database)."""
    from hermes.store.sessions import SessionStore

    model = settings.model()  # fail early, before touching the store, when no endpoint is configured
    store = store or SessionStore(settings.paths.database)
    resume_id = _resume_id(store, request)
    if not resume_id:
        return new_agent(settings, request.surface, sink, provider=provider, store=store,
                         title=request.title, reg=reg)
    load_tools(settings, reg)
    info = store.get_session(resume_id)
    provider = provider or make_provider(settings, model)
    return _started(Agent(
        provider=provider, registry=reg, sink=sink, surface=request.surface, tools=tuple(info.tools),
        messages=store.messages(info.id), config=_config(settings), store=store, session_id=info.id,
        settings=settings,
    ), settings, sink)
