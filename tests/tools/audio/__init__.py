"""Tests of hermes.tools.audio."""
