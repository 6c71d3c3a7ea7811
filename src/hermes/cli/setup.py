"""``hermes setup``: the interactive wizard (model endpoint, then the tools' optional keys, REG-9).

``hermes setup --portal`` is the Nous Portal path instead (GW-8): log in, use Nous for inference and
route the tools through the Tool Gateway, in one go (:func:`hermes.cli.model.run_portal_setup`).

The wizard itself is :func:`run_wizard`, a plain function over three callables (ask, ask_secret, out)
so tests drive it with scripted answers; :func:`run` wires it to ``input``/``getpass`` and refuses to
start without a terminal. ``--non-interactive`` writes the model settings from flags for scripts.
API keys always go to ``HERMES_HOME/.env`` (mode 0600) and are never echoed; config.yaml only names
the variable. Only argparse and typing are imported at module level.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hermes.config.optional_env import OptionalEnvVar
    from hermes.config.settings import ProviderPreset, Settings
    from hermes.tools.registry import ToolRegistry

Ask = Callable[[str], str]
Out = Callable[[str], None]
Probe = Callable[[str, str | None, str], tuple[bool, str]]

SECTIONS = ("model", "keys")
#: the answer to an optional-key question that skips it and every one after it
SKIP_REST = "-"
_TRIES = 3


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the ``setup`` options."""
    from hermes.cli.model import add_gateway_flags

    parser.add_argument("part", nargs="?", choices=("terminal",),
                        help="terminal: choose and test where the agent's commands run (docs/backends.md)")
    parser.add_argument("--section", choices=SECTIONS, help="run only one part of the wizard")
    parser.add_argument("--portal", action="store_true",
                        help="Nous Portal in one go: log in, use Nous for inference, turn on the Tool Gateway")
    parser.add_argument("--non-interactive", action="store_true",
                        help="write the model settings from the flags below without asking anything")
    g = parser.add_argument_group("non-interactive model settings")
    g.add_argument("--provider", default=argparse.SUPPRESS,
                   help="openrouter, openai, nous, ollama, vllm, llamacpp or custom")
    g.add_argument("--base-url", default=argparse.SUPPRESS, help="OpenAI-compatible base URL (…/v1)")
    g.add_argument("--model", default=argparse.SUPPRESS, help="model name at that endpoint")
    g.add_argument("--api-key-env", default=None, metavar="NAME",
                   help="environment variable holding the API key (store it with 'hermes config set-env')")
    add_gateway_flags(parser.add_argument_group("with --portal"))


def run(args: argparse.Namespace) -> int:
    """Run the wizard on the terminal, or write the flags' settings with ``--non-interactive``."""
    import sys

    from hermes.config.settings import Settings
    from hermes.errors import ConfigError

    if getattr(args, "part", None) == "terminal":
        from hermes.cli.setup_terminal import run as run_terminal_setup

        return run_terminal_setup(args)
    if args.portal:
        from hermes.cli.model import run_portal_setup

        return run_portal_setup(args)
    settings = Settings.load()
    sections = (args.section,) if args.section else SECTIONS
    if args.non_interactive:
        return _non_interactive(settings, args, sections)
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise ConfigError(
            "hermes setup is interactive and needs a terminal. In scripts use "
            "'hermes setup --non-interactive --provider NAME --model NAME', "
            "'hermes config set model.base_url URL' and 'hermes config set-env NAME VALUE'."
        )
    import getpass

    try:
        result = run_wizard(settings, input, getpass.getpass, print, sections=sections)
    except EOFError:
        raise ConfigError("setup cancelled (end of input); nothing more was saved") from None
    print()
    print(result.summary())
    return 0


class WizardResult:
    """What the wizard changed (a plain class: dataclasses would cost ``hermes --help`` an import)."""

    def __init__(self) -> None:
        self.config_keys: list[str] = []
        self.env_saved: list[str] = []
        self.skipped: list[str] = []
        self.endpoint_ok: bool | None = None

    def summary(self) -> str:
        lines = ["Setup finished."]
        if self.config_keys:
            lines.append(f"  config.yaml: {', '.join(self.config_keys)}")
        if self.env_saved:
            lines.append(f"  .env: {', '.join(self.env_saved)} (values hidden)")
        if self.skipped:
            lines.append(f"  skipped: {', '.join(self.skipped)} (run 'hermes setup --section keys' later)")
        lines.append("Start a session with: hermes chat")
        return "\n".join(lines)


