"""Tests of hermes.tools.sessions."""
