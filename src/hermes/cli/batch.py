"""``hermes batch FILE.jsonl --distribution NAME``: run prompts with sampled toolsets (requirement REG-10).

``--ray [ADDRESS]`` runs the same prompts as tasks on a Ray cluster (:mod:`hermes.agent.batch_ray`).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from hermes.cli.common import add_model_flags

if TYPE_CHECKING:
    from hermes.agent.batch import BatchItem
    from hermes.config.settings import Settings
    from hermes.tools.distributions import Distribution


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", nargs="?", help="JSON Lines input: one {\"prompt\": ..., \"id\": ...} per line")
    parser.add_argument("--distribution", "-d", default="default", help="toolset distribution (default: default)")
    parser.add_argument("--output", "-o", help="trajectories file (default: FILE with .trajectories.jsonl)")
    parser.add_argument("--workers", "-w", type=int,
                        help="prompts run in parallel (default 1; with --ray: as many as the cluster's CPUs allow)")
    parser.add_argument("--seed", type=int, help="random seed for reproducible toolset sampling")
    parser.add_argument("--resume", action="store_true", help="skip ids already in the output file")
    parser.add_argument("--ray", nargs="?", const="", metavar="ADDRESS",
                        help="run on a Ray cluster: ADDRESS (host:port of its head), or a local one when omitted")
    parser.add_argument("--retries", type=int,
                        help="with --ray: reruns of a prompt whose worker or node died (default batch.retries, 2)")
    parser.add_argument("--list-distributions", action="store_true", help="list the distributions and exit")
    add_model_flags(parser)


def run(args: argparse.Namespace) -> int:
    import sys

    from hermes.agent.batch import BatchRunner, done_ids, read_items, repair_tail
    from hermes.cli.common import eprint, export_dotenv, load_settings
    from hermes.errors import ConfigError
    from hermes.tools.distributions import load_distributions

    settings = load_settings(args)
    dists = load_distributions(settings.get("batch.distributions"))
    if args.list_distributions:
        for d in dists.values():
            mix = ", ".join(f"{k} {v:.0%}" for k, v in d.toolsets.items())
            print(f"{d.name:14} {d.description}\n{'':14} {mix}")
        return 0
    if not args.file:
        raise ConfigError("give the JSON Lines file of prompts: hermes batch FILE.jsonl")
    dist = dists.get(args.distribution)
    if dist is None:
        raise ConfigError(f"unknown distribution {args.distribution!r}; known: {', '.join(sorted(dists))}")
    export_dotenv(settings)
    from hermes.agent.model_choice import choose_model
    from hermes.errors import ModelNotConfigured

    choice = choose_model(settings, local_fallback=False)  # fail before starting when nothing can run
    for note in choice.notes:
        eprint(note)
    if choice.model is None:
        raise ModelNotConfigured(choice.error or "no model endpoint is configured")
    source = Path(args.file)
    output = Path(args.output) if args.output else source.with_suffix(".trajectories.jsonl")
    items = list(read_items(source))
    skip: set[str] = set()
    if args.resume:
        if repair_tail(output):
            eprint(f"batch: removed an unfinished last line from {output}; its prompt runs again")
        skip = done_ids(output)
    elif output.exists():
        raise ConfigError(f"{output} exists; pass --resume to continue it or --output to write elsewhere")
    for name in ("workers", "retries"):
        if getattr(args, name) is not None and getattr(args, name) < (1 if name == "workers" else 0):
            raise ConfigError(f"--{name} must be at least {1 if name == 'workers' else 0}")
    if args.ray is not None:
        ok, failed = _run_on_ray(args, settings, dist, items, skip, output)
    else:
        workers = args.workers or 1
        todo = len([i for i in items if i.id not in skip])
        eprint(f"batch: {todo} prompts, distribution {dist.name}, {workers} worker(s) → {output}")
        runner = BatchRunner(settings, dist, seed=args.seed, workers=workers, progress=eprint)
        with output.open("a", encoding="utf-8") as out:
            ok, failed = runner.run(items, out, skip)
    eprint(f"batch: {ok} succeeded, {failed} failed")
    sys.stdout.flush()
    return 0 if failed == 0 else 1


def _run_on_ray(args: argparse.Namespace, settings: Settings, dist: Distribution, items: list[BatchItem],
                skip: set[str], output: Path) -> tuple[int, int]:
    import sys

    from hermes.agent.batch_progress import BatchProgress
    from hermes.agent.batch_ray import RayBatchRunner, import_ray
    from hermes.cli.common import eprint

    import_ray(local=not args.ray)  # no Ray installed: say so before the output file is created
    runner = RayBatchRunner(settings, dist, address=args.ray or None, seed=args.seed, workers=args.workers,
                            retries=args.retries)
    plans = runner.plan(items, skip)
    where = f"the Ray cluster at {args.ray}" if args.ray else "a local Ray cluster"
    eprint(f"batch: {len(plans)} prompts, distribution {dist.name}, on {where} → {output}")
    progress = BatchProgress(len(plans), sys.stderr)
    with output.open("a", encoding="utf-8") as out:
        try:
            return runner.run(plans, out, progress)
        except KeyboardInterrupt:
            progress.close()
            eprint(f"batch: interrupted; finished prompts are in {output}: run again with --resume to go on")
            raise
