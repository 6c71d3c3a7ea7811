"""The app server's ``sessions.rename`` and ``sessions.delete`` (the sidebar's rename and delete).

Both name the session by its stored id (``session_id``) or by its handle (``session``) when it has not
been stored yet. A title is one line of at most :data:`MAX_TITLE` characters (control characters become
spaces; the page shows it as text, never as markup). Deleting removes the stored session and its messages
(as ``hermes sessions delete``) and closes its conversation here; a session whose turn runs or waits for
an answer is refused until it stops (``turn.interrupt``). The other clients following it get a
``session.deleted`` notification. Only desktop and TUI sessions are deleted here, and not one that is
not open here but was written in the last :data:`BUSY_ELSEWHERE_S` seconds (another process may run it).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hermes.errors import SessionNotFound

if TYPE_CHECKING:
    from hermes.surfaces.appserver.rpc import AppApi, Client

MAX_TITLE = 200
BUSY_ELSEWHERE_S = 30.0
_CONTROL = re.compile(r"[\x00-\x1f\x7f]+")


def clean_title(value: Any) -> str:
    from hermes.surfaces.appserver.rpc import INVALID_PARAMS, RpcError

    if not isinstance(value, str):
        raise RpcError(INVALID_PARAMS, "'title' must be a string")
    title = " ".join(_CONTROL.sub(" ", value).split())
    if not title:
        raise RpcError(INVALID_PARAMS, "'title' must not be blank")
    if len(title) > MAX_TITLE:
        raise RpcError(INVALID_PARAMS, f"'title' is {len(title)} characters; at most {MAX_TITLE}")
    return title


class SessionAdmin:
    def __init__(self, api: AppApi) -> None:
        self.api = api

    def methods(self) -> dict[str, Callable[[Client, dict[str, Any]], Any]]:
        return {"sessions.rename": self.rename, "sessions.delete": self.delete}

    def _target(self, params: dict[str, Any]) -> tuple[str | None, str | None]:
        """``(handle, stored id)`` of the session the params name; an RpcError when there is none."""
        from hermes.surfaces.appserver.rpc import INVALID_PARAMS, RpcError

        if params.get("session_id") is None:
            if params.get("session") is None:
                raise RpcError(INVALID_PARAMS, "name the session: 'session_id' (stored) or 'session' (open here)")
            key = self.api.conversation(params).key
            return key, self.api.host.session_id(key)
        session_id = params["session_id"]
        if not isinstance(session_id, str) or not session_id.strip():
            raise RpcError(INVALID_PARAMS, "'session_id' must be a non-empty string")
        try:
            full_id = self.api.host.store.get_session(session_id).id
        except SessionNotFound:
            raise RpcError(INVALID_PARAMS, f"no stored session {session_id!r}") from None
        return self.api.key_of(full_id), full_id

    def rename(self, client: Client, params: dict[str, Any]) -> dict[str, Any]:
        title = clean_title(params.get("title"))
        key, session_id = self._target(params)
        if session_id is not None:
            self.api.host.store.set_title(session_id, title)
        if key is not None:
            self.api.conversation({"session": key}).title = title
        return {"session": key, "session_id": session_id, "title": title}

    def delete(self, client: Client, params: dict[str, Any]) -> dict[str, Any]:
        from hermes.surfaces.appserver.rpc import APP_ERROR, RpcError

        key, session_id = self._target(params)
        if session_id is not None:
            self._check_deletable(key, session_id)
        if key is not None:
            live = self.api.host.get(key)
            if live is not None and (live.running or live.awaiting_reply or live.inbox):
                raise RpcError(APP_ERROR, f"session {key} is running a turn; stop it first (turn.interrupt), "
                                          "then delete it")
            others = [c for c in self.api.followers(key) if c is not client]
            self.api.drop(key)
            for other in others:
                try:
                    other.notify("session.deleted", {"session": key, "session_id": session_id})
                except Exception:  # a client gone must not stop the deletion
                    continue
        if session_id is not None:
            self.api.host.store.delete_session(session_id)
        return {"deleted": True, "session": key, "session_id": session_id}

    def _check_deletable(self, key: str | None, session_id: str) -> None:
        """Only a desktop or TUI session, and not one another process may be writing: a messaging chat, a
        CLI or cron session, or one written moments ago by a process this server does not know, is
        deleted with ``hermes sessions delete`` instead (the person's own choice at the command line)."""
        from hermes.surfaces.appserver.rpc import APP_ERROR, CLIENT_SURFACES, RpcError

        info = self.api.host.store.get_session(session_id)
        if info.surface not in CLIENT_SURFACES:
            raise RpcError(APP_ERROR, f"session {session_id} was started on the {info.surface} surface; the app "
                                      f"deletes only desktop and TUI sessions (hermes sessions delete {session_id})")
        idle = time.time() - info.updated_at
        if key is None and idle < BUSY_ELSEWHERE_S:
            raise RpcError(APP_ERROR, f"session {session_id} was written {idle:.0f} s ago and is not open here: "
                                      "another process may be running it; try again when it is idle")
