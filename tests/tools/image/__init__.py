"""Tests of hermes.tools.image."""
