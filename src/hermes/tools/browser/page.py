"""What the action tools share: the calling task's tab, snapshots, refs, and "what changed".

Every result names the page (``url``, ``title``); an action answers with a short sentence plus
``changed`` — the new URL or title, how many interactive elements appeared and disappeared (naming up to
eight new ones with their refs), dialogs the policy closed, downloads kept, requests refused — rather
than a whole new page. Page text always comes wrapped as untrusted content.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from hermes.errors import ToolArgumentError, ToolError
from hermes.tools.browser.backend import Tab, hub, refuse_served
from hermes.tools.browser.config import BrowserConfig, browser_config, cloud_candidate
from hermes.tools.browser.connect import SESSION_KEY
from hermes.tools.browser.snapshot import Snapshot, compact, parse_ref, render_page, tokens_of
from hermes.tools.context import on_session_end, session_of
from hermes.tools.untrusted import mark_untrusted

if TYPE_CHECKING:
    from playwright.async_api import Locator

NEW_ELEMENTS_SHOWN = 8


def config_of(kw: dict[str, Any]) -> BrowserConfig:
    """The ``browser.*`` settings of the calling session (else of HERMES_HOME); the spill folder is the
    session's own."""
    from dataclasses import replace

    from hermes.config.settings import Settings

    session = session_of(kw)
    settings = session.settings if session is not None and session.settings is not None else Settings.load()
    config = browser_config(settings)
    data = settings.config.data if isinstance(settings.config.data, dict) else {}
    connected = session.state.get(SESSION_KEY) if session is not None else None
    if isinstance(connected, str):  # /browser connect in the chat: this session drives that endpoint
        config = replace(config, cdp_url=connected)
    if not config.cdp_url and cloud_candidate(data, settings.env.as_dict()):
        from hermes.tools.browser.cloud import cloud_access

        cloud = cloud_access(settings, session.surface if session is not None else None)
        if cloud is not None:  # a cloud browser is never let into private or loopback addresses
            config = replace(config, cloud=cloud, allow_private_urls=False)
    context = getattr(session, "context", None)
    spill = getattr(context, "spill_dir", None)
    return replace(config, spill_dir=spill) if spill is not None else config


async def tab_of(kw: dict[str, Any]) -> Tab:
    """The calling task's tab (opened on first use; closed with the session)."""
    config = config_of(kw)
    session = session_of(kw)
    task = str(kw.get("task_id") or (session.task_id if session is not None else "default"))
    tab = await hub().tab(task, config)
    on_session_end(kw, f"browser:{task}", lambda: _close_from_outside(task))
    return tab


def _close_from_outside(task: str) -> None:
    from hermes.tools.asyncbridge import run_sync

    run_sync(hub().close_tab(task), timeout=30)


# -- snapshots -------------------------------------------------------------------------------------------------
def dialog_notice(tab: Tab) -> list[dict[str, str]]:
    """The JavaScript dialogs waiting for browser_dialog (CDP endpoint backend)."""
    return [{"type": d.type, "message": d.message[:500], "default_prompt": d.default_value[:200]}
            for d in tab.pending_dialogs]


async def take_snapshot(tab: Tab) -> Snapshot:
    """A fresh compacted snapshot; the tab's refs and saved lines follow it."""
    if tab.pending_dialogs:
        raise ToolError("a JavaScript dialog is open and blocks the page; answer it with browser_dialog first")
    passwords = asyncio.ensure_future(password_values(tab))  # in parallel with the tree: one round trip less
    try:
        raw = await tab.page.aria_snapshot(mode="ai", timeout=tab.config.command_timeout * 1000)
    except Exception as exc:
        passwords.cancel()
        raise ToolError(f"the page could not be read: {first_line(exc)}") from None
    values = await passwords
    await refuse_served(tab)
    snap = compact(mask_passwords(raw, values), tab.name_ref)
    tab.known_refs |= snap.every_ref
    tab.current_refs = snap.interactive
    tab.current_all = snap.every_ref
    tab.snapshot_document = tab.document
    tab.snapshot_lines = snap.lines
    tab.snapshot_path = None
    tab.snapshot_count += 1
    return snap


