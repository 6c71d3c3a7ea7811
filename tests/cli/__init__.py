"""Tests of the hermes commands (hermes.cli), most of them run as a user runs them."""
