"""Fixtures of the computer_use tests (helpers in support.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tools.computer_use.support import Desk, need_desktop


@pytest.fixture
def desk(hermes_home: Path) -> Iterator[Callable[..., Desk]]:
    """Factory of tool sessions; their displays are stopped at teardown (as Agent.close does)."""
    need_desktop()
    made: list[Desk] = []

    def make(**kw: Any) -> Desk:
        made.append(Desk(hermes_home, **kw))
        return made[-1]

    yield make
    for one in made:
        one.close()
