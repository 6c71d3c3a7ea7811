"""The naming rule of connector accounts and the sentences people see about names (requirement GW-12).

Shared by the client (``hermes connectors``, the agent's ``connector_accounts`` tool) and the gateway
server (:mod:`hermes.toolgateway.storage.connector_store`), so both refuse the same names with the same words.

* An account name is 1–32 characters of ``a-z``, ``0-9`` and ``-``, starting with a letter or a digit.
* An app (connector) id is 1–64 characters of ``a-z``, ``0-9``, ``-`` and ``_``, starting with a letter or
  a digit (``gmail``, ``google-calendar``).
* An unnamed account is shown by its display name on the app's side (e.g. the mailbox address).
"""

from __future__ import annotations

import re

NAME_PATTERN = r"^[a-z0-9][a-z0-9-]{0,31}$"
APP_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,63}$"
_NAME = re.compile(NAME_PATTERN)
_APP = re.compile(APP_PATTERN)

#: What a refused name is told (no echo of the value beyond its repr, which cannot carry secrets).
NAME_RULE = "1-32 characters of a-z, 0-9 and -, starting with a letter or a digit"
#: The message of a portal (gateway) that cannot rename connector accounts (GW-12, exact wording).
RENAME_UNSUPPORTED = "This Nous Portal cannot rename connector accounts yet."

#: Display titles of well-known apps; others are title-cased from their id.
_TITLES = {
    "gmail": "Gmail", "github": "GitHub", "gitlab": "GitLab", "google-calendar": "Google Calendar",
    "google-drive": "Google Drive", "google-docs": "Google Docs", "outlook": "Outlook", "slack": "Slack",
    "notion": "Notion", "linear": "Linear", "jira": "Jira", "hubspot": "HubSpot", "dropbox": "Dropbox",
}


def valid_name(name: object) -> bool:
    """Whether ``name`` follows the naming rule."""
    return isinstance(name, str) and bool(_NAME.match(name))


def name_problem(name: object) -> str | None:
    """Why ``name`` cannot be an account name (None when it can)."""
    if not isinstance(name, str):
        return "an account name must be a string"
    if valid_name(name):
        return None
    shown = name if len(name) <= 40 else name[:40] + "…"
    return f"{shown!r} is not a valid account name: use {NAME_RULE}"


def valid_app(app: object) -> bool:
    """Whether ``app`` can be a connector id."""
    return isinstance(app, str) and bool(_APP.match(app))


def app_title(app: str) -> str:
    """The app's display title: ``gmail`` → ``Gmail``, ``google-calendar`` → ``Google Calendar``."""
    known = _TITLES.get(app)
    if known is not None:
        return known
    return " ".join(part.capitalize() for part in re.split(r"[-_]+", app) if part) or app


def announcement(title: str, name: str) -> str:
    """The sentence the agent says after naming a new account (GW-12, exact wording)."""
    return f"Hermes named this {title} account {name}. Rename it anytime."
