"""Where a terminal command runs: inside the OS sandbox (:mod:`hermes.tools.sandbox`) or, with the
person's approval, outside it.

Two arguments of ``terminal`` ask for more than the sandbox gives, and each is an approval like a
dangerous command's (same request, same ``once``/``session``/``always`` answers, same
``approvals.allow`` entries and modes):

* ``network: true`` — the command may reach the network (pattern id ``sandbox_network``; not asked
  when ``sandbox.network`` is true);
* ``sandbox: false`` — the command runs outside the sandbox (pattern id ``sandbox_escape``).

Where no sandbox can be set up, or ``sandbox.mode`` is ``full-access``, neither is asked: the command
runs unsandboxed and the classifier's rules for unsandboxed commands decide.
"""

from __future__ import annotations

from typing import Any

from hermes.tools import sandbox
from hermes.tools.context import SessionView, on_session_end
from hermes.tools.terminal import gate
from hermes.tools.terminal.approval import Verdict, findings
from hermes.tools.terminal.patterns import PATTERNS


def _request(command: str, pattern_id: str) -> Verdict:
    return Verdict("dangerous", PATTERNS[pattern_id][1], pattern_id, command)


def _end_session(task_id: str) -> None:
    """The session ended: its long-lived sandboxes (and what still runs in them), then its temp folder."""
    from hermes.tools import sandbox_pool

    sandbox_pool.drop(task_id)
    sandbox.drop_session_temp(task_id)


def session_workspace(session: SessionView | None) -> str:
    """The session's working directory: ``terminal.cwd`` from config.yaml, else hermes's own."""
    return sandbox.session_workspace(gate.config_for(session))


def prepare(command: str, args: dict[str, Any], kw: dict[str, Any], session: SessionView | None,
            cwd: str, task_id: str) -> sandbox.Launch:
    """Run the approvals for ``command`` and say how it is started; raises
    :class:`~hermes.errors.ApprovalDenied` when something is refused.

    Leaving the sandbox or reaching the network and what the command itself needs (a dangerous pattern,
    or a command not proven safe that will run unsandboxed) are one approval request, not two."""
    policy = sandbox.load_policy(gate.config_for(session))
    can_sandbox = policy.enabled and sandbox.support().available
    leave = args.get("sandbox") is False and can_sandbox
    network = bool(args.get("network")) and can_sandbox and not leave
    asked: list[Verdict] = []
    if leave:
        asked.append(_request(command, "sandbox_escape"))
    elif network and not policy.network:
        asked.append(_request(command, "sandbox_network"))
    temp = sandbox.session_temp(task_id) if can_sandbox and not leave else ""
    if temp:
        on_session_end(kw, f"sandbox-temp:{task_id}", lambda: _end_session(task_id))
    workspace = session_workspace(session)
    chosen = sandbox.launch(policy, workdir=cwd, temp_dir=temp, workspaces=[workspace], network=network, leave=leave,
                            session=task_id)
    found = findings(command, cwd, gate.safe_programs(kw), workspace)
    gate.check(command, asked + found, kw, sandboxed=chosen.sandboxed)
    return chosen


def prepare_remote(command: str, kw: dict[str, Any], isolated: bool, cwd: str) -> None:
    """The approvals for a command that runs on a remote execution backend, before anything runs there.

    The local OS sandbox does not apply: the hard floor refuses, dangerous commands need approval, and
    unproven ones need it too unless the backend is an isolation boundary (``isolated``: a container or a
    managed sandbox). ``network``/``sandbox`` ask for nothing more there (the backend decides both)."""
    found = findings(command, cwd, gate.safe_programs(kw), cwd)
    gate.check(command, found, kw, sandboxed=isolated)
