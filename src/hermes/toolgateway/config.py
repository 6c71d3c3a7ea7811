"""The gateway server's configuration: one frozen :class:`GatewayConfig`, from a file plus overrides.

The file is TOML (``.toml``) or YAML (``.yaml``/``.yml``); every key is optional, so no file at all
gives a working server on ``127.0.0.1:8787`` with its SQLite database under
``HERMES_HOME/toolgateway/``. The keys are documented in ``docs/gateway/server.md``; a wrong type or an
unknown value is a :class:`~hermes.errors.ConfigError` naming the key.

Vendor keys are read from the environment (``firecrawl_api_key_env``, default ``FIRECRAWL_API_KEY``) or
given inline; they are kept out of ``repr`` and never leave the server.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from hermes.config.paths import hermes_home
from hermes.errors import ConfigError
from hermes.toolgateway.browser.config import BrowserUseConfig, browser_use_config
from hermes.toolgateway.configread import TableReader, read_file
from hermes.toolgateway.connector_apps import AppConfig, app_configs
from hermes.toolgateway.sandbox.config import SandboxConfig, sandbox_config
from hermes.toolgateway.storage.urls import service_urls

#: Coverage categories, as the client reads them from ``tool_access.coverage``.
CATEGORIES: tuple[str, ...] = ("firecrawl", "fal", "fal-video", "openai-audio", "browser-use", "modal")
#: Metered categories that are not coverage keys (paid plans only; a monthly cap may still be set).
METERED_ONLY: tuple[str, ...] = ("krea", "nous-images")

DEFAULT_PORT = 8787
DEFAULT_DOMAIN = "localhost"
SEARCH_BACKENDS = ("firecrawl", "searxng", "off")
SCRAPE_BACKENDS = ("firecrawl", "local", "off")


@dataclass(frozen=True)
class PlanConfig:
    """What a plan grants: the claims it produces and its monthly quotas (units per category)."""

    name: str
    paid_access: bool
    tool_access: bool
    coverage: frozenset[str]
    monthly: Mapping[str, int] = field(default_factory=dict)
    managed_tools: bool = False

    def covers(self, category: str) -> bool:
        """Whether a relay of ``category`` may be used at all under this plan."""
        return self.paid_access or (self.tool_access and category in self.coverage)


def default_plans() -> dict[str, PlanConfig]:
    """``paid`` (everything, no cap), ``free`` (web and FAL images with a monthly allowance), ``none``."""
    return {
        "paid": PlanConfig("paid", True, True, frozenset(CATEGORIES), {}, managed_tools=True),
        "free": PlanConfig("free", False, True, frozenset({"firecrawl", "fal"}), {"firecrawl": 100, "fal": 25}),
        "none": PlanConfig("none", False, False, frozenset(), {}),
    }


@dataclass(frozen=True)
class FirecrawlRelayConfig:
    """Backends of the ``firecrawl`` relay: search and scrape are chosen separately."""

    search: str = "off"
    scrape: str = "local"
    firecrawl_url: str = "https://api.firecrawl.dev"
    firecrawl_api_key: str | None = field(default=None, repr=False)
    searxng_url: str | None = None
    allow_loopback: bool = False
    allow_private: bool = False
    fetch_timeout: float = 20.0
    max_page_bytes: int = 5 * 1024 * 1024
    max_redirects: int = 5


@dataclass(frozen=True)
class VendorRelayConfig:
    """A relay that forwards to one vendor-compatible backend with the operator's key.

    ``backend`` is ``vendor`` (forward to ``url``) or ``off`` (503 ``backend_not_configured``);
    ``max_request_bytes`` (0: ``limits.max_request_bytes``) lets audio uploads be larger than JSON calls.
    """

    backend: str = "off"
    url: str = ""
    api_key: str | None = field(default=None, repr=False)
    max_request_bytes: int = 0
    #: ``openai-audio`` with ``backend = "local"``: the espeak-ng voice and speed (words per minute at speed 1)
    local_voice: str = "en-us"
    local_wpm: int = 175


#: ``relays.<label>`` tables of the vendor-forwarding relays: label → (default URL, default key variable)
VENDOR_RELAYS: dict[str, tuple[str, str]] = {
    "openai-audio": ("https://api.openai.com", "OPENAI_API_KEY"),
    "fal-queue": ("https://queue.fal.run", "FAL_KEY"),
    "krea": ("https://api.krea.ai", "KREA_API_KEY"),
    "tool": ("https://api.openai.com", "OPENAI_API_KEY"),  # the shared origin's image API (uploads: .uploads)
}
VENDOR_BACKENDS = ("vendor", "off")


@dataclass(frozen=True)
class Limits:
    """Size, time and retry limits around every relayed call."""

    max_request_bytes: int = 1024 * 1024
    max_response_bytes: int = 10 * 1024 * 1024
    vendor_deadline: float = 60.0
    vendor_retries: int = 3
    backoff_base: float = 0.25


@dataclass(frozen=True)
class RateLimit:
    """Token bucket per access token: ``per_second`` refill, ``burst`` capacity (0 disables)."""

    per_second: float = 10.0
    burst: int = 20


@dataclass(frozen=True)
class UploadsConfig:
    """``relays.tool.upload_*`` and ``files_url``: size cap, lifetime, per-user storage cap, folder."""

    max_bytes: int = 20 * 1024 * 1024
    ttl: int = 24 * 3600
    user_bytes: int = 512 * 1024 * 1024
    directory: Path | None = None
    files_url: str | None = None


def uploads_config(table: Mapping[str, Any]) -> UploadsConfig:
    """The upload settings of the ``[relays.tool]`` table (a ConfigError names a wrong key)."""
    read = TableReader(table, "relays.tool.")
    folder = table.get("upload_dir")
    if folder is not None and (not isinstance(folder, str) or not folder.strip()):
        raise ConfigError("gateway config: relays.tool.upload_dir must be a folder path")
    files_url = table.get("files_url")
    if files_url is not None and (not isinstance(files_url, str)
                                  or not files_url.startswith(("http://", "https://")) or "?" in files_url):
        raise ConfigError("gateway config: relays.tool.files_url must be an http(s) URL without a query")
    max_bytes = read.integer("upload_max_bytes", 20 * 1024 * 1024, minimum=1024, maximum=1024 * 1024 * 1024)
    return UploadsConfig(
        max_bytes=max_bytes,
        ttl=read.integer("upload_ttl", 24 * 3600, minimum=1, maximum=30 * 86400),
        user_bytes=read.integer("upload_user_bytes", 512 * 1024 * 1024, minimum=0, maximum=1 << 50),
        directory=Path(folder).expanduser() if isinstance(folder, str) else None,
        files_url=files_url.rstrip("/") if isinstance(files_url, str) else None,
    )


@dataclass(frozen=True)
class GatewayConfig:
    """Everything the server needs; build with :func:`load_config`."""

    home: Path
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    domain: str = DEFAULT_DOMAIN
    public_url: str | None = None
    #: where the other gateway processes reach this one (sandboxes, browsers, uploads it holds); see peer_url()
    internal_url: str | None = None
    database: Path | None = None
    database_url: str | None = field(default=None, repr=False)  # PostgreSQL for several hosts (storage/)
    redis_url: str | None = field(default=None, repr=False)  # rate-limit buckets shared by every process
    admin_token: str | None = field(default=None, repr=False)
    access_log: str = "-"
    access_token_ttl: int = 3600
    auth_cache_ttl: float = 2.0  # seconds token/user rows are reused on the hot path (Redis revocation version)
    refresh_token_ttl: int = 30 * 86400
    device_code_ttl: int = 900
    device_poll_interval: int = 1
    org_id: str | None = None
    plans: Mapping[str, PlanConfig] = field(default_factory=default_plans)
    costs: Mapping[str, float] = field(default_factory=dict)
    limits: Limits = Limits()
    rate_limit: RateLimit = RateLimit()
    firecrawl: FirecrawlRelayConfig = FirecrawlRelayConfig()
    openai_audio: VendorRelayConfig = VendorRelayConfig(max_request_bytes=25 * 1024 * 1024)
    fal_queue: VendorRelayConfig = VendorRelayConfig()
    krea: VendorRelayConfig = VendorRelayConfig()
    tool: VendorRelayConfig = VendorRelayConfig()
    uploads: UploadsConfig = field(default_factory=UploadsConfig)
    browser_use: BrowserUseConfig = field(default_factory=BrowserUseConfig)
    modal: SandboxConfig = field(default_factory=SandboxConfig)  # [relays.modal]: the sandbox engine
    connector_rename: bool = True  # [connectors] rename: users may (re)name connector accounts
    #: [connectors.apps.<app>]: the apps whose actions this gateway runs (OpenAPI documents)
    connector_apps: Mapping[str, AppConfig] = field(default_factory=dict)

    @property
    def state_dir(self) -> Path:
        """``HERMES_HOME/toolgateway``: the database, the signing secret and the admin token."""
        return self.home / "toolgateway"

    @property
    def db_path(self) -> Path:
        return self.database or self.state_dir / "gateway.db"

    @property
    def secret_path(self) -> Path:
        return self.state_dir / "secret"

    @property
    def admin_token_path(self) -> Path:
        return self.state_dir / "admin_token"

    def base_url(self) -> str:
        """Where people reach the portal: ``public_url``, else ``http://host:port`` (loopback for 0.0.0.0)."""
        if self.public_url:
            return self.public_url.rstrip("/")
        host = self.host if self.host not in ("0.0.0.0", "::", "") else "127.0.0.1"
        if ":" in host:
            host = f"[{host}]"
        return f"http://{host}:{self.port}"

    def peer_url(self) -> str:
        """The address the other processes forward requests for what this one holds to: ``internal_url``,
        else ``http://host:port`` (loopback for 0.0.0.0 / ::: right for several processes on one host)."""
        if self.internal_url:
            return self.internal_url.rstrip("/")
        host = self.host if self.host not in ("0.0.0.0", "::", "") else "127.0.0.1"
        return f"http://[{host}]:{self.port}" if ":" in host else f"http://{host}:{self.port}"

    def unit_cost(self, category: str, operation: str, backend: str) -> float:
        """Cost of one unit: ``costs["category.operation.backend"]``, then ``category.operation``, else 0."""
        for key in (f"{category}.{operation}.{backend}", f"{category}.{operation}", category):
            if key in self.costs:
                return self.costs[key]
        return 0.0


