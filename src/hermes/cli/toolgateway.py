"""``hermes toolgateway``: run and administer a self-hosted Tool Gateway (issue 7, docs/gateway/server.md).

``serve`` runs the server; ``users``, ``tokens``, ``device`` and ``admin-token`` manage accounts in the
gateway database directly (the same SQLite file — or PostgreSQL database, ``--database-url`` — a running
server uses, so changes — a revoked token, a disabled user — apply to the server's next request). Every
command takes ``--config FILE``, ``--database-url`` and ``--redis-url``. ``migrate --to URL`` copies the
SQLite file into PostgreSQL (:mod:`hermes.toolgateway.storage.copy_to_pg`). ``connectors add|list`` records
users' connector accounts (:mod:`hermes.cli.gateway_connectors`, docs/gateway/connectors.md).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hermes.toolgateway.config import GatewayConfig
    from hermes.toolgateway.services import Gateway


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", metavar="FILE", help="gateway config file (.toml or .yaml)")
    parser.add_argument("--db", metavar="PATH", help="gateway database (default HERMES_HOME/toolgateway/gateway.db)")
    parser.add_argument("--database-url", metavar="URL",
                        help="PostgreSQL instead of the SQLite file, shared by several gateway processes "
                             "(postgresql://user:pass@host/db; env HERMES_GATEWAY_DATABASE_URL keeps it out of ps)")
    parser.add_argument("--redis-url", metavar="URL",
                        help="share the rate-limit buckets through Redis (redis://…; env HERMES_GATEWAY_REDIS_URL)")


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="gw_command", metavar="ACTION", required=True)
    sp = sub.add_parser("serve", help="run the gateway (Ctrl-C or SIGTERM stops it gracefully)")
    _common(sp)
    sp.add_argument("--host", help="address to listen on (default 127.0.0.1)")
    sp.add_argument("--port", type=int, help="port (default 8787)")
    sp.add_argument("--domain", help="relay hosts are {label}-gateway.DOMAIN (default localhost)")
    sp.add_argument("--public-url", help="the URL people reach the portal at (login pages, error hints)")
    sp.add_argument("--searxng-url", help="web search through this SearXNG instance")
    sp.add_argument("--firecrawl-url", help="search and scrape through this Firecrawl API (key: FIRECRAWL_API_KEY)")
    sp.add_argument("--allow-loopback-fetch", action="store_true",
                    help="let the local scraper fetch loopback addresses (tests, a page server on this host)")
    sp.add_argument("--access-log", metavar="TARGET", help="'-' (stderr, default), a file path, or 'off'")

    users = sub.add_parser("users", help="add, list, disable users; change plans; login links")
    usub = users.add_subparsers(dest="users_command", metavar="ACTION", required=True)
    sp = usub.add_parser("add", help="add a user")
    sp.add_argument("name")
    sp.add_argument("--plan", choices=("paid", "free", "none"), default="free", help="plan (default free)")
    sp.add_argument("--expires", metavar="DATE", help="plan end (ISO date or time, UTC)")
    _common(sp)
    sp = usub.add_parser("list", help="list users")
    sp.add_argument("--json", action="store_true", help="print JSON")
    _common(sp)
    for name, text in (("disable", "refuse every token of this user from the next request"),
                       ("enable", "allow a disabled user again")):
        sp = usub.add_parser(name, help=text)
        sp.add_argument("name")
        _common(sp)
    sp = usub.add_parser("set-plan", help="change a user's plan")
    sp.add_argument("name")
    sp.add_argument("--plan", choices=("paid", "free", "none"), required=True)
    sp.add_argument("--expires", metavar="DATE", help="plan end (ISO date or time, UTC); omit for none")
    _common(sp)
    sp = usub.add_parser("login-link", help="print a one-time link that lets the user approve a login")
    sp.add_argument("name")
    sp.add_argument("--minutes", type=float, default=15.0, help="validity (default 15)")
    sp.add_argument("--dashboard", action="store_true", help="a link that signs in to the usage dashboard instead")
    sp.add_argument("--public-url", metavar="URL", help="the address people reach the server at (default: the "
                                                        "running server's, else public_url, else host:port)")
    sp.add_argument("--port", type=int, help="the port the server listens on (http://HOST:PORT)")
    _common(sp)

    tokens = sub.add_parser("tokens", help="issue, list and revoke access tokens")
    tsub = tokens.add_subparsers(dest="tokens_command", metavar="ACTION", required=True)
    sp = tsub.add_parser("issue", help="issue an access token (printed as the last word)")
    sp.add_argument("name")
    sp.add_argument("--days", type=float, default=30.0, help="validity in days (default 30)")
    sp.add_argument("--scope", default=None, help="scopes (default 'inference:invoke tool:invoke')")
    _common(sp)
    sp = tsub.add_parser("list", help="list token ids (never the tokens)")
    sp.add_argument("name", nargs="?")
    sp.add_argument("--json", action="store_true", help="print JSON")
    _common(sp)
    sp = tsub.add_parser("revoke", help="revoke a token (the whole token or its id)")
    sp.add_argument("token")
    _common(sp)

    device = sub.add_parser("device", help="approve a pending device login from the command line")
    dsub = device.add_subparsers(dest="device_command", metavar="ACTION", required=True)
    sp = dsub.add_parser("approve", help="approve the login showing USER_CODE for user NAME")
    sp.add_argument("user_code")
    sp.add_argument("name")
    _common(sp)

    sp = sub.add_parser("migrate", help="copy the SQLite gateway database into PostgreSQL (idempotent; row counts "
                                        "and checksums per table printed)")
    sp.add_argument("--to", metavar="URL", required=True,
                    help="the PostgreSQL database (postgresql://user:pass@host/db); its schema is created if needed")
    _common(sp)

    sp = sub.add_parser("admin-token", help="print the admin token (for /api/admin/* and operator approval)")
    _common(sp)

    from hermes.cli.gateway_connectors import configure as configure_connectors

    configure_connectors(sub, _common)


def _config(args: argparse.Namespace, **extra: Any) -> GatewayConfig:
    from pathlib import Path

    from hermes.toolgateway.config import load_config

    overrides: dict[str, Any] = {"database": getattr(args, "db", None), **extra}
    for key in ("database_url", "redis_url"):  # --database-url, --redis-url
        overrides.setdefault(key, getattr(args, key, None))
    return load_config(Path(args.config).expanduser() if args.config else None, overrides=overrides)


def _time(text: str | None) -> float | None:
    from datetime import UTC, datetime

    from hermes.errors import ConfigError

    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError as exc:
        raise ConfigError(f"not an ISO date or time: {text!r}") from exc
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def _iso(ts: float | None) -> str:
    import time

    return "-" if ts is None else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


def _table(rows: Sequence[Sequence[str]]) -> None:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


def _users(gw: Gateway, args: argparse.Namespace) -> int:
    import json

    acc = gw.accounts
    cmd = args.users_command
    if cmd == "add":
        user = acc.add_user(args.name, args.plan, plan_expires=_time(args.expires))
        print(f"added {user.name} ({user.uid}), plan {user.plan}" + (f" until {_iso(user.plan_expires)}"
                                                                     if user.plan_expires else ""))
    elif cmd == "list":
        users = acc.list_users()
        if args.json:
            print(json.dumps([{"id": u.uid, "name": u.name, "plan": u.plan, "plan_expires": u.plan_expires,
                               "disabled": u.disabled, "created": u.created} for u in users], indent=2))
        elif not users:
            print("no users yet; add one with: hermes toolgateway users add NAME --plan paid|free|none")
        else:
            _table([("NAME", "ID", "PLAN", "EXPIRES", "STATE")] + [
                (u.name, u.uid, u.plan, _iso(u.plan_expires), "disabled" if u.disabled else "active") for u in users])
    elif cmd in ("disable", "enable"):
        user = acc.set_disabled(args.name, cmd == "disable")
        print(f"{user.name} is now {'disabled' if user.disabled else 'enabled'}")
    elif cmd == "set-plan":
        user = acc.set_plan(args.name, args.plan, _time(args.expires))
        print(f"{user.name}: plan {user.plan}" + (f" until {_iso(user.plan_expires)}" if user.plan_expires else ""))
    elif cmd == "login-link":
        user = acc.get_user(args.name)
        base, source = _link_base(gw.config, args)
        secret = gw.oauth.create_login_link(user, args.minutes)
        print(f"server address {base} ({source})")
        if args.dashboard:
            print(f"one-time dashboard link for {user.name} (valid {args.minutes:g} min; opening it signs in):")
            print(f"{base}/dashboard?login={secret}")
        else:
            print(f"one-time login link for {user.name} (valid {args.minutes:g} min; open it, enter the code shown "
                  f"in the terminal, approve):")
            print(f"{base}/device?login={secret}")
    return 0


def _link_base(config: GatewayConfig, args: argparse.Namespace) -> tuple[str, str]:
    """The address a login link names, and where it came from: ``--public-url``, ``--port``, the running
    server's record, ``public_url`` in the config, else the configured host and port."""
    from dataclasses import replace

    from hermes.errors import ConfigError
    from hermes.toolgateway.running import Serving

    if args.public_url:
        url = args.public_url.strip().rstrip("/")
        if not url.startswith(("http://", "https://")) or " " in url:
            raise ConfigError(f"--public-url must be an http(s) URL, not {args.public_url!r}")
        return url, "from --public-url"
    if args.port is not None:
        if not 0 < args.port < 65536:
            raise ConfigError(f"--port must be 1-65535, not {args.port}")
        return replace(config, port=args.port, public_url=None).base_url(), "from --port"
    record = Serving(config).read()
    if record is not None:
        return record.url, f"where the running server listens, pid {record.pid}"
    if config.public_url:
        return config.base_url(), "public_url in the gateway config"
    return config.base_url(), (f"the configured port {config.port}; no running server found — pass --port or "
                               "--public-url if it listens elsewhere")


