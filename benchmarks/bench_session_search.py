"""Benchmark: ``SessionStore.search`` (top-20) over a generated store of N messages.

Usage::

    .venv/bin/python benchmarks/bench_session_search.py                 # 1,000,000 messages
    .venv/bin/python benchmarks/bench_session_search.py --messages 100000 --queries 300
    .venv/bin/python benchmarks/bench_session_search.py --keep /tmp/bench.db   # keep the store
    .venv/bin/python benchmarks/bench_session_search.py --reuse /tmp/bench.db  # time an existing one

The store is built with the real schema (``hermes.store.connect`` runs the migrations), then filled
with ``executemany`` in big transactions: sessions of 10–80 messages spread over a year, user /
assistant / tool messages whose words follow a Zipf distribution over a 60,000-word vocabulary (a
few hundred common English words first, then generated words), so term frequencies look like real
text: a handful of words are in most messages, most words are rare. ``data`` holds the message JSON
as the store keeps it, so the file size is realistic too.

It reports p50/p95/max latency per query kind and for the whole mix (the goal: p95 < 50 ms for the
top 20 of 1,000,000 messages), plus the database size and the full-text index size per message.
Generating one million messages takes a few minutes; it is a benchmark, not a test.
"""

from __future__ import annotations

import argparse
import bisect
import itertools
import json
import random
import sqlite3
import statistics
import string
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from hermes.store import SessionStore, connect  # noqa: E402

_COMMON_WORDS = (
    "the of and to a in is you that it for on with as this be are was have not or at by from but"
    " can will if we what your my an all so do there about which one has they more when would"
    " like just use get file code run error function please need make time work new data how test"
    " should could also then here set now first see some look value line want try change output"
    " python server config update any know because other into only check list fix way name these"
    " build using issue add version path found call result problem user example command type return"
    " string number thanks project help good does message model default log support without after"
    " still sure case option different before same script access install process key query table"
    " request response database write read create delete page system network client api model"
    " memory time date week today yesterday thing next last because really maybe think right"
)
COMMON = _COMMON_WORDS.split()
SURFACES = ("cli", "cli", "cli", "cli", "tui", "oneshot", "cron", "messaging")
ROLES = ("user", "assistant", "assistant", "tool")
YEAR = 365 * 86400.0


def vocabulary(size: int, rng: random.Random) -> list[str]:
    """Common words first, then pronounceable generated words (distinct, 4–11 letters)."""
    words = list(dict.fromkeys(COMMON))
    seen = set(words)
    consonants, vowels = "bcdfghjklmnprstvwz", "aeiou"
    while len(words) < size:
        length = rng.randint(2, 5)
        word = "".join(rng.choice(consonants) + rng.choice(vowels) for _ in range(length))
        if rng.random() < 0.3:
            word += rng.choice(consonants)
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


def zipf_cum_weights(size: int, exponent: float = 1.07) -> list[float]:
    return list(itertools.accumulate(1.0 / (rank**exponent) for rank in range(1, size + 1)))


def message_text(rng: random.Random, words: list[str], cum: list[float], role: str) -> str:
    mean = 60 if role == "tool" else 22
    count = max(2, min(400, int(rng.lognormvariate(0, 0.7) * mean)))
    chosen = rng.choices(words, cum_weights=cum, k=count)
    if role == "tool":
        return json.dumps({"output": " ".join(chosen), "exit_code": rng.choice((0, 0, 0, 1))})
    text = " ".join(chosen)
    return text[:1].upper() + text[1:] + rng.choice((".", "?", ".", "!"))


