"""Logins for the vault from the person's password manager: the 1Password CLI (``op``) or the Bitwarden
CLI (``bw``), when installed and signed in (``hermes browser vault import``; docs/tools/browser.md).

* **1Password** (``op`` 2.x): ``op item list --categories Login --format json`` (optionally ``--vault``),
  then ``op item get <id> --format json --reveal`` per item: the field whose ``purpose`` is ``USERNAME``
  and the one whose ``purpose`` is ``PASSWORD``, the item's ``urls[].href`` (the primary one first), and a
  field of ``type`` ``OTP`` (an ``otpauth://`` URI whose ``secret`` is kept);
* **Bitwarden**: ``bw status`` must say ``unlocked`` (``bw unlock`` → ``BW_SESSION``), then ``bw list
  items``: items of ``type`` 1 (login) with ``login.username``, ``login.password``, ``login.uris[].uri``
  and ``login.totp`` (an ``otpauth://`` URI or the bare base32 secret).

Only http(s) sites are taken (one entry per item, for its first such address); items without a username or
password are skipped and counted. The CLIs' output is read from a pipe and never printed or logged; what
comes back to the caller is the logins (for the vault) and the skipped count.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

from hermes.errors import ConfigError

CLI_TIMEOUT = 120.0
SOURCES = ("1password", "bitwarden")


@dataclass
class Login:
    site: str
    username: str
    password: str = field(repr=False)
    totp_secret: str | None = field(default=None, repr=False)
    title: str = ""


@dataclass
class Harvest:
    logins: list[Login] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # titles of items that could not be taken, with why


def _run(program: str, args: list[str], what: str) -> Any:
    """``program args`` → its JSON output; a ConfigError in the CLI's own words (first line) otherwise."""
    found = shutil.which(program)
    if found is None:
        raise ConfigError(f"{what}'s command-line tool '{program}' is not installed (or not on PATH)")
    try:
        done = subprocess.run([found, *args], capture_output=True, text=True, timeout=CLI_TIMEOUT,
                              env=os.environ.copy(), stdin=subprocess.DEVNULL, check=False)
    except subprocess.TimeoutExpired:
        raise ConfigError(f"'{program} {args[0]}' did not finish within {CLI_TIMEOUT:g} s") from None
    if done.returncode != 0:
        said = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[0][:300]
        raise ConfigError(f"'{program} {' '.join(args[:2])}' failed: {said}")
    try:
        return json.loads(done.stdout)
    except ValueError:
        raise ConfigError(f"'{program} {' '.join(args[:2])}' did not print JSON") from None


def _web(urls: list[str]) -> str | None:
    return next((u for u in urls if urlsplit(u.strip()).scheme in ("http", "https") and urlsplit(u).hostname), None)


def _otp_secret(value: object) -> str | None:
    """The base32 secret of an ``otpauth://`` URI, or the value itself when it is already bare."""
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    if text.lower().startswith("otpauth://"):
        secret = parse_qs(urlsplit(text).query).get("secret", [""])[0]
        return secret or None
    return text.replace(" ", "")


def from_1password(vault: str | None = None) -> Harvest:
    scope = ["--vault", vault] if vault else []
    listed = _run("op", ["item", "list", "--categories", "Login", "--format", "json", *scope], "1Password")
    harvest = Harvest()
    for item in listed if isinstance(listed, list) else []:
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            continue
        title = str(item.get("title") or item["id"])[:100]
        full = _run("op", ["item", "get", item["id"], "--format", "json", "--reveal", *scope], "1Password")
        fields = [f for f in full.get("fields", []) if isinstance(f, dict)] if isinstance(full, dict) else []
        purpose = {str(f.get("purpose")): str(f.get("value") or "") for f in fields if f.get("purpose")}
        urls = sorted((u for u in (full.get("urls") or []) if isinstance(u, dict)), key=lambda u: not u.get("primary"))
        site = _web([str(u.get("href") or "") for u in urls])
        otp = next((f.get("value") for f in fields if f.get("type") == "OTP"), None)
        _take(harvest, title, site, purpose.get("USERNAME", ""), purpose.get("PASSWORD", ""), _otp_secret(otp))
    return harvest


def from_bitwarden() -> Harvest:
    status = _run("bw", ["status"], "Bitwarden")
    state = status.get("status") if isinstance(status, dict) else None
    if state != "unlocked":
        raise ConfigError(f"the Bitwarden vault is {state or 'not readable'}: run 'bw login' and 'bw unlock', then "
                          "export the BW_SESSION it prints, and try again")
    listed = _run("bw", ["list", "items"], "Bitwarden")
    harvest = Harvest()
    for item in listed if isinstance(listed, list) else []:
        if not isinstance(item, dict) or item.get("type") != 1 or not isinstance(item.get("login"), dict):
            continue
        login = item["login"]
        uris = [str(u.get("uri") or "") for u in login.get("uris") or [] if isinstance(u, dict)]
        _take(harvest, str(item.get("name") or "")[:100], _web(uris), str(login.get("username") or ""),
              str(login.get("password") or ""), _otp_secret(login.get("totp")))
    return harvest


def _take(harvest: Harvest, title: str, site: str | None, username: str, password: str, totp: str | None) -> None:
    if site is None:
        harvest.skipped.append(f"{title}: no http(s) address")
    elif not username or not password:
        harvest.skipped.append(f"{title}: no username or no password")
    else:
        harvest.logins.append(Login(site, username, password, totp, title))


def harvest_from(source: str, vault: str | None = None) -> Harvest:
    if source == "1password":
        return from_1password(vault)
    if source == "bitwarden":
        if vault:
            raise ConfigError("--vault names a 1Password vault; Bitwarden imports every login it can read")
        return from_bitwarden()
    raise ConfigError(f"unknown source {source!r}: one of {', '.join(SOURCES)}")
