"""The usage dashboard: web pages of usage and cost per tool over time (server-rendered, no script).

* ``GET /dashboard`` — the signed-in user's own usage: a period picker (this month, ``?days=30``,
  ``?period=YYYY-MM``), totals, this month's allowances, a table per tool (category, vendor,
  operation, calls, succeeded, units, cost, mean latency) and an SVG chart of units and cost per day
  and category. The page has no way to name another user: it only ever queries the session's user.
* Signing in: ``GET /dashboard?login=ll_…`` (a one-time login link from
  ``hermes toolgateway users login-link NAME``; the ``/device?login=`` link's code works too) exchanges
  the link for a session and redirects to ``/dashboard``; or ``POST /dashboard/signin`` with a
  gateway token (or a login code) pasted into the form. ``POST /dashboard/signout`` ends the session.
* ``GET /admin/dashboard[?user=NAME]`` — everyone's usage (per user and per tool, the same chart),
  after ``POST /admin/dashboard/signin`` with the admin token; ``POST /admin/dashboard/signout``.

Sessions (:mod:`hermes.toolgateway.dashboard.session`) live in ``HttpOnly; SameSite=Strict`` cookies
(``Secure`` when ``public_url`` is https) scoped to their page's path, holding a signed, expiring value —
never a gateway token. Every form is a POST that must carry a CSRF token bound to the session (or, for
the sign-in forms, to a pre-session nonce cookie) and must not come from another site (``Origin`` /
``Sec-Fetch-Site``). Pages send ``Cache-Control: no-store``, ``Referrer-Policy: same-origin`` (no URL of
ours reaches another site, while our own forms carry their ``Origin``), no framing and a CSP that allows
no script at all.
"""

from __future__ import annotations

import calendar
import html
import re
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode, urlsplit

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from hermes.toolgateway.api import usage_window
from hermes.toolgateway.dashboard.chart import day_range
from hermes.toolgateway.dashboard.pages import Report, document, report_body, signin_form, user_filter, user_table
from hermes.toolgateway.dashboard.session import ADMIN_TTL, USER_TTL, Refusal, Session, Sessions
from hermes.toolgateway.errors import GatewayHTTPError, refusal
from hermes.toolgateway.portal.accounts import AccountError, User
from hermes.toolgateway.portal.routes import read_form
from hermes.toolgateway.storage.base import StorageError
from hermes.toolgateway.storage.metering import month_period, next_period_start

if TYPE_CHECKING:
    from hermes.toolgateway.services import Gateway

PAGE_HEADERS = {
    "cache-control": "no-store",
    # ``same-origin``: the browser sends its Origin on our own forms (under ``no-referrer`` Chromium posts
    # ``Origin: null``) while no other site ever sees a URL of ours (a login link stays here).
    "referrer-policy": "same-origin",
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; "
                               "frame-ancestors 'none'; base-uri 'none'",
}
_NONCE = re.compile(r"^[A-Za-z0-9_-]{16,64}$")


@dataclass(frozen=True)
class Window:
    """A period of usage: its bounds, what the page says about it, the days of its chart, a note."""

    since: float
    until: float
    shown: dict[str, str]
    period: str
    days: list[str]
    note: str


@dataclass(frozen=True)
class Area:
    """One side of the dashboard: the user's pages or the admin's."""

    admin: bool
    path: str
    cookie: str
    pre_cookie: str
    ttl: int

    @property
    def title(self) -> str:
        return "Tool Gateway usage (admin)" if self.admin else "Tool Gateway usage"


USER = Area(False, "/dashboard", "hgw_session", "hgw_pre", USER_TTL)
ADMIN = Area(True, "/admin/dashboard", "hgw_admin", "hgw_admin_pre", ADMIN_TTL)


