"""Whether this hermes may offer managed connectors: the portal login's ``managed_tools`` claim, offline."""

from __future__ import annotations


def managed_connectors_available() -> tuple[bool, str | None]:
    """``(True, None)`` when the login in ``HERMES_HOME`` grants managed connectors, else ``(False, why)``.

    Reads the stored login and ``TOOL_GATEWAY_USER_TOKEN`` only; never touches the network.
    """
    from hermes.errors import HermesError

    try:
        from hermes.config.settings import Settings
        from hermes.routing import load_credentials

        settings = Settings.load()
        credentials = load_credentials(settings.paths.auth, settings.env.as_dict())
    except HermesError as exc:
        return False, f"the settings cannot be read: {exc}"
    if credentials.managed_tools:
        return True, None
    if credentials.token_source is None:
        return False, "needs a Nous Portal login with managed connectors ('hermes portal login')"
    return False, "the Nous Portal login's plan does not include managed connectors"
