"""`kafka-wire dump-log`: print the batches and records of segment files, as Kafka's kafka-dump-log.sh.

    kafka-wire dump-log 00000000000000000000.log [--deep-iteration] [--print-data-log]
    kafka-wire dump-log 00000000000000000000.index 00000000000000000000.timeindex

The output uses the same lines and field names as Kafka's DumpLogSegments, so tools and habits
carry over. Every batch's CRC is checked (`isvalid`); the records of a batch that fails it are not
printed (a corrupt batch is reported, never shown as data). Index files are checked against their
log file: entries pointing at the wrong batch are listed on stderr.
"""

from __future__ import annotations

import os
import struct
import sys

from kafka_wire.compression import CompressionType
from kafka_wire.record_codec import (
    ControlRecordType,
    decode_control_key,
    decode_end_transaction_marker,
    decode_records,
    iter_records_with_offsets,
)
from kafka_wire.records import (
    ATTR_DELETE_HORIZON,
    NO_SEQUENCE,
    BatchHeader,
    InvalidRecordBatch,
    compute_crc,
    read_batch_header,
)
from log.producer_state import SNAPSHOT_SUFFIX, CorruptSnapshot, decode_snapshot
from log.segment import INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, read_batches

RECORD_INDENT = "|"
_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")


def _java_bool(value: bool) -> str:
    return "true" if value else "false"


def _optional_long(value: int | None) -> str:
    return "OptionalLong.empty" if value is None else f"OptionalLong[{value}]"


def _timestamp_type(header: BatchHeader) -> str:
    return "LogAppendTime" if header.timestamp_type == 1 else "CreateTime"


def _codec_name(header: BatchHeader) -> str:
    try:
        return CompressionType(header.compression).name.lower()
    except ValueError:
        return f"unknown({header.compression})"


def _text(data: bytes) -> str:
    # Kafka's StringDecoder: UTF-8, malformed input replaced.
    return bytes(data).decode("utf-8", "replace")


def _base_offset_of(path: str) -> int:
    return int(os.path.basename(path).split(".")[0])


def _sibling(path: str, suffix: str) -> str:
    name = os.path.basename(path).split(".")[0] + suffix
    return os.path.join(os.path.dirname(os.path.abspath(path)), name)


def dump_log(path: str, deep: bool, print_data: bool, out, err) -> None:
    print(f"Log starting offset: {_base_offset_of(path)}", file=out)
    size = os.path.getsize(path)
    valid_bytes = 0
    last_offset = -1
    non_consecutive: list[tuple[int, int]] = []
    fd = os.open(path, os.O_RDONLY)
    try:
        try:
            for position, header, data in read_batches(fd, 0, size):
                crc_ok = compute_crc(data, 0, header.size) == header.crc
                _print_batch(header, position, crc_ok, out)
                if deep:
                    if crc_ok:
                        last_offset = _print_records(header, data, print_data, last_offset, non_consecutive, out, err)
                    else:
                        print(f"Batch at position {position} (offsets {header.base_offset}..{header.last_offset}) "
                              f"failed its CRC check: its records are not printed", file=err)
                valid_bytes = position + header.size
        except InvalidRecordBatch as e:
            print(f"Cannot read a batch at position {valid_bytes}: {e}", file=err)
    finally:
        os.close(fd)
    if size > valid_bytes:
        print(f"Found {size - valid_bytes} invalid bytes at the end of {os.path.basename(path)}", file=out)
    if non_consecutive:
        print(f"Non-consecutive offsets in {os.path.abspath(path)}", file=err)
        for previous, offset in non_consecutive:
            print(f"  {previous} is followed by {offset}", file=err)


