"""Teams: only activities the Bot Framework signed for this app, with a matching serviceUrl, are heard."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fakes.messaging.teams import APP_ID, TeamsDriver
from hermes.surfaces.messaging.access import PlatformAccess
from surfaces.messaging.harness import GatewayThread, scripted


@pytest.fixture
def teams(hermes_home: Path, model_server: Any) -> Iterator[tuple[TeamsDriver, GatewayThread, Any]]:
    driver = TeamsDriver()
    server = model_server(scripted)
    gateway = GatewayThread(hermes_home, server.url, [driver.adapter()], secrets=driver.secrets,
                            access={"teams": PlatformAccess(allow_users=frozenset(driver.allowed(["alice"])))})
    yield driver, gateway, server
    gateway.stop()
    driver.close()


def test_forged_or_misdirected_activities_are_refused(teams: tuple[TeamsDriver, GatewayThread, Any]) -> None:
    driver, _, model = teams
    from cryptography.hazmat.primitives.asymmetric import rsa

    body = driver.activity("alice", "forged", direct=True, mention=False)
    assert driver.post(body, token="not-a-jwt").status_code == 401
    assert driver.post(body, token=driver.signed(aud="another-app")).status_code == 401
    assert driver.post(body, token=driver.signed(iss="https://evil.example")).status_code == 401
    # a token for another serviceUrl must not send the bot's replies (and its app token) elsewhere
    assert driver.post(body, token=driver.signed(service_url="http://127.0.0.1:9/")).status_code == 401
    real_key, driver.key = driver.key, rsa.generate_private_key(public_exponent=65537, key_size=2048)
    forged = driver.signed()
    driver.key = real_key
    assert driver.post(body, token=forged).status_code == 401
    assert driver.post({**body, "text": "genuine"}).status_code == 200
    driver.wait_for(lambda ps: [p for p in ps if p.text == "re: genuine"])
    asked = [m["content"] for r in model.requests for m in r["messages"] if m["role"] == "user"]
    assert asked == ["genuine"]
    assert driver.tokens_issued == 1 and APP_ID
