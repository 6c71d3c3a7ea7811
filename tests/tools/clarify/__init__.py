"""Tests of hermes.tools.clarify."""
