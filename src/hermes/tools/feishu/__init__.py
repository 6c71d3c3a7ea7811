"""The five Feishu document-comment tools (requirement TS-8): ``feishu_doc_read`` and the four
``feishu_drive_*`` comment tools, on the Open Platform API.

They exist only inside the Feishu document-comment handler
(:mod:`hermes.surfaces.messaging.feishu_comment`): their toolsets are given to no surface, and the
handler's bounded sub-agent carries the app's client in its session state (``feishu``). Called
anywhere else they answer that no Feishu client is available. See docs/tools/feishu.md.
"""