def _print_batch(header: BatchHeader, position: int, crc_ok: bool, out) -> None:
    horizon = header.base_timestamp if header.attributes & ATTR_DELETE_HORIZON else None
    print(
        f"baseOffset: {header.base_offset} lastOffset: {header.last_offset} count: {header.records_count} "
        f"baseSequence: {header.base_sequence} lastSequence: {header.last_sequence} "
        f"producerId: {header.producer_id} producerEpoch: {header.producer_epoch} "
        f"partitionLeaderEpoch: {header.partition_leader_epoch} "
        f"isTransactional: {_java_bool(header.is_transactional)} isControl: {_java_bool(header.is_control)} "
        f"deleteHorizonMs: {_optional_long(horizon)} position: {position} "
        f"{_timestamp_type(header)}: {header.max_timestamp} size: {header.size} magic: {header.magic} "
        f"compresscodec: {_codec_name(header)} crc: {header.crc} isvalid: {_java_bool(crc_ok)}",
        file=out,
    )


def _print_records(header: BatchHeader, data, print_data: bool, last_offset: int,
                   non_consecutive: list, out, err) -> int:
    try:
        batch_header, records = decode_records(data)
    except InvalidRecordBatch as e:
        print(f"Cannot decode the records of the batch at offset {header.base_offset}: {e}", file=err)
        return last_offset
    for offset, timestamp, record in iter_records_with_offsets(batch_header, records):
        if offset != last_offset + 1:
            non_consecutive.append((last_offset, offset))
        last_offset = offset
        sequence = NO_SEQUENCE if header.base_sequence == NO_SEQUENCE else \
            (header.base_sequence + record.offset_delta) % (2**31)
        key_size = -1 if record.key is None else len(record.key)
        value_size = -1 if record.value is None else len(record.value)
        line = (f"{RECORD_INDENT} offset: {offset} {_timestamp_type(header)}: {timestamp} "
                f"keySize: {key_size} valueSize: {value_size} sequence: {sequence} "
                f"headerKeys: [{','.join(key for key, _ in record.headers)}]")
        if header.is_control:
            line += _control_record(record)
        elif print_data:
            prefix = " "
            if record.key is not None:
                line += f"{prefix}key: {_text(record.key)}"
            if record.value is not None:
                line += f" payload: {_text(record.value)}"
        print(line, file=out)
    return last_offset


def _control_record(record) -> str:
    try:
        _, control_type = decode_control_key(record.key)
        if control_type in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
            _, coordinator_epoch = decode_end_transaction_marker(record.value)
            return f" endTxnMarker: {control_type.name} coordinatorEpoch: {coordinator_epoch}"
        return f" controlType: {control_type.name}({int(control_type)})"
    except InvalidRecordBatch as e:
        return f" controlType: unreadable ({e})"


def _batch_at(fd: int, position: int) -> BatchHeader | None:
    try:
        return read_batch_header(os.pread(fd, 61, position))
    except InvalidRecordBatch:
        return None


def dump_index(path: str, verify_only: bool, out, err) -> None:
    base = _base_offset_of(path)
    with open(path, "rb") as f:
        data = f.read()
    entries = list(_OFFSET_ENTRY.iter_unpack(data[: len(data) - len(data) % _OFFSET_ENTRY.size]))
    if not entries:
        print(f"{path} is empty.", file=out)
        return
    mismatches = []
    log_path = _sibling(path, LOG_SUFFIX)
    fd = os.open(log_path, os.O_RDONLY) if os.path.exists(log_path) else -1
    try:
        for i, (relative, position) in enumerate(entries):
            if relative == 0 and i > 0:
                break  # Kafka preallocates index files: the zeros after the last entry are not entries
            offset = base + relative
            header = _batch_at(fd, position) if fd >= 0 else None
            found = -1 if header is None else header.last_offset
            if found != offset:
                mismatches.append((offset, found))
            if not verify_only:
                print(f"offset: {offset} position: {position}", file=out)
    finally:
        if fd >= 0:
            os.close(fd)
    if mismatches:
        print(f"Mismatches in :{os.path.abspath(path)}", file=err)
        for index_offset, log_offset in mismatches:
            print(f"  Index offset: {index_offset}, log offset: {log_offset}", file=err)


