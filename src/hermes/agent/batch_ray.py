"""``hermes batch --ray``: the batch runner's prompts as tasks on a Ray cluster (requirement REG-10).

The driver (the ``hermes batch`` process) draws every prompt's toolsets exactly as the single-process
runner does, submits one Ray task per prompt and keeps at most ``workers`` of them in flight. Each task
rebuilds the run's settings on its node (:class:`WorkerSettings`), runs the prompt with
:meth:`BatchRunner.run_one` and returns the trajectory; the driver alone writes the JSON Lines file,
one line as each task finishes, so a resumed run (``--resume``) never writes an id twice.

* **Concurrency per node**: a task reserves ``batch.cpus_per_prompt`` Ray CPUs (default 1), so a node
  with 4 CPUs runs at most 4 prompts at once.
* **Model rate limits across the cluster**: ``batch.requests_per_minute`` and
  ``batch.max_concurrent_requests`` are enforced by one :class:`RequestLimiter` running as a Ray actor
  that every worker's model calls go through.
* **Failures**: a task whose worker process or node died (or that raised past the runner) is run again,
  at most ``batch.retries`` times (``--retries``); every failed attempt is listed in the record's
  ``failures`` and ``attempts`` counts the runs. Errors the model reported are recorded as in a
  single-process run (the provider has already retried transient ones).

``ray`` is an optional extra and is imported only here, inside functions. Without an address a local
cluster is started that listens on 127.0.0.1 only.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from hermes.agent.batch import BatchItem, BatchRunner, Plan, is_success, plan_items, record_line
from hermes.agent.batch_limits import LimitedProvider, RateLimits, RequestLimiter
from hermes.agent.batch_progress import BatchProgress
from hermes.config.dotenv import Environment, read_dotenv
from hermes.config.paths import HermesPaths
from hermes.config.schema import SCHEMA
from hermes.config.settings import Overrides, Settings
from hermes.config.yamlfile import ConfigFile
from hermes.errors import ConfigError
from hermes.tools.distributions import Distribution

#: Ray's own switch (named for Windows and macOS) that keeps a node on 127.0.0.1 instead of the machine's
#: outward address; set for the local cluster, which nothing outside this machine needs to reach
RAY_LOOPBACK_SWITCH = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
#: variables of the driver's environment that travel to the workers: credentials and endpoints
_SHIPPED_ENV = re.compile(r"^(OPENAI|NOUS|OPENROUTER|ANTHROPIC)_|_(API_KEY|KEY|TOKEN|SECRET|BASE_URL)$")
_RAY_INSTALL_HINT = "hermes batch --ray needs Ray: pip install 'hermes[ray]' (the `ray` extra)"


@dataclass(frozen=True)
class WorkerSettings:
    """What a worker needs to rebuild the driver's :class:`Settings`, as plain data."""

    home: str
    config: dict[str, Any]
    dotenv: dict[str, str] = field(repr=False)
    env: dict[str, str] = field(repr=False)
    overrides: Overrides

    @classmethod
    def capture(cls, settings: Settings) -> WorkerSettings:
        config = json.loads(json.dumps(settings.config.data, default=str))
        env = {k: v for k, v in os.environ.items()  # Ray's own (its token) stay with Ray
               if v and _SHIPPED_ENV.search(k) and k != "HERMES_HOME" and not k.startswith("RAY_")}
        return cls(str(settings.paths.home), config, read_dotenv(settings.paths.env), env, settings.overrides)

    def settings(self) -> Settings:
        paths = HermesPaths(Path(self.home))
        return Settings(paths, ConfigFile(paths.config, self.config), Environment({**os.environ, **self.env},
                        self.dotenv), self.overrides)


def run_prompt(snapshot: WorkerSettings, distribution: Distribution, item: BatchItem, toolsets: list[str],
               holder: str, limiter: Any | None) -> dict[str, Any]:
    """The Ray task: one prompt on whichever node Ray chose; returns its trajectory record."""
    import ray

    settings = snapshot.settings()
    factory = None
    if limiter is not None:
        from hermes.agent.session import make_provider

        def factory() -> LimitedProvider:
            return LimitedProvider(make_provider(settings, settings.model()),
                                   lambda: ray.get(limiter.acquire.remote(holder)),
                                   lambda: limiter.release.remote(holder))

    runner = BatchRunner(settings, distribution, provider_factory=factory, apply_limits=False)
    record = runner.run_one(item, toolsets)
    record["worker"] = {"node": ray.get_runtime_context().get_node_id(), "pid": os.getpid()}
    return record


def import_ray(local: bool) -> Any:
    """Ray, imported now; for a local cluster first made loopback-only with a token of its own.

    Ray reads these variables when it is imported, and the local cluster's processes inherit them. The
    token lives only in their environments: Ray would otherwise write one to ``~/.ray/auth_token``.
    """
    if local:
        os.environ.setdefault(RAY_LOOPBACK_SWITCH, "0")
        if not any(os.environ.get(k) for k in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH")):
            import secrets

            os.environ["RAY_AUTH_MODE"] = "token"
            os.environ["RAY_AUTH_TOKEN"] = secrets.token_hex(32)
    try:
        import ray
    except ImportError:
        raise ConfigError(_RAY_INSTALL_HINT) from None
    return ray


@dataclass
class _Attempt:
    item: BatchItem
    toolsets: list[str]
    number: int = 1
    failures: list[str] = field(default_factory=list)
    started: float = field(default_factory=time.perf_counter)

    @property
    def holder(self) -> str:
        return f"{self.item.id}#{self.number}"


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:300]}"


