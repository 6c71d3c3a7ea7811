"""The optional environment variables tools need (requirement REG-9).

Every tool that needs an API key (or another setting read from the environment) declares it here, so
``hermes setup`` can ask for it and ``hermes tools list`` can say what is missing::

    from hermes.config.optional_env import declare_env

    declare_env(
        "WEATHER_API_KEY",
        description="Weather API key for weather lookup",
        prompt="Weather API key",
        url="https://weatherapi.com/",
        tools=["weather"],
    )

Built-in tools are listed in :data:`OPTIONAL_ENV_VARS` below; tool modules and plugins call
:func:`declare_env` at import time. A plugin may instead keep the seed's dictionary shape in a
module-level ``OPTIONAL_ENV_VARS`` mapping, which :func:`declare_env_table` merges. The values
themselves live in ``HERMES_HOME/.env`` (mode 0600) or the process environment, never in config.yaml.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Protocol

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class EnvLookup(Protocol):
    """Anything answering ``get(name)``: a dict, ``os.environ`` or a ``dotenv.Environment``."""

    def get(self, key: str, /) -> str | None: ...


@dataclass(frozen=True)
class OptionalEnvVar:
    """One variable a tool reads from the environment, as the setup wizard presents it."""

    name: str
    description: str
    prompt: str
    url: str
    tools: tuple[str, ...]
    #: ask with masked input and never echo the value
    password: bool = True
    #: groups related variables in the wizard ("web", "media", "browser", "gateway", "tools", ...)
    category: str = "tools"


_BROWSER = (
    "browser_navigate", "browser_snapshot", "browser_click", "browser_type", "browser_scroll",
    "browser_back", "browser_press", "browser_get_images", "browser_vision", "browser_console",
    "browser_cdp", "browser_dialog", "browser_exec",
)
_WEB = ("web_search", "web_extract")
_VIDEO = ("video_generate", "xai_video_edit", "xai_video_extend")


def _v(
    name: str, description: str, prompt: str, url: str, tools: Iterable[str], category: str,
    *, password: bool = True,
) -> OptionalEnvVar:
    return OptionalEnvVar(name, description, prompt, url, tuple(tools), password, category)


#: Every declared variable by name, in the order the wizard asks for them.
OPTIONAL_ENV_VARS: dict[str, OptionalEnvVar] = {
    v.name: v
    for v in (
        _v("TOOL_GATEWAY_USER_TOKEN", "Tool Gateway token: one subscription for web, images, speech and "
           "the cloud browser instead of one vendor key each", "Tool Gateway user token",
           "https://portal.nousresearch.com/", (*_WEB, "image_generate", "text_to_speech", *_BROWSER),
           "gateway"),
        _v("FIRECRAWL_API_KEY", "Firecrawl API key for web search and page extraction",
           "Firecrawl API key", "https://firecrawl.dev/", _WEB, "web"),
        _v("TAVILY_API_KEY", "Tavily API key for web search and page extraction", "Tavily API key",
           "https://app.tavily.com/", _WEB, "web"),
        _v("EXA_API_KEY", "Exa API key for web search and page extraction", "Exa API key",
           "https://dashboard.exa.ai/", _WEB, "web"),
        _v("BRAVE_API_KEY", "Brave Search API key for web search", "Brave Search API key",
           "https://brave.com/search/api/", ("web_search",), "web"),
        _v("SEARXNG_URL", "URL of a SearXNG instance to use for web search (self-hosted, no key)",
           "SearXNG URL (e.g. http://localhost:8888)", "https://docs.searxng.org/", ("web_search",), "web",
           password=False),
        _v("FAL_KEY", "FAL.ai key for image and video generation", "FAL API key",
           "https://fal.ai/dashboard/keys", ("image_generate", "video_generate"), "media"),
        _v("KREA_API_KEY", "Krea API key for image generation with Krea models", "Krea API key",
           "https://www.krea.ai/", ("image_generate",), "media"),
        _v("OPENAI_API_KEY", "OpenAI API key for text to speech, speech to text and image generation",
           "OpenAI API key", "https://platform.openai.com/api-keys",
           ("text_to_speech", "image_generate"), "media"),
        _v("ELEVENLABS_API_KEY", "ElevenLabs API key for text to speech", "ElevenLabs API key",
           "https://elevenlabs.io/app/settings/api-keys", ("text_to_speech",), "media"),
        _v("XAI_API_KEY", "xAI API key for X search and Grok Imagine video", "xAI API key",
           "https://console.x.ai/", ("x_search", *_VIDEO), "media"),
        _v("OPENROUTER_API_KEY", "OpenRouter API key for the OpenRouter video backend",
           "OpenRouter API key", "https://openrouter.ai/keys", ("video_generate",), "media"),
        _v("DEEPINFRA_API_KEY", "DeepInfra API key for the DeepInfra video backend", "DeepInfra API key",
           "https://deepinfra.com/dash/api_keys", ("video_generate",), "media"),
        _v("BROWSER_USE_API_KEY", "Browser Use API key for a cloud browser", "Browser Use API key",
           "https://cloud.browser-use.com/", _BROWSER, "browser"),
        _v("BROWSERBASE_API_KEY", "Browserbase API key for a cloud browser", "Browserbase API key",
           "https://www.browserbase.com/settings", _BROWSER, "browser"),
        _v("BROWSERBASE_PROJECT_ID", "Browserbase project id (goes with BROWSERBASE_API_KEY)",
           "Browserbase project id", "https://www.browserbase.com/settings", _BROWSER, "browser",
           password=False),
        _v("CAMOFOX_URL", "URL of a Camofox anti-detection browser server", "Camofox URL",
           "https://github.com/jo-inc/camofox-browser", _BROWSER, "browser", password=False),
        _v("CAMOFOX_ACCESS_KEY", "Bearer token of a Camofox server started with CAMOFOX_ACCESS_KEY (optional)",
           "Camofox access key", "https://github.com/jo-inc/camofox-browser", _BROWSER, "browser"),
    )
}


def declare_env(
    name: str,
    *,
    description: str,
    prompt: str,
    url: str = "",
    tools: Iterable[str],
    password: bool = True,
    category: str = "tools",
) -> OptionalEnvVar:
    """Declare a variable some tools need; call it at import time of the tool module or plugin.

    Declaring a name that is already known adds the new tools to the existing entry (a plugin that
    also uses ``OPENAI_API_KEY`` does not replace the built-in description).
    """
    if not _NAME.match(name):
        raise ValueError(f"not a valid environment variable name: {name!r}")
    tool_names = tuple(tools)
    if isinstance(tools, str) or not tool_names:
        raise ValueError(f"declare_env({name!r}) needs a non-empty list of tool names")
    existing = OPTIONAL_ENV_VARS.get(name)
    if existing is not None:
        merged = existing.tools + tuple(t for t in tool_names if t not in existing.tools)
        entry = replace(existing, tools=merged)
    else:
        entry = OptionalEnvVar(name, description, prompt or name, url, tool_names, password, category)
    OPTIONAL_ENV_VARS[name] = entry
    return entry


def declare_env_table(table: Mapping[str, Mapping[str, Any]], *, category: str = "tools") -> None:
    """Declare several variables given in the seed's dictionary shape.

    ``{"WEATHER_API_KEY": {"description": ..., "prompt": ..., "url": ..., "tools": [...],
    "password": True}}``; a malformed entry raises ``ValueError`` naming it.
    """
    for name, spec in table.items():
        try:
            declare_env(
                name,
                description=str(spec.get("description", "")),
                prompt=str(spec.get("prompt", name)),
                url=str(spec.get("url", "")),
                tools=[str(t) for t in spec.get("tools", ())],
                password=bool(spec.get("password", True)),
                category=str(spec.get("category", category)),
            )
        except (AttributeError, TypeError) as exc:
            raise ValueError(f"OPTIONAL_ENV_VARS entry {name!r} is malformed: {exc}") from None


def declare_from_loaded_plugins(prefix: str = "hermes_plugins.") -> list[str]:
    """Merge the ``OPTIONAL_ENV_VARS`` mappings of already imported plugin modules; returns their names.

    A malformed table is skipped (the plugin's tools still load; only the wizard entry is missing).
    """
    merged: list[str] = []
    for modname, module in list(sys.modules.items()):
        if not modname.startswith(prefix):
            continue
        table = getattr(module, "OPTIONAL_ENV_VARS", None)
        if isinstance(table, Mapping):
            try:
                declare_env_table(table, category="plugins")
            except ValueError:
                continue
            merged.append(modname)
    return merged


def is_secret_variable(name: str) -> bool:
    """Whether ``name`` holds a secret to type hidden: as its entry declares (``SEARXNG_URL`` is a plain
    setting); a name nobody declared counts as a secret."""
    var = OPTIONAL_ENV_VARS.get(name)
    return var.password if var is not None else True


def for_tools(
    tools: Iterable[str], table: Mapping[str, OptionalEnvVar] | None = None
) -> list[OptionalEnvVar]:
    """The declared variables used by any of ``tools``, in table order."""
    wanted = set(tools)
    source = OPTIONAL_ENV_VARS if table is None else table
    return [v for v in source.values() if wanted.intersection(v.tools)]


def missing_for(
    tools: Iterable[str], env: EnvLookup, table: Mapping[str, OptionalEnvVar] | None = None
) -> list[OptionalEnvVar]:
    """The declared variables used by any of ``tools`` that have no (non-empty) value in ``env``."""
    return [v for v in for_tools(tools, table) if not env.get(v.name)]
