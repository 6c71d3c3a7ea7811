"""The unmodified upstream ``hermes-agent`` client against our Tool Gateway (issue 7; docs/gateway/compat.md).

The full check needs a separate venv with the upstream package (a few minutes to build, then cached):
``.ci/run`` builds or reuses it and sets ``HERMES_UPSTREAM_VENV``, so every CI run includes it; elsewhere
it is opt-in: set ``HERMES_UPSTREAM_VENV`` to one, or ``HERMES_UPSTREAM_COMPAT=1`` to let the test build
one with ``scripts/upstream_compat.sh --setup-only``. The other tests here always run: the server-side
routing the upstream Firecrawl SDK depends on, and that the check itself fails on a wrong venv.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urljoin

import httpx
import pytest

from compat.upstream_driver import run_check
from fakes.vendors import ServerThread, pages_app, searxng_app
from fakes.vendors.harness import GatewayHarness

ROOT = Path(__file__).resolve().parents[2]
SKIP_REASON = ("opt-in upstream compatibility check: set HERMES_UPSTREAM_VENV to a venv with hermes-agent==0.19.0, "
               "or HERMES_UPSTREAM_COMPAT=1 to build one (scripts/upstream_compat.sh; docs/gateway/compat.md)")


def _upstream_venv(workdir: Path) -> Path:
    given = os.environ.get("HERMES_UPSTREAM_VENV", "").strip()
    if given:
        return Path(given).expanduser()
    if os.environ.get("HERMES_UPSTREAM_COMPAT", "").strip() != "1":
        pytest.skip(SKIP_REASON)
    env = dict(os.environ)
    env.pop("HERMES_UPSTREAM_VENV", None)  # the script's default location, reused across runs
    done = subprocess.run([str(ROOT / "scripts" / "upstream_compat.sh"), "--setup-only"], capture_output=True,
                          text=True, env=env, timeout=1500)
    assert done.returncode == 0, f"building the upstream venv failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return Path(done.stdout.strip().splitlines()[-1].rpartition(": ")[2])


@pytest.mark.timeout(1800)
def test_upstream_client_logs_in_and_uses_every_relay(tmp_path: Path) -> None:
    venv = _upstream_venv(tmp_path)
    report = run_check(venv, tmp_path / "run")
    assert report.ok, "upstream compatibility check failed:\n" + "\n".join(report.failures()) + "\n\n" + report.render()


def test_the_check_fails_on_a_venv_without_the_upstream_client(tmp_path: Path) -> None:
    report = run_check(Path(sys.prefix), tmp_path)  # our own venv: no hermes-agent in it
    assert not report.ok
    assert report.failures()[0].startswith("upstream venv has hermes-agent and its SDKs")


# -- the routing firecrawl-py needs ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[GatewayHarness, ServerThread]]:
    with ServerThread(searxng_app()) as searx, ServerThread(pages_app()) as pages:
        home = tmp_path_factory.mktemp("gw")
        with GatewayHarness(home, firecrawl={"search": "searxng", "searxng_url": searx.url,
                                             "allow_loopback": True}) as gw:
            gw.user("fc")
            yield gw, pages


def test_firecrawl_sdk_drops_a_pinned_path_prefix() -> None:
    # firecrawl-py 4.x builds request URLs with urljoin(api_url + "/", "/v2/search"): the leading slash
    # makes the endpoint root-relative, so a "/relay/firecrawl" pin is lost. This is why its pin is bare.
    assert urljoin("http://gw:8787/relay/firecrawl/", "/v2/search") == "http://gw:8787/v2/search"


def test_firecrawl_paths_on_the_bare_host_reach_the_relay(gateway: tuple[GatewayHarness, ServerThread]) -> None:
    gw, pages = gateway
    auth = {"authorization": f"Bearer {gw.token('fc')}"}
    search = httpx.post(f"{gw.url}/v2/search", json={"query": "bare origin", "limit": 2}, headers=auth, timeout=30)
    assert search.status_code == 200, search.text
    assert [r["title"] for r in search.json()["data"]["web"]] == ["Searx 1: bare origin", "Searx 2: bare origin"]
    scrape = httpx.post(f"{gw.url}/v2/scrape", json={"url": f"{pages.url}/article", "formats": ["markdown"]},
                        headers=auth, timeout=30)
    assert scrape.status_code == 200, scrape.text
    assert "Main heading" in scrape.json()["data"]["markdown"]
    # the relay answers for its own paths: no token → its 401, an unknown /v2 path → its 404
    assert httpx.post(f"{gw.url}/v2/search", json={"query": "x"}, timeout=30).status_code == 401
    unknown = httpx.post(f"{gw.url}/v2/crawl", json={}, headers=auth, timeout=30)
    assert unknown.status_code == 404 and unknown.json()["code"] == "not_found"
    # the portal and the gateway's own API are unaffected
    assert httpx.get(f"{gw.url}/healthz", timeout=30).json() == {"status": "ok"}
    assert httpx.get(f"{gw.url}/api/usage", headers=auth, timeout=30).status_code == 200
