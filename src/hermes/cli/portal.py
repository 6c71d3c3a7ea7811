"""``hermes portal``: log in to the Nous Portal and see what the Tool Gateway does for each tool (GW-8, GW-9).

* ``hermes portal login [--portal-url URL] [--no-browser]`` — the OAuth device-code login; tokens go to
  ``HERMES_HOME/auth.json`` (mode 0600). Nothing else changes: not the model provider, not any route.
* ``hermes portal logout`` — removes the stored tokens.
* ``hermes portal info [--json]`` (also the default) — the portal login and one routing line per tool
  category, as the tools will act on it. No network call, no refresh.
* ``hermes portal tools [--json]`` — the gateway catalog with the current route of each tool.

Only argparse is imported at module level; ``info`` stays under 0.1 s of CPU.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hermes.config.settings import Settings
    from hermes.routing.portal_login import DeviceCode, LoginResult
    from hermes.routing.report import GatewayReport

Out = Callable[[str], None]


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the ``portal`` subcommands (``info`` when none is given)."""
    sub = parser.add_subparsers(dest="portal_command", metavar="SUBCOMMAND")
    p = sub.add_parser("login", help="log in with the device-code flow (tokens saved in auth.json, mode 0600)")
    p.add_argument("--portal-url", default=None, metavar="URL",
                   help="the portal to log in to (default: HERMES_PORTAL_BASE_URL, NOUS_PORTAL_BASE_URL, "
                        "else https://portal.nousresearch.com)")
    p.add_argument("--no-browser", action="store_true", help="only print the approval URL, do not open a browser")
    sub.add_parser("logout", help="remove the stored portal tokens")
    for name, text in (("info", "portal login and the gateway routing of each tool category (no network)"),
                       ("tools", "the gateway catalog with the current route of each tool")):
        p = sub.add_parser(name, help=text, description=text)
        p.add_argument("--json", action="store_true", help="print JSON instead of text")
    parser.set_defaults(json=False)


def run(args: argparse.Namespace) -> int:
    command = getattr(args, "portal_command", None) or "info"
    handlers: dict[str, Callable[[argparse.Namespace], int]] = {
        "login": _login, "logout": _logout, "info": _info, "tools": _tools,
    }
    return handlers[command](args)


# -- shared with tools, model and setup ---------------------------------------------------------------
def gateway_report(settings: Settings, now: float | None = None) -> GatewayReport:
    """The routing report for the files of ``settings`` (no network, no refresh)."""
    from hermes.routing.report import load_report

    return load_report(settings.paths.auth, settings.config.data, settings.env.as_dict(), now)


def show_device_code(out: Out, open_browser: bool) -> Callable[[DeviceCode], None]:
    def show(code: DeviceCode) -> None:
        out("To log in, open this page and approve the code shown there:")
        out(f"  {code.verification_uri_complete}")
        out(f"  code: {code.user_code}")
        if open_browser and _can_open_browser():
            import webbrowser

            webbrowser.open(code.verification_uri_complete)
        out("Waiting for approval… (Ctrl-C to cancel)")
    return show


def _can_open_browser() -> bool:
    import os
    import sys

    return sys.platform in ("darwin", "win32") or bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def run_login(settings: Settings, out: Out, *, portal_url: str | None = None, open_browser: bool = True,
              show: Callable[[DeviceCode], None] | None = None) -> LoginResult:
    """The device-code login against the configured portal, with its messages; PortalError on failure."""
    from hermes.routing.credentials import _PORTAL_HOSTS
    from hermes.routing.endpoints import parse_origin
    from hermes.routing.portal_auth import PORTAL_ENV, resolve_portal_url
    from hermes.routing.portal_login import login, plan_text

    env = settings.env.as_dict()
    portal = resolve_portal_url(portal_url, env)
    out(f"Logging in to Nous Portal at {portal}")
    result = login(settings.paths.auth, env, portal, show=show or show_device_code(out, open_browser))
    out(f"✓ Logged in. Plan: {plan_text(result.credentials)}")
    out(f"  Tokens saved in {settings.paths.auth} (mode 0600); they are renewed automatically before they expire.")
    origin = parse_origin(portal)
    pinned = any(env.get(n) for n in PORTAL_ENV)
    if portal_url and origin is not None and origin.host not in _PORTAL_HOSTS and not pinned:
        out(f"  Note: to keep using this portal, add HERMES_PORTAL_BASE_URL={portal} to {settings.paths.env}; "
            "without it the login is not renewed.")
    return result


