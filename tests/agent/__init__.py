"""Tests of hermes.agent: the loop, sessions, batch runs, the local model."""
