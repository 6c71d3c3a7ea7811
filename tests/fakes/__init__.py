"""Test doubles that speak real protocols (HTTP) so the code under test runs unmodified."""

from fakes.model_server import Reply, ScriptedModelServer, call, error, text

__all__ = ["Reply", "ScriptedModelServer", "call", "error", "text"]
