"""Tests of hermes.tools.skills."""
