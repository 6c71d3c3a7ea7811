"""Toolset distributions for batch runs (requirement REG-10).

A distribution gives each toolset a probability of being included; a batch run samples the
toolsets of every prompt from one, so a data set of trajectories covers many tool combinations.
Users add or override distributions under ``batch.distributions`` in config.yaml::

    batch:
      distributions:
        my_mix:
          description: mostly web, sometimes files
          toolsets: {web: 0.9, file: 0.3}
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hermes.errors import ConfigError


@dataclass(frozen=True)
class Distribution:
    name: str
    description: str
    #: toolset name -> inclusion probability in [0, 1]
    toolsets: dict[str, float]

    def sample(self, rng: random.Random) -> list[str]:
        """Each toolset independently with its probability; never empty (the likeliest one is kept)."""
        chosen = [name for name, p in self.toolsets.items() if rng.random() < p]
        if not chosen and self.toolsets:
            chosen = [max(self.toolsets.items(), key=lambda kv: kv[1])[0]]
        return chosen


def _d(name: str, description: str, **toolsets: float) -> Distribution:
    return Distribution(name, description, dict(toolsets))


DISTRIBUTIONS: dict[str, Distribution] = {
    d.name: d
    for d in (
        _d("default", "every core toolset, always", web=1.0, file=1.0, terminal=1.0, code_execution=1.0,
           vision=1.0, image_gen=1.0, tts=1.0, browser=1.0, todo=1.0, skills=1.0, memory=1.0),
        _d("research", "web-heavy research with some files and code", web=0.9, browser=0.4, file=0.5,
           code_execution=0.4, vision=0.2, todo=0.3),
        _d("development", "coding work: files and terminal first", file=1.0, terminal=0.9,
           code_execution=0.7, web=0.4, todo=0.5),
        _d("image_gen", "image generation and analysis", image_gen=0.9, vision=0.6, web=0.3),
        _d("balanced", "each core toolset half of the time", web=0.5, file=0.5, terminal=0.5,
           code_execution=0.5, vision=0.5, image_gen=0.5, browser=0.5, todo=0.5),
        _d("safe", "no shell or code execution", web=0.8, file=0.6, vision=0.4, image_gen=0.3, todo=0.4),
        _d("minimal", "web search only", web=1.0),
        _d("terminal_only", "the terminal and nothing else", terminal=1.0),
        _d("browser_only", "the browser and nothing else", browser=1.0),
    )
}


def load_distributions(user: Any) -> dict[str, Distribution]:
    """The built-in distributions merged with ``batch.distributions`` from config.yaml."""
    out = dict(DISTRIBUTIONS)
    if user is None:
        return out
    if not isinstance(user, Mapping):
        raise ConfigError("batch.distributions must be a mapping of name -> {toolsets: {name: probability}}")
    for name, spec in user.items():
        if not isinstance(spec, Mapping) or not isinstance(spec.get("toolsets"), Mapping):
            raise ConfigError(f"batch.distributions.{name} needs a toolsets mapping of name -> probability")
        probs: dict[str, float] = {}
        for ts, p in spec["toolsets"].items():
            try:
                value = float(p)
            except (TypeError, ValueError):
                raise ConfigError(f"batch.distributions.{name}.toolsets.{ts} must be a number") from None
            if not 0.0 <= value <= 1.0:
                raise ConfigError(f"batch.distributions.{name}.toolsets.{ts} must be between 0 and 1")
            probs[str(ts)] = value
        out[str(name)] = Distribution(str(name), str(spec.get("description", "")), probs)
    return out
