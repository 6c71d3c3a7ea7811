"""Tests of hermes.tools.terminal."""
