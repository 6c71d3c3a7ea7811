"""Tests of hermes.tools.cron."""
