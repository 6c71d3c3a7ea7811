"""The approval flow every tool family shares: modes, the allow-list, session approvals, asking.

The terminal's gate (:mod:`hermes.tools.terminal.gate`) decides *what* needs approval for a command;
the file tools ask before writing outside the OS sandbox's writable folders
(:func:`approve_file_write`). Both end here, so the person sees one kind of request and one set of
answers and settings:

* ``approvals.allow`` (config.yaml) lists pattern ids (and, for commands, command prefixes) that never
  ask; an ``always`` answer appends to it (comments and order kept);
* a ``session`` answer is remembered in the session's state under :data:`SESSION_STATE_KEY`;
* ``approvals.mode``: ``ask`` (default), ``yolo`` (run unasked), ``deny`` (refuse unasked); cron
  sessions follow ``approvals.cron_mode`` (``deny`` by default);
* on a surface without a person, or outside a session, the request is refused with a message saying
  how to allow it; no answer is a denial.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hermes.config.paths import HermesPaths
from hermes.config.yamlfile import ConfigFile
from hermes.errors import ApprovalDenied, ConfigError
from hermes.tools.context import SessionView, session_of
from hermes.tools.requests import APPROVAL_CHOICES, Request, normalise_answer
from hermes.tools.toolsets import Surface

__all__ = ["FILE_WRITE_ID", "FILE_WRITE_REASON", "SESSION_STATE_KEY", "ApprovalRequest", "approve_file_write",
           "ask", "config_for", "config_path", "effective_mode", "remember_always", "session_approvals",
           "string_list"]

SESSION_STATE_KEY = "terminal.approvals"
_MODES = {"ask": "ask", "manual": "ask", "smart": "ask", "yolo": "yolo", "off": "yolo", "deny": "deny"}
#: the pattern id and reason of a file-tool write outside the sandbox's writable folders
FILE_WRITE_ID = "sandbox_file_write"
FILE_WRITE_REASON = "writing a file outside the sandbox (its writable folders are the workspace, " \
                    "sandbox.writable_paths and the session's temp folder)"
_config_lock = threading.Lock()
logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ApprovalRequest(Request):
    """``Request(kind="approval")``; build it with :meth:`for_command`.

    The payload holds ``command``, ``reason``, ``pattern`` and ``segment`` of the first finding,
    ``findings`` (every finding to approve), and ``choices``. The surface answers one of
    ``"once"``, ``"session"``, ``"always"``, ``"deny"`` (None: nobody answered, a denial). Findings are
    anything with ``pattern_id``, ``reason`` and ``segment`` (the terminal's verdicts).
    """

    @classmethod
    def for_command(cls, command: str, pending: list[Any]) -> ApprovalRequest:
        first = pending[0]
        return cls(
            kind="approval",
            payload={
                "command": command,
                "reason": first.reason,
                "pattern": first.pattern_id,
                "segment": first.segment,
                "findings": [{"pattern": v.pattern_id, "reason": v.reason, "segment": v.segment} for v in pending],
                "choices": list(APPROVAL_CHOICES),
            },
        )


# -- configuration ---------------------------------------------------------------------------------
def config_for(session: SessionView | None) -> ConfigFile:
    """The session's config.yaml, or HERMES_HOME's when there is no session (an unreadable file: empty)."""
    if session is not None and session.settings is not None:
        return session.settings.config
    path = HermesPaths.current().config
    try:
        return ConfigFile.load(path)
    except ConfigError:
        return ConfigFile(path)


def config_path(session: SessionView | None) -> Path:
    if session is not None and session.settings is not None:
        return session.settings.paths.config
    return HermesPaths.current().config


def string_list(value: Any) -> list[str]:
    """A config value that should be a list of strings (a lone string counts as a one-item list)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list | tuple):
        return [str(v) for v in value if isinstance(v, str | int | float)]
    return []


def effective_mode(config: ConfigFile, surface: Surface | None) -> str:
    """``ask``, ``yolo`` or ``deny`` for this surface."""
    if surface == Surface.CRON:
        return _MODES.get(str(config.get("approvals.cron_mode", "deny")).strip().lower(), "deny")
    return _MODES.get(str(config.get("approvals.mode", "ask")).strip().lower(), "ask")


