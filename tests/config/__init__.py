"""Tests of hermes.config."""
