"""Tests of the Tool Gateway server (hermes.toolgateway) over real HTTP, and its portal."""
