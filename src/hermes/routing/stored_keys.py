"""Credentials saved with ``hermes auth add``: kept in ``auth.json`` (0600), used like their variable.

A key is an entry of ``credential_pool.<provider>`` in ``HERMES_HOME/auth.json`` (the file the portal
login lives in, written atomically with mode 0600 under its lock)::

    {"credential_pool": {"openrouter": [{"id": "…", "auth_type": "api_key", "label": "…",
                                         "access_token": "sk-or-…", "source": "manual", "added_at": "…"}]}}

:func:`stored_variables` gives each stored key under the variable it stands for (``OPENROUTER_API_KEY``)
so that routing, ``portal info``, ``tools list`` and the tool calls (:class:`hermes.tools.routed.context.
RoutedContext`) see one answer; a variable set in the environment or ``.env`` always wins over a stored
key. A SuperGrok login (``hermes auth add xai --type oauth``, :mod:`hermes.routing.xai_oauth`) stands in
for ``XAI_API_KEY`` the same way. Nothing here ever prints a key.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hermes.errors import ConfigError

#: the providers whose API key can be stored, and the variable each stands for
STORED_KEY_VARIABLES: dict[str, str] = {"openrouter": "OPENROUTER_API_KEY"}


def _pool(document: Mapping[str, Any]) -> dict[str, Any]:
    pool = document.get("credential_pool")
    return dict(pool) if isinstance(pool, Mapping) else {}


def _api_keys(entries: Any) -> list[dict[str, Any]]:
    return [e for e in entries if isinstance(e, dict) and e.get("auth_type") == "api_key"
            and isinstance(e.get("access_token"), str) and e["access_token"].strip()] \
        if isinstance(entries, list) else []


def stored_variables(auth_path: Path, env: Mapping[str, str] | None = None, *, fresh: bool = False) -> dict[str, str]:
    """``{variable: key}`` of the stored API keys (the first of each provider) and of a SuperGrok login
    (``XAI_API_KEY``: :mod:`hermes.routing.xai_oauth`); ``{}`` without auth.json. Offline unless ``fresh``:
    then a login about to expire is renewed first (the token is about to be sent)."""
    from hermes.routing import xai_oauth
    from hermes.routing.portal_auth import AuthStore

    if not auth_path.exists():
        return {}
    pool = _pool(AuthStore(auth_path).read())
    out: dict[str, str] = {}
    for provider, variable in STORED_KEY_VARIABLES.items():
        keys = _api_keys(pool.get(provider))
        if keys:
            out[variable] = keys[0]["access_token"].strip()
    token = xai_oauth.fresh_token(auth_path, env or {}) if fresh else xai_oauth.stored_token(auth_path)
    if token:
        out[xai_oauth.VARIABLE] = token
    return out


def with_stored(env: Mapping[str, str], auth_path: Path, *, fresh: bool = False) -> dict[str, str]:
    """``env`` with the stored credentials for the variables it leaves unset (a set variable always wins,
    and nothing is renewed for a variable that is set)."""
    merged = dict(env)
    unset = [v for v in (*STORED_KEY_VARIABLES.values(), "XAI_API_KEY") if not merged.get(v, "").strip()]
    if not unset:
        return merged
    for variable, key in stored_variables(auth_path, env, fresh=fresh and "XAI_API_KEY" in unset).items():
        if variable in unset:
            merged[variable] = key
    return merged


def _provider(name: str) -> str:
    provider = name.strip().lower()
    if provider not in STORED_KEY_VARIABLES:
        raise ConfigError(f"no API key of {name!r} can be stored; known: {', '.join(sorted(STORED_KEY_VARIABLES))}")
    return provider


def add_key(auth_path: Path, name: str, key: str, label: str | None = None) -> dict[str, Any]:
    """Store ``key`` as the first credential of provider ``name`` (a key stored before is kept behind it)."""
    from hermes.routing.portal_auth import AuthStore

    provider = _provider(name)
    key = key.strip()
    if not key or any(c.isspace() for c in key):
        raise ConfigError("the API key is empty or has spaces in it; nothing was stored")
    store = AuthStore(auth_path)
    with store.lock():
        document = store.read()
        pool = _pool(document)
        kept = [e for e in _api_keys(pool.get(provider)) if e["access_token"] != key]
        entry = {"id": secrets.token_hex(4), "auth_type": "api_key", "label": label or f"{provider} key",
                 "access_token": key, "source": "manual",
                 "added_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        pool[provider] = [entry, *kept]
        document["credential_pool"] = pool
        store.write(document)
    return {k: v for k, v in entry.items() if k != "access_token"}


def remove_keys(auth_path: Path, name: str) -> int:
    """Forget every stored API key of ``name``; how many there were."""
    from hermes.routing.portal_auth import AuthStore

    provider = _provider(name)
    store = AuthStore(auth_path)
    with store.lock():
        document = store.read()
        pool = _pool(document)
        found = pool.get(provider)
        entries: list[Any] = found if isinstance(found, list) else []
        gone = len(_api_keys(entries))
        if not gone:
            return 0
        pool[provider] = [e for e in entries if e not in _api_keys(entries)]
        if not pool[provider]:
            del pool[provider]
        document["credential_pool"] = pool
        store.write(document)
    return gone


def listing(auth_path: Path) -> list[dict[str, Any]]:
    """The stored keys without the keys themselves: provider, id, label, when added, the variable."""
    from hermes.routing.portal_auth import AuthStore

    if not auth_path.exists():
        return []
    pool = _pool(AuthStore(auth_path).read())
    rows = []
    for provider in sorted(STORED_KEY_VARIABLES):
        for entry in _api_keys(pool.get(provider)):
            rows.append({"provider": provider, "id": entry.get("id"), "label": entry.get("label"),
                         "added_at": entry.get("added_at"), "variable": STORED_KEY_VARIABLES[provider]})
    return rows
