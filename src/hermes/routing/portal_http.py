"""HTTP to the Nous Portal: form posts and JSON answers, and the token endpoint's answer.

Every request goes to a portal URL that :func:`check_portal_url` accepts
(https, or http on loopback), never follows redirects, ignores proxy settings for loopback, and reports
failures as :class:`PortalError` with any secret it carried masked.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hermes.errors import ConfigError, GatewayError
from hermes.routing.endpoints import _is_loopback, parse_origin

HTTP_TIMEOUT = 15.0
_INFERENCE_HOST = "inference-api.nousresearch.com"


class PortalError(GatewayError):
    """The portal could not be reached or refused a login step; the message never holds a token."""


def check_portal_url(url: str, source: str = "the portal URL") -> str:
    """``url`` without a trailing slash when it may receive tokens: https, or http on loopback only."""
    origin = parse_origin(url.strip()) if isinstance(url, str) else None
    if origin is None:
        raise ConfigError(f"{source} must be a plain http(s) URL such as https://portal.example.com "
                          "(no user info, spaces or backslashes)")
    if origin.scheme != "https" and not _is_loopback(origin.host):
        raise ConfigError(f"{source} must use https (plain http is accepted for localhost only)")
    return url.strip().rstrip("/")


def post_form(portal: str, path: str, form: Mapping[str, str], *, headers: Mapping[str, str] | None = None,
              secrets: tuple[str, ...] = (), timeout: float = HTTP_TIMEOUT) -> tuple[int, dict[str, Any]]:
    """POST a form to the portal; (status, JSON object). PortalError for transport problems and non-JSON."""
    return _request("POST", portal, path, form=form, headers=headers, secrets=secrets, timeout=timeout)


def get_json(portal: str, path: str, *, token: str, timeout: float = 8.0) -> tuple[int, dict[str, Any]]:
    """GET with ``Authorization: Bearer``; (status, JSON object)."""
    headers = {"authorization": f"Bearer {token}", "accept": "application/json"}
    return _request("GET", portal, path, headers=headers, secrets=(token,), timeout=timeout)


def _request(method: str, portal: str, path: str, *, form: Mapping[str, str] | None = None,
             headers: Mapping[str, str] | None = None, secrets: tuple[str, ...] = (),
             timeout: float) -> tuple[int, dict[str, Any]]:
    import httpx

    from hermes.redact import redact
    url = check_portal_url(portal) + path
    origin = parse_origin(url)
    loopback = origin is not None and _is_loopback(origin.host)
    sent = {"accept": "application/json", "user-agent": "hermes-cli", **(headers or {})}
    try:
        with httpx.Client(timeout=timeout, follow_redirects=False, trust_env=not loopback) as client:
            resp = client.request(method, url, data=dict(form) if form is not None else None, headers=sent)
    except httpx.HTTPError as exc:
        reason = redact(str(exc), secrets) or exc.__class__.__name__
        raise PortalError(f"could not reach the Nous Portal at {portal}: {reason}") from None
    if 300 <= resp.status_code < 400:
        raise PortalError(f"the Nous Portal at {portal} answered {path} with a redirect (HTTP {resp.status_code}); "
                          "check the portal URL")
    try:
        body = resp.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        raise PortalError(f"the Nous Portal at {portal} did not answer {path} with JSON (HTTP {resp.status_code})")
    return resp.status_code, body


def oauth_error(body: Mapping[str, Any], secrets: tuple[str, ...] = ()) -> tuple[str, str]:
    """(``error``, ``error_description``) of an OAuth error answer: short, one line, ``secrets`` masked."""
    from hermes.redact import redact

    error = body.get("error")
    desc = body.get("error_description")
    code = error if isinstance(error, str) and error else "unknown_error"
    text = desc if isinstance(desc, str) and desc else code
    clean = [redact(" ".join(part.split()), secrets)[:limit] for part, limit in ((code, 80), (text, 300))]
    return clean[0], clean[1]


@dataclass(frozen=True)
class TokenResponse:
    """A successful token endpoint answer (device-code exchange or refresh); secrets kept out of ``repr``."""

    access_token: str = field(repr=False)
    refresh_token: str | None = field(default=None, repr=False)
    token_type: str = "Bearer"
    expires_in: float | None = None
    scope: str | None = None
    inference_base_url: str | None = None

    @classmethod
    def from_body(cls, body: Mapping[str, Any], portal: str) -> TokenResponse:
        access = body.get("access_token")
        if not isinstance(access, str) or not access.strip():
            raise PortalError(f"the Nous Portal at {portal} answered without an access token")
        refresh = body.get("refresh_token")
        expires = body.get("expires_in")
        scope = body.get("scope")
        kind = body.get("token_type")
        inference = body.get("inference_base_url")
        return cls(
            access_token=access.strip(),
            refresh_token=refresh.strip() if isinstance(refresh, str) and refresh.strip() else None,
            token_type=kind if isinstance(kind, str) and kind else "Bearer",
            expires_in=float(expires) if isinstance(expires, int | float) and not isinstance(expires, bool)
            and expires > 0 else None,
            scope=scope if isinstance(scope, str) and scope else None,
            inference_base_url=inference if isinstance(inference, str) and _inference_ok(inference) else None,
        )


def _inference_ok(url: str) -> bool:
    origin = parse_origin(url)
    return origin is not None and origin.scheme == "https" and origin.host == _INFERENCE_HOST
