"""What ``hermes portal info``, ``hermes portal tools`` and ``hermes status`` show about the gateway (GW-9).

:func:`build_report` calls :func:`~hermes.routing.selection.resolve_all` — the same function the tools
call at execution time — and :func:`~hermes.routing.entitlement.entitlement_for` for gateway routes, so
the status shows the answer the tools act on. It is pure: no network, no refresh. A login whose access
token has expired but can be refreshed is shown as such ("expired, will refresh on next use"), and its
gateway routes are judged by the claims it will have again after that refresh.

Per route the report gives ``route`` (``gateway`` | ``byok`` | ``none`` | ``error``; key-less and local
backends count as ``byok``, with ``kind: local``), the vendor, the origin the tool would call and the
message shown to the user, and whether it can run here: ``ready``, with ``missing`` naming what is
missing when it cannot (the login, the key, the program or package of a local backend — see
:mod:`hermes.routing.readiness` — or the tool itself: "not built yet"). The routed tools' availability
checks read ``ready`` and ``missing`` from this same report.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from hermes.errors import SelectionError
from hermes.routing.categories import CATEGORIES
from hermes.routing.credentials import Credentials
from hermes.routing.entitlement import entitlement_for, gateway_error_text
from hermes.routing.portal_auth import entry_expiry, refreshable, token_portal
from hermes.routing.readiness import NOT_BUILT, NOT_BUILT_BACKEND, local_problem, serving_tools
from hermes.routing.selection import Route, gateway_display, resolve_all
from hermes.routing.terminal import DISPLAY as TERMINAL_DISPLAY
from hermes.routing.terminal import TerminalRoute, chosen_backend, terminal_route

OK, OTHER, BAD = "✓", "○", "✗"
LABEL_WIDTH = 18

#: (relay label, vendor shown, what it serves, route names it can serve) for ``hermes portal tools``.
CATALOG: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("firecrawl", "Firecrawl", "web search and page extraction", ("web.search", "web.extract")),
    ("fal-queue", "FAL", "image and video generation (FAL catalog models)", ("image_gen", "video_gen")),
    ("krea", "Krea", "Krea 2 image models (paid plans)", ("image_gen",)),
    ("tool", "Nous Portal", "the portal's own image models (paid plans)", ("image_gen",)),
    ("openai-audio", "OpenAI audio", "text to speech and speech to text", ("tts", "stt")),
    ("browser-use", "Browser Use", "cloud browser sessions", ("browser",)),
)


@dataclass(frozen=True)
class AuthStatus:
    """The portal login as the status shows it."""

    status: str  # not_logged_in | active | free_tier | refresh_pending | expired | no_access | unknown
    mark: str
    message: str
    portal_url: str
    token_source: str | None
    expires_at: float | None
    refreshable: bool
    plan: str | None


@dataclass(frozen=True)
class RouteStatus:
    name: str
    route: str
    kind: str | None
    vendor: str | None
    origin: str | None
    message: str
    mark: str
    selected_by: str | None = None
    gateway_label: str | None = None
    entitlement: str | None = None
    error: str | None = None
    #: whether a tool of this installation can use the route here and now; ``missing`` says why not
    ready: bool = False
    missing: str | None = None


@dataclass(frozen=True)
class GatewayReport:
    auth: AuthStatus
    routes: dict[str, RouteStatus]
    warnings: tuple[str, ...] = field(default_factory=tuple)
    #: the terminal's route when ``terminal.backend`` is ``modal`` (a gateway route); None otherwise
    terminal: TerminalRoute | None = None

    def rows(self) -> list[tuple[str, RouteStatus]]:
        """(label, route) per category; web gets two rows only when search and extract differ."""
        out: list[tuple[str, RouteStatus]] = []
        for category in CATEGORIES.values():
            if len(category.functions) == 1:
                out.append((category.display, self.routes[category.name]))
                continue
            parts = [self.routes[f"{category.name}.{f}"] for f in category.functions]
            if all(_same(parts[0], p) for p in parts[1:]):
                out.append((category.display, parts[0]))
            else:
                out += [(f"Web {f}", p) for f, p in zip(category.functions, parts, strict=True)]
        return out

    def lines(self) -> list[str]:
        """The GW-9 block."""
        out = ["◆ Nous Tool Gateway", _row("Nous Portal", self.auth.mark, self.auth.message)]
        out += [_row(label, r.mark, r.message) for label, r in self.rows()]
        if self.terminal is not None:
            out.append(_row(TERMINAL_DISPLAY, OK if self.terminal.ready else BAD, self.terminal.message))
        return out

    def to_json(self) -> dict[str, Any]:
        auth = asdict(self.auth)
        auth.pop("mark")
        routes = {}
        for name, r in self.routes.items():
            item = asdict(r)
            item.pop("mark")
            routes[name] = item
        out: dict[str, Any] = {"portal": auth, "routes": routes, "warnings": list(self.warnings)}
        if self.terminal is not None:
            out["terminal"] = asdict(self.terminal)
        return out


def _same(a: RouteStatus, b: RouteStatus) -> bool:
    return (a.route, a.vendor, a.message, a.mark) == (b.route, b.vendor, b.message, b.mark)


def _row(label: str, mark: str, message: str) -> str:
    return f"  {label:<{LABEL_WIDTH}}{mark} {message}"


def _auth(credentials: Credentials, entry: Mapping[str, Any] | None, env: Mapping[str, str], now: float
          ) -> tuple[AuthStatus, float]:
    """The auth status and the moment entitlement is judged at (before the expiry of a refreshable login)."""
    source = credentials.token_source
    portal = credentials.portal_base_url
    expires = entry_expiry(entry) if source == "auth.json" else credentials.exp
    renewable = source == "auth.json" and refreshable(entry) and token_portal(entry, env) is not None
    claims = credentials.claims
    plan = None if claims is None else "paid" if claims.paid_access else "free_tier" if claims.free_tier else "none"
    via = " (TOOL_GATEWAY_USER_TOKEN)" if source == "env" else ""

    def status(code: str, mark: str, message: str) -> AuthStatus:
        return AuthStatus(code, mark, message, portal, source, expires, renewable, plan)

    if source is None:
        return status("not_logged_in", OTHER, "not logged in — run 'hermes portal login'"), now
    expired = (expires is not None and expires <= now) or credentials.is_expired(now)
    judge = now
    if expired:
        if not renewable:
            return status("expired", BAD, "login expired — run 'hermes portal login'"), now
        judge = min(x for x in (expires, credentials.exp) if x is not None) - 1.0
    note = " (expired, will refresh on next use)" if expired else ""
    if claims is None:
        return status("unknown", OTHER, f"logged in{via}; the token carries no readable plan "
                                        "(the gateway decides on each call)"), judge
    if claims.paid_access:
        code = "refresh_pending" if expired else "active"
        return status(code, OK, f"managed tools available{via}{note}"), judge
    if claims.tool_access_enabled:
        covered = ", ".join(sorted(claims.coverage)) or "nothing yet"
        code = "refresh_pending" if expired else "free_tier"
        return status(code, OK, f"free tool tier{via} (covers {covered}){note}"), judge
    return status("no_access", OTHER, f"logged in{via}, no subscription with tool access — "
                                      f"{portal}/manage-subscription"), judge


def _route(name: str, found: Route | SelectionError, credentials: Credentials, judge: float,
           env: Mapping[str, str]) -> RouteStatus:
    if isinstance(found, SelectionError):
        return RouteStatus(name, "error", None, None, None, str(found), BAD, missing=str(found))
    kind = found.kind
    common: dict[str, Any] = {"kind": kind, "vendor": found.vendor, "origin": found.origin,
                              "selected_by": found.selected_by, "gateway_label": found.gateway_label}
    if not serving_tools(name):
        where = "" if kind == "none" else f" (route: {found.message.removeprefix('active via ')})"
        return RouteStatus(name, "none" if kind == "none" else "gateway" if kind == "gateway" else "byok",
                           message=NOT_BUILT + where, mark=OTHER, missing=NOT_BUILT, **common)
    backend = "gateway" if kind == "gateway" else (found.vendor or "")
    if backend in CATEGORIES[found.category].unbuilt:
        what = f"{NOT_BUILT_BACKEND} (route: {found.message.removeprefix('active via ')})"
        return RouteStatus(name, kind if kind in ("gateway", "none") else "byok", message=what, mark=OTHER,
                           missing=what, **common)
    if kind == "gateway":
        entitlement = entitlement_for(found, credentials, judge)
        assert entitlement is not None
        if entitlement.entitled:
            return RouteStatus(name, "gateway", message=found.message, mark=OK, entitlement=entitlement.status,
                               ready=True, **common)
        how = "selected" if found.selected_by else "(auto-detected)"
        where = gateway_display(found.origin)
        where = where[4:] if where.startswith("the ") else where
        error = gateway_error_text(found, entitlement, credentials)
        return RouteStatus(name, "gateway", message=f"{where} {how} — {entitlement.summary}",
                           mark=BAD, entitlement=entitlement.status, error=error, missing=error, **common)
    if kind == "none":
        try:
            found.require()
        except SelectionError as exc:
            return RouteStatus(name, "none", message=found.message, mark=OTHER, missing=str(exc), **common)
    vendor = CATEGORIES[found.category].vendor(found.vendor or "")
    # a local engine's programs and packages; a cloud vendor's client packages (the browser's Playwright)
    problem = local_problem(vendor, env) if vendor is not None and (kind == "local" or vendor.packages) else None
    if problem is not None and vendor is not None:
        what = f"{vendor.display} needs {problem}"
        return RouteStatus(name, "byok", message=f"not available — {what}", mark=BAD if found.selected_by else OTHER,
                           missing=what, **common)
    return RouteStatus(name, "byok", message=found.message, mark=OTHER, ready=True, **common)


def _toolsets_named(config: Mapping[str, Any]) -> set[str]:
    value = config.get("toolsets") if isinstance(config, Mapping) else None
    if isinstance(value, str):
        return {part.strip() for part in value.split(",") if part.strip()}
    if isinstance(value, list):
        return {str(part).strip() for part in value}
    return set()


def _opt_in(status: RouteStatus, config: Mapping[str, Any]) -> RouteStatus:
    """An opt-in category's ready route says when none of its toolsets is enabled in config.yaml (the tool
    is then in no session, though ``--toolsets`` can still add it for one run)."""
    category = CATEGORIES[status.name.partition(".")[0]]
    if not (category.opt_in and category.toolsets and status.ready):
        return status
    named = _toolsets_named(config)
    if named & {*category.toolsets, "all"}:
        return status
    first = category.toolsets[-1]
    return replace(status, message=f"{status.message}; opt-in: not enabled (hermes tools enable {first})")


def build_report(config: Mapping[str, Any], env: Mapping[str, str], credentials: Credentials,
                 entry: Mapping[str, Any] | None, now: float) -> GatewayReport:
    """The status of the portal login and of every route (see the module docstring)."""
    auth, judge = _auth(credentials, entry, env, now)
    found = resolve_all(config, env, credentials)
    routes = {name: _opt_in(_route(name, value, credentials, judge, env), config)
              for name, value in found.items()}
    warnings = list(credentials.warnings)
    if credentials.token_source == "auth.json" and entry is not None and token_portal(entry, env) is None:
        from hermes.routing.portal_auth import portal_mismatch_text

        warnings.append(f"the stored login will not be renewed: {portal_mismatch_text(entry, env)}")
    terminal = terminal_route(config, env, credentials, judge) if chosen_backend(config) == "modal" else None
    return GatewayReport(auth, routes, tuple(warnings), terminal)


def load_report(auth_path: Path, config: Mapping[str, Any], env: Mapping[str, str], now: float | None = None
                ) -> GatewayReport:
    """:func:`build_report` for the login stored at ``auth_path`` (read only; no network, no refresh)."""
    import time

    from hermes.routing.credentials import load_credentials
    from hermes.routing.portal_auth import AuthStore
    from hermes.routing.stored_keys import with_stored

    env = with_stored(env, auth_path)  # a key stored with 'hermes auth add' counts like its variable
    credentials = load_credentials(auth_path, env)
    entry = AuthStore(auth_path).nous() if credentials.token_source == "auth.json" else None
    return build_report(config, env, credentials, entry, time.time() if now is None else now)


def catalog_rows(report: GatewayReport) -> list[dict[str, Any]]:
    """``hermes portal tools``: per relay and route name, whether that route uses the relay now."""
    rows: list[dict[str, Any]] = []
    for label, vendor, serves, names in CATALOG:
        for name in names:
            r = report.routes[name]
            using = r.route == "gateway" and r.gateway_label == label
            if using:
                state, mark = (f"via {gateway_display(r.origin)}", r.mark) if r.mark == OK else (r.message, r.mark)
            elif r.route == "gateway":
                state, mark = f"gateway via the {r.gateway_label} relay", OTHER
            else:
                state, mark = r.message, OTHER if r.route != "error" else BAD
            rows.append({"relay": label, "vendor": vendor, "serves": serves, "route_name": name,
                         "in_use": using, "state": state, "mark": mark, "origin": r.origin if using else None})
    return rows
