"""registry/guids.py: schema GUIDs as Confluent's registry makes them (the vectors were printed by
Java's MessageDigest/UUID over the same bytes, as Confluent's Schema.getGuid does), request metadata
checked and put in Confluent's order, and GUIDs as a request may spell them."""

from __future__ import annotations

import pytest

from registry.guids import InvalidMetadata, md5_of, metadata_arg, parse_guid
from registry.store import SchemaVersion

USER = '{"type":"record","name":"User","fields":[{"type":"string","name":"name"}]}'


def test_the_guid_is_the_md5_of_the_schema_text_its_references_and_metadata():
    assert SchemaVersion("s", 1, 1, USER, "AVRO").guid == "eba5afd3-1c1d-7e0c-843b-910bd055f960"
    metadata = metadata_arg({"properties": {"owner": "bob"}, "tags": {"pii": ["b", "a"]}, "sensitive": ["ssn"]})
    with_all = SchemaVersion("s", 1, 1, '"string"', "AVRO",
                             [{"name": "Address", "subject": "address-value", "version": 2}], metadata=metadata)
    assert with_all.guid == "6e2345f3-d061-928d-fc6f-3d010bf45016"
    # The type, subject, version and id are not part of it; metadata (even empty) is
    assert SchemaVersion("other", 9, 4, USER, "JSON").guid == "eba5afd3-1c1d-7e0c-843b-910bd055f960"
    assert SchemaVersion("s", 1, 1, USER, "AVRO", metadata={}).guid != "eba5afd3-1c1d-7e0c-843b-910bd055f960"
    # Another registry's md5 is kept as it wrote it
    assert SchemaVersion("s", 1, 1, USER, "AVRO", md5=bytes(range(16))).guid == "00010203-0405-0607-0809-0a0b0c0d0e0f"
    assert md5_of(USER, [], None) != md5_of(USER, [{"name": "a", "subject": "b", "version": 1}], None)


def test_metadata_is_ordered_and_checked():
    assert metadata_arg(None) is None
    assert metadata_arg({"properties": {"b": "2", "a": "1"}, "tags": {"z": ["y", "x", "x"]}, "sensitive": ["s2", "s1"],
                         }) == {"tags": {"z": ["x", "y"]}, "properties": {"a": "1", "b": "2"}, "sensitive": ["s1", "s2"]}
    assert metadata_arg({"properties": {}, "tags": {}}) == {}
    for bad in ("text", {"properties": {"a": 1}}, {"tags": {"a": "b"}}, {"sensitive": "x"}, {"other": {}}):
        with pytest.raises(InvalidMetadata):
            metadata_arg(bad)


@pytest.mark.parametrize("text, guid", [
    ("eba5afd3-1c1d-7e0c-843b-910bd055f960", "eba5afd3-1c1d-7e0c-843b-910bd055f960"),
    ("EBA5AFD3-1C1D-7E0C-843B-910BD055F960", "eba5afd3-1c1d-7e0c-843b-910bd055f960"),
    ("eba5afd31c1d7e0c843b910bd055f960", "eba5afd3-1c1d-7e0c-843b-910bd055f960"),  # the MD5 in hex
    ("nope", None), ("eba5", None), ("", None),
])
def test_guids_as_a_request_spells_them(text, guid):
    assert parse_guid(text) == guid
