"""The GW-7 checklist: which tools to put on the gateway when a Nous model is chosen.

``hermes model`` (choosing a Nous model) and ``hermes setup --portal`` offer the gateway per category,
respecting what is already configured:

* a category with another explicit backend (``web.backend: searxng``) is **not offered** — a choice is
  never overwritten by accident; one already on the gateway is not offered either;
* a category configured only through an environment variable (``SEARXNG_URL``, ``CAMOFOX_URL``) is offered
  **unchecked**, with a "keeps your own backend" note;
* a category the account's plan does not cover (free tool tier) is not offered;
* only a truly unconfigured category is **pre-checked** — unless it is in ``tool_gateway_declined_tools``:
  a category left unchecked when the checklist was confirmed is remembered there and never pre-checked
  again. Checking it later removes it from the list.

:func:`build_checklist` is pure (config, environment, optional credentials → items);
:func:`apply_checklist` writes the outcome. Opt-in categories (video) are not part of the checklist.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hermes.routing.categories import CATEGORIES, GATEWAY_VALUE
from hermes.routing.choose import SelectionChange, Target, apply_selection, declined, write_declined
from hermes.routing.credentials import Credentials
from hermes.routing.selection import SelectionState, selection_state

KEEPS_OWN = "keeps your own backend"


@dataclass(frozen=True)
class ChecklistItem:
    category: str
    display: str
    state: SelectionState
    offered: bool
    checked: bool
    note: str = ""


@dataclass
class ChecklistOutcome:
    enabled: list[str] = field(default_factory=list)
    declined: list[str] = field(default_factory=list)
    changes: list[SelectionChange] = field(default_factory=list)


def _env_set(env: Mapping[str, str], name: str) -> bool:
    value = env.get(name)
    return isinstance(value, str) and bool(value.strip())


def _current(config: Mapping[str, Any], key: str) -> str:
    node: Any = config
    for part in key.split("."):
        node = node.get(part) if isinstance(node, Mapping) else None
    return node.strip() if isinstance(node, str) and node.strip() else "another backend"


def build_checklist(config: Mapping[str, Any], env: Mapping[str, str],
                    credentials: Credentials | None = None) -> list[ChecklistItem]:
    """One item per non-opt-in category (see the module docstring for the rules)."""
    gone = set(declined(config))
    items: list[ChecklistItem] = []
    for category in CATEGORIES.values():
        if category.opt_in:
            continue
        state = selection_state(category.name, config, env)
        if state == "explicit":
            note = f"uses {_current(config, category.selection_key)} ({category.selection_key})"
            items.append(ChecklistItem(category.name, category.display, state, False, False, note))
            continue
        if state == "gateway":
            items.append(ChecklistItem(category.name, category.display, state, False, True,
                                       "already via Nous subscription"))
            continue
        if state == "env_only":
            names = [n for v in category.vendors if v.env_only for n in v.env_names if _env_set(env, n)]
            items.append(ChecklistItem(category.name, category.display, state, True, False,
                                       f"{KEEPS_OWN} ({', '.join(names)})"))
            continue
        claims = credentials.claims if credentials is not None else None
        if claims is not None and not claims.covers(category.coverage_key):
            items.append(ChecklistItem(category.name, category.display, state, False, False,
                                       "not covered by your plan"))
            continue
        checked, note = True, ""
        if category.name in gone:
            checked, note = False, "you declined this before (tool_gateway_declined_tools)"
        keys = [n for v in category.vendors if not v.env_only for n in v.env_names if _env_set(env, n)]
        if checked and keys:
            note = f"your {', '.join(dict.fromkeys(keys))} is kept, unused while on the gateway"
        items.append(ChecklistItem(category.name, category.display, state, True, checked, note))
    return items


def default_choice(items: Iterable[ChecklistItem]) -> set[str]:
    """The categories pre-checked in ``items``."""
    return {item.category for item in items if item.offered and item.checked}


def apply_checklist(path: Path, items: Iterable[ChecklistItem], chosen: Iterable[str], *,
                    remember: bool = True) -> ChecklistOutcome:
    """Put the ``chosen`` offered categories on the gateway; remember the offered ones left unchecked.

    ``remember=False`` records no declines (used when nobody saw the checklist, e.g. the defaults of a
    non-interactive setup).
    """
    from hermes.config.yamlfile import ConfigFile

    wanted = set(chosen)
    outcome = ChecklistOutcome()
    offered = [item for item in items if item.offered]
    for item in offered:
        if item.category in wanted:
            outcome.changes.append(apply_selection(path, Target(CATEGORIES[item.category]), GATEWAY_VALUE))
            outcome.enabled.append(item.category)
        elif remember:
            outcome.declined.append(item.category)
    current = declined(ConfigFile.load(path).data)
    final = [name for name in current if name not in wanted] + [n for n in outcome.declined if n not in current]
    if final != current:
        write_declined(path, final)
    return outcome