def generate(path: Path, total: int, seed: int, vocab_size: int) -> None:
    """Fill a fresh store at ``path`` with ``total`` messages."""
    rng = random.Random(seed)
    words = vocabulary(vocab_size, rng)
    cum = zipf_cum_weights(len(words))
    conn = connect(path)  # real schema through the migrations
    conn.execute("PRAGMA synchronous = OFF")
    conn.execute("PRAGMA cache_size = -262144")
    start = time.time() - YEAR
    made, session_no, batch_size = 0, 0, 50_000
    sessions: list[tuple[Any, ...]] = []
    messages: list[tuple[Any, ...]] = []
    began = time.perf_counter()

    def flush() -> None:
        conn.execute("BEGIN")
        conn.executemany(
            "INSERT INTO sessions (id, created_at, updated_at, surface, model, title, message_count,"
            " toolsets, tools, meta) VALUES (?, ?, ?, ?, 'bench-model', ?, ?, '[]', '[]', '{}')", sessions)
        conn.executemany(
            "INSERT INTO messages (session_id, seq, role, created_at, data, text) VALUES (?, ?, ?, ?, ?, ?)",
            messages)
        conn.execute("COMMIT")
        sessions.clear()
        messages.clear()

    while made < total:
        count = min(rng.randint(10, 80), total - made)
        t0 = start + YEAR * made / total
        sid = time.strftime("%Y%m%d-%H%M%S", time.gmtime(t0)) + f"-{session_no:06x}"
        session_no += 1
        title = " ".join(rng.choices(words[:3000], k=3)) if rng.random() < 0.5 else None
        sessions.append((sid, t0, t0 + count * 30, rng.choice(SURFACES), title, count))
        for seq in range(count):
            role = "user" if seq % 2 == 0 else rng.choice(ROLES[1:])
            text = message_text(rng, words, cum, role)
            data = json.dumps({"role": role, "content": text}, ensure_ascii=False)
            messages.append((sid, seq, role, t0 + seq * 30, data, text))
        made += count
        if len(messages) >= batch_size:
            flush()
            rate = made / (time.perf_counter() - began)
            print(f"\r  generated {made:,} / {total:,} messages ({rate:,.0f}/s)", end="", file=sys.stderr)
    if messages:
        flush()
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    print(f"\r  generated {made:,} messages in {time.perf_counter() - began:.0f} s" + " " * 20, file=sys.stderr)


def index_bytes(conn: sqlite3.Connection) -> int:
    """Bytes used by the FTS5 shadow tables (dbstat when compiled in, else the stored blobs)."""
    try:
        row = conn.execute(
            "SELECT sum(pgsize) FROM dbstat WHERE name LIKE 'messages_fts%'").fetchone()
        return int(row[0] or 0)
    except sqlite3.Error:
        total = 0
        for sql in ("SELECT sum(length(block)) FROM messages_fts_data",
                    "SELECT sum(length(sz)) FROM messages_fts_docsize",
                    "SELECT count(*) * 16 FROM messages_fts_idx"):
            total += int(conn.execute(sql).fetchone()[0] or 0)
        return total


def build_queries(path: Path, count: int, seed: int, vocab_size: int) -> list[tuple[str, str, dict[str, Any]]]:
    """A mix of query kinds: ``(kind, query, filters)``."""
    rng = random.Random(seed + 1)
    words = vocabulary(vocab_size, random.Random(seed))
    conn = sqlite3.connect(str(path))
    max_id = int(conn.execute("SELECT max(id) FROM messages").fetchone()[0])
    newest = float(conn.execute("SELECT max(created_at) FROM messages").fetchone()[0])

    def sample_text() -> list[str]:
        row = conn.execute("SELECT text FROM messages WHERE id = ?", (rng.randint(1, max_id),)).fetchone()
        return [w.strip(string.punctuation + '{}":') for w in (row[0] if row else "").split() if len(w) > 3]

    def band(lo: int, hi: int) -> str:
        return words[rng.randrange(lo, min(hi, len(words)))]

    kinds: list[tuple[str, float, Callable[[], tuple[str, dict[str, Any]]]]] = [
        ("rare word", 0.20, lambda: (band(5000, vocab_size), {})),
        ("mid word", 0.20, lambda: (band(300, 5000), {})),
        ("common word", 0.10, lambda: (band(20, 300), {})),
        ("two words", 0.20, lambda: (f"{band(100, 3000)} {band(300, 20000)}", {})),
        ("phrase", 0.10, lambda: (_phrase(sample_text(), rng), {})),
        ("prefix", 0.05, lambda: (band(1000, 20000)[:4] + "*", {})),
        ("filtered", 0.10, lambda: (band(300, 8000), {"surface": "cron", "since": newest - 30 * 86400})),
        ("no match", 0.05, lambda: ("zzqxv" + str(rng.randint(0, 999)), {})),
    ]
    cum = list(itertools.accumulate(k[1] for k in kinds))
    out = []
    for _ in range(count):
        kind = kinds[bisect.bisect(cum, rng.random() * cum[-1])]
        query, filters = kind[2]()
        out.append((kind[0], query, filters))
    conn.close()
    return out


