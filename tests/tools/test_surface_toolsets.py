"""TS-4, TS-5, TS-6 as one table over every surface: which of catalog, desktop_ui and project a session gets.

Each row is a configuration; each column a surface, reached through the entry point that surface uses:
``open_agent`` with the surface ``hermes chat`` picks (cli, ``-z``/``-q`` one-shot, kanban worker), the
cron runner, the messaging session host, and the app server's ``sessions.create`` (the desktop app and
the TUI, its second client). A real turn runs against the scripted model server; the stored session's
toolsets and the tool list the model was offered are checked.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from fakes.model_server import Reply
from hermes.agent.events import Event, Request
from hermes.config.settings import Settings
from hermes.store.sessions import SessionStore
from hermes.surfaces.appserver.auth import Gate
from hermes.surfaces.appserver.rpc import AppApi
from hermes.surfaces.appserver.server import AppServer
from hermes.tools.toolsets import TOOLSETS, Surface, resolve_toolsets
from surfaces.appserver.harness import Rpc, url_of

D, P, C = "desktop_ui", "project", "catalog"
ALL3 = frozenset({C, D, P})
NONE: frozenset[str] = frozenset()
LISTED = "toolsets: [hermes-cli, catalog, desktop_ui, project]\n"

#: configuration → what each surface's session gets of catalog/desktop_ui/project
TABLE: dict[str, tuple[str, dict[Surface, frozenset[str]]]] = {
    "default": ("", {Surface.DESKTOP: ALL3}),
    "listed in config": (LISTED, {Surface.DESKTOP: ALL3, Surface.TUI: frozenset({P})}),
    "all": ("toolsets: [all]\n", {Surface.DESKTOP: ALL3, Surface.TUI: frozenset({P})}),
    "catalog disabled": ("agent:\n  disabled_toolsets: [catalog]\n", {Surface.DESKTOP: frozenset({D, P})}),
    "listed and disabled": (LISTED + "agent:\n  disabled_toolsets: [catalog]\n",
                            {Surface.DESKTOP: frozenset({D, P}), Surface.TUI: frozenset({P})}),
}
SURFACES = list(Surface)
#: a tool the model is offered exactly when the session has the toolset (desktop_ui's tools are not built here)
OFFERED = {C: "catalog", P: "desktop_project"}


class _Sink:
    def __init__(self) -> None:
        self.done = threading.Event()

    def emit(self, event: Event) -> None:
        if type(event).__name__ == "TurnFinished":
            self.done.set()

    def ask(self, request: Request) -> Any | None:
        return None

    # the session host's listener
    def on_event(self, session: Any, event: Event) -> None:
        self.emit(event)

    def on_request(self, session: Any, request: Request) -> Any | None:
        return None


def _run_on(surface: Surface, settings: Settings) -> str:
    """One turn on ``surface`` through its entry point; the stored session id."""
    if surface in (Surface.DESKTOP, Surface.TUI):
        server = AppServer(AppApi(settings), Gate("127.0.0.1", None), "127.0.0.1", 0)
        server.start()
        try:
            rpc = Rpc(url_of(server))
            session = rpc.call("sessions.create", {"surface": surface.value})["session"]
            rpc.call("message.send", {"session": session, "text": "hi"})
            session_id = str(rpc.finished(session)["session_id"])
            rpc.close()
            return session_id
        finally:
            server.stop()
    if surface is Surface.MESSAGING:
        from hermes.surfaces.host import SessionHost

        host = SessionHost(settings, surface=Surface.MESSAGING)
        try:
            listener = _Sink()
            host.submit("irc:#room:", "hi", listener)
            assert listener.done.wait(30)
            found = host.session_id("irc:#room:")
            assert found is not None
            return found
        finally:
            host.close()
    if surface is Surface.CRON:
        from hermes.agent.cron import AgentRunner
        from hermes.store.cron import CronJob

        job = CronJob(id="j1", name="table", prompt="hi", schedule_kind="interval", schedule="1h", skills=[],
                      toolsets=None, enabled=True, created_at=0, updated_at=0, next_run_at=None,
                      last_run_at=None, last_status=None, repeat_count=0, repeat_limit=None, grace_seconds=None)
        outcome = AgentRunner(settings).run(job)
        assert outcome.session_id is not None, outcome
        return outcome.session_id
    from hermes.agent.session import SessionRequest, open_agent

    agent = open_agent(settings, SessionRequest(surface), _Sink())  # what `hermes chat` does for cli, -q, kanban
    try:
        agent.run_turn("hi")
        assert agent.session_id is not None
        return agent.session_id
    finally:
        agent.close()


@pytest.mark.parametrize("surface", SURFACES, ids=[s.value for s in SURFACES])
@pytest.mark.parametrize("case", list(TABLE))
def test_desktop_only_toolsets_follow_the_table(case: str, surface: Surface, hermes_home: Path,
                                                model_server: Any) -> None:
    extra, expected_by_surface = TABLE[case]
    model = model_server(lambda body: Reply(content="ok"))
    (hermes_home / "config.yaml").write_text(
        f"model:\n  base_url: {model.url}\n  name: m\n  max_retries: 0\n{extra}")
    session_id = _run_on(surface, Settings.load())
    with SessionStore(hermes_home / "state.db") as store:
        info = store.get_session(session_id)
    assert info.surface == surface.value
    expected = expected_by_surface.get(surface, NONE)
    assert set(info.toolsets) & ALL3 == expected, (case, surface, info.toolsets)
    offered = {t["function"]["name"] for t in model.requests[-1].get("tools", [])}
    for toolset, tool in OFFERED.items():
        assert (tool in offered) == (toolset in expected), (case, surface, tool)


def test_all_never_names_the_desktop_only_toolsets() -> None:
    """``all`` leaves catalog and desktop_ui out by itself (in_all), not only through the surface rule."""
    import dataclasses

    everywhere = {n: dataclasses.replace(t, surfaces=frozenset(Surface), auto_on=frozenset())
                  for n, t in TOOLSETS.items()}
    for surface in SURFACES:
        expanded = resolve_toolsets(surface, ["all"], table=everywhere).toolsets
        assert C not in expanded and D not in expanded and P in expanded
