"""HTML of the usage dashboard: the page shell, sign-in forms, the period picker, tables and the chart.

Everything that comes from a request or the database goes through :func:`html.escape` (text and
attribute values alike). Links and form actions are relative (``dashboard?days=30``,
``dashboard/signout``), so the same markup serves ``/dashboard`` and ``/admin/dashboard``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from html import escape
from typing import Any
from urllib.parse import urlencode

from hermes.toolgateway.dashboard.chart import money, usage_chart
from hermes.toolgateway.portal.accounts import User

_STYLE = (
    "body{font:15px system-ui,sans-serif;max-width:64rem;margin:2rem auto;padding:0 1rem;color:#1d1d1d}"
    "h1{font-size:1.5rem;margin-bottom:.2rem}h2{font-size:1.1rem;margin-top:2rem}"
    "table{border-collapse:collapse;width:100%;margin:.5rem 0}th,td{padding:.3rem .5rem;border-bottom:1px solid #ddd;"
    "text-align:left}td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}tfoot td{font-weight:600}"
    ".note{color:#a40000}.muted{color:#666}.bar{display:flex;gap:1rem;align-items:center;flex-wrap:wrap}"
    ".totals{display:flex;gap:2rem}.totals div{font-size:1.3rem}.totals span{display:block;font-size:.8rem;"
    "color:#666}label{display:block;margin:.8rem 0}input,select,button{font:inherit;padding:.3rem .5rem}"
    "form.inline,label.inline{display:inline;margin:0}.chart{max-width:100%;height:auto;border:1px solid #eee}"
)


def document(title: str, body: str, note: str = "", head: str = "") -> str:
    """A whole page; ``note`` (plain text) is shown as an alert above the body, ``head`` is trusted markup."""
    alert = f'<p class="note" role="alert">{escape(note)}</p>' if note else ""
    return ("<!doctype html><html lang=en><head><meta charset=utf-8>"
            f"<title>{escape(title)}</title><meta name=viewport content='width=device-width,initial-scale=1'>"
            f"<style>{_STYLE}</style>{head}</head><body>{alert}{body}</body></html>")


def signin_form(*, admin: bool, csrf: str) -> str:
    """The sign-in page body: the token field (and, for users, a login code) plus the CSRF field."""
    hidden = f'<input type="hidden" name="csrf" value="{escape(csrf)}">'
    if admin:
        return ("<h1>Tool Gateway usage (admin)</h1><p>Sign in with the gateway's admin token "
                "(<code>hermes toolgateway admin-token</code>).</p>"
                f'<form method="post" action="dashboard/signin">{hidden}'
                '<label>Admin token <input name="admin_token" type="password" autocomplete="off" required></label>'
                "<button>Sign in</button></form>")
    return ("<h1>Tool Gateway usage</h1><p>Open the one-time login link the operator gave you "
            "(<code>hermes toolgateway users login-link NAME</code>), or paste your gateway token "
            "(or the <code>ll_…</code> code of a login link) here.</p>"
            f'<form method="post" action="dashboard/signin">{hidden}'
            '<label>Gateway token or login code <input name="token" type="password" autocomplete="off" required>'
            "</label><button>Sign in</button></form>")


@dataclass
class Report:
    """What a dashboard page shows for one window."""

    heading: str
    who: str
    csrf: str
    window: Mapping[str, str]
    period: str
    rows: Sequence[Mapping[str, Any]]
    daily: Sequence[Mapping[str, Any]]
    days: Sequence[str]
    allowances: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    keep: Mapping[str, str] = field(default_factory=dict)


def _query(params: Mapping[str, str]) -> str:
    clean = {k: v for k, v in params.items() if v}
    return "dashboard" + (f"?{urlencode(clean)}" if clean else "")


def picker(report: Report) -> str:
    """This month / last 30 days links and a month field, keeping ``report.keep`` (the admin's user filter)."""
    e = escape
    label = report.window.get("label", "")
    this = f'<a href="{e(_query(dict(report.keep)))}">This month</a>'
    last = f'<a href="{e(_query({**report.keep, "days": "30"}))}">Last 30 days</a>'
    kept = "".join(f'<input type="hidden" name="{e(k)}" value="{e(v)}">' for k, v in report.keep.items() if v)
    month = (f'<form method="get" action="dashboard" class="inline">{kept}<label class="inline">Month '
             f'<input type="month" name="period" value="{e(report.period)}" pattern="[0-9]{{4}}-[0-9]{{2}}">'
             "</label> <button>Show</button></form>")
    shown = (f'<p class="muted" id="window">Showing <b>{e(label)}</b>: {e(report.window.get("from", "")[:10])} to '
             f'{e(report.window.get("to", "")[:10])} (UTC)</p>')
    return f'<nav class="bar" aria-label="Period">{this} {last} {month}</nav>{shown}'


def _signout(csrf: str) -> str:
    return (f'<form method="post" action="dashboard/signout" class="inline">'
            f'<input type="hidden" name="csrf" value="{escape(csrf)}"><button>Sign out</button></form>')


def _totals(rows: Sequence[Mapping[str, Any]]) -> tuple[int, int, int, float]:
    return (sum(int(r["calls"]) for r in rows), sum(int(r["succeeded"]) for r in rows),
            sum(int(r["units"]) for r in rows), sum(float(r["cost"]) for r in rows))


def totals_block(rows: Sequence[Mapping[str, Any]]) -> str:
    calls, ok, units, cost = _totals(rows)
    return ('<section class="totals" id="totals">'
            f'<div data-total="calls">{calls:,}<span>calls</span></div>'
            f'<div data-total="succeeded">{ok:,}<span>succeeded</span></div>'
            f'<div data-total="units">{units:,}<span>units</span></div>'
            f'<div data-total="cost">{escape(money(cost))}<span>cost</span></div></section>')


#: What a person calls the tool behind a relay's operation, by (category, operation), then by category.
TOOL_BY_OPERATION = {("firecrawl", "search"): "Web search", ("firecrawl", "scrape"): "Web extract",
                     ("openai-audio", "speech"): "Text to speech", ("openai-audio", "transcription"): "Speech to text"}
TOOL_BY_CATEGORY = {"firecrawl": "Web search and extract", "openai-audio": "Text to speech and speech to text",
                    "fal": "Image generation", "fal-video": "Video generation", "krea": "Image generation (Krea)",
                    "nous-images": "Image generation (Nous Portal models)", "browser-use": "Cloud browser",
                    "modal": "Sandboxes", "connectors": "Connectors"}


def tool_name(category: str, operation: str | None = None) -> str:
    """``Web search`` for ``firecrawl``/``search``; the category itself when this version does not know it."""
    if operation is not None and (category, operation) in TOOL_BY_OPERATION:
        return TOOL_BY_OPERATION[(category, operation)]
    return TOOL_BY_CATEGORY.get(category, category)


def _via(category: str, vendor: str) -> str:
    """The detail of a row: the relay and the backend that served it (``off``: none was configured)."""
    return f"{category} relay, " + ("no backend configured" if vendor == "off" else vendor)


def tool_table(rows: Sequence[Mapping[str, Any]], *, with_user: bool) -> str:
    """Per tool (what a person calls it: Web search, Text to speech…): the relay and vendor that served it,
    operation, calls, succeeded, units, cost, mean latency."""
    if not rows:
        return '<p class="muted" id="no-usage">No usage in this period.</p>'
    e = escape
    head = ("<th>User</th>" if with_user else "") + (
        "<th>Tool</th><th>Served by</th><th>Operation</th><th class=num>Calls</th><th class=num>Succeeded</th>"
        "<th class=num>Units</th><th class=num>Cost</th><th class=num>Mean latency</th>")
    body = []
    for r in rows:
        user = f'<td>{e(str(r["user"]))}</td>' if with_user else ""
        category, operation = str(r["category"]), str(r["operation"])
        body.append(
            f'<tr>{user}<td>{e(tool_name(category, operation))}</td>'
            f'<td class="muted">{e(_via(category, str(r["vendor"])))}</td>'
            f'<td>{e(operation)}</td><td class=num>{int(r["calls"]):,}</td>'
            f'<td class=num>{int(r["succeeded"]):,}</td><td class=num>{int(r["units"]):,}</td>'
            f'<td class=num>{e(money(float(r["cost"])))}</td>'
            f'<td class=num>{float(r["mean_latency_ms"]):,.1f} ms</td></tr>')
    calls, ok, units, cost = _totals(rows)
    span = 4 if with_user else 3
    foot = (f"<tr><td colspan={span}>Total</td><td class=num>{calls:,}</td><td class=num>{ok:,}</td>"
            f"<td class=num>{units:,}</td><td class=num>{e(money(cost))}</td><td></td></tr>")
    return (f'<table id="by-tool"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody>'
            f"<tfoot>{foot}</tfoot></table>")


def allowance_table(allowances: Mapping[str, Mapping[str, Any]]) -> str:
    if not allowances:
        return ""
    e = escape
    rows = "".join(
        f'<tr><td>{e(tool_name(cat))} <span class="muted">({e(cat)})</span></td>'
        f'<td class=num>{int(a["used"]):,}</td><td class=num>{int(a["limit"]):,}</td>'
        f'<td>{e(str(a["resets_at"]))}</td></tr>' for cat, a in allowances.items())
    return ("<h2>This month's allowances</h2><table id=\"allowances\"><thead><tr><th>Tools</th>"
            "<th class=num>Used</th><th class=num>Limit</th><th>Resets</th></tr></thead>"
            f"<tbody>{rows}</tbody></table>")


def user_table(rows: Sequence[Mapping[str, Any]], plans: Mapping[str, str]) -> str:
    """Per user (the admin page): calls, units, cost, linked to the user's filter."""
    per: dict[str, list[Mapping[str, Any]]] = {}
    for r in rows:
        per.setdefault(str(r["user"]), []).append(r)
    if not per:
        return ""
    e = escape
    body = []
    for name, mine in per.items():
        calls, ok, units, cost = _totals(mine)
        body.append(f'<tr><td><a href="{e(_query({"user": name}))}">{e(name)}</a></td>'
                    f'<td>{e(plans.get(name, ""))}</td><td class=num>{calls:,}</td><td class=num>{ok:,}</td>'
                    f"<td class=num>{units:,}</td><td class=num>{e(money(cost))}</td></tr>")
    return ('<h2>Per user</h2><table id="by-user"><thead><tr><th>User</th><th>Plan</th><th class=num>Calls</th>'
            "<th class=num>Succeeded</th><th class=num>Units</th><th class=num>Cost</th></tr></thead>"
            f'<tbody>{"".join(body)}</tbody></table>')


def user_filter(users: Sequence[User], current: str, query: Mapping[str, str]) -> str:
    """The admin's user picker (a GET form), keeping the chosen period."""
    e = escape
    options = "".join(f'<option value="{e(u.name)}"{" selected" if u.name == current else ""}>{e(u.name)}'
                      f'{" (disabled)" if u.disabled else ""}</option>' for u in users)
    kept = "".join(f'<input type="hidden" name="{k}" value="{e(query[k])}">' for k in ("period", "days")
                   if query.get(k))
    return (f'<form method="get" action="dashboard" class="bar" id="user-filter">{kept}<label>User '
            f'<select name="user"><option value="">everyone</option>{options}</select></label>'
            "<button>Show</button></form>")


def report_body(report: Report, *, admin: bool, filters: str = "", per_user: str = "") -> str:
    """A signed-in page: heading, who and sign-out, picker, totals, tables and the chart."""
    return (f"<h1>{escape(report.heading)}</h1>"
            f'<div class="bar"><span id="who">{escape(report.who)}</span> {_signout(report.csrf)}</div>'
            f"{filters}{picker(report)}{totals_block(report.rows)}{allowance_table(report.allowances)}{per_user}"
            f"<h2>Per tool</h2>{tool_table(report.rows, with_user=admin)}"
            f'<h2>Per day</h2><figure id="chart">{usage_chart(report.daily, report.days)}</figure>')
