"""Declarative message definitions, and the encoders/decoders built from them once per version.

An API is written down once as data, field by field, each field with the versions that carry it
(as in Apache Kafka's message specs), e.g.

    Api(0, "Produce", versions="3-9", flexible="9+",
        request=[
            Field("transactional_id", STRING, "3+", nullable="3+"),
            Field("acks", INT16),
            Field("topic_data", Array("TopicProduceData", [
                Field("name", STRING),
                ...
            ])),
        ],
        response=[...])

`Api.request.decode(buf, version)` returns an instance of a generated class whose attributes are
the fields' snake_case names; fields a version lacks hold their defaults, so handlers read every
field at every version. `encode(obj, version)` returns a `Writer` whose `parts()` are bytes and,
for RECORDS fields holding something that is not bytes (a file slice), that object itself, so the
broker can send log bytes without copying them through Python.
"""

from __future__ import annotations

import uuid
from typing import Any, Callable

from . import primitives as p
from .primitives import DecodeError

INF = 1 << 15


def parse_versions(spec: str | tuple[int, int] | None) -> tuple[int, int]:
    """'3+' -> (3, INF); '0-5' -> (0, 5); '2' -> (2, 2); 'none' or None -> an empty range."""
    if spec is None or spec == "none":
        return (1, 0)
    if isinstance(spec, tuple):
        return spec
    spec = spec.strip()
    if spec.endswith("+"):
        return (int(spec[:-1]), INF)
    if "-" in spec:
        lo, hi = spec.split("-")
        return (int(lo), int(hi))
    return (int(spec), int(spec))


def _in(rng: tuple[int, int], version: int) -> bool:
    return rng[0] <= version <= rng[1]


# ----------------------------------------------------------------------------------------------
# Writer: a bytearray plus out-of-band parts (file slices for RECORDS fields)
# ----------------------------------------------------------------------------------------------


class Writer:
    """Accumulates encoded bytes; RECORDS values that are not bytes are kept as separate parts."""

    __slots__ = ("out", "_parts")

    def __init__(self) -> None:
        self.out = bytearray()
        self._parts: list = []

    def external(self, obj) -> None:
        self._parts.append(self.out)
        self._parts.append(obj)
        self.out = bytearray()

    def parts(self) -> list:
        """The encoded message as a list of bytes-like objects and external (file slice) parts."""
        if not self._parts:
            return [self.out]
        return [*self._parts, self.out]

    def __len__(self) -> int:
        return len(self.out) + sum(len(x) for x in self._parts)

    def to_bytes(self) -> bytes:
        """Flatten everything (external parts must then offer read_bytes() or be bytes-like)."""
        chunks = []
        for part in self.parts():
            chunks.append(part.read_bytes() if hasattr(part, "read_bytes") else bytes(part))
        return b"".join(chunks)


# ----------------------------------------------------------------------------------------------
# Types
# ----------------------------------------------------------------------------------------------

Decoder = Callable[[Any, int], tuple[Any, int]]
Encoder = Callable[[Writer, Any], None]


class FieldType:
    """A wire type. Builds its decoder/encoder for a given flexibility and nullability."""

    name = "?"

    def decoder(self, version: int, flexible: bool, nullable: bool) -> Decoder:
        raise NotImplementedError

    def encoder(self, version: int, flexible: bool, nullable: bool) -> Encoder:
        raise NotImplementedError

    def default(self, nullable: bool):
        return None

    def min_size(self, version: int, flexible: bool) -> int:
        """The fewest bytes a value of this type takes on the wire (arrays check counts with it)."""
        return 1

    def __repr__(self) -> str:
        return self.name


class _Fixed(FieldType):
    def __init__(self, name: str, reader, st, default) -> None:
        self.name = name
        self._reader = reader
        self._pack = st.pack
        self._size = st.size
        self._default = default

    def min_size(self, version, flexible):
        return self._size

    def decoder(self, version, flexible, nullable):
        return self._reader

    def encoder(self, version, flexible, nullable):
        pack = self._pack

        def encode(w: Writer, value) -> None:
            w.out += pack(value)

        return encode

    def default(self, nullable):
        return self._default


