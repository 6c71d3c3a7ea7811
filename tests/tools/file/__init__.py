"""Tests of hermes.tools.file."""
