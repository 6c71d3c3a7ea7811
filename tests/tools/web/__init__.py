"""Tests of hermes.tools.web."""
