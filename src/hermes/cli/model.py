"""``hermes model``: choose the inference provider and model; for a Nous model, offer the gateway (GW-7, GW-8).

* ``hermes model`` in a terminal — pick a provider (arrow keys), then the base URL and model name. Choosing
  Nous Portal logs in first when needed, then shows the GW-7 checklist of tools to route through the Tool
  Gateway (:mod:`hermes.routing.declined`).
* ``hermes model --provider P --model M [--base-url U] [--gateway WHICH]`` — the same for scripts.
  ``--gateway`` (Nous only): ``default`` (the pre-checked tools; nothing is recorded as declined),
  ``all``, ``none``, or a comma list such as ``web,tts`` — with ``all``, ``none`` or a list, offered
  tools left out are remembered in ``tool_gateway_declined_tools``.

:func:`run_portal_setup` is ``hermes setup --portal``: login, Nous as the provider and the gateway for
the tools, in one go. Only argparse is imported at module level.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hermes.config.settings import ProviderPreset, Settings
    from hermes.routing.declined import ChecklistItem

Out = Callable[[str], None]
NOUS = "nous"


def add_gateway_flags(parser: argparse._ActionsContainer) -> None:
    """``--gateway``, ``--portal-url`` and ``--no-browser`` (shared with ``hermes setup --portal``)."""
    parser.add_argument("--gateway", default=None, metavar="WHICH",
                        help="with Nous: tools to route through the Tool Gateway without asking: default, all, "
                             "none, or a comma list (web,image_gen,tts,stt,browser)")
    parser.add_argument("--portal-url", default=None, metavar="URL", help="the Nous Portal to log in to")
    parser.add_argument("--no-browser", action="store_true", help="do not open a browser for the portal login")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--provider", default=argparse.SUPPRESS,
                        help="openrouter, openai, nous, ollama, vllm, llamacpp or custom (no questions asked)")
    parser.add_argument("--model", default=argparse.SUPPRESS, help="model name at that endpoint")
    parser.add_argument("--base-url", default=argparse.SUPPRESS, help="OpenAI-compatible base URL (…/v1)")
    add_gateway_flags(parser)


def run(args: argparse.Namespace) -> int:
    import sys

    from hermes.config.settings import PROVIDERS, Settings
    from hermes.errors import ConfigError

    settings = Settings.load()
    provider = getattr(args, "provider", None)
    interactive = provider is None
    if interactive and not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise ConfigError("hermes model is interactive and needs a terminal; in scripts use "
                          "'hermes model --provider NAME --model NAME'")
    if interactive:
        preset = _pick_provider(settings)
        if preset is None:
            print("Nothing changed.")
            return 0
    else:
        preset = PROVIDERS.get(str(provider).lower())
        if preset is None:
            raise ConfigError(f"unknown provider {provider!r}; known providers: {', '.join(PROVIDERS)}")
    if preset.name == NOUS:
        ensure_login(settings, print, portal_url=args.portal_url, open_browser=not args.no_browser)
    if not write_model(settings, preset, getattr(args, "model", None), getattr(args, "base_url", None),
                       print, ask=interactive):
        return 1
    if preset.name == NOUS:
        offer_gateway(Settings.load(settings.paths), print, args.gateway, interactive=interactive)
    return 0


# -- steps (shared with setup --portal) ------------------------------------------------------------
def _pick_provider(settings: Settings) -> ProviderPreset | None:
    from hermes.config.settings import PROVIDERS
    from hermes.surfaces.picker import Option, select

    presets = list(PROVIDERS.values())
    current = str(settings.config.get("model.provider") or "")
    options = [Option(p.label, p.base_url or "any OpenAI-compatible URL", p.name == current) for p in presets]
    default = next((i for i, p in enumerate(presets) if p.name == current), 0)
    index = select("Inference provider — choose one", options, default=default)
    return None if index is None else presets[index]


def ensure_login(settings: Settings, out: Out, *, portal_url: str | None = None, open_browser: bool = True) -> None:
    """Log in to Nous Portal unless a usable login is stored; PortalError when the login fails."""
    from hermes.cli.portal import gateway_report, run_login

    auth = gateway_report(settings).auth
    if auth.status not in ("not_logged_in", "expired") and portal_url is None:
        out(f"Nous Portal: {auth.mark} {auth.message}")
        return
    run_login(settings, out, portal_url=portal_url, open_browser=open_browser)


def write_model(settings: Settings, preset: ProviderPreset, model: str | None, base_url: str | None, out: Out,
                *, ask: bool) -> bool:
    """Save ``model.provider``, ``model.base_url`` and ``model.name``; False when no model name is known."""
    from hermes.errors import ConfigError
    from hermes.routing.portal_auth import AuthStore

    cfg = settings.config
    same = str(cfg.get("model.provider") or "") == preset.name
    default_url = (str(cfg.get("model.base_url") or "") if same else "") or preset.base_url
    if preset.name == NOUS:
        entry = AuthStore(settings.paths.auth).nous() or {}
        default_url = str(entry.get("inference_base_url") or "") or default_url
    default_name = str(cfg.get("model.name") or "") if same else ""
    if ask:
        from hermes.surfaces.picker import ask_text

        base_url = base_url or ask_text(f"Base URL [{default_url or 'required'}]: ") or default_url
        model = model or ask_text(f"Model name [{default_name or 'required'}]: ") or default_name
    base_url = (base_url or default_url).rstrip("/")
    model = model or default_name
    if not base_url.startswith(("http://", "https://")):
        raise ConfigError("the base URL must be an http:// or https:// URL" if base_url else
                          "a custom provider needs --base-url")
    if not model:
        out("No model name given; nothing changed. Pass --model NAME.")
        return False
    for key, value in (("model.provider", preset.name), ("model.base_url", base_url), ("model.name", model)):
        cfg.set(key, value)
    settings.model()  # validates before saving
    cfg.save()
    if preset.name != "custom" and cfg.has("model.api_key_env"):
        cfg.delete_preserving_comments("model.api_key_env")
    out(f"Saved {preset.name}: {model} at {base_url} in {settings.paths.config}")
    if preset.key_env and not settings.env.get(preset.key_env) and preset.name != NOUS:
        out(f"  {preset.key_env} is not set yet: hermes config set-env {preset.key_env} VALUE")
    return True


def _checklist_lines(items: Iterable[ChecklistItem]) -> list[str]:
    return [f"  {item.display:<18}{item.note}" for item in items if not item.offered]


def offer_gateway(settings: Settings, out: Out, which: str | None, *, interactive: bool) -> None:
    """The GW-7 checklist: ask in a terminal, or apply ``which`` (see the module docstring)."""
    from hermes.routing.credentials import load_credentials
    from hermes.routing.declined import apply_checklist, build_checklist

    env = settings.env.as_dict()
    items = build_checklist(settings.config.data, env, load_credentials(settings.paths.auth, env))
    offered = [item for item in items if item.offered]
    kept = _checklist_lines(items)
    if kept:
        out("Tool Gateway — left as they are:")
        for line in kept:
            out(line)
    if not offered:
        out("No other tool to offer for the Tool Gateway.")
        return
    remember = True
    if which is None and interactive:
        from hermes.surfaces.picker import Option, checklist

        options = [Option(item.display, item.note) for item in offered]
        ticked = checklist("Route these tools through the Tool Gateway (your Nous subscription)?", options,
                           [i for i, item in enumerate(offered) if item.checked])
        if ticked is None:
            out("Tool Gateway checklist cancelled; no tool was changed.")
            return
        chosen = {offered[i].category for i in ticked}
    else:
        chosen, remember = _parse_which(which or "default", items)
    outcome = apply_checklist(settings.paths.config, items, chosen, remember=remember)
    on = ", ".join(outcome.enabled) or "none"
    out(f"Tool Gateway on for: {on}.")
    if outcome.declined:
        out(f"Not chosen (remembered in tool_gateway_declined_tools, not pre-checked again): "
            f"{', '.join(outcome.declined)}.")
    out("See every route with 'hermes portal info'; change one with 'hermes tools'.")


def _parse_which(which: str, items: list[ChecklistItem]) -> tuple[set[str], bool]:
    from hermes.errors import ConfigError
    from hermes.routing.declined import default_choice

    offered = {item.category for item in items if item.offered}
    word = which.strip().lower()
    if word == "default":
        return default_choice(items), False
    if word == "all":
        return offered, True
    if word == "none":
        return set(), True
    names = {part.strip() for part in word.split(",") if part.strip()}
    known = {item.category for item in items}
    unknown = names - known
    if unknown:
        raise ConfigError(f"--gateway: unknown tool categories {', '.join(sorted(unknown))}; "
                          f"choose from {', '.join(sorted(known))}, or default, all, none")
    return names & offered, True


def run_portal_setup(args: argparse.Namespace) -> int:
    """``hermes setup --portal``: login + Nous as provider + the gateway for the tools, in one go."""
    import sys

    from hermes.config.settings import PROVIDERS, Settings

    settings = Settings.load()
    interactive = not args.non_interactive and sys.stdin.isatty() and sys.stdout.isatty()
    print("Nous Portal setup: log in, use Nous for inference, and route tools through the Tool Gateway.")
    ensure_login(settings, print, portal_url=args.portal_url, open_browser=not args.no_browser)
    settings = Settings.load(settings.paths)
    if not write_model(settings, PROVIDERS[NOUS], getattr(args, "model", None), getattr(args, "base_url", None),
                       print, ask=interactive):
        return 1
    offer_gateway(Settings.load(settings.paths), print, args.gateway, interactive=interactive)
    return 0
