"""The named model providers (presets) and the embedded model's provider name."""

from __future__ import annotations

from dataclasses import dataclass


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

__all__ = ["LOCAL_PROVIDER", "NOUS_PROVIDER", "PROVIDERS", "ProviderPreset"]
