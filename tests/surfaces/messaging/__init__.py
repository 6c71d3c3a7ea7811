"""Tests of hermes.surfaces.messaging."""
