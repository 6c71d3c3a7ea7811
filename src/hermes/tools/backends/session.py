"""One backend per task: built on the first call that needs it, reused by every later call, closed at the end.

The backend lives in the state of the *root* session (an ``execute_code`` script's tool calls run in a
child session and reach the same server or sandbox as the caller), and is closed when that session ends
(``Agent.close``) — unless ``terminal.keep_sandbox`` is true, which leaves a docker container or modal
sandbox running for the next session to look at (an SSH connection is always closed). Without a session
(the catalog's dispatch) backends are kept per ``task_id`` and closed when hermes exits.

``local`` needs no state: :func:`for_call` answers it without building anything.
"""

from __future__ import annotations

import atexit
import threading
from typing import Any

from hermes.tools.backends.base import Backend
from hermes.tools.backends.local import LocalBackend
from hermes.tools.backends.registry import DEFAULT, build, chosen_name
from hermes.tools.context import SESSION_END_KEY, SessionView, session_of

STATE_KEY = "execution_backend"
LOCAL = LocalBackend({})
_lock = threading.Lock()
_by_task: dict[str, Backend] = {}
_atexit = False
#: HERMES_HOME's config.yaml by (path, mtime, size): session-less calls do not parse it each time
_config_cache: dict[str, tuple[tuple[str, int, int], Any]] = {}


def config_of(session: SessionView | None) -> Any:
    """The session's config.yaml, or HERMES_HOME's (an unreadable file reads as empty)."""
    found = getattr(session.settings, "config", None) if session is not None else None
    if found is not None:
        return found
    import os

    from hermes.config.paths import HermesPaths
    from hermes.config.yamlfile import ConfigFile
    from hermes.errors import ConfigError

    path = HermesPaths.current().config
    try:
        st = os.stat(path)
    except OSError:
        return None
    stamp = (str(path), st.st_mtime_ns, st.st_size)
    cached = _config_cache.get("file")
    if cached is not None and cached[0] == stamp:
        return cached[1]
    try:
        loaded = ConfigFile.load(path)
    except ConfigError:
        loaded = None
    _config_cache["file"] = (stamp, loaded)
    return loaded


def _root(session: SessionView) -> SessionView:
    seen = 0
    while seen < 32:
        parent = getattr(session, "parent", None)
        if parent is None or not hasattr(parent, "state"):
            return session
        session, seen = parent, seen + 1
    return session


def _closer(backend: Backend, keep: bool) -> Any:
    def close() -> None:
        backend.keep = keep
        backend.close()
    return close


def for_call(kw: dict[str, Any]) -> Backend:
    """The calling task's backend (built now on its first use)."""
    session = session_of(kw)
    config = config_of(session)
    name = chosen_name(config)
    if name == DEFAULT:
        return LOCAL
    keep = bool(config.get("terminal.keep_sandbox")) if config is not None else False
    with _lock:
        if session is not None:
            root = _root(session)
            found = root.state.get(STATE_KEY)
            if isinstance(found, Backend) and found.name == name:
                return found
            backend = build(config, name)
            root.state[STATE_KEY] = backend
            root.state.setdefault(SESSION_END_KEY, {})[f"backend:{name}"] = _closer(backend, keep)
            return backend
        key = f"{kw.get('task_id') or 'default'}|{name}"
        found = _by_task.get(key)
        if found is not None:
            return found
        backend = _by_task[key] = build(config, name)
        global _atexit
        if not _atexit:
            atexit.register(close_all)
            _atexit = True
        return backend


def close_all() -> None:
    """Close every session-less backend (hermes exits; tests)."""
    with _lock:
        backends = list(_by_task.values())
        _by_task.clear()
    for backend in backends:
        try:
            backend.close()
        except Exception:
            continue
