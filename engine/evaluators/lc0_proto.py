"""A small reader of the protobuf wire format, enough for lc0's weight files (``proto/net.proto``).

No schema and no generated code: :class:`Message` indexes a serialized message by field number, and the caller,
who knows the schema, asks for a field as the type it is declared with (a nested message, bytes, an integer, a
float). Every read is bounds-checked, so a truncated or corrupt buffer raises :class:`ProtoError` instead of
returning garbage.
"""

from __future__ import annotations

import struct
from typing import Optional, Union

Buffer = Union[bytes, bytearray, memoryview]

# Wire types of the protobuf encoding.
VARINT = 0
FIXED64 = 1
LENGTH_DELIMITED = 2
START_GROUP = 3
END_GROUP = 4
FIXED32 = 5

#: A varint never needs more than 10 bytes (64 bits, 7 per byte).
MAX_VARINT_BYTES = 10


class ProtoError(ValueError):
    """The buffer is not a well-formed protobuf message (truncated, or not protobuf at all)."""


def read_varint(buf: memoryview, pos: int) -> tuple[int, int]:
    """The varint at ``pos`` and the position after it."""
    result = 0
    shift = 0
    end = len(buf)
    for _ in range(MAX_VARINT_BYTES):
        if pos >= end:
            raise ProtoError("truncated varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
    raise ProtoError("varint longer than 10 bytes")


class Message:
    """One serialized message, its fields indexed by number (values in the order they appear).

    A value is an ``int`` for varint and fixed-width fields (fixed32/fixed64 kept as their raw unsigned bits) and
    a ``memoryview`` (no copy) for length-delimited ones. Groups, deprecated in proto2 and absent from lc0's
    files, are refused.
    """

    __slots__ = ("_fields",)

    def __init__(self, data: Buffer) -> None:
        buf = memoryview(data).cast("B") if not isinstance(data, memoryview) else data
        fields: dict[int, list] = {}
        pos, end = 0, len(buf)
        while pos < end:
            key, pos = read_varint(buf, pos)
            number, wire = key >> 3, key & 7
            if number == 0:
                raise ProtoError("field number 0")
            if wire == VARINT:
                value, pos = read_varint(buf, pos)
            elif wire == FIXED32:
                if pos + 4 > end:
                    raise ProtoError("truncated fixed32 field")
                value = int.from_bytes(buf[pos:pos + 4], "little")
                pos += 4
            elif wire == FIXED64:
                if pos + 8 > end:
                    raise ProtoError("truncated fixed64 field")
                value = int.from_bytes(buf[pos:pos + 8], "little")
                pos += 8
            elif wire == LENGTH_DELIMITED:
                size, pos = read_varint(buf, pos)
                if pos + size > end:
                    raise ProtoError(f"field {number} runs past the end ({size} bytes, {end - pos} left)")
                value = buf[pos:pos + size]
                pos += size
            else:
                raise ProtoError(f"unsupported wire type {wire} (field {number})")
            fields.setdefault(number, []).append(value)
        self._fields = fields

    def has(self, number: int) -> bool:
        return number in self._fields

    def numbers(self) -> list[int]:
        """The field numbers present, in increasing order."""
        return sorted(self._fields)

    def _last(self, number: int):
        values = self._fields.get(number)
        return values[-1] if values else None  # proto2: the last occurrence of a singular field wins

    def _check(self, number: int, value, want: type, what: str):
        if not isinstance(value, want):
            raise ProtoError(f"field {number} is not {what}")
        return value

    def message(self, number: int) -> Optional["Message"]:
        """The nested message in field ``number``, or None when absent."""
        value = self._last(number)
        if value is None:
            return None
        return Message(self._check(number, value, memoryview, "a message"))

    def messages(self, number: int) -> list["Message"]:
        """Every nested message of the repeated field ``number``."""
        return [Message(self._check(number, v, memoryview, "a message")) for v in self._fields.get(number, ())]

    def blob(self, number: int) -> bytes:
        """The bytes field ``number`` (empty when absent)."""
        value = self._last(number)
        return b"" if value is None else bytes(self._check(number, value, memoryview, "bytes"))

    def string(self, number: int, default: str = "") -> str:
        value = self._last(number)
        if value is None:
            return default
        try:
            return bytes(self._check(number, value, memoryview, "a string")).decode("utf-8")
        except UnicodeDecodeError:
            raise ProtoError(f"field {number} is not UTF-8 text") from None

    def uint(self, number: int, default: int = 0) -> int:
        """A varint or fixed-width integer field (enums, uint32, fixed32), unsigned."""
        value = self._last(number)
        if value is None:
            return default
        return self._check(number, value, int, "an integer")

    def float32(self, number: int, default: float = 0.0) -> float:
        """A ``float`` field (fixed32 on the wire)."""
        value = self._last(number)
        if value is None:
            return default
        return struct.unpack("<f", self._check(number, value, int, "a float").to_bytes(4, "little"))[0]

    def uints(self, number: int) -> list[int]:
        """A repeated integer field, packed or not (a parser must accept both)."""
        out: list[int] = []
        for value in self._fields.get(number, ()):
            if isinstance(value, int):
                out.append(value)
                continue
            pos = 0
            while pos < len(value):
                item, pos = read_varint(value, pos)
                out.append(item)
        return out