def _plans(reader: TableReader) -> dict[str, PlanConfig]:
    plans = default_plans()
    for name, base in list(plans.items()):
        table = reader.table(name)
        if not table.data:
            continue
        coverage = table.data.get("coverage", sorted(base.coverage))
        if not isinstance(coverage, list) or any(c not in CATEGORIES for c in coverage):
            raise ConfigError(
                f"gateway config: plans.{name}.coverage must list categories from {', '.join(CATEGORIES)}")
        monthly_raw = table.data.get("monthly", dict(base.monthly))
        if not isinstance(monthly_raw, Mapping):
            raise ConfigError(f"gateway config: plans.{name}.monthly must be a table of category = units")
        monthly: dict[str, int] = {}
        for cat, units in monthly_raw.items():
            known = cat in CATEGORIES or cat in METERED_ONLY
            if not known or isinstance(units, bool) or not isinstance(units, int) or units < 0:
                raise ConfigError(f"gateway config: plans.{name}.monthly.{cat} must be a known category = units >= 0")
            monthly[str(cat)] = units
        plans[name] = replace(base, coverage=frozenset(coverage), monthly=monthly,
                              managed_tools=table.flag("managed_tools", base.managed_tools))
    return plans


def _firecrawl(reader: TableReader, env: Mapping[str, str]) -> FirecrawlRelayConfig:
    key_env = reader.text("firecrawl_api_key_env", "FIRECRAWL_API_KEY") or "FIRECRAWL_API_KEY"
    api_key = reader.text("firecrawl_api_key") or env.get(key_env) or None
    searxng_url = reader.text("searxng_url") or env.get("SEARXNG_URL") or None
    has_vendor = "firecrawl_url" in reader.data or api_key is not None
    default_search = "firecrawl" if has_vendor else ("searxng" if searxng_url else "off")
    default_scrape = "firecrawl" if has_vendor else "local"
    return FirecrawlRelayConfig(
        search=reader.choice("search", SEARCH_BACKENDS, default_search),
        scrape=reader.choice("scrape", SCRAPE_BACKENDS, default_scrape),
        firecrawl_url=(reader.text("firecrawl_url") or "https://api.firecrawl.dev").rstrip("/"),
        firecrawl_api_key=api_key,
        searxng_url=searxng_url.rstrip("/") if searxng_url else None,
        allow_loopback=reader.flag("allow_loopback", False),
        allow_private=reader.flag("allow_private", False),
        fetch_timeout=reader.number("fetch_timeout", 20.0, minimum=0.1),
        max_page_bytes=reader.integer("max_page_bytes", 5 * 1024 * 1024, minimum=1024),
        max_redirects=reader.integer("max_redirects", 5),
    )


