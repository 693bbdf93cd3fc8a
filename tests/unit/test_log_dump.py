"""`kafka-wire dump-log`: Kafka's kafka-dump-log.sh output for segments, indexes and snapshots."""

from __future__ import annotations

import os

from cli.main import main
from kafka_wire.record_codec import Record, build_batch, build_control_batch
from log.partition_log import PartitionLog
from log.producer_state import AppendOrigin

NOW = 1_700_000_000_000


def dump(capsys, *args: str) -> tuple[int, list[str], str]:
    status = main(["dump-log", *args])
    captured = capsys.readouterr()
    return status, captured.out.splitlines(), captured.err


def make_log(tmp_path) -> PartitionLog:
    log = PartitionLog(str(tmp_path / "t-0"), {"index.interval.bytes": 1, "segment.bytes": 100_000})
    log.append(bytearray(build_batch([Record(0, 0, b"k1", b"hello"), Record(1, 5, None, b"world",
                                                                            [("h1", b"x"), ("h2", None)])],
                                     base_timestamp=NOW)), leader_epoch=3)
    log.append(bytearray(build_batch([Record(0, 0, b"k2", None)], base_timestamp=NOW + 10, compression=4,
                                     producer_id=9, producer_epoch=1, base_sequence=0, is_transactional=True)),
               leader_epoch=3)
    log.append(bytearray(build_control_batch(True, 9, 1, 7, timestamp=NOW + 20)), leader_epoch=3,
               origin=AppendOrigin.COORDINATOR)
    return log


def test_batch_lines_have_kafkas_fields(tmp_path, capsys):
    log = make_log(tmp_path)
    path = log.active_segment.log_path
    status, lines, err = dump(capsys, path)
    assert status == 0 and err == ""
    assert lines[:2] == [f"Dumping {path}", "Log starting offset: 0"]
    first, second, marker = lines[2:]
    assert first.startswith(
        "baseOffset: 0 lastOffset: 1 count: 2 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 "
        "partitionLeaderEpoch: 3 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty "
        f"position: 0 CreateTime: {NOW + 5} size: ")
    assert first.endswith("magic: 2 compresscodec: none crc: " + first.split("crc: ")[1].split()[0] + " isvalid: true")
    assert ("baseOffset: 2 lastOffset: 2 count: 1 baseSequence: 0 lastSequence: 0 producerId: 9 "
            "producerEpoch: 1") in second
    assert "isTransactional: true isControl: false" in second and "compresscodec: zstd" in second
    assert "isTransactional: true isControl: true" in marker and "isvalid: true" in marker


def test_deep_iteration_and_print_data_log_show_each_record(tmp_path, capsys):
    log = make_log(tmp_path)
    status, lines, _ = dump(capsys, log.active_segment.log_path, "--deep-iteration")
    records = [line for line in lines if line.startswith("|")]
    assert records == [
        f"| offset: 0 CreateTime: {NOW} keySize: 2 valueSize: 5 sequence: -1 headerKeys: []",
        f"| offset: 1 CreateTime: {NOW + 5} keySize: -1 valueSize: 5 sequence: -1 headerKeys: [h1,h2]",
        f"| offset: 2 CreateTime: {NOW + 10} keySize: 2 valueSize: -1 sequence: 0 headerKeys: []",
        f"| offset: 3 CreateTime: {NOW + 20} keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] "
        "endTxnMarker: COMMIT coordinatorEpoch: 7",
    ]
    status, lines, _ = dump(capsys, "--files", log.active_segment.log_path, "--print-data-log")
    records = [line for line in lines if line.startswith("|")]
    assert records[0].endswith("headerKeys: [] key: k1 payload: hello")
    assert records[1].endswith("headerKeys: [h1,h2] payload: world")
    assert records[2].endswith("headerKeys: [] key: k2")
    assert records[3].endswith("endTxnMarker: COMMIT coordinatorEpoch: 7")


def test_a_corrupt_batch_is_flagged_and_its_records_are_not_printed(tmp_path, capsys):
    log = make_log(tmp_path)
    path = log.active_segment.log_path
    log.close()
    with open(path, "r+b") as f:
        f.seek(70)  # inside the first batch's records
        byte = f.read(1)
        f.seek(70)
        f.write(bytes([byte[0] ^ 0xFF]))
    with open(path, "ab") as f:
        f.write(b"\x00" * 30)  # a torn tail
    status, lines, err = dump(capsys, path, "--print-data-log")
    assert status == 0
    assert lines[2].endswith("isvalid: false") and lines[3].endswith("isvalid: true")
    assert "hello" not in "\n".join(lines) and "key: k2" in "\n".join(lines)
    assert "failed its CRC check" in err
    assert lines[-1] == f"Found 30 invalid bytes at the end of {os.path.basename(path)}"


def test_index_files_list_their_entries_and_mismatches(tmp_path, capsys):
    log = make_log(tmp_path)
    segment = log.active_segment
    log.roll()
    status, lines, err = dump(capsys, segment.offset_index.path, segment.time_index.path)
    assert status == 0 and err == ""
    entries = segment.offset_index.entries()
    assert [o for o, _ in entries] == [2, 3]
    assert lines[0] == f"Dumping {segment.offset_index.path}"
    assert lines[1:3] == [f"offset: {o} position: {p}" for o, p in entries]
    assert lines[3] == f"Dumping {segment.time_index.path}"
    assert f"timestamp: {NOW + 20} offset: 3" in lines
    with open(segment.offset_index.path, "r+b") as f:
        f.write((1).to_bytes(4, "big"))  # the first entry now names the wrong offset
    status, lines, err = dump(capsys, segment.offset_index.path, "--verify-index-only")
    assert lines == [f"Dumping {segment.offset_index.path}"]
    assert "Index offset: 1, log offset: 2" in err


def test_producer_snapshots_are_dumped(tmp_path, capsys):
    log = make_log(tmp_path)
    log.append(bytearray(build_batch([Record(0, 0, b"k", b"v")], base_timestamp=NOW + 30, producer_id=11,
                                     producer_epoch=0, base_sequence=0)), leader_epoch=3)
    log.close()
    snapshot = os.path.join(log.dir, f"{5:020d}.snapshot")
    status, lines, _ = dump(capsys, snapshot)
    assert lines[0] == f"Dumping {snapshot}"
    assert (f"producerId: 11 producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: OptionalLong.empty "
            f"lastTimestamp: {NOW + 30} firstSequence: 0 lastSequence: 0 lastOffset: 4 offsetDelta: 0 "
            f"timestamp: {NOW + 30}") in lines
