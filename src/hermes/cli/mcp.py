"""``hermes mcp``: the MCP servers of ``mcp_servers:`` in config.yaml (docs/tools/mcp.md).

* ``hermes mcp list [--json]`` (also the default) — each server, where it is, and how it did last;
* ``hermes mcp add NAME [--url URL] [--header K=V] [--env K=V] [--cwd DIR] [--timeout S]
  [--include T,…] [--exclude T,…] [--replace] [--no-test] [--command 'COMMAND ARGS…']`` — writes the entry
  (keeping the file's comments), then connects once, so the next session offers its tools at once;
  a literal secret in ``--header``/``--env`` is refused: write ``${VAR}`` and keep the value in ``.env``;
* ``hermes mcp remove NAME`` — deletes the entry, keeping the comments around it;
* ``hermes mcp test NAME [--timeout S]`` — connects now, lists the tools; exit status 1 when it fails;
* ``hermes mcp login NAME [--no-browser] [--timeout S] [--forget]`` — the OAuth login of an ``auth: oauth``
  server (:mod:`hermes.cli.mcp_login`); ``--forget`` deletes its stored tokens.

Only argparse is imported at module level.
"""

from __future__ import annotations

import argparse
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hermes.config.settings import Settings

_REFERENCE = re.compile(r"^\$\{(?:env:)?[A-Za-z_][A-Za-z0-9_]*\}$")


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="mcp_command", metavar="SUBCOMMAND")
    p = sub.add_parser("list", help="list the configured MCP servers and how each did last")
    p.add_argument("--json", action="store_true", help="print JSON")
    p = sub.add_parser("add", help="add a server: --url URL, or --command 'COMMAND ARGS...' for a stdio server")
    p.add_argument("name", help="the server's name (letters, digits, _ or -): tools are mcp_<name>_<tool>")
    p.add_argument("--url", help="a Streamable HTTP endpoint (with --transport sse: a legacy SSE endpoint)")
    p.add_argument("--transport", choices=["stdio", "http", "sse"],
                   help="default: stdio with a command, http with --url")
    p.add_argument("--header", action="append", default=[], metavar="K=V", help="an HTTP header (repeatable)")
    p.add_argument("--env", action="append", default=[], metavar="K=V", help="a variable for the server (repeatable)")
    p.add_argument("--cwd", help="the stdio server's working directory")
    p.add_argument("--timeout", type=float, help="seconds per tool call (default 120)")
    p.add_argument("--include", help="only these tools, comma-separated")
    p.add_argument("--exclude", help="never these tools, comma-separated")
    p.add_argument("--replace", action="store_true", help="replace an existing entry of that name")
    p.add_argument("--no-test", action="store_true", help="do not connect after writing the entry")
    p.add_argument("--command", dest="server_command", metavar="'COMMAND ARGS...'",
                   help="a stdio server: the command that starts it, with its arguments, as one quoted string")
    p.add_argument("--auth", choices=["oauth"], help="oauth: the server asks for an OAuth login (hermes mcp login)")
    p.add_argument("--scope", help="with --auth oauth: the scopes to ask for (default: what the server says)")
    p = sub.add_parser("remove", help="remove a server's entry from config.yaml")
    p.add_argument("name")
    p = sub.add_parser("test", help="connect to a server now and list its tools")
    p.add_argument("name")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for it (default 60)")
    p = sub.add_parser("login", help="log in to an auth: oauth server (opens the authorization page)")
    p.add_argument("name")
    p.add_argument("--no-browser", action="store_true", help="only print the address to open")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for the login (default 300)")
    p.add_argument("--forget", action="store_true", help="delete the server's stored tokens instead")
    parser.set_defaults(json=False)


def run(args: argparse.Namespace) -> int:
    from hermes.cli.common import load_settings

    settings = load_settings(args)
    command = args.mcp_command or "list"
    if command == "add":
        return _add(settings, args)
    if command == "remove":
        return _remove(settings, args.name)
    if command == "test":
        return _test(settings, args.name, args.timeout)
    if command == "login":
        from hermes.cli.mcp_login import login

        return login(settings, args)
    return _list(settings, args.json)


def _list(settings: Settings, as_json: bool) -> int:
    from hermes.tools.mcp.tool import report_lines, server_report

    rows = server_report(settings)
    if as_json:
        import json

        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return 0
    if not rows:
        print(f"No MCP servers in {settings.paths.config}. Add one: hermes mcp add NAME --command 'COMMAND ARGS...'")
        return 0
    print(f"MCP servers in {settings.paths.config}:")
    for line in report_lines(rows):
        print(line)
    return 0


def _pairs(items: list[str], what: str) -> dict[str, str]:
    from hermes.errors import ConfigError

    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--{what} takes NAME=VALUE, got {item!r}")
        out[key.strip()] = value
    return out


def _refuse_literal_secrets(name: str, values: dict[str, str], what: str) -> None:
    from hermes.cli.config import is_secret_key
    from hermes.errors import ConfigError
    from hermes.redact import redact

    for key, value in values.items():
        if _REFERENCE.match(value.strip()) or "${" in value:
            continue
        secret_name = is_secret_key(key.replace("-", "_")) or key.lower() == "authorization"
        if value and (secret_name or redact(value) != value):
            var = f"{name.upper().replace('-', '_')}_{re.sub(r'[^A-Za-z0-9]', '_', key).upper()}"
            raise ConfigError(
                f"--{what} {key} looks like a secret, and config.yaml is not the place for secrets. Store it in "
                f".env (hermes config set-env {var} VALUE) and pass --{what} {key}='${{{var}}}' (with a "
                "'Bearer ' prefix inside the quotes where the server wants one)")


