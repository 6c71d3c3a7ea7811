"""The gateway-routed tool families share code only through hermes.tools.routed, never each other's modules."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import hermes.tools

TOOLS = Path(hermes.tools.__file__).parent
FAMILIES = sorted(p.name for p in TOOLS.iterdir() if p.is_dir() and (p / "__init__.py").exists())
_IMPORTED = re.compile(r"\bhermes\.tools\.([a-z_]+)\b")


def _families_imported_by(package: str) -> set[str]:
    found: set[str] = set()
    for path in (TOOLS / package).rglob("*.py"):
        found.update(m for m in _IMPORTED.findall(path.read_text(encoding="utf-8")) if m in FAMILIES)
    return found - {package}


@pytest.mark.parametrize("family", ["web", "image", "audio", "vision", "x"])
def test_a_routed_family_imports_only_the_shared_module(family: str) -> None:
    assert _families_imported_by(family) <= {"routed"}


def test_the_shared_module_imports_no_routed_family() -> None:
    assert _families_imported_by("routed").isdisjoint({"web", "image", "audio", "vision", "x"})
