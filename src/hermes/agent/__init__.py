"""The conversation loop, model providers, prompt assembly and the intercepted tools."""
