"""A render survives its process: killed mid-render, the job is resumed from the store and paid once (T-VGEN).

A real ``python`` process calls ``video_generate`` against the FAL video fake, which keeps the job in its
queue; once the fake has the (paid) submit and a status poll, the process is killed with SIGKILL. The
store still holds the job with FAL's request id, so ``hermes video resume`` (another real process) polls
it to the end and saves the video, and ``hermes video jobs`` lists it — with exactly one submit in all.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from hermes.store.video_jobs import VideoJob, VideoJobStore

CALL = ("import hermes.tools.video.tool; from hermes.tools.registry import registry; "
        "print(registry.dispatch('video_generate', {'prompt': 'a long render', 'duration': 6}))")


def wait_for(predicate: Any, what: str, limit: float = 60.0) -> None:
    give_up = time.monotonic() + limit
    while not predicate():
        if time.monotonic() > give_up:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def killed_mid_render(home: Path, fakes: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> VideoJob:
    """A real process submits a render (paid), polls once and is SIGKILLed; the stored job it leaves."""
    monkeypatch.setenv("FAL_KEY", "fal-test")
    (home / "config.yaml").write_text(f"video_gen:\n  provider: fal\n  poll_seconds: 0.01\n"
                                      f"  fal:\n    base_url: {fakes['fal_url']}\n", encoding="utf-8")
    fal = fakes["fal"]
    fal.hold = True
    first = subprocess.Popen([sys.executable, "-c", CALL], env=dict(os.environ), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
    try:
        wait_for(lambda: len(fal.submits()) == 1 and any(r["path"].endswith("/status") for r in fal.requests),
                 "the first process to submit and poll")
    finally:
        first.send_signal(signal.SIGKILL)
        first.communicate(timeout=30)
    assert first.returncode == -signal.SIGKILL
    with VideoJobStore.in_home(home) as store:
        [job] = store.unfinished()
    return job


def test_killed_process_is_resumed_and_pays_once(home: Path, fakes: dict[str, Any],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    job = killed_mid_render(home, fakes, monkeypatch)
    fal = fakes["fal"]
    assert job.state == "queued" and job.vendor_job_id is not None and job.vendor_job_id.startswith("vreq-")
    assert job.backend == "fal" and job.cost_estimate == pytest.approx(2.4)

    fal.hold = False
    resumed = subprocess.run([sys.executable, "-m", "hermes", "video", "resume", "--json"], env=dict(os.environ),
                             capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    [result] = json.loads(resumed.stdout)
    assert result["success"] and result["job_id"] == job.id, result
    assert Path(result["path"]).read_bytes()[4:8] == b"ftyp"
    assert len(fal.submits()) == 1  # paid once

    listed = subprocess.run([sys.executable, "-m", "hermes", "video", "jobs"], env=dict(os.environ),
                            capture_output=True, text=True, timeout=60)
    assert listed.returncode == 0 and job.id in listed.stdout and "done" in listed.stdout, listed.stdout
    assert "fal/fal-ai/veo3.1" in listed.stdout and "~$2.40" in listed.stdout


def test_the_next_session_with_video_tools_resumes_the_render_by_itself(home: Path, fakes: dict[str, Any],
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from hermes.agent.events import Notice, RecordingSink
    from hermes.agent.session import VIDEO_RESUME_KEY, new_agent
    from hermes.config.settings import Settings
    from hermes.tools.toolsets import Surface

    job = killed_mid_render(home, fakes, monkeypatch)
    fakes["fal"].hold = False
    with (home / "config.yaml").open("a", encoding="utf-8") as fh:  # a model the session never calls
        fh.write("model:\n  base_url: http://127.0.0.1:9/v1\n  name: scripted\n")
    sink = RecordingSink()
    agent = new_agent(Settings.load(), Surface.CLI, sink, requested=["video_gen"])
    try:
        assert "video_generate" in agent.tools
        agent.state[VIDEO_RESUME_KEY].join(120)
    finally:
        agent.close()
    said = [e.message for e in sink.of_type(Notice) if isinstance(e, Notice)]
    assert said[0].startswith(f"resuming 1 unfinished video job in the background ({job.id})"), said
    assert said[1].startswith(f"video job {job.id} finished: saved "), said
    saved = Path(said[1].split("saved ", 1)[1])
    assert saved.read_bytes()[4:8] == b"ftyp" and saved.with_name(saved.name + ".json").exists()
    assert len(fakes["fal"].submits()) == 1  # paid once
    with VideoJobStore.in_home(home) as store:
        assert store.unfinished() == []
    # the next session has nothing left to wait for
    again = new_agent(Settings.load(), Surface.CLI, RecordingSink(), requested=["video_gen"])
    assert VIDEO_RESUME_KEY not in again.state
    again.close()
