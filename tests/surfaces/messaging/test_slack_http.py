"""Slack's HTTP mode (the Events API request URL): signed requests only, the URL verification, a
message answered, a button pressed, a retried event answered once."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from fakes.messaging.slack import SIGNING_SECRET, SlackDriver
from hermes.surfaces.messaging.access import PlatformAccess
from surfaces.messaging.harness import GatewayThread, last_user, scripted


def test_slack_http_mode(hermes_home: Path, model_server: Any) -> None:
    slack = SlackDriver(mode="http")
    server = model_server(scripted)
    gateway = GatewayThread(hermes_home, server.url, [slack.adapter()], secrets=(SIGNING_SECRET,),
                            access={"slack": PlatformAccess(allow_users=frozenset(slack.allowed(["alice"])))})
    try:
        challenge = json.dumps({"type": "url_verification", "challenge": "3eZbrw1aB", "token": "t"}).encode()
        assert slack.signed_post(challenge).json() == {"challenge": "3eZbrw1aB"}
        assert slack.signed_post(challenge, secret="not-the-secret").status_code == 401
        assert slack.signed_post(challenge, stamp=int(time.time()) - 600).status_code == 401  # a replayed request
        forged = {"type": "event_callback", "event_id": "Ev-forged", "event": {
            "type": "message", "user": slack.allowed(["alice"])[0], "channel": "DU100", "channel_type": "im",
            "text": "forged", "ts": "1.000001"}}
        assert slack.signed_post(json.dumps(forged).encode(), secret="wrong").status_code == 401

        slack.say("alice", "hello over http", direct=True)
        slack.wait_for(lambda ps: [p for p in ps if p.text == "re: hello over http"])
        retried = {**forged, "event_id": "Ev-retry", "event": {**forged["event"], "text": "once only"}}
        for _ in range(2):  # Slack retries an event it thinks was not acknowledged in time
            assert slack.signed_post(json.dumps(retried).encode()).status_code == 200
        slack.wait_for(lambda ps: [p for p in ps if p.text == "re: once only"])
        slack.say("alice", "ask me", direct=True)
        card = slack.wait_for(lambda ps: [p for p in ps if p.kind == "buttons"])[0]
        slack.press("alice", card, "blue")
        slack.wait_for(lambda ps: [p for p in ps if "clarify said" in p.text and "blue" in p.text])
        asked = [last_user(b) for b in server.requests]
        assert "forged" not in asked and asked.count("once only") == 1
    finally:
        gateway.stop()
        slack.close()