# -- subcommands ----------------------------------------------------------------------------------
def _login(args: argparse.Namespace) -> int:
    from hermes.config.settings import Settings

    settings = Settings.load()
    run_login(settings, print, portal_url=args.portal_url, open_browser=not args.no_browser)
    print("Choose which tools use the gateway with 'hermes tools'; see the routing with 'hermes portal info'.")
    return 0


def _logout(args: argparse.Namespace) -> int:
    from hermes.config.paths import HermesPaths
    from hermes.routing.portal_login import logout

    paths = HermesPaths.current()
    if logout(paths.auth):
        print(f"Logged out: the Nous Portal tokens were removed from {paths.auth}.")
        print("Tools set to the Nous subscription now stop with a message until you log in again or switch "
              "them with 'hermes tools'.")
    else:
        print("You were not logged in to Nous Portal; nothing to remove.")
    return 0


def info_lines(config: Mapping[str, Any], report: GatewayReport) -> list[str]:
    """The ``hermes portal info`` text."""
    lines = report.lines()
    lines.append("")
    auth = report.auth
    lines.append(f"  Portal:  {auth.portal_url}")
    if auth.status == "not_logged_in":
        lines.append(f"  Sign up: {auth.portal_url}/manage-subscription")
        lines.append("  Login:   hermes portal login")
    model = _model_line(config)
    if model:
        lines.append(f"  Model:   {model}")
    lines += [f"  ⚠ {w}" for w in report.warnings]
    return lines


def _model_line(config: Mapping[str, Any]) -> str | None:
    section = config.get("model") if isinstance(config, Mapping) else None
    provider = section.get("provider") if isinstance(section, Mapping) else None
    if not isinstance(provider, str) or not provider.strip():
        return None
    if provider.strip() == "nous":
        return "✓ using Nous as inference provider"
    return f"currently {provider.strip()} (switch with 'hermes model')"


def _info(args: argparse.Namespace) -> int:
    from hermes.config.settings import Settings

    settings = Settings.load()
    report = gateway_report(settings)
    if args.json:
        import json

        data = report.to_json()
        data["model"] = {"provider": _provider(settings.config.data)}
        print(json.dumps(data, indent=2, ensure_ascii=False))
        return 0
    print("\n".join(info_lines(settings.config.data, report)))
    return 0


def _provider(config: Mapping[str, Any]) -> str | None:
    section = config.get("model") if isinstance(config, Mapping) else None
    value = section.get("provider") if isinstance(section, Mapping) else None
    return value.strip() if isinstance(value, str) and value.strip() else None


def _tools(args: argparse.Namespace) -> int:
    from hermes.config.settings import Settings
    from hermes.routing.report import catalog_rows

    settings = Settings.load()
    report = gateway_report(settings)
    rows = catalog_rows(report)
    if args.json:
        import json

        print(json.dumps({"portal": report.to_json()["portal"], "catalog": rows}, indent=2, ensure_ascii=False))
        return 0
    print("◆ Nous Tool Gateway catalog")
    print(f"  Nous Portal  {report.auth.mark} {report.auth.message}")
    last = None
    for row in rows:
        if row["relay"] != last:
            print(f"  {row['vendor']} — {row['serves']}")
            last = row["relay"]
        print(f"      {row['route_name']:<12}{row['mark']} {row['state']}")
    print("Change a tool's route with 'hermes tools' (or 'hermes tools set CATEGORY nous').")
    return 0
