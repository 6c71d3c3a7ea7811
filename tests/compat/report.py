"""The result of the upstream compatibility check: named checks in order, with secrets masked."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Report:
    """The checks in order; ``ok`` when every one passed. Details never contain tokens or keys."""

    checks: list[tuple[str, bool, str]] = field(default_factory=list)
    secrets: list[str] = field(default_factory=list)

    def check(self, name: str, ok: bool, detail: str = "") -> bool:
        for secret in self.secrets:
            if secret:
                detail = detail.replace(secret, "***")
        self.checks.append((name, bool(ok), detail))
        return bool(ok)

    @property
    def ok(self) -> bool:
        return bool(self.checks) and all(passed for _, passed, _ in self.checks)

    def failures(self) -> list[str]:
        return [f"{name}: {detail}" for name, passed, detail in self.checks if not passed]

    def render(self) -> str:
        return "\n".join(f"{'PASS' if passed else 'FAIL'}  {name}" + (f"  — {detail}" if detail else "")
                         for name, passed, detail in self.checks)


def loads(raw: Any) -> dict[str, Any]:
    """A tool's JSON output as a dict ({} when it is not a JSON object)."""
    try:
        value = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
