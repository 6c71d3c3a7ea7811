"""Connector apps described by OpenAPI documents: an operator adds an app with a file, not code (issue 16).

``[connectors.apps.<app>]`` in the gateway config names the app's document (``openapi = "gmail.json"``,
JSON or YAML) and optionally ``base_url`` (else the document's first ``servers`` URL), ``title``,
``auth_header`` (``authorization``) and ``auth_scheme`` (``Bearer``): how the account's stored provider
token is sent. Every operation with an ``operationId`` becomes one **action**; its input schema is made
of the operation's path and query parameters plus the properties of its JSON request body (or one
``body`` argument when the body is not an object or its names clash). Only local ``$ref``s
(``#/components/...``) are followed: a document never makes the gateway fetch anything.

Pure functions and frozen values: :func:`load_app` reads one document, :meth:`Action.request` turns
arguments into the HTTP request to send. The relay that runs them is
:mod:`hermes.toolgateway.relays.connector_actions`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from hermes.errors import ConfigError

if TYPE_CHECKING:
    from hermes.toolgateway.connector_oauth import OAuthProvider

METHODS = ("get", "post", "put", "patch", "delete")
ACTION_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
MAX_DOCUMENT_BYTES = 4 * 1024 * 1024
_REF_DEPTH = 32


@dataclass(frozen=True)
class AppConfig:
    """``[connectors.apps.<app>]``: where the app's document is and how its token is sent."""

    app: str
    #: the OpenAPI document (a REST app), or None for an app served by an MCP server (``mcp``)
    openapi: Path | None
    base_url: str | None = None
    title: str | None = None
    auth_header: str = "authorization"
    auth_scheme: str = "Bearer"
    #: ``[connectors.apps.<app>.oauth]``: the provider people connect accounts at (None: operator-recorded)
    oauth: OAuthProvider | None = None
    #: ``[connectors.apps.<app>.mcp]``: the stdio MCP server the gateway runs for this app
    mcp: McpAppConfig | None = None


@dataclass(frozen=True)
class McpAppConfig:
    """``[connectors.apps.<app>.mcp]``: ``command``, ``args``, ``env``, ``cwd``, ``timeout`` (seconds per
    call, at most the 5-minute deadline) and ``connect_timeout``. One server process serves every account
    of the app (it holds its own credentials, from ``env``); it sees only the SDK's default environment
    plus ``env``, never the gateway's."""

    command: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict, repr=False)
    cwd: str | None = None
    timeout: float = 120.0
    connect_timeout: float = 30.0


@dataclass(frozen=True)
class Action:
    """One operation of an app's document."""

    name: str
    method: str
    path: str
    description: str
    input_schema: Mapping[str, Any]
    path_params: tuple[str, ...] = ()
    query_params: tuple[str, ...] = ()
    #: the body's argument names (merged into the arguments), or ("body",) for a whole-body argument
    body_params: tuple[str, ...] = ()
    whole_body: bool = False

    def summary(self) -> dict[str, Any]:
        return {"action": self.name, "description": self.description.split("\n", 1)[0][:200]}

    def request(self, base_url: str, arguments: Mapping[str, Any]) -> tuple[str, str, dict[str, Any], Any]:
        """``(method, url, query, json body or None)`` for these (already validated) arguments."""
        path = self.path
        for name in self.path_params:
            path = path.replace("{" + name + "}", path_value(arguments[name]))
        query = {k: _query_value(arguments[k]) for k in self.query_params if arguments.get(k) is not None}
        body: Any = None
        if self.whole_body:
            body = arguments.get("body")
        elif self.body_params:
            body = {k: arguments[k] for k in self.body_params if k in arguments}
        return self.method.upper(), base_url.rstrip("/") + path, query, body


def path_value(value: Any) -> str:
    """A path argument as one opaque segment: ``/`` and every other reserved character percent-encoded, and
    dots too (``.`` / ``..`` would be a dot segment that HTTP clients resolve: ``/users/..`` is ``/``)."""
    return quote(str(value), safe="").replace(".", "%2E")


