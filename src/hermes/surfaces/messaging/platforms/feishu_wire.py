"""Feishu's two event transports, byte for byte: long-connection frames and webhook checks.

**Long connection.** Each WebSocket message is one protobuf ``pbbp2.Frame`` (proto2, as the lark-oapi
SDK defines it): ``SeqID`` (1, uint64), ``LogID`` (2, uint64), ``service`` (3, int32), ``method`` (4,
int32: 0 control, 1 data), ``headers`` (5, repeated ``Header{key=1, value=2}``), ``payload_encoding``
(6), ``payload_type`` (7), ``payload`` (8, bytes), ``LogIDNew`` (9). Header ``type`` says what a frame
is: ``ping``/``pong`` (control) or ``event``/``card`` (data, the payload an event's JSON, possibly in
``sum`` parts numbered by ``seq`` under one ``message_id``). A data frame is answered by sending it
back with the payload ``{"code": 200}``. The codec here is the protobuf wire format for just these
fields (varints and length-delimited fields, ``protowire``), so no protobuf runtime is needed.

**Webhook.** Feishu POSTs each event to the request URL. With an Encrypt Key the body is
``{"encrypt": base64(iv ‖ AES-256-CBC(key=SHA-256(encrypt key), PKCS#7))}`` and the request is signed:
``X-Lark-Signature`` = hex SHA-256 of ``X-Lark-Request-Timestamp`` + ``X-Lark-Request-Nonce`` +
encrypt key + the raw body. The decrypted event's ``header.token`` (``token`` in the URL
verification) must equal the app's Verification Token.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from dataclasses import dataclass, field

from hermes.surfaces.messaging.platforms.protowire import field as _field
from hermes.surfaces.messaging.platforms.protowire import fields as _fields

CONTROL, DATA = 0, 1


@dataclass
class Frame:
    seq_id: int = 0
    log_id: int = 0
    service: int = 0
    method: int = 0
    headers: list[tuple[str, str]] = field(default_factory=list)
    payload: bytes = b""
    payload_encoding: str = ""
    payload_type: str = ""
    log_id_new: str = ""

    def header(self, key: str) -> str:
        return next((v for k, v in self.headers if k == key), "")


def encode(frame: Frame) -> bytes:
    out = [_field(1, frame.seq_id), _field(2, frame.log_id), _field(3, frame.service), _field(4, frame.method)]
    out += [_field(5, _field(1, k) + _field(2, v)) for k, v in frame.headers]
    for number, text in ((6, frame.payload_encoding), (7, frame.payload_type)):
        if text:
            out.append(_field(number, text))
    if frame.payload:
        out.append(_field(8, frame.payload))
    if frame.log_id_new:
        out.append(_field(9, frame.log_id_new))
    return b"".join(out)


def decode(data: bytes) -> Frame:
    frame = Frame()
    for number, value in _fields(data):
        if isinstance(value, int):
            if number == 1:
                frame.seq_id = value
            elif number == 2:
                frame.log_id = value
            elif number == 3:
                frame.service = value - (1 << 64) if value >= 1 << 63 else value
            elif number == 4:
                frame.method = value
        elif number == 5:
            pair = dict((n, v) for n, v in _fields(value) if isinstance(v, bytes))
            frame.headers.append((pair.get(1, b"").decode(), pair.get(2, b"").decode()))
        elif number == 6:
            frame.payload_encoding = value.decode()
        elif number == 7:
            frame.payload_type = value.decode()
        elif number == 8:
            frame.payload = value
        elif number == 9:
            frame.log_id_new = value.decode()
    return frame


# -- webhook ---------------------------------------------------------------------------------------------

def signature(timestamp: str, nonce: str, encrypt_key: str, body: bytes) -> str:
    return hashlib.sha256((timestamp + nonce + encrypt_key).encode() + body).hexdigest()


def signed(timestamp: str, nonce: str, encrypt_key: str, body: bytes, given: str) -> bool:
    return hmac.compare_digest(signature(timestamp, nonce, encrypt_key, body), given or "")


def decrypt(encrypted: str, encrypt_key: str) -> str:
    """The JSON text inside an ``encrypt`` field; ValueError when it does not decrypt."""
    from cryptography.hazmat.primitives import padding
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    raw = base64.b64decode(encrypted, validate=True)
    if len(raw) < 32 or len(raw) % 16:
        raise ValueError("the encrypted body has the wrong length")
    key = hashlib.sha256(encrypt_key.encode()).digest()
    decryptor = Cipher(algorithms.AES(key), modes.CBC(raw[:16])).decryptor()
    padded = decryptor.update(raw[16:]) + decryptor.finalize()
    unpadder = padding.PKCS7(128).unpadder()
    return (unpadder.update(padded) + unpadder.finalize()).decode()


def encrypt(plain: str, encrypt_key: str, iv: bytes) -> str:
    """The inverse of :func:`decrypt` (what Feishu sends; the tests' fake uses it)."""
    from cryptography.hazmat.primitives import padding
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    key = hashlib.sha256(encrypt_key.encode()).digest()
    padder = padding.PKCS7(128).padder()
    padded = padder.update(plain.encode()) + padder.finalize()
    encryptor = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
    return base64.b64encode(iv + encryptor.update(padded) + encryptor.finalize()).decode()
