"""Tests of hermes.tools.delegate."""
