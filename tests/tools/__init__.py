"""Tests of hermes.tools: the registry, discovery, toolsets, and one folder per tool."""