_PASSWORDS_JS = "() => Array.from(document.querySelectorAll('input[type=password]'), i => i.value).filter(v => v)"
PASSWORD_MASK = "••••••"


async def password_values(tab: Tab) -> set[str]:
    """What the page's password fields hold (every frame), so snapshots never show it."""
    found: set[str] = set()
    for frame in tab.page.frames:
        with contextlib.suppress(Exception):
            found.update(await asyncio.wait_for(frame.evaluate(_PASSWORDS_JS), 5))
    return found


def mask_passwords(raw: str, values: set[str]) -> str:
    """``raw`` with the value of every textbox line that shows one of ``values`` masked."""
    if not values:
        return raw
    endings = tuple(f": {form}" for value in values for form in (value, json.dumps(value), f"'{value}'"))
    lines = raw.splitlines()
    for i, line in enumerate(lines):
        if "textbox" in line and line.endswith(endings):
            lines[i] = line[: line.rindex(": ")] + f": {PASSWORD_MASK}"
    return "\n".join(lines)


def saved_path(tab: Tab) -> str:
    """Where the latest snapshot is saved whole (written on first need, 0600)."""
    if tab.snapshot_path is None:
        from hermes.config.atomic import atomic_write

        path = tab.folder / f"snapshot-{tab.snapshot_count}.txt"
        atomic_write(path, "\n".join(tab.snapshot_lines) + "\n", mode=0o600)
        tab.snapshot_path = path
    return str(tab.snapshot_path)


async def page_view(tab: Tab, page: int = 1) -> dict[str, Any]:
    """The page's address and title with page ``page`` of the latest snapshot, within the budget."""
    budget = tab.config.budget_chars
    lines = tab.snapshot_lines
    whole = sum(len(line) + 1 for line in lines)
    where = saved_path(tab) if whole > budget else ""
    try:
        text, pages = render_page(lines, budget, page, where)
    except ValueError as exc:
        raise ToolArgumentError(str(exc)) from None
    out: dict[str, Any] = {"url": tab.page.url, "title": await title_of(tab),
                           "snapshot": mark_untrusted(tab.page.url, text),
                           "interactive_elements": len(tab.current_refs)}
    if pages > 1:
        out.update(page=page, pages=pages, tokens=tokens_of(text), whole_tokens=tokens_of("\n".join(lines)),
                   saved_at=where)
    return out


async def title_of(tab: Tab) -> str:
    if tab.pending_dialogs:
        return ""
    try:
        return await asyncio.wait_for(tab.page.title(), 5)
    except Exception:
        return ""


# -- refs ------------------------------------------------------------------------------------------------------------
async def locate(tab: Tab, value: object) -> tuple[str, Locator]:
    """The element of ref ``value``: unknown refs and refs whose element is gone are refused clearly."""
    try:
        ref = parse_ref(value)
    except ValueError as exc:
        raise ToolArgumentError(str(exc)) from None
    if ref not in tab.known_refs:
        raise ToolError(f"unknown ref @{ref}: no element of this page had that ref; take a snapshot "
                        "(browser_snapshot) and use one of its refs")
    stale = ToolError(f"stale ref @{ref}: the page changed; take a new snapshot")
    if ref not in tab.current_all or tab.snapshot_document != tab.document:
        raise stale
    locator = tab.page.locator(f"aria-ref={tab.target_of[ref]}")
    try:
        found = await asyncio.wait_for(locator.count(), 5)
    except Exception:
        found = 0
    if not found:
        raise stale
    return ref, locator


def refuse_scripts_after_fill(tab: Tab, what: str) -> None:
    """A ToolError when the vault filled a secret into the current document (see ``Tab.vault_document``)."""
    if tab.vault_document is not None and tab.vault_document == tab.document:
        raise ToolError(f"refused: {what} is not run on a page the vault filled a secret into (a script could read "
                        "it back); it works again once the page navigates (submit the form, or open another page)")


