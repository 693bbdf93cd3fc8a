"""bench/share.py's verdict on a share-consumption measurement: it counts only when every offset
was delivered, no acknowledgement failed, and the broker's start offset reached the end of the
partition or its lag is 0 (Kafka 4.3.0 can keep the start offset before a last stretch of
accepted records and report lag 0)."""

from __future__ import annotations

import pytest

from bench.fanout import LoadgenFailed
from bench.share import check

DONE = {"delivered_offsets": 1000, "ack_error_count": 0, "accepted_through": 1000, "lag": 0, "end_offset": 1000}


def test_every_record_delivered_and_accepted_passes():
    check(DONE, 1000, "share")
    check({**DONE, "accepted_through": 935, "lag": 0}, 1000, "share")  # Kafka's persisted start offset
    check({**DONE, "lag": -1}, 1000, "share")  # a broker without lag (v0): the start offset decides


@pytest.mark.parametrize("change, said", [
    ({"delivered_offsets": 999}, "999 of 1000 offsets delivered"),
    ({"delivered_offsets": 1001}, "1001 of 1000 offsets delivered"),
    ({"ack_error_count": 2, "errors": ["ack t[0]: INVALID_RECORD_STATE"]}, "2 acknowledgements failed"),
    ({"error_count": 1}, "1 records not produced"),
    ({"accepted_through": 968, "lag": 32}, "start offset is 968, not the end offset 1000, and its lag 32"),
    ({"accepted_through": 968, "lag": -1}, "not every record was accepted"),
])
def test_a_missing_delivery_or_acceptance_voids_the_measurement(change, said):
    with pytest.raises(LoadgenFailed, match=said.replace("[", r"\[").replace("]", r"\]")):
        check({**DONE, **change}, 1000, "share, 3 consumers")
