"""Protobuf schemas in the registry: .proto text (proto2 and proto3) or a base64 FileDescriptorProto (what
confluent-kafka's ProtobufSerializer sends) parsed into descriptors by protoc itself (grpcio-tools
carries it as a library: no code is generated, protoc writes a FileDescriptorSet), imports resolved
through the schema's references (`import "other.proto"` names a reference), the well-known types
(google/protobuf/*.proto) from protoc's own include directory.

The canonical text, what the registry stores and answers, is the descriptor printed back as .proto
text with every type name fully qualified, as Confluent's registry stores its own formatting of a
Protobuf schema rather than the text it was given; `normalize=true` also orders imports, options and
fields (by number), so equivalent schemas get one id.

Compatibility follows Confluent's Protobuf rules (its schema-diff examples; Karapace, a compatible
registry, agrees on most): compatible are adding or removing a field (a removed number is best
reserved), adding a message or an enum, removing an enum, reordering messages, renaming a field or an
enum constant, changing a field's number (a removal and an addition), a scalar's type within a wire
group (int32/uint32/int64/uint64/bool and enums; sint32/sint64; fixed32/sfixed32; fixed64/sfixed64;
string/bytes), singular <-> repeated for strings, bytes and messages, adding a oneof or a field to
one, moving one existing field into a new oneof, removing a oneof, changing the syntax. Not
compatible: changing the package, removing a message, changing a field's kind (scalar, message, map)
or its named type, a scalar across wire groups, singular <-> repeated for numbers and enums, a field
leaving a oneof, several existing fields moving into a new oneof or one into an existing oneof,
adding or removing a proto2 required field, or making a field (not) required.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import contextvars
import functools
import logging
import os
import pickle
import re
import select
import struct
import subprocess
import sys
import tempfile
import threading
import time

from google.protobuf import descriptor_pb2

logger = logging.getLogger("kafka_wire.registry")

F = descriptor_pb2.FieldDescriptorProto
MAIN_FILE = "__registered_schema__.proto"  # a name no import uses
MAX_FIELD_NUMBER = 536870911

SCALAR_NAMES = {
    F.TYPE_DOUBLE: "double", F.TYPE_FLOAT: "float", F.TYPE_INT64: "int64", F.TYPE_UINT64: "uint64",
    F.TYPE_INT32: "int32", F.TYPE_FIXED64: "fixed64", F.TYPE_FIXED32: "fixed32", F.TYPE_BOOL: "bool",
    F.TYPE_STRING: "string", F.TYPE_BYTES: "bytes", F.TYPE_UINT32: "uint32", F.TYPE_SFIXED32: "sfixed32",
    F.TYPE_SFIXED64: "sfixed64", F.TYPE_SINT32: "sint32", F.TYPE_SINT64: "sint64",
}
# Scalars that read each other's bytes (the same wire type and encoding): changing a field's type
# within one group keeps old data readable, across groups it does not.
WIRE_GROUPS = [
    {F.TYPE_INT32, F.TYPE_UINT32, F.TYPE_INT64, F.TYPE_UINT64, F.TYPE_BOOL},
    {F.TYPE_SINT32, F.TYPE_SINT64},
    {F.TYPE_FIXED32, F.TYPE_SFIXED32},
    {F.TYPE_FIXED64, F.TYPE_SFIXED64},
    {F.TYPE_STRING, F.TYPE_BYTES},
    {F.TYPE_DOUBLE}, {F.TYPE_FLOAT},
]
LABELS = {F.LABEL_OPTIONAL: "optional", F.LABEL_REQUIRED: "required", F.LABEL_REPEATED: "repeated"}


# Confluent's own .proto files, importable by any schema without a reference as in Confluent's
# registry: `confluent/meta.proto` declares the options that carry a schema's tags and
# documentation ((confluent.file_meta), (confluent.message_meta), (confluent.field_meta),
# (confluent.enum_meta), (confluent.enum_value_meta), all field 1088 of their options message).
BUILTIN_IMPORTS = {
    "confluent/meta.proto": """syntax = "proto3";
package confluent;

import "google/protobuf/descriptor.proto";

option go_package = "github.com/confluentinc/schema-registry/confluent";
option java_package = "io.confluent.protobuf";
option java_outer_classname = "MetaProto";