def _phrase(tokens: list[str], rng: random.Random) -> str:
    if len(tokens) < 2:
        return "error message"
    i = rng.randrange(len(tokens) - 1)
    return f'"{tokens[i]} {tokens[i + 1]}"'


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def run(path: Path, queries: list[tuple[str, str, dict[str, Any]]], limit: int) -> dict[str, list[float]]:
    timings: dict[str, list[float]] = {}
    with SessionStore(path) as store:
        for _, query, filters in queries[:20]:  # warm the page cache like a running process would
            store.search(query, limit=limit, **filters)
        for kind, query, filters in queries:
            t0 = time.perf_counter()
            store.search(query, limit=limit, **filters)
            timings.setdefault(kind, []).append((time.perf_counter() - t0) * 1000)
    return timings


def report(path: Path, timings: dict[str, list[float]]) -> None:
    conn = sqlite3.connect(str(path))
    n = int(conn.execute("SELECT count(*) FROM messages").fetchone()[0])
    db = path.stat().st_size + sum(p.stat().st_size for p in path.parent.glob(path.name + "-*") if p.exists())
    fts = index_bytes(conn)
    conn.close()
    print(f"\nstore: {n:,} messages, {path}")
    print(f"database: {db / 1e6:,.1f} MB = {db / n:,.0f} bytes/message; "
          f"full-text index: {fts / 1e6:,.1f} MB = {fts / n:,.0f} bytes/message")
    print(f"\n{'query kind':<14}{'n':>6}{'p50 ms':>10}{'p95 ms':>10}{'max ms':>10}")
    every: list[float] = []
    for kind, values in timings.items():
        every.extend(values)
        print(f"{kind:<14}{len(values):>6}{statistics.median(values):>10.2f}{pct(values, 95):>10.2f}"
              f"{max(values):>10.2f}")
    p95 = pct(every, 95)
    print(f"{'all':<14}{len(every):>6}{statistics.median(every):>10.2f}{p95:>10.2f}{max(every):>10.2f}")
    print(f"\np95 {p95:.2f} ms: {'PASS' if p95 < 50 else 'FAIL'} (goal < 50 ms for top-20 over 1,000,000 messages)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--messages", "-n", type=int, default=1_000_000, help="messages to generate")
    parser.add_argument("--queries", "-q", type=int, default=500, help="timed queries")
    parser.add_argument("--limit", type=int, default=20, help="results per query (top-N)")
    parser.add_argument("--vocab", type=int, default=60_000, help="vocabulary size")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep", type=Path, help="build the store at this path and keep it")
    parser.add_argument("--reuse", type=Path, help="time an existing store built by --keep")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="hermes-bench-") as tmp:
        path = args.reuse or args.keep or Path(tmp) / "state.db"
        if args.reuse and not args.reuse.is_file():
            parser.error(f"{args.reuse} does not exist; build one with --keep first")
        if not args.reuse:
            if path.exists():
                parser.error(f"{path} exists; use --reuse to time it or remove it first")
            print(f"generating {args.messages:,} messages into {path} ...", file=sys.stderr)
            generate(path, args.messages, args.seed, args.vocab)
        queries = build_queries(path, args.queries, args.seed, args.vocab)
        report(path, run(path, queries, args.limit))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
