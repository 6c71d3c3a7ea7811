"""Writing a category's selection (GW-2, GW-5, GW-6, GW-8): what ``hermes tools`` and ``hermes tools set`` do.

A *target* is a whole category (``web``, ``image_gen``, ``tts``, ``stt``, ``browser``, ``video_gen``) or one
web function (``web.search``, ``web.extract``). :func:`apply_selection` writes exactly one selection key in
config.yaml, round-trip (comments, order and formatting kept), and tidies around it:

* the category's legacy ``use_gateway`` flag is removed (it is never written again, GW-6). When the
  flag was what routed the *other* web function to the gateway, ``web.backend: nous`` is written in its
  place so that function keeps its route;
* choosing the whole web tool removes ``web.search_backend`` and ``web.extract_backend`` (GW-5);
* choosing ``nous`` for a whole category takes it off ``tool_gateway_declined_tools`` (GW-7).

Nothing else changes: not the model provider, not any other category. :func:`choices_for` lists what the
picker offers for a target: "Nous Subscription" first, then every vendor, logged in or not.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes.errors import ConfigError
from hermes.routing.categories import (
    ALIASES,
    CATEGORIES,
    GATEWAY_VALUE,
    WEB_FUNCTION_KEYS,
    Category,
    Vendor,
    selection_values,
)

if TYPE_CHECKING:
    pass

DECLINED_KEY = "tool_gateway_declined_tools"
GATEWAY_LABEL = "Nous Subscription"
#: Friendlier names accepted on the command line.
TARGET_ALIASES: Mapping[str, str] = {"image": "image_gen", "images": "image_gen", "video": "video_gen"}


@dataclass(frozen=True)
class Target:
    """A whole category (``function`` None) or one web function."""

    category: Category
    function: str | None = None

    @property
    def name(self) -> str:
        return self.category.name if self.function is None else f"{self.category.name}.{self.function}"

    @property
    def key(self) -> str:
        """The selection key this target writes."""
        if self.function is None:
            return self.category.selection_key
        return WEB_FUNCTION_KEYS[self.function]

    @property
    def display(self) -> str:
        if self.function is None:
            return self.category.display
        return f"Web {self.function}"

    def values(self) -> tuple[str, ...]:
        return selection_values(self.category, self.function)


def all_targets() -> tuple[str, ...]:
    """Every target name, in status order."""
    names: list[str] = []
    for category in CATEGORIES.values():
        names.append(category.name)
        if len(category.functions) > 1:
            names += [f"{category.name}.{f}" for f in category.functions]
    return tuple(names)


def parse_target(text: str) -> Target:
    """``web``, ``web.search``, ``image_gen`` (or ``image``) … → Target; ConfigError listing the valid ones."""
    raw = text.strip().lower().replace("-", "_")
    head, _, function = raw.partition(".")
    head = TARGET_ALIASES.get(head, head)
    category = CATEGORIES.get(head)
    if category is not None and not function:
        return Target(category)
    if category is not None and len(category.functions) > 1 and function in category.functions:
        return Target(category, function)
    raise ConfigError(f"unknown tool category {text!r}; choose one of: {', '.join(all_targets())}")


def normalise_value(target: Target, text: str) -> str:
    """The selection value for ``text`` (case-insensitive, upstream aliases); ConfigError when not valid."""
    value = text.strip().lower()
    value = ALIASES.get(value, value)
    valid = target.values()
    if value not in valid:
        raise ConfigError(f"{text!r} is not a backend for {target.name}; choose one of: {', '.join(valid)}")
    return value


# -- what to write ----------------------------------------------------------------------------------------
@dataclass
class SelectionChange:
    """What :func:`apply_selection` did (keys as dotted names)."""

    target: Target
    value: str
    set_keys: dict[str, str] = field(default_factory=dict)
    removed: list[str] = field(default_factory=list)
    previous: str | None = None

    @property
    def changed(self) -> bool:
        return bool(self.set_keys or self.removed)


def _section(config: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    section = config.get(name) if isinstance(config, Mapping) else None
    return section if isinstance(section, Mapping) else {}


def _legacy_routes_backend(category: Category, section: Mapping[str, Any]) -> bool:
    """Whether a legacy ``use_gateway`` currently makes the category key read as ``nous``."""
    from hermes.routing.selection import _legacy_on

    if not _legacy_on(section):
        return False
    raw = section.get(category.selection_key.split(".", 1)[1])
    value = raw.strip().lower() if isinstance(raw, str) else None
    value = ALIASES.get(value, value) if value else None
    vendor = category.vendor(value) if value else None
    return value is None or (vendor is not None and vendor.gateway_label is not None)


def plan_selection(config: Mapping[str, Any], target: Target, value: str) -> tuple[dict[str, str], list[str]]:
    """(keys to set, keys to remove) for choosing ``value`` for ``target``; pure."""
    category = target.category
    section = _section(config, category.name)
    sets: dict[str, str] = {}
    removes: list[str] = []
    leaf = target.key.split(".", 1)[1]
    if section.get(leaf) != value:
        sets[target.key] = value
    if "use_gateway" in section:
        removes.append(category.legacy_key)
        if target.function is not None and _legacy_routes_backend(category, section):
            sets[category.selection_key] = GATEWAY_VALUE
    if target.function is None:
        removes += [key for key in WEB_FUNCTION_KEYS.values()
                    if category.name == "web" and key.split(".", 1)[1] in section]
    return sets, removes


def declined(config: Mapping[str, Any]) -> list[str]:
    """``tool_gateway_declined_tools`` as a list of category names (anything malformed is ignored)."""
    raw = config.get(DECLINED_KEY) if isinstance(config, Mapping) else None
    if isinstance(raw, str):
        raw = [part.strip() for part in raw.split(",")]
    if not isinstance(raw, list):
        return []
    return [str(item).strip() for item in raw if isinstance(item, str) and item.strip() in CATEGORIES]


def write_declined(path: Path, names: list[str]) -> None:
    """Store the declined list (in category order), removing the key when it becomes empty."""
    from hermes.config.yamlfile import ConfigFile

    cfg = ConfigFile.load(path)
    ordered = [name for name in CATEGORIES if name in names]
    current = cfg.get(DECLINED_KEY)
    if ordered:
        if current != ordered:
            if isinstance(current, list):  # edit in place: keeps its flow or block style
                current[:] = ordered
            else:
                cfg.set(DECLINED_KEY, ordered)
            cfg.save()
    elif cfg.has(DECLINED_KEY):
        cfg.delete_preserving_comments(DECLINED_KEY)


def apply_selection(path: Path, target: Target, value: str) -> SelectionChange:
    """Write ``value`` for ``target`` in the config file at ``path`` (see the module docstring)."""
    from hermes.config.yamlfile import ConfigFile

    cfg = ConfigFile.load(path)
    sets, removes = plan_selection(cfg.data, target, value)
    previous = cfg.get(target.key)
    change = SelectionChange(target, value, sets, [], previous if isinstance(previous, str) else None)
    if sets:
        for key, new in sets.items():
            cfg.set(key, new)
        cfg.save()
        cfg = ConfigFile.load(path)
    for key in removes:
        if cfg.delete_preserving_comments(key):
            change.removed.append(key)
    if value == GATEWAY_VALUE and target.function is None:
        names = declined(cfg.data)
        if target.category.name in names:
            write_declined(path, [n for n in names if n != target.category.name])
            change.removed.append(f"{DECLINED_KEY}[{target.category.name}]")
    return change


# -- what the picker offers ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Choice:
    """One row of the picker: a selection value with its label and a short status note."""

    value: str
    label: str
    note: str
    current: bool = False


def missing_env(vendor: Vendor, env: Mapping[str, str]) -> list[str]:
    """The first name of every unmet variable group of ``vendor``."""
    return [group[0] for group in vendor.env if not any((env.get(n) or "").strip() for n in group)]


def vendor_note(vendor: Vendor, env: Mapping[str, str]) -> str:
    if not vendor.needs_env:
        return "runs on this machine" if vendor.kind == "local" else "no key needed"
    missing = missing_env(vendor, env)
    if missing:
        return f"needs {' and '.join(missing)}"
    present = next(n for n in vendor.env[0] if (env.get(n) or "").strip())
    return f"uses your {present}"


def choices_for(target: Target, config: Mapping[str, Any], env: Mapping[str, str], *, logged_in: bool,
                covered: bool | None = None, in_use: str | None = None) -> list[Choice]:
    """"Nous Subscription" first, then every vendor of the target — whatever is logged in or set.

    The row marked current is the saved selection of the target, else ``in_use``: the backend its route
    takes now (auto-detected, or inherited from ``web.backend`` for one web function)."""
    section = _section(config, target.category.name)
    raw = section.get(target.key.split(".", 1)[1])
    saved = ALIASES.get(raw.strip().lower(), raw.strip().lower()) if isinstance(raw, str) else None
    if target.function is None and _legacy_routes_backend(target.category, section):
        saved = GATEWAY_VALUE  # legacy use_gateway beside a relayed vendor routes to the gateway: mark that row
    saved = saved or in_use
    if not logged_in:
        gateway_note = "managed by Nous; you will be asked to log in to Nous Portal"
    elif covered is False:
        gateway_note = "managed by Nous; not covered by your plan"
    else:
        gateway_note = "managed by Nous; logged in"
    rows = [Choice(GATEWAY_VALUE, GATEWAY_LABEL, gateway_note, saved == GATEWAY_VALUE)]
    function = target.function or target.category.functions[0]
    for vendor in target.category.vendors_for(function):
        rows.append(Choice(vendor.name, vendor.display, vendor_note(vendor, env), saved == vendor.name))
    return rows
