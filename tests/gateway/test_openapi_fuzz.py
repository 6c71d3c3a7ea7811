"""Schemathesis over the gateway's own OpenAPI document, against the real server (uvicorn on 127.0.0.1).

The document is the one the running app serves (``GET /openapi.json``, built by
:mod:`hermes.toolgateway.openapi`). For every operation in it, Hypothesis generates valid requests
(positive mode) and invalid ones (negative mode), each sent with one of several credentials: a paid
user's token, a free user's token, the admin token, a revoked token, a garbage bearer, or none. Every
response must not be a 5xx, must use a status code the document declares for the operation (except the
few in ``UNDECLARED``, answers given on purpose that the document does not list yet), and must match the
declared content type and schema where one is declared.

The vendors behind the relays are fakes on loopback (Firecrawl for search and scrape, Krea, OpenAI
Images for the shared origin's image API), so no request leaves the machine. Operations of relays this
server does not run (a label the schema lists but the config does not enable) are skipped; the rest stay
bounded: a few examples per operation and mode, derandomized so a run is reproducible, seconds in total.
``HERMES_FUZZ_SCALE=40 HERMES_FUZZ_RANDOM=1`` runs a deeper, random hunt (minutes).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)
from schemathesis.core.failures import FailureGroup
from schemathesis.generation import GenerationMode

from fakes.vendors import FakeFirecrawl, ServerThread
from fakes.vendors.harness import GatewayHarness, gateway_config
from fakes.vendors.krea import FakeKrea
from fakes.vendors.openai_images import FakeOpenAIImages
from hermes.toolgateway.openapi import schema as openapi_schema

CREDENTIALS = ("paid", "free", "admin", "revoked", "garbage", "none")
CHECKS = [not_a_server_error, content_type_conformance, response_schema_conformance]
#: statuses the server gives on purpose that the document does not list yet (reported to the schema's owners)
UNDECLARED: dict[tuple[str, str], set[int]] = {}
#: examples per operation and mode (times HERMES_FUZZ_SCALE)
_SCALE = max(1, int(os.environ.get("HERMES_FUZZ_SCALE", "1") or 1))
EXAMPLES = {GenerationMode.POSITIVE: 15 * _SCALE, GenerationMode.NEGATIVE: 10 * _SCALE}


def _operation_labels() -> list[tuple[str, str]]:
    """``(METHOD, path)`` of every operation the document has (it depends on no runtime state)."""
    doc = openapi_schema(gateway_config(Path("/nonexistent-hermes-home")))
    return [(method.upper(), path) for path, item in doc["paths"].items() for method in item
            if method in ("get", "post", "put", "patch", "delete")]


@dataclass
class Live:
    gw: GatewayHarness
    doc: dict[str, Any]  # the document the running server serves
    api: Any  # the schemathesis schema loaded from it
    headers: dict[str, dict[str, str]]
    relays: set[str]


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    firecrawl, krea, images = FakeFirecrawl(api_key="fc-op"), FakeKrea(key="krea-op"), FakeOpenAIImages(key="sk-op")
    with (ServerThread(firecrawl.app) as fc_server, ServerThread(krea.app) as krea_server,
          ServerThread(images.app) as images_server):
        gw = GatewayHarness(tmp_path_factory.mktemp("fuzz"),
                            firecrawl={"search": "firecrawl", "scrape": "firecrawl", "firecrawl_url": fc_server.url,
                                       "firecrawl_api_key": "fc-op"},
                            rate_limit={"per_second": 0, "burst": 0},
                            **{"krea.url": krea_server.url, "krea.api_key": "krea-op",
                               "tool.url": images_server.url, "tool.api_key": "sk-op"})
        with gw:
            gw.user("paid-user")
            gw.user("free-user", plan="free")
            revoked = gw.token("paid-user")
            gw.side.accounts.revoke(revoked)
            bearer = {"paid": gw.token("paid-user"), "free": gw.token("free-user"), "admin": gw.side.admin_token,
                      "revoked": revoked, "garbage": "not.a-token"}
            headers = {name: {"Authorization": f"Bearer {token}"} for name, token in bearer.items()}
            headers["none"] = {}
            doc = httpx.get(f"{gw.url}/openapi.json", timeout=30).json()
            ready = httpx.get(f"{gw.url}/readyz", timeout=30).json()
            yield Live(gw, doc, schemathesis.openapi.from_dict(doc), headers,
                       {str(r.get("label")) for r in ready.get("relays", [])})


def _relay_label(path: str) -> str | None:
    return path.split("/")[2] if path.startswith("/relay/") else None


def _fuzz(live: Live, method: str, path: str, mode: GenerationMode, count: int) -> list[str]:
    """Send ``count`` generated requests of ``mode``; the failures, described (tokens filtered)."""
    operation = live.api[path][method]
    failures: list[str] = []
    derandomize = not os.environ.get("HERMES_FUZZ_RANDOM")

    @settings(max_examples=count, deadline=None, database=None, derandomize=derandomize, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(case=operation.as_strategy(generation_mode=mode), who=st.sampled_from(CREDENTIALS))
    def run(case: Any, who: str) -> None:
        headers = {k: v for k, v in (case.headers or {}).items() if k.lower() != "authorization"}
        case.headers = {**headers, **live.headers[who]}
        response = case.call(base_url=live.gw.url, timeout=30)
        checks = list(CHECKS)
        if response.status_code not in UNDECLARED.get((method, path), set()):
            checks.append(status_code_conformance)
        try:
            case.validate_response(response, checks=checks)
        except FailureGroup as exc:
            failures.append(f"[{mode.value}, {who}] {method} {path} → {response.status_code}: "
                            f"{'; '.join(f.title for f in exc.exceptions)}\n  {case.as_curl_command()}\n"
                            f"  {response.text[:300]}")

    try:
        run()
    except Unsatisfiable:  # nothing to make invalid (no parameters, no body): positive mode covered it
        assert mode is GenerationMode.NEGATIVE, f"no valid request could be generated for {method} {path}"
    return failures


@pytest.mark.timeout(120)
@pytest.mark.parametrize(("method", "path"), _operation_labels(), ids=lambda v: str(v))
def test_operation_conforms_and_never_5xx(live: Live, method: str, path: str) -> None:
    label = _relay_label(path)
    if label is not None and label not in live.relays:
        pytest.skip(f"the {label} relay is not enabled on this test server")
    if method.lower() not in live.doc["paths"].get(path, {}):
        pytest.skip(f"this server's document has no {method} {path} (it depends on the configuration)")
    failures = [f for mode, count in EXAMPLES.items() for f in _fuzz(live, method, path, mode, count)]
    assert not failures, "\n".join(failures[:5])