def _vendor_relay(label: str, reader: TableReader, env: Mapping[str, str]) -> VendorRelayConfig:
    default_url, default_env = VENDOR_RELAYS[label]
    key_env = reader.text("api_key_env", default_env) or default_env
    api_key = reader.text("api_key") or env.get(key_env) or None
    configured = "url" in reader.data or api_key is not None
    url = (reader.text("url") or default_url).rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"gateway config: {reader.prefix}url must be an http(s) URL")
    audio = label == "openai-audio"
    backends = (*VENDOR_BACKENDS, "local") if audio else VENDOR_BACKENDS  # local: espeak-ng on this host
    return VendorRelayConfig(
        backend=reader.choice("backend", backends, "vendor" if configured else "off"),
        url=url,
        api_key=api_key,
        max_request_bytes=reader.integer("max_request_bytes", 25 * 1024 * 1024 if audio else 0),
        local_voice=reader.word("local_voice") or "en-us",
        local_wpm=reader.integer("local_wpm", 175, minimum=80, maximum=450),
    )


def _oauth_redirect(top: TableReader) -> str | None:
    """``[connectors] oauth_redirect_uri``, else ``public_url`` + the callback path (else None: each OAuth app
    must name its own ``redirect_uri``)."""
    from hermes.toolgateway.connector_oauth import CALLBACK_PATH

    public = top.text("public_url")
    fallback = public.rstrip("/") + CALLBACK_PATH if public else None
    return top.table("connectors").text("oauth_redirect_uri") or fallback


