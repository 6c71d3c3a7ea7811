"""The tips rotation's rules (T-DESK) with an injected clock: first tip late, one per 6 hours, only when
idle, the agent's tips share the cadence, one pass over the catalog, a restart begins a new pass."""

from __future__ import annotations

from pathlib import Path

from hermes.surfaces.appserver.tips import CATALOG, FIRST_DELAY, GAP, TipRotation

from .harness import FakeClock


def test_the_first_tip_waits_a_few_minutes_after_launch_and_only_for_an_idle_person(tmp_path: Path) -> None:
    clock = FakeClock()
    rotation = TipRotation(tmp_path / "tips.json", clock=clock)
    assert rotation.due(idle=True) is None
    clock.advance(FIRST_DELAY - 1)
    assert rotation.due(idle=True) is None
    clock.advance(2)
    assert rotation.due(idle=False) is None  # busy: not now
    first = rotation.due(idle=True)
    assert first is not None and first["id"] == CATALOG[0].id and first["selector"] == CATALOG[0].selector


def test_at_most_one_tip_per_six_hours_and_an_agent_tip_silences_the_rotation(tmp_path: Path) -> None:
    clock = FakeClock()
    rotation = TipRotation(tmp_path / "tips.json", clock=clock)
    clock.advance(FIRST_DELAY)
    assert rotation.due(idle=True) is not None
    clock.advance(GAP - 60)
    assert rotation.due(idle=True) is None
    clock.advance(60)
    second = rotation.due(idle=True)
    assert second is not None and second["id"] == CATALOG[1].id
    clock.advance(GAP)
    rotation.agent_tip()  # the agent showed a tip just now
    clock.advance(GAP - 1)
    assert rotation.due(idle=True) is None
    clock.advance(1)
    assert rotation.due(idle=True)["id"] == CATALOG[2].id  # type: ignore[index]


def test_one_pass_over_the_catalog_then_quiet_until_restarted_and_kept_across_launches(tmp_path: Path) -> None:
    clock = FakeClock()
    state = tmp_path / "desktop" / "tips.json"
    rotation = TipRotation(state, clock=clock)
    clock.advance(FIRST_DELAY)
    seen = []
    for _ in range(len(CATALOG) + 3):
        tip = rotation.due(idle=True)
        if tip is not None:
            seen.append(tip["id"])
        clock.advance(GAP)
    assert seen == [t.id for t in CATALOG]  # each once, in order, then nothing
    relaunched = TipRotation(state, clock=clock)  # a new launch remembers the pass
    clock.advance(FIRST_DELAY)
    assert relaunched.due(idle=True) is None and relaunched.shown == seen
    relaunched.restart()
    assert relaunched.due(idle=True)["id"] == CATALOG[0].id  # type: ignore[index]


def test_a_broken_state_file_starts_a_fresh_pass(tmp_path: Path) -> None:
    state = tmp_path / "tips.json"
    state.write_text("{not json")
    clock = FakeClock()
    rotation = TipRotation(state, clock=clock)
    clock.advance(FIRST_DELAY)
    assert rotation.due(idle=True)["id"] == CATALOG[0].id  # type: ignore[index]
    assert '"shown": ["new-session"]' in state.read_text()