def dump_time_index(path: str, verify_only: bool, out, err) -> None:
    base = _base_offset_of(path)
    with open(path, "rb") as f:
        data = f.read()
    entries = list(_TIME_ENTRY.iter_unpack(data[: len(data) - len(data) % _TIME_ENTRY.size]))
    if not entries:
        print(f"{path} is empty.", file=out)
        return
    batches: list[BatchHeader] = []
    log_path = _sibling(path, LOG_SUFFIX)
    if os.path.exists(log_path):
        fd = os.open(log_path, os.O_RDONLY)
        try:
            batches = [header for _, header, _ in read_batches(fd)]
        except InvalidRecordBatch:
            pass
        finally:
            os.close(fd)
    problems = []
    previous = -1
    for i, (timestamp, relative) in enumerate(entries):
        if relative == 0 and i > 0:
            break
        offset = base + relative
        match = next((h for h in batches if h.last_offset >= offset), None)
        if match is None or match.last_offset != offset:
            problems.append(f"Indexed offset: {offset}, found log offset: {-1 if match is None else match.last_offset}")
        elif match.max_timestamp != timestamp:
            problems.append(f"Index timestamp: {timestamp}, log timestamp: {match.max_timestamp}")
        if previous >= timestamp:
            problems.append(f"Index timestamp: {timestamp}, Previously indexed timestamp: {previous}")
        previous = timestamp
        if not verify_only:
            print(f"timestamp: {timestamp} offset: {offset}", file=out)
    if problems:
        print(f"Found problems in :{os.path.abspath(path)}", file=err)
        for line in problems:
            print(f"  {line}", file=err)


def dump_producer_snapshot(path: str, out, err) -> None:
    try:
        with open(path, "rb") as f:
            entries = decode_snapshot(f.read())
    except CorruptSnapshot as e:
        print(f"{path}: {e}", file=err)
        return
    for entry in entries:
        line = (f"producerId: {entry.producer_id} producerEpoch: {entry.producer_epoch} "
                f"coordinatorEpoch: {entry.coordinator_epoch} "
                f"currentTxnFirstOffset: {_optional_long(entry.current_txn_first_offset)} "
                f"lastTimestamp: {entry.last_timestamp}")
        if entry.batches:
            last = entry.batches[-1]
            line += (f" firstSequence: {last.first_seq} lastSequence: {last.last_seq} "
                     f"lastOffset: {last.last_offset} offsetDelta: {last.last_offset - last.first_offset} "
                     f"timestamp: {last.timestamp}")
        print(line, file=out)


def run(args, out=None, err=None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    files = list(args.file)
    for item in args.files or []:
        files += [name for name in item.split(",") if name]
    if not files:
        print("kafka-wire dump-log: name at least one file", file=err)
        return 2
    deep = args.deep_iteration or args.print_data_log
    status = 0
    for path in files:
        print(f"Dumping {path}", file=out)
        try:
            if path.endswith(LOG_SUFFIX):
                dump_log(path, deep, args.print_data_log, out, err)
            elif path.endswith(INDEX_SUFFIX):
                dump_index(path, args.verify_index_only, out, err)
            elif path.endswith(TIME_INDEX_SUFFIX):
                dump_time_index(path, args.verify_index_only, out, err)
            elif path.endswith(SNAPSHOT_SUFFIX):
                dump_producer_snapshot(path, out, err)
            else:
                print(f"Ignoring unknown file {path}", file=err)
        except (OSError, ValueError) as e:
            print(f"{path}: {e}", file=err)
            status = 1
    return status


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "dump-log", help="print the batches and records of log segment, index and snapshot files",
        description="Parse log segment files and dump their contents, like Kafka's kafka-dump-log.sh.")
    parser.add_argument("file", nargs="*", help=".log, .index, .timeindex or .snapshot files")
    parser.add_argument("--files", action="append", metavar="FILE[,FILE]",
                        help="comma-separated files to dump (Kafka's spelling)")
    parser.add_argument("--deep-iteration", action="store_true",
                        help="print every record, not only the batch headers")
    parser.add_argument("--print-data-log", action="store_true",
                        help="print the records' keys and payloads (implies --deep-iteration)")
    parser.add_argument("--verify-index-only", action="store_true",
                        help="check index entries against the log without printing them")
    parser.set_defaults(func=run)
