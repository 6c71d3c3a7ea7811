"""Which backend a tool category uses: one pure function (requirement GW-2 … GW-6).

:func:`resolve_route` takes the config mapping (as loaded from config.yaml), an environment mapping
(process environment merged with ``.env``) and the portal :class:`~hermes.routing.credentials.Credentials`,
and answers a :class:`Route` or raises :class:`~hermes.errors.SelectionError`. It does no I/O and reads
no clock, so tools at execution time, ``hermes portal info`` and ``hermes tools`` get the same answer.

The rules, in order:

1. **A saved selection always wins** (GW-3). For web a per-function key (``web.search_backend``,
   ``web.extract_backend``) overrides ``web.backend`` for its function (GW-5). ``nous`` routes through
   the gateway whatever keys exist; a vendor name routes to that vendor, and a missing key is the GW-3
   error, never a silent fall to the gateway. An unknown name is an error listing the valid ones. When
   ``web.backend`` names a search-only vendor (SearXNG, Brave, DuckDuckGo), extraction uses the local
   page fetcher.
2. **Legacy** ``<section>.use_gateway: true`` reads as ``nous`` (GW-6) when the category key is unset or
   names a vendor the gateway relays (the upstream client wrote ``provider: fal`` *and*
   ``use_gateway: true`` for its "Nous Subscription" rows). Next to a vendor the gateway does not relay
   (``web.backend: tavily``) the flag has no meaning and the vendor stands.
3. **Never configured** (GW-4): auto-detect from the person's own backends, in the order of
   ``Category.auto_order`` — env-only backends first (``SEARXNG_URL``, ``CAMOFOX_URL``), then vendors
   with a key — then the key-less or local default, else a route of kind ``none``. A portal login alone
   never moves a category onto the gateway (GW-8): only a written selection does, and the picker,
   ``hermes model``'s checklist and ``hermes setup --portal`` are what write ``nous``.

Entitlement is checked separately by :func:`check_entitlement` (in :mod:`hermes.routing.entitlement`):
a saved ``nous`` selection resolves to a gateway route even when logged out, so ``hermes portal info``
can show both the route and why it would fail, and tools raise the GW-10 error when they call.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from hermes.config.reader import truth
from hermes.errors import ConfigError, SelectionError
from hermes.routing.categories import (
    ALIASES,
    CATEGORIES,
    GATEWAY_DISPLAY,
    GATEWAY_VALUE,
    PLUGIN_NAME,
    ROUTE_NAMES,
    WEB_FUNCTION_KEYS,
    Category,
    Vendor,
    image_gateway_label,
    selection_values,
    split_route_name,
)
from hermes.routing.credentials import Credentials
from hermes.routing.endpoints import MANAGED_DOMAIN, gateway_origin, parse_origin

RouteKind = Literal["gateway", "byok", "local", "none"]
SelectionState = Literal["gateway", "explicit", "env_only", "unconfigured"]

#: The vendor behind each relay label (``tool`` = the portal's own API on the shared origin).
LABEL_VENDORS: Mapping[str, str] = {
    "firecrawl": "firecrawl",
    "fal-queue": "fal",
    "krea": "krea",
    "openai-audio": "openai",
    "browser-use": "browser-use",
    "tool": "nous",
}

_HINT = "Run 'hermes tools' to change it."


@dataclass(frozen=True)
class Route:
    """Where one category (or web function) goes. Holds names of variables, never their values.

    * ``kind`` — ``gateway`` (Nous Tool Gateway), ``byok`` (the user's own vendor account), ``local``
      (needs no account or key: on this machine, or a key-less public service such as DuckDuckGo),
      ``none`` (nothing available);
    * ``vendor`` — the vendor name (for gateway routes the vendor behind the relay, ``nous`` for the
      portal's own API); ``gateway_label`` — the relay label for gateway routes;
    * ``origin`` — the base URL the tool calls (gateway origin per GW-14, or the vendor API);
    * ``credential_env`` — the variable holding the credential used (``FAL_KEY``; for the gateway
      ``TOOL_GATEWAY_USER_TOKEN`` when that is the token, None when it comes from auth.json);
    * ``selected_by`` — the config key that decided, None when auto-detected;
    * ``message`` — what status lines show ("active via Nous subscription", "not configured").
    """

    kind: RouteKind
    category: str
    function: str
    vendor: str | None
    origin: str | None
    credential_env: str | None
    message: str
    gateway_label: str | None = None
    selected_by: str | None = None

    @property
    def name(self) -> str:
        """``web.search``, ``web.extract`` or the category name."""
        return self.category if self.function == self.category else f"{self.category}.{self.function}"

    @property
    def is_gateway(self) -> bool:
        return self.kind == "gateway"

    @property
    def auto_detected(self) -> bool:
        return self.selected_by is None

    def require(self) -> Route:
        """This route, or a SelectionError telling the user how to configure one when it is ``none``."""
        if self.kind != "none":
            return self
        category = CATEGORIES[self.category]
        keyed = [v for v in category.vendors_for(self.function) if v.needs_env]
        options = ", ".join(f"{v.name} ({v.env[0][0]})" for v in keyed)
        raise SelectionError(
            f"{self.name} is not configured: set a key for one of {options}, or log in to a Nous "
            "subscription with tool access. Run 'hermes tools' to choose a backend."
        )


def resolve_route(
    category_or_function: str, config: Mapping[str, Any], env: Mapping[str, str], credentials: Credentials,
    *, now: float | None = None,
) -> Route:
    """The route of ``category_or_function`` (``web.search``, ``web.extract``, ``image_gen``, ``tts``,
    ``stt``, ``browser``, ``video_gen``).

    Raises SelectionError (GW-3 wording) when the saved selection cannot run, and ValueError for a
    name that is not a routable category (a programming error). ``now`` is accepted so callers pass
    the instant they check entitlement at; routing itself reads no clock.
    """
    category, function = split_route_name(category_or_function)
    section = _section(config, category)
    choice = _explicit_choice(category, function, section)
    if choice is not None:
        value, key = choice
        return _resolve_choice(category, function, value, key, config, env, credentials)
    return _auto_detect(category, function, env)


def resolve_all(
    config: Mapping[str, Any], env: Mapping[str, str], credentials: Credentials, *, now: float | None = None,
) -> dict[str, Route | SelectionError]:
    """Every routable name (:data:`~hermes.routing.categories.ROUTE_NAMES`) → its route or its error."""
    out: dict[str, Route | SelectionError] = {}
    for name in ROUTE_NAMES:
        try:
            out[name] = resolve_route(name, config, env, credentials, now=now)
        except SelectionError as exc:
            out[name] = exc
    return out


def selection_state(category_name: str, config: Mapping[str, Any], env: Mapping[str, str]) -> SelectionState:
    """How a category stands for the GW-7 checklist; never raises for config content.

    ``gateway`` — every saved selection is ``nous``; ``explicit`` — another backend is saved (not
    offered; a malformed value counts here too, so it is never overwritten); ``env_only`` — nothing is
    saved but an env-only backend's variable is set (offered unchecked); ``unconfigured`` (pre-checked).
    """
    category = CATEGORIES[category_name]
    try:
        section = _section(config, category)
        values = {
            v[0] for f in category.functions if (v := _explicit_choice(category, f, section)) is not None
        }
    except SelectionError:
        return "explicit"
    if values:
        return "gateway" if values == {GATEWAY_VALUE} else "explicit"
    if any(v.env_only and _satisfied(v, env) for v in category.vendors):
        return "env_only"
    return "unconfigured"


# -- reading the config ------------------------------------------------------------------------------
def _section(config: Mapping[str, Any], category: Category) -> Mapping[str, Any] | None:
    if not isinstance(config, Mapping):
        return None
    section = config.get(category.name)
    if section is None or isinstance(section, Mapping):
        return section
    leaf = category.selection_key.split(".", 1)[1]
    raise SelectionError(
        f"{category.name} in config.yaml must be a mapping (for example {category.name}: {{{leaf}: nous}}), "
        f"not {_show(section)}. {_HINT}"
    )


def _read_value(section: Mapping[str, Any], leaf: str, key: str, category: Category) -> str | None:
    raw = section.get(leaf)
    if raw is None:
        return None
    if not isinstance(raw, str):
        valid = ", ".join(selection_values(category, _function_of(key)))
        raise SelectionError(f"{key} must be a backend name ({valid}), not {_show(raw)}. {_HINT}")
    value = raw.strip().lower()
    return ALIASES.get(value, value) or None


def _show(value: object, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _function_of(key: str) -> str | None:
    for function, function_key in WEB_FUNCTION_KEYS.items():
        if key == function_key:
            return function
    return None


def _legacy_on(section: Mapping[str, Any]) -> bool:
    flag = section.get("use_gateway")
    if isinstance(flag, bool):
        return flag
    if isinstance(flag, int):
        return flag == 1
    return isinstance(flag, str) and truth(flag) is True


def _explicit_choice(
    category: Category, function: str, section: Mapping[str, Any] | None
) -> tuple[str, str] | None:
    """(value, config key) of the saved selection that applies to ``function``, or None."""
    if section is None:
        return None
    function_key = WEB_FUNCTION_KEYS.get(function) if category.name == "web" else None
    if function_key is not None:
        value = _read_value(section, function_key.split(".", 1)[1], function_key, category)
        if value is not None:
            return value, function_key
    key = category.selection_key
    value = _read_value(section, key.split(".", 1)[1], key, category)
    if _legacy_on(section):
        vendor = category.vendor(value) if value is not None else None
        if value is None or (vendor is not None and vendor.gateway_label is not None):
            return GATEWAY_VALUE, category.legacy_key
    return (value, key) if value is not None else None


# -- building routes ---------------------------------------------------------------------------------
def _subject(category: Category, key: str) -> str:
    function = _function_of(key)
    return f"{category.name}.{function}" if function is not None else category.name


def _resolve_choice(
    category: Category, function: str, value: str, key: str,
    config: Mapping[str, Any], env: Mapping[str, str], credentials: Credentials,
) -> Route:
    if value == GATEWAY_VALUE:
        return _gateway_route(category, function, key, config, env, credentials)
    per_function = _function_of(key) is not None
    vendor = category.vendor(value)
    if vendor is None and category.plugin_backends and PLUGIN_NAME.match(value):
        # a backend plugin (plugins/video_gen/<name>/): the tool finds it and checks its key
        return Route("byok", category.name, function, value, None, None, f"{value} plugin backend (selected)",
                     None, key)
    allowed = selection_values(category, function if per_function else None)
    if vendor is None or value not in allowed:
        what = f"is not a known {category.name} backend" if vendor is None else f"cannot {function} in {category.name}"
        raise SelectionError(
            f"{key} is set to {_show(value)}, which {what}. Valid values: {', '.join(allowed)}. {_HINT}"
        )
    if function not in vendor.functions:
        # web.backend names a search-only vendor: extraction falls to the local page fetcher.
        fallback = category.fallback.get(function)
        local = category.vendor(fallback) if fallback else None
        if local is None:  # pragma: no cover - the table gives every web function a fallback
            raise SelectionError(f"{key} is set to {_show(value)}, which cannot {function}. {_HINT}")
        route = _vendor_route(category, function, local, key, env)
        return replace(route, message=f"{route.message} ({vendor.display} does not {function})")
    missing = _missing(vendor, env)
    if missing:
        raise SelectionError(
            f"{_subject(category, key)} is configured to use {vendor.name} (set via hermes tools), "
            f"but {missing} not set. {_HINT}"
        )
    return _vendor_route(category, function, vendor, key, env)


def _auto_detect(category: Category, function: str, env: Mapping[str, str]) -> Route:
    """A never-configured category: the person's own backends, then the local default (never the gateway)."""
    for name in category.auto_order.get(function, ()):
        vendor = category.vendor(name)
        if vendor is not None and _satisfied(vendor, env):
            return _vendor_route(category, function, vendor, None, env)
    fallback = category.fallback.get(function)
    local = category.vendor(fallback) if fallback else None
    if local is not None:
        return _vendor_route(category, function, local, None, env)
    return Route("none", category.name, function, None, None, None, "not configured")


def _gateway_route(
    category: Category, function: str, key: str | None,
    config: Mapping[str, Any], env: Mapping[str, str], credentials: Credentials,
) -> Route:
    label = category.gateway_label
    if category.name == "image_gen":
        section = config.get("image_gen") if isinstance(config, Mapping) else None
        model = section.get("model") if isinstance(section, Mapping) else None
        label = image_gateway_label(model if isinstance(model, str) else None, paid=credentials.paid_access)
    try:
        origin = gateway_origin(label, env, credentials.gateway_origins)
    except ConfigError as exc:
        subject = _subject(category, key) if key else category.name
        raise SelectionError(
            f"{subject} is routed through the Nous Tool Gateway, but {exc}. "
            "Fix it in ~/.hermes/.env, or run 'hermes tools' to change the route."
        ) from None
    return Route(
        kind="gateway",
        category=category.name,
        function=function,
        vendor=LABEL_VENDORS.get(label, label),
        origin=origin,
        credential_env="TOOL_GATEWAY_USER_TOKEN" if credentials.token_source == "env" else None,
        message=f"active via {gateway_display(origin)}",
        gateway_label=label,
        selected_by=key,
    )


def gateway_display(origin: str | None) -> str:
    """``Nous subscription`` for the managed hosts; ``the Tool Gateway at ORIGIN`` for any other gateway
    (a self-hosted one, a pinned ``*_GATEWAY_URL``), so the status names where the calls go."""
    parsed = parse_origin(origin) if origin else None
    if parsed is None or parsed.host.endswith("." + MANAGED_DOMAIN):
        return GATEWAY_DISPLAY
    return f"the Tool Gateway at {origin}"


def _vendor_route(category: Category, function: str, vendor: Vendor, key: str | None, env: Mapping[str, str]) -> Route:
    origin = vendor.api_origin
    if vendor.origin_env is not None:
        custom = _env(env, vendor.origin_env)
        if custom is not None:
            if parse_origin(custom) is None:
                raise SelectionError(
                    f"{category.name} uses {vendor.name}, but {vendor.origin_env} is not a plain http(s) URL "
                    "(no user info, spaces or backslashes). Fix it in ~/.hermes/.env, or run 'hermes tools' "
                    "to change the route."
                )
            origin = custom.rstrip("/")
    credential = next((n for n in vendor.env[0] if _env(env, n) is not None), None) if vendor.env else None
    if vendor.kind == "local":
        message = f"active via {vendor.display}"
    elif vendor.env_only:
        message = f"active via {vendor.display} ({vendor.origin_env})"
    else:
        message = f"active via {vendor.display} key"
    return Route(vendor.kind, category.name, function, vendor.name, origin, credential, message, None, key)


def _env(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name)
    return value.strip() or None if isinstance(value, str) else None


def _satisfied(vendor: Vendor, env: Mapping[str, str]) -> bool:
    return all(any(_env(env, n) is not None for n in group) for group in vendor.env)


def _missing(vendor: Vendor, env: Mapping[str, str]) -> str:
    """``"FAL_KEY is"``, ``"A (or B) is"``, ``"A and B are"`` — the unmet groups, or ``""``."""
    unmet = [g for g in vendor.env if not any(_env(env, n) is not None for n in g)]
    if not unmet:
        return ""
    words = [g[0] + (f" (or {' or '.join(g[1:])})" if len(g) > 1 else "") for g in unmet]
    return f"{' and '.join(words)} {'are' if len(words) > 1 else 'is'}"
