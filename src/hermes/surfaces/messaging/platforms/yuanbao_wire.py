"""Tencent Yuanbao's bot connection, byte for byte: the ``ConnMsg`` envelope and the business messages.

Tencent publishes no protocol document or SDK for Yuanbao bots; these facts come from reading the
upstream hermes-agent 0.19.0 Yuanbao adapter (itself a port of Tencent's ``yuanbao-openclaw-plugin``)
and are what the tests' loopback fake speaks — they were never checked against Tencent's servers.

- Log-in: ``POST {api}/api/v5/robotLogic/sign-token`` with JSON ``app_key``, ``nonce`` (random hex),
  ``timestamp`` (Beijing time, ``2006-01-02T15:04:05+08:00``) and ``signature`` = hex HMAC-SHA256,
  keyed by the app secret, of ``nonce + timestamp + app_key + app_secret``; the answer
  ``{"code": 0, "data": {"token", "bot_id", "source", "duration"}}``.
- Then a WebSocket (``wss://bot-wss.yuanbao.tencent.com/wss/connection``) whose binary frames are one
  protobuf ``ConnMsg`` each: ``head`` (1) and ``data`` (2, the business message's bytes). ``Head``:
  ``cmd_type`` (1: 0 request, 1 response, 2 push, 3 push ack), ``cmd`` (2), ``seq_no`` (3), ``msg_id``
  (4, pairs a response with its request), ``module`` (5), ``need_ack`` (6), ``status`` (10, non-zero:
  refused).
- ``auth-bind`` (module ``conn_access``) carries ``AuthBindReq`` (biz id ``ybBot``, the token, the
  bot id as uid); its response's ``AuthBindRsp`` has ``code`` and a ``connect_id``. ``ping`` (same
  module, empty) every 30 s keeps the connection.
- Messages arrive as pushes of ``InboundMessagePush`` (acknowledged with a push ack when ``need_ack``);
  the bot sends with ``send_c2c_message`` / ``send_group_message`` requests (module
  ``yuanbao_openclaw_proxy``), shows it is writing with ``send_private_heartbeat`` /
  ``send_group_heartbeat`` (1 running, 2 finished), and asks ``query_group_info`` /
  ``get_group_member_list``. Message bodies are Tencent IM elements (``TIMTextElem``,
  ``TIMCustomElem`` whose ``data`` JSON ``{"elem_type": 1002, "user_id": …}`` is an @-mention,
  ``TIMFaceElem`` a sticker, ``TIMSoundElem`` audio).
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

from hermes.surfaces.messaging.platforms.protowire import Schema, decode, encode

REQUEST, RESPONSE, PUSH, PUSH_ACK = 0, 1, 2, 3
CONN_MODULE = "conn_access"
BIZ_MODULE = "yuanbao_openclaw_proxy"
HEARTBEAT_RUNNING, HEARTBEAT_FINISH = 1, 2

HEAD: Schema = {1: ("cmd_type", "i"), 2: ("cmd", "s"), 3: ("seq_no", "i"), 4: ("msg_id", "s"),
                5: ("module", "s"), 6: ("need_ack", "i"), 10: ("status", "i")}
CONN_MSG: Schema = {1: ("head", HEAD), 2: ("data", "b")}

AUTH_BIND_REQ: Schema = {
    1: ("biz_id", "s"),
    2: ("auth_info", {1: ("uid", "s"), 2: ("source", "s"), 3: ("token", "s")}),
    3: ("device_info", {1: ("app_version", "s"), 2: ("app_operation_system", "s"), 10: ("instance_id", "s"),
                        24: ("bot_version", "s")}),
    5: ("env_name", "s"),
}
AUTH_BIND_RSP: Schema = {1: ("code", "i"), 2: ("message", "s"), 3: ("connect_id", "s")}

MSG_CONTENT: Schema = {1: ("text", "s"), 2: ("uuid", "s"), 3: ("image_format", "i"), 4: ("data", "s"),
                       5: ("desc", "s"), 6: ("ext", "s"), 7: ("sound", "s"), 9: ("index", "i"), 10: ("url", "s"),
                       11: ("file_size", "i"), 12: ("file_name", "s")}
ELEMENT: Schema = {1: ("msg_type", "s"), 2: ("msg_content", MSG_CONTENT)}

INBOUND_PUSH: Schema = {
    1: ("callback_command", "s"), 2: ("from_account", "s"), 3: ("to_account", "s"), 4: ("sender_nickname", "s"),
    5: ("group_id", "s"), 6: ("group_code", "s"), 7: ("group_name", "s"), 8: ("msg_seq", "i"),
    9: ("msg_random", "i"), 10: ("msg_time", "i"), 11: ("msg_key", "s"), 12: ("msg_id", "s"),
    13: ("msg_body", [ELEMENT]), 14: ("cloud_custom_data", "s"), 16: ("bot_owner_id", "s"),
}
SEND_C2C: Schema = {1: ("msg_id", "s"), 2: ("to_account", "s"), 3: ("from_account", "s"), 4: ("msg_random", "i"),
                    5: ("msg_body", [ELEMENT]), 6: ("group_code", "s"), 7: ("msg_seq", "i")}
SEND_GROUP: Schema = {1: ("msg_id", "s"), 2: ("group_code", "s"), 3: ("from_account", "s"), 4: ("to_account", "s"),
                      5: ("random", "s"), 6: ("msg_body", [ELEMENT]), 7: ("ref_msg_id", "s"), 8: ("msg_seq", "i")}
PRIVATE_HEARTBEAT: Schema = {1: ("from_account", "s"), 2: ("to_account", "s"), 3: ("heartbeat", "i")}
GROUP_HEARTBEAT: Schema = {1: ("from_account", "s"), 2: ("to_account", "s"), 3: ("group_code", "s"),
                           4: ("send_time", "i"), 5: ("heartbeat", "i")}
GROUP_INFO_REQ: Schema = {1: ("group_code", "s")}
GROUP_INFO_RSP: Schema = {1: ("code", "i"), 2: ("message", "s"), 3: ("group_info", {
    1: ("group_name", "s"), 2: ("group_owner_user_id", "s"), 3: ("group_owner_nickname", "s"),
    4: ("group_size", "i")})}
MEMBER_LIST_REQ: Schema = {1: ("group_code", "s"), 2: ("offset", "i"), 3: ("limit", "i")}
MEMBER_LIST_RSP: Schema = {1: ("code", "i"), 2: ("message", "s"), 3: ("members", [{
    1: ("user_id", "s"), 2: ("nickname", "s"), 3: ("user_type", "i"), 4: ("join_time", "i"), 5: ("name_card", "s")}]),
    4: ("next_offset", "i"), 5: ("is_complete", "i")}

#: the request each business command carries (and the fake reads)
REQUESTS: dict[str, Schema] = {"send_c2c_message": SEND_C2C, "send_group_message": SEND_GROUP,
                               "send_private_heartbeat": PRIVATE_HEARTBEAT, "send_group_heartbeat": GROUP_HEARTBEAT,
                               "query_group_info": GROUP_INFO_REQ, "get_group_member_list": MEMBER_LIST_REQ}
#: a member's field 3 in ``get_group_member_list``, read as upstream's tools read it (its codec's comment
#: calls the field a role instead: unverified)
USER_TYPES = {0: "unknown", 1: "user", 2: "yuanbao_ai", 3: "bot"}


def frame(cmd_type: int, cmd: str, msg_id: str, module: str, data: bytes = b"", *, seq_no: int = 0,
          need_ack: bool = False, status: int = 0) -> bytes:
    head = {"cmd_type": cmd_type, "cmd": cmd, "seq_no": seq_no, "msg_id": msg_id, "module": module,
            "need_ack": int(need_ack), "status": status}
    return encode(CONN_MSG, {"head": head, "data": data})


def unframe(raw: bytes) -> tuple[dict[str, Any], bytes]:
    """(head, data) of one ``ConnMsg``; ValueError when it is not one."""
    msg = decode(CONN_MSG, raw)
    return msg["head"] or decode(HEAD, b""), msg["data"]


def sign(app_key: str, app_secret: str, nonce: str, timestamp: str) -> str:
    plain = nonce + timestamp + app_key + app_secret
    return hmac.new(app_secret.encode(), plain.encode(), hashlib.sha256).hexdigest()


def text_body(text: str) -> list[dict[str, Any]]:
    return [{"msg_type": "TIMTextElem", "msg_content": {"text": text}}]