def _internal_url(value: str | None) -> str | None:
    if value is not None and (not value.startswith(("http://", "https://")) or "?" in value or "#" in value):
        raise ConfigError("gateway config: internal_url must be an http(s) URL without a query "
                          "(http://10.0.0.5:8787: where the other gateway processes reach this one)")
    return value


def load_config(
    path: Path | None = None,
    *,
    overrides: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    home: Path | None = None,
) -> GatewayConfig:
    """Read ``path`` (optional) and apply ``overrides``: a flat mapping of top-level keys, plus
    ``relays.<label>.*`` keys given as ``<label>.<key>`` (``firecrawl``, ``openai-audio``, ``fal-queue``,
    ``krea``, ``tool``, ``browser-use``, ``modal``; command-line flags and tests).

    ``env`` defaults to the process environment (vendor keys, ``SEARXNG_URL``,
    ``HERMES_GATEWAY_ADMIN_TOKEN``, ``HERMES_GATEWAY_DATABASE_URL``/``_REDIS_URL``); ``home`` to ``HERMES_HOME``.
    """
    environ: Mapping[str, str] = os.environ if env is None else env
    data: dict[str, Any] = dict(read_file(path)) if path is not None else {}
    relays = dict(data.get("relays") or {}) if isinstance(data.get("relays", {}), Mapping) else None
    if relays is None:
        raise ConfigError("gateway config: relays must be a table")
    tables: dict[str, dict[str, Any]] = {}
    for label in ("firecrawl", "browser-use", "modal", *VENDOR_RELAYS):
        raw = relays.get(label) or {}
        if not isinstance(raw, Mapping):
            raise ConfigError(f"gateway config: relays.{label} must be a table")
        tables[label] = dict(raw)
    fc = tables["firecrawl"]
    for key, value in (overrides or {}).items():
        if value is None:
            continue
        label, dot, rest = key.partition(".")
        if dot and label in tables:
            tables[label][rest] = value
        else:
            data[key] = value
    relays.update(tables)
    top = TableReader(data)
    admin_env = top.text("admin_token_env", "HERMES_GATEWAY_ADMIN_TOKEN") or "HERMES_GATEWAY_ADMIN_TOKEN"
    database = top.text("database")
    costs_raw = top.table("costs").data
    costs: dict[str, float] = {}
    for key, value in costs_raw.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise ConfigError(f"gateway config: costs.{key} must be a number >= 0 (USD per unit)")
        costs[str(key)] = float(value)
    lim, rate = top.table("limits"), top.table("rate_limit")
    domain = (top.text("domain", DEFAULT_DOMAIN) or DEFAULT_DOMAIN).lower().strip(".")
    def relay_table(label: str) -> TableReader:
        return TableReader(tables[label], f"relays.{label}.")

    return GatewayConfig(
        home=(home or hermes_home()).expanduser(),
        host=top.text("host", "127.0.0.1") or "127.0.0.1",
        port=top.integer("port", DEFAULT_PORT),
        domain=domain,
        public_url=top.text("public_url"),
        internal_url=_internal_url(top.text("internal_url")),
        database=Path(database).expanduser() if database else None,
        **service_urls(data, overrides or {}, environ),  # database_url, redis_url: flag > environment > file
        admin_token=top.text("admin_token") or environ.get(admin_env) or None,
        access_log=top.text("access_log", "-") or "-",
        access_token_ttl=top.integer("access_token_ttl", 3600, minimum=60),
        auth_cache_ttl=top.number("auth_cache_ttl", 2.0, minimum=0.0),
        refresh_token_ttl=top.integer("refresh_token_ttl", 30 * 86400, minimum=60),
        device_code_ttl=top.integer("device_code_ttl", 900, minimum=30),
        device_poll_interval=top.integer("device_poll_interval", 1, minimum=1),
        org_id=top.text("org_id"),
        plans=_plans(top.table("plans")),
        costs=costs,
        limits=Limits(
            max_request_bytes=lim.integer("max_request_bytes", 1024 * 1024, minimum=1024),
            max_response_bytes=lim.integer("max_response_bytes", 10 * 1024 * 1024, minimum=1024),
            vendor_deadline=lim.number("vendor_deadline", 60.0, minimum=0.1),
            vendor_retries=lim.integer("vendor_retries", 3),
            backoff_base=lim.number("backoff_base", 0.25),
        ),
        rate_limit=RateLimit(per_second=rate.number("per_second", 10.0), burst=rate.integer("burst", 20)),
        firecrawl=_firecrawl(TableReader(fc, "relays.firecrawl."), environ),
        openai_audio=_vendor_relay("openai-audio", relay_table("openai-audio"), environ),
        fal_queue=_vendor_relay("fal-queue", relay_table("fal-queue"), environ),
        krea=_vendor_relay("krea", relay_table("krea"), environ),
        tool=_vendor_relay("tool", relay_table("tool"), environ),
        uploads=uploads_config(tables["tool"]),
        browser_use=browser_use_config(tables["browser-use"], environ),
        modal=sandbox_config(tables["modal"]),
        connector_rename=top.table("connectors").flag("rename", True),
        connector_apps=app_configs(top.table("connectors").table("apps").data,
                                   path.parent if path is not None else Path.cwd(), environ,
                                   _oauth_redirect(top)),
    )
