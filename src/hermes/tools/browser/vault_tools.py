"""The five vault tools (docs/tools/browser.md#the-vault), offered only with ``browser.vault.enabled: true``.

* ``browser_vault_list`` — the entries kept for the current page's site: handles, sites, usernames;
* ``browser_vault_fill`` — fill the page's login form from an entry (origin checked inside the page);
* ``browser_vault_totp`` — fill the page's one-time-code field from an entry's TOTP secret;
* ``browser_vault_save`` — keep the login the person just typed, after the person confirms it;
* ``browser_vault_status`` — whether the vault is usable here and where its key is kept, so the model
  can tell the person why a fill is impossible (no entry, a locked key) instead of guessing.

No tool returns a password, a TOTP secret or a code; no tool deletes (``hermes browser vault remove``
is the person's). The values travel only from the vault file to the page.
"""

from __future__ import annotations

from typing import Any

from hermes.errors import ConfigError, ToolError
from hermes.tools.browser.vault import Vault, VaultEntry, site_of
from hermes.tools.browser.vault_page import FILL_CODE, FILL_LOGIN, READ_LOGIN
from hermes.tools.registry import registry

_HANDLE = {"type": "string", "minLength": 3, "maxLength": 40, "pattern": "^v-[0-9a-f]+$",
           "description": "An entry's handle from browser_vault_list, e.g. 'v-1a2b3c4d5e'."}


def _page() -> Any:
    """:mod:`.page`, imported on the first call (it brings the browser backend and asyncio)."""
    from hermes.tools.browser import page

    return page


def vault_enabled() -> tuple[bool, str | None]:
    """Offline: the browser tools can run and the person turned the vault on."""
    from hermes.config.reader import ConfigReader
    from hermes.config.settings import Settings
    from hermes.errors import HermesError
    from hermes.tools.browser.tool import browser_available

    ready, why = browser_available()
    if not ready:
        return ready, why
    try:
        data = Settings.load().config.data
        on = ConfigReader(data if isinstance(data, dict) else {}).flag("browser.vault.enabled", False)
    except HermesError:
        return False, "browser.vault.enabled is malformed"
    return (True, None) if on else (False, "the vault is off (hermes config set browser.vault.enabled true)")


def _vault(kw: dict[str, Any]) -> Vault:
    return Vault(_page().config_of(kw).home)


def _entry(kw: dict[str, Any], handle: str) -> VaultEntry:
    try:
        found = _vault(kw).find(handle)
    except ConfigError as exc:
        raise ToolError(str(exc)) from None
    if found is None:
        raise ToolError(f"no vault entry {handle}: call browser_vault_list for the entries of this site")
    return found


async def _in_frames(tab: Any, script: str, args: dict[str, Any]) -> dict[str, Any]:
    """Run ``script`` in each frame of the page (the main one first) until one does it; the last answer."""
    from hermes.tools.browser.camofox import VAULT_REFUSED, is_camofox

    if is_camofox(tab.page):
        raise ToolError(f"refused: {VAULT_REFUSED}")
    answer: dict[str, Any] = {"error": "fields", "why": "no frame of this page answered"}
    for frame in tab.page.frames:
        try:
            result = await frame.evaluate(script, args)
        except Exception:  # a frame that went away or cannot run scripts
            continue
        if isinstance(result, dict) and "error" not in result:
            return result
        if frame is tab.page.main_frame or (isinstance(result, dict) and result.get("error") == "fields"):
            answer = result if isinstance(result, dict) else answer
    return answer


def _refusal(entry: VaultEntry, answer: dict[str, Any], what: str) -> ToolError:
    if answer.get("error") == "origin":
        return ToolError(f"refused: the page is at {str(answer.get('origin'))[:200]}, not {entry.site} "
                         f"(the site of {entry.handle}); no {what} was filled")
    return ToolError(f"nothing was filled: {answer.get('why', 'no suitable field')}")


async def browser_vault_list(args: dict[str, Any], **kw: Any) -> dict[str, Any]:
    tab = await _page().tab_of(kw)
    url = tab.page.url
    try:
        site = site_of(url)
        entries = _vault(kw).for_site(url)
    except ConfigError as exc:
        if url.startswith(("http://", "https://")):
            raise ToolError(str(exc)) from None
        return {"site": None, "entries": [], "note": "the page is not a web site (open one first)"}
    return {"site": site, "entries": [e.public() for e in entries]}


async def browser_vault_fill(args: dict[str, Any], **kw: Any) -> dict[str, Any]:
    entry = _entry(kw, str(args["handle"]))
    tab = await _page().tab_of(kw)
    answer = await _in_frames(tab, FILL_LOGIN, {"origin": entry.site, "username": entry.username,
                                                "password": entry.password})
    if "error" in answer:
        raise _refusal(entry, answer, "password")
    tab.vault_document = tab.document
    return {"result": f"filled {' and '.join(answer['filled'])} of {entry.username} for {entry.site}",
            "submitted": False, "next": "click the form's sign-in button (browser_click) to submit it"}


