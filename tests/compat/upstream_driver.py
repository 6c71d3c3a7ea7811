"""Upstream-client compatibility check for our Tool Gateway (issue 7; docs/gateway/compat.md).

Runs in OUR venv. It starts the vendor fakes and ``hermes toolgateway serve`` (:mod:`compat.stack`),
adds a user with our CLI, logs the unmodified upstream ``hermes-agent`` in through our portal (device
code; the check approves it on the ``/device`` page with a one-time login link from our CLI), ages the
stored login so the client refreshes it through our portal, then runs the upstream ``web_search``,
``web_extract``, ``image_generate`` (FAL), ``text_to_speech`` and ``terminal`` (managed Modal) tools and its
speech-to-text entry point with the vendor pins pointing at our relays (:mod:`compat.upstream`), and
``image_generate`` once more with a native Krea model (:mod:`compat.checks_extra`). Every result is
checked twice: in what the upstream returned, and on our side (the fakes' request logs, the sandbox's
output, the gateway's usage API), plus ``hermes portal info``.

``python tests/compat/upstream_driver.py --venv /tmp/upstream-venv [--workdir DIR]`` prints one line per
check and exits 0 when all pass; ``scripts/upstream_compat.sh`` builds the venv and runs this.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make tests/ importable (fakes, compat)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx

from compat import checks_extra as extra
from compat.report import Report, loads
from compat.stack import FAL_KEY, KREA_KEY, OPENAI_KEY, Stack
from compat.upstream import KREA_CONFIG, LAZY_SDKS, UPSTREAM_VERSION, Upstream, UpstreamError
from fakes.vendors.openai_audio import FAKE_AUDIO

USER = "upstream-compat"
QUERY = "tool gateway compatibility"
SPEECH = "Hello from the upstream client, through our gateway."
FAL_MODEL = "fal-ai/flux-2/klein/9b"  # upstream's default image model


def _approve_on_portal(stack: Stack, report: Report) -> Any:
    """An ``approve(user_code)`` that signs in with a one-time login link and approves on ``/device``."""

    def approve(user_code: str) -> None:
        link = stack.cli("users", "login-link", USER).strip().splitlines()[-1]
        report.secrets.append(link.rpartition("login=")[2])
        with httpx.Client(timeout=15) as client:
            page = client.get(link)
            report.check("portal page knows the login link", page.status_code == 200 and USER in page.text,
                         f"GET /device?login=… → {page.status_code}")
            done = client.post(f"{stack.url}/device", data={
                "user_code": user_code, "login": link.rpartition("login=")[2], "action": "approve"})
        report.check("device code approved on the portal page", done.status_code == 200 and "approved" in done.text,
                     f"POST /device → {done.status_code} for code {user_code}")

    return approve


def _check_results(stack: Stack, report: Report, out: dict[str, Any], speech_path: Path) -> None:
    offered = set(out.get("offered", []))
    wanted = {"web_search", "web_extract", "image_generate", "text_to_speech", "terminal"}
    report.check("upstream offers the five tools", wanted <= offered, f"offered: {sorted(offered & wanted)}")
    results = out.get("results", {})

    search = loads(results.get("web_search"))
    titles = [str(r.get("title", "")) for r in search.get("data", {}).get("web", [])]
    report.check("web_search: results from the SearXNG fake via the gateway",
                 bool(titles) and all(t.startswith("Searx ") and QUERY in t for t in titles),
                 f"{len(titles)} results, first: {titles[:1]}" if titles else str(results.get("web_search"))[:300])

    extract = loads(results.get("web_extract"))
    pages = extract.get("results", [])
    content = str(pages[0].get("content", "")) if pages else ""
    report.check("web_extract: the page fake's article, converted by the gateway's local scraper",
                 "Main heading" in content and "do-not-extract" not in content and "Copyright footer" not in content,
                 f"title {pages[0].get('title')!r}, {len(content)} chars" if pages else
                 str(results.get("web_extract"))[:300])

    image = loads(results.get("image_generate"))
    image_url = str(image.get("image") or "")
    report.check("image_generate: the FAL fake's image via the fal-queue relay",
                 bool(image.get("success")) and image_url.startswith(stack.fake_url("fal") + "/files/"),
                 f"image {image_url or results.get('image_generate')!s:.300}")
    submits = [r for r in stack.fal.requests if r["method"] == "POST"]
    report.check("FAL fake got the submit with the operator key (never the user's token)",
                 len(submits) == 1 and submits[0]["path"] == f"/{FAL_MODEL}"
                 and submits[0]["headers"].get("authorization") == f"Key {FAL_KEY}"
                 and bool((submits[0]["json"] or {}).get("prompt")),
                 f"{len(submits)} submit(s) to {[r['path'] for r in submits]}")

    speech = loads(results.get("text_to_speech"))
    audio = speech_path.read_bytes() if speech_path.exists() else b""
    report.check("text_to_speech: the OpenAI audio fake's MP3 via the openai-audio relay",
                 bool(speech.get("success")) and audio == FAKE_AUDIO["mp3"],
                 f"{len(audio)} bytes at {speech_path.name}; tool said {str(results.get('text_to_speech'))[:200]}")
    spoken = [r for r in stack.audio.requests if r["path"] == "/v1/audio/speech"]
    report.check("OpenAI audio fake got the speech request with the operator key",
                 len(spoken) == 1 and spoken[0]["headers"].get("authorization") == f"Bearer {OPENAI_KEY}"
                 and (spoken[0]["json"] or {}).get("input") == SPEECH,
                 f"{len(spoken)} speech request(s), model {(spoken[0]['json'] or {}).get('model') if spoken else None}")


def _check_usage(stack: Stack, report: Report) -> None:
    admin = stack.cli("admin-token").strip()
    report.secrets.append(admin)
    answer = httpx.get(f"{stack.url}/api/admin/usage", params={"user": USER},
                       headers={"authorization": f"Bearer {admin}"}, timeout=15)
    users = answer.json().get("users", []) if answer.status_code == 200 else []
    rows = users[0]["by_tool"] if users else []
    metered = {(r["category"], r["operation"]): (r["succeeded"], r["units"]) for r in rows}
    expected = {("firecrawl", "search"): 1, ("firecrawl", "scrape"): 1, ("fal", "submit"): 1,
                ("openai-audio", "speech"): len(SPEECH), ("openai-audio", "transcription"): 1,
                ("krea", "generate"): 1, ("modal", "create"): 1, ("modal", "exec"): 2}
    for key, units in expected.items():
        succeeded, got = metered.get(key, (0, 0))
        report.check(f"gateway metered {key[0]} {key[1]}", succeeded >= 1 and got == units,
                     f"succeeded {succeeded}, units {got} (expected {units})")
    for what, keys in (("the FAL status and result polls", (("fal", "status"), ("fal", "result"))),
                       ("the Krea job polls", (("krea", "job"),)),
                       ("the sandbox's termination (the upstream's exit hook)", (("modal", "terminate"),))):
        report.check(f"gateway recorded {what} at 0 units",
                     all(metered.get(k, (0, -1))[0] >= 1 and metered.get(k, (0, -1))[1] == 0 for k in keys),
                     f"{[(k[1], metered.get(k)) for k in keys]}")


def _check_portal_info(text: str, report: Report) -> None:
    lines = {line.strip().split("  ")[0]: line.strip() for line in text.splitlines() if line.strip()}
    report.check("portal info: logged in", any(line.startswith("Auth:") and "logged in" in line
                                               and "not logged in" not in line for line in lines.values()),
                 next((v for v in lines.values() if v.startswith("Auth:")), "no Auth line"))
    for row in ("Web tools", "Image generation", "OpenAI TTS", "Speech-to-text", "Modal execution"):
        line = next((v for k, v in lines.items() if k.startswith(row)), "")
        report.check(f"portal info: {row} via Nous Portal (our gateway)", "via Nous Portal" in line,
                     line or f"no {row} row")


def run_check(venv: Path, workdir: Path) -> Report:
    """The whole check; never raises for a failed expectation (it becomes a failed check)."""
    report = Report()
    upstream_probe = Upstream(venv, workdir, {}, "")
    versions = upstream_probe.installed_versions()
    wanted = {"hermes-agent": UPSTREAM_VERSION, **LAZY_SDKS}
    if not report.check("upstream venv has hermes-agent and its SDKs", versions == wanted, f"found {versions}"):
        return report
    with Stack(workdir) as stack:
        # firecrawl-py resolves "/v2/…" against the origin's root, so its pin is the bare origin
        pins = {"FIRECRAWL_GATEWAY_URL": stack.url,
                "FAL_QUEUE_GATEWAY_URL": stack.relay_url("fal-queue"),
                "OPENAI_AUDIO_GATEWAY_URL": stack.relay_url("openai-audio"),
                "KREA_GATEWAY_URL": stack.relay_url("krea"), "MODAL_GATEWAY_URL": stack.relay_url("modal")}
        upstream = Upstream(venv, workdir, pins, stack.url)
        upstream.prepare()
        stack.cli("users", "add", USER, "--plan", "paid")
        try:
            upstream.login(_approve_on_portal(stack, report))
            state = upstream.auth_state()
            report.secrets += [str(state.get("access_token", "")), str(state.get("refresh_token", ""))]
            report.check("upstream stored our portal login",
                         state.get("portal_base_url") == stack.url
                         and str(state.get("access_token", "")).count(".") == 2
                         and "tool:invoke" in str(state.get("scope", "")).split(),
                         f"portal {state.get('portal_base_url')}, scope {state.get('scope')!r}")
            first = (state.get("access_token"), state.get("refresh_token"))
            upstream.age_access_token(60)
            speech_path = workdir / "speech.mp3"
            note = extra.voice_note(workdir)
            out = upstream.call_tools(["web", "image_gen", "tts", "terminal"], [
                {"tool": "web_search", "args": {"query": QUERY, "limit": 3}},
                {"tool": "web_extract", "args": {"urls": [f"{stack.fake_url('pages')}/article"]}},
                {"tool": "image_generate", "args": {"prompt": "a small red square", "aspect_ratio": "square"}},
                {"tool": "text_to_speech", "args": {"text": SPEECH, "output_path": str(speech_path)}},
                *extra.extra_calls(note),
            ])
            state = upstream.auth_state()
            report.secrets += [str(state.get("access_token", "")), str(state.get("refresh_token", ""))]
            report.check("upstream refreshed its aged login through our portal's token endpoint",
                         state.get("access_token") != first[0] and state.get("refresh_token") != first[1]
                         and bool(state.get("refresh_token")), "new access and refresh tokens stored")
            _check_results(stack, report, out, speech_path)
            extra.check_transcription(stack, report, out.get("results", {}), note)
            extra.check_sandbox(stack, report, out.get("results", {}))
            upstream.prepare(KREA_CONFIG)  # a native Krea model: image_generate now goes to the krea relay
            krea = upstream.call_tools(["image_gen"], extra.krea_calls(), name="krea-calls")
            extra.check_krea(stack, report, krea.get("results", {}))
            extra.check_no_token_at_fakes(stack, report)
            _check_usage(stack, report)
            _check_portal_info(upstream.portal_info(), report)
        except (UpstreamError, RuntimeError, OSError, ValueError, KeyError) as exc:
            report.check("upstream run completed", False, f"{type(exc).__name__}: {exc}")
    # read once the gateway stopped: every access line is written by then (they are written in batches)
    log = stack.access_log.read_text(encoding="utf-8", errors="replace") if stack.access_log.exists() else ""
    leaked = [s for s in [*report.secrets, FAL_KEY, OPENAI_KEY, KREA_KEY] if s and s in log]
    report.check("no token, refresh token, login link or vendor key in the gateway's access log", not leaked,
                 f"{len(leaked)} secret(s) found" if leaked else f"{len(log.splitlines())} log lines")
    report.check("gateway stopped cleanly (SIGTERM → exit 0)", stack.exit_code == 0, f"exit {stack.exit_code}")
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--venv", required=True, type=Path, help=f"a venv with hermes-agent=={UPSTREAM_VERSION}")
    parser.add_argument("--workdir", type=Path, help="keep logs and homes here (default: a temporary directory)")
    args = parser.parse_args(argv)
    started = time.monotonic()
    if args.workdir:
        report = run_check(args.venv.resolve(), args.workdir.resolve())
    else:
        with tempfile.TemporaryDirectory(prefix="upstream-compat-") as tmp:
            report = run_check(args.venv.resolve(), Path(tmp))
    print(report.render())
    print(f"{'OK' if report.ok else 'FAILED'}: {sum(p for _, p, _ in report.checks)}/{len(report.checks)} checks "
          f"passed in {time.monotonic() - started:.1f} s")
    return 0 if report.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
