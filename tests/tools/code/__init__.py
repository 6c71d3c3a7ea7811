"""Tests of hermes.tools.code."""
