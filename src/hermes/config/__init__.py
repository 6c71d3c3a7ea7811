"""Configuration: where hermes keeps its files, config.yaml, .env and typed views over them."""

from hermes.config.paths import HermesPaths, hermes_home

__all__ = ["HermesPaths", "hermes_home"]
