"""The approval flow of the terminal tool: what happens to a command the classifier flags.

* ``floor`` findings are refused with :class:`~hermes.errors.ApprovalDenied`, always — in yolo mode
  too, and whatever ``approvals.allow`` lists.
* ``dangerous`` findings run when every one of them is allowed: its pattern id or a command prefix is
  in ``approvals.allow`` (config.yaml), or the person approved the pattern for this session or for
  always. Otherwise, with ``approvals.mode: yolo`` they run unasked; on a surface with a person the
  person is asked (``once`` | ``session`` | ``always`` | ``deny``; no answer is a denial); on surfaces
  without one (one-shot, cron, kanban), with ``approvals.mode: deny`` or outside any session they are
  refused with a message saying how to allow them. Cron sessions follow ``approvals.cron_mode``
  (``deny`` by default, or ``yolo``) instead of ``approvals.mode``.
* ``unproven`` findings (commands the classifier could not prove safe) run unasked when the command
  runs inside an OS sandbox (``sandboxed=True``); outside one they go through the same flow as
  ``dangerous`` findings. They are allowed by a command prefix in ``approvals.allow`` (or the id
  ``unproven``, which allows them all), by a matching ``approvals.safe_programs`` entry (which makes
  them proven in the first place), by the person's approval of that simple command, or when the same
  simple command is covered by an allowed ``dangerous`` finding (``approvals.allow: [git_force_push]``
  runs ``git push --force`` without a second question).

"always" approvals are appended to ``approvals.allow`` in config.yaml (comments and order kept): the
pattern id of a dangerous finding, the simple command itself (as a prefix) of an unproven one.
"""

from __future__ import annotations

from typing import Any

from hermes.errors import ApprovalDenied
from hermes.tools.approvals import (
    SESSION_STATE_KEY,
    ApprovalRequest,
    ask,
    config_for,
    config_path,
    effective_mode,
    remember_always,
    session_approvals,
    string_list,
)
from hermes.tools.context import SessionView, session_of
from hermes.tools.requests import normalise_answer
from hermes.tools.terminal.approval import UNPROVEN_ID, Verdict, findings
from hermes.tools.terminal.patterns import FLOOR_IDS, PATTERNS

# the shared flow (hermes.tools.approvals) is used through this module by the terminal family
__all__ = ["SESSION_STATE_KEY", "ApprovalRequest", "approval_key", "authorize", "check", "config_for", "config_path",
           "effective_mode", "is_allowed", "normalise_answer", "remember_always", "safe_programs", "string_list"]


def _prefix_allows(entry: str, segment: str) -> bool:
    prefix = " ".join(entry.split())
    if not prefix or not segment.startswith(prefix):
        return False
    return len(segment) == len(prefix) or segment[len(prefix)] == " " or prefix.endswith(("/", "="))


def approval_key(verdict: Verdict) -> str:
    """What a ``session`` approval remembers: the pattern id, or for an unproven command the command."""
    return f"{UNPROVEN_ID}:{verdict.segment}" if verdict.level == "unproven" else verdict.pattern_id


def is_allowed(verdict: Verdict, allow: list[str], session_ids: set[str]) -> bool:
    """Whether a dangerous or unproven finding is covered by the allow-list or this session's approvals."""
    if verdict.level not in ("dangerous", "unproven"):
        return False
    if approval_key(verdict) in session_ids or verdict.pattern_id in allow:
        return True
    return any(entry not in PATTERNS and entry != UNPROVEN_ID and _prefix_allows(entry, verdict.segment)
               for entry in allow)


def _covered(verdict: Verdict, dangerous: list[Verdict]) -> bool:
    """An unproven simple command that a dangerous finding already speaks for."""
    seg = verdict.segment
    return any(d.segment and (seg == d.segment or seg.endswith(" " + d.segment)) for d in dangerous)


def safe_programs(kw: dict[str, Any]) -> tuple[str, ...]:
    """``approvals.safe_programs``: command prefixes the person declared to have known effects."""
    return tuple(string_list(config_for(session_of(kw)).get("approvals.safe_programs")))


# -- the flow --------------------------------------------------------------------------------------
def _floor_message(v: Verdict) -> str:
    return (f"refused: {v.reason} (pattern '{v.pattern_id}': {v.segment or 'the command'}). This is on hermes's "
            "hard floor of commands that are never run, whatever approvals.mode or approvals.allow say (yolo "
            "included). If it really has to happen, the person must run it themselves.")


def _no_person_message(pending: list[Verdict], why: str, session: SessionView | None) -> str:
    first = pending[0]
    if all(v.level == "unproven" for v in pending):
        return (f"command not run: {first.reason} (in: {first.segment or 'the command'}). {why} Use a command "
                "that can be proven safe, or, to allow it, add a command prefix such as "
                f"'{' '.join(first.segment.split()[:2])}' to approvals.allow or approvals.safe_programs in "
                f"{config_path(session)}, run it inside a sandbox, or set approvals.mode: yolo.")
    ids = sorted({v.pattern_id for v in pending if v.level == "dangerous"})
    listed = ", ".join(ids)
    return (f"dangerous command not run: {first.reason} (pattern '{first.pattern_id}': {first.segment}). {why} "
            f"To allow it, add the pattern id ({listed}) or a command prefix such as "
            f"'{' '.join(first.segment.split()[:3])}' to approvals.allow in {config_path(session)} "
            f"(e.g. hermes config set approvals.allow '[{listed}]'), or set approvals.mode: yolo.")


def check(command: str, found: list[Verdict], kw: dict[str, Any], *, what: str = "command",
          sandboxed: bool = False) -> None:
    """Raise :class:`ApprovalDenied` unless ``command`` (with findings ``found``) may run now.

    ``sandboxed``: the command runs inside the OS sandbox (:mod:`hermes.tools.sandbox`), so ``unproven``
    findings need no approval."""
    for verdict in found:
        if verdict.level == "floor" or verdict.pattern_id in FLOOR_IDS:
            raise ApprovalDenied(_floor_message(verdict))
    dangerous = [v for v in found if v.level == "dangerous"]
    unproven = [] if sandboxed else [v for v in found if v.level == "unproven"]
    if not dangerous and not unproven:
        return
    session = session_of(kw)
    config = config_for(session)
    allow = string_list(config.get("approvals.allow"))
    session_ids = session_approvals(session)
    # an unproven simple command that is also a dangerous finding is decided by that finding alone
    pending = [v for v in dangerous if not is_allowed(v, allow, session_ids)]
    pending += [v for v in unproven if not is_allowed(v, allow, session_ids) and not _covered(v, dangerous)]
    if not pending:
        return
    entries = list(dict.fromkeys(v.segment if v.level == "unproven" else v.pattern_id for v in pending))
    ask(session, config, ApprovalRequest.for_command(command, pending),
        ids=list(dict.fromkeys(approval_key(v) for v in pending)), entries=[e for e in entries if e], what=what,
        no_person=lambda why: _no_person_message(pending, why, session))


def authorize(command: str, kw: dict[str, Any], cwd: str | None = None, sandboxed: bool = False,
              workspace: str | None = None) -> None:
    """Classify ``command`` (to be run in ``cwd``; writes proven only inside ``workspace``, default ``cwd``)
    and run the approval flow; raises :class:`ApprovalDenied` when it is refused. ``sandboxed``: it runs
    inside an OS sandbox, where commands that are merely unproven need no approval."""
    check(command, findings(command, cwd, safe_programs(kw), workspace), kw, sandboxed=sandboxed)
