"""The app server's ``settings.*`` and ``models.*`` methods (docs/app-server.md#settings).

Settings are config.yaml keys read and written with the checks ``hermes config set`` makes
(:mod:`hermes.config.edit`): the schema's kinds and ranges, secrets refused in config.yaml. Values are
always shown masked where they look secret; ``.env`` values are never returned, only their names (a
secret is stored with ``settings.set_env``, write-only). A change applies from the next session (TS-9).

``models.list`` asks the configured endpoint's ``GET /models`` only when called (never at start) and
keeps the answer for :data:`MODELS_TTL` seconds; ``refresh: true`` asks again.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hermes.errors import ConfigError, HermesError

if TYPE_CHECKING:
    from hermes.config.schema import Key
    from hermes.surfaces.appserver.rpc import AppApi, Client

MODELS_TTL = 300.0
#: variables that change how programs start or find code: never written from a client (a sandboxed command
#: allowed the network could otherwise reach a keyless server and plant one)
_RUNS_PROGRAMS = re.compile(r"^(?:PATH|HOME|SHELL|IFS|ENV|BASH_ENV|PROMPT_COMMAND|HERMES_HOME|TMPDIR|LD_\w*|DYLD_\w*|"
                            r"PYTHON\w*|PERL5?LIB|PERL5OPT|RUBYLIB|RUBYOPT|NODE_OPTIONS|NODE_PATH|GIT_\w*|SSL_CERT_\w*|"
                            r"REQUESTS_CA_BUNDLE|CURL_CA_BUNDLE|\w*_PROXY|\w*_proxy)$")
NEXT_SESSION = "applies from the next session; running sessions keep what they started with"


def _key_name(params: dict[str, Any]) -> str:
    from hermes.surfaces.appserver.rpc import INVALID_PARAMS, RpcError

    key = params.get("key")
    if not isinstance(key, str) or not key.strip():
        raise RpcError(INVALID_PARAMS, "'key' must be a dotted config key such as model.name")
    return key.strip()


def _describe(key: Key) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": key.kind, "default": _plain(key.default)}
    if key.choices:
        out["choices"] = list(key.choices)
    if key.minimum is not None:
        out["minimum"] = key.minimum
    if key.maximum is not None:
        out["maximum"] = key.maximum
    return out


def _plain(value: Any) -> Any:
    from hermes.config.edit import plain

    return plain(value)


class SettingsMethods:
    """``settings.get/set/unset/set_env/unset_env`` and ``models.list/select`` on one :class:`AppApi`."""

    def __init__(self, api: AppApi) -> None:
        self.api = api
        self._models_lock = threading.Lock()
        self._models: tuple[tuple[str, str], float, dict[str, Any]] | None = None

    def methods(self) -> dict[str, Callable[[Client, dict[str, Any]], Any]]:
        return {"settings.get": self.get, "settings.set": self.set, "settings.unset": self.unset,
                "settings.set_env": self.set_env, "settings.unset_env": self.unset_env,
                "models.list": self.models_list, "models.select": self.models_select}

    # -- config.yaml ------------------------------------------------------------------------------------

    def _entry(self, name: str, secrets: list[str]) -> dict[str, Any]:
        from hermes.config.edit import is_secret_key, shown
        from hermes.config.schema import SCHEMA

        config = self.api.settings.config
        entry: dict[str, Any] = {"key": name, "set": config.has(name), "secret": is_secret_key(name)}
        entry["value"] = shown(name, _plain(config.get(name)), secrets) if entry["set"] else None
        if name in SCHEMA.keys:
            entry.update(_describe(SCHEMA.key(name)))
            entry["default"] = shown(name, entry["default"], secrets)
        elif not SCHEMA.knows(name):
            entry["unknown"] = True
        return entry

    def get(self, client: Client, params: dict[str, Any]) -> dict[str, Any]:
        from hermes.config.schema import SCHEMA
        from hermes.redact import secret_values
        from hermes.surfaces.appserver.rpc import INVALID_PARAMS, RpcError

        settings = self.api.settings
        keys = params.get("keys")
        if keys is not None and not (isinstance(keys, list) and all(isinstance(k, str) for k in keys)):
            raise RpcError(INVALID_PARAMS, "'keys' must be a list of dotted config keys")
        if keys is None:
            set_keys = [k for k, _ in settings.config.flat_items() if k and k not in SCHEMA.keys]
            keys = [*SCHEMA.keys, *set_keys]
        secrets = secret_values(settings.env.as_dict())
        from hermes.config.dotenv import read_dotenv

        return {"path": str(settings.paths.config), "settings": [self._entry(k, secrets) for k in keys],
                "env": sorted(read_dotenv(settings.paths.env))}

    def set(self, client: Client, params: dict[str, Any]) -> dict[str, Any]:
        from hermes.config.edit import assign
        from hermes.surfaces.appserver.rpc import INVALID_PARAMS, RpcError

        key = _key_name(params)
        if "value" not in params:
            raise RpcError(INVALID_PARAMS, "'value' is required (null is not a value: use settings.unset)")
        with self._models_lock:
            assign(self.api.settings, key, params["value"])
        self._changed(key)
        return {**self._entry(key, self._secrets()), "applies": NEXT_SESSION}

    def unset(self, client: Client, params: dict[str, Any]) -> dict[str, Any]:
        from hermes.config.edit import remove

        key = _key_name(params)
        with self._models_lock:
            removed = remove(self.api.settings, key)
        self._changed(key)
        return {"key": key, "removed": removed, "applies": NEXT_SESSION}

    def _secrets(self) -> list[str]:
        from hermes.redact import secret_values

        return secret_values(self.api.settings.env.as_dict())

    def _changed(self, key: str) -> None:
        if key == "model" or key.startswith("model."):
            self._models = None
            self.api.host.forget_provider()

    # -- .env -------------------------------------------------------------------------------------------

    def _env_name(self, params: dict[str, Any]) -> str:
        from hermes.surfaces.appserver.rpc import INVALID_PARAMS, RpcError

        name = params.get("name")
        if not isinstance(name, str) or not name.strip():
            raise RpcError(INVALID_PARAMS, "'name' must be an environment variable name such as OPENROUTER_API_KEY")
        if _RUNS_PROGRAMS.match(name.strip()):
            raise RpcError(INVALID_PARAMS, f"{name.strip()} shapes how programs start (loader, search paths, shell, "
                                           "interpreter options); it is not set from the app — edit .env yourself")
        return name.strip()

    def _write_env(self, name: str, value: str | None) -> None:
        from hermes.config.dotenv import Environment, read_dotenv, set_dotenv_value

        settings = self.api.settings
        before = read_dotenv(settings.paths.env).get(name)
        try:
            set_dotenv_value(settings.paths.env, name, value)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        exported = os.environ.get(name)
        if exported is None or exported == before:  # only what came from .env: an exported value still wins
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        settings.env = Environment.load(settings.paths.env)
        self._models = None
        self.api.host.forget_provider()

    def set_env(self, client: Client, params: dict[str, Any]) -> dict[str, Any]:
        from hermes.surfaces.appserver.rpc import INVALID_PARAMS, RpcError

        name = self._env_name(params)
        value = params.get("value")
        if not isinstance(value, str) or not value:
            raise RpcError(INVALID_PARAMS, "'value' must be a non-empty string (it is stored, never shown)")
        self._write_env(name, value)
        return {"name": name, "stored": True, "path": str(self.api.settings.paths.env), "applies": NEXT_SESSION}

    def unset_env(self, client: Client, params: dict[str, Any]) -> dict[str, Any]:
        from hermes.config.dotenv import read_dotenv

        name = self._env_name(params)
        present = name in read_dotenv(self.api.settings.paths.env)
        if present:
            self._write_env(name, None)
        return {"name": name, "removed": present, "applies": NEXT_SESSION}

    # -- models -------------------------------------------------------------------------------------------

    def models_list(self, client: Client, params: dict[str, Any]) -> dict[str, Any]:
        from hermes.agent.model_choice import list_models
        from hermes.routing.inference import with_portal_key

        try:
            current = self.api.settings.model(need_name=False)
        except HermesError as exc:
            return {"current": None, "models": [], "error": str(exc)}
        if current.provider == "local":
            return {"current": {"provider": current.provider, "model": current.model, "base_url": ""},
                    "models": [current.model], "fetched_at": None}
        where = (current.provider, current.base_url)
        cached = self._models
        if cached is not None and cached[0] == where and params.get("refresh") is not True \
                and time.monotonic() - cached[1] < MODELS_TTL:
            return {**cached[2], "current": self._current(current)}
        out: dict[str, Any] = {"models": [], "fetched_at": time.time()}
        try:
            out["models"] = list_models(with_portal_key(current, self.api.settings))
        except HermesError as exc:  # the endpoint cannot list: say so, the current model still stands
            out["error"] = str(exc).replace("no model name is configured, and ", "")
        self._models = (where, time.monotonic(), out)
        return {**out, "current": self._current(current)}

    @staticmethod
    def _current(model: Any) -> dict[str, Any]:
        return {"provider": model.provider, "model": model.model, "base_url": model.base_url}

    def models_select(self, client: Client, params: dict[str, Any]) -> dict[str, Any]:
        from hermes.config.edit import assign
        from hermes.surfaces.appserver.rpc import INVALID_PARAMS, RpcError

        name = params.get("model")
        if not isinstance(name, str) or not name.strip():
            raise RpcError(INVALID_PARAMS, "'model' must be a model id (models.list names them)")
        with self._models_lock:
            assign(self.api.settings, "model.name", name.strip())
        self._changed("model.name")
        return {"current": self._current(self.api.settings.model(need_name=False)), "applies": NEXT_SESSION}
