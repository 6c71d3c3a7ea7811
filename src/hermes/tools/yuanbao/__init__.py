"""The Yuanbao platform tools (requirement TS-8): group info and members, direct messages and stickers.

They travel over the messaging gateway's live Yuanbao connection (``link``) and exist only in
messaging sessions (toolset ``yuanbao``, bundled in ``hermes-yuanbao``). See docs/tools/yuanbao.md.
"""