def run_wizard(
    settings: Settings,
    ask: Ask,
    ask_secret: Ask,
    out: Out,
    *,
    sections: Iterable[str] = SECTIONS,
    registry: ToolRegistry | None = None,
    table: Mapping[str, OptionalEnvVar] | None = None,
    probe: Probe | None = None,
) -> WizardResult:
    """Ask for the model endpoint and the tools' optional keys; writes config.yaml and .env.

    ``ask`` reads a visible answer, ``ask_secret`` a masked one, ``out`` prints a line. ``registry``
    defaults to the discovered tools, ``table`` to :data:`OPTIONAL_ENV_VARS`, ``probe`` to
    :func:`probe_endpoint`.
    """
    result = WizardResult()
    wanted = set(sections)
    if "model" in wanted:
        _model_section(settings, ask, ask_secret, out, result, probe or probe_endpoint)
    if "keys" in wanted:
        if registry is None:
            from hermes.cli.tools import load_registry

            registry = load_registry(settings)
        _keys_section(settings, registry, table, ask, ask_secret, out, result)
    return result


# -- the model endpoint -------------------------------------------------------------------------
def _retry(ask: Ask, prompt: str, check: Callable[[str], str | None], out: Out) -> str:
    """Ask until ``check`` returns None (no complaint), at most a few times."""
    from hermes.errors import ConfigError

    for _ in range(_TRIES):
        answer = ask(prompt).strip()
        problem = check(answer)
        if problem is None:
            return answer
        out(f"  {problem}")
    raise ConfigError(f"no valid answer to {prompt.strip()!r} after {_TRIES} tries")


def _current_provider(settings: Settings) -> str:
    """The configured provider; a base URL without one is a custom endpoint."""
    cfg = settings.config
    return str(cfg.get("model.provider") or ("custom" if cfg.get("model.base_url") else ""))


def _choose_provider(settings: Settings, ask: Ask, out: Out) -> ProviderPreset:
    from hermes.config.settings import PROVIDERS

    presets = list(PROVIDERS.values())
    current = _current_provider(settings)
    default = current if current in PROVIDERS else presets[0].name
    out("Model endpoint — hermes talks to any OpenAI-compatible API.")
    for i, p in enumerate(presets, 1):
        out(f"  {i}) {p.name:<11} {p.label}" + (f"  ({p.base_url})" if p.base_url else ""))

    def pick(answer: str) -> ProviderPreset | None:
        answer = answer or default
        if answer.isdigit() and 1 <= int(answer) <= len(presets):
            return presets[int(answer) - 1]
        return PROVIDERS.get(answer.lower())

    answer = _retry(ask, f"Provider [number or name, Enter for {default}]: ",
                    lambda a: None if pick(a) else f"choose 1-{len(presets)} or a provider name", out)
    preset = pick(answer)
    assert preset is not None
    return preset