def _iso(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


class Dashboard:
    """The dashboard's request handlers for one gateway."""

    def __init__(self, gw: Gateway) -> None:
        self.gw = gw
        self.sessions = Sessions(gw)

    # -- responses -----------------------------------------------------------------------------------
    def _secure(self, request: Request) -> bool:
        return (self.gw.config.public_url or "").lower().startswith("https://") or request.url.scheme == "https"

    def _cookie(self, resp: Response, request: Request, area: Area, name: str, value: str, max_age: int) -> None:
        resp.set_cookie(name, value, max_age=max_age, path=area.path, secure=self._secure(request), httponly=True,
                        samesite="strict")

    def _clear(self, resp: Response, request: Request, area: Area) -> None:
        resp.delete_cookie(area.cookie, path=area.path, secure=self._secure(request), httponly=True,
                           samesite="strict")

    @staticmethod
    def page(title: str, body: str, note: str = "", status: int = 200, head: str = "") -> Response:
        return HTMLResponse(document(title, body, note, head), status_code=status, headers=PAGE_HEADERS)

    def signin(self, request: Request, area: Area, note: str = "", status: int = 200, *,
               clear: bool = False) -> Response:
        """The sign-in page, with a pre-session nonce cookie its CSRF field is bound to."""
        nonce = request.cookies.get(area.pre_cookie, "")
        if not _NONCE.match(nonce):
            nonce = self.sessions.new_nonce()
        body = signin_form(admin=area.admin, csrf=self.sessions.pre_csrf(nonce))
        resp = self.page(area.title, body, note, status)
        self._cookie(resp, request, area, area.pre_cookie, nonce, 3600)
        if clear:
            self._clear(resp, request, area)
        return resp

    def _location(self, request: Request, area: Area) -> str:
        return str(request.scope.get("root_path", "")) + area.path

    def signed_in(self, request: Request, area: Area, cookie: str, keep: str = "") -> Response:
        """Set the session cookie and go to the dashboard (``keep``: its query string, e.g. ``days=30``).

        A redirect when the browser says the request started on this site or from the address bar;
        after a link on another site, ``SameSite=Strict`` would keep the new cookie off the redirected
        request, so the browser is sent on by a page of our own instead (meta refresh plus a link).
        """
        site = request.headers.get("sec-fetch-site", "none")
        suffix = f"?{keep}" if keep else ""
        resp: Response
        if site in ("none", "same-origin"):
            resp = RedirectResponse(self._location(request, area) + suffix, status_code=303, headers=PAGE_HEADERS)
        else:
            target = html.escape("dashboard" + suffix)
            resp = self.page(area.title, f'<p>Signed in. <a href="{target}">Continue to your usage</a>.</p>',
                             head=f'<meta http-equiv="refresh" content="0;url={target}">')
        self._cookie(resp, request, area, area.cookie, cookie, area.ttl)
        return resp

    def cross_site(self, request: Request) -> bool:
        """True unless the browser says the form came from this very origin.

        A browser that sends ``Sec-Fetch-Site`` (set by the browser itself; a page cannot forge it) is
        believed: only ``same-origin`` (or ``none``, the address bar) passes — ``same-site`` (another port
        of this host) and ``cross-site`` do not. Without it, ``Origin`` decides: it must be this server's
        own origin or ``public_url``'s; ``null`` (an opaque or privacy-stripped origin) is refused. A
        client sending neither (curl, a test) is not a browser a forged form could ride in.
        """
        site = request.headers.get("sec-fetch-site")
        if site is not None:
            return site.strip().lower() not in ("same-origin", "none")
        origin = request.headers.get("origin")
        if origin is None:
            return False
        own = {_origin(str(request.base_url))}
        if self.gw.config.public_url:
            own.add(_origin(self.gw.config.public_url))
        return origin.strip().lower().rstrip("/") not in own

    def refuse_form(self, area: Area, why: str) -> Response:
        return self.page(area.title, '<p><a href="dashboard">Back to the dashboard</a></p>', why, 403)

    # -- windows -------------------------------------------------------------------------------------
    def window(self, request: Request, now: float) -> Window:
        """The window asked for; a malformed one falls back to this month, with a note."""
        note = ""
        try:
            since, until, label = usage_window(request, now)
        except GatewayHTTPError as exc:
            note = exc.message
            t = time.gmtime(now)
            since = float(calendar.timegm((t.tm_year, t.tm_mon, 1, 0, 0, 0, 0, 0, 0)))
            until, label = next_period_start(since), month_period(now)
        end = max(since, min(until - 1, now))
        period = label if re.fullmatch(r"\d{4}-\d{2}", label) else month_period(now)
        return Window(since, until, {"label": label, "from": _iso(since), "to": _iso(end)}, period,
                      day_range(since, end + 1), note)

    # -- user side -----------------------------------------------------------------------------------
    async def user_page(self, request: Request) -> Response:
        login = request.query_params.get("login")
        if login is not None:
            return self._login_link(request, login)
        found = self.sessions.user_session(request.cookies.get(USER.cookie))
        if not isinstance(found, Session) or found.user is None:
            return self._no_session(request, USER, found)
        user = found.user
        request.scope.setdefault("state", {})["gw_user"] = user.uid
        now = self.gw.clock()
        w = self.window(request, now)
        meter = self.gw.meter
        await meter.flush()  # this process's journalled usage rows first
        report = Report(
            heading="Your Tool Gateway usage", who=f"Signed in as {user.name} (plan {user.plan})",
            csrf=self.sessions.csrf(found), window=w.shown, period=w.period,
            rows=meter.summary(user_id=user.id, since=w.since, until=w.until),
            daily=meter.daily(user_id=user.id, since=w.since, until=w.until), days=w.days,
            allowances=meter.allowances(user.id, dict(self.gw.accounts.plan_of(user).monthly), now))
        return self.page(USER.title, report_body(report, admin=False), w.note, 400 if w.note else 200)

    def _no_session(self, request: Request, area: Area, found: Session | Refusal | None) -> Response:
        if isinstance(found, Refusal):
            return self.signin(request, area, found.note, found.status, clear=True)
        return self.signin(request, area, clear=request.cookies.get(area.cookie) is not None)

    def _login_link(self, request: Request, secret: str) -> Response:
        user = self.gw.oauth.consume_login_link(secret)
        if user is None:
            return self.signin(request, USER, "This sign-in link is invalid, expired or already used; ask the "
                               "operator for a new one.", 400)
        keep = urlencode({k: v for k in ("period", "days") if (v := request.query_params.get(k))})
        return self._start(request, user, None, keep)

    def _start(self, request: Request, user: User, via: str | None, keep: str = "") -> Response:
        try:
            cookie = self.sessions.start_user(user, via)
        except AccountError:
            return self.signin(request, USER, "This account is disabled; ask the gateway operator.", 403)
        request.scope.setdefault("state", {})["gw_user"] = user.uid
        return self.signed_in(request, USER, cookie, keep)

    async def user_signin(self, request: Request) -> Response:
        if self.cross_site(request):
            return self.refuse_form(USER, "This form was sent from another site; sign in on the dashboard itself.")
        form = await read_form(request)
        if not self.sessions.pre_csrf_ok(request.cookies.get(USER.pre_cookie, ""), form.get("csrf", "")):
            return self.signin(request, USER, "The sign-in form expired; please try again.", 403)
        secret = form.get("token", "").strip()
        if not secret:
            return self.signin(request, USER, "Paste your gateway token or a login code.", 400)
        if secret.startswith("ll_"):
            user = self.gw.oauth.consume_login_link(secret)
            if user is None:
                return self.signin(request, USER, "This login code is invalid, expired or already used.", 401)
            return self._start(request, user, None)
        try:
            principal = self.gw.auth.authenticate(secret)
        except (GatewayHTTPError, StorageError) as exc:
            refused = refusal(exc)
            return self.signin(request, USER, f"That token was refused: {refused.message}", refused.status)
        return self._start(request, principal.user, principal.jti)

    async def user_signout(self, request: Request) -> Response:
        return await self._signout(request, USER)

    async def _signout(self, request: Request, area: Area) -> Response:
        if self.cross_site(request):
            return self.refuse_form(area, "This form was sent from another site; nothing was changed.")
        form = await read_form(request)
        cookie = request.cookies.get(area.cookie)
        found = self.sessions.admin_session(cookie) if area.admin else self.sessions.user_session(cookie)
        if isinstance(found, Session):
            if not self.sessions.csrf_ok(found, form.get("csrf", "")):
                return self.refuse_form(area, "The form expired; reload the dashboard and sign out from there.")
            if area.admin:
                self.sessions.end_admin(found)
            else:
                self.sessions.end_user(found)
                await self.gw.changes_applied()  # the session's token is refused by every process before we answer
        resp = RedirectResponse(self._location(request, area), status_code=303, headers=PAGE_HEADERS)
        self._clear(resp, request, area)
        return resp

    # -- admin side ----------------------------------------------------------------------------------
    async def admin_page(self, request: Request) -> Response:
        found = self.sessions.admin_session(request.cookies.get(ADMIN.cookie))
        if not isinstance(found, Session):
            return self._no_session(request, ADMIN, found)
        request.scope.setdefault("state", {})["gw_user"] = "admin"
        now = self.gw.clock()
        w = self.window(request, now)
        note = w.note
        users = self.gw.accounts.list_users()
        name = request.query_params.get("user", "")
        chosen = next((u for u in users if u.name == name), None) if name else None
        status = 400 if note else 200
        meter = self.gw.meter
        rows: list[dict[str, Any]] = []
        daily: list[dict[str, Any]] = []
        allowances: dict[str, dict[str, Any]] = {}
        if name and chosen is None:
            note, status = f"There is no user named {name!r}.", 404
        else:
            user_id = chosen.id if chosen else None
            await meter.flush()
            rows = meter.summary(user_id=user_id, since=w.since, until=w.until)
            daily = meter.daily(user_id=user_id, since=w.since, until=w.until)
            if chosen is not None:
                allowances = meter.allowances(chosen.id, dict(self.gw.accounts.plan_of(chosen).monthly), now)
        report = Report(
            heading=f"Tool Gateway usage of {name}" if name else "Tool Gateway usage of everyone",
            who="Signed in as the administrator", csrf=self.sessions.csrf(found), window=w.shown, period=w.period,
            rows=rows, daily=daily, days=w.days, allowances=allowances,
            keep={"user": name} if name else {})
        body = report_body(report, admin=True, filters=user_filter(users, name, request.query_params),
                           per_user=user_table(rows, {u.name: u.plan for u in users}))
        return self.page(ADMIN.title, body, note, status)

    async def admin_signin(self, request: Request) -> Response:
        if self.cross_site(request):
            return self.refuse_form(ADMIN, "This form was sent from another site; sign in on the dashboard itself.")
        form = await read_form(request)
        if not self.sessions.pre_csrf_ok(request.cookies.get(ADMIN.pre_cookie, ""), form.get("csrf", "")):
            return self.signin(request, ADMIN, "The sign-in form expired; please try again.", 403)
        if not self.sessions.admin_token_ok(form.get("admin_token", "").strip()):
            return self.signin(request, ADMIN, "The admin token is wrong.", 403)
        request.scope.setdefault("state", {})["gw_user"] = "admin"
        return self.signed_in(request, ADMIN, self.sessions.start_admin())

    async def admin_signout(self, request: Request) -> Response:
        return await self._signout(request, ADMIN)


def routes(gw: Gateway) -> list[Route]:
    """The dashboard routes bound to ``gw``."""
    d = Dashboard(gw)
    return [
        Route(USER.path, d.user_page, methods=["GET"]),
        Route(USER.path + "/signin", d.user_signin, methods=["POST"]),
        Route(USER.path + "/signout", d.user_signout, methods=["POST"]),
        Route(ADMIN.path, d.admin_page, methods=["GET"]),
        Route(ADMIN.path + "/signin", d.admin_signin, methods=["POST"]),
        Route(ADMIN.path + "/signout", d.admin_signout, methods=["POST"]),
    ]