INT8 = _Fixed("int8", p.read_int8, p.INT8, 0)
INT16 = _Fixed("int16", p.read_int16, p.INT16, 0)
UINT16 = _Fixed("uint16", p.read_uint16, p.UINT16, 0)
INT32 = _Fixed("int32", p.read_int32, p.INT32, 0)
UINT32 = _Fixed("uint32", p.read_uint32, p.UINT32, 0)
INT64 = _Fixed("int64", p.read_int64, p.INT64, 0)
FLOAT64 = _Fixed("float64", p.read_float64, p.FLOAT64, 0.0)


class _Bool(FieldType):
    name = "bool"

    def decoder(self, version, flexible, nullable):
        return p.read_bool

    def encoder(self, version, flexible, nullable):
        def encode(w: Writer, value) -> None:
            w.out.append(1 if value else 0)

        return encode

    def default(self, nullable):
        return False


BOOL = _Bool()


class _Uuid(FieldType):
    name = "uuid"

    def decoder(self, version, flexible, nullable):
        return p.read_uuid

    def encoder(self, version, flexible, nullable):
        def encode(w: Writer, value) -> None:
            p.write_uuid(w.out, value)

        return encode

    def default(self, nullable):
        return p.ZERO_UUID

    def min_size(self, version, flexible):
        return 16


UUID = _Uuid()


class _String(FieldType):
    """A string; compact in flexible versions unless `always_int16` (the request header's client_id)."""

    def __init__(self, always_int16: bool = False) -> None:
        self.name = "string"
        self.always_int16 = always_int16

    def decoder(self, version, flexible, nullable):
        flexible = flexible and not self.always_int16
        read = p.read_compact_string if flexible else p.read_string
        if nullable:
            return lambda buf, pos: read(buf, pos, True)
        return read

    def encoder(self, version, flexible, nullable):
        flexible = flexible and not self.always_int16
        write = p.write_compact_string if flexible else p.write_string

        def encode(w: Writer, value) -> None:
            if value is None and not nullable:
                raise ValueError("non-nullable string is None")
            write(w.out, value)

        return encode

    def default(self, nullable):
        return None if nullable else ""

    def min_size(self, version, flexible):
        return 1 if flexible and not self.always_int16 else 2


STRING = _String()
INT16_STRING = _String(always_int16=True)


class _Bytes(FieldType):
    name = "bytes"

    def decoder(self, version, flexible, nullable):
        read = p.read_compact_bytes if flexible else p.read_bytes
        if nullable:
            return lambda buf, pos: read(buf, pos, True)
        return read

    def encoder(self, version, flexible, nullable):
        write = p.write_compact_bytes if flexible else p.write_bytes

        def encode(w: Writer, value) -> None:
            if value is None and not nullable:
                raise ValueError("non-nullable bytes is None")
            write(w.out, value)

        return encode

    def default(self, nullable):
        return None if nullable else b""

    def min_size(self, version, flexible):
        return 1 if flexible else 4


BYTES = _Bytes()


class _Records(FieldType):
    """A records blob. Decodes to a memoryview slice of the frame (zero copy, writable when the
    frame is a bytearray); encodes bytes-likes inline and anything else as an external part."""

    name = "records"

    def decoder(self, version, flexible, nullable):
        def decode(buf, pos):
            if flexible:
                length, pos = p.read_unsigned_varint(buf, pos)
                length -= 1
            else:
                length, pos = p.read_int32(buf, pos)
            if length < 0:
                if length == -1:
                    return None, pos
                raise DecodeError(f"invalid records length {length}")
            p.need(buf, pos, length)
            view = buf if isinstance(buf, memoryview) else memoryview(buf)
            return view[pos : pos + length], pos + length

        return decode

    def encoder(self, version, flexible, nullable):
        def encode(w: Writer, value) -> None:
            if value is None:
                if flexible:
                    w.out.append(0)
                else:
                    w.out += b"\xff\xff\xff\xff"
                return
            size = len(value)
            if flexible:
                p.write_unsigned_varint(w.out, size + 1)
            else:
                w.out += p.INT32.pack(size)
            if isinstance(value, (bytes, bytearray, memoryview)):
                w.out += value
            else:
                w.external(value)

        return encode

    def default(self, nullable):
        return None if nullable else b""

    def min_size(self, version, flexible):
        return 1 if flexible else 4