def _query_value(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return [_query_value(v) for v in value]
    return value if isinstance(value, str | int | float) else json.dumps(value)


@dataclass(frozen=True)
class App:
    """An app as the gateway serves it: its config and its actions by name."""

    config: AppConfig
    base_url: str
    title: str
    actions: Mapping[str, Action] = field(default_factory=dict)

    def describe(self) -> dict[str, Any]:
        return {"app": self.config.app, "app_title": self.title, "actions": len(self.actions)}


def _resolve(document: Mapping[str, Any], node: Any, depth: int = 0) -> Any:
    """``node`` with local ``$ref``s replaced by what they point at (remote ones are refused)."""
    if depth > _REF_DEPTH:
        raise ConfigError("the OpenAPI document's $refs nest too deeply (or loop)")
    if isinstance(node, Mapping):
        ref = node.get("$ref")
        if isinstance(ref, str):
            if not ref.startswith("#/"):
                raise ConfigError(f"only local $refs are followed in a connector document, not {ref!r}")
            target: Any = document
            for part in ref[2:].split("/"):
                part = part.replace("~1", "/").replace("~0", "~")
                if not isinstance(target, Mapping) or part not in target:
                    raise ConfigError(f"the $ref {ref!r} points at nothing")
                target = target[part]
            return _resolve(document, target, depth + 1)
        return {k: _resolve(document, v, depth + 1) for k, v in node.items()}
    if isinstance(node, list):
        return [_resolve(document, v, depth + 1) for v in node]
    return node


def _action(document: Mapping[str, Any], path: str, method: str, op: Mapping[str, Any],
            shared: list[Any]) -> Action | None:
    name = op.get("operationId")
    if not isinstance(name, str):
        return None
    if not ACTION_NAME.match(name):
        raise ConfigError(f"operationId {name!r} is not an action name (letters, digits, _ . -, up to 64)")
    props: dict[str, Any] = {}
    required: list[str] = []
    path_params: list[str] = []
    query_params: list[str] = []
    for raw in [*shared, *(op.get("parameters") or [])]:
        param = _resolve(document, raw)
        where, pname = param.get("in"), param.get("name")
        if where not in ("path", "query") or not isinstance(pname, str):
            continue  # headers and cookies are the gateway's business, not the model's
        schema = dict(param.get("schema") or {"type": "string"})
        if param.get("description"):
            schema.setdefault("description", str(param["description"]))
        props[pname] = schema
        (path_params if where == "path" else query_params).append(pname)
        if where == "path" or param.get("required"):
            required.append(pname)
    body_params: list[str] = []
    whole_body = False
    body = _resolve(document, op.get("requestBody") or {})
    content = (body.get("content") or {}).get("application/json") if isinstance(body, Mapping) else None
    if isinstance(content, Mapping):
        schema = content.get("schema") or {}
        fields = schema.get("properties") if schema.get("type", "object") == "object" else None
        if isinstance(fields, Mapping) and fields and not set(fields) & set(props):
            props.update(fields)
            body_params = list(fields)
            required += [r for r in schema.get("required") or [] if r in fields]
        else:
            props["body"] = schema
            whole_body = True
            if body.get("required"):
                required.append("body")
    text = "\n".join(str(op[k]) for k in ("summary", "description") if op.get(k)) or f"{method.upper()} {path}"
    input_schema: dict[str, Any] = {"type": "object", "properties": props, "additionalProperties": False}
    if required:
        input_schema["required"] = list(dict.fromkeys(required))
    return Action(name, method, path, text, input_schema, tuple(path_params), tuple(query_params),
                  tuple(body_params), whole_body)


def parse_document(config: AppConfig, document: Mapping[str, Any]) -> App:
    """The app an OpenAPI document describes (ConfigError naming what is wrong)."""
    paths = document.get("paths")
    if not isinstance(paths, Mapping):
        raise ConfigError(f"connector app {config.app}: the OpenAPI document has no paths")
    actions: dict[str, Action] = {}
    for path, item in paths.items():
        if not isinstance(item, Mapping):
            continue
        shared = list(item.get("parameters") or [])
        for method in METHODS:
            op = item.get(method)
            if isinstance(op, Mapping):
                action = _action(document, str(path), method, op, shared)
                if action is not None:
                    if action.name in actions:
                        raise ConfigError(f"connector app {config.app}: operationId {action.name} appears twice")
                    actions[action.name] = action
    base_url = config.base_url
    if base_url is None:
        servers = document.get("servers")
        first = servers[0] if isinstance(servers, list) and servers else None
        base_url = first.get("url") if isinstance(first, Mapping) else None
    if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
        raise ConfigError(f"connector app {config.app}: set base_url (the document has no http(s) servers URL)")
    info = document.get("info")
    info = info if isinstance(info, Mapping) else {}
    from hermes.connectors.naming import app_title

    title = config.title or app_title(config.app) or str(info.get("title") or config.app)
    return App(config, base_url, title, actions)


def load_app(config: AppConfig) -> App:
    """Read and parse ``config.openapi`` (JSON, or YAML by suffix); an MCP app has its actions listed by
    its server when the gateway starts (:mod:`hermes.toolgateway.relays.connector_mcp`)."""
    if config.openapi is None:
        from hermes.connectors.naming import app_title

        return App(config, "", config.title or app_title(config.app) or config.app, {})
    try:
        raw = config.openapi.read_bytes()
    except OSError as exc:
        raise ConfigError(f"connector app {config.app}: cannot read {config.openapi}: {exc}") from None
    if len(raw) > MAX_DOCUMENT_BYTES:
        raise ConfigError(f"connector app {config.app}: {config.openapi} is larger than 4 MiB")
    try:
        if config.openapi.suffix.lower() in (".yaml", ".yml"):
            from ruamel.yaml import YAML

            document: Any = YAML(typ="safe").load(raw.decode("utf-8"))
        else:
            document = json.loads(raw)
    except Exception as exc:  # json and ruamel raise their own types
        raise ConfigError(f"connector app {config.app}: {config.openapi} is not valid: {exc}") from None
    if not isinstance(document, Mapping):
        raise ConfigError(f"connector app {config.app}: {config.openapi} is not an OpenAPI document")
    return parse_document(config, document)


def _mcp_config(read: Any) -> McpAppConfig | None:
    if read.value("mcp") is None:
        return None
    mcp = read.table("mcp")
    command = mcp.text("command")
    if not command:
        raise mcp.fail("command", "is required (the MCP server's program)")
    env = mcp.value("env", {})
    if not isinstance(env, Mapping) or not all(isinstance(v, str) for v in env.values()):
        raise mcp.fail("env", "must be a table of strings")
    return McpAppConfig(command, mcp.strings("args", ()), {str(k): v for k, v in env.items()}, mcp.text("cwd"),
                        mcp.number("timeout", 120.0, minimum=1.0, maximum=300.0),
                        mcp.number("connect_timeout", 30.0, minimum=1.0, maximum=300.0))


def app_configs(table: Mapping[str, Any], base: Path, env: Mapping[str, str] | None = None,
                default_redirect: str | None = None) -> dict[str, AppConfig]:
    """``[connectors.apps]`` of the gateway config (relative paths from ``base``, the config's folder;
    ``env`` for the OAuth client secrets, ``default_redirect`` the callback URL when an app names none)."""
    from hermes.connectors.naming import valid_app
    from hermes.toolgateway.configread import TableReader
    from hermes.toolgateway.connector_oauth import provider_config

    out: dict[str, AppConfig] = {}
    for app, raw in table.items():
        if not valid_app(str(app)):
            raise ConfigError(f"gateway config: connectors.apps.{app}: not a connector id (a-z, 0-9, - and _)")
        if not isinstance(raw, Mapping):
            raise ConfigError(f"gateway config: connectors.apps.{app} must be a table")
        read = TableReader(raw, f"connectors.apps.{app}.")
        spec = read.text("openapi")
        mcp = _mcp_config(read)
        if not spec and mcp is None:
            raise ConfigError(f"gateway config: connectors.apps.{app}.openapi is required (the OpenAPI document), "
                              "or an [mcp] table (the MCP server the gateway runs for the app)")
        if spec and mcp is not None:
            raise ConfigError(f"gateway config: connectors.apps.{app} has both openapi and mcp; give one")
        if mcp is not None and read.value("oauth") is not None:
            raise ConfigError(f"gateway config: connectors.apps.{app} has both mcp and oauth; give one. An MCP "
                              "app's server runs with the operator's own credentials (its env), never an "
                              "account's token, so every OAuth-connected user would act as the operator")
        path = Path(spec).expanduser() if spec else None
        oauth = (provider_config(read.table("oauth"), env or {}, default_redirect)
                 if read.value("oauth") is not None else None)
        out[str(app)] = AppConfig(str(app), path if path is None or path.is_absolute() else base / path,
                                  read.text("base_url"), read.text("title"),
                                  (read.text("auth_header", "authorization") or "authorization").lower(),
                                  read.text("auth_scheme", "Bearer") or "", oauth, mcp)
    return out
