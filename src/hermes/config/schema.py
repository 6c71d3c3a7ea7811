"""The typed schema of config.yaml: every key hermes reads, its kind, default and allowed range.

:data:`SCHEMA` is the one place that says what a key may hold. The settings reader
(:class:`hermes.config.settings.Settings`) and the feature readers read their keys through it
(:meth:`Schema.read`), and ``hermes config set`` checks a new value against it before anything is
written (:meth:`Schema.check_assignment`), so a value the reader would refuse is refused on write with
the same words: ``agent.max_iterations in config.yaml must be a whole number from 1 to 10000; got -5``.
An unknown key is refused with the nearest known one (``did you mean model.name?``).

Sections whose vendors or plugins keep their own tables (``tts.openai.model``, ``plugins.weather.units``)
declare them open (:attr:`Section.open_tables`): any key below such a table is accepted as written.
The type checks themselves are :class:`~hermes.config.reader.ConfigReader`'s.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from hermes.config.providers import LOCAL_PROVIDER, PROVIDERS
from hermes.config.reader import ConfigReader
from hermes.errors import ConfigError

Kind = Literal["integer", "number", "flag", "text", "url", "choice", "names", "list", "mapping", "any"]
#: "every table below this section is open" (vendor tables such as ``tts.openai``)
ANY_TABLE = "*"
_SCHEMES = ("http", "https")


@dataclass(frozen=True)
class Key:
    """One config key: its dotted name, kind, default and (for numbers) range or (for choices) words."""

    name: str
    kind: Kind
    default: Any = None
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()

    def read(self, value: Any) -> Any:
        """``value`` checked (None: the default); a ConfigError naming the key and what it must be."""
        parent, _, leaf = self.name.rpartition(".")
        reader = ConfigReader({leaf: value}, f"{parent}." if parent else "")
        try:
            return _READS[self.kind](self, reader, leaf)
        except ConfigError as exc:
            if value is None:
                raise
            raise ConfigError(f"{exc}; got {_show(value)}") from None


def _integer(key: Key, reader: ConfigReader, leaf: str) -> Any:
    low = int(key.minimum or 0)
    top = None if key.maximum is None else int(key.maximum)
    if reader.value(leaf) is None and key.default is None:
        return None
    return reader.integer(leaf, key.default, minimum=low, maximum=top)


def _number(key: Key, reader: ConfigReader, leaf: str) -> Any:
    if reader.value(leaf) is None and key.default is None:
        return None
    return reader.number(leaf, key.default, minimum=key.minimum or 0.0, maximum=key.maximum)


def _url(key: Key, reader: ConfigReader, leaf: str) -> Any:
    text = reader.text(leaf, key.default)
    if text is not None and not is_http_url(text):
        raise reader.fail(leaf, url_rule(text))
    return text


def is_http_url(text: str) -> bool:
    """Whether ``text`` is an http:// or https:// URL with a host (and a numeric port, if any)."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(text)
        _ = parts.port  # a port that is not a number raises here
    except ValueError:
        return False
    return parts.scheme in _SCHEMES and bool(parts.hostname)


def url_rule(text: str) -> str:
    """What a URL must be, with the likely fix for ``text`` (a missing ``http://``)."""
    rule = "must be an http:// or https:// URL with a host, such as https://openrouter.ai/api/v1"
    if "://" not in text and is_http_url(f"http://{text}"):
        rule += f" (did you mean http://{text}?)"
    return rule


def _choice(key: Key, reader: ConfigReader, leaf: str) -> Any:
    word = reader.text(leaf, key.default)
    if word is not None and word not in key.choices:
        raise reader.fail(leaf, f"must be one of: {', '.join(key.choices)}")
    return word


def _names(key: Key, reader: ConfigReader, leaf: str) -> Any:
    value = reader.value(leaf)
    if value is None:
        return key.default
    if isinstance(value, str):
        return tuple(v.strip() for v in value.split(",") if v.strip())
    return reader.strings(leaf, ())


def _of_type(kind: type, words: str) -> Callable[[Key, ConfigReader, str], Any]:
    def read(key: Key, reader: ConfigReader, leaf: str) -> Any:
        value = reader.value(leaf, key.default)
        if value is not None and not isinstance(value, kind):
            raise reader.fail(leaf, f"must be {words}")
        return value

    return read