def _tokens(gw: Gateway, args: argparse.Namespace) -> int:
    import json

    from hermes.toolgateway.portal.accounts import DEFAULT_CLI_SCOPE

    acc = gw.accounts
    cmd = args.tokens_command
    if cmd == "issue":
        if args.days <= 0:
            from hermes.errors import ConfigError

            raise ConfigError("--days must be positive")
        user = acc.get_user(args.name)
        issued = acc.issue_access_token(user, ttl=args.days * 86400, scope=args.scope or DEFAULT_CLI_SCOPE)
        print(f"token {issued.jti} for {user.name}, scope '{issued.scope}', expires {_iso(issued.expires)}:")
        print(issued.token)
    elif cmd == "list":
        rows = acc.list_tokens(args.name)
        if args.json:
            print(json.dumps(rows, indent=2))
        elif not rows:
            print("no tokens")
        else:
            _table([("ID", "USER", "SOURCE", "EXPIRES", "STATE")] + [
                (r["id"], r["user"], r["source"], _iso(r["expires"]), r["state"]) for r in rows])
    elif cmd == "revoke":
        ids = acc.revoke(args.token)
        print(f"revoked {', '.join(ids)}")
    return 0


def _migrate(args: argparse.Namespace) -> int:
    from hermes.toolgateway.storage import _require
    from hermes.toolgateway.storage.copy_to_pg import copy_database, render
    from hermes.toolgateway.storage.urls import checked_url, mask_url

    url = checked_url("database_url", args.to)
    assert url is not None
    _require("psycopg", "migrate --to")
    source = _config(args, database_url=None).db_path
    print(f"copying {source} into {mask_url(url)}")
    results = copy_database(source, url)
    for line in render(results):
        print(line)
    return 0 if all(r.matches for r in results) else 1


