"""Tests of hermes.store."""
