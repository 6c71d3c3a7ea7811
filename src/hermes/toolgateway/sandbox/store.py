"""The records of the ``modal`` relay's local engine: sandboxes, their execs, and the store that holds them.

:class:`SandboxStore` is the one place that knows where sandbox records live: today this process's
memory. Its interface is small (add, get by id *and owner*, get by idempotency key, list the running
ones, mark ended, forget old ended ones). The processes and folders a record points at stay on one host,
so another gateway process forwards a request for a sandbox held here (:mod:`hermes.toolgateway.peers`).

A record is returned only to its owner: :meth:`SandboxStore.get` answers None for someone else's id,
the same as for an unknown one.

Exec output is the bulk of what records hold, so it has a budget (:class:`OutputBudget`): finished
execs' output beyond ``max_output_kept_per_user`` / ``max_output_kept`` is dropped oldest first, and
a terminated sandbox keeps only its execs' status, returncode and note (one the reaper ended keeps its
output, still counted, until it is forgotten). A poll of such an exec answers ``output`` as a
``[sandbox: …]`` line saying so, with ``"outputDropped": true``.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hermes.toolgateway.sandbox.proc import CappedOutput

TERMINAL = frozenset({"completed", "failed", "cancelled", "timeout"})
TIMEOUT_CODE, CANCEL_CODE, START_FAILED_CODE = 124, 130, 126
ENDED = "the sandbox has ended"
TERMINATED = "the sandbox was terminated"
OVER_USER = "the gateway keeps a limited amount of finished commands' output per user, the most recent first"
OVER_TOTAL = "the gateway keeps a limited amount of finished commands' output, the most recent first"


def _iso(ts: float | None) -> str | None:
    return None if ts is None else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


@dataclass(frozen=True)
class SandboxSpec:
    """A create request after validation (sizes already clamped to the operator's limits)."""

    image: str
    cwd: str | None
    cpu: float
    memory_mib: int
    disk_mib: int | None
    lifetime: float
    idle: float
    persistent: bool
    logical_key: str


@dataclass(frozen=True)
class ExecSpec:
    """An exec request after validation."""

    exec_id: str
    command: str
    cwd: str | None
    timeout: float
    stdin: bytes | None


class Exec:
    """One command of a sandbox and what became of it."""

    def __init__(self, spec: ExecSpec, cwd: Path, max_output: int) -> None:
        self.id = spec.exec_id
        self.command = spec.command
        self.cwd = cwd
        self.timeout = spec.timeout
        self.status = "running"
        self.returncode: int | None = None
        self.output = CappedOutput(max_output)
        self.note = ""
        self.dropped: str | None = None  # why the output is no longer kept
        self.started = time.time()
        self.finished: float | None = None
        self.pgid: int | None = None
        self.cancel_reason: str | None = None
        self.done = asyncio.Event()
        self.task: asyncio.Task[None] | None = None

    def finish(self, status: str, returncode: int, note: str = "") -> None:
        if self.status in TERMINAL:
            return
        self.status, self.returncode, self.note, self.finished = status, returncode, note, time.time()
        self.done.set()

    def drop_output(self, why: str) -> None:
        """Forget the output of a finished exec (status, returncode and note stay); ``why`` is shown instead."""
        if self.dropped is None and self.output.size:
            self.dropped = f"[sandbox: the {self.output.total} bytes of output of this command are no longer " \
                           f"kept: {why}]"
        self.output.release()

    def view(self) -> dict[str, Any]:
        text = self.output.text() if self.dropped is None else self.dropped
        if self.note:
            text = f"{text}\n{self.note}" if text else self.note
        out = {"execId": self.id, "status": self.status, "output": text, "returncode": self.returncode,
               "truncated": self.output.truncated, "startedAt": _iso(self.started),
               "finishedAt": _iso(self.finished)}
        if self.dropped is not None:
            out["outputDropped"] = True
        return out


class Sandbox:
    """One sandbox: its owner, settings, home, execs and the process groups it started."""

    def __init__(self, sandbox_id: str, owner: str, spec: SandboxSpec, home: Path, cwd: Path) -> None:
        now = time.monotonic()
        self.id, self.owner, self.spec, self.home, self.cwd = sandbox_id, owner, spec, home, cwd
        self.created_at = time.time()
        self.deadline = now + spec.lifetime
        self.last_active = now
        self.status = "running"
        self.ended: float | None = None
        self.persisted = False
        self.output_kept = True  # False once terminated: its execs' output is released
        self.execs: OrderedDict[str, Exec] = OrderedDict()
        self.groups: set[int] = set()

    def touch(self) -> None:
        self.last_active = time.monotonic()

    def running(self) -> list[Exec]:
        return [ex for ex in self.execs.values() if ex.status not in TERMINAL]

    def view(self) -> dict[str, Any]:
        spec = self.spec
        out: dict[str, Any] = {
            "id": self.id, "status": self.status, "image": spec.image, "cwd": spec.cwd or "~",
            "logicalKey": spec.logical_key, "persistentFilesystem": spec.persistent, "cpu": spec.cpu,
            "memoryMiB": spec.memory_mib, "timeoutMs": int(spec.lifetime * 1000),
            "idleTimeoutMs": int(spec.idle * 1000), "createdAt": _iso(self.created_at)}
        if spec.disk_mib is not None:
            out["diskMiB"] = spec.disk_mib
        if self.status != "running":
            out["persisted"] = self.persisted
        return out


class OutputBudget:
    """The bytes of finished execs' output held in memory, per user and in all.

    A finished exec's output is counted (:meth:`keep`); past ``per_user`` for its owner, or ``total`` for
    everyone, the output of the oldest finished execs is dropped until the count fits again — their
    status and returncode stay. With both limits at least one exec's cap, the exec that just finished
    always keeps its own output. A running exec holds at most its cap, outside this count.
    """

    def __init__(self, per_user: int, total: int) -> None:
        self.per_user, self.total = per_user, total
        self.used = 0
        self._held: OrderedDict[Exec, tuple[str, int]] = OrderedDict()  # oldest first: owner, bytes
        self._mine: dict[str, OrderedDict[Exec, None]] = {}
        self._used_by: dict[str, int] = {}

    def used_by(self, owner: str) -> int:
        return self._used_by.get(owner, 0)

    def keep(self, ex: Exec, owner: str) -> None:
        """Count a finished exec's output, then drop the oldest ones past either limit."""
        ex.output.compact()
        size = ex.output.size
        if not size or ex in self._held or ex.dropped is not None:
            return
        self._held[ex] = (owner, size)
        self._mine.setdefault(owner, OrderedDict())[ex] = None
        self._used_by[owner] = self.used_by(owner) + size
        self.used += size
        while self.used_by(owner) > self.per_user:
            self.release(next(iter(self._mine[owner])), OVER_USER)
        while self.used > self.total:
            self.release(next(iter(self._held)), OVER_TOTAL)

    def release(self, ex: Exec, why: str) -> None:
        """Drop an exec's output (and stop counting it)."""
        held = self._held.pop(ex, None)
        if held is not None:
            owner, size = held
            mine = self._mine[owner]
            del mine[ex]
            if not mine:
                del self._mine[owner], self._used_by[owner]
            else:
                self._used_by[owner] -= size
            self.used -= size
        ex.drop_output(why)


class SandboxStore:
    """The sandbox records of this process: by id, and by (owner, idempotency key) while running; and the
    :class:`OutputBudget` of the execs' output they hold."""

    def __init__(self, output_per_user: int, output_total: int) -> None:
        self.output = OutputBudget(output_per_user, output_total)
        self._by_id: dict[str, Sandbox] = {}
        self._keys: dict[tuple[str, str], str] = {}
        self._key_of: dict[str, tuple[str, str]] = {}

    def add(self, sandbox: Sandbox, key: str | None) -> None:
        self._by_id[sandbox.id] = sandbox
        if key:
            self._keys[(sandbox.owner, key)] = sandbox.id
            self._key_of[sandbox.id] = (sandbox.owner, key)

    def get(self, sandbox_id: str, owner: str) -> Sandbox | None:
        sandbox = self._by_id.get(sandbox_id)
        return sandbox if sandbox is not None and sandbox.owner == owner else None

    def knows(self, sandbox_id: str) -> bool:
        """Whether this process holds (or held) a sandbox of that id, whoever owns it."""
        return sandbox_id in self._by_id

    def by_key(self, owner: str, key: str) -> Sandbox | None:
        sandbox_id = self._keys.get((owner, key))
        return self._by_id.get(sandbox_id) if sandbox_id is not None else None

    def live(self, owner: str | None = None) -> list[Sandbox]:
        return [s for s in self._by_id.values() if s.status == "running" and (owner is None or s.owner == owner)]

    def ended(self, sandbox: Sandbox) -> None:
        """A sandbox stopped running: its idempotency key may create a new one."""
        key = self._key_of.pop(sandbox.id, None)
        if key is not None:
            self._keys.pop(key, None)

    def forget_ended(self, before: float) -> None:
        """Drop records of sandboxes that ended before ``before`` (monotonic)."""
        for sandbox_id in [s.id for s in self._by_id.values() if s.ended is not None and s.ended < before]:
            for ex in self._by_id.pop(sandbox_id).execs.values():
                self.output.release(ex, ENDED)


__all__ = ["CANCEL_CODE", "ENDED", "OVER_TOTAL", "OVER_USER", "START_FAILED_CODE", "TERMINAL", "TERMINATED",
           "TIMEOUT_CODE", "Exec", "ExecSpec", "OutputBudget", "Sandbox", "SandboxSpec", "SandboxStore"]
