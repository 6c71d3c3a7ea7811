"""hermes — a runtime for tool-using LLM agents.

Importing the package is cheap on purpose: it exposes only the version. Everything else lives in
sub-packages that are imported where they are used (see docs/architecture.md).
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