def session_approvals(session: SessionView | None) -> set[str]:
    """What this session's ``session`` answers approved (empty and not kept outside a session)."""
    if session is None:
        return set()
    ids = session.state.get(SESSION_STATE_KEY)
    if not isinstance(ids, set):
        ids = set()
        session.state[SESSION_STATE_KEY] = ids
    return ids


def remember_always(session: SessionView | None, pattern_ids: list[str]) -> Path:
    """Append pattern ids to ``approvals.allow`` in config.yaml (round-trip: comments are kept)."""
    path = config_path(session)
    with _config_lock:
        cfg = ConfigFile.load(path)
        current = cfg.get("approvals.allow")
        if isinstance(current, list):
            for pid in pattern_ids:
                if pid not in current:
                    current.append(pid)
            merged = list(current)
        else:
            merged = string_list(current)
            merged += [p for p in pattern_ids if p not in merged]
            cfg.set("approvals.allow", merged)
        path.parent.mkdir(parents=True, exist_ok=True)
        cfg.save()
        if session is not None and session.settings is not None and session.settings.config is not cfg:
            session.settings.config.set("approvals.allow", [str(x) for x in merged])
    return path


# -- asking ----------------------------------------------------------------------------------------
def ask(session: SessionView | None, config: ConfigFile, request: ApprovalRequest, *, ids: list[str],
        entries: list[str], what: str, no_person: Callable[[str], str]) -> None:
    """Decide a request that nothing allows yet: by the mode, else by the person's answer. ``ids`` are
    remembered for a ``session`` answer, ``entries`` appended to ``approvals.allow`` for ``always``;
    ``no_person(why)`` words the refusal when nobody can be asked. Raises :class:`ApprovalDenied`."""
    surface = session.surface if session is not None else None
    mode = effective_mode(config, surface)
    if mode == "yolo":
        return
    if session is None or mode == "deny" or not session.surface.has_person:
        if session is None:
            why = "There is no session with a person to ask."
        elif mode == "deny":
            why = "approvals.mode is deny, so nobody is asked."
        else:
            why = f"Nobody can approve commands on the {session.surface.value} surface."
        raise ApprovalDenied(no_person(why))
    choice = normalise_answer(session.sink.ask(request))
    if choice == "once":
        return
    if choice in ("session", "always"):
        session_approvals(session).update(ids)
        if choice == "always" and entries:
            try:
                remember_always(session, entries)
            except (ConfigError, OSError) as exc:  # approved all the same; it just will not be remembered
                logger.warning("could not add %s to approvals.allow: %s", ", ".join(entries), exc)
        return
    reason = request.payload.get("reason", "")
    if choice is None:
        raise ApprovalDenied(f"nobody answered the approval request for this {what} ({reason}); it was not run")
    raise ApprovalDenied(f"the person denied this {what} ({reason}); it was not run. Do not retry it in another "
                         "form; ask the person what they want instead.")


@dataclass(frozen=True)
class _Finding:
    pattern_id: str
    reason: str
    segment: str


def approve_file_write(kw: dict[str, Any], tool: str, path: Path) -> None:
    """Ask before a file tool writes ``path`` outside the sandbox's writable folders (same request,
    answers and settings as a terminal command's; ``approvals.allow: [sandbox_file_write]`` allows all)."""
    session = session_of(kw)
    config = config_for(session)
    if FILE_WRITE_ID in string_list(config.get("approvals.allow")) or FILE_WRITE_ID in session_approvals(session):
        return
    subject = f"{tool} {path}"
    request = ApprovalRequest.for_command(subject, [_Finding(FILE_WRITE_ID, FILE_WRITE_REASON, subject)])

    def no_person(why: str) -> str:
        return (f"not written: {FILE_WRITE_REASON} ({path}). {why} Write inside the workspace, or, to allow "
                f"it, add the folder to sandbox.writable_paths or '{FILE_WRITE_ID}' to approvals.allow in "
                f"{config_path(session)}, or set approvals.mode: yolo.")

    ask(session, config, request, ids=[FILE_WRITE_ID], entries=[FILE_WRITE_ID], what="file write",
        no_person=no_person)
