"""Service URLs (``database_url``, ``redis_url``): checked when read, printed only with the password masked.

Standard library only, so the configuration can use it without importing any driver (masking and
scrubbing are :mod:`hermes.store.postgres`'s, shared with the kanban board).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict
from urllib.parse import urlsplit

from hermes.errors import ConfigError
from hermes.store.postgres import mask_url, scrub, url_secrets

__all__ = ["SCHEMES", "ServiceURLs", "checked_url", "mask_url", "scrub", "service_urls", "url_secrets"]

#: config key → the URL schemes it accepts
SCHEMES = {"database_url": ("postgresql", "postgres"), "redis_url": ("redis", "rediss", "unix")}


def checked_url(key: str, value: object) -> str | None:
    """``value`` of config key ``key`` (``database_url``/``redis_url``) if it is a URL of an accepted scheme."""
    if value is None or value == "":
        return None
    schemes = SCHEMES[key]
    if not isinstance(value, str) or urlsplit(value).scheme.lower() not in schemes:
        shown = mask_url(value) if isinstance(value, str) else type(value).__name__
        raise ConfigError(f"gateway config: {key} must be a {' or '.join(s + '://' for s in schemes)} URL, "
                          f"not {shown!r}")
    return value


class ServiceURLs(TypedDict):
    database_url: str | None
    redis_url: str | None


def service_urls(data: Mapping[str, Any], overrides: Mapping[str, Any], env: Mapping[str, str]) -> ServiceURLs:
    """``database_url`` and ``redis_url``: a flag (``overrides``), else ``HERMES_GATEWAY_DATABASE_URL`` /
    ``HERMES_GATEWAY_REDIS_URL``, else the config file (``data``); each checked by :func:`checked_url`."""
    found: dict[str, str | None] = {}
    for key in SCHEMES:
        value = overrides.get(key)
        if value is None:
            value = env.get(f"HERMES_GATEWAY_{key.upper()}") or data.get(key)
        found[key] = checked_url(key, value)
    return ServiceURLs(database_url=found["database_url"], redis_url=found["redis_url"])
