"""Network helpers shared by the tools and the gateway server: SSRF-safe fetching, HTML to Markdown."""