_READS: dict[Kind, Callable[[Key, ConfigReader, str], Any]] = {
    "integer": _integer,
    "number": _number,
    "flag": lambda key, reader, leaf: reader.flag(leaf, bool(key.default)),
    "text": lambda key, reader, leaf: reader.text(leaf, key.default),
    "url": _url,
    "choice": _choice,
    "names": _names,
    "list": _of_type(list, "a list"),
    "mapping": _of_type(Mapping, "a mapping (a table of keys)"),
    "any": lambda key, reader, leaf: reader.value(leaf, key.default),
}


def _show(value: Any) -> str:
    return repr(value) if isinstance(value, str) else str(value)


@dataclass(frozen=True)
class Section:
    """A top-level section and the keys it holds (names relative to the section)."""

    name: str
    keys: tuple[Key, ...]
    #: tables below the section that hold free-form keys (``ANY_TABLE``: every table)
    open_tables: tuple[str, ...] = ()


class Schema:
    """All sections and top-level keys; looks keys up, reads them and checks assignments."""

    def __init__(self, sections: tuple[Section, ...], top_keys: tuple[Key, ...]) -> None:
        self.sections = {s.name: s for s in sections}
        self.keys: dict[str, Key] = {k.name: k for k in top_keys}
        for section in sections:
            self.keys.update((k.name, k) for k in section.keys)

    def key(self, name: str) -> Key:
        """The declared key ``name`` (a KeyError for a name the schema does not know)."""
        return self.keys[name]

    def read(self, source: Mapping[str, Any] | Any, name: str) -> Any:
        """Key ``name`` of ``source`` (anything with ``get(dotted_key)``) checked, or its default."""
        return self.key(name).read(source.get(name))

    def knows(self, name: str) -> bool:
        """Whether ``name`` is a declared key or lies in an open table."""
        return name in self.keys or self._is_open(name)

    def check_assignment(self, name: str, value: Any) -> None:
        """Refuse ``name = value`` when the key is unknown or the value is of the wrong kind or range."""
        if name in self.keys:
            self.keys[name].read(value)
            return
        if self._is_open(name):
            return
        below = [k for k in self.keys if k.startswith(f"{name}.")]
        if below or name in self.sections:
            if not isinstance(value, Mapping):
                raise ConfigError(f"{name} in config.yaml is a section; set one of its keys, e.g. "
                                  f"{(below or [name + '.…'])[0]}")
            for sub, sub_value in value.items():
                self.check_assignment(f"{name}.{sub}", sub_value)
            return
        raise ConfigError(self._unknown(name))

    def _is_open(self, name: str) -> bool:
        top, _, rest = name.partition(".")
        section = self.sections.get(top)
        if section is None or not rest:
            return False
        table, dot, _ = rest.partition(".")
        if table in section.open_tables:
            return True
        return ANY_TABLE in section.open_tables and bool(dot) and f"{top}.{table}" not in self.keys

    def _unknown(self, name: str) -> str:
        known = sorted(self.keys)
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
        if not close:  # a typo in the section name: match on the section, keep the rest
            top, _, rest = name.partition(".")
            section = difflib.get_close_matches(top, sorted(self.sections), n=1, cutoff=0.6)
            if section:
                guess = f"{section[0]}.{rest}" if rest else section[0]
                close = [guess] if self.knows(guess) else difflib.get_close_matches(
                    guess, known, n=1, cutoff=0.5) or [guess]
        hint = f"; did you mean {close[0]}?" if close else ""
        return (f"unknown config key {name}{hint} The keys hermes reads are listed in docs/configuration.md "
                "(plugins keep theirs under plugins.NAME.…).")


def _section(name: str, *keys: tuple[Any, ...], open_tables: tuple[str, ...] = ()) -> Section:
    built = []
    for leaf, kind, *rest in keys:
        options = dict(rest[0]) if rest else {}
        built.append(Key(f"{name}.{leaf}", kind, **options))
    return Section(name, tuple(built), open_tables)


_APPROVAL_MODES = ("ask", "manual", "smart", "yolo", "off", "deny")
_ROUTED = (("use_gateway", "flag"),)

