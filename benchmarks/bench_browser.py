"""Benchmark: the browser tools on local pages (headless Chromium through Playwright).

Usage::

    .venv/bin/python benchmarks/bench_browser.py              # 50 steps each
    .venv/bin/python benchmarks/bench_browser.py --steps 20

Part 1: per-step latency, p50 and p95 over ``--steps`` steps, of ``browser_navigate`` (which includes
its snapshot), ``browser_click`` (with its "what changed" answer) and ``browser_type``, each through a
ToolSession's dispatch as the agent calls them (the first navigation, which starts Chromium, is not
counted). Part 2: snapshot size in tokens (about 4 characters each) for five pages of different sizes,
against the raw HTML, Playwright's unbounded AI snapshot and what the model gets within the budget.
Goals (issue 15): navigate + snapshot p50 < 150 ms, click < 80 ms, every snapshot within the budget.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests"))

from hermes.tools.browser.snapshot import tokens_of  # noqa: E402
from tools.browser.pages import FORM, PageServer, big_page, html, standard_routes  # noqa: E402
from tools.browser.support import BrowserHarness, call, ref_named  # noqa: E402

COUNTER = """<!doctype html><title>Counter</title><p id=n>0</p>
<button onclick="const n = document.getElementById('n'); n.textContent = +n.textContent + 1">Add</button>"""


def article(paragraphs: int) -> str:
    body = "".join(f"<h2>Section {i}</h2><p>{'Some words of an article about browsers. ' * 12}"
                   f"<a href='/s{i}'>more</a></p>" for i in range(paragraphs))
    return f"<!doctype html><title>Article</title><nav><a href='/'>Home</a></nav><main>{body}</main>"


def quantiles(values: list[float]) -> str:
    values = sorted(values)
    p95 = values[min(len(values) - 1, int(len(values) * 0.95))]
    return f"p50 {statistics.median(values) * 1000:7.1f} ms   p95 {p95 * 1000:7.1f} ms"


def timed(session: object, name: str, **args: object) -> tuple[float, dict[str, object]]:
    start = time.perf_counter()
    result = call(session, name, **args)  # type: ignore[arg-type]
    took = time.perf_counter() - start
    assert "error" not in result, result
    return took, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=50)
    args = parser.parse_args()
    pages_of_sizes = {"form (small)": FORM, "counter": COUNTER, "article 20 sections": article(20),
                      "article 200 sections": article(200), "list 1 MB": big_page()}
    routes = standard_routes()
    routes["/counter"] = html(COUNTER)
    for i, (_label, body) in enumerate(pages_of_sizes.items()):
        routes[f"/size{i}"] = html(body)
    server = PageServer(routes).start()
    home = Path(tempfile.mkdtemp(prefix="bench-browser-"))
    import os

    os.environ["HERMES_HOME"] = str(home)
    harness = BrowserHarness(home, server)
    harness.configure("browser:\n  allow_private_urls: true\n")
    session = harness.session()
    try:
        call(session, "browser_navigate", url=server.url("/form"))  # starts Chromium: not counted
        navigate = [timed(session, "browser_navigate", url=server.url("/counter"))[0] for _ in range(args.steps)]
        page = call(session, "browser_snapshot")["snapshot"]
        add = ref_named(str(page), "button", "Add")
        click = [timed(session, "browser_click", ref=add)[0] for _ in range(args.steps)]
        _took, form = timed(session, "browser_navigate", url=server.url("/form"))
        name = ref_named(str(form["snapshot"]), "textbox", "Name")
        typing = [timed(session, "browser_type", ref=name, text=f"step {i}")[0] for i in range(args.steps)]
        print(f"per step over {args.steps} steps (loopback pages)")
        print(f"  navigate + snapshot  {quantiles(navigate)}")
        print(f"  click + change       {quantiles(click)}")
        print(f"  type                 {quantiles(typing)}")
        print()
        print(f"{'page':24} {'raw HTML':>10} {'full tree':>10} {'model gets':>10}  pages  (tokens)")
        for i, (label, body) in enumerate(pages_of_sizes.items()):
            _took, shown = timed(session, "browser_navigate", url=server.url(f"/size{i}"))
            from hermes.tools.asyncbridge import run_sync
            from hermes.tools.browser.backend import hub

            tab = hub().tabs[session.task_id]
            raw = run_sync(tab.page.aria_snapshot(mode="ai"))
            got = tokens_of(str(shown["snapshot"]))
            print(f"{label:24} {tokens_of(body):>10,} {tokens_of(raw):>10,} {got:>10,}  {shown.get('pages', 1):>5}")
    finally:
        harness.shutdown()
        server.stop()


if __name__ == "__main__":
    main()