# -- actions ---------------------------------------------------------------------------------------------------------
async def act(tab: Tab, what: str, step: Callable[[], Awaitable[object]]) -> dict[str, Any]:
    """Run ``step`` and answer ``what`` plus what changed on the page."""
    before_url, before_title = tab.page.url, await title_of(tab)
    before = dict(tab.current_refs)
    tab.take_blocked()
    tab.dialog_opened.clear()
    task = asyncio.ensure_future(step())
    opened = asyncio.ensure_future(tab.dialog_opened.wait())
    try:
        await asyncio.wait({task, opened}, timeout=tab.config.command_timeout + 5, return_when=asyncio.FIRST_COMPLETED)
    finally:
        opened.cancel()
    out: dict[str, Any] = {"result": what}
    if tab.pending_dialogs:  # the action waits on the dialog (CDP backend): say so, leave it running
        tab.spawn(_quietly(task))
        out.update(result=f"{what}; a JavaScript dialog opened and waits for browser_dialog",
                   pending_dialogs=dialog_notice(tab), url=tab.page.url)
        return out
    if not task.done():
        task.cancel()
        raise ToolError(f"{what} did not finish within {tab.config.command_timeout:g} s")
    exc = task.exception()
    if isinstance(exc, ToolError):
        raise exc
    if exc is not None:
        raise ToolError(f"{what} failed: {first_line(exc)}") from None
    await settle(tab)
    if tab.saving:  # a download the step started: answer once it is kept (or refused)
        await asyncio.wait(set(tab.saving), timeout=tab.config.command_timeout)
    snap = await take_snapshot(tab)
    changed: dict[str, Any] = {}
    if tab.page.url != before_url:
        changed["url"] = tab.page.url
    title = await title_of(tab)
    if title != before_title:
        changed["title"] = title
    added = [ref for ref in snap.interactive if ref not in before]
    removed = [ref for ref in before if ref not in snap.interactive]
    if added or removed:
        changed.update(added=len(added), removed=len(removed))
    if added:
        changed["new_elements"] = mark_untrusted(tab.page.url, "\n".join(
            f"{snap.interactive[ref]} @{ref}" for ref in added[:NEW_ELEMENTS_SHOWN]))
    out.update(url=tab.page.url, changed=changed or "nothing visible changed")
    out.update(events(tab))
    return out


def events(tab: Tab) -> dict[str, Any]:
    """Dialogs closed by the policy, downloads and refused requests no result has reported yet."""
    out: dict[str, Any] = {}
    if tab.closed_dialogs:
        out["dialogs"], tab.closed_dialogs = tab.closed_dialogs[-20:], []
    if tab.downloads:
        out["downloads"], tab.downloads = tab.downloads[-20:], []
    blocked = tab.take_blocked()
    if blocked:
        out["refused_requests"] = [{"url": url, "why": why} for url, why in blocked[:10]]
    return out


async def settle(tab: Tab, *, loaded: bool = False) -> None:
    """Give the page a moment: its load after a navigation (``loaded``: the caller already waited for
    it), then two animation frames (one after a completed load)."""
    if not loaded:
        with contextlib.suppress(Exception):
            await tab.page.wait_for_load_state("domcontentloaded", timeout=tab.config.command_timeout * 1000)
    frames = "r(0)" if loaded else "requestAnimationFrame(() => r(0))"
    with contextlib.suppress(Exception):
        await asyncio.wait_for(tab.page.evaluate(
            f"() => new Promise(r => requestAnimationFrame(() => {frames}))"), 2)


async def _quietly(task: asyncio.Future[Any]) -> None:
    with contextlib.suppress(BaseException):
        await task


def first_line(exc: BaseException) -> str:
    """The first line of a Playwright error (its call log left out)."""
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:500]
