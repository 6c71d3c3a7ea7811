"""Tests of hermes.tools.memory."""
