"""Tests of hermes.tools.x."""