def _model_section(
    settings: Settings, ask: Ask, ask_secret: Ask, out: Out, result: WizardResult, probe: Probe
) -> None:
    import re

    from hermes.config.dotenv import set_dotenv_value

    cfg = settings.config
    preset = _choose_provider(settings, ask, out)
    same = _current_provider(settings) == preset.name
    default_url = (str(cfg.get("model.base_url") or "") if same else "") or preset.base_url

    def url_problem(a: str) -> str | None:
        url = a or default_url
        if not url:
            return "a base URL is required for a custom endpoint (e.g. http://localhost:8000/v1)"
        return None if url.startswith(("http://", "https://")) else "the URL must start with http:// or https://"

    base_url = (_retry(ask, f"Base URL [{default_url or 'required'}]: ", url_problem, out) or default_url)
    base_url = base_url.rstrip("/")
    default_model = str(cfg.get("model.name") or "") if same else ""
    model = _retry(ask, f"Model name [{default_model or 'required'}]: ",
                   lambda a: None if a or default_model else "a model name is required", out) or default_model

    key_env = preset.key_env
    if preset.name == "custom":
        current = str(cfg.get("model.api_key_env") or "") or "OPENAI_API_KEY"
        key_env = _retry(
            ask, f"Environment variable holding the API key [{current}]: ",
            lambda a: None if not a or re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", a) else "not a variable name",
            out,
        ) or current
    api_key: str | None = None
    if key_env:
        api_key = settings.env.get(key_env)
        keep = "Enter keeps the current one" if api_key else "Enter to skip"
        answer = ask_secret(f"API key (saved in .env as {key_env}; {keep}): ").strip()
        if answer:
            set_dotenv_value(settings.paths.env, key_env, answer)
            result.env_saved.append(key_env)
            api_key = answer
        elif not api_key:
            out(f"  No key saved. Add it later with: hermes config set-env {key_env} VALUE")
    else:
        out("  This provider runs locally and needs no API key.")

    cfg.set("model.provider", preset.name)
    cfg.set("model.base_url", base_url)
    cfg.set("model.name", model)
    result.config_keys += ["model.provider", "model.base_url", "model.name"]
    if preset.name == "custom":
        cfg.set("model.api_key_env", key_env)
        result.config_keys.append("model.api_key_env")
    elif cfg.has("model.api_key_env"):
        cfg.delete("model.api_key_env")  # a custom endpoint's variable would override the preset's
    cfg.save()
    out(f"Saved {preset.name}: {model} at {base_url} in {settings.paths.config}")
    if cfg.get("model.api_key"):
        out("  Note: model.api_key in config.yaml overrides .env; remove it with 'hermes config unset "
            "model.api_key'.")
        api_key = str(cfg.get("model.api_key"))

    if ask("Test the endpoint now? [Y/n]: ").strip().lower() in ("", "y", "yes"):
        ok, message = probe(base_url, api_key, model)
        result.endpoint_ok = ok
        out(f"  {message}")


