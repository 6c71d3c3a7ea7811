"""Tests of hermes.tools.vision."""
