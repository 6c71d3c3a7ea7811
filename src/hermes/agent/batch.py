"""Batch runs: many prompts, sampled toolsets, one trajectory per prompt (requirement REG-10).

Input is JSON Lines, one object per prompt with a ``prompt`` field and an optional ``id``. Output is
JSON Lines too, one trajectory per line, written and flushed as each prompt finishes, so a crash keeps
every finished line and ``--resume`` skips ids already written.
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
    ) -> None:
        self.settings = settings
        self.distribution = distribution
        self.rng = random.Random(seed)
        self.workers = max(1, workers)
        self.provider_factory = provider_factory
        self.progress = progress or (lambda _msg: None)
        self._lock = threading.Lock()

    def run_one(self, item: BatchItem, toolsets: list[str]) -> dict[str, Any]:
        from hermes.agent.session import new_agent

        started = time.perf_counter()
        record: dict[str, Any] = {"id": item.id, "prompt": item.prompt, "distribution": self.distribution.name,
                                  "toolsets": toolsets}
        try:
            provider = self.provider_factory() if self.provider_factory else None
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

    def run(self, items: list[BatchItem], out: TextIO) -> tuple[int, int]:
        """Run every item, writing one JSON line each; returns (succeeded, failed)."""
        plans = [(item, self.distribution.sample(self.rng)) for item in items]
        total = len(plans)
        counts = {"ok": 0, "failed": 0}

        def work(index: int, item: BatchItem, toolsets: list[str]) -> None:
            record = self.run_one(item, toolsets)
            ok = record.get("error") is None and record.get("reason") != "interrupted"
            with self._lock:
                out.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
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