class RayBatchRunner:
    """Runs a batch on a Ray cluster: ``address`` None starts a local one."""

    def __init__(self, settings: Settings, distribution: Distribution, *, address: str | None = None,
                 seed: int | None = None, workers: int | None = None, retries: int | None = None) -> None:
        import random

        self.settings = settings
        self.distribution = distribution
        self.address = address
        self.rng = random.Random(seed)
        self.workers = workers
        self.retries = SCHEMA.read(settings.config, "batch.retries") if retries is None else retries
        self.cpus_per_prompt: float = SCHEMA.read(settings.config, "batch.cpus_per_prompt")
        self.limits = RateLimits.from_config(settings.config)
        self.concurrency = 0
        self.limiter_stats: dict[str, int] = {}

    def connect(self) -> Any:
        ray = import_ray(self.address is None)
        options: dict[str, Any] = {"log_to_driver": False, "configure_logging": False,
                                   "namespace": "hermes-batch"}
        if self.address is None:
            cpus = self.workers or os.cpu_count() or 1
            ray.init(address="local", num_cpus=max(1, round(cpus * self.cpus_per_prompt)),
                     include_dashboard=False, **options)
        else:
            try:
                ray.init(address=self.address, **options)
            except Exception as exc:  # Ray raises ConnectionError, its own errors, RuntimeError, ValueError
                raise ConfigError(f"cannot join the Ray cluster at {self.address}: {_short(exc)}") from None
        return ray

    def plan(self, items: list[BatchItem], skip: set[str] | frozenset[str] = frozenset()) -> Plan:
        """The prompts to run with their toolsets, drawn as the single-process runner draws them."""
        return plan_items(items, self.distribution, self.rng, skip)

    def run(self, plans: Plan, out: TextIO, progress: BatchProgress) -> tuple[int, int]:
        """Run ``plans`` on the cluster, one JSON line each as it finishes; returns (succeeded, failed)."""
        ray = self.connect()
        try:
            return self._run(ray, plans, out, progress)
        finally:
            ray.shutdown()

    def _run(self, ray: Any, plans: Plan, out: TextIO, progress: BatchProgress) -> tuple[int, int]:
        cpus = float(ray.cluster_resources().get("CPU", 1.0))
        self.concurrency = self.workers or max(1, int(cpus / self.cpus_per_prompt))
        limiter = None
        if self.limits.active:
            limiter = ray.remote(RequestLimiter).options(
                num_cpus=0, max_concurrency=max(32, 2 * self.concurrency)).remote(self.limits)
        task = ray.remote(run_prompt).options(num_cpus=self.cpus_per_prompt, max_retries=0,
                                              retry_exceptions=False)
        snapshot = ray.put(WorkerSettings.capture(self.settings))
        waiting: deque[_Attempt] = deque(_Attempt(item, toolsets) for item, toolsets in plans)
        running: dict[Any, _Attempt] = {}
        counts = {"ok": 0, "failed": 0}
        while waiting or running:
            while waiting and len(running) < self.concurrency:
                attempt = waiting.popleft()
                ref = task.remote(snapshot, self.distribution, attempt.item, attempt.toolsets, attempt.holder,
                                  limiter)
                running[ref] = attempt
            ready, _ = ray.wait(list(running), num_returns=1)
            for ref in ready:
                attempt = running.pop(ref)
                try:
                    record: dict[str, Any] = ray.get(ref)
                except ray.exceptions.RayError as exc:
                    if limiter is not None:
                        limiter.release_holder.remote(attempt.holder)
                    attempt.failures.append(_short(exc))
                    if attempt.number <= self.retries:
                        progress.retry(f"retrying {attempt.item.id} (attempt {attempt.number + 1} of "
                                       f"{self.retries + 1}): {attempt.failures[-1]}")
                        waiting.appendleft(_Attempt(attempt.item, attempt.toolsets, attempt.number + 1,
                                                    attempt.failures, attempt.started))
                        continue
                    record = {"id": attempt.item.id, "prompt": attempt.item.prompt,
                              "distribution": self.distribution.name, "toolsets": attempt.toolsets,
                              "final": None, "reason": "error",
                              "error": f"gave up after {attempt.number} attempts: {attempt.failures[-1]}",
                              "seconds": round(time.perf_counter() - attempt.started, 3)}
                record["attempts"] = attempt.number
                record["failures"] = attempt.failures
                ok = is_success(record)
                out.write(record_line(record))
                out.flush()
                counts["ok" if ok else "failed"] += 1
                status = "ok" if ok else f"failed: {record.get('error') or record.get('reason')}"
                progress.record(ok, f"{attempt.item.id} ({','.join(attempt.toolsets)}) {status} "
                                    f"{record.get('seconds', 0.0):.1f}s")
        if limiter is not None:
            self.limiter_stats = ray.get(limiter.stats.remote())
        progress.close()
        return counts["ok"], counts["failed"]
