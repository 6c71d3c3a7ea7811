"""Which model a session will run, and what to tell the person about it: the one answer chat and status share.

:func:`choose_model` starts from :meth:`Settings.model` and settles the cases it leaves open:

* **an endpoint with no model name** (a llama.cpp server, LM Studio, a single vLLM model): the endpoint's
  ``GET /models`` is asked once. Exactly one model → it is used, and a note says so; several → the
  error names them; none or no answer → the error says what the endpoint answered;
* **no endpoint at all**: the embedded model (``model.provider: local``) when the ``local`` extra is
  installed, with a note; else the error with the two ways forward — and never a hint to install an
  extra that is already installed;
* **a model name with no endpoint** (``hermes config set model.name x`` alone): the name selects
  nothing, and a note says it is ignored and why — unless it ends in ``.gguf``, when the embedded model
  runs that file.

``ask_endpoint=False`` (``hermes status``) makes no network call: an endpoint without a model name is
then reported as "to be asked when a session starts". The choice is applied to ``settings.overrides``
so the session built next from ``settings`` runs exactly what was chosen.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from hermes.errors import ModelNotConfigured

if TYPE_CHECKING:
    from hermes.config.settings import ModelSettings, Settings

_LIST_TIMEOUT = 5.0
_SHOW_AT_MOST = 12


@dataclass(frozen=True)
class ModelChoice:
    """The model a session will run (``model``), or why none can (``error``), and the notes to show."""

    model: ModelSettings | None
    notes: tuple[str, ...] = ()
    #: the endpoint has no model name and was not asked (``ask_endpoint=False``)
    unresolved_name: bool = False
    error: str | None = field(default=None)

    def describe(self) -> str:
        """One line: what will run."""
        if self.model is None:
            return self.error or "no model"
        if self.unresolved_name:
            return (f"the one model {self.model.base_url}/models lists, asked when a session starts "
                    f"(provider {self.model.provider}; model.name is not set)")
        return self.model.describe()


def list_models(model: ModelSettings, timeout: float = _LIST_TIMEOUT) -> list[str]:
    """The model ids ``GET {base_url}/models`` lists (ModelNotConfigured naming the problem when it cannot)."""
    import httpx

    url = f"{model.base_url}/models"
    headers = {"Accept": "application/json", "User-Agent": "hermes"}
    key = model.current_key()
    if key:
        headers["Authorization"] = f"Bearer {key}"
    host = httpx.URL(url).host
    try:
        with httpx.Client(timeout=timeout, trust_env=host not in ("127.0.0.1", "localhost", "::1")) as http:
            response = http.get(url, headers=headers)
    except (httpx.HTTPError, ValueError) as exc:
        raise ModelNotConfigured(f"no model name is configured, and {url} could not be asked which models it "
                                 f"serves: {exc.__class__.__name__}: {exc}") from None
    if response.status_code != 200:
        hint = " (check the API key)" if response.status_code in (401, 403) else ""
        raise ModelNotConfigured(f"no model name is configured, and {url} answered HTTP {response.status_code}"
                                 f"{hint} when asked which models it serves")
    try:
        data = response.json().get("data")
        ids = [str(item["id"]) for item in data if isinstance(item, dict) and item.get("id")]
    except (ValueError, AttributeError, TypeError, KeyError):
        raise ModelNotConfigured(f"no model name is configured, and {url} did not answer with a model list"
                                 ) from None
    return list(dict.fromkeys(ids))


def _set_name_hint(settings: Settings) -> str:
    return (f"Set model.name in {settings.paths.config} (hermes config set model.name NAME), pass --model, "
            "or export HERMES_MODEL.")


def _from_endpoint(settings: Settings, endpoint: ModelSettings) -> ModelChoice:
    from hermes.routing.inference import with_portal_key

    ids = list_models(with_portal_key(endpoint, settings))
    url = f"{endpoint.base_url}/models"
    if not ids:
        raise ModelNotConfigured(f"no model name is configured, and {url} lists no models. "
                                 f"{_set_name_hint(settings)}")
    if len(ids) > 1:
        shown = ", ".join(ids[:_SHOW_AT_MOST]) + (f" … ({len(ids)} in all)" if len(ids) > _SHOW_AT_MOST else "")
        raise ModelNotConfigured(f"no model name is configured, and {url} serves {len(ids)} models: {shown}. "
                                 f"Choose one: {_set_name_hint(settings)}")
    settings.overrides.model = ids[0]
    note = (f"hermes: model.name is not set; {endpoint.base_url} serves one model, {ids[0]}, so this uses it "
            "(set model.name to choose another).")
    return ModelChoice(settings.model(), (note,))


def choose_model(settings: Settings, *, ask_endpoint: bool = True, local_fallback: bool = True) -> ModelChoice:
    """What a session started from ``settings`` runs (see the module docstring); ``error`` set when nothing can.

    ``local_fallback=False`` (``hermes batch``) never switches to the embedded model."""
    from hermes.agent.local_model import fallback_to_local, no_endpoint_help

    ignored = settings.ignored_model_name()
    notes: list[str] = []
    if ignored is not None:
        notes.append(f"hermes: the model name {ignored!r} is ignored: no endpoint is configured to serve it "
                     "(set model.base_url or model.provider, e.g. 'hermes model').")
    try:
        endpoint = settings.model(need_name=False)
    except ModelNotConfigured as exc:
        fallback = fallback_to_local(settings) if local_fallback else None
        if fallback is None:
            return ModelChoice(None, tuple(notes), error=f"{exc}{no_endpoint_help()}")
        from hermes.config.settings import bundled_gguf

        bundled = fallback.path is not None and str(bundled_gguf()) == fallback.path
        what = "offline, small" if bundled else f"offline, {fallback.path}"
        notes.append(f"hermes: no model endpoint is configured, so chat uses the embedded local model "
                     f"{fallback.model} ({what}); 'hermes setup' configures a real one.")
        return ModelChoice(fallback, tuple(notes))
    if endpoint.model or endpoint.provider == "local":
        return ModelChoice(endpoint, tuple(notes))
    if not ask_endpoint:
        return ModelChoice(endpoint, tuple(notes), unresolved_name=True)
    try:
        found = _from_endpoint(settings, endpoint)
    except ModelNotConfigured as exc:
        return ModelChoice(None, tuple(notes), error=str(exc))
    return replace(found, notes=(*notes, *found.notes))