async def browser_vault_totp(args: dict[str, Any], **kw: Any) -> dict[str, Any]:
    import pyotp

    entry = _entry(kw, str(args["handle"]))
    if not entry.totp_secret:
        raise ToolError(f"{entry.handle} has no TOTP secret (hermes browser vault add --totp stores one)")
    tab = await _page().tab_of(kw)
    answer = await _in_frames(tab, FILL_CODE, {"origin": entry.site, "code": pyotp.TOTP(entry.totp_secret).now()})
    if "error" in answer:
        raise _refusal(entry, answer, "code")
    tab.vault_document = tab.document
    return {"result": f"filled the one-time code of {entry.username} for {entry.site}"}


def browser_vault_save(args: dict[str, Any], **kw: Any) -> dict[str, Any]:
    """Synchronous: the person is asked on the calling thread, the page is read on the bridge loop."""
    from hermes.tools.asyncbridge import run_sync
    from hermes.tools.context import session_of
    from hermes.tools.requests import Request, normalise_answer

    session = session_of(kw)
    if session is None or not session.surface.has_person:
        raise ToolError("refused: saving a login needs the person's confirmation and nobody can be asked here")

    async def read() -> dict[str, Any]:
        tab = await _page().tab_of(kw)
        return await _in_frames(tab, READ_LOGIN, {})

    typed = run_sync(read(), timeout=_page().config_of(kw).command_timeout + 5)
    if "error" in typed:
        raise ToolError(f"nothing to save: {typed.get('why', 'no login form')}")
    site, username, password = site_of(str(typed["origin"])), str(typed["username"]), str(typed["password"])
    typed.clear()
    if not username:
        raise ToolError("nothing to save: the username field is empty")
    request = Request("approval", {
        "command": f"save the login of {username} for {site} in the browser vault",
        "reason": "the agent asks to keep the login you typed on this page (encrypted, for later fills)",
        "tool": "browser_vault_save", "choices": ["once", "deny"]})
    choice = normalise_answer(session.sink.ask(request))
    if choice is None:
        raise ToolError("refused: nobody answered the confirmation; the login was not saved")
    if choice == "deny":
        raise ToolError("refused: the person did not confirm; the login was not saved")
    try:
        entry = _vault(kw).add(site, username, password)
    except ConfigError as exc:
        raise ToolError(str(exc)) from None
    return {"result": f"saved the login of {username} for {site}", "entry": entry.public()}


async def browser_vault_status(args: dict[str, Any], **kw: Any) -> dict[str, Any]:
    vault = _vault(kw)
    tab = await _page().tab_of(kw)
    try:
        total, here = len(vault.entries()), len(vault.for_site(tab.page.url))
    except ConfigError as exc:
        return {"usable": False, "why": str(exc), "key": vault.key_store()}
    return {"usable": True, "key": vault.key_store(), "entries": total, "entries_for_this_site": here,
            "page": tab.page.url[:300]}


def _schema(name: str, description: str, handle: bool = False) -> dict[str, Any]:
    return {"name": name, "description": description,
            "parameters": {"type": "object", "properties": {"handle": _HANDLE} if handle else {},
                           "required": ["handle"] if handle else [], "additionalProperties": False}}


SCHEMAS = {
    "browser_vault_list": _schema(
        "browser_vault_list", "The person's stored logins for the current page's site: handles and usernames "
        "(never passwords). Use a handle with browser_vault_fill."),
    "browser_vault_fill": _schema(
        "browser_vault_fill", "Fill the page's sign-in form (username and password) from a stored login, by "
        "handle. The password is never shown to you; the form is not submitted.", handle=True),
    "browser_vault_totp": _schema(
        "browser_vault_totp", "Fill the page's one-time-code (2FA) field from a stored login's TOTP secret, "
        "by handle. The code is never shown to you.", handle=True),
    "browser_vault_save": _schema(
        "browser_vault_save", "Keep the login the person just typed into this page's sign-in form in the "
        "vault, after the person confirms. Only when the person asked for it."),
    "browser_vault_status": _schema(
        "browser_vault_status", "Whether the vault can be used here, how many logins it holds (for this site "
        "and in all) and where its key is kept."),
}

_COMMON: dict[str, Any] = {"toolset": "browser", "check_fn": vault_enabled, "needs_session": True}
registry.register(name="browser_vault_list", schema=SCHEMAS["browser_vault_list"], handler=browser_vault_list,
                  is_async=True, **_COMMON)
registry.register(name="browser_vault_fill", schema=SCHEMAS["browser_vault_fill"], handler=browser_vault_fill,
                  is_async=True, **_COMMON)
registry.register(name="browser_vault_totp", schema=SCHEMAS["browser_vault_totp"], handler=browser_vault_totp,
                  is_async=True, **_COMMON)
registry.register(name="browser_vault_save", schema=SCHEMAS["browser_vault_save"], handler=browser_vault_save,
                  **_COMMON)
registry.register(name="browser_vault_status", schema=SCHEMAS["browser_vault_status"],
                  handler=browser_vault_status, is_async=True, **_COMMON)
