"""Changing config.yaml one key at a time, with the checks ``hermes config set`` makes.

``hermes config set`` and the app server's ``settings.set`` both go through :func:`assign`: a value
that looks like a secret is refused (secrets belong in ``.env``), the schema checks the key and the
value's kind and range (:data:`~hermes.config.schema.SCHEMA`), the whole file must still give a valid
model, agent and toolset view, and only then is the file written (atomically, comments kept).
:func:`shown` is a value as it may be shown anywhere: secret-looking keys and known secret values masked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hermes.errors import ConfigError

if TYPE_CHECKING:
    from hermes.config.settings import Settings
    from hermes.config.yamlfile import ConfigFile


def is_secret_key(key: str) -> bool:
    """Whether a config key's name says it holds a secret (``*_env`` keys name a variable instead)."""
    from hermes.redact import is_secret_name

    last = key.rsplit(".", 1)[-1]
    return is_secret_name(last) and not last.lower().endswith(("_env", "_env_var", "_file", "_path"))


def plain(value: Any) -> Any:
    """Plain dicts, lists and scalars (no ruamel comment or style attributes)."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, bool | int | float | str) or value is None:
        return value
    return str(value)


def shown(key: str, value: Any, secrets: list[str]) -> Any:
    """``value`` of ``key`` safe to show: a secret key's text masked, known secret values masked inside."""
    from hermes.redact import MASK, redact

    if isinstance(value, str):
        if value and is_secret_key(key):
            return MASK
        return redact(value, secrets)
    if isinstance(value, dict):
        return {k: shown(f"{key}.{k}", v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [shown(key, v, secrets) for v in value]
    return value


def env_name_for(settings: Settings, key: str) -> str:
    """The ``.env`` variable a secret meant for ``key`` should be stored under."""
    if key == "model.api_key":
        from hermes.config.providers import PROVIDERS

        preset = PROVIDERS.get(str(settings.config.get("model.provider") or ""))
        explicit = settings.config.get("model.api_key_env")
        return str(explicit or (preset.key_env if preset else None) or "OPENAI_API_KEY")
    return key.rsplit(".", 1)[-1].upper().replace("-", "_")


def refuse_secret(settings: Settings, key: str, value: Any) -> None:
    """A ConfigError when ``value`` looks like a secret (a secret key, or a token's shape)."""
    from hermes.redact import redact

    if isinstance(value, str) and value and (is_secret_key(key) or redact(value) != value):
        name = env_name_for(settings, key)
        raise ConfigError(
            f"{key} looks like a secret, and config.yaml is not the place for secrets. Store it in "
            f"{settings.paths.env} instead: hermes config set-env {name} VALUE"
            + (" (model.api_key_env names the variable to read)" if key == "model.api_key" else "")
        )


def validate(settings: Settings) -> None:
    """Refuse a change the typed views would reject as a whole (e.g. a provider without a URL)."""
    import contextlib

    from hermes.errors import ModelNotConfigured

    with contextlib.suppress(ModelNotConfigured):
        settings.model()
    settings.agent()
    settings.requested_toolsets()


def assign(settings: Settings, key: str, value: Any) -> None:
    """Set ``key = value`` in ``settings.config`` and save it, after every check (see the module docstring).

    On a refusal nothing is written and ``settings.config`` is left as it was.
    """
    refuse_secret(settings, key, value)
    from hermes.config.schema import SCHEMA

    SCHEMA.check_assignment(key, plain(value))
    from hermes.config.yamlfile import ConfigFile

    draft = ConfigFile.load(settings.paths.config)
    draft.set(key, value)
    before = settings.config
    settings.config = draft
    try:
        validate(settings)
    except Exception:
        settings.config = before
        raise
    draft.save()


def remove(settings: Settings, key: str) -> bool:
    """Delete ``key`` (comments around it kept) and save; False when it was not set."""
    from hermes.config.yamlfile import ConfigFile

    draft: ConfigFile = ConfigFile.load(settings.paths.config)
    if not draft.has(key):
        return False
    draft.delete_preserving_comments(key)
    settings.config = draft
    return True
