"""The ``browser.*`` settings (docs/tools/browser.md) and the offline checks of what can run here.

Nothing here touches the network or starts a process: :func:`local_backend_ready` looks for the
Playwright package and a Chromium program, :func:`cdp_url_of` reads the endpoint setting.
"""

from __future__ import annotations

import importlib.util
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes.config.reader import ConfigReader

if TYPE_CHECKING:
    from hermes.config.settings import Settings
    from hermes.tools.browser.cloud import CloudAccess

DEFAULT_SNAPSHOT_BUDGET = 8_000  # tokens
CHARS_PER_TOKEN = 4
DEFAULT_INACTIVITY_TIMEOUT = 300.0
DEFAULT_COMMAND_TIMEOUT = 30.0
DEFAULT_DOWNLOAD_MAX_BYTES = 50 * 2**20
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
DIALOG_POLICIES = ("dismiss", "accept")
PLAYWRIGHT_MISSING = "the Python package 'playwright' is not installed (pip install 'hermes[browser]')"


@dataclass(frozen=True)
class BrowserConfig:
    """What the browser tools read from config.yaml and the environment."""

    home: Path
    spill_dir: Path
    chromium: str | None = None
    cdp_url: str | None = None
    allow_private_urls: bool = False
    persist_profile: bool = False
    snapshot_budget: int = DEFAULT_SNAPSHOT_BUDGET
    inactivity_timeout: float = DEFAULT_INACTIVITY_TIMEOUT
    command_timeout: float = DEFAULT_COMMAND_TIMEOUT
    download_max_bytes: int = DEFAULT_DOWNLOAD_MAX_BYTES
    dialog_policy: str = "dismiss"
    headless: bool = True
    #: the cloud browser the routing function chose (:mod:`.cloud`), None for local or CDP
    cloud: CloudAccess | None = None

    @property
    def budget_chars(self) -> int:
        return self.snapshot_budget * CHARS_PER_TOKEN

    @property
    def profile_dir(self) -> Path:
        """Where ``browser.persist_profile`` keeps cookies and storage (0700)."""
        return self.home / "browser" / "profile"

    @property
    def backend(self) -> str:
        return "cdp" if self.cdp_url else "cloud" if self.cloud else "local"


def find_chromium(configured: str | None = None) -> str | None:
    """The Chromium program: ``browser.chromium`` when set (a path or a name on PATH), else the first
    of :data:`CHROMIUM_NAMES` on PATH."""
    for name in (configured,) if configured else CHROMIUM_NAMES:
        found = shutil.which(name) if name else None
        if found:
            return found
    return None


def playwright_installed() -> bool:
    """Whether the ``playwright`` package can be imported (looked up, not imported)."""
    return importlib.util.find_spec("playwright") is not None


def cdp_url_of(config: Mapping[str, Any], env: Mapping[str, str]) -> str | None:
    """``BROWSER_CDP_URL`` (set by the person's shell or ``.env``) over ``browser.cdp_url``."""
    value = env.get("BROWSER_CDP_URL") or ConfigReader(config).text("browser.cdp_url")
    value = (value or "").strip()
    return value or None


def cloud_selection(config: Mapping[str, Any]) -> str | None:
    """The cloud browser ``browser.cloud_provider`` selects (GW-2), or None for none / ``local``."""
    value = ConfigReader(config).text("browser.cloud_provider")
    return value if value and value.lower() != "local" else None


#: the variables that let GW-2's auto-detection pick a cloud browser (routing/categories.py, BROWSER)
CLOUD_ENV = ("CAMOFOX_URL", "BROWSER_USE_API_KEY", "BROWSERBASE_API_KEY")


def cloud_candidate(config: Mapping[str, Any], env: Mapping[str, str]) -> bool:
    """Whether the routing function may give this session a cloud browser: one is selected, or a cloud
    browser's variable is set (auto-detection). False: the local Chromium, without asking routing."""
    return cloud_selection(config) is not None or any((env.get(name) or "").strip() for name in CLOUD_ENV)


def browser_config(settings: Settings) -> BrowserConfig:
    """The settings of one call; a ConfigError naming the key when one is malformed."""
    data = settings.config.data if isinstance(settings.config.data, Mapping) else {}
    read = ConfigReader(data)
    env = settings.env.as_dict()
    policy = (read.text("browser.dialog_policy") or "dismiss").lower()
    if policy not in DIALOG_POLICIES:
        raise read.fail("browser.dialog_policy", "must be dismiss or accept")
    return BrowserConfig(
        home=settings.paths.home,
        spill_dir=settings.paths.spill,
        chromium=find_chromium(read.text("browser.chromium")),
        cdp_url=cdp_url_of(data, env),
        allow_private_urls=read.flag("browser.allow_private_urls", False),
        persist_profile=read.flag("browser.persist_profile", False),
        snapshot_budget=int(read.number("browser.snapshot_budget", DEFAULT_SNAPSHOT_BUDGET, minimum=500,
                                        maximum=200_000)),
        inactivity_timeout=read.number("browser.inactivity_timeout", DEFAULT_INACTIVITY_TIMEOUT, minimum=10,
                                       maximum=86_400),
        command_timeout=read.number("browser.command_timeout", DEFAULT_COMMAND_TIMEOUT, minimum=1, maximum=300),
        download_max_bytes=int(read.number("browser.download_max_bytes", DEFAULT_DOWNLOAD_MAX_BYTES,
                                           minimum=1024, maximum=4 * 2**30)),
        dialog_policy=policy,
        headless=read.flag("browser.headless", True),
    )


def local_backend_ready(settings: Settings) -> tuple[bool, str]:
    """(whether the browser tools can run here, why not / through what) — offline."""
    data = settings.config.data if isinstance(settings.config.data, Mapping) else {}
    url = cdp_url_of(data, settings.env.as_dict())
    if not url and cloud_candidate(data, settings.env.as_dict()):
        from hermes.routing.report import load_report

        route = load_report(settings.paths.auth, data, settings.env.as_dict()).routes["browser"]
        if route.vendor == "camofox" and route.kind != "gateway":  # plain HTTP: no Playwright needed
            return route.ready, route.missing or route.message
        if (route.vendor != "local" or route.kind == "gateway") and not playwright_installed():
            return False, PLAYWRIGHT_MISSING
        if route.vendor != "local" or route.kind == "gateway":
            return route.ready, route.missing or route.message
    if not playwright_installed():
        return False, PLAYWRIGHT_MISSING
    if url:
        return True, f"the CDP endpoint {url}"
    chromium = find_chromium(ConfigReader(data).text("browser.chromium"))
    if chromium is None:
        return False, "no Chromium found (install the 'chromium' package or set browser.chromium)"
    return True, f"local Chromium ({chromium})"
