"""``hermes batch FILE.jsonl --distribution NAME``: run prompts with sampled toolsets (requirement REG-10)."""

from __future__ import annotations

import argparse

from hermes.cli.common import add_model_flags


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", nargs="?", help="JSON Lines input: one {\"prompt\": ..., \"id\": ...} per line")
    parser.add_argument("--distribution", "-d", default="default", help="toolset distribution (default: default)")
    parser.add_argument("--output", "-o", help="trajectories file (default: FILE with .trajectories.jsonl)")
    parser.add_argument("--workers", "-w", type=int, default=1, help="prompts run in parallel (default 1)")
    parser.add_argument("--seed", type=int, help="random seed for reproducible toolset sampling")
    parser.add_argument("--resume", action="store_true", help="skip ids already in the output file")
    parser.add_argument("--list-distributions", action="store_true", help="list the distributions and exit")
    add_model_flags(parser)


def run(args: argparse.Namespace) -> int:
    import sys
    from pathlib import Path

    from hermes.agent.batch import BatchRunner, done_ids, read_items
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
    if args.resume:
        skip = done_ids(output)
        items = [i for i in items if i.id not in skip]
    elif output.exists():
        raise ConfigError(f"{output} exists; pass --resume to continue it or --output to write elsewhere")
    eprint(f"batch: {len(items)} prompts, distribution {dist.name}, {args.workers} worker(s) → {output}")
    runner = BatchRunner(settings, dist, seed=args.seed, workers=args.workers, progress=eprint)
    with output.open("a", encoding="utf-8") as out:
        ok, failed = runner.run(items, out)
    eprint(f"batch: {ok} succeeded, {failed} failed")
    sys.stdout.flush()
    return 0 if failed == 0 else 1
