"""Batch runs: many prompts, sampled toolsets, one trajectory per prompt (requirement REG-10).

Input is JSON Lines, one object per prompt with a ``prompt`` field and an optional ``id``. Output is
JSON Lines too, one trajectory per line, written and flushed as each prompt finishes, so a crash keeps
every finished line and ``--resume`` skips ids already written (a last line cut by the crash is removed
first and its prompt run again). Toolsets are drawn for every prompt of the file in order, so a resumed
run with the same ``--seed`` gives the remaining prompts the toolsets an uninterrupted run would have.
:mod:`hermes.agent.batch_ray` runs the same prompts as tasks on a Ray cluster.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from hermes.agent.batch_limits import LimitedProvider, RateLimits, RequestLimiter
from hermes.agent.events import RecordingSink
from hermes.agent.provider import ChatProvider
from hermes.config.settings import Settings
from hermes.errors import ConfigError, HermesError
from hermes.tools.distributions import Distribution
from hermes.tools.toolsets import Surface


@dataclass(frozen=True)
class BatchItem:
    id: str
    prompt: str


def read_items(path: Path) -> Iterator[BatchItem]:
    try:
        handle = path.open(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    with handle:
        for lineno, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ConfigError(f"{path}:{lineno}: not valid JSON ({exc.msg})") from None
            if not isinstance(obj, dict) or not isinstance(obj.get("prompt"), str) or not obj["prompt"].strip():
                raise ConfigError(f"{path}:{lineno}: each line needs a non-empty string field 'prompt'")
            yield BatchItem(str(obj.get("id", lineno)), obj["prompt"])


def done_ids(path: Path) -> set[str]:
    ids: set[str] = set()
    if not path.exists():
        return ids
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut by a crash is redone
        if isinstance(obj, dict) and "id" in obj:
            ids.add(str(obj["id"]))
    return ids


def repair_tail(path: Path, chunk: int = 65_536) -> bool:
    """Cut a last line a crash left unfinished (no newline), so appended records start on their own line."""
    try:
        handle = path.open("rb+")
    except FileNotFoundError:
        return False
    with handle:
        end = handle.seek(0, 2)
        if end == 0:
            return False
        handle.seek(end - 1)
        if handle.read(1) == b"\n":
            return False
        pos = end
        while pos > 0:  # walk back to the last newline
            start = max(0, pos - chunk)
            handle.seek(start)
            newline = handle.read(pos - start).rfind(b"\n")
            if newline >= 0:
                handle.truncate(start + newline + 1)
                return True
            pos = start
        handle.truncate(0)
        return True


Plan = list[tuple[BatchItem, list[str]]]


def plan_items(items: list[BatchItem], distribution: Distribution, rng: random.Random,
               skip: set[str] | frozenset[str] = frozenset()) -> Plan:
    """Each prompt with its sampled toolsets, drawn for every item in order; ids in ``skip`` left out."""
    drawn = [(item, distribution.sample(rng)) for item in items]
    return [(item, toolsets) for item, toolsets in drawn if item.id not in skip]


def is_success(record: dict[str, Any]) -> bool:
    return record.get("error") is None and record.get("reason") != "interrupted"


def record_line(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False, default=str) + "\n"


class BatchRunner:
    def __init__(
        self,
        settings: Settings,
        distribution: Distribution,
        *,
        seed: int | None = None,
        workers: int = 1,
        provider_factory: Callable[[], ChatProvider] | None = None,
        progress: Callable[[str], None] | None = None,
        apply_limits: bool = True,
    ) -> None:
        self.settings = settings
        self.distribution = distribution
        self.rng = random.Random(seed)
        self.workers = max(1, workers)
        self.provider_factory = provider_factory
        self.progress = progress or (lambda _msg: None)
        self._lock = threading.Lock()
        limits = RateLimits.from_config(settings.config)
        #: shared by the worker threads when ``batch.requests_per_minute`` / ``max_concurrent_requests`` is
        #: set (``apply_limits=False``: the caller's provider_factory applies them, as a Ray worker's does)
        self.limiter = RequestLimiter(limits) if limits.active and apply_limits else None

    def _provider(self) -> ChatProvider | None:
        provider = self.provider_factory() if self.provider_factory else None
        if self.limiter is None:
            return provider
        from hermes.agent.session import make_provider

        limiter = self.limiter
        holder = f"thread-{threading.get_ident()}"
        inner = provider or make_provider(self.settings, self.settings.model())
        return LimitedProvider(inner, lambda: limiter.acquire(holder), lambda: limiter.release(holder))

    def run_one(self, item: BatchItem, toolsets: list[str]) -> dict[str, Any]:
        from hermes.agent.session import new_agent

        started = time.perf_counter()
        record: dict[str, Any] = {"id": item.id, "prompt": item.prompt, "distribution": self.distribution.name,
                                  "toolsets": toolsets}
        try:
            provider = self._provider()
            agent = new_agent(self.settings, Surface.ONESHOT, RecordingSink(), requested=toolsets,
                              provider=provider)
            try:
                result = agent.run_turn(item.prompt)
            finally:
                agent.close()
            record.update(
                tools=list(agent.tools), messages=agent.messages, final=result.final, reason=result.reason,
                iterations=result.iterations, tool_calls=result.tool_calls, error=None,
            )
        except HermesError as exc:
            record.update(final=None, reason="error", error=str(exc))
        record["seconds"] = round(time.perf_counter() - started, 3)
        return record

    def run(self, items: list[BatchItem], out: TextIO,
            skip: set[str] | frozenset[str] = frozenset()) -> tuple[int, int]:
        """Run every item not in ``skip``, writing one JSON line each; returns (succeeded, failed)."""
        plans = plan_items(items, self.distribution, self.rng, skip)
        total = len(plans)
        counts = {"ok": 0, "failed": 0}

        def work(index: int, item: BatchItem, toolsets: list[str]) -> None:
            record = self.run_one(item, toolsets)
            ok = is_success(record)
            with self._lock:
                out.write(record_line(record))
                out.flush()
                counts["ok" if ok else "failed"] += 1
                finished = counts["ok"] + counts["failed"]
                status = "ok" if ok else f"failed: {record.get('error') or record.get('reason')}"
                self.progress(f"[{finished}/{total}] {item.id} ({','.join(toolsets)}) {status} "
                              f"{record['seconds']:.1f}s")

        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            for future in [pool.submit(work, i, item, ts) for i, (item, ts) in enumerate(plans)]:
                future.result()
        return counts["ok"], counts["failed"]