RECORDS = _Records()


class Array(FieldType):
    """An array of a primitive type, or of a named struct when given fields."""

    def __init__(self, item: FieldType | str, fields: list[Field] | None = None) -> None:
        if isinstance(item, str):
            item = StructType(item, fields or [])
        self.item = item
        self.name = f"[]{item.name}"

    def min_size(self, version, flexible):
        return 1 if flexible else 4

    def decoder(self, version, flexible, nullable):
        item = self.item.decoder(version, flexible, False)
        item_size = max(1, self.item.min_size(version, flexible))

        def decode(buf, pos):
            if flexible:
                n, pos = p.read_unsigned_varint(buf, pos)
                n -= 1
            else:
                n, pos = p.read_int32(buf, pos)
            if n < 0:
                if n == -1 and nullable:
                    return None, pos
                raise DecodeError(f"invalid array length {n}")
            # Every element takes at least item_size bytes: refuse absurd counts before looping,
            # so a hostile count cannot turn a frame into many more objects than it has bytes.
            if n * item_size > len(buf) - pos:
                raise DecodeError(f"array length {n} exceeds the {len(buf) - pos} bytes left")
            items = []
            append = items.append
            for _ in range(n):
                value, pos = item(buf, pos)
                append(value)
            return items, pos

        return decode

    def encoder(self, version, flexible, nullable):
        item = self.item.encoder(version, flexible, False)

        def encode(w: Writer, values) -> None:
            if values is None:
                if not nullable:
                    raise ValueError("non-nullable array is None")
                if flexible:
                    w.out.append(0)
                else:
                    w.out += b"\xff\xff\xff\xff"
                return
            if flexible:
                p.write_unsigned_varint(w.out, len(values) + 1)
            else:
                w.out += p.INT32.pack(len(values))
            for value in values:
                item(w, value)

        return encode

    def default(self, nullable):
        return None if nullable else []


class Field:
    """One field of a message or struct: name, type, and the versions that carry it."""

    __slots__ = ("name", "type", "versions", "nullable", "tag", "_default", "ignorable", "tag_null")

    def __init__(
        self,
        name: str,
        type: FieldType,
        versions: str | tuple[int, int] = "0+",
        *,
        nullable: str | tuple[int, int] | bool | None = None,
        tag: int | None = None,
        default: Any = ...,
        ignorable: bool = False,
        tag_null: bool = False,
    ) -> None:
        self.name = name
        self.type = type
        self.versions = parse_versions(versions)
        if nullable is True:
            nullable = self.versions
        self.nullable = parse_versions(nullable) if nullable else (1, 0)
        self.tag = tag
        self._default = default
        self.ignorable = ignorable
        # A tagged nullable struct whose default in Kafka's spec is an empty struct, not null: a null is
        # then written (tag, size 1, varint 0), as Kafka's generated code writes it.
        self.tag_null = tag_null

    def default(self):
        if self._default is not ...:
            return self._default
        # Nullable-in-some-version fields default to null only when asked; Kafka's default is "".
        return self.type.default(False) if not isinstance(self.type, Array) else []

    def is_nullable(self, version: int) -> bool:
        return _in(self.nullable, version)


class Struct:
    """Base of generated message/struct classes: keyword construction with per-field defaults."""

    __slots__ = ()
    _fields: tuple[Field, ...] = ()

    def __init__(self, **kwargs) -> None:
        for f in self._fields:
            if f.name in kwargs:
                setattr(self, f.name, kwargs.pop(f.name))
            else:
                setattr(self, f.name, f.default())
        if kwargs:
            raise TypeError(f"{type(self).__name__} has no fields {sorted(kwargs)}")

    def __eq__(self, other) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, f.name) == getattr(other, f.name) for f in self._fields)

    def __repr__(self) -> str:
        inner = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in self._fields)
        return f"{type(self).__name__}({inner})"

    def to_dict(self) -> dict:
        def plain(v):
            if isinstance(v, Struct):
                return v.to_dict()
            if isinstance(v, list):
                return [plain(x) for x in v]
            return v

        return {f.name: plain(getattr(self, f.name)) for f in self._fields}