def _entry(args: argparse.Namespace) -> dict[str, Any]:
    import shlex

    from hermes.errors import ConfigError

    command = shlex.split(args.server_command) if args.server_command else []
    if bool(command) == bool(args.url):
        raise ConfigError("give either --url URL or --command 'COMMAND ARGS...' (the command that starts the server)")
    entry: dict[str, Any] = {}
    if command:
        entry["command"], entry["args"] = command[0], command[1:]
        if not entry["args"]:
            del entry["args"]
    else:
        entry["url"] = args.url
    if args.transport:
        entry["transport"] = args.transport
    headers, env = _pairs(args.header, "header"), _pairs(args.env, "env")
    _refuse_literal_secrets(args.name, headers, "header")
    _refuse_literal_secrets(args.name, env, "env")
    if headers:
        entry["headers"] = headers
    if env:
        entry["env"] = env
    if args.cwd:
        entry["cwd"] = args.cwd
    if args.timeout:
        entry["timeout"] = int(args.timeout) if float(args.timeout).is_integer() else args.timeout
    tools = {k: [t.strip() for t in v.split(",") if t.strip()] for k, v in
             (("include", args.include), ("exclude", args.exclude)) if v}
    if tools:
        entry["tools"] = tools
    if args.auth:
        entry["auth"] = args.auth
        if args.scope:
            entry["oauth"] = {"scope": args.scope}
    return entry


def _add(settings: Settings, args: argparse.Namespace) -> int:
    from hermes.connectors.mcp.config import NAME_RULE, read_server
    from hermes.errors import ConfigError

    name = args.name
    if not NAME_RULE.match(name):
        raise ConfigError(f"{name!r} cannot name a server: use 1-48 letters, digits, '_' or '-'")
    entry = _entry(args)
    key = f"mcp_servers.{name}"
    if settings.config.has(key) and not args.replace:
        raise ConfigError(f"{key} is already in {settings.paths.config}; pass --replace to overwrite it")
    unset: list[str] = []

    def lookup(var: str) -> str:  # a variable set later (in .env) is fine; said below
        value = settings.env.get(var)
        if value is None:
            unset.append(var)
        return value or "set-later"

    read_server(name, entry, lookup)  # every other problem named before the file changes
    settings.config.set(key, entry)
    settings.config.save()
    print(f"Added MCP server {name} to {settings.paths.config}")
    if unset:
        print(f"  note: {', '.join(sorted(set(unset)))} not set yet: hermes config set-env NAME VALUE")
        return 0
    if args.no_test:
        return 0
    if args.auth == "oauth":
        print(f"  next: hermes mcp login {name}")
        return 0
    return _test(settings, name, 60.0)


def _remove(settings: Settings, name: str) -> int:
    from hermes.cli.config import delete_key

    key = f"mcp_servers.{name}"
    if not settings.config.has(key):
        print(f"There is no MCP server {name} in {settings.paths.config}")
        return 1
    delete_key(settings.config, key)
    print(f"Removed MCP server {name} from {settings.paths.config}")
    return 0


def configured_server(settings: Settings, name: str) -> Any:
    """The server ``name`` of config.yaml (ConfigError when it is missing or invalid)."""
    from hermes.errors import ConfigError
    from hermes.tools.mcp.tool import mcp_settings

    cfg = mcp_settings(settings)
    if name in cfg.errors:
        raise ConfigError(cfg.errors[name])
    server = cfg.get(name)
    if server is None:
        raise ConfigError(f"there is no MCP server {name} in {settings.paths.config} (hermes mcp list)")
    return server


def _test(settings: Settings, name: str, timeout: float, login: Any = None) -> int:
    """Connect now and list the tools; with ``login`` (``hermes mcp login``) the person logs in on the way."""
    from dataclasses import replace

    from hermes.connectors.mcp.manager import manager_for
    from hermes.tools.mcp.tool import mcp_settings

    cfg = mcp_settings(settings)
    server = configured_server(settings, name)
    manager = manager_for(settings.paths.home)
    manager.login = login
    connect = timeout if login is not None else min(server.connect_timeout, timeout)
    manager.configure((replace(server, enabled=True, connect_timeout=connect),))
    state = replace(manager.wait_settled([name], timeout=timeout + 1)[name])  # a copy: close() stops it
    manager.close()
    print(f"{name}: {server.describe()}")
    if state.status != "ready":
        print(f"  ✗ {state.status}: {state.error or 'no answer'}")
        return 1
    print(f"  ✓ connected (protocol {state.protocol_version}), {len(state.tools)} tools:")
    from hermes.connectors.mcp.names import ambiguous, function_names

    names = function_names(name, [t.name for t in state.tools],
                           all_suffixed=ambiguous(name, [s.name for s in cfg.servers]))
    for tool in state.tools:
        line = (tool.description or "").strip().splitlines()[0] if tool.description else ""
        print(f"    {names[tool.name]:<40} {line[:80]}")
    if not server.enabled:
        print("  (enabled: false in config.yaml, so sessions do not use it)")
    return 0
