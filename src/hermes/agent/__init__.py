"""The conversation loop, model providers, prompt assembly, delegation and the cron job runner."""