class StructType(FieldType):
    """A named group of fields; generates a class with one attribute per field."""

    def __init__(self, name: str, fields: list[Field]) -> None:
        self.name = name
        self.fields = list(fields)
        names = [f.name for f in fields]
        if len(set(names)) != len(names):
            raise ValueError(f"{name}: duplicate field names")
        self.cls: type[Struct] = type(name, (Struct,), {"__slots__": tuple(names), "_fields": tuple(fields)})
        # Nested struct classes are reachable as attributes: ProduceRequest.TopicProduceData.
        for f in fields:
            inner = f.type.item if isinstance(f.type, Array) else f.type
            if isinstance(inner, StructType):
                setattr(self.cls, inner.name, inner.cls)
        self._decoders: dict[tuple[int, bool], Decoder] = {}
        self._encoders: dict[tuple[int, bool], Encoder] = {}

    def decoder(self, version, flexible, nullable=False):
        key = (version, flexible)
        dec = self._decoders.get(key)
        if dec is None:
            dec = self._decoders[key] = self._build_decoder(version, flexible)
        if nullable:
            # A nullable struct is prefixed with an int8: -1 null, 1 present.
            def decode_nullable(buf, pos):
                marker, pos = p.read_int8(buf, pos)
                if marker <= 0:  # -1; a tagged field's null is a varint 0
                    return None, pos
                return dec(buf, pos)

            return decode_nullable
        return dec

    def encoder(self, version, flexible, nullable=False):
        key = (version, flexible)
        enc = self._encoders.get(key)
        if enc is None:
            enc = self._encoders[key] = self._build_encoder(version, flexible)
        if nullable:

            def encode_nullable(w: Writer, value) -> None:
                if value is None:
                    w.out += b"\xff"
                else:
                    w.out += b"\x01"
                    enc(w, value)

            return encode_nullable
        return enc

    def default(self, nullable):
        return None if nullable else self.cls()

    def min_size(self, version, flexible):
        size = 1 if flexible else 0  # the tagged-field count
        for f in self.fields:
            if not _in(f.versions, version) or f.tag is not None:
                continue
            if isinstance(f.type, StructType) and f.is_nullable(version):
                size += 1
            else:
                size += f.type.min_size(version, flexible)
        return size

    def _build_decoder(self, version: int, flexible: bool) -> Decoder:
        cls = self.cls
        steps = []
        absent = []
        tagged: dict[int, tuple[str, Decoder]] = {}
        for f in self.fields:
            present = _in(f.versions, version)
            if f.tag is not None:
                if present and flexible:
                    tagged[f.tag] = (f.name, f.type.decoder(version, True, f.is_nullable(version)))
                absent.append(f)
            elif present:
                steps.append((f.name, f.type.decoder(version, flexible, f.is_nullable(version))))
            else:
                absent.append(f)
        absent_defaults = [(f.name, f.default) for f in absent]
        new = object.__new__
        read_uvarint = p.read_unsigned_varint

        def decode(buf, pos):
            obj = new(cls)
            for name, default in absent_defaults:
                setattr(obj, name, default())
            for name, dec in steps:
                value, pos = dec(buf, pos)
                setattr(obj, name, value)
            if flexible:
                count, pos = read_uvarint(buf, pos)
                for _ in range(count):
                    tag, pos = read_uvarint(buf, pos)
                    size, pos = read_uvarint(buf, pos)
                    p.need(buf, pos, size)
                    known = tagged.get(tag)
                    if known is not None:
                        value, end = known[1](buf[: pos + size], pos)
                        if end != pos + size:
                            raise DecodeError(f"tagged field {tag} size mismatch")
                        setattr(obj, known[0], value)
                    pos += size
            return obj, pos

        return decode

    def _build_encoder(self, version: int, flexible: bool) -> Encoder:
        steps = []
        tagged = []
        for f in self.fields:
            if not _in(f.versions, version):
                continue
            enc = f.type.encoder(version, flexible, f.is_nullable(version))
            if f.tag is not None:
                if flexible:
                    tagged.append((f.tag, f.name, enc, f.default, f.tag_null))
            else:
                steps.append((f.name, enc, f.default))
        tagged.sort(key=lambda t: t[0])
        write_uvarint = p.write_unsigned_varint

        def encode(w: Writer, obj) -> None:
            # Handlers may answer with plain dicts: a key left out takes the field's default.
            if isinstance(obj, dict):
                for name, enc, default in steps:
                    enc(w, obj[name] if name in obj else default())
            else:
                for name, enc, _ in steps:
                    enc(w, getattr(obj, name))
            if not flexible:
                return
            present = []
            for tag, name, enc, default, tag_null in tagged:
                value = obj.get(name, None) if isinstance(obj, dict) else getattr(obj, name)
                if value is None and tag_null:
                    present.append((tag, b"\x00"))
                    continue
                if value is None and isinstance(obj, dict) and name not in obj:
                    continue
                if value != default():
                    sub = Writer()
                    enc(sub, value)
                    present.append((tag, sub.out))
            write_uvarint(w.out, len(present))
            for tag, data in present:
                write_uvarint(w.out, tag)
                write_uvarint(w.out, len(data))
                w.out += data

        return encode


