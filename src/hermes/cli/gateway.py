"""``hermes gateway``: the messaging gateway (Telegram, Discord, Slack, Teams, IRC, an OpenAI-compatible API).

Not to be confused with ``hermes toolgateway`` (the self-hosted Tool Gateway server). ``run`` connects
every configured platform and answers until Ctrl-C or SIGTERM; ``status`` shows each platform's state
(and whether it can run here); ``setup`` walks through adding a platform and its token. See
docs/messaging.md.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hermes.config.settings import Settings


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="gateway_command", metavar="ACTION", required=True)
    sp = sub.add_parser("run", help="connect the configured platforms and answer until Ctrl-C or SIGTERM")
    sp.add_argument("--platform", action="append", dest="platforms", metavar="NAME",
                    help="run only this platform (repeatable; default: every one that can run)")
    sp.add_argument("-v", "--verbose", action="store_true", help="log debug lines (tokens stay masked)")
    sp = sub.add_parser("status", help="each platform's state, and whether it can run here")
    sp.add_argument("--json", action="store_true", help="print JSON")
    sp = sub.add_parser("setup", help="add or change a platform: its settings and token")
    sp.add_argument("type", nargs="?", choices=("telegram", "discord", "slack", "teams", "feishu", "yuanbao", "irc",
                                                          "api_server"),
                    help="the platform type")
    sp.add_argument("--name", help="the table's name under gateway.platforms (default: the type)")


def run(args: argparse.Namespace) -> int:
    from hermes.cli.common import export_dotenv
    from hermes.config.settings import Settings

    settings = Settings.load()
    export_dotenv(settings)
    action = args.gateway_command
    if action == "run":
        return _run(settings, args.platforms)
    if action == "status":
        return _status(settings, args.json)
    return _setup(settings, args.type, args.name)


def _run(settings: Settings, chosen: list[str] | None) -> int:
    import asyncio
    import logging
    import signal

    from hermes.errors import HermesError
    from hermes.surfaces.messaging.service import build_gateway, running_state

    logging.getLogger("httpx").setLevel(logging.WARNING)
    state = running_state(settings)
    if state is not None:
        raise HermesError(f"a gateway already runs for this HERMES_HOME (pid {state['pid']})")

    def show_owner(line: str) -> None:
        print(f"hermes gateway: {line}", file=sys.stderr, flush=True)

    gateway, skipped = build_gateway(settings, chosen, show_owner)
    for cfg in skipped:
        print(f"hermes gateway: {cfg.name} not started: {cfg.problem}", file=sys.stderr)
    names = ", ".join(gateway.adapters)
    print(f"hermes gateway: running {names} (Ctrl-C stops)", file=sys.stderr, flush=True)

    async def main() -> None:
        from hermes.surfaces.kanban_gateway import gateway_sender, start_for_gateway

        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, gateway.stop)
        kanban = start_for_gateway(settings, gateway_sender(gateway.adapters, loop))  # docs/tools/kanban.md
        try:
            await gateway.run()
        finally:
            if kanban is not None:
                await asyncio.to_thread(kanban.stop)

    asyncio.run(main())
    print("hermes gateway: stopped; sessions are kept", file=sys.stderr)
    return 0


def _status(settings: Settings, as_json: bool) -> int:
    from hermes.surfaces.messaging import config as gwconfig
    from hermes.surfaces.messaging.service import running_state

    configs = gwconfig.platforms(settings)
    state = running_state(settings)
    live: dict[str, Any] = (state or {}).get("platforms", {})
    rows = []
    for cfg in configs:
        now = live.get(cfg.name, {})
        rows.append({"name": cfg.name, "type": cfg.type, "can_run": not cfg.problem, "problem": cfg.problem,
                     "state": now.get("state", "not running"), "last_error": now.get("last_error", ""),
                     "reconnects": now.get("reconnects", 0), "messages_in": now.get("messages_in", 0)})
    if as_json:
        print(json.dumps({"running": state is not None, "pid": (state or {}).get("pid"), "platforms": rows},
                         indent=2))
        return 0
    print(f"gateway: {'running (pid ' + str(state['pid']) + ')' if state else 'not running'}")
    if not rows:
        print("no platforms configured (hermes gateway setup adds one; docs/messaging.md)")
    for row in rows:
        line = f"  {row['name']:<14} {row['type']:<11} {row['state']}"
        if row["problem"]:
            line += f" — cannot run: {row['problem']}"
        elif row["last_error"] and row["state"] != "connected":
            line += f" — {row['last_error']}"
        if row["reconnects"]:
            line += f" ({row['reconnects']} reconnects)"
        print(line)
    return 0


def _ask(question: str, default: str = "") -> str:
    shown = f" [{default}]" if default else ""
    print(f"{question}{shown}: ", end="", file=sys.stderr, flush=True)
    line = sys.stdin.readline()
    return line.strip() or default


def _secret(question: str) -> str:
    if sys.stdin.isatty():
        import getpass

        return getpass.getpass(f"{question}: ")
    print(f"{question}: ", end="", file=sys.stderr, flush=True)
    return sys.stdin.readline().strip()


def _setup(settings: Settings, kind: str | None, name: str | None) -> int:
    from hermes.config.dotenv import set_dotenv_value
    from hermes.errors import UsageError
    from hermes.surfaces.messaging.config import SECRET_ENV, TYPES

    kind = kind or _ask(f"platform type ({', '.join(TYPES)})", "telegram")
    if kind not in TYPES:
        raise UsageError(f"unknown platform type {kind!r}; choose one of {', '.join(TYPES)}")
    name = name or kind
    base = f"gateway.platforms.{name}"
    cfg = settings.config
    values: dict[str, Any] = {"type": kind}
    if kind == "irc":
        values["server"] = _ask("IRC server host")
        values["tls"] = _ask("use TLS (yes/no)", "yes").lower().startswith("y")
        values["port"] = int(_ask("port", "6697" if values["tls"] else "6667"))
        values["nick"] = _ask("nick", "hermes")
        values["channels"] = [c.strip() for c in _ask("channels to join (comma-separated)", "").split(",") if c.strip()]
    elif kind == "teams":
        values["app_id"] = _ask("Microsoft App ID of the bot")
        values["host"] = _ask("address the messaging endpoint listens on", "127.0.0.1")
        values["port"] = int(_ask("port (put HTTPS in front: Teams posts to https://…/api/messages)", "3978"))
    elif kind == "feishu":
        values["app_id"] = _ask("the app's App ID (cli_…, Credentials & Basic Info)")
        values["base_url"] = _ask("Open Platform address (https://open.larksuite.com for Lark)",
                                  "https://open.feishu.cn")
    elif kind == "yuanbao":
        values["app_id"] = _ask("the bot's App ID (app key, from the Yuanbao bot console)")
    elif kind == "api_server":
        values["host"] = _ask("address to listen on", "127.0.0.1")
        values["port"] = int(_ask("port", "8642"))
    owner = _ask("your own user id on this platform, let in without pairing (empty: pair later)", "")
    if owner:
        values["allow_users"] = [owner]
    env_key, env_name = SECRET_ENV[kind]
    question = {"telegram": "bot token (from @BotFather)",
                "discord": "bot token (Developer Portal → Bot)", "slack": "bot token (xoxb-…)",
                "teams": "the app's client secret (Azure Bot → Configuration)",
                "feishu": "the app's App Secret (Credentials & Basic Info)",
                "yuanbao": "the bot's App Secret", "irc": "SASL password (empty: none)",
                "api_server": "API keys, comma-separated (empty: make one)"}[kind]
    secret = _secret(question)
    if kind == "api_server" and not secret.strip(","):  # the API server never runs keyless
        import secrets

        secret = "hk-" + secrets.token_urlsafe(24)
        print(f"made an API key: your clients send it as Authorization: Bearer (read it from {env_name} "
              f"in {settings.paths.env})")
    app_secret = _secret("app-level token with connections:write (xapp-…)") if kind == "slack" else ""
    for key, value in values.items():
        cfg.set(f"{base}.{key}", value)
    cfg.set(f"{base}.{env_key}", env_name)
    cfg.save()
    if secret:
        set_dotenv_value(settings.paths.env, env_name, secret)
    if app_secret:
        from hermes.surfaces.messaging.config import APP_TOKEN_ENV

        cfg.set(f"{base}.{APP_TOKEN_ENV[0]}", APP_TOKEN_ENV[1])
        cfg.save()
        set_dotenv_value(settings.paths.env, APP_TOKEN_ENV[1], app_secret)
    print(f"saved {base} in {settings.paths.config}" + (f"; {env_name} in {settings.paths.env} (0600)"
                                                        if secret else ""))
    print("start it with: hermes gateway run")
    return 0
