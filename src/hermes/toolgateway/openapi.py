"""The OpenAPI 3.1 document of the gateway's own endpoints, written by hand (``GET /openapi.json``).

Covers the portal (device code, token, account, approval page), usage and admin views, health, and
the firecrawl, krea and modal relays and the shared origin (``tool``: uploads, images) under their pinned prefixes
``/relay/{label}`` (the same paths answer on ``{label}-gateway.<domain>`` without the prefix).
"""

from __future__ import annotations

from typing import Any

from hermes import __version__
from hermes.toolgateway.config import GatewayConfig
from hermes.toolgateway.relays.browser_use import openapi_paths as browser_use_paths
from hermes.toolgateway.relays.connectors import openapi_paths as connector_paths
from hermes.toolgateway.relays.modal import openapi_paths as modal_paths
from hermes.toolgateway.relays.tool_origin import openapi_paths as tool_paths

_ERROR = {"$ref": "#/components/schemas/Error"}
_OAUTH_ERROR = {"$ref": "#/components/schemas/OAuthError"}


def _json(schema: dict[str, Any], description: str = "OK") -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _form(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"required": True, "content": {"application/x-www-form-urlencoded": {
        "schema": {"type": "object", "properties": properties, "required": required}}}}


def _errors(*statuses: int) -> dict[str, Any]:
    return {str(s): _json(_ERROR, "Error") for s in statuses}


def _string(**extra: Any) -> dict[str, Any]:
    return {"type": "string", **extra}


_USAGE_PARAMS = [
    {"name": "period", "in": "query", "schema": _string(pattern=r"^\d{4}-\d{2}$"), "description": "YYYY-MM (UTC)"},
    {"name": "days", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 366}},
]


_KREA_BODY = {"type": "object", "required": ["prompt"], "additionalProperties": False, "properties": {
    "prompt": _string(minLength=1, maxLength=10000), "aspect_ratio": _string(pattern=r"^[1-9][0-9]?:[1-9][0-9]?$"),
    "resolution": _string(enum=["1K", "2K", "4K"]), "creativity": _string(enum=["raw", "low", "medium", "high"]),
    "seed": {"type": "integer", "minimum": 0},
    "image_style_references": {"type": "array", "maxItems": 10, "items": {
        "type": "object", "required": ["url"],
        "properties": {"url": _string(), "strength": {"type": "number", "minimum": -2, "maximum": 2}}}}}}
_KREA_JOB = {"type": "object", "required": ["job_id"], "properties": {
    "job_id": _string(), "status": _string(), "created_at": {}, "completed_at": {},
    "result": {"type": "object", "properties": {"urls": {"type": "array", "items": _string()}, "url": _string(),
                                                "error": _string()}}}}


def _dashboard_paths() -> dict[str, Any]:
    """The usage dashboard's HTML pages and forms (session cookies, see docs/gateway/server.md)."""
    page = {"description": "HTML page", "content": {"text/html": {}}}
    back = {"description": "Signed in or out: go to the dashboard", "headers": {"Location": {"schema": _string()}}}
    csrf = {"csrf": _string(description="the form's CSRF field")}
    return {
        "/dashboard": {"get": {
            "summary": "Your usage (HTML; sign-in form without a session); ?login=ll_… signs in with a login link",
            "parameters": [*_USAGE_PARAMS, {"name": "login", "in": "query", "schema": _string()}],
            "responses": {"200": page, "303": back, "400": page, "403": page}}},
        "/dashboard/signin": {"post": {
            "summary": "Sign in with a gateway token or a login code", "requestBody": _form(
                {"token": _string(), **csrf}, ["token", "csrf"]),
            "responses": {"303": back, **{s: page for s in ("400", "401", "403")}}}},
        "/dashboard/signout": {"post": {"summary": "End the session", "requestBody": _form(csrf, ["csrf"]),
                                        "responses": {"303": back, "403": page}}},
        "/admin/dashboard": {"get": {
            "summary": "Everyone's usage (HTML, admin session)",
            "parameters": [*_USAGE_PARAMS, {"name": "user", "in": "query", "schema": _string()}],
            "responses": {"200": page, "400": page, "404": page}}},
        "/admin/dashboard/signin": {"post": {
            "summary": "Sign in with the admin token", "requestBody": _form(
                {"admin_token": _string(), **csrf}, ["admin_token", "csrf"]),
            "responses": {"303": back, "403": page}}},
        "/admin/dashboard/signout": {"post": {"summary": "End the admin session", "requestBody": _form(csrf, ["csrf"]),
                                              "responses": {"303": back, "403": page}}},
    }


