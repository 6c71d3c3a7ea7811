"""Service URLs (``database_url``, ``redis_url``): checked when read, printed only with the password masked.

Standard library only, so the configuration can use it without importing any driver.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit, urlunsplit

from hermes.errors import ConfigError

_SECRET_PARAMS = frozenset({"password", "sslpassword", "passfile"})
#: config key → the URL schemes it accepts
SCHEMES = {"database_url": ("postgresql", "postgres"), "redis_url": ("redis", "rediss", "unix")}


def mask_url(url: str) -> str:
    """``url`` with its password (in the user part or a ``password=`` parameter) replaced by ``***``."""
    try:
        parts = urlsplit(url)
        netloc = parts.netloc
        if "@" in netloc:
            userinfo, _, hostport = netloc.rpartition("@")
            user, colon, _password = userinfo.partition(":")
            netloc = f"{user}:***@{hostport}" if colon else f"{user}@{hostport}"
        query = parts.query
        if query:
            pairs = parse_qsl(query, keep_blank_values=True)
            query = urlencode([(k, "***" if k.lower() in _SECRET_PARAMS else v) for k, v in pairs], safe="*")
        return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
    except ValueError:
        return "<unparsable URL>"


def url_secrets(url: str) -> list[str]:
    """The secret strings in ``url`` (raw and decoded), to scrub from error messages."""
    found: list[str] = []
    try:
        parts = urlsplit(url)
    except ValueError:
        return found
    userinfo = parts.netloc.rpartition("@")[0]
    if ":" in userinfo:
        found.append(userinfo.partition(":")[2])
    found += [v for k, v in parse_qsl(parts.query, keep_blank_values=True) if k.lower() in _SECRET_PARAMS]
    out: list[str] = []
    for secret in found:
        for form in (secret, unquote(secret), quote(unquote(secret), safe="")):
            if form and form not in out:
                out.append(form)
    return out


def scrub(text: str, url: str) -> str:
    """``text`` (an error message) with every secret of ``url`` replaced by ``***``."""
    for secret in sorted(url_secrets(url), key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


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