SCHEMA = Schema(
    (
        _section(
            "model",
            ("provider", "choice", {"choices": (*PROVIDERS, LOCAL_PROVIDER)}),
            ("base_url", "url"),
            ("name", "text"),
            ("api_key_env", "text"),
            ("api_key", "text"),
            ("timeout", "number", {"default": 120.0, "minimum": 1, "maximum": 3600}),
            ("max_retries", "integer", {"default": 3, "minimum": 0, "maximum": 10}),
            ("temperature", "number", {"minimum": 0, "maximum": 2}),
            ("path", "text"),
            ("context_length", "integer", {"default": 4096, "minimum": 256, "maximum": 1_048_576}),
            ("threads", "integer", {"default": 0, "minimum": 0, "maximum": 1024}),
            ("stream", "flag", {"default": True}),
            ("vision", "flag", {"default": False}),
        ),
        _section(
            "agent",
            ("max_iterations", "integer", {"default": 30, "minimum": 1, "maximum": 10_000}),
            ("max_parallel_tools", "integer", {"default": 4, "minimum": 1, "maximum": 64}),
            ("tool_result_budget", "integer", {"default": 50_000, "minimum": 1000}),
            ("disabled_toolsets", "names", {"default": ()}),
            ("system_prompt", "text"),
        ),
        _section("file", ("allowed_roots", "list"),
                 ("search_time_limit", "number", {"default": 30.0, "minimum": 0.1, "maximum": 600})),
        _section(
            "terminal", ("env_passthrough", "names"), ("cwd", "text"),
            # execution backends (docs/backends.md): local (default), ssh, docker, modal or a plugin's name
            ("backend", "text", {"default": "local"}), ("keep_sandbox", "flag", {"default": False}),
            ("ssh.host", "text"), ("ssh.port", "integer", {"default": 22, "minimum": 1, "maximum": 65535}),
            ("ssh.user", "text"), ("ssh.key_file", "text"), ("ssh.known_hosts", "text"),
            ("ssh.host_key_check", "flag", {"default": True}), ("ssh.use_agent", "flag", {"default": True}),
            ("ssh.connect_timeout", "number", {"default": 10.0, "minimum": 1, "maximum": 300}), ("ssh.cwd", "text"),
            ("docker.image", "text"), ("docker.memory", "text"), ("docker.cpus", "number", {"minimum": 0.01}),
            ("docker.pids_limit", "integer", {"minimum": 1}), ("docker.network", "text"), ("docker.mounts", "list"),
            ("docker.base_url", "text"), ("docker.cwd", "text"),
            ("modal.image", "text"), ("modal.cpu", "number", {"minimum": 0.01, "maximum": 1024}),
            ("modal.memory_mib", "integer", {"minimum": 64}), ("modal.lifetime", "number", {"minimum": 1}),
            ("modal.idle_timeout", "number", {"minimum": 1}), ("modal.cwd", "text"),
        ),
        _section(
            "approvals",
            ("mode", "choice", {"default": "ask", "choices": _APPROVAL_MODES}),
            ("cron_mode", "choice", {"default": "deny", "choices": _APPROVAL_MODES}),
            ("allow", "list"),
            ("safe_programs", "list"),
        ),
        _section(
            "kanban",
            ("attachment_max_bytes", "integer", {"minimum": 1}),
            ("heartbeat_timeout_seconds", "number", {"default": 900.0, "minimum": 1}),
            ("heartbeat_every_seconds", "number", {"default": 60.0, "minimum": 0}),
            ("max_failures", "integer", {"default": 3, "minimum": 1, "maximum": 100}),
            ("max_parallel", "integer", {"default": 2, "minimum": 1, "maximum": 256}),
            ("max_runtime_seconds", "number", {"default": 3600.0, "minimum": 1}),
            ("max_running", "integer", {"default": 0, "minimum": 0}),
            ("max_per_assignee", "integer", {"default": 0, "minimum": 0}),
            ("retry_backoff_seconds", "number", {"default": 30.0, "minimum": 0}),
            ("max_backoff_seconds", "number", {"default": 3600.0, "minimum": 0}),
            ("nudges", "integer", {"default": 2, "minimum": 0, "maximum": 10}),
            # a PostgreSQL board shared by several machines (docs/tools/kanban.md#postgresql)
            ("database_url", "text"),
            # the board inside hermes gateway run (docs/tools/kanban.md#inside-the-messaging-gateway)
            ("gateway_dispatch", "flag", {"default": False}),
            ("notify", "list"),
            ("gateway_interval_seconds", "number", {"default": 5.0, "minimum": 0.1}),
        ),
        # one table per MCP server (docs/tools/mcp.md): their keys are checked when the server is read
        _section("mcp_servers", open_tables=(ANY_TABLE,)),
        # how MCP servers' tools are offered (docs/tools/mcp.md#index-mode)
        _section(
            "mcp",
            ("tool_index", "choice", {"default": "auto", "choices": ("auto", "always", "never")}),
            ("index_threshold", "integer", {"default": 40, "minimum": 0, "maximum": 10000}),
        ),
        _section(
            "sandbox",
            ("mode", "choice", {"default": "workspace-write",
                                "choices": ("workspace-write", "read-only", "full-access")}),
            ("writable_paths", "list"),
            ("network", "flag", {"default": False}),
            # set by an open desktop project for its session (docs/tools/project.md), not written by hand
            open_tables=("folder_identities",),
        ),
        _section(
            "code_execution",
            ("allowed_tools", "names"), ("env_passthrough", "names"),
            ("max_tool_calls", "integer", {"minimum": 0, "maximum": 100_000}),
            ("timeout", "integer", {"minimum": 1, "maximum": 600}),
            ("max_output_chars", "integer", {"minimum": 1000, "maximum": 1_000_000}),
            ("max_stderr_chars", "integer", {"minimum": 1000, "maximum": 1_000_000}),
        ),
        _section("memory", ("enabled", "flag", {"default": True}),
                 ("memory_char_limit", "integer", {"minimum": 1}), ("user_char_limit", "integer", {"minimum": 1})),
        _section("clarify", ("timeout_seconds", "number", {"minimum": 0})),
        _section(
            "delegation",
            ("max_iterations", "integer", {"minimum": 1}),
            ("max_concurrent_children", "integer", {"minimum": 1}),
            ("max_depth", "integer", {"minimum": 0}),
            ("child_timeout_seconds", "number", {"minimum": 0}),
        ),
        _section("cron", ("grace_seconds", "integer", {"default": 3600, "minimum": 0, "maximum": 366 * 86400})),
        _section(
            "batch", ("distributions", "mapping"),
            # model rate limits of a batch run, across all its workers (on Ray: across the cluster)
            ("requests_per_minute", "number", {"minimum": 0.001}),
            ("max_concurrent_requests", "integer", {"minimum": 1}),
            # hermes batch --ray: reruns of a prompt whose worker or node died; CPUs a prompt reserves
            ("retries", "integer", {"default": 2, "minimum": 0, "maximum": 20}),
            ("cpus_per_prompt", "number", {"default": 1.0, "minimum": 0.01, "maximum": 64}),
        ),
        _section(
            "web", *_ROUTED,
            ("backend", "text"), ("search_backend", "text"), ("extract_backend", "text"),
            ("allow_loopback", "flag"), ("allow_private", "flag"),
            ("fetch_timeout", "number", {"default": 20.0, "minimum": 1, "maximum": 300}),
            ("fetch_max_bytes", "integer", {"default": 10 * 2**20, "minimum": 65_536, "maximum": 200 * 2**20}),
            ("extract_max_chars", "integer", {"default": 30_000, "minimum": 1000, "maximum": 1_000_000}),
            open_tables=(ANY_TABLE,),
        ),
        _section("image_gen", *_ROUTED, ("provider", "text"), ("model", "text"), open_tables=(ANY_TABLE,)),
        _section("tts", *_ROUTED, ("provider", "text"), open_tables=(ANY_TABLE,)),
        _section("stt", *_ROUTED, ("provider", "text"), open_tables=(ANY_TABLE,)),
        _section(
            "browser", *_ROUTED, ("cloud_provider", "text"), ("cdp_url", "text"), ("chromium", "text"),
            ("allow_private_urls", "flag", {"default": False}), ("persist_profile", "flag", {"default": False}),
            ("headless", "flag", {"default": True}),
            ("snapshot_budget", "integer", {"default": 8000, "minimum": 500, "maximum": 200_000}),
            ("inactivity_timeout", "number", {"default": 300.0, "minimum": 10, "maximum": 86_400}),
            ("command_timeout", "number", {"default": 30.0, "minimum": 1, "maximum": 300}),
            ("download_max_bytes", "integer", {"default": 50 * 2**20, "minimum": 1024, "maximum": 4 * 2**30}),
            ("dialog_policy", "choice", {"default": "dismiss", "choices": ("dismiss", "accept")}),
            ("vault.enabled", "flag", {"default": False}),
            open_tables=(ANY_TABLE,),
        ),
        _section(
            "computer_use",
            ("display", "choice", {"default": "xvfb", "choices": ("xvfb", "own")}),
            ("xvfb", "text", {"default": "Xvfb"}),
            ("screen_size", "text", {"default": "1280x800"}),
            ("screenshot_size", "text", {"default": "1280x800"}),
            ("image_format", "choice", {"default": "png", "choices": ("png", "jpeg")}),
            ("window_manager", "text", {"default": "auto"}),
            ("startup", "list"),
            ("accessibility", "flag", {"default": True}),
            ("kill_hotkey", "text", {"default": "ctrl+alt+Escape"}),
        ),
        _section("video_gen", *_ROUTED, ("provider", "text"), ("model", "text"),
                 ("poll_seconds", "number", {"default": 5.0, "minimum": 0.001, "maximum": 300}),
                 ("wait_seconds", "number", {"default": 600.0, "minimum": 0, "maximum": 86_400}),
                 ("auto_resume", "flag", {"default": True}),
                 open_tables=(ANY_TABLE,)),
        _section(
            "vision",
            ("base_url", "url"), ("model", "text"), ("api_key_env", "text"),
            ("timeout", "number", {"minimum": 5, "maximum": 900}),
            ("max_image_bytes", "integer", {"minimum": 1024, "maximum": 200 * 2**20}),
            ("max_video_bytes", "integer", {"minimum": 1024, "maximum": 2**30}),
        ),
        _section("x_search", ("base_url", "url"), ("model", "text"),
                 ("timeout_seconds", "number", {"minimum": 10, "maximum": 900})),
        _section("security", ("allow_private_urls", "flag")),
        _section("discord", ("api_base_url", "url"), ("server_actions", "names")),
        # the messaging gateway (docs/messaging.md); one free-form table per platform under gateway.platforms
        _section(
            "gateway",
            ("busy_mode", "choice", {"default": "queue", "choices": ("queue", "interrupt")}),
            ("max_concurrent_turns", "integer", {"default": 16, "minimum": 1, "maximum": 1024}),
            ("loop_max_events", "integer", {"default": 20, "minimum": 1, "maximum": 10_000}),
            ("loop_cooldown_seconds", "number", {"default": 300.0, "minimum": 0, "maximum": 86_400}),
            ("pairing_ttl_seconds", "number", {"default": 3600.0, "minimum": 60, "maximum": 7 * 86_400}),
            ("idle_evict_seconds", "number", {"default": 1800.0, "minimum": 0}),
            ("stream_edits", "flag", {"default": True}),
            ("voice_replies", "flag", {"default": True}),
            open_tables=("platforms",),
        ),
        # the app server, ``hermes serve`` (docs/app-server.md)
        _section(
            "serve",
            ("host", "text", {"default": "127.0.0.1"}),
            ("port", "integer", {"default": 8765, "minimum": 0, "maximum": 65535}),
            ("max_concurrent_turns", "integer", {"default": 16, "minimum": 1, "maximum": 1024}),
            # a remote backend over SSH (--ssh HOST): more ssh arguments, how hermes is run there
            ("ssh_options", "list"), ("remote_command", "text", {"default": "hermes"}),
            ("require_token", "flag", {"default": True}),
        ),
        # the desktop app's appearance (docs/desktop.md): tips and tours off also drop show_tip / gui_tour
        _section(
            "display",
            ("in_app_tips", "flag", {"default": True}),
            ("in_app_tours", "flag", {"default": True}),
            ("theme", "choice", {"default": "system", "choices": ("system", "light", "dark")}),
        ),
        _section("plugins", open_tables=(ANY_TABLE,)),
    ),
    (Key("toolsets", "names"), Key("tool_gateway_declined_tools", "names")),
)

__all__ = ["ANY_TABLE", "SCHEMA", "Key", "Schema", "Section", "is_http_url", "url_rule"]
