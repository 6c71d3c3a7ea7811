"""The Discord platform tools ``discord`` and ``discord_admin`` (requirement TS-8), on the Discord REST API.

Both use the messaging adapter's bot token (``DISCORD_BOT_TOKEN``) and exist only in messaging
sessions (toolsets ``discord`` / ``discord_admin``, bundled in ``hermes-discord``). See
docs/tools/discord.md.
"""