def probe_endpoint(base_url: str, api_key: str | None, model: str, timeout: float = 5.0) -> tuple[bool, str]:
    """GET ``{base_url}/models`` once; returns ``(ok, message)`` and never raises or echoes the key."""
    import json
    import urllib.error
    import urllib.parse
    import urllib.request

    url = base_url.rstrip("/") + "/models"
    headers = {"Accept": "application/json", "User-Agent": "hermes-setup"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    host = urllib.parse.urlsplit(url).hostname or ""
    handlers = [urllib.request.ProxyHandler({})] if host in ("localhost", "127.0.0.1", "::1") else []
    opener = urllib.request.build_opener(*handlers)
    try:
        with opener.open(urllib.request.Request(url, headers=headers), timeout=timeout) as resp:
            body = resp.read(2_000_000)
    except urllib.error.HTTPError as exc:
        hint = " — check the API key" if exc.code in (401, 403) else ""
        return False, f"✗ {url} answered HTTP {exc.code}{hint}"
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return False, f"✗ could not reach {url}: {reason}"
    try:
        data = json.loads(body)
        ids = [str(m.get("id")) for m in data.get("data", []) if isinstance(m, dict)]
    except (ValueError, AttributeError):
        return True, f"✓ {url} answered, though not with a model list"
    if model in ids:
        return True, f"✓ the endpoint answered and lists {model} ({len(ids)} models)"
    if ids:
        return True, f"⚠ the endpoint answered with {len(ids)} models, but {model} is not among them"
    return True, "✓ the endpoint answered"


# -- the tools' optional keys -------------------------------------------------------------------
def _keys_section(
    settings: Settings,
    registry: ToolRegistry,
    table: Mapping[str, OptionalEnvVar] | None,
    ask: Ask,
    ask_secret: Ask,
    out: Out,
    result: WizardResult,
) -> None:
    from hermes.config.dotenv import set_dotenv_value
    from hermes.config.optional_env import OPTIONAL_ENV_VARS, for_tools

    table = OPTIONAL_ENV_VARS if table is None else table
    names = set(registry.names())
    wanted = for_tools(names, table)
    out("")
    out(f"Optional API keys for tools — press Enter to skip one, or type {SKIP_REST} to skip all the rest.")
    if not wanted:
        out("  None of the registered tools needs one.")
    pending = []
    for var in wanted:
        if settings.env.get(var.name) or var.name in result.env_saved:
            source = settings.env.source(var.name) or ".env"
            out(f"  ✓ {var.name} is set ({source})")
        else:
            pending.append(var)
    for number, var in enumerate(pending, 1):
        out("")
        out(f"{var.name} — {var.description}  [{number} of {len(pending)}]")
        if var.url:
            out(f"  Get one at: {var.url}")
        out(f"  Used by: {', '.join(t for t in var.tools if t in names)}")
        answer = (ask_secret if var.password else ask)(f"  {var.prompt} (Enter: skip, {SKIP_REST}: skip the rest): ")
        answer = answer.strip()
        if answer == SKIP_REST:
            rest = [v.name for v in pending[number - 1:]]
            result.skipped.extend(rest)
            out(f"  Skipped the remaining {len(rest)} optional key{'s' if len(rest) != 1 else ''}.")
            break
        if answer:
            set_dotenv_value(settings.paths.env, var.name, answer)
            result.env_saved.append(var.name)
            out(f"  Saved {var.name} in .env")
        else:
            result.skipped.append(var.name)
    undeclared = sorted({
        (env, e.name) for e in registry.entries() for env in e.requires_env
        if env not in table and not settings.env.get(env) and env not in result.env_saved
    })
    for env, tool in undeclared:
        out(f"  {tool} also needs {env}: hermes config set-env {env} VALUE")


def _non_interactive(settings: Settings, args: argparse.Namespace, sections: Iterable[str]) -> int:
    from hermes.config.optional_env import missing_for
    from hermes.config.settings import PROVIDERS
    from hermes.errors import ConfigError

    wanted = set(sections)
    provider = getattr(args, "provider", None)
    base_url = getattr(args, "base_url", None)
    model = getattr(args, "model", None)
    if "model" in wanted:
        provider = provider or ("custom" if base_url else None)
        if not provider or not model:
            raise ConfigError("--non-interactive needs --model and --provider (or --base-url for a custom "
                              "endpoint)")
        preset = PROVIDERS.get(provider)
        if preset is None:
            raise ConfigError(f"unknown provider {provider!r}; known providers: {', '.join(PROVIDERS)}")
        url = (base_url or preset.base_url).rstrip("/")
        if not url.startswith(("http://", "https://")):
            raise ConfigError("--base-url must be an http:// or https:// URL" if url else
                              "a custom provider needs --base-url")
        cfg = settings.config
        cfg.set("model.provider", preset.name)
        cfg.set("model.base_url", url)
        cfg.set("model.name", model)
        if args.api_key_env:
            cfg.set("model.api_key_env", args.api_key_env)
        elif cfg.has("model.api_key_env") and preset.name != "custom":
            cfg.delete("model.api_key_env")
        model_settings = settings.model()  # validates before saving
        from hermes.routing.inference import with_portal_key

        model_settings = with_portal_key(model_settings, settings)
        cfg.save()
        print(f"Saved {preset.name}: {model} at {url} in {settings.paths.config}")
        key_env = args.api_key_env or str(cfg.get("model.api_key_env") or "") or preset.key_env
        if key_env and not model_settings.api_key:
            print(f"{key_env} is not set yet: hermes config set-env {key_env} VALUE")
    if "keys" in wanted:
        from hermes.cli.tools import load_registry

        missing = missing_for(load_registry(settings).names(), settings.env)
        for var in missing:
            print(f"optional: {var.name} — {var.description} ({var.url})")
        if missing:
            print("Set any of them with: hermes config set-env NAME VALUE")
    return 0
