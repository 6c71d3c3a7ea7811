"""The ``modal`` relay's local engine: sandboxes as private folders, commands as child processes.

A **sandbox** is a home folder (:mod:`.fs`) owned by the user who created it through the
gateway; an **exec** is one ``/bin/sh -c`` child in its own process group (:mod:`.proc`). The
engine answers only the owner: a sandbox or exec of another user looks exactly like an unknown one.

* ``create`` — at most ``max_per_user`` running sandboxes per user and ``max_sandboxes`` in all (429
  ``sandbox_limit``); the same ``x-idempotency-key`` from the same user returns the same sandbox while
  it runs; a persistent sandbox (``persistentFilesystem``) gets the home kept for its ``logicalKey``.
* ``exec`` — the same ``execId`` returns the same exec (409 if the command differs); at most
  ``max_running_execs`` at a time per sandbox (429 ``exec_limit``); runs until exit, ``timeoutMs``
  (status ``timeout``, 124) or a cancel (``cancelled``, 130), the group killed in both cases.
* ``terminate`` — kills every process group the sandbox started and deletes the home, unless the
  sandbox is persistent and the client did not ask to discard it (``snapshotBeforeTerminate: false``).
* a **reaper** task ends sandboxes past their lifetime (``timeoutMs``) or idle for ``idleTimeoutMs``
  (no running exec, no request), forgets ended ones after ``tombstone_seconds`` and deletes persistent
  homes unused for ``keep_days``.
* output — finished execs' output counts against a budget per user and in all (oldest dropped first,
  :class:`~hermes.toolgateway.sandbox.store.OutputBudget`); a terminated sandbox keeps none (one the
  reaper ended keeps its output, within the budget, for ``tombstone_seconds``).

:class:`~hermes.toolgateway.sandbox.store.SandboxStore` holds the records in this process's memory. The
processes and folders are local to one host anyway, so several gateway processes need **sticky
routing** for this relay (by token); a restart ends every sandbox (persistent homes stay).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import pwd
import secrets
import subprocess
import time
from pathlib import Path

from hermes.errors import ConfigError
from hermes.toolgateway.errors import GatewayHTTPError, too_many
from hermes.toolgateway.sandbox.config import MIB, SandboxConfig
from hermes.toolgateway.sandbox.fs import SandboxFS, reachable_by, resolve_cwd
from hermes.toolgateway.sandbox.proc import ExecProcess, Identity, Rlimits, child_env, kill_group, stop
from hermes.toolgateway.sandbox.store import (
    CANCEL_CODE,
    ENDED,
    START_FAILED_CODE,
    TERMINAL,
    TERMINATED,
    TIMEOUT_CODE,
    Exec,
    ExecSpec,
    Sandbox,
    SandboxSpec,
    SandboxStore,
)

log = logging.getLogger("hermes.toolgateway.sandbox.engine")
PRUNE_EVERY = 600.0


def resolve_identity(cfg: SandboxConfig, root: Path) -> Identity:
    """Who runs the commands, or a ConfigError that says how to configure it safely."""
    euid = os.geteuid()
    if cfg.run_as:
        try:
            entry = pwd.getpwuid(int(cfg.run_as)) if cfg.run_as.isdigit() else pwd.getpwnam(cfg.run_as)
        except (KeyError, ValueError):
            raise ConfigError(f"gateway config: relays.modal.run_as: there is no user {cfg.run_as!r} here") from None
        if entry.pw_uid == 0:
            raise ConfigError("gateway config: relays.modal.run_as must be an unprivileged user, not root")
        if entry.pw_uid != euid:
            if euid != 0:
                raise ConfigError(f"gateway config: relays.modal.run_as = {cfg.run_as!r} needs the gateway to run "
                                  "as root (it switches to that user for each command)")
            identity = Identity(entry.pw_name, entry.pw_uid, entry.pw_gid, True)
            blocked = reachable_by(root, identity)
            if blocked is not None:
                raise ConfigError(f"gateway config: relays.modal.root: user {entry.pw_name} cannot reach {root} "
                                  f"({blocked} is closed to it); choose a folder such as /var/lib/hermes-sandboxes")
            return identity
    if euid == 0:
        raise ConfigError("gateway config: relays.modal: the gateway runs as root; set run_as to a dedicated "
                          "unprivileged user (commands never run as root)")
    if not cfg.allow_gateway_user:
        raise ConfigError("gateway config: relays.modal: set run_as to a dedicated user (the gateway must run as "
                          "root to switch), or allow_gateway_user = true to run commands as the gateway's own user "
                          "— they can then read its secrets and database: only for one trusted user")
    try:
        name = pwd.getpwuid(euid).pw_name
    except KeyError:
        name = str(euid)
    return Identity(name, euid, os.getegid(), False)


class SandboxEngine:
    """Sandboxes of this process; every public method takes the calling user's id (``owner``)."""

    def __init__(self, cfg: SandboxConfig, root: Path) -> None:
        self.cfg = cfg
        self.identity = resolve_identity(cfg, root)
        self.fs = SandboxFS(root, self.identity)
        self.store = SandboxStore(cfg.max_output_kept_per_user, cfg.max_output_kept)
        self._opened = False
        self._open_lock: asyncio.Lock | None = None
        self._reaper: asyncio.Task[None] | None = None

    # -- lifecycle -----------------------------------------------------------------------------------
    async def _ready(self) -> None:
        if self._opened:
            return
        if self._open_lock is None:
            self._open_lock = asyncio.Lock()
        async with self._open_lock:
            if self._opened:
                return
            try:
                await asyncio.to_thread(self.fs.open)
            except OSError:
                log.exception("cannot prepare the sandbox folder %s", self.fs.root)
                raise GatewayHTTPError(503, "backend_unavailable", "the gateway cannot prepare its sandbox folder; "
                                       "tell the operator (see the gateway's log)") from None
            self._opened = True
            self._reaper = asyncio.create_task(self._reap_loop(), name="sandbox-reaper")

    async def close(self) -> None:
        """End every sandbox (persistent homes stay) and delete this process's run folder."""
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reaper
            self._reaper = None
        for sandbox in self.store.live():
            await self._end(sandbox, "the gateway stopped", sandbox.spec.persistent)
        if self._opened:
            await asyncio.to_thread(self.fs.close)
            self._opened = False

    # -- lookups -------------------------------------------------------------------------------------
    def sandbox(self, owner: str, sandbox_id: str) -> Sandbox:
        sandbox = self.store.get(sandbox_id, owner)
        if sandbox is None:
            raise GatewayHTTPError(404, "unknown_sandbox", f"no sandbox {sandbox_id} for this token")
        return sandbox

    def exec(self, owner: str, sandbox_id: str, exec_id: str) -> Exec:
        ex = self.sandbox(owner, sandbox_id).execs.get(exec_id)
        if ex is None:
            raise GatewayHTTPError(404, "unknown_exec", f"no exec {exec_id} in sandbox {sandbox_id}")
        return ex

    # -- operations ----------------------------------------------------------------------------------
    async def create(self, owner: str, spec: SandboxSpec, key: str | None) -> Sandbox:
        """A new sandbox, or the running one this owner created with the same idempotency key."""
        await self._ready()
        if key:
            existing = self.store.by_key(owner, key)
            if existing is not None and existing.status == "running":
                existing.touch()
                return existing
        cfg = self.cfg
        if len(self.store.live(owner)) >= cfg.max_per_user:
            raise too_many("sandbox_limit", f"you already have {cfg.max_per_user} running sandboxes, the most this "
                           "gateway allows per user; terminate one first", 30)
        if len(self.store.live()) >= cfg.max_sandboxes:
            raise too_many("sandbox_limit", f"this gateway is running its maximum of {cfg.max_sandboxes} sandboxes; "
                           "try again later", 30)
        sandbox_id = f"sb-{secrets.token_hex(12)}"
        try:
            home = self.fs.kept_home(owner, spec.logical_key) if spec.persistent else self.fs.new_home(sandbox_id)
        except OSError:
            log.exception("cannot create a sandbox folder under %s", self.fs.root)
            raise GatewayHTTPError(503, "backend_unavailable", "the gateway cannot create a sandbox folder; tell "
                                   "the operator (see the gateway's log)") from None
        try:
            cwd = resolve_cwd(spec.cwd, home=home, base=home, aliases=cfg.home_aliases)
            self.fs.make_dirs(cwd, home)
        except (GatewayHTTPError, OSError) as exc:
            if not spec.persistent:
                self.fs.remove(home)
            if isinstance(exc, OSError):
                raise GatewayHTTPError(400, "invalid_cwd",
                                       f"'cwd' {spec.cwd!r} cannot be created in the sandbox") from None
            raise
        sandbox = Sandbox(sandbox_id, owner, spec, home, cwd)
        self.store.add(sandbox, key)
        return sandbox

    async def start_exec(self, owner: str, sandbox_id: str, spec: ExecSpec) -> Exec:
        """Start a command, or return the exec this sandbox already has under ``spec.exec_id``."""
        sandbox = self.sandbox(owner, sandbox_id)
        sandbox.touch()
        existing = sandbox.execs.get(spec.exec_id)
        if existing is not None:
            if existing.command != spec.command:
                raise GatewayHTTPError(409, "exec_id_conflict", f"exec {spec.exec_id} already ran another command")
            return existing
        if sandbox.status != "running":
            raise GatewayHTTPError(409, "sandbox_terminated", f"sandbox {sandbox_id} has been terminated")
        if len(sandbox.running()) >= self.cfg.max_running_execs:
            raise too_many("exec_limit", f"this sandbox already runs {self.cfg.max_running_execs} commands; wait for "
                           "one to finish", 5)
        cwd = resolve_cwd(spec.cwd, home=sandbox.home, base=sandbox.cwd, aliases=self.cfg.home_aliases)
        if not cwd.is_dir():
            raise GatewayHTTPError(400, "invalid_cwd", f"'cwd' {spec.cwd!r} is not a folder in the sandbox")
        while len(sandbox.execs) >= self.cfg.max_execs_kept:
            oldest = next((k for k, v in sandbox.execs.items() if v.status in TERMINAL), None)
            if oldest is None:
                break
            self.store.output.release(sandbox.execs.pop(oldest), ENDED)
        ex = Exec(spec, cwd, self.cfg.max_output_bytes)
        sandbox.execs[ex.id] = ex
        ex.task = asyncio.create_task(self._run(sandbox, ex, spec.stdin), name=f"sandbox-exec-{ex.id}")
        return ex

    async def wait(self, ex: Exec, seconds: float) -> None:
        """Wait up to ``seconds`` for an exec to finish."""
        if seconds > 0 and ex.status not in TERMINAL:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(ex.done.wait(), seconds)

    async def cancel(self, owner: str, sandbox_id: str, exec_id: str) -> Exec:
        """Kill a running exec's process group (a finished exec is returned as it is)."""
        sandbox = self.sandbox(owner, sandbox_id)
        sandbox.touch()
        ex = self.exec(owner, sandbox_id, exec_id)
        if ex.status not in TERMINAL:
            ex.cancel_reason = ex.cancel_reason or "the command was cancelled"
            if ex.pgid is not None:
                kill_group(ex.pgid)
            await self.wait(ex, 5.0)
        return ex

    async def terminate(self, owner: str, sandbox_id: str, snapshot: bool | None) -> Sandbox:
        """End a sandbox; a persistent one keeps its home unless ``snapshot`` is False."""
        sandbox = self.sandbox(owner, sandbox_id)
        sandbox.output_kept = False  # the client is done with it: its execs keep their status, not their output
        await self._end(sandbox, "the sandbox was terminated", sandbox.spec.persistent and snapshot is not False)
        for ex in sandbox.execs.values():
            if ex.status in TERMINAL:
                self.store.output.release(ex, TERMINATED)
        return sandbox

    # -- internals -----------------------------------------------------------------------------------
    def _limits(self, sandbox: Sandbox, timeout: float) -> Rlimits:
        spec, cfg = sandbox.spec, self.cfg
        file_mib = min(spec.disk_mib or cfg.max_file_mib, cfg.max_file_mib)
        return Rlimits(address_space=spec.memory_mib * MIB, cpu_seconds=math.ceil(timeout * max(spec.cpu, 1.0)) + 1,
                       file_size=file_mib * MIB, processes=cfg.max_processes if self.identity.switch else 0,
                       nice=cfg.nice)

    async def _run(self, sandbox: Sandbox, ex: Exec, stdin: bytes | None) -> None:
        env = child_env(sandbox.home, ex.cwd, self.identity, self.cfg.path)
        try:
            proc = await ExecProcess.start(ex.command, cwd=ex.cwd, env=env, identity=self.identity,
                                           limits=self._limits(sandbox, ex.timeout), stdin=stdin, output=ex.output)
        except (OSError, subprocess.SubprocessError, ValueError) as exc:
            why = "the child could not become the sandbox user, take its limits or enter the working directory" \
                if isinstance(exc, subprocess.SubprocessError) else str(exc)
            ex.finish("failed", START_FAILED_CODE, f"[sandbox: the command could not be started: {why}]")
            return
        ex.pgid = proc.pid
        sandbox.groups.add(proc.pid)
        try:
            code = None if ex.cancel_reason else await proc.wait(ex.timeout)
            cancelled = ex.cancel_reason is not None  # decided now: a cancel during the drain changes nothing
            if cancelled or code is None:
                await stop(proc)
            else:
                await proc.drain()
            if cancelled:
                ex.finish("cancelled", CANCEL_CODE, f"[sandbox: {ex.cancel_reason}; its processes were killed]")
            elif code is None:
                ex.finish("timeout", TIMEOUT_CODE,
                          f"[sandbox: the command timed out after {ex.timeout:g} s; its processes were killed]")
            else:
                ex.finish("completed", code)
        finally:
            proc.close()
            ex.finish("failed", START_FAILED_CODE, "[sandbox: the command was interrupted]")
            if sandbox.output_kept:
                self.store.output.keep(ex, sandbox.owner)
            else:
                self.store.output.release(ex, TERMINATED)
            sandbox.touch()
            if not _group_alive(proc.pid):
                sandbox.groups.discard(proc.pid)

    async def _end(self, sandbox: Sandbox, reason: str, keep: bool) -> None:
        if sandbox.status != "running":
            return
        sandbox.status = "terminated"
        sandbox.ended = time.monotonic()
        self.store.ended(sandbox)
        for ex in sandbox.running():
            ex.cancel_reason = ex.cancel_reason or reason
        for pgid in list(sandbox.groups):
            kill_group(pgid)
        tasks = [ex.task for ex in sandbox.execs.values() if ex.task is not None and not ex.task.done()]
        if tasks:
            await asyncio.wait(tasks, timeout=10.0)
        if keep:
            sandbox.persisted = True
            self.fs.stamp(sandbox.home)
        elif not any(s.home == sandbox.home for s in self.store.live()):
            await asyncio.to_thread(self.fs.remove, sandbox.home)

    async def _reap_loop(self) -> None:
        last_prune = 0.0
        while True:
            await asyncio.sleep(self.cfg.reap_interval)
            try:
                now = time.monotonic()
                for sandbox in self.store.live():
                    if now >= sandbox.deadline:
                        await self._end(sandbox, "the sandbox reached its lifetime", sandbox.spec.persistent)
                    elif not sandbox.running() and now - sandbox.last_active >= sandbox.spec.idle:
                        await self._end(sandbox, "the sandbox was idle too long", sandbox.spec.persistent)
                    else:
                        sandbox.groups = {g for g in sandbox.groups if _group_alive(g)}
                self.store.forget_ended(now - self.cfg.tombstone_seconds)
                if now - last_prune >= PRUNE_EVERY:
                    last_prune = now
                    in_use = {s.home for s in self.store.live()}
                    await asyncio.to_thread(self.fs.prune_kept, self.cfg.keep_days * 86400, in_use)
            except Exception:
                log.exception("the sandbox reaper failed; it keeps running")


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


__all__ = ["ExecSpec", "SandboxEngine", "SandboxSpec", "resolve_identity"]