def schema(config: GatewayConfig) -> dict[str, Any]:
    """The document for this server."""
    token_set = {"type": "object", "required": ["access_token", "refresh_token", "token_type", "expires_in", "scope"],
                 "properties": {"access_token": _string(), "refresh_token": _string(), "token_type": _string(),
                                "expires_in": {"type": "integer"}, "scope": _string()}}
    relay_errors = _errors(400, 401, 402, 403, 413, 429, 502, 503, 504)
    return {
        "openapi": "3.1.0",
        "info": {"title": "Hermes Tool Gateway", "version": __version__,
                 "description": "Self-hosted Tool Gateway: portal login, usage, and vendor relays."},
        "servers": [{"url": config.base_url()}],
        "components": {
            "securitySchemes": {"gatewayToken": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"},
                                "adminToken": {"type": "http", "scheme": "bearer"}},
            "schemas": {
                "Error": {"type": "object", "required": ["error", "code"],
                          "properties": {"error": _string(), "code": _string(), "message": _string(),
                                         "success": {"type": "boolean"}, "portal_url": _string(),
                                         "retry_after": {"type": "integer"}}},
                "OAuthError": {"type": "object", "required": ["error"],
                               "properties": {"error": _string(enum=[
                                   "authorization_pending", "slow_down", "expired_token", "access_denied",
                                   "invalid_grant", "refresh_token_reused", "invalid_request", "invalid_client",
                                   "unsupported_grant_type"]), "error_description": _string()}},
                "TokenSet": token_set,
                "Usage": {"type": "object", "properties": {
                    "totals": {"type": "object"}, "by_tool": {"type": "array", "items": {"type": "object"}},
                    "daily": {"type": "array", "items": {"type": "object"}}, "allowances": {"type": "object"}}},
            },
        },
        "paths": {
            "/healthz": {"get": {"summary": "Liveness", "responses": {"200": _json({"type": "object"})}}},
            "/readyz": {"get": {"summary": "Readiness (database reachable)",
                                "responses": {"200": _json({"type": "object"}), "503": _json(_ERROR, "Not ready")}}},
            "/api/oauth/device/code": {"post": {
                "summary": "Start a device-code login", "requestBody": _form(
                    {"client_id": _string(), "scope": _string()}, ["client_id"]),
                "responses": {"200": _json({"type": "object", "required": [
                    "device_code", "user_code", "verification_uri", "verification_uri_complete", "expires_in",
                    "interval"]}), "400": _json(_OAUTH_ERROR, "OAuth error")}}},
            "/api/oauth/token": {"post": {
                "summary": "Poll a device code, or refresh (refresh token in x-nous-refresh-token)",
                "parameters": [{"name": "x-nous-refresh-token", "in": "header", "schema": _string()}],
                "requestBody": _form({"grant_type": _string(enum=[
                    "urn:ietf:params:oauth:grant-type:device_code", "refresh_token"]), "client_id": _string(),
                    "device_code": _string(), "refresh_token": _string()}, ["grant_type"]),
                "responses": {"200": _json({"$ref": "#/components/schemas/TokenSet"}),
                              "400": _json(_OAUTH_ERROR, "OAuth error")}}},
            "/api/oauth/account": {"get": {
                "summary": "The caller's account and entitlement", "security": [{"gatewayToken": []}],
                "responses": {"200": _json({"type": "object"}), **_errors(401, 403)}}},
            "/device": {
                "get": {"summary": "Approval page (HTML)", "parameters": [
                    {"name": "user_code", "in": "query", "schema": _string()},
                    {"name": "login", "in": "query", "schema": _string()}],
                    "responses": {"200": {"description": "HTML page", "content": {"text/html": {}}}}},
                "post": {"summary": "Approve or deny a device code", "requestBody": _form(
                    {"user_code": _string(), "login": _string(), "admin_token": _string(), "user": _string(),
                     "action": _string(enum=["approve", "deny"])}, ["user_code"]),
                    "responses": {s: {"description": "HTML page", "content": {"text/html": {}}}
                                  for s in ("200", "400", "403")}}},
            "/api/usage": {"get": {
                "summary": "The caller's own usage", "security": [{"gatewayToken": []}], "parameters": _USAGE_PARAMS,
                "responses": {"200": _json({"$ref": "#/components/schemas/Usage"}), **_errors(400, 401, 403)}}},
            "/api/admin/usage": {"get": {
                "summary": "Everyone's usage (admin)", "security": [{"adminToken": []}],
                "parameters": [*_USAGE_PARAMS, {"name": "user", "in": "query", "schema": _string()}],
                "responses": {"200": _json({"type": "object"}), **_errors(400, 401, 404)}}},
            **_dashboard_paths(),
            "/relay/firecrawl/v2/search": {"post": {
                "summary": "Firecrawl v2 search (also POST /v2/search on firecrawl-gateway.<domain>)",
                "security": [{"gatewayToken": []}],
                "requestBody": {"required": True, "content": {"application/json": {"schema": {
                    "type": "object", "required": ["query"],
                    "properties": {"query": _string(), "limit": {"type": "integer", "minimum": 1, "maximum": 50}}}}}},
                "responses": {"200": _json({"type": "object"}), **relay_errors}}},
            "/relay/firecrawl/v2/scrape": {"post": {
                "summary": "Firecrawl v2 scrape (also POST /v2/scrape on firecrawl-gateway.<domain>)",
                "security": [{"gatewayToken": []}],
                "requestBody": {"required": True, "content": {"application/json": {"schema": {
                    "type": "object", "required": ["url"],
                    "properties": {"url": _string(), "formats": {"type": "array"},
                                   "onlyMainContent": {"type": "boolean"}}}}}},
                "responses": {"200": _json({"type": "object"}), **relay_errors}}},
            "/relay/krea/generate/image/krea/krea-2/{variant}": {"post": {
                "summary": "Start a Krea 2 image job (paid plans; also on krea-gateway.<domain>)",
                "security": [{"gatewayToken": []}],
                "parameters": [{"name": "variant", "in": "path", "required": True,
                                "schema": _string(enum=["medium", "large", "medium-turbo"])},
                               {"name": "x-idempotency-key", "in": "header", "schema": _string(maxLength=200)}],
                "requestBody": {"required": True, "content": {"application/json": {"schema": _KREA_BODY}}},
                "responses": {"200": _json(_KREA_JOB), **relay_errors, **_errors(404)}}},
            "/relay/krea/jobs/{job_id}": {"get": {
                "summary": "A Krea job started with this token (also on krea-gateway.<domain>)",
                "security": [{"gatewayToken": []}],
                "parameters": [{"name": "job_id", "in": "path", "required": True,
                                "schema": _string(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")}],
                "responses": {"200": _json(_KREA_JOB), **_errors(401, 402, 403, 404, 429, 502, 503, 504)}}},
            **connector_paths(_errors),
            **tool_paths(_errors),
            **modal_paths(_errors),
            **browser_use_paths(_errors),
        },
    }
