"""Reading the messaging gateway's configuration: ``gateway.*`` in config.yaml, tokens from the environment.

Each table under ``gateway.platforms`` is one connection; its name is the platform name in
conversation keys and ``type`` (default: the table's name) picks the adapter — ``telegram``,
``discord``, ``slack``, ``teams``, ``feishu``, ``yuanbao``, ``irc`` or ``api_server`` — so two IRC
networks can be two tables.
Secrets are never in config.yaml: each table names the environment variable (``.env`` works) that holds its token. See
docs/messaging.md for every key.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes.errors import ConfigError
from hermes.surfaces.messaging.access import PlatformAccess

if TYPE_CHECKING:
    from hermes.config.settings import Settings
    from hermes.surfaces.messaging.adapter import PlatformAdapter

TYPES = ("telegram", "discord", "slack", "teams", "feishu", "yuanbao", "irc", "api_server")
#: the environment variable each type reads its secret from, unless the table names another
SECRET_ENV = {"telegram": ("token_env", "TELEGRAM_BOT_TOKEN"), "discord": ("token_env", "DISCORD_BOT_TOKEN"),
              "slack": ("token_env", "SLACK_BOT_TOKEN"), "teams": ("password_env", "TEAMS_APP_PASSWORD"),
              "feishu": ("secret_env", "FEISHU_APP_SECRET"), "yuanbao": ("secret_env", "YUANBAO_APP_SECRET"),
              "irc": ("password_env", "IRC_PASSWORD"),
              "api_server": ("keys_env", "HERMES_API_KEYS")}
#: types that cannot run without their secret (the API server: its keys, even on loopback)
NEEDS_SECRET = frozenset({"telegram", "discord", "slack", "teams", "feishu", "yuanbao", "api_server"})
#: Slack's Socket Mode also needs the app-level token
APP_TOKEN_ENV = ("app_token_env", "SLACK_APP_TOKEN")
#: ... and its HTTP mode the Signing Secret
SLACK_SIGNING_ENV = ("signing_secret_env", "SLACK_SIGNING_SECRET")
#: Feishu's webhook mode checks events with these (table key naming the variable, its default)
FEISHU_WEBHOOK_ENV = {"verification_token": ("verification_token_env", "FEISHU_VERIFICATION_TOKEN"),
                      "encrypt_key": ("encrypt_key_env", "FEISHU_ENCRYPT_KEY")}


@dataclass
class PlatformConfig:
    name: str
    type: str
    table: dict[str, Any]
    secret_env: str
    secret: str = ""
    enabled: bool = True
    access: PlatformAccess = field(default_factory=PlatformAccess)
    toolsets: list[str] | None = None
    #: a second secret some types need (Slack's app-level token) and where it comes from
    app_secret: str = ""
    app_secret_env: str = ""
    #: further secrets by role (Feishu's verification_token / encrypt_key), read from the environment
    more_secrets: dict[str, str] = field(default_factory=dict)

    @property
    def secrets(self) -> list[str]:
        return [s for s in (self.secret, self.app_secret, *self.more_secrets.values()) if s]

    @property
    def problem(self) -> str:
        """Why this platform cannot run here ("" when it can)."""
        if not self.enabled:
            return "disabled (enabled: false)"
        if self.type in NEEDS_SECRET and not self.secret:
            return f"{self.secret_env} is not set"
        if self.app_secret_env and not self.app_secret:
            return f"{self.app_secret_env} is not set"
        if self.type == "teams":
            import importlib.util

            if not self.table.get("app_id"):
                return f"gateway.platforms.{self.name}.app_id is not set (the bot's Microsoft App ID)"
            if importlib.util.find_spec("jwt") is None:
                return "needs PyJWT (pip install 'hermes[messaging]')"
        if self.type == "feishu":
            return self._feishu_problem()
        if self.type == "yuanbao" and not self.table.get("app_id"):
            return f"gateway.platforms.{self.name}.app_id is not set (the bot's App ID / app key)"
        return ""

    def _feishu_problem(self) -> str:
        import importlib.util

        where = f"gateway.platforms.{self.name}"
        if not self.table.get("app_id"):
            return f"{where}.app_id is not set (the app's App ID, cli_…)"
        mode = str(self.table.get("mode") or "long_connection")
        if mode not in ("long_connection", "webhook"):
            return f"{where}.mode is {mode!r}; it is long_connection or webhook"
        if mode == "webhook":
            if not self.more_secrets.get("verification_token"):
                return f"{self.table.get('verification_token_env') or 'FEISHU_VERIFICATION_TOKEN'} is not set " \
                       "(webhook mode checks every event's Verification Token)"
            if self.more_secrets.get("encrypt_key") and importlib.util.find_spec("cryptography") is None:
                return "an Encrypt Key needs cryptography (pip install 'hermes[messaging]')"
        return ""


@dataclass
class GatewayOptions:
    busy_mode: str = "queue"
    max_concurrent_turns: int = 16
    loop_max_events: int = 20
    loop_cooldown_seconds: float = 300.0
    pairing_ttl_seconds: float = 3600.0
    idle_evict_seconds: float = 1800.0
    stream_edits: bool = True
    voice_replies: bool = True


def _names(value: Any, where: str) -> frozenset[str]:
    if value is None:
        return frozenset()
    if isinstance(value, str | int):
        return frozenset({str(value)})
    if isinstance(value, list):
        return frozenset(str(v) for v in value)
    raise ConfigError(f"{where} must be a list of ids")


def options(settings: Settings) -> GatewayOptions:
    from hermes.config.schema import SCHEMA

    def read(leaf: str) -> Any:
        return SCHEMA.read(settings, f"gateway.{leaf}")

    return GatewayOptions(
        busy_mode=read("busy_mode"), max_concurrent_turns=read("max_concurrent_turns"),
        loop_max_events=read("loop_max_events"), loop_cooldown_seconds=read("loop_cooldown_seconds"),
        pairing_ttl_seconds=read("pairing_ttl_seconds"), idle_evict_seconds=read("idle_evict_seconds"),
        stream_edits=read("stream_edits"), voice_replies=read("voice_replies"),
    )


def platforms(settings: Settings) -> list[PlatformConfig]:
    """Every table of ``gateway.platforms`` (refused with a ConfigError naming the key when malformed)."""
    raw = settings.get("gateway.platforms") or {}
    if not isinstance(raw, dict):
        raise ConfigError("gateway.platforms must be a table of platforms (see docs/messaging.md)")
    out = []
    for name, table in raw.items():
        where = f"gateway.platforms.{name}"
        if not isinstance(table, dict):
            raise ConfigError(f"{where} must be a table")
        kind = str(table.get("type") or name)
        if kind not in TYPES:
            raise ConfigError(f"{where}.type is {kind!r}; hermes has {', '.join(TYPES)}")
        env_key, env_default = SECRET_ENV[kind]
        env_name = str(table.get(env_key) or env_default)
        mention_chats = table.get("mention_chats") or {}
        if not isinstance(mention_chats, dict):
            raise ConfigError(f"{where}.mention_chats must map chat ids to true/false")
        access = PlatformAccess(
            allow_users=_names(table.get("allow_users"), f"{where}.allow_users"),
            allow_chats=_names(table.get("allow_chats"), f"{where}.allow_chats"),
            require_mention=bool(table.get("require_mention", True)),
            mention_chats={str(k): bool(v) for k, v in mention_chats.items()},
        )
        toolsets = table.get("toolsets")
        app_env = ""
        if kind == "slack":  # Socket Mode needs the app-level token; HTTP mode the Signing Secret instead
            key, default = SLACK_SIGNING_ENV if table.get("mode") == "http" else APP_TOKEN_ENV
            app_env = str(table.get(key) or default)
        more = {role: settings.env.get(str(table.get(key) or default)) or ""
                for role, (key, default) in FEISHU_WEBHOOK_ENV.items()} if kind == "feishu" else {}
        out.append(PlatformConfig(more_secrets=more,
            app_secret_env=app_env, app_secret=(settings.env.get(app_env) or "") if app_env else "",
            name=str(name), type=kind, table=table, secret_env=env_name, secret=settings.env.get(env_name) or "",
            enabled=bool(table.get("enabled", True)), access=access,
            toolsets=[str(t) for t in toolsets] if isinstance(toolsets, list) else None,
        ))
    return out


def build_adapter(cfg: PlatformConfig, cache: Path | None = None) -> PlatformAdapter:
    """The adapter for one platform table (``cache``: HERMES_HOME's cache folder, for voice messages)."""
    table = cfg.table
    if cfg.type == "telegram":
        from hermes.surfaces.messaging.platforms.telegram import API, TelegramAdapter

        return TelegramAdapter(cfg.secret, base_url=str(table.get("base_url") or API), name=cfg.name,
                               poll_timeout=int(table.get("poll_timeout", 25)),
                               voice_dir=cache / "voice" if cache else None)
    if cfg.type == "discord":
        from hermes.surfaces.messaging.platforms.discord import API as DISCORD_API
        from hermes.surfaces.messaging.platforms.discord import DiscordAdapter

        return DiscordAdapter(cfg.secret, base_url=str(table.get("base_url") or DISCORD_API), name=cfg.name,
                              voice_dir=cache / "voice" if cache else None)
    if cfg.type == "slack":
        from hermes.surfaces.messaging.platforms.slack import API as SLACK_API
        from hermes.surfaces.messaging.platforms.slack import SlackAdapter

        http_mode = table.get("mode") == "http"
        return SlackAdapter(cfg.secret, "" if http_mode else cfg.app_secret, name=cfg.name,
                            base_url=str(table.get("base_url") or SLACK_API), mode="http" if http_mode else "socket",
                            signing_secret=cfg.app_secret if http_mode else "",
                            host=str(table.get("host") or "127.0.0.1"), port=int(table.get("port", 3000)),
                            path=str(table.get("path") or "/slack/events"),
                            voice_dir=cache / "voice" if cache else None)
    if cfg.type == "teams":
        from hermes.surfaces.messaging.platforms import teams

        return teams.TeamsAdapter(str(table["app_id"]), cfg.secret, host=str(table.get("host") or "127.0.0.1"),
                                  port=int(table.get("port", 3978)), name=cfg.name,
                                  openid_url=str(table.get("openid_url") or teams.OPENID_URL),
                                  token_url=str(table.get("token_url") or teams.TOKEN_URL))
    if cfg.type == "feishu":
        from hermes.surfaces.messaging.platforms.feishu import FeishuAdapter
        from hermes.vendors.feishu import FEISHU

        return FeishuAdapter(str(table["app_id"]), cfg.secret, base_url=str(table.get("base_url") or FEISHU),
                             mode=str(table.get("mode") or "long_connection"), name=cfg.name,
                             verification_token=cfg.more_secrets.get("verification_token", ""),
                             encrypt_key=cfg.more_secrets.get("encrypt_key", ""),
                             host=str(table.get("host") or "127.0.0.1"), port=int(table.get("port", 8643)),
                             path=str(table.get("path") or "/feishu/events"),
                             voice_dir=cache / "voice" if cache else None)
    if cfg.type == "yuanbao":
        from hermes.surfaces.messaging.platforms import yuanbao

        if not table.get("app_id"):
            raise ConfigError(f"gateway.platforms.{cfg.name}.app_id is not set (the bot's App ID / app key)")
        return yuanbao.YuanbaoAdapter(str(table["app_id"]), cfg.secret, name=cfg.name,
                                      api=str(table.get("api_url") or yuanbao.API),
                                      ws_url=str(table.get("ws_url") or yuanbao.WS_URL),
                                      instance_id=str(table.get("instance_id") or yuanbao.INSTANCE_ID),
                                      voice_dir=cache / "voice" if cache else None)
    if cfg.type == "irc":
        from hermes.surfaces.messaging.platforms.irc import IrcAdapter

        server = table.get("server")
        if not server:
            raise ConfigError(f"gateway.platforms.{cfg.name}.server is not set (the IRC server's host name)")
        channels = table.get("channels") or []
        return IrcAdapter(str(server), int(table.get("port", 6697 if table.get("tls", True) else 6667)),
                          nick=str(table.get("nick") or "hermes"), channels=[str(c) for c in channels],
                          tls=bool(table.get("tls", True)), password=cfg.secret,
                          sasl_user=str(table.get("sasl_user") or ""), name=cfg.name)
    from hermes.surfaces.messaging.platforms.api_server import ApiServerAdapter

    keys = [k.strip() for k in cfg.secret.split(",") if k.strip()]
    return ApiServerAdapter(host=str(table.get("host") or "127.0.0.1"), port=int(table.get("port", 8642)),
                            keys=keys, name=cfg.name, model_name=str(table.get("model_name") or "hermes-agent"),
                            keys_env=cfg.secret_env)


def default_toolsets(cfg: PlatformConfig, registered: set[str]) -> list[str] | None:
    """The toolsets a new session on this platform gets: the table's ``toolsets``, else
    ``hermes-<type>`` when such a toolset exists (``hermes-discord``), else the messaging default."""
    if cfg.toolsets is not None:
        return cfg.toolsets
    platform_set = f"hermes-{cfg.type}"
    return [platform_set] if platform_set in registered else None
