"""Tests of hermes.surfaces."""