def run(args: argparse.Namespace) -> int:
    if args.gw_command == "serve":
        from hermes.toolgateway.server import serve

        config = _config(args, host=args.host, port=args.port, domain=args.domain, public_url=args.public_url,
                         access_log=args.access_log, **{
                             "firecrawl.searxng_url": args.searxng_url,
                             "firecrawl.firecrawl_url": args.firecrawl_url,
                             "firecrawl.allow_loopback": True if args.allow_loopback_fetch else None})
        serve(config)
        return 0
    if args.gw_command == "migrate":
        return _migrate(args)
    from hermes.toolgateway.services import Gateway

    gw = Gateway(_config(args)).open()
    try:
        if args.gw_command == "users":
            return _users(gw, args)
        if args.gw_command == "tokens":
            return _tokens(gw, args)
        if args.gw_command == "connectors":
            from hermes.cli.gateway_connectors import run as run_connectors

            return run_connectors(gw, args)
        if args.gw_command == "device":
            user = gw.accounts.get_user(args.name)
            if not gw.oauth.decide(args.user_code, user, True):
                from hermes.toolgateway.portal.accounts import AccountError

                raise AccountError(f"no pending login with code {args.user_code}")
            print(f"approved {args.user_code} for {user.name}")
            return 0
        print(gw.admin_token)
        return 0
    finally:
        gw.close_db()
