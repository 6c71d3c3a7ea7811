"""The protobuf wire format for the few messages the Feishu and Yuanbao connections carry.

Varints and length-delimited fields only (what those messages use), so no protobuf runtime is needed.
A message is described by a schema, ``{field number: (name, kind)}``, kind ``"s"`` (string), ``"i"``
(an integer: uint32/uint64/int32/bool), ``"b"`` (bytes), a schema (a nested message) or a one-item
list holding a schema (a repeated nested message). :func:`encode` leaves out fields at their default
(``""``, ``0``, empty), as proto3 does; :func:`decode` fills absent ones in with those defaults and
raises ``ValueError`` on anything that is not well-formed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Schema = Mapping[int, tuple[str, Any]]


def varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int32s are sent as ten-byte two's complement, as protobuf does
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def field(number: int, value: int | bytes | str) -> bytes:
    if isinstance(value, int):
        return varint(number << 3) + varint(value)
    data = value.encode() if isinstance(value, str) else value
    return varint(number << 3 | 2) + varint(len(data)) + data


def fields(data: bytes) -> list[tuple[int, int | bytes]]:
    """(field number, int or bytes) pairs; ValueError on anything that is not well-formed."""
    out: list[tuple[int, int | bytes]] = []
    at = 0

    def read_varint() -> int:
        nonlocal at
        value = shift = 0
        while True:
            if at >= len(data) or shift > 63:
                raise ValueError("a truncated varint")
            byte = data[at]
            at += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return value

    while at < len(data):
        key = read_varint()
        number, wire = key >> 3, key & 7
        if wire == 0:
            out.append((number, read_varint()))
        elif wire == 2:
            size = read_varint()
            if at + size > len(data):
                raise ValueError("a truncated field")
            out.append((number, data[at:at + size]))
            at += size
        elif wire in (1, 5):  # fixed64 / fixed32: in none of these messages, skipped
            at += 8 if wire == 1 else 4
        else:
            raise ValueError(f"wire type {wire} is not supported")
    return out


def encode(schema: Schema, values: Mapping[str, Any]) -> bytes:
    out = []
    for number, (name, kind) in sorted(schema.items()):
        value = values.get(name)
        if value is None or value == "" or value == 0 or value == [] or value == {} or value == b"":
            continue
        if isinstance(kind, list):
            out += [field(number, encode(kind[0], item)) for item in value]
        elif isinstance(kind, Mapping):
            out.append(field(number, encode(kind, value)))
        elif kind == "i":
            out.append(field(number, int(value)))
        else:
            out.append(field(number, value if kind == "b" else str(value)))
    return b"".join(out)


def _default(kind: Any) -> Any:
    if isinstance(kind, list):
        return []
    if isinstance(kind, Mapping):
        return {}
    return {"s": "", "i": 0, "b": b""}[kind]


def decode(schema: Schema, data: bytes) -> dict[str, Any]:
    out = {name: _default(kind) for name, kind in schema.values()}
    for number, value in fields(data):
        if number not in schema:
            continue
        name, kind = schema[number]
        if kind == "i":
            if not isinstance(value, int):
                raise ValueError(f"field {name} should be a number")
            out[name] = value - (1 << 64) if value >= 1 << 63 else value
            continue
        if not isinstance(value, bytes):
            raise ValueError(f"field {name} should be length-delimited")
        if isinstance(kind, list):
            out[name].append(decode(kind[0], value))
        elif isinstance(kind, Mapping):
            out[name] = decode(kind, value)
        elif kind == "s":
            try:
                out[name] = value.decode()
            except UnicodeDecodeError as exc:
                raise ValueError(f"field {name} is not UTF-8") from exc
        else:
            out[name] = value
    return out