message Meta {
  string doc = 1;
  map<string, string> params = 2;
  repeated string tags = 3;
  repeated Rule rules = 4;
}

message Rule {
  string name = 1;
  string doc = 2;
  string expr = 3;
  string sql = 4;
}

extend google.protobuf.FileOptions { Meta file_meta = 1088; }
extend google.protobuf.MessageOptions { Meta message_meta = 1088; }
extend google.protobuf.FieldOptions { Meta field_meta = 1088; }
extend google.protobuf.EnumOptions { Meta enum_meta = 1088; }
extend google.protobuf.EnumValueOptions { Meta enum_value_meta = 1088; }
""",
    "confluent/type/decimal.proto": """syntax = "proto3";
package confluent.type;

option go_package = "github.com/confluentinc/schema-registry/confluent/type/decimal";
option java_package = "io.confluent.protobuf.type";
option java_outer_classname = "DecimalProto";

message Decimal {
  bytes value = 1;
  uint32 precision = 2;
  int32 scale = 3;
}
""",
}
META_IMPORT = "confluent/meta.proto"
META_FIELD = 1088
META_OPTION_NAMES = {"FileOptions": "(confluent.file_meta)", "MessageOptions": "(confluent.message_meta)",
                     "FieldOptions": "(confluent.field_meta)", "EnumOptions": "(confluent.enum_meta)",
                     "EnumValueOptions": "(confluent.enum_value_meta)"}


class ProtobufError(ValueError):
    """The schema is not a valid .proto file (protoc's own messages)."""


# -- parsing ----------------------------------------------------------------------------------------

def compile_proto(text: str, dependencies: dict[str, str]) -> descriptor_pb2.FileDescriptorProto:
    """Parse `text` (.proto source, or a base64 FileDescriptorProto) with `dependencies` (import path ->
    .proto source) and return its descriptor (shared: not to be changed); raises ProtobufError with
    protoc's messages."""
    return _compile(text, tuple(sorted(dependencies.items())))


def compile_proto_with_imports(text: str, dependencies: dict[str, str]) -> tuple[descriptor_pb2.FileDescriptorProto, ...]:
    """The schema's descriptor and those of every file it imports (dependencies first, the schema
    last), as a DescriptorPool needs them to build message classes (registry/decode.py)."""
    return _compile(text, tuple(sorted(dependencies.items())), True)


# A compatibility check parses the versions it compares with again, a deserializer's
# format=serialized the version it asks for: the last few hundred parses are kept.
@functools.lru_cache(maxsize=256)
def _compile(text: str, dependency_items: tuple, include_imports: bool = False):
    files = _PROTOC.compile(text, dependency_items, include_imports)
    return files if include_imports else files[-1]


PROTOC_TIMEOUT = 30.0  # seconds one schema may take in protoc before its process is stopped


class _ProtocProcess:
    """protoc in a child process of its own, one schema at a time. In this process protoc would
    point file descriptor 2 (stderr) at a file while it runs (its warnings are written from C++),
    taking every other thread's error output with it, so it could only run on the event loop; and
    a hostile schema (an option value nested a thousand braces deep) makes protoc abort, which would
    take the broker down. In a child process it runs beside the event loop (callers wait in a worker
    thread), a schema that kills protoc or runs past PROTOC_TIMEOUT stops only the child (the
    schema is invalid: 42201), and the next schema starts a new one."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.child: subprocess.Popen | None = None
        self.owner = 0  # the pid that started it (a forked broker worker starts its own)

    def compile(self, text: str, dependency_items: tuple, include_imports: bool):
        with self.lock:
            child = self._running()
            request = pickle.dumps((text, dependency_items, include_imports))
            try:
                child.stdin.write(struct.pack(">I", len(request)) + request)
                child.stdin.flush()
                answer = pickle.loads(self._read(child, struct.unpack(">I", self._read(child, 4))[0]))
            except (OSError, EOFError, TimeoutError, pickle.UnpicklingError, struct.error) as exc:
                self._stop(child)
                why = ("it took longer than %.0f s" % PROTOC_TIMEOUT if isinstance(exc, TimeoutError)
                       else f"protoc stopped on it (exit status {child.returncode})")
                raise ProtobufError(f"the schema could not be compiled: {why}") from None
        kind, value, warnings = answer
        for line in warnings:
            logger.debug("protoc: %s", line)
        if kind == "error":
            raise ProtobufError(value)
        return tuple(descriptor_pb2.FileDescriptorProto.FromString(data) for data in value)

    def _running(self) -> subprocess.Popen:
        if self.child is not None and (self.owner != os.getpid() or self.child.poll() is not None):
            self.child = None
        if self.child is None:
            root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
            env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
            self.child = subprocess.Popen(
                [sys.executable, "-c", "from registry.protobuf import serve_compiles; serve_compiles()"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
                close_fds=True)
            self.owner = os.getpid()
        return self.child

    @staticmethod
    def _read(child: subprocess.Popen, size: int) -> bytes:
        data = b""
        deadline = time.monotonic() + PROTOC_TIMEOUT
        while len(data) < size:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([child.stdout], [], [], left)[0]:
                raise TimeoutError
            chunk = os.read(child.stdout.fileno(), size - len(data))
            if not chunk:
                raise EOFError
            data += chunk
        return data

    def _stop(self, child: subprocess.Popen) -> None:
        child.kill()
        child.wait()
        for pipe in (child.stdin, child.stdout):
            with contextlib.suppress(OSError):
                pipe.close()
        self.child = None


_PROTOC = _ProtocProcess()


def serve_compiles() -> None:
    """The child process's loop (_ProtocProcess): a request is (text, dependency items, include
    imports), pickled with a 4-byte length; the answer is ("ok", [serialized FileDescriptorProto...],
    warnings) or ("error", message, warnings). Ends when the broker closes its end of the pipe."""
    requests, answers = sys.stdin.buffer, sys.stdout.buffer
    while True:
        head = requests.read(4)
        if len(head) < 4:
            return
        text, dependency_items, include_imports = pickle.loads(requests.read(struct.unpack(">I", head)[0]))
        warnings: list[str] = []
        try:
            files = _compile_here(text, dict(dependency_items), include_imports, warnings)
            answer = ("ok", [f.SerializeToString() for f in files], warnings)
        except ProtobufError as exc:
            answer = ("error", str(exc), warnings)
        data = pickle.dumps(answer)
        answers.write(struct.pack(">I", len(data)) + data)
        answers.flush()


def _compile_here(text: str, dependencies: dict, include_imports: bool, warnings: list[str]):
    """protoc on one schema, in this process: every file it imports too with include_imports."""
    descriptor = _decode_serialized(text)
    if descriptor is not None:
        text = print_proto(descriptor)
    from grpc_tools import _protoc_compiler, protoc

    include = os.path.join(os.path.dirname(protoc.__file__), "_proto")
    with tempfile.TemporaryDirectory(prefix="kw-proto-") as root:
        for name, source in {**BUILTIN_IMPORTS, **dependencies, MAIN_FILE: text}.items():
            path = os.path.normpath(os.path.join(root, name))
            if not path.startswith(root + os.sep) or not name.endswith(".proto") and name != MAIN_FILE:
                raise ProtobufError(f"reference name {name!r} is not a relative .proto path")
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as out:
                out.write(source)
        args = [f"-I{root}", f"-I{include}"]
        out_path = os.path.join(root, "descriptor.pb")
        with _protoc_warnings(root, warnings):
            try:
                # protoc's checks, answered as an exception with every message (protoc.main prints them)
                _protoc_compiler.get_protos(MAIN_FILE.encode(), [a[2:].encode() for a in args])
            except _protoc_compiler.ProtocErrors as exc:
                raise ProtobufError("; ".join(_error_line(e) for e in exc.errors())) from None
            imports = ["--include_imports"] if include_imports else []
            if protoc.main(["protoc", *args, *imports, f"--descriptor_set_out={out_path}", MAIN_FILE]) != 0:
                raise ProtobufError("protoc refused the schema")
        with open(out_path, "rb") as data:
            files = descriptor_pb2.FileDescriptorSet.FromString(data.read()).file
    if files[-1].syntax == "editions":  # Confluent's registry parses proto2 and proto3 only
        raise ProtobufError("Protobuf editions are not supported: use syntax \"proto2\" or \"proto3\"")
    return files if include_imports else files[-1:]


@contextlib.contextmanager
def _protoc_warnings(root: str, warnings: list[str]):
    """protoc writes its warnings (an unused import, a file without `syntax`) to the process's stderr
    from C++: while it runs (in the child process), file descriptor 2 goes to a file, whose lines
    then go to `warnings` (the broker logs them)."""
    path = os.path.join(root, "protoc-warnings.txt")
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(path, "wb") as capture:
            os.dup2(capture.fileno(), 2)
            try:
                yield
            finally:
                os.dup2(saved, 2)
    finally:
        os.close(saved)
        with open(path, "rb") as captured:
            warnings += [line.replace(root + os.sep, "")
                         for line in captured.read().decode("utf-8", "replace").splitlines() if line.strip()]


def _error_line(error) -> str:
    where = error.filename.decode() if isinstance(error.filename, bytes) else str(error.filename)
    message = error.message.decode() if isinstance(error.message, bytes) else str(error.message)
    if where == MAIN_FILE:
        where = "schema"
    return f"{where}:{error.line + 1}:{error.column + 1}: {message}"


def _decode_serialized(text: str) -> descriptor_pb2.FileDescriptorProto | None:
    """A base64 FileDescriptorProto (Confluent's serialized format), or None for .proto text."""
    stripped = text.strip()
    if not stripped or re.search(r"[^A-Za-z0-9+/=\s]", stripped):
        return None
    try:
        raw = base64.b64decode(stripped, validate=False)
        descriptor = descriptor_pb2.FileDescriptorProto.FromString(raw)
    except (binascii.Error, ValueError, Exception):
        return None
    return descriptor if descriptor.message_type or descriptor.enum_type or descriptor.package else None


def serialized(descriptor: descriptor_pb2.FileDescriptorProto) -> str:
    """Confluent's `format=serialized`: the FileDescriptorProto, base64."""
    return base64.b64encode(descriptor.SerializeToString()).decode("ascii")


# -- printing ---------------------------------------------------------------------------------------

def print_proto(fd: descriptor_pb2.FileDescriptorProto, *, normalize: bool = False) -> str:
    """The .proto text of a file descriptor; type names fully qualified (`.pkg.Type`); Confluent's
    meta options (tags, doc, params, rules) where the file imports confluent/meta.proto."""
    token = _PRINTS_META.set(META_IMPORT in fd.dependency)
    try:
        return _print_proto(fd, normalize)
    finally:
        _PRINTS_META.reset(token)


_PRINTS_META = contextvars.ContextVar("prints_meta", default=False)


def _print_proto(fd: descriptor_pb2.FileDescriptorProto, normalize: bool) -> str:
    lines = [f'syntax = "{fd.syntax or "proto2"}";']
    if fd.package:
        lines.append(f"package {fd.package};")
    imports = []
    for index, dependency in enumerate(fd.dependency):
        kind = "public " if index in fd.public_dependency else "weak " if index in fd.weak_dependency else ""
        imports.append(f'import {kind}"{dependency}";')
    lines += sorted(imports) if normalize else imports
    lines += _options(fd.options, "", normalize)
    proto3 = fd.syntax == "proto3"
    scope = f".{fd.package}" if fd.package else ""
    for message in fd.message_type:
        lines += _message(message, scope, proto3, normalize)
    for enum in fd.enum_type:
        lines += _enum(enum, scope, normalize)
    lines += _extends(fd.extension, scope, proto3, normalize, {})
    for service in fd.service:
        lines.append(f"service {service.name} {{")
        lines += _options(service.options, "  ", normalize)
        for method in service.method:
            head = (f"  rpc {method.name} ({'stream ' if method.client_streaming else ''}{method.input_type}) "
                    f"returns ({'stream ' if method.server_streaming else ''}{method.output_type})")
            body = _options(method.options, "    ", normalize)
            lines += [head + " {", *body, "  }"] if body else [head + ";"]
        lines.append("}")
    return "\n".join(lines) + "\n"


def _value(value, field) -> str:
    if field.type == field.TYPE_BOOL:
        return "true" if value else "false"
    if field.type == field.TYPE_ENUM:
        return field.enum_type.values_by_number[value].name
    if field.type == field.TYPE_STRING:
        return _quote(value)
    if field.type == field.TYPE_BYTES:
        return _quote(value.decode("latin-1"))
    return repr(value)


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _option_pairs(options, normalize: bool) -> list[tuple[str, str]]:
    pairs = [(field.name, _value(value, field)) for field, value in options.ListFields()
             if not field.is_extension and field.name != "uninterpreted_option"
             and not field.is_repeated and field.type != field.TYPE_MESSAGE]
    meta = meta_of(options) if _PRINTS_META.get() else None
    if meta is not None and (text := _meta_text(meta)):
        pairs.append((META_OPTION_NAMES[type(options).__name__], text))
    return sorted(pairs) if normalize else pairs


# -- Confluent's Meta option (field 1088 of an options message: an unknown field, or a known extension) --

def _wire_fields(data: bytes) -> list[tuple[int, int, object, bytes]]:
    """The fields of a serialized message: (number, wire type, value, the field's own bytes)."""
    fields, at = [], 0

    def varint() -> int:
        nonlocal at
        value = shift = 0
        while True:
            byte = data[at]
            at += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                return value

    while at < len(data):
        start = at
        key = varint()
        number, wire = key >> 3, key & 7
        if wire == 0:
            value = varint()
        elif wire == 2:
            size = varint()
            value, at = data[at:at + size], at + size
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            value, at = data[at:at + size], at + size
        else:
            raise ProtobufError(f"unexpected wire type {wire} in an options message")
        fields.append((number, wire, value, data[start:at]))
    return fields


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _length_delimited(number: int, data: bytes) -> bytes:
    return _encode_varint(number << 3 | 2) + _encode_varint(len(data)) + data


def meta_of(options) -> bytes | None:
    """The (merged) Confluent Meta an options message carries, serialized; None without one. Read
    from the serialized options: an unknown field as protoc leaves it, or a known extension where
    this process has imported Confluent's meta_pb2 (confluent-kafka's Protobuf serializer does)."""
    parts = [value for number, wire, value, _ in _wire_fields(options.SerializeToString())
             if number == META_FIELD and wire == 2]
    return b"".join(parts) if parts else None


def set_meta(options, meta: bytes | None) -> None:
    """Replace the options message's Meta (None: none)."""
    kept = b"".join(raw for number, _, _, raw in _wire_fields(options.SerializeToString())
                    if number != META_FIELD)
    options.Clear()
    options.MergeFromString(kept + (b"" if meta is None else _length_delimited(META_FIELD, meta)))


def meta_tags(meta: bytes | None) -> list[str]:
    """A Meta's tags, in order, each once."""
    if meta is None:
        return []
    return list(dict.fromkeys(value.decode("utf-8", "replace")
                              for number, wire, value, _ in _wire_fields(meta) if number == 3 and wire == 2))


def meta_with_tags(meta: bytes | None, tags: list[str]) -> bytes | None:
    """The Meta with its tags replaced (fields kept in number order, as protoc writes them); None
    when nothing is left."""
    fields = [(number, raw) for number, _, _, raw in _wire_fields(meta or b"") if number != 3]
    fields += [(3, _length_delimited(3, tag.encode("utf-8"))) for tag in tags]
    fields.sort(key=lambda field: field[0])  # (stable: repeated fields keep their order)
    data = b"".join(raw for _, raw in fields)
    return data or None


def _meta_text(meta: bytes) -> str:
    """A Meta as a .proto aggregate option value: `{ doc: "..." params { key: "k" value: "v" }
    tags: ["A", "B"] rules { name: "..." } }`."""
    parts, tags = [], []

    def text(value: bytes) -> str:
        return _quote(value.decode("utf-8", "replace"))

    for number, wire, value, _ in _wire_fields(meta):
        if wire != 2:
            continue
        if number == 1:
            parts.append(f"doc: {text(value)}")
        elif number == 2:
            entry = {n: v for n, w, v, _ in _wire_fields(value) if w == 2}
            parts.append(f"params {{ key: {text(entry.get(1, b''))} value: {text(entry.get(2, b''))} }}")
        elif number == 3:
            tags.append(text(value))
        elif number == 4:
            names = {1: "name", 2: "doc", 3: "expr", 4: "sql"}
            rule = " ".join(f"{names[n]}: {text(v)}" for n, w, v, _ in _wire_fields(value) if w == 2 and n in names)
            parts.append(f"rules {{ {rule} }}" if rule else "rules {}")
    if tags:
        parts.insert(sum(1 for part in parts if part.startswith(("doc:", "params "))), f"tags: [{', '.join(tags)}]")
    return "{ " + " ".join(parts) + " }" if parts else ""


def _options(options, indent: str, normalize: bool) -> list[str]:
    return [f"{indent}option {name} = {value};" for name, value in _option_pairs(options, normalize)]


def _default_json_name(name: str) -> str:
    parts = name.split("_")
    return parts[0] + "".join(part[:1].upper() + part[1:] for part in parts[1:])


def _field(field, proto3: bool, normalize: bool, maps: dict, in_oneof: bool) -> str:
    if field.type_name in maps:
        key, value = maps[field.type_name]
        head = f"map<{_type(key)}, {_type(value)}>"
    else:
        label = ""
        if not in_oneof:
            if field.label == F.LABEL_REPEATED:
                label = "repeated "
            elif proto3:
                label = "optional " if field.proto3_optional else ""
            else:
                label = LABELS[field.label] + " "
        head = label + _type(field)
    options = []
    if field.HasField("default_value"):
        # a bytes default is kept C-escaped in the descriptor, a string default is not
        default = (_quote(field.default_value) if field.type == F.TYPE_STRING
                   else f'"{field.default_value}"' if field.type == F.TYPE_BYTES else field.default_value)
        options.append(("default", default))
    if field.HasField("json_name") and field.json_name != _default_json_name(field.name):
        options.append(("json_name", _quote(field.json_name)))
    options += _option_pairs(field.options, normalize)
    if normalize:
        options.sort()
    suffix = " [" + ", ".join(f"{k} = {v}" for k, v in options) + "]" if options else ""
    return f"{head} {field.name} = {field.number}{suffix};"


def _type(field) -> str:
    return SCALAR_NAMES.get(field.type) or field.type_name


def _ranges(ranges) -> str:
    return ", ".join(str(r.start) if r.end - 1 == r.start else
                     f"{r.start} to {'max' if r.end - 1 >= MAX_FIELD_NUMBER else r.end - 1}" for r in ranges)


def _message(message, scope: str, proto3: bool, normalize: bool) -> list[str]:
    full = f"{scope}.{message.name}"
    maps = {f"{full}.{nested.name}": (nested.field[0], nested.field[1])
            for nested in message.nested_type if nested.options.map_entry}
    lines = [f"message {message.name} {{"]
    body = _options(message.options, "", normalize)
    fields = sorted(message.field, key=lambda f: f.number) if normalize else list(message.field)
    oneofs_done = set()
    for field in fields:
        real_oneof = field.HasField("oneof_index") and not field.proto3_optional
        if not real_oneof:
            body.append(_field(field, proto3, normalize, maps, False))
            continue
        if field.oneof_index in oneofs_done:
            continue
        oneofs_done.add(field.oneof_index)
        oneof = message.oneof_decl[field.oneof_index]
        body.append(f"oneof {oneof.name} {{")
        body += _options(oneof.options, "  ", normalize)
        body += ["  " + _field(member, proto3, normalize, maps, True) for member in fields
                 if member.HasField("oneof_index") and member.oneof_index == field.oneof_index]
        body.append("}")
    if message.reserved_range:
        body.append(f"reserved {_ranges(message.reserved_range)};")
    if message.reserved_name:
        body.append("reserved " + ", ".join(_quote(name) for name in message.reserved_name) + ";")
    if message.extension_range:
        body.append(f"extensions {_ranges(message.extension_range)};")
    for nested in message.nested_type:
        if not nested.options.map_entry:
            body += _message(nested, full, proto3, normalize)
    for enum in message.enum_type:
        body += _enum(enum, full, normalize)
    body += _extends(message.extension, full, proto3, normalize, maps)
    return lines + ["  " + line for line in body] + ["}"]


def _extends(extensions, scope: str, proto3: bool, normalize: bool, maps: dict) -> list[str]:
    lines = []
    for extendee in dict.fromkeys(extension.extendee for extension in extensions):
        lines.append(f"extend {extendee} {{")
        lines += ["  " + _field(extension, proto3, normalize, maps, False) for extension in extensions
                  if extension.extendee == extendee]
        lines.append("}")
    return lines


def _enum(enum, scope: str, normalize: bool) -> list[str]:
    body = _options(enum.options, "", normalize)
    for value in enum.value:
        options = _option_pairs(value.options, normalize)
        suffix = " [" + ", ".join(f"{k} = {v}" for k, v in options) + "]" if options else ""
        body.append(f"{value.name} = {value.number}{suffix};")
    if enum.reserved_range:  # an enum's reserved range includes its end
        body.append("reserved " + ", ".join(str(r.start) if r.start == r.end else f"{r.start} to {r.end}"
                                            for r in enum.reserved_range) + ";")
    if enum.reserved_name:
        body.append("reserved " + ", ".join(_quote(name) for name in enum.reserved_name) + ";")
    return [f"enum {enum.name} {{"] + ["  " + line for line in body] + ["}"]


# -- compatibility -----------------------------------------------------------------------------------

def compatibility_errors(writer: descriptor_pb2.FileDescriptorProto,
                         reader: descriptor_pb2.FileDescriptorProto) -> list[str]:
    """Why a reader with schema `reader` cannot read what `writer` wrote, as Confluent's Protobuf
    rules see it (each named after its difference type); empty when it can."""
    errors: list[str] = []
    if writer.package != reader.package:
        errors.append(f"PACKAGE_CHANGED: from '{writer.package}' to '{reader.package}'")
    old_messages, new_messages = _messages(writer), _messages(reader)
    for name, old in old_messages.items():
        new = new_messages.get(name)
        if new is None:
            errors.append(f"MESSAGE_REMOVED: message {name}")
            continue
        _compare_message(name, old, new, writer, reader, errors)
    return errors


def _messages(fd) -> dict[str, descriptor_pb2.DescriptorProto]:
    """Messages (map entries left out) by their name inside the package, nested ones dotted."""
    found = {}

    def walk(messages, scope):
        for message in messages:
            if message.options.map_entry:
                continue
            name = f"{scope}{message.name}"
            found[name] = message
            walk(message.nested_type, name + ".")

    walk(fd.message_type, "")
    return found


def _relative(type_name: str, fd) -> str:
    prefix = f".{fd.package}." if fd.package else "."
    return type_name[len(prefix):] if type_name.startswith(prefix) else type_name


def _map_entry(field, message):
    if field.type != F.TYPE_MESSAGE or field.label != F.LABEL_REPEATED:
        return None
    for nested in message.nested_type:
        if nested.options.map_entry and field.type_name.endswith("." + nested.name):
            return nested
    return None


def _kind(field, message) -> str:
    """scalar, enum (a varint on the wire, as int32 is), message or map."""
    if _map_entry(field, message) is not None:
        return "map"
    if field.type in (F.TYPE_MESSAGE, F.TYPE_GROUP):
        return "message"
    return "enum" if field.type == F.TYPE_ENUM else "scalar"


def _varint(field) -> bool:
    return field.type == F.TYPE_ENUM or field.type in WIRE_GROUPS[0]


def _compare_type(path: str, old, new, old_fd, new_fd, errors: list[str]) -> None:
    """Two fields (or map keys/values) of one number, neither a map."""
    old_kind, new_kind = ("message" if f.type in (F.TYPE_MESSAGE, F.TYPE_GROUP) else
                          "enum" if f.type == F.TYPE_ENUM else "scalar" for f in (old, new))
    if old_kind == "message" or new_kind == "message":
        if old_kind != new_kind:
            errors.append(f"FIELD_KIND_CHANGED: {path} from {old_kind} to {new_kind}")
        elif _relative(old.type_name, old_fd) != _relative(new.type_name, new_fd):
            errors.append(f"FIELD_NAMED_TYPE_CHANGED: {path} from {old.type_name} to {new.type_name}")
    elif old_kind == "enum" and new_kind == "enum":
        if _relative(old.type_name, old_fd) != _relative(new.type_name, new_fd):
            errors.append(f"FIELD_NAMED_TYPE_CHANGED: {path} from {old.type_name} to {new.type_name}")
    elif old_kind != new_kind:  # an enum and a scalar: fine when the scalar is a varint too
        if not (_varint(old) and _varint(new)):
            errors.append(f"FIELD_KIND_CHANGED: {path} from {old_kind} to {new_kind}")
    elif old.type != new.type and not any(old.type in group and new.type in group for group in WIRE_GROUPS):
        errors.append(f"FIELD_SCALAR_KIND_CHANGED: {path} from {SCALAR_NAMES[old.type]} to "
                      f"{SCALAR_NAMES[new.type]}")


def _oneof_of(message, field) -> str | None:
    if field.HasField("oneof_index") and not field.proto3_optional:
        return message.oneof_decl[field.oneof_index].name
    return None


def _compare_message(name: str, old, new, old_fd, new_fd, errors: list[str]) -> None:
    old_fields = {field.number: field for field in old.field}
    new_fields = {field.number: field for field in new.field}
    for number, old_field in old_fields.items():
        path = f"{name}.{old_field.name} ({number})"
        new_field = new_fields.get(number)
        if new_field is None:  # a field removed is compatible (its number should be reserved)
            if old_field.label == F.LABEL_REQUIRED:
                errors.append(f"REQUIRED_FIELD_REMOVED: {path}")
            continue
        old_kind, new_kind = _kind(old_field, old), _kind(new_field, new)
        if (old_kind == "map") != (new_kind == "map"):
            errors.append(f"FIELD_KIND_CHANGED: {path} from {old_kind} to {new_kind}")
            continue
        if old_kind == "map":
            for old_part, new_part in zip(_map_entry(old_field, old).field, _map_entry(new_field, new).field):
                _compare_type(f"{path} map {old_part.name}", old_part, new_part, old_fd, new_fd, errors)
            continue
        _compare_type(path, old_field, new_field, old_fd, new_fd, errors)
        if (old_field.label == F.LABEL_REPEATED) != (new_field.label == F.LABEL_REPEATED):
            # length-delimited values (strings, bytes, messages) read as one or many; numbers do not
            if old_field.type not in (F.TYPE_STRING, F.TYPE_BYTES, F.TYPE_MESSAGE, F.TYPE_GROUP):
                errors.append(f"FIELD_NUMERIC_LABEL_CHANGED: {path}")
        elif (old_field.label == F.LABEL_REQUIRED) != (new_field.label == F.LABEL_REQUIRED):
            errors.append(f"FIELD_LABEL_CHANGED: {path} {'no longer' if old_field.label == F.LABEL_REQUIRED else 'now'}"
                          " required")
    for number, new_field in new_fields.items():
        if number not in old_fields and new_field.label == F.LABEL_REQUIRED:
            errors.append(f"REQUIRED_FIELD_ADDED: {name}.{new_field.name} ({number})")
    _compare_oneofs(name, old, new, old_fields, new_fields, errors)


def _compare_oneofs(name: str, old, new, old_fields: dict, new_fields: dict, errors: list[str]) -> None:
    """Oneofs by name: one removed whole, or added, is compatible; a field leaving a oneof that stays is
    not; an existing field may move alone into a new oneof, not with others, nor into an existing one."""
    old_members = {decl.name: {f.number for f in old.field if _oneof_of(old, f) == decl.name}
                   for decl in old.oneof_decl}
    new_members = {decl.name: {f.number for f in new.field if _oneof_of(new, f) == decl.name}
                   for decl in new.oneof_decl}
    for oneof, numbers in old_members.items():
        if not numbers or oneof not in new_members:
            continue
        for number in sorted(numbers - new_members[oneof]):
            errors.append(f"ONEOF_FIELD_REMOVED: {name}.{old_fields[number].name} ({number}) left oneof {oneof}")
    for oneof, numbers in new_members.items():
        if not numbers:
            continue
        existing = sorted(number for number in numbers if number in old_fields)
        if oneof in old_members and old_members[oneof]:
            for number in existing:
                if number not in old_members[oneof]:
                    errors.append(f"FIELD_MOVED_TO_EXISTING_ONEOF: {name}.{new_fields[number].name} ({number}) "
                                  f"into oneof {oneof}")
        elif len(existing) > 1:
            errors.append(f"MULTIPLE_FIELDS_MOVED_TO_ONEOF: {name} fields "
                          f"{', '.join(str(number) for number in existing)} into new oneof {oneof}")
