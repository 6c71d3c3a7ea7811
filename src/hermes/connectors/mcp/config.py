"""The ``mcp_servers:`` section of config.yaml, read into typed server settings (pure; no SDK import).

One entry per server, keyed by its name::

    mcp_servers:
      time:                        # stdio: a program the client starts and talks to over stdin/stdout
        command: mcp-server-time
        args: ["--local-timezone", "UTC"]
        env: {TZ_TOKEN: "${TZ_TOKEN}"}
        cwd: ~/work
      remote:                      # Streamable HTTP (or legacy SSE with ``transport: sse``)
        url: http://127.0.0.1:8000/mcp
        headers: {Authorization: "Bearer ${REMOTE_TOKEN}"}
        timeout: 60                # seconds per tool call
        connect_timeout: 30        # seconds for the handshake and the tool listing
        tools: {include: [search], exclude: [], resources: true, prompts: true}
        elicitation: true          # the server may ask the person for input mid-call
        sampling: false            # the server may ask the model (each request approved by the person)
        enabled: true
      notes:                       # OAuth (MCP authorization): log in once with ``hermes mcp login notes``
        url: https://notes.example.com/mcp
        auth: oauth
        oauth: {scope: "notes:read"}

``${VAR}`` (or ``${env:VAR}``) in ``env``, ``headers``, ``args``, ``url`` and ``cwd`` is filled from the
environment (``.env`` included); an unset variable is an error naming it, never an empty string sent on.
The values filled in are the server's :attr:`McpServerConfig.secrets`: masked in every message.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from hermes.config.reader import ConfigReader
from hermes.errors import ConfigError
from hermes.redact import MASK, is_secret_name, redact

#: a server's name: what the tool names and the CLI use
NAME_RULE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,47}$")
TRANSPORTS = ("stdio", "http", "sse")
DEFAULT_CALL_TIMEOUT = 120.0
DEFAULT_CONNECT_TIMEOUT = 30.0
_VAR = re.compile(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)\}")

EnvLookup = Callable[[str], "str | None"]


@dataclass(frozen=True)
class McpServerConfig:
    """One configured MCP server."""

    name: str
    transport: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    enabled: bool = True
    timeout: float = DEFAULT_CALL_TIMEOUT
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    include: tuple[str, ...] | None = None
    exclude: tuple[str, ...] = ()
    #: whether the server may ask the person for input during a call (MCP elicitation)
    elicitation: bool = True
    #: whether the server may ask the session's model (MCP sampling; each request approved by the person)
    sampling: bool = False
    sampling_max_tokens: int = 1024
    #: the handshake: ``auto`` (the SDK's: the 2026-07-28 protocol when the server has it, else the older
    #: one) or ``legacy`` (always the older handshake, for servers that misbehave with the new one)
    protocol: str = "auto"
    #: whether the server's resources / prompts are offered as tools (when it advertises them)
    resources: bool = True
    prompts: bool = True
    #: ``oauth``: the MCP authorization flow, tokens from ``hermes mcp login`` (:mod:`.oauth`)
    auth: str | None = None
    #: the scopes asked for at login (``oauth.scope``); None: what the server's metadata says
    oauth_scope: str | None = None
    #: values filled in from the environment, and every env/header value: masked wherever shown
    secrets: tuple[str, ...] = ()
    #: what is masked in the server's own results: values filled in from the environment, header
    #: values, and env values that look like keys (a secret-looking name, or 16+ characters with a
    #: digit) — not every env value, so ``TZ: Europe/Paris`` does not blank the time server's answers
    result_secrets: tuple[str, ...] = ()

    def wants(self, tool: str) -> bool:
        """Whether the include/exclude lists let ``tool`` through (``resources/…`` and ``prompts/…``, added
        by hermes, follow ``tools.resources`` and ``tools.prompts`` instead)."""
        if "/" in tool:
            return self.resources if tool.startswith("resources/") else self.prompts
        if self.include is not None and tool not in self.include:
            return False
        return tool not in self.exclude

    def fingerprint(self) -> str:
        """A digest of what decides which server this is (command, args, url, cwd): the key of its cached
        tool listing. Environment and header values are left out, so a rotated token keeps the cache."""
        ident = json.dumps([self.transport, self.command, list(self.args), self.url, self.cwd])
        return hashlib.sha256(ident.encode()).hexdigest()[:16]

    def describe(self) -> str:
        """Where the server is, for people: never with env or header values, and every secret value
        (one filled in from the environment, or written in args or the URL) masked."""
        if self.transport == "stdio":
            where = " ".join([self.command or "", *_masked_flags(self.args)]).strip()
        else:
            where = f"{self.url} ({'SSE' if self.transport == 'sse' else 'Streamable HTTP'})"
        return redact(where, self.secrets)


def _masked_flags(args: tuple[str, ...]) -> list[str]:
    """``args`` with the value of every secret-looking flag masked (``--api-key X``, ``--token=X``)."""
    out: list[str] = []
    hide_next = False
    for arg in args:
        flag, eq, _value = arg.partition("=")
        if hide_next:
            out.append(MASK)
        elif eq and flag.startswith("-") and is_secret_name(flag.lstrip("-").replace("-", "_")):
            out.append(f"{flag}={MASK}")
        else:
            out.append(arg)
        hide_next = arg.startswith("-") and not eq and is_secret_name(arg.lstrip("-").replace("-", "_"))
    return out


def _fill(text: str, lookup: EnvLookup, where: str, filled: list[str]) -> str:
    def repl(match: re.Match[str]) -> str:
        value = lookup(match.group(1))
        if value is None:
            raise ConfigError(f"{where} in config.yaml uses ${{{match.group(1)}}}, which is not set")
        filled.append(value)
        return value

    return _VAR.sub(repl, text)


def _string_map(reader: ConfigReader, key: str, lookup: EnvLookup, filled: list[str]) -> dict[str, str]:
    raw = reader.value(key, {})
    if not isinstance(raw, Mapping):
        raise reader.fail(key, "must be a table of names to strings")
    out: dict[str, str] = {}
    for name, value in raw.items():
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise reader.fail(f"{key}.{name}", "must be a string")
        out[str(name)] = _fill(str(value), lookup, reader.name(f"{key}.{name}"), filled)
    return out


def read_server(name: str, entry: Any, lookup: EnvLookup) -> McpServerConfig:
    """One ``mcp_servers.<name>`` entry; raises :class:`ConfigError` naming the key that is wrong."""
    where = f"mcp_servers.{name}"
    if not NAME_RULE.match(name):
        raise ConfigError(f"{where}: server names are 1-48 letters, digits, '_' or '-', starting with a "
                          "letter or digit")
    if not isinstance(entry, Mapping):
        raise ConfigError(f"{where} in config.yaml must be a table (command: ... or url: ...)")
    reader = ConfigReader(entry, f"{where}.")
    filled: list[str] = []
    command = reader.text("command")
    url = reader.text("url")
    if bool(command) == bool(url):
        raise ConfigError(f"{where} in config.yaml needs exactly one of command (stdio) or url (HTTP)")
    transport = reader.text("transport", "stdio" if command else "http")
    if transport == "streamable-http":
        transport = "http"
    if transport not in TRANSPORTS or (transport == "stdio") != bool(command):
        raise reader.fail("transport", "must be stdio (with command), http or sse (with url)")
    args = tuple(_fill(a, lookup, reader.name("args"), filled) for a in reader.strings("args", ()))
    if url is not None:
        url = _fill(url, lookup, reader.name("url"), filled)
        if not url.startswith(("http://", "https://")):
            raise reader.fail("url", "must start with http:// or https://")
    cwd = reader.text("cwd")
    tools = reader.table("tools")
    include = tools.strings("include", ()) if tools.value("include") is not None else None
    env = _string_map(reader, "env", lookup, filled)
    headers = _string_map(reader, "headers", lookup, filled)
    auth = reader.text("auth")
    if auth not in (None, "oauth"):
        raise reader.fail("auth", "must be oauth (or left out; static tokens go in headers)")
    if auth is not None and transport == "stdio":
        raise reader.fail("auth", "is for HTTP servers (url:); a stdio server gets its keys through env")
    from_env = list(filled)
    filled.extend([*env.values(), *headers.values()])
    keyish = [v for k, v in env.items() if is_secret_name(k) or (len(v) >= 16 and any(c.isdigit() for c in v))]
    return McpServerConfig(
        name=name, transport=transport, command=command, args=args, env=env,
        cwd=_fill(cwd, lookup, reader.name("cwd"), filled) if cwd else None,
        url=url, headers=headers,
        result_secrets=_longest_first([*from_env, *headers.values(), *keyish]),
        enabled=reader.flag("enabled", True),
        timeout=reader.number("timeout", DEFAULT_CALL_TIMEOUT, minimum=1, maximum=3600),
        connect_timeout=reader.number("connect_timeout", DEFAULT_CONNECT_TIMEOUT, minimum=1, maximum=600),
        include=include, exclude=tools.strings("exclude", ()),
        resources=tools.flag("resources", True), prompts=tools.flag("prompts", True),
        elicitation=reader.flag("elicitation", True),
        auth=auth, oauth_scope=reader.table("oauth").text("scope"),
        protocol=_protocol(reader),
        sampling=reader.flag("sampling", False),
        sampling_max_tokens=reader.integer("sampling_max_tokens", 1024, minimum=1, maximum=32768),
        secrets=_longest_first(filled),
    )


def _protocol(reader: ConfigReader) -> str:
    value = reader.text("protocol", "auto") or "auto"
    if value not in ("auto", "legacy"):
        raise reader.fail("protocol", "must be auto or legacy")
    return value


def _longest_first(values: list[str]) -> tuple[str, ...]:
    return tuple(sorted({v for v in values if len(v) >= 4}, key=len, reverse=True))


@dataclass(frozen=True)
class McpSettings:
    """Every configured server, and the entries that could not be read (name → why)."""

    servers: tuple[McpServerConfig, ...] = ()
    errors: Mapping[str, str] = field(default_factory=dict)

    def get(self, name: str) -> McpServerConfig | None:
        return next((s for s in self.servers if s.name == name), None)


def read_servers(section: Any, lookup: EnvLookup) -> McpSettings:
    """All of ``mcp_servers:``; one bad entry is reported in ``errors`` and never hides the others."""
    if section is None:
        return McpSettings()
    if not isinstance(section, Mapping):
        return McpSettings(errors={"mcp_servers": "mcp_servers in config.yaml must be a table of servers"})
    servers: list[McpServerConfig] = []
    errors: dict[str, str] = {}
    for name, entry in section.items():
        try:
            servers.append(read_server(str(name), entry, lookup))
        except ConfigError as exc:
            errors[str(name)] = str(exc)
    return McpSettings(tuple(servers), errors)