class Message:
    """A request or response body: a top-level struct whose flexibility depends on the version."""

    def __init__(self, name: str, fields: list[Field], flexible: tuple[int, int]) -> None:
        self.name = name
        self.struct = StructType(name, fields)
        self.cls = self.struct.cls
        self.flexible = flexible

    def __call__(self, **kwargs) -> Struct:
        return self.cls(**kwargs)

    def is_flexible(self, version: int) -> bool:
        return _in(self.flexible, version)

    def decode(self, buf, version: int, pos: int = 0, *, exact: bool = True):
        """Decode a body at `pos`. With exact=True, trailing bytes are a decode error."""
        if not isinstance(buf, memoryview):
            buf = memoryview(buf)
        obj, end = self.struct.decoder(version, self.is_flexible(version))(buf, pos)
        if exact and end != len(buf):
            raise DecodeError(f"{self.name} v{version}: {len(buf) - end} trailing bytes")
        return obj

    def decode_from(self, buf, version: int, pos: int = 0):
        """Decode a body at `pos` and return (obj, end)."""
        if not isinstance(buf, memoryview):
            buf = memoryview(buf)
        return self.struct.decoder(version, self.is_flexible(version))(buf, pos)

    def encode(self, obj, version: int, w: Writer | None = None) -> Writer:
        if w is None:
            w = Writer()
        self.struct.encoder(version, self.is_flexible(version))(w, obj)
        return w

    def encode_bytes(self, obj, version: int) -> bytes:
        return self.encode(obj, version).to_bytes()


class Api:
    """One Kafka API: key, name, the versions we serve, and its request/response messages."""

    def __init__(
        self,
        key: int,
        name: str,
        *,
        versions: str,
        flexible: str | None,
        request: list[Field],
        response: list[Field],
    ) -> None:
        self.key = key
        self.name = name
        self.min_version, self.max_version = parse_versions(versions)
        flex = parse_versions(flexible)
        self.request = Message(f"{name}Request", request, flex)
        self.response = Message(f"{name}Response", response, flex)

    def is_flexible(self, version: int) -> bool:
        return self.request.is_flexible(version)

    def supports(self, version: int) -> bool:
        return self.min_version <= version <= self.max_version

    def __repr__(self) -> str:
        return f"Api({self.key}, {self.name}, v{self.min_version}-{self.max_version})"


def uuid_from_str(text: str) -> uuid.UUID:
    return uuid.UUID(text)
